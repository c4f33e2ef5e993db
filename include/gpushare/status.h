/* gpushare — the verdicts of the scheduling hooks: a struct gs_status is
 * the project's one result type, an enum gs_err with a reason that becomes
 * a node's FailedNodes text. Used by the core's placement, the plugins, the
 * framework and the service alike. The scheduling framework's codes are
 * these values of enum gs_err:
 *   GS_EOK            Success
 *   GS_ENOFIT         Unschedulable (→ FailedNodes)
 *   GS_EUNRESOLVABLE  UnschedulableAndUnresolvable (→ FailedAndUnresolvableNodes)
 *   GS_ESKIP          Skip: the plugin has no opinion on this pod
 *   GS_EWAIT          Wait: permit, not yet (gang incomplete)
 *   any other code    Error: an internal error (the verb's Error), the code
 *                     saying which (GS_ENOMEM, GS_ECONFLICT, ...). */
#ifndef GPUSHARE_STATUS_H
#define GPUSHARE_STATUS_H

#include <gpushare/err.h>
#include <gpushare/types.h>

#include <stdbool.h>
#include <stdint.h>

/* True for a code that is an internal error as a verdict (not success,
 * unschedulable, unresolvable, skip or wait). */
static inline bool gs_status_is_error(enum gs_err code) {
  return code != GS_EOK && code != GS_ENOFIT && code != GS_EUNRESOLVABLE && code != GS_ESKIP &&
         code != GS_EWAIT;
}
/* The scheduling framework's name of a verdict ("Success", "Unschedulable",
 * "UnschedulableAndUnresolvable", "Skip", "Wait", "Error"); never NULL. */
const char *gs_status_name(enum gs_err code);

struct gs_status {
  enum gs_err code;
  char reason[GS_REASON_MAX]; /* never contains a node name */
};
/* Sets code and a printf-style reason. Returns code. */
enum gs_err gs_status_set(struct gs_status *st, enum gs_err code, const char *fmt, ...)
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
      enum gs_err code; /* GS_EOK, GS_ENOFIT or GS_EUNRESOLVABLE */
      char reason[GS_REASON_MAX];
    };
    struct gs_status status; /* the framework's view of the two */
  };
};

#endif
