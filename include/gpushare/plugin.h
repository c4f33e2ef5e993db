/* gpushare — the plugin interface.
 *
 * Modelled on the Kubernetes scheduling framework's extension points:
 * pre_filter (the pod alone), filter and score (per node), reserve /
 * unreserve (the ledger), permit (gangs: wait until all members fit), pre_bind
 * (the annotations the Binding carries). A plugin includes only
 * the public headers under include/; the framework calls its hooks under the one ledger lock,
 * so hooks never lock. Every hook may be NULL (= success / no opinion).
 *
 * Versioning: GS_PLUGIN_API_VERSION changes when a hook's meaning or name
 * changes; new hooks are appended at the end of struct gs_plugin_ops. The
 * service refuses a plugin of another version, saying which (docs/plugin.md).
 */
#ifndef GPUSHARE_PLUGIN_H
#define GPUSHARE_PLUGIN_H

#include <gpushare/annot.h>  /* struct gs_annotations: what pre_bind writes */
#include <gpushare/ledger.h>
#include <gpushare/place.h>
#include <gpushare/status.h> /* enum gs_err, struct gs_status, struct gs_node_result */

#define GS_PLUGIN_API_VERSION 8u /* 2: notices, pod_seen; 3: cycle state; 4: may_evict;
                                    5: scores 0..GS_SCORE_MAX; 6: hooks return enum gs_err;
                                    7: a signed pod's per-node answers are reused;
                                    8: the annotation hook bind is pre_bind */
/* The scale of plugin scores: kube-scheduler's framework (MaxNodeScore). The
 * extender's 0..10 (MaxExtenderPriority) is the framework's rounding. */
#define GS_SCORE_MAX 100

/* Bytes of per-cycle state each plugin gets (struct gs_cycle.state). */
#define GS_CYCLE_STATE_MAX 512

/* One pod's pass through the extension points: one filter or prioritize
 * call (pre_filter, then filter/score per node), or one bind (pre_filter,
 * reserve, pre_bind). */
struct gs_cycle {
  const struct gs_pod_request *pod;
  const struct gs_policy *policy;
  struct gs_ledger *ledger; /* read-only in pre_filter, filter and score */
  int64_t now_ns;           /* unix ns; the clock is the caller's */
  /* In filter, score and filter_score: the pod checked once for the whole
   * request (gs_place_prepare with pod and policy), so per-node hooks need
   * not check it again; NULL when the pod failed that check or in other
   * hooks. */
  const struct gs_place_pod *place;
  /* The calling plugin's per-cycle state, like the scheduling framework's
   * CycleState: GS_CYCLE_STATE_MAX bytes, zeroed when the cycle starts,
   * private to the plugin, gone when the cycle ends. The framework points it
   * at the right plugin's bytes before each hook. What pre_filter computes
   * for the per-node hooks goes here as plain data: the framework's lock is
   * released between pre_filter and filter, so pointers into the plugin's
   * long-lived state may not survive to filter. */
  void *state;
  /* True in a prioritize call (scores are wanted), false in filter and
   * bind: a plugin may score a pod it neither filters nor binds (gpumem,
   * under nodePolicy frag, a pod asking only CPU and memory). */
  bool scoring;
};

/* A gang a plugin keeps in the ledger, as debug views show it (docs/contract.md
 * §5 "gangs"): a plan holding slots for pods not all bound yet (waiting), or a
 * running job while any member holds its GPUs. Strings and arrays are
 * borrowed from the plugin: valid only inside the emit call. */
struct gs_plan_view {
  const char *ns, *job;
  uint32_t replicas;             /* members the plan is for */
  uint32_t placed;               /* slots whose member holds its GPUs */
  uint32_t nslots;
  const char *const *slot_nodes; /* nslots entries */
  const uint64_t *slot_gpus;     /* nslots GPU masks */
  bool waiting;                  /* a plan still holding slots not bound
                                    (gpushare_gangs_waiting counts these) */
};

/* What a plugin reports from tick for the front end to pass on (a Warning
 * Event on each pod, a log line, a counter). Strings are borrowed: valid
 * only inside the call. */
