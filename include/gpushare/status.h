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

/* Why a verdict is what it is, as a code beside its text: the reason's
 * label in gpushare_filter_rejections_total{reason} (docs/operations.md,
 * "Metrics") comes from it, never from the wording. One list, the codes
 * and their labels; append-only. */
#define GS_REASON_LIST(X)                                                                      \
  X(GS_R_OTHER, "other")                   /* none of the below (or success) */              \
  X(GS_R_NODE_UNKNOWN, "node_unknown")     /* the ledger does not know the node */            \
  X(GS_R_NODE_NOT_MANAGED, "node_not_managed")                                                 \
  X(GS_R_NODE_WHOLE_GPUS_ONLY, "node_whole_gpus_only") /* topology mode */                    \
  X(GS_R_NODE_MEMORY_ONLY, "node_memory_only")         /* does not serve whole GPUs */        \
  X(GS_R_NODE_SINGLE_CARD, "node_single_card")                                                 \
  X(GS_R_NO_HEALTHY_GPU, "no_healthy_gpu")                                                     \
  X(GS_R_CGPU_POD_LIMIT, "cgpu_pod_limit")                                                     \
  X(GS_R_INSUFFICIENT_GPU_MEMORY, "insufficient_gpu_memory")                                   \
  X(GS_R_INSUFFICIENT_WHOLE_GPUS, "insufficient_whole_gpus")                                   \
  X(GS_R_INSUFFICIENT_GPUS, "insufficient_gpus")                                               \
  X(GS_R_INVALID_POD, "invalid_pod")       /* the pod itself, on every node */                \
  X(GS_R_GANG_QUORUM, "gang_quorum")                                                           \
  X(GS_R_GANG_DISAGREE, "gang_disagree")                                                       \
  X(GS_R_GANG_NO_FIT, "gang_no_fit")                                                           \
  X(GS_R_GANG_OTHER_NODE, "gang_other_node")                                                   \
  X(GS_R_GANG_FULL, "gang_full")                                                               \
  X(GS_R_GANG_WAITING, "gang_waiting")                                                         \
  X(GS_R_GANG_LIMIT, "gang_limit")                                                             \
  X(GS_R_GANG_OTHER, "gang_other")         /* the gang's other refusals */
enum gs_reason {
#define GS_REASON_ENUM(name, label) name,
  GS_REASON_LIST(GS_REASON_ENUM)
#undef GS_REASON_ENUM
};
/* The metric label of a reason code ("other" for an unknown value); never
 * NULL, a static string. */
const char *gs_reason_label(enum gs_reason why);

struct gs_status {
  enum gs_err code;
  enum gs_reason why;          /* the reason's code */
  char reason[GS_REASON_MAX];  /* its text; never contains a node name */
};
/* Sets code, the reason's code and a printf-style text. st may be NULL.
 * Returns code. */
enum gs_err gs_status_set(struct gs_status *st, enum gs_err code, enum gs_reason why,
                          const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* The verdict for one node of a filter or prioritize call. code, why and
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
      enum gs_reason why;
      char reason[GS_REASON_MAX];
    };
    struct gs_status status; /* the framework's view of the two */
  };
};

#endif
