/* Label selectors for disruption budgets (include/gpushare/preempt.h):
 * Kubernetes' matchLabels and matchExpressions over a pod's labels, in the
 * line-oriented text form src/api writes. Label keys and values never hold
 * '=', ',' or a newline, so the form needs no escapes. */
#include <gpushare/preempt.h>

#include <stdbool.h>
#include <string.h>

/* The value of key in labels ("key=value" lines): its start and length,
 * or false when the pod has no such label. */
static bool label_value(const char *labels, const char *key, size_t klen, const char **ret_v,
                        size_t *ret_len) {
  const char *line = labels;
  while (line != NULL && *line != '\0') {
    const char *end = strchr(line, '\n');
    size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
    if (len > klen && line[klen] == '=' && memcmp(line, key, klen) == 0) {
      *ret_v = line + klen + 1;
      *ret_len = len - klen - 1;
      return true;
    }
    line = end != NULL ? end + 1 : NULL;
  }
  return false;
}

/* Is the value one of the comma-separated list vals (vlen bytes)? */
static bool in_list(const char *vals, size_t vlen, const char *v, size_t len) {
  size_t at = 0;
  while (at <= vlen) {
    const char *comma = memchr(vals + at, ',', vlen - at);
    size_t item = comma != NULL ? (size_t)(comma - (vals + at)) : vlen - at;
    if (item == len && memcmp(vals + at, v, len) == 0)
      return true;
    if (comma == NULL)
      break;
    at += item + 1;
  }
  return false;
}

/* One requirement line (len bytes, no newline). */
static bool holds(const char *req, size_t len, const char *labels) {
  const char *key = req + 1, *eq, *v = NULL;
  size_t klen, vlen = 0;
  bool has;
  if (len < 2)
    return false;
  switch (req[0]) {
  case '+':
  case '-':
    has = label_value(labels, key, len - 1, &v, &vlen);
    return req[0] == '+' ? has : !has;
  case '=':
  case '!':
    eq = memchr(key, '=', len - 1);
    if (eq == NULL || eq == key)
      return false;
    klen = (size_t)(eq - key);
    has = label_value(labels, key, klen, &v, &vlen) &&
          in_list(eq + 1, len - 1 - klen - 1, v, vlen);
    /* NotIn holds for a pod without the label, as Kubernetes has it */
    return req[0] == '=' ? has : !has;
  default:
    return false;
  }
}

bool gs_selector_matches(const char *selector, const char *labels) {
  const char *line = selector;
  if (selector == NULL)
    return false;
  if (labels == NULL)
    labels = "";
  while (*line != '\0') {
    const char *end = strchr(line, '\n');
    size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
    if (len > 0 && !holds(line, len, labels))
      return false;
    if (end == NULL)
      break;
    line = end + 1;
  }
  return true;
}
