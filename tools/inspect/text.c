/* gpushare-inspect — growable text and aligned columns (see text.h). */
#include "text.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- growable text, capped at GS_INSPECT_OUT_MAX --------------------------- */

void gs__sbuf_reserve(struct gs__sbuf *b, size_t more) {
  size_t want, ncap;
  char *np;
  if (b->err != GS_EOK)
    return;
  if (more > GS_INSPECT_OUT_MAX || b->len > GS_INSPECT_OUT_MAX - more) {
    b->err = GS_ETOOBIG;
    return;
  }
  want = b->len + more + 1;
  if (want <= b->cap)
    return;
  ncap = b->cap ? b->cap : 1024;
  while (ncap < want)
    ncap *= 2;
  np = realloc(b->p, ncap);
  if (np == NULL) {
    b->err = GS_ENOMEM;
    return;
  }
  b->p = np;
  b->cap = ncap;
}

void gs__sbuf_putn(struct gs__sbuf *b, const char *s, size_t n) {
  gs__sbuf_reserve(b, n);
  if (b->err != GS_EOK)
    return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void gs__sbuf_puts(struct gs__sbuf *b, const char *s) { gs__sbuf_putn(b, s, strlen(s)); }

void gs__sbuf_repeat(struct gs__sbuf *b, char c, size_t n) {
  gs__sbuf_reserve(b, n);
  if (b->err != GS_EOK)
    return;
  memset(b->p + b->len, c, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void gs__sbuf_printf(struct gs__sbuf *b, const char *fmt, ...) {
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    if (b->err == GS_EOK)
      b->err = GS_EINVAL;
    return;
  }
  gs__sbuf_reserve(b, (size_t)n);
  if (b->err != GS_EOK)
    return;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

size_t gs__sbuf_widest(const struct gs__sbuf *b, size_t start) {
  size_t widest = 0, cur = 0;
  for (size_t i = start; i < b->len; i++) {
    if (b->p[i] == '\n') {
      cur = 0;
      continue;
    }
    if (++cur > widest)
      widest = cur;
  }
  return widest;
}

/* ---- aligned columns, two spaces apart, no trailing blanks ----------------- */

void gs__table_init(struct gs__table *t, size_t ncols) {
  memset(t, 0, sizeof *t);
  t->ncols = ncols;
}

void gs__table_free(struct gs__table *t) {
  if (t->cell != NULL)
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
      free(t->cell[i]);
  free(t->cell);
  t->cell = NULL;
  t->nrows = t->cap = 0;
}

void gs__table_row(struct gs__table *t) {
  if (t->err != GS_EOK)
    return;
  if (t->nrows == t->cap) {
    size_t ncap = t->cap ? t->cap * 2 : 8;
    char **nc;
    if (ncap > SIZE_MAX / sizeof(char *) / t->ncols) {
      t->err = GS_ETOOBIG;
      return;
    }
    nc = realloc(t->cell, ncap * t->ncols * sizeof(char *));
    if (nc == NULL) {
      t->err = GS_ENOMEM;
      return;
    }
    t->cell = nc;
    t->cap = ncap;
  }
  for (size_t c = 0; c < t->ncols; c++)
    t->cell[t->nrows * t->ncols + c] = NULL;
  t->nrows++;
}

void gs__table_set(struct gs__table *t, size_t col, const char *fmt, ...) {
  va_list ap;
  int n;
  char *s, **slot;
  if (t->err != GS_EOK)
    return;
  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    t->err = GS_EINVAL;
    return;
  }
  s = malloc((size_t)n + 1);
  if (s == NULL) {
    t->err = GS_ENOMEM;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  slot = &t->cell[(t->nrows - 1) * t->ncols + col];
  free(*slot);
  *slot = s;
}

void gs__table_render(struct gs__table *t, const char *indent, struct gs__sbuf *b) {
  size_t *width;
  if (t->err != GS_EOK) {
    if (b->err == GS_EOK)
      b->err = t->err;
    return;
  }
  width = calloc(t->ncols ? t->ncols : 1, sizeof *width);
  if (width == NULL) {
    if (b->err == GS_EOK)
      b->err = GS_ENOMEM;
    return;
  }
  for (size_t r = 0; r < t->nrows; r++)
    for (size_t c = 0; c < t->ncols; c++) {
      const char *s = t->cell[r * t->ncols + c];
      size_t n = s ? strlen(s) : 0;
      if (n > width[c])
        width[c] = n;
    }
  for (size_t r = 0; r < t->nrows; r++) {
    size_t pending = 0; /* blanks owed before the next non-empty cell */
    gs__sbuf_puts(b, indent);
    for (size_t c = 0; c < t->ncols; c++) {
      const char *s = t->cell[r * t->ncols + c];
      size_t n = s ? strlen(s) : 0;
      if (n > 0) {
        gs__sbuf_repeat(b, ' ', pending);
        gs__sbuf_putn(b, s, n);
        pending = 0;
      }
      pending += width[c] - n + 2;
    }
    gs__sbuf_puts(b, "\n");
  }
  free(width);
}
