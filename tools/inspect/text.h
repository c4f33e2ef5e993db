/* gpushare-inspect — internal: growable text and column-aligned tables.
 *
 * Both keep a sticky error: after the first failure (GS_ENOMEM, GS_ETOOBIG
 * beyond GS_INSPECT_OUT_MAX) further calls do nothing, so layout code reads
 * straight and checks ->err once at the end.
 */
#ifndef GPUSHARE_INSPECT_TEXT_H
#define GPUSHARE_INSPECT_TEXT_H

#include "format.h"

#include <stddef.h>

#if defined(__GNUC__)
#define GS__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GS__PRINTF(f, a)
#endif

/* Zero-initialise; p is NUL-terminated once anything was written (or after
 * gs__sbuf_reserve(b, 0)); the owner frees p. */
struct gs__sbuf {
  char *p;
  size_t len, cap;
  enum gs_err err;
};

void gs__sbuf_reserve(struct gs__sbuf *b, size_t more);
void gs__sbuf_putn(struct gs__sbuf *b, const char *s, size_t n);
void gs__sbuf_puts(struct gs__sbuf *b, const char *s);
void gs__sbuf_repeat(struct gs__sbuf *b, char c, size_t n);
void gs__sbuf_printf(struct gs__sbuf *b, const char *fmt, ...) GS__PRINTF(2, 3);
/* Width in bytes of the widest line written since offset start. */
size_t gs__sbuf_widest(const struct gs__sbuf *b, size_t start);

/* Rows of cells (owned copies; NULL = blank) printed in columns as wide as
 * their widest cell, two spaces apart, without trailing blanks. */
struct gs__table {
  size_t ncols, nrows, cap; /* cap in rows */
  char **cell;              /* nrows × ncols */
  enum gs_err err;
};

void gs__table_init(struct gs__table *t, size_t ncols);
void gs__table_free(struct gs__table *t);
/* Appends a row of blanks. */
void gs__table_row(struct gs__table *t);
/* Sets column col of the last row. */
void gs__table_set(struct gs__table *t, size_t col, const char *fmt, ...) GS__PRINTF(3, 4);
/* Appends the rows to b, each line starting with indent; passes t's error on. */
void gs__table_render(struct gs__table *t, const char *indent, struct gs__sbuf *b);

#endif
