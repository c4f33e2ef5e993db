/* gpushare — the plugin interface.
 *
 * Modelled on the Kubernetes scheduling framework's extension points:
 * pre_filter (the pod alone), filter and score (per node), reserve /
 * unreserve (the ledger), permit (gangs: wait until all members fit), bind
 * (the annotations the Binding carries). A plugin includes only
 * the public headers under include/; the framework calls its hooks under the one ledger lock,
 * so hooks never lock. Every hook may be NULL (= success / no opinion).
 *
 * Versioning: GS_PLUGIN_API_VERSION changes when a hook's meaning changes;
 * new hooks are appended at the end of struct gs_plugin_ops.
 */
#ifndef GPUSHARE_PLUGIN_H
#define GPUSHARE_PLUGIN_H

#include <gpushare/ledger.h>
#include <gpushare/place.h>

#define GS_PLUGIN_API_VERSION 1u
#define GS_ANNOT_MAX 24        /* annotations one bind may write */
#define GS_ANNOT_KEY_MAX 127

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
  int64_t score; /* prioritize: 0..10 */
  union {
    struct {
      enum gs_code code; /* SUCCESS, UNSCHEDULABLE or UNRESOLVABLE */
      char reason[GS_REASON_MAX];
    };
    struct gs_status status; /* the framework's view of the two */
  };
};

/* Annotations written by bind: key → value (value heap-owned). */
struct gs_annotations {
  size_t n;
  struct {
    char key[GS_ANNOT_KEY_MAX + 1];
    char *value;
  } kv[GS_ANNOT_MAX];
};
/* Adds or replaces key (value copied). GS_ETOOBIG past GS_ANNOT_MAX. */
enum gs_err gs_annotations_set(struct gs_annotations *a, const char *key,
                               const char *value) GS_WUR;
/* Value of key, or NULL. Borrowed. */
const char *gs_annotations_get(const struct gs_annotations *a, const char *key);
/* Frees the values; leaves an empty set. */
void gs_annotations_clear(struct gs_annotations *a);

/* One pod's pass through the extension points. */
struct gs_cycle {
  const struct gs_pod_request *pod;
  const struct gs_policy *policy;
  struct gs_ledger *ledger; /* read-only in pre_filter, filter and score */
  int64_t now_ns;           /* unix ns; the clock is the caller's */
  /* In filter, score and filter_score: the pod checked once for the whole
   * request (gs_place_prepare with pod and policy), so per-node hooks need
   * not check it again; NULL when the pod failed that check or in other
   * hooks. Appended: the fields above keep their places. */
  const struct gs_place_pod *place;
};

/* A plan a plugin holds in the ledger for pods not all bound yet (a gang's
 * slots), as debug views show it (docs/contract.md §5 "gangs"). Strings and
 * arrays are borrowed from the plugin: valid only inside the emit call. */
struct gs_plan_view {
  const char *ns, *job;
  uint32_t replicas;             /* members the plan is for */
  uint32_t placed;               /* slots whose member holds its GPUs */
  uint32_t nslots;
  const char *const *slot_nodes; /* nslots entries */
  const uint64_t *slot_gpus;     /* nslots GPU masks */
};

struct gs_plugin_ops {
  const char *name;
  uint32_t api_version; /* GS_PLUGIN_API_VERSION */
  /* Long-lived plugin state (NULL allowed). destroy accepts NULL. */
  void *(*create)(const struct gs_policy *policy);
  void (*destroy)(void *self);
  enum gs_code (*pre_filter)(void *self, const struct gs_cycle *c, struct gs_status *st);
  enum gs_code (*filter)(void *self, const struct gs_cycle *c, const struct gs_node *node,
                         struct gs_status *st);
  /* *ret_score in 0..10. */
  enum gs_code (*score)(void *self, const struct gs_cycle *c, const struct gs_node *node,
                        int64_t *ret_score);
  enum gs_code (*reserve)(void *self, struct gs_cycle *c, const struct gs_node *node,
                          struct gs_status *st);
  void (*unreserve)(void *self, struct gs_cycle *c, const char *node);
  enum gs_code (*permit)(void *self, struct gs_cycle *c, const char *node, struct gs_status *st);
  /* Adds the pod's annotations for the Binding; alloc is the reservation. */
  enum gs_code (*bind)(void *self, const struct gs_cycle *c, const struct gs_alloc *alloc,
                       struct gs_annotations *ret, struct gs_status *st);
  /* Time passes (gang timeouts). Called periodically under the lock. */
  void (*tick)(void *self, struct gs_ledger *ledger, int64_t now_ns);
  /* A pod left the cluster (deleted or terminal). */
  void (*pod_gone)(void *self, struct gs_ledger *ledger, const char *uid);
  /* Optional, for prioritize: filter and score of one node in one pass,
   * when both would repeat the same work (gpumem picks the GPUs once
   * instead of twice). Must return what filter returns; on SUCCESS
   * *ret_scored says whether score would have scored (false = SKIP) and
   * *ret_score holds that score. When set, prioritize calls it instead of
   * filter and score; filter still serves the filter verb. */
  enum gs_code (*filter_score)(void *self, const struct gs_cycle *c, const struct gs_node *node,
                               struct gs_status *st, int64_t *ret_score, bool *ret_scored);
  /* Optional, for debug views and metrics: emit each plan the plugin holds
   * (called with the lock held shared). Appended. */
  void (*describe)(void *self, void (*emit)(void *ctx, const struct gs_plan_view *plan),
                   void *ctx);
};

#endif
