/* Typed JSON member access with diagnostics, and small text helpers. */
#include "api_internal.h"
#include "alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gs__api_path(char path[GS__API_PATH_MAX], const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(path, GS__API_PATH_MAX, fmt, ap);
  va_end(ap);
}

const json_t *gs__api_get(const json_t *obj, const char *key) {
  const json_t *v;
  if (!json_is_object(obj))
    return NULL;
  v = json_object_get(obj, key);
  return json_is_null(v) ? NULL : v;
}

void gs__api_member_path(char path[GS__API_PATH_MAX], const char *parent, const char *key) {
  bool plain = key[0] != '\0';
  for (const char *k = key; *k != '\0'; k++)
    if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') ||
          *k == '_'))
      plain = false;
  if (plain)
    gs__api_path(path, "%s.%s", parent, key);
  else
    gs__api_path(path, "%s[\"%s\"]", parent, key);
}

static const char *type_name(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY:
    return "an array";
  case JSON_STRING:
    return "a string";
  case JSON_INTEGER:
    return "an integer";
  case JSON_REAL:
    return "a real number";
  case JSON_TRUE:
  case JSON_FALSE:
    return "a boolean";
  case JSON_NULL:
    return "null";
  }
  return "?";
}

static enum gs_err get_typed(const json_t *obj, const char *key, const char *path,
                             json_type want, const char *want_name, const json_t **ret,
                             struct gs_diag *diag) {
  const json_t *v = gs__api_get(obj, key);
  char where[GS__API_PATH_MAX];
  if (v != NULL && json_typeof(v) != want) {
    gs__api_member_path(where, path, key);
    gs_diag_set(diag, where, "must be %s, not %s", want_name, type_name(v));
    return GS_EPARSE;
  }
  *ret = v;
  return GS_EOK;
}

enum gs_err gs__api_get_object(const json_t *obj, const char *key, const char *path,
                               const json_t **ret, struct gs_diag *diag) {
  return get_typed(obj, key, path, JSON_OBJECT, "an object", ret, diag);
}

enum gs_err gs__api_get_array(const json_t *obj, const char *key, const char *path,
                              const json_t **ret, struct gs_diag *diag) {
  return get_typed(obj, key, path, JSON_ARRAY, "an array", ret, diag);
}

enum gs_err gs__api_get_string(const json_t *obj, const char *key, const char *path,
                               const char **ret, struct gs_diag *diag) {
  const json_t *v;
  enum gs_err err = get_typed(obj, key, path, JSON_STRING, "a string", &v, diag);
  if (err != GS_EOK)
    return err;
  *ret = v != NULL ? json_string_value(v) : NULL;
  return GS_EOK;
}

enum gs_err gs__api_copy(char *dst, size_t cap, const char *src, const char *where,
                         const char *what, struct gs_diag *diag) {
  size_t len = strlen(src);
  if (len >= cap) {
    gs_diag_set(diag, where, "%s is %zu bytes long, more than the limit of %zu", what, len,
                cap - 1);
    return GS_ETOOBIG;
  }
  memcpy(dst, src, len + 1);
  return GS_EOK;
}

