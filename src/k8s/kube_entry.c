/* Compact cache entries, see kube_entry.h. */
#include "kube_entry.h"
#include <gpushare/alloc.h>

#include <stdlib.h>
#include <string.h>

static const char *str_at(const json_t *obj, const char *a, const char *b) {
  const json_t *v = json_object_get(json_object_get(obj, a), b);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

void gs__entry_ids(const json_t *e, struct gs__entry_ids *ids) {
  memset(ids, 0, sizeof *ids);
  if (json_is_string(e)) {
    const char *p = json_string_value(e), *end = p + json_string_length(e);
    for (int i = 0; i < GS__ENTRY_FIELDS && p <= end; i++) {
      const char *q = memchr(p, GS__ENTRY_SEP, (size_t)(end - p));
      if (q == NULL)
        q = end;
      ids->f[i] = p;
      ids->len[i] = (size_t)(q - p);
      p = q + 1;
    }
    return;
  }
  ids->f[0] = str_at(e, "metadata", "uid");
  ids->f[1] = str_at(e, "metadata", "resourceVersion");
  ids->f[2] = str_at(e, "spec", "nodeName");
  ids->f[3] = str_at(e, "status", "phase");
  for (int i = 0; i < GS__ENTRY_FIELDS; i++)
    ids->len[i] = ids->f[i] ? strlen(ids->f[i]) : 0;
}

json_t *gs__entry_compact(const json_t *obj, int nfields) {
  struct gs__entry_ids ids;
  char *text;
  size_t n = 0, at = 0;
  json_t *out;
  if (nfields < 1 || nfields > GS__ENTRY_FIELDS)
    return NULL;
  gs__entry_ids(obj, &ids);
  for (int i = 0; i < nfields; i++) {
    if (ids.f[i] != NULL && memchr(ids.f[i], GS__ENTRY_SEP, ids.len[i]) != NULL)
      return NULL;
    n += ids.len[i] + 1;
  }
  text = gs_malloc(n);
  if (text == NULL)
    return NULL;
  for (int i = 0; i < nfields; i++) {
    if (ids.len[i] > 0)
      memcpy(text + at, ids.f[i], ids.len[i]);
    at += ids.len[i];
    text[at++] = i + 1 < nfields ? GS__ENTRY_SEP : '\0';
  }
  out = json_stringn(text, n - 1);
  gs_free(text);
  return out;
}

static json_t *text_n(const char *p, size_t n) { return json_stringn(p ? p : "", p ? n : 0); }

json_t *gs__entry_expand(const char *key, const json_t *e, const char *kind, bool pod) {
  struct gs__entry_ids ids;
  const char *slash = pod ? strchr(key, '/') : NULL;
  json_t *obj = json_object(), *meta = json_object();
  if (obj == NULL || meta == NULL) {
    json_decref(obj);
    json_decref(meta);
    return NULL;
  }
  gs__entry_ids(e, &ids);
  json_object_set_new(obj, "kind", json_string(kind));
  json_object_set_new(obj, "apiVersion", json_string("v1"));
  json_object_set_new(obj, "metadata", meta);
  if (slash != NULL) {
    json_object_set_new(meta, "namespace", text_n(key, (size_t)(slash - key)));
    json_object_set_new(meta, "name", json_string(slash + 1));
  } else {
    json_object_set_new(meta, "name", json_string(key));
  }
  if (ids.len[0] > 0)
    json_object_set_new(meta, "uid", text_n(ids.f[0], ids.len[0]));
  if (ids.len[1] > 0)
    json_object_set_new(meta, "resourceVersion", text_n(ids.f[1], ids.len[1]));
  if (pod) {
    json_object_set_new(obj, "spec", json_pack("{s:o}", "nodeName", text_n(ids.f[2], ids.len[2])));
    if (ids.len[3] > 0)
      json_object_set_new(obj, "status", json_pack("{s:o}", "phase", text_n(ids.f[3], ids.len[3])));
  }
  return obj;
}
