/* gpushare — the one growable buffer (curl's bounded dynbuf, redis's sds in
 * spirit): NUL-terminated whenever it holds memory, bounded by max (0: no
 * bound), and a failed append sticks (failed) so that a writer of many
 * pieces checks once at the end. Every layer that builds text uses it: the
 * apiserver client's URLs and bodies, the answer writer, JSON dumps,
 * /metrics. libc only. */
#ifndef GPUSHARE_UTIL_BUF_H
#define GPUSHARE_UTIL_BUF_H

#include <gpushare/err.h>

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct gs_buf {
  char *p;            /* NUL-terminated when non-NULL; owned */
  size_t len, cap;
  size_t max;         /* bound on len; 0: none */
  enum gs_err failed; /* GS_EOK, or the first failure (GS_ENOMEM, GS_ETOOBIG) */
};

/* The slow path of gs_buf_room: grows, or records the failure. */
bool gs__buf_grow(struct gs_buf *b, size_t n);

/* Room for n more bytes and the NUL; false (and failed set) when the bound
 * or memory says no, or after an earlier failure. Inline: the answer
 * writer asks for every piece of a filter answer (docs/benchmarks.md). */
static inline bool gs_buf_room(struct gs_buf *b, size_t n) {
  if (b->failed == GS_EOK && b->p != NULL && n < b->cap - b->len &&
      (b->max == 0 || (n <= b->max && b->len <= b->max - n)))
    return true;
  return gs__buf_grow(b, n);
}

/* Appends n bytes; the failure (sticky) otherwise. Not warn_unused_result:
 * a writer of many pieces may check b->failed once at the end instead. */
static inline enum gs_err gs_buf_add(struct gs_buf *b, const char *data, size_t n) {
  if (!gs_buf_room(b, n))
    return b->failed;
  if (n)
    memcpy(b->p + b->len, data, n);
  b->len += n;
  b->p[b->len] = '\0';
  return GS_EOK;
}
enum gs_err gs_buf_str(struct gs_buf *b, const char *s);
enum gs_err gs_buf_printf(struct gs_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The text (caller frees with gs_free/free; "" when nothing was written),
 * or NULL after a failure; the buffer is left empty either way. */
char *gs_buf_take(struct gs_buf *b);
/* Empties b and forgets a failure, keeping its memory for the next fill. */
void gs_buf_clear(struct gs_buf *b);
/* Frees the memory; b is empty (max kept). */
void gs_buf_release(struct gs_buf *b);

#endif
