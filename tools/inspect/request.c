/* gpushare-inspect — request URL and error-answer text (see request.h). */
#include "request.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool gs_inspect_url_is_valid(const char *base) {
  size_t skip;
  if (strncasecmp(base, "http://", 7) == 0)
    skip = 7;
  else if (strncasecmp(base, "https://", 8) == 0)
    skip = 8;
  else
    return false;
  /* a host must follow, and nothing that would end the URL early */
  if (base[skip] == '\0' || base[skip] == '/' || base[skip] == '?' || base[skip] == '#')
    return false;
  for (const char *p = base; *p; p++)
    if ((unsigned char)*p <= ' ' || *p == 0x7f)
      return false;
  return true;
}

size_t gs_inspect_base_len(const char *base) {
  size_t n = strlen(base);
  while (n > 0 && base[n - 1] == '/')
    n--;
  return n;
}

static bool is_unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

enum gs_err gs_inspect_url_new(const char *base, const char *node, char **ret_url) {
  static const char path[] = "/debug/ledger";
  static const char query[] = "?node=";
  static const char hex[] = "0123456789ABCDEF";
  size_t blen = gs_inspect_base_len(base), need = blen + sizeof path, o;
  char *url;

  if (blen > GS_INSPECT_URL_MAX)
    return GS_ETOOBIG;
  if (node != NULL) {
    size_t nlen = strlen(node);
    if (nlen > GS_INSPECT_URL_MAX)
      return GS_ETOOBIG;
    need += sizeof query - 1 + 3 * nlen; /* worst case: every byte escaped */
  }
  if (need > GS_INSPECT_URL_MAX + 1)
    return GS_ETOOBIG;
  url = malloc(need);
  if (url == NULL)
    return GS_ENOMEM;
  memcpy(url, base, blen);
  memcpy(url + blen, path, sizeof path - 1);
  o = blen + sizeof path - 1;
  if (node != NULL) {
    memcpy(url + o, query, sizeof query - 1);
    o += sizeof query - 1;
    for (const unsigned char *p = (const unsigned char *)node; *p; p++) {
      if (is_unreserved(*p)) {
        url[o++] = (char)*p;
      } else {
        url[o++] = '%';
        url[o++] = hex[*p >> 4];
        url[o++] = hex[*p & 15];
      }
    }
  }
  url[o] = '\0';
  *ret_url = url;
  return GS_EOK;
}

/* Copies n bytes of s into out as one safe line, cut with "..." if needed. */
static void copy_line(const char *s, size_t n, char *out, size_t len) {
  size_t o = 0;
  bool cut = false;
  while (n > 0 && (s[0] == ' ' || s[0] == '\t')) {
    s++;
    n--;
  }
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
    n--;
  if (n > len - 1) {
    cut = len > 4;
    n = cut ? len - 4 : len - 1;
  }
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    out[o++] = c < ' ' || c == 0x7f ? '?' : (char)c;
  }
  if (cut) {
    memcpy(out + o, "...", 3);
    o += 3;
  }
  out[o] = '\0';
}

void gs_inspect_error_text(const char *body, size_t body_len, char *out, size_t len) {
  json_t *root;
  const json_t *msg = NULL;
  size_t start = 0, end;

  if (len == 0)
    return;
  out[0] = '\0';
  if (body == NULL || body_len == 0)
    return;
  root = json_loadb(body, body_len, JSON_DISABLE_EOF_CHECK, NULL);
  if (json_is_object(root)) {
    msg = json_object_get(root, "error");
    if (!json_is_string(msg))
      msg = json_object_get(root, "Error");
  }
  if (json_is_string(msg)) {
    copy_line(json_string_value(msg), json_string_length(msg), out, len);
    json_decref(root);
    return;
  }
  json_decref(root);
  /* not JSON: the first line that says something */
  while (start < body_len) {
    end = start;
    while (end < body_len && body[end] != '\n')
      end++;
    copy_line(body + start, end - start, out, len);
    if (out[0] != '\0')
      return;
    start = end + 1;
  }
}
