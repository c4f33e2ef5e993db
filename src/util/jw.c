/* The one JSON text writer (jw.h). */
#include "jw.h"

#include <string.h>

size_t gs_utf8_len(const unsigned char *s) {
  size_t n, i;
  uint32_t cp;
  if (s[0] < 0x80)
    return 1;
  if ((s[0] & 0xE0) == 0xC0) {
    n = 2;
    cp = s[0] & 0x1Fu;
  } else if ((s[0] & 0xF0) == 0xE0) {
    n = 3;
    cp = s[0] & 0x0Fu;
  } else if ((s[0] & 0xF8) == 0xF0) {
    n = 4;
    cp = s[0] & 0x07u;
  } else {
    return 0;
  }
  for (i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3Fu);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
      cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}


/* Room for n more bytes; the first call makes room for a typical answer
 * at once (a filter answer names every node). */
static bool jw_room(struct gs_buf *w, size_t n) {
  if (w->p == NULL && n < 4095 && !gs_buf_room(w, 4095))
    return false;
  return gs_buf_room(w, n);
}

void gs_jw_raw(struct gs_buf *w, const char *s, size_t n) {
  if (!jw_room(w, n))
    return;
  memcpy(w->p + w->len, s, n);
  w->len += n;
  w->p[w->len] = '\0';
}

/* The escaped form of one byte that needs it, or NULL for plain bytes. */
static size_t jw_escape(const unsigned char *s, char esc[7], size_t *ret_used) {
  static const char hex[] = "0123456789ABCDEF";
  /* the two-byte escapes JSON has; every other control byte as \u00XX */
  static const char short_esc[128] = {['"'] = '"', ['\\'] = '\\', ['\b'] = 'b', ['\f'] = 'f',
                                      ['\n'] = 'n', ['\r'] = 'r',    ['\t'] = 't'};
  size_t n;
  *ret_used = 1;
  if (*s >= 0x80) {
    n = gs_utf8_len(s);
    if (n > 0) {
      *ret_used = n;
      return 0; /* valid UTF-8: as is */
    }
    esc[0] = '?';
    return 1;
  }
  esc[0] = '\\';
  if (short_esc[*s] != '\0') {
    esc[1] = short_esc[*s];
    return 2;
  }
  memcpy(esc + 1, "u00", 3);
  esc[4] = hex[*s >> 4];
  esc[5] = hex[*s & 15];
  return 6;
}

/* The bytes written as they are (ASCII from 0x20, but '"' and '\\'): one
 * load a byte instead of four compares (a filter's answer writes 1,000
 * node names, docs/benchmarks.md §10). NUL is not plain: it ends a run. */
#define JW_PLAIN(c) ((c) >= 0x20 && (c) < 0x80 && (c) != '"' && (c) != '\\')
#define JW_ROW(b)                                                                                \
  JW_PLAIN(b + 0), JW_PLAIN(b + 1), JW_PLAIN(b + 2), JW_PLAIN(b + 3), JW_PLAIN(b + 4),           \
      JW_PLAIN(b + 5), JW_PLAIN(b + 6), JW_PLAIN(b + 7), JW_PLAIN(b + 8), JW_PLAIN(b + 9),       \
      JW_PLAIN(b + 10), JW_PLAIN(b + 11), JW_PLAIN(b + 12), JW_PLAIN(b + 13), JW_PLAIN(b + 14),  \
      JW_PLAIN(b + 15)
static const bool jw_plain[256] = {JW_ROW(0x00), JW_ROW(0x10), JW_ROW(0x20), JW_ROW(0x30),
                                   JW_ROW(0x40), JW_ROW(0x50), JW_ROW(0x60), JW_ROW(0x70)};

void gs_jw_str(struct gs_buf *w, const char *text) {
  const unsigned char *s = (const unsigned char *)(text != NULL ? text : "");
  const unsigned char *run = s;
  size_t n = 0;
  /* Node names and reasons are almost always plain: one copy then. */
  while (jw_plain[s[n]])
    n++;
  if (s[n] == '\0') {
    if (!jw_room(w, n + 2))
      return;
    w->p[w->len] = '"';
    memcpy(w->p + w->len + 1, s, n);
    w->p[w->len + 1 + n] = '"';
    w->len += n + 2;
    w->p[w->len] = '\0';
    return;
  }
  gs_jw_raw(w, "\"", 1);
  s += n;
  while (*s != '\0') {
    char esc[7];
    size_t used, elen;
    if (jw_plain[*s]) {
      s++;
      continue;
    }
    elen = jw_escape(s, esc, &used);
    if (elen == 0) {
      s += used;
      continue;
    }
    gs_jw_raw(w, (const char *)run, (size_t)(s - run));
    gs_jw_raw(w, esc, elen);
    s++;
    run = s;
  }
  gs_jw_raw(w, (const char *)run, (size_t)(s - run));
  gs_jw_raw(w, "\"", 1);
}

void gs_jw_int(struct gs_buf *w, int64_t v) {
  char buf[24];
  size_t i = sizeof buf;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    buf[--i] = (char)('0' + u % 10);
    u /= 10;
  } while (u != 0);
  if (v < 0)
    buf[--i] = '-';
  gs_jw_raw(w, buf + i, sizeof buf - i);
}

void gs_jw_uint(struct gs_buf *w, uint64_t u) {
  char buf[24];
  size_t i = sizeof buf;
  do {
    buf[--i] = (char)('0' + u % 10);
    u /= 10;
  } while (u != 0);
  gs_jw_raw(w, buf + i, sizeof buf - i);
}

void gs_jw_key_uint(struct gs_buf *w, uint64_t v) {
  gs_jw_raw(w, "\"", 1);
  gs_jw_uint(w, v);
  gs_jw_raw(w, "\":", 2);
}
