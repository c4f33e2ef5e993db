/* docs/contract.md §6 keys (ConfigMap data or --config file) → struct gs_policy. */
#include "config_int.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

void gs__config_render(const json_t *v, char *buf, size_t size) {
  /* how a value without text of its own is shown, by its type */
  static const char *const shown[] = {
      [JSON_OBJECT] = "(a mapping)", [JSON_ARRAY] = "(a list)", [JSON_TRUE] = "true",
      [JSON_FALSE] = "false",        [JSON_NULL] = "(empty)",
  };
  switch (json_typeof(v)) {
  case JSON_STRING:
    snprintf(buf, size, "\"%.64s\"", json_string_value(v));
    break;
  case JSON_INTEGER:
    snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    break;
  case JSON_REAL:
    snprintf(buf, size, "%g", json_real_value(v));
    break;
  default:
    snprintf(buf, size, "%s", shown[json_typeof(v)]);
    break;
  }
}

/* A whole number in [lo, hi] from a JSON integer or a decimal string (a
 * ConfigMap holds only strings; a --config file may hold YAML integers). */
static bool whole_in(const json_t *v, uint32_t lo, uint32_t hi, uint32_t *out) {
  unsigned long long n = 0;
  if (json_is_integer(v)) {
    json_int_t i = json_integer_value(v);
    if (i < (json_int_t)lo || i > (json_int_t)hi)
      return false;
    *out = (uint32_t)i;
    return true;
  }
  if (!json_is_string(v))
    return false;
  const char *s = json_string_value(v);
  size_t len = json_string_length(v);
  if (len == 0 || len > 10)
    return false;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return false;
    n = n * 10 + (unsigned)(s[i] - '0');
  }
  if (n < lo || n > hi)
    return false;
  *out = (uint32_t)n;
  return true;
}

static bool boolean(const json_t *v, bool *out) {
  if (json_is_boolean(v)) {
    *out = json_is_true(v);
    return true;
  }
  return json_is_string(v) && gs__config_yaml_bool(json_string_value(v), out);
}

enum key { K_UNIT, K_POLICY, K_CGPU, K_GANG, K_FRAG, K_NORM };

static const struct {
  const char *name;
  enum key key;
  const char *accepted;
} keys[] = {
    {"gpuMemoryUnit", K_UNIT, "1GiB, 128MiB"},
    {"nodePolicy", K_POLICY, "binpack, spread, frag"},
    {"cgpuMaxPodsPerGPU", K_CGPU, "integers 1..1024"},
    {"gangTimeoutSeconds", K_GANG, "integers 1..86400"},
    {"fragmentationAware", K_FRAG, "true, false"},
    {"fragScoreNormalize", K_NORM, "true, false"},
};

enum gs_err gs__config_apply(struct gs_policy *policy, const json_t *data, const char *file,
                             struct gs_diag *diag) {
  struct gs_policy p = *policy;
  if (data == NULL || json_is_null(data))
    return GS_EOK;
  if (!json_is_object(data)) {
    gs_diag_set(diag, file ? file : "data", "%s is not a mapping",
                file ? file : "ConfigMap data");
    return GS_EINVAL;
  }
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    const json_t *v = json_object_get(data, keys[i].name);
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    enum gs_err err = GS_EINVAL;
    bool ok = false;
    if (v == NULL)
      continue;
    switch (keys[i].key) {
    case K_UNIT:
      ok = s != NULL && gs_unit_parse(s, &p.unit_mib) == GS_EOK;
      err = GS_EUNIT;
      break;
    case K_POLICY:
      ok = s != NULL &&
           (strcmp(s, "binpack") == 0 || strcmp(s, "spread") == 0 || strcmp(s, "frag") == 0);
      if (ok)
        p.node_policy = strcmp(s, "frag") == 0 ? GS_PLACE_FRAG : gs_placement_parse(s);
      break;
    case K_CGPU:
      ok = whole_in(v, 1, 1024, &p.cgpu_max_pods);
      break;
    case K_GANG:
      ok = whole_in(v, 1, 86400, &p.gang_timeout_s);
      break;
    case K_FRAG:
      ok = boolean(v, &p.frag_aware);
      break;
    case K_NORM:
      ok = boolean(v, &p.frag_normalize);
      break;
    }
    if (!ok) {
      char shown[80], where[128];
      gs__config_render(v, shown, sizeof shown);
      if (file != NULL) {
        gs_diag_set(diag, file, "invalid %s %s in %s: accepted values are %s", keys[i].name,
                    shown, file, keys[i].accepted);
      } else {
        snprintf(where, sizeof where, "data.%s", keys[i].name);
        gs_diag_set(diag, where, "invalid %s %s: accepted values are %s", keys[i].name, shown,
                    keys[i].accepted);
      }
      return err;
    }
  }
  *policy = p;
  return GS_EOK;
}

enum gs_err gs_config_apply_data(struct gs_policy *policy, const json_t *data,
                                 struct gs_diag *diag) {
  return gs__config_apply(policy, data, NULL, diag);
}

void gs_config_apply_each_key(struct gs_policy *policy, const json_t *data, const char *source) {
  const char *key;
  json_t *value;
  json_object_foreach((json_t *)data, key, value) {
    struct gs_diag diag = {"", ""};
    json_t *one = json_object();
    if (one == NULL || json_object_set(one, key, value) != 0 ||
        gs_config_apply_data(policy, one, &diag) != GS_EOK)
      gs_log(GS_LVL_ERROR, "invalid configuration ignored; its default stays",
             "configmap=%s key=%s error=\"%s\"", source, key,
             diag.text[0] ? diag.text : "out of memory");
    json_decref(one);
  }
}

bool gs__config_resolve_path(const char *base_file, const char *path, char *out, size_t cap) {
  const char *slash = strrchr(base_file, '/');
  int n;
  if (path[0] == '/' || slash == NULL)
    n = snprintf(out, cap, "%s", path);
  else
    n = snprintf(out, cap, "%.*s/%s", (int)(slash - base_file), base_file, path);
  return n >= 0 && (size_t)n < cap;
}

void gs__config_diag_prefix(struct gs_diag *diag, const char *what) {
  char text[sizeof diag->text];
  size_t n, len;
  int rc;
  memcpy(text, diag->text, sizeof text);
  rc = snprintf(diag->text, sizeof diag->text, "%s %s: ", what, diag->where);
  if (rc < 0 || (size_t)rc >= sizeof diag->text)
    return;
  n = (size_t)rc;
  len = strnlen(text, sizeof text);
  if (len > sizeof diag->text - 1 - n)
    len = sizeof diag->text - 1 - n;
  memcpy(diag->text + n, text, len);
  diag->text[n + len] = '\0';
}
