/* gpushare — the framework: runs the registered plugins at each extension
 * point over the ledger and owns the one lock around it.
 *
 * Every function here is thread-safe. Filter and prioritize take the lock
 * shared (readers in parallel); reserve, bind bookkeeping and cluster
 * events take it exclusive.
 */
#ifndef GPUSHARE_FRAMEWORK_H
#define GPUSHARE_FRAMEWORK_H

#include <gpushare/ledger.h>
#include <gpushare/place.h>
#include <gpushare/plugin.h>
#include <gpushare/preempt.h>

#define GS_FW_MAX_PLUGINS 16

struct gs_fw;

/* Creates a framework with an empty ledger in policy->unit_mib, running
 * plugins in the given order (array borrowed; it must outlive the
 * framework). Returns NULL on allocation failure or a plugin's create
 * failing. */
struct gs_fw *gs_fw_new(const struct gs_policy *policy, const struct gs_plugin_ops *const *plugins,
                        size_t nplugins);
/* Accepts NULL. */
void gs_fw_free(struct gs_fw *fw);
/* Filter and prioritize over at least min_nodes nodes run on the calling
 * thread and up to workers threads of the framework's pool (default: one
 * per CPU beside the caller's, at most 7, from 1,024 nodes). Call before
 * any verb (not thread-safe against them); tests and benchmarks use it. */
enum gs_err gs_fw_set_parallel(struct gs_fw *fw, size_t workers, size_t min_nodes) GS_WUR;
/* The policy in force (read-only; fixed at creation). */
const struct gs_policy *gs_fw_policy(const struct gs_fw *fw);

/* Filter: fills ret[i] for each of the n nodes. A node the ledger does
 * not know gets UNSCHEDULABLE "node unknown to gpushare". A pod gpushare
 * does not manage passes everywhere. */
enum gs_err gs_fw_filter(struct gs_fw *fw, const struct gs_pod_request *pod,
                         const char *const *nodes, size_t n, int64_t now_ns,
                         struct gs_node_result *ret) GS_WUR;
/* Prioritize: like filter, scores in ret[i].score (0 where not feasible). */
enum gs_err gs_fw_prioritize(struct gs_fw *fw, const struct gs_pod_request *pod,
                             const char *const *nodes, size_t n, int64_t now_ns,
                             struct gs_node_result *ret) GS_WUR;

/* The memo of one caller's prioritize over a node list it keeps between
 * calls (gs_fw_prioritize_memo). Owned by the caller; calls with one memo
 * must not overlap. */
struct gs_fw_memo;
/* NULL on allocation failure. */
struct gs_fw_memo *gs_fw_memo_new(void);
/* Accepts NULL. */
void gs_fw_memo_free(struct gs_fw_memo *memo);
/* The node list changed (or its array may be reused): nothing is reused. */
void gs_fw_memo_forget(struct gs_fw_memo *memo);
/* Nodes the memo's last call evaluated (the others' results were reused). */
size_t gs_fw_memo_evaluated(const struct gs_fw_memo *memo);
/* The positions whose results the memo's last call may have changed from
 * the call's before (ascending, borrowed until the next call): true with
 * them in *ret_idx and *ret_n; false when any position may have (a whole
 * evaluation, an error, a call before it with another pod or list). */
bool gs_fw_memo_changed(const struct gs_fw_memo *memo, const size_t **ret_idx, size_t *ret_n);
/* Prioritize into the memo's own results (*ret: n of them, valid until the
 * next call with memo), the same results as gs_fw_prioritize. nodes must be
 * the same array, unchanged, for as long as the memo is to be reused (else
 * gs_fw_memo_forget). When pod is signed as the memo's last pod was
 * (gs_place_signature) over the same array and the ledger can tell which
 * nodes changed since (gs_ledger_changed_since), only those are evaluated:
 * the per-node hooks of a signed pod depend on nothing but its signature,
 * the node's view and the policy (plugin.h). */
enum gs_err gs_fw_prioritize_memo(struct gs_fw *fw, struct gs_fw_memo *memo,
                                  const struct gs_pod_request *pod, const char *const *nodes,
                                  size_t n, int64_t now_ns,
                                  const struct gs_node_result **ret) GS_WUR;

/* Reserve, then PreBind (kube-scheduler's names): under the lock, reserve
 * room for pod on node (or reuse the pod's existing allocation when the UID
 * already has one on that node: idempotent, never re-picks devices), and
 * produce the annotations the Binding must carry (the plugins' pre_bind). On failure st says why and the ledger
 * is unchanged. *ret_fresh tells whether this call made the reservation (so
 * a failed apiserver bind must undo it). */
enum gs_err gs_fw_reserve(struct gs_fw *fw, const struct gs_pod_request *pod, const char *node,
                          int64_t now_ns, struct gs_annotations *ret, bool *ret_fresh,
                          struct gs_status *st) GS_WUR;
/* Permit (the scheduling framework's): may the pod, reserved on node, be
 * bound now? SUCCESS: yes; WAIT: hold it and ask again (a gang not all
 * reserved yet); anything else: reject it (unreserve). st says why. For
 * front ends that can hold a pod between reserve and bind; the extender's
 * bind cannot (docs/gangs.md). */
enum gs_err gs_fw_permit(struct gs_fw *fw, const struct gs_pod_request *pod, const char *node,
                          int64_t now_ns, struct gs_status *st);