enum gs_notice_kind {
  GS_NOTICE_GANG_TIMEOUT = 1, /* a gang's plan was not all bound in time */
};
struct gs_notice {
  enum gs_notice_kind kind;
  const char *ns, *job;       /* the gang */
  const char *pod, *pod_uid;  /* the pod to tell; NULL for the gang's own notice,
                                 which comes first, once per event */
  const char *message;        /* for people: the Event's message */
};
struct gs_notify {
  void (*notice)(void *ctx, const struct gs_notice *n); /* NULL: notices dropped */
  void *ctx;
};

struct gs_plugin_ops {
  const char *name;
  uint32_t api_version; /* GS_PLUGIN_API_VERSION */
  /* Long-lived plugin state (NULL allowed). destroy accepts NULL. */
  void *(*create)(const struct gs_policy *policy);
  void (*destroy)(void *self);
  enum gs_err (*pre_filter)(void *self, const struct gs_cycle *c, struct gs_status *st);
  /* filter, score and filter_score: for a pod gs_place_signature signs,
   * the answer may depend only on what the signature says of the pod, on
   * the node's view and on the policy: a front end reuses it for the next
   * pod signed alike on every node the ledger has not changed since
   * (gs_ledger_changed_since; the framework's memo). */
  enum gs_err (*filter)(void *self, const struct gs_cycle *c, const struct gs_node *node,
                         struct gs_status *st);
  /* *ret_score in 0..GS_SCORE_MAX. */
  enum gs_err (*score)(void *self, const struct gs_cycle *c, const struct gs_node *node,
                        int64_t *ret_score);
  enum gs_err (*reserve)(void *self, struct gs_cycle *c, const struct gs_node *node,
                          struct gs_status *st);
  void (*unreserve)(void *self, struct gs_cycle *c, const char *node);
  enum gs_err (*permit)(void *self, struct gs_cycle *c, const char *node, struct gs_status *st);
  /* Adds the pod's annotations for the Binding; alloc is the reservation. */
  enum gs_err (*pre_bind)(void *self, const struct gs_cycle *c, const struct gs_alloc *alloc,
                           struct gs_annotations *ret, struct gs_status *st);
  /* Time passes (gang timeouts). Called periodically under the lock;
   * notify (never NULL; its notice may be) gets what the front end should
   * tell people. */
  void (*tick)(void *self, struct gs_ledger *ledger, int64_t now_ns,
               const struct gs_notify *notify);
  /* A pod left the cluster (deleted or terminal). */
  void (*pod_gone)(void *self, struct gs_ledger *ledger, const char *uid);
  /* Optional, for prioritize: filter and score of one node in one pass,
   * when both would repeat the same work (gpumem picks the GPUs once
   * instead of twice). Must return what filter returns; on SUCCESS
   * *ret_scored says whether score would have scored (false = SKIP) and
   * *ret_score holds that score. When set, prioritize calls it instead of
   * filter and score; filter still serves the filter verb. */
  enum gs_err (*filter_score)(void *self, const struct gs_cycle *c, const struct gs_node *node,
                               struct gs_status *st, int64_t *ret_score, bool *ret_scored);
  /* Optional, for debug views and metrics: emit each plan the plugin holds
   * (called with the lock held shared). Appended. */
  void (*describe)(void *self, void (*emit)(void *ctx, const struct gs_plan_view *plan),
                   void *ctx);
  /* A pod exists in the cluster, as the front end's watch sees it: pending
   * (alloc NULL) or bound with its allocation (already in the ledger, or
   * kept for a node not known yet). Called under the write lock for every
   * add or change the front end reports; gangs count their members present
   * with it and rebuild a running job after a restart. */
  void (*pod_seen)(void *self, struct gs_ledger *ledger, const struct gs_pod_request *pod,
                   const struct gs_alloc *alloc);
  /* Preemption (a what-if, read lock): may the pod holding alloc be
   * evicted to make room? false protects it (a gang's placeholders and
   * running members: docs/preemption.md). NULL: yes. */
  bool (*may_evict)(void *self, const struct gs_ledger *ledger, const struct gs_alloc *alloc);
};

#endif
