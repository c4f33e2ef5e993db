/* Status and annotation helpers of the plugin interface (pure, no I/O). */
#include <gpushare/plugin.h>

#include "alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gs_status_name(enum gs_err code) {
  switch (code) {
  case GS_EOK:
    return "Success";
  case GS_ENOFIT:
    return "Unschedulable";
  case GS_EUNRESOLVABLE:
    return "UnschedulableAndUnresolvable";
  case GS_ESKIP:
    return "Skip";
  case GS_EWAIT:
    return "Wait";
  default:
    return "Error";
  }
}

const char *gs_reason_label(enum gs_reason why) {
  static const char *const labels[] = {
#define GS_REASON_LABEL(name, label) label,
      GS_REASON_LIST(GS_REASON_LABEL)
#undef GS_REASON_LABEL
  };
  if ((size_t)why >= sizeof labels / sizeof labels[0])
    return labels[GS_R_OTHER];
  return labels[why];
}

enum gs_err gs_status_set(struct gs_status *st, enum gs_err code, enum gs_reason why,
                          const char *fmt, ...) {
  va_list ap;
  if (st == NULL)
    return code;
  st->code = code;
  st->why = why;
  va_start(ap, fmt);
  vsnprintf(st->reason, sizeof st->reason, fmt, ap);
  va_end(ap);
  return code;
}

enum gs_err gs_annotations_set(struct gs_annotations *a, const char *key, const char *value) {
  size_t i;
  char *copy;
  if (strlen(key) > GS_ANNOT_KEY_MAX)
    return GS_ETOOBIG;
  copy = gs_strdup(value);
  if (copy == NULL)
    return GS_ENOMEM;
  for (i = 0; i < a->n; i++) {
    if (strcmp(a->kv[i].key, key) == 0) {
      gs_free(a->kv[i].value);
      a->kv[i].value = copy;
      return GS_EOK;
    }
  }
  if (a->n >= GS_ANNOT_MAX) {
    gs_free(copy);
    return GS_ETOOBIG;
  }
  snprintf(a->kv[a->n].key, sizeof a->kv[a->n].key, "%s", key);
  a->kv[a->n].value = copy;
  a->n++;
  return GS_EOK;
}

const char *gs_annotations_get(const struct gs_annotations *a, const char *key) {
  for (size_t i = 0; i < a->n; i++)
    if (strcmp(a->kv[i].key, key) == 0)
      return a->kv[i].value;
  return NULL;
}

void gs_annotations_clear(struct gs_annotations *a) {
  for (size_t i = 0; i < a->n; i++) {
    gs_free(a->kv[i].value);
    a->kv[i].value = NULL;
  }
  a->n = 0;
}
