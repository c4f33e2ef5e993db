/* policy/v1 PodDisruptionBudgets and pods' labels in the text forms the
 * core's selector reads (include/gpushare/preempt.h gs_selector_matches;
 * docs/preemption.md). */
#include "api.h"
#include "api_internal.h"

#include <stdio.h>
#include <string.h>

/* Label keys and values never hold these; the text forms rely on it. */
static bool plain(const char *s, bool value) {
  return s != NULL && strpbrk(s, "=,\n") == NULL && (value || s[0] != '\0');
}

/* Appends text to buf (at *len, cap bytes); false when it does not fit. */
static bool put(char *buf, size_t cap, size_t *len, const char *text) {
  size_t n = strlen(text);
  if (*len + n + 1 > cap)
    return false;
  memcpy(buf + *len, text, n + 1);
  *len += n;
  return true;
}

static enum gs_err expr_decode(const json_t *e, size_t i, char *buf, size_t *len,
                               struct gs_diag *diag) {
  char where[GS__API_PATH_MAX];
  const char *key = json_string_value(gs__api_get(e, "key"));
  const char *op = json_string_value(gs__api_get(e, "operator"));
  const json_t *values = gs__api_get(e, "values"), *v;
  char lead[2] = {0, 0};
  size_t k;
  gs__api_path(where, "PodDisruptionBudget.spec.selector.matchExpressions[%zu]", i);
  if (!plain(key, false) || op == NULL) {
    gs_diag_set(diag, where, "needs a key and an operator");
    return GS_EPARSE;
  }
  if (strcmp(op, "In") == 0)
    lead[0] = '=';
  else if (strcmp(op, "NotIn") == 0)
    lead[0] = '!';
  else if (strcmp(op, "Exists") == 0)
    lead[0] = '+';
  else if (strcmp(op, "DoesNotExist") == 0)
    lead[0] = '-';
  else {
    gs_diag_set(diag, where, "unknown operator \"%s\"", op);
    return GS_EPARSE;
  }
  if (!put(buf, GS_API_SELECTOR_MAX, len, lead) || !put(buf, GS_API_SELECTOR_MAX, len, key))
    goto big;
  if (lead[0] == '=' || lead[0] == '!') {
    if (!json_is_array(values) || json_array_size(values) == 0) {
      gs_diag_set(diag, where, "operator %s needs values", op);
      return GS_EPARSE;
    }
    json_array_foreach(values, k, v) {
      if (!plain(json_string_value(v), true)) {
        gs_diag_set(diag, where, "values must be label values");
        return GS_EPARSE;
      }
      if (!put(buf, GS_API_SELECTOR_MAX, len, k == 0 ? "=" : ",") ||
          !put(buf, GS_API_SELECTOR_MAX, len, json_string_value(v)))
        goto big;
    }
  }
  if (!put(buf, GS_API_SELECTOR_MAX, len, "\n"))
    goto big;
  return GS_EOK;
big:
  gs_diag_set(diag, "PodDisruptionBudget.spec.selector", "longer than %u bytes",
              (unsigned)GS_API_SELECTOR_MAX);
  return GS_ETOOBIG;
}

enum gs_err gs_api_pdb_decode(const json_t *pdb, struct gs_api_pdb *ret, struct gs_diag *diag) {
  const json_t *meta = gs__api_get(pdb, "metadata"), *sel, *labels, *exprs, *v;
  const char *ns = json_string_value(gs__api_get(meta, "namespace"));
  const char *name = json_string_value(gs__api_get(meta, "name")), *key;
  const json_t *allowed = gs__api_get(gs__api_get(pdb, "status"), "disruptionsAllowed");
  static __thread struct gs_api_pdb out; /* 4 KiB: off the stack */
  size_t len = 0, i;
  enum gs_err err;

  memset(&out, 0, sizeof out);
  if (name == NULL || name[0] == '\0') {
    gs_diag_set(diag, "PodDisruptionBudget.metadata.name", "missing");
    return GS_EPARSE;
  }
  if ((err = gs__api_copy(out.ns, sizeof out.ns, ns != NULL && ns[0] ? ns : "default",
                          "PodDisruptionBudget.metadata.namespace", "namespace", diag)) !=
          GS_EOK ||
      (err = gs__api_copy(out.name, sizeof out.name, name, "PodDisruptionBudget.metadata.name",
                          "name", diag)) != GS_EOK)
    return err;
  out.allowed = json_is_integer(allowed) && json_integer_value(allowed) > 0
                    ? (json_integer_value(allowed) > INT32_MAX ? INT32_MAX
                                                               : (int32_t)json_integer_value(allowed))
                    : 0;
  sel = gs__api_get(gs__api_get(pdb, "spec"), "selector");
  out.selector_null = sel == NULL;
  labels = gs__api_get(sel, "matchLabels");
  json_object_foreach((json_t *)labels, key, v) {
    if (!plain(key, false) || !plain(json_string_value(v), true)) {
      gs_diag_set(diag, "PodDisruptionBudget.spec.selector.matchLabels",
                  "keys and values must be label keys and values");
      return GS_EPARSE;
    }
    if (!put(out.selector, sizeof out.selector, &len, "=") ||
        !put(out.selector, sizeof out.selector, &len, key) ||
        !put(out.selector, sizeof out.selector, &len, "=") ||
        !put(out.selector, sizeof out.selector, &len, json_string_value(v)) ||
        !put(out.selector, sizeof out.selector, &len, "\n")) {
      gs_diag_set(diag, "PodDisruptionBudget.spec.selector", "longer than %u bytes",
                  (unsigned)GS_API_SELECTOR_MAX);
      return GS_ETOOBIG;
    }
  }
  exprs = gs__api_get(sel, "matchExpressions");
  json_array_foreach(exprs, i, v) {
    if ((err = expr_decode(v, i, out.selector, &len, diag)) != GS_EOK)
      return err;
  }
  *ret = out;
  return GS_EOK;
}

enum gs_err gs_api_pod_labels_text(const json_t *pod, char *buf, size_t cap) {
  const json_t *labels = gs__api_get(gs__api_get(pod, "metadata"), "labels"), *v;
  const char *key;
  size_t len = 0;
  if (cap == 0)
    return GS_ETOOBIG;
  buf[0] = '\0';
  json_object_foreach((json_t *)labels, key, v) {
    if (!plain(key, false) || !plain(json_string_value(v), true))
      return GS_EPARSE;
    if (!put(buf, cap, &len, key) || !put(buf, cap, &len, "=") ||
        !put(buf, cap, &len, json_string_value(v)) || !put(buf, cap, &len, "\n"))
      return GS_ETOOBIG;
  }
  return GS_EOK;
}
