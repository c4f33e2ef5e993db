/* gpushare — the verdicts of the scheduling hooks: a code mirroring the
 * scheduling framework's (success, unschedulable, unresolvable, error, skip,
 * wait) with a reason that becomes a node's FailedNodes text, and a node's
 * result of a filter or prioritize call. Used by the plugins, the framework
 * and the service alike. */
#ifndef GPUSHARE_STATUS_H
#define GPUSHARE_STATUS_H

#include <gpushare/types.h>

#include <stdint.h>

/* Mirrors the framework's status codes. */
enum gs_code {
  GS_CODE_SUCCESS = 0,
  GS_CODE_UNSCHEDULABLE, /* → FailedNodes */
  GS_CODE_UNRESOLVABLE,  /* → FailedAndUnresolvableNodes */
  GS_CODE_ERROR,         /* internal error: the verb's Error */
  GS_CODE_SKIP,          /* the plugin has no opinion on this pod */
  GS_CODE_WAIT,          /* permit: not yet (gang incomplete) */
};
const char *gs_code_name(enum gs_code code);

struct gs_status {
  enum gs_code code;
  char reason[GS_REASON_MAX]; /* never contains a node name */
};
/* Sets code and a printf-style reason. Returns code. */
enum gs_code gs_status_set(struct gs_status *st, enum gs_code code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The verdict for one node of a filter or prioritize call. code and
 * reason overlay a struct gs_status (the same members, in the same order)
 * so that the framework hands the plugins the result's own status: a
 * refused node's reason is written once, not copied per node
 * (docs/benchmarks.md, core). */
struct gs_node_result {
  int64_t score;    /* prioritize: 0..10, the extender's (score100 rounded half up) */
  int64_t score100; /* prioritize: 0..100, the framework plugin's */
  union {
    struct {
      enum gs_code code; /* SUCCESS, UNSCHEDULABLE or UNRESOLVABLE */
      char reason[GS_REASON_MAX];
    };
    struct gs_status status; /* the framework's view of the two */
  };
};

#endif