/* Preemption on one node, a what-if under the read lock: the cheapest set
 * of pods of lower priority than pod (that no plugin protects) whose
 * eviction lets it fit (gs_preempt_pick), kube-scheduler's proposed UIDs
 * first. On SUCCESS *ret_uids (heap, gs_free; NULL otherwise) holds
 * *ret_n victims: those chosen for GPUs, then kube-scheduler's that hold no
 * GPU on node (it chose them for its own resources). UNSCHEDULABLE or
 * UNRESOLVABLE in st: no such set. GS_ENOTFOUND: node unknown. Nothing is
 * changed. */
enum gs_err gs_fw_preempt(struct gs_fw *fw, const struct gs_pod_request *pod, const char *node,
                          const char *const *proposed, size_t nproposed,
                          char (**ret_uids)[GS_UID_MAX + 1], size_t *ret_n,
                          struct gs_status *st) GS_WUR;
/* What gs_fw_preempt_limited asks of its caller: each pod's host requests
 * and the disruption budgets selecting it (fills c's cpu_milli, mem_mib and
 * budgets; false: the pod may not go), and then the budgets' allowed
 * disruptions (*ret_n of them). Called under the framework's read lock. */
struct gs_fw_preempt_info {
  bool (*describe)(void *ctx, const char *uid, struct gs_preempt_candidate *c);
  const int32_t *(*allowed)(void *ctx, uint32_t *ret_n);
  void *ctx;
  /* The node's host where the ledger has none (NULL, or false: none). */
  bool (*host)(void *ctx, const char *node, struct gs_host *ret);
};
/* gs_fw_preempt with the pods' budgets and host requests from info (NULL:
 * none): gs_preempt_pick_limited with the node's host view, and in
 * *ret_violations the victims answered (kube-scheduler's that hold no GPU
 * included) that violate a budget. */
enum gs_err gs_fw_preempt_limited(struct gs_fw *fw, const struct gs_pod_request *pod,
                                  const char *node, const char *const *proposed,
                                  size_t nproposed, const struct gs_fw_preempt_info *info,
                                  char (**ret_uids)[GS_UID_MAX + 1], size_t *ret_n,
                                  uint32_t *ret_violations, struct gs_status *st) GS_WUR;
/* pod was nominated to node by preemption (NULL: no longer): its GPUs
 * there are held against pods of lower or equal priority until it is
 * reserved, bound or gone (hold.h, docs/preemption.md). */
enum gs_err gs_fw_nominate(struct gs_fw *fw, const struct gs_pod_request *pod,
                           const char *node) GS_WUR;
/* PostBind: the apiserver accepted the Binding; the reservation is the
 * pod's allocation. */
void gs_fw_post_bind(struct gs_fw *fw, const char *uid);
/* Unreserve: undo a reservation the cluster never confirmed. */
void gs_fw_unreserve(struct gs_fw *fw, const struct gs_pod_request *pod, const char *node);

/* Cluster events. */
enum gs_err gs_fw_node_upsert(struct gs_fw *fw, const struct gs_node_spec *spec) GS_WUR;
enum gs_err gs_fw_node_remove(struct gs_fw *fw, const char *name) GS_WUR;
enum gs_err gs_fw_node_set_unhealthy(struct gs_fw *fw, const char *name, uint64_t mask) GS_WUR;
/* gs_ledger_node_set_host of n nodes under one lock (unknown names are
 * passed over). */
void gs_fw_nodes_set_host(struct gs_fw *fw, const char *const *names,
                          const struct gs_host *hosts, size_t n);
/* A pod seen with an allocation (from its annotations): recorded as BOUND
 * when bound, kept if already known. GS_ENOTFOUND: unknown node. */
enum gs_err gs_fw_pod_restore(struct gs_fw *fw, const struct gs_alloc *alloc) GS_WUR;
/* A pod exists, pending (alloc NULL) or bound with alloc: the plugins'
 * pod_seen hooks (gangs count their members). */
void gs_fw_pod_seen(struct gs_fw *fw, const struct gs_pod_request *pod,
                    const struct gs_alloc *alloc);
/* A pod left (deleted, Succeeded, Failed): frees its allocation. */
void gs_fw_pod_gone(struct gs_fw *fw, const char *uid);
/* Releases ASSUMED allocations older than max_age_ns whose UID is not
 * confirmed; returns how many. */
size_t gs_fw_expire_assumed(struct gs_fw *fw, int64_t now_ns, int64_t max_age_ns);
/* Lets time-driven plugins (gang timeouts) act; what they report goes to
 * notify (NULL: dropped). notify's callback runs under the write lock: it
 * must not call back into fw. */
void gs_fw_tick(struct gs_fw *fw, int64_t now_ns, const struct gs_notify *notify);

/* Runs fn with the lock held shared; the ledger must not escape fn. */
void gs_fw_read(struct gs_fw *fw, void (*fn)(const struct gs_ledger *ledger, void *arg),
                void *arg);
/* Every plugin's plans (describe hooks). Only inside gs_fw_read's fn (the
 * lock is held shared there). */
void gs_fw_describe(struct gs_fw *fw, void (*emit)(void *ctx, const struct gs_plan_view *plan),
                    void *ctx);
/* The plugin state of the named plugin, or NULL: for a plugin's own unit
 * tests only (product code describes plans through gs_fw_describe). Valid
 * while nothing else runs on fw. */
void *gs_fw_plugin_state_for_test(struct gs_fw *fw, const char *name);

#endif
