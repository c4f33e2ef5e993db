#include "buf.h"

#include "alloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FIRST_CAP 256

bool gs__buf_grow(struct gs_buf *b, size_t n) {
  size_t cap;
  char *p;
  if (b->failed != GS_EOK)
    return false;
  if (b->max != 0 && (n > b->max || b->len > b->max - n)) {
    b->failed = GS_ETOOBIG;
    return false;
  }
  if (b->p != NULL && n < b->cap - b->len)
    return true;
  cap = b->cap ? b->cap : FIRST_CAP;
  while (cap - b->len <= n) {
    if (cap > SIZE_MAX / 2) {
      b->failed = GS_ENOMEM;
      return false;
    }
    cap *= 2;
  }
  p = gs_realloc(b->p, cap);
  if (p == NULL) {
    b->failed = GS_ENOMEM;
    return false;
  }
  if (b->p == NULL)
    p[0] = '\0';
  b->p = p;
  b->cap = cap;
  return true;
}

enum gs_err gs_buf_str(struct gs_buf *b, const char *s) { return gs_buf_add(b, s, strlen(s)); }

enum gs_err gs_buf_printf(struct gs_buf *b, const char *fmt, ...) {
  va_list ap;
  int n;
  char small[256];
  va_start(ap, fmt);
  n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    if (b->failed == GS_EOK)
      b->failed = GS_EINVAL;
    return b->failed;
  }
  if ((size_t)n < sizeof small)
    return gs_buf_add(b, small, (size_t)n);
  if (!gs_buf_room(b, (size_t)n))
    return b->failed;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return GS_EOK;
}

char *gs_buf_take(struct gs_buf *b) {
  char *out = b->failed == GS_EOK ? b->p : NULL;
  size_t max = b->max;
  if (b->failed != GS_EOK)
    gs_free(b->p);
  else if (out == NULL)
    out = gs_strdup("");
  memset(b, 0, sizeof *b);
  b->max = max;
  return out;
}

void gs_buf_clear(struct gs_buf *b) {
  b->len = 0;
  b->failed = GS_EOK;
  if (b->p != NULL)
    b->p[0] = '\0';
}

void gs_buf_release(struct gs_buf *b) {
  gs_free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
  b->failed = GS_EOK;
}
