/* Typed JSON member access with diagnostics, and small text helpers. */
#include "api_internal.h"
#include "jw.h"
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
    n = gs_utf8_len(s + i);
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

char *gs_api_dump(const json_t *value) { return gs__api_dump(value); }

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

enum gs_err gs__api_ann_load(const char *text, const char *where, const char *too_long,
                             json_t **ret, struct gs_diag *diag) {
  json_error_t jerr;
  enum gs_err lerr;
  json_t *doc;
  if (strlen(text) > GS__API_ANN_TEXT_MAX) {
    gs_diag_set(diag, where, "%slonger than %u bytes", too_long, GS__API_ANN_TEXT_MAX);
    return GS_ETOOBIG;
  }
  doc = gs__api_loadb(text, strlen(text), JSON_REJECT_DUPLICATES, &jerr, &lerr);
  if (doc == NULL) {
    if (lerr == GS_ENOMEM)
      gs_diag_set(diag, where, "out of memory");
    else
      gs_diag_set(diag, where, "invalid JSON: %s", jerr.text);
    return lerr;
  }
  *ret = doc;
  return GS_EOK;
}