bool gs__api_parse_decimal(const char *s, uint64_t max, uint64_t *ret) {
  uint64_t v = 0;
  size_t i;
  if (s == NULL || s[0] == '\0')
    return false;
  for (i = 0; s[i] != '\0'; i++) {
    if (s[i] < '0' || s[i] > '9' || i >= 19)
      return false;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (v > max)
    return false;
  *ret = v;
  return true;
}

bool gs__api_parse_int64(const char *s, int64_t *ret) {
  uint64_t mag;
  bool neg = s != NULL && s[0] == '-';
  if (!gs__api_parse_decimal(neg ? s + 1 : s, (uint64_t)INT64_MAX, &mag))
    return false;
  *ret = neg ? -(int64_t)mag : (int64_t)mag;
  return true;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s) {
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

json_t *gs__api_text(const char *text) {
  const unsigned char *s = (const unsigned char *)(text != NULL ? text : "");
  size_t len = strlen((const char *)s), i = 0, n;
  char *copy;
  json_t *out;
  out = json_stringn((const char *)s, len);
  if (out != NULL)
    return out;
  copy = gs_malloc(len + 1);
  if (copy == NULL)
    return NULL;
  while (i < len) {
    n = utf8_len(s + i);
    if (n == 0) {
      copy[i++] = '?';
    } else {
      memcpy(copy + i, s + i, n);
      i += n;
    }
  }
  copy[len] = '\0';
  out = json_stringn(copy, len);
  gs_free(copy);
  return out;
}

static int dump_cb(const char *chunk, size_t n, void *data) {
  return gs_buf_add(data, chunk, n) == GS_EOK ? 0 : -1;
}

char *gs__api_dump(const json_t *value) {
  struct gs_buf b = {0};
  /* json_dumps would return a document missing an object key if memory ran
   * out while writing the key (jansson ignores that failure); the buffer's
   * sticky failure catches it. */
  if (json_dump_callback(value, dump_cb, &b, JSON_COMPACT | JSON_PRESERVE_ORDER) != 0 ||
      b.failed != GS_EOK || b.p == NULL) {
    gs_buf_release(&b);
    return NULL;
  }
  return gs_buf_take(&b);
}

json_t *gs__api_loadb(const char *text, size_t len, size_t flags, json_error_t *jerr,
                      enum gs_err *ret_err) {
  unsigned long failures = gs_alloc_failures();
  json_t *doc = json_loadb(text, len, flags, jerr);
  if (doc != NULL)
    return doc;
  /* jansson 2.14: a failed lexer buffer gives an empty error text, a failed
   * string copy "string or '}' expected", others out_of_memory. */
  *ret_err = gs_alloc_failures() != failures ||
                     json_error_code(jerr) == json_error_out_of_memory || jerr->text[0] == '\0'
                 ? GS_ENOMEM
                 : GS_EPARSE;
  return NULL;
}

/* ---- the answer writer ------------------------------------------------------ */

/* Room for n more bytes; the first call makes room for a typical answer
 * at once (a filter answer names every node). */
static bool jw_room(struct gs_buf *w, size_t n) {
  if (w->p == NULL && n < 4095 && !gs_buf_room(w, 4095))
    return false;
  return gs_buf_room(w, n);
}

void gs__jw_raw(struct gs_buf *w, const char *s, size_t n) {
  if (!jw_room(w, n))
    return;
  memcpy(w->p + w->len, s, n);
  w->len += n;
  w->p[w->len] = '\0';
}

/* The escaped form of one byte that needs it, or NULL for plain bytes. */
static size_t jw_escape(const unsigned char *s, char esc[7], size_t *ret_used) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n;
  *ret_used = 1;
  if (*s >= 0x80) {
    n = utf8_len(s);
    if (n > 0) {
      *ret_used = n;
      return 0; /* valid UTF-8: as is */
    }
    esc[0] = '?';
    return 1;
  }
  esc[0] = '\\';
  switch (*s) {
  case '"':
    esc[1] = '"';
    return 2;
  case '\\':
    esc[1] = '\\';
    return 2;
  case '\b':
    esc[1] = 'b';
    return 2;
  case '\f':
    esc[1] = 'f';
    return 2;
  case '\n':
    esc[1] = 'n';
    return 2;
  case '\r':
    esc[1] = 'r';
    return 2;
  case '\t':
    esc[1] = 't';
    return 2;
  default:
    memcpy(esc + 1, "u00", 3);
    esc[4] = hex[*s >> 4];
    esc[5] = hex[*s & 15];
    return 6;
  }
}

void gs__jw_str(struct gs_buf *w, const char *text) {
  const unsigned char *s = (const unsigned char *)(text != NULL ? text : "");
  const unsigned char *run = s;
  size_t n = 0;
  /* Node names and reasons are almost always plain: one copy then. */
  while (s[n] >= 0x20 && s[n] < 0x80 && s[n] != '"' && s[n] != '\\')
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
  gs__jw_raw(w, "\"", 1);
  s += n;
  while (*s != '\0') {
    char esc[7];
    size_t used, elen;
    if (*s >= 0x20 && *s < 0x80 && *s != '"' && *s != '\\') {
      s++;
      continue;
    }
    elen = jw_escape(s, esc, &used);
    if (elen == 0) {
      s += used;
      continue;
    }
    gs__jw_raw(w, (const char *)run, (size_t)(s - run));
    gs__jw_raw(w, esc, elen);
    s++;
    run = s;
  }
  gs__jw_raw(w, (const char *)run, (size_t)(s - run));
  gs__jw_raw(w, "\"", 1);
}

void gs__jw_int(struct gs_buf *w, int64_t v) {
  char buf[24];
  size_t i = sizeof buf;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    buf[--i] = (char)('0' + u % 10);
    u /= 10;
  } while (u != 0);
  if (v < 0)
    buf[--i] = '-';
  gs__jw_raw(w, buf + i, sizeof buf - i);
}


