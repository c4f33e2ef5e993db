/* gpushare — the framework: runs the registered plugins at each extension
 * point over the ledger and owns the one lock around it.
 *
 * The framework and the service (include/gpushare/sched.h) are one object,
 * struct gs_sched, whose state two files keep: framework.c the ledger, its
 * lock and the plugins, and implements the service's steps that are the
 * plugins' extension points (gs_sched_filter, _prioritize,
 * _prioritize_memo, _unreserve, _permit, _post_bind, node and pod events,
 * tick; memo.c the memo); src/sched/sched.c what the service keeps beside
 * them (pods whose node has not come, unhealthy masks, the front end's
 * notify) and the steps made of several framework calls (bind, preemption
 * over offers, node upsert). So each step has one name and one body, from
 * the front end to the plugins (docs/architecture.md). The gs_fw_*
 * functions below are the framework's parts the service composes.
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
#include <gpushare/sched.h>

#include <pthread.h>
#include <stdatomic.h>
#include <gpushare/preempt.h>

#define GS_FW_MAX_PLUGINS 16

struct gs_pool;
struct gs_strmap;

struct gs_sched {
  /* framework.c: the ledger, its lock, the plugins */
  pthread_rwlock_t lock;
  struct gs_policy policy;
  struct gs_ledger *ledger;
  size_t nplugins;
  const struct gs_plugin_ops *plugins[GS_FW_MAX_PLUGINS];
  void *state[GS_FW_MAX_PLUGINS];
  struct gs_pool *pool; /* its workers start at the first verb over parallel_min nodes */
  size_t parallel_min;
  struct gs_notify notify; /* the front end's (gs_sched_set_notify); set before ticks start */
  _Atomic uint64_t gang_timeouts;
  struct gs__holds *holds; /* pods nominated by preemption (hold.h) */
  /* src/sched/sched.c: what arrives before it can enter the ledger */
  pthread_mutex_t mu;          /* kept, by_node, unhealthy; lock order: mu, then lock */
  struct gs_strmap *kept;      /* uid → struct kept */
  struct gs_strmap *by_node;   /* node → struct node_kept (the same records, by node) */
  struct gs_strmap *unhealthy; /* node → struct unhealthy */
  struct gs__budgets *budgets; /* PDBs, pods' labels and host requests (budget.h) */
  struct gs_strmap *claim_gangs; /* uid → struct claim_member: gangs of claim pods (claim_gang.c) */
  struct gs__settle *settle;     /* preemptions under way (src/sched/settle.c) */
};

/* A service running plugins in the given order (array borrowed; it must
 * outlive the service) over an empty ledger in policy->unit_mib: what
 * gs_sched_new does with the built-in plugins (src/sched/sched.c), for the
 * framework's tests and benchmarks. NULL on allocation failure, a plugin's
 * create failing, or a plugin built against another GS_PLUGIN_API_VERSION
 * (diag, may be NULL, says which). Free with gs_sched_free. */
struct gs_sched *gs__sched_new_with(const struct gs_policy *policy,
                                    const struct gs_plugin_ops *const *plugins, size_t nplugins,
                                    struct gs_diag *diag);
/* The framework's half of gs__sched_new_with and gs_sched_free: fills (or
 * frees, accepting a half-filled s) the fields framework.c keeps. */
enum gs_err gs__fw_init(struct gs_sched *s, const struct gs_policy *policy,
                        const struct gs_plugin_ops *const *plugins, size_t nplugins,
                        struct gs_diag *diag) GS_WUR;
void gs__fw_fini(struct gs_sched *s);
/* Filter and prioritize over at least min_nodes nodes run on the calling
 * thread and up to workers threads of the framework's pool (default: one
 * per CPU beside the caller's, at most 7, from 1,024 nodes). Call before
 * any verb (not thread-safe against them); tests and benchmarks use it. */
enum gs_err gs_fw_set_parallel(struct gs_sched *s, size_t workers, size_t min_nodes) GS_WUR;

/* Implemented here, declared in sched.h: gs_sched_policy, gs_sched_filter,
 * gs_sched_prioritize, gs_sched_prioritize_memo (and memo.c's
 * gs_sched_memo_*), gs_sched_unreserve, gs_sched_post_bind,
 * gs_sched_permit, gs_sched_node_remove, gs_sched_nodes_set_host,
 * gs_sched_pod_seen, gs_sched_expire_assumed, gs_sched_set_notify,
 * gs_sched_tick, gs_sched_gang_timeouts, gs_sched_read. A filter or
 * prioritize over a node the ledger does not know answers UNSCHEDULABLE
 * "node unknown to gpushare"; a pod gpushare does not manage passes
 * everywhere. The memo's results are gs_sched_prioritize's: when pod is
 * signed as the memo's last pod was (gs_place_signature) over the same
 * array and the ledger can tell which nodes changed since
 * (gs_ledger_changed_since), only those are evaluated: the per-node hooks
 * of a signed pod depend on nothing but its signature, the node's view and
 * the policy (plugin.h). */

/* Reserve, then PreBind (kube-scheduler's names): under the lock, reserve
 * room for pod on node (or reuse the pod's existing allocation when the UID
 * already has one on that node: idempotent, never re-picks devices), and
 * produce the annotations the Binding must carry (the plugins' pre_bind).
 * On failure st says why and the ledger is unchanged. *ret_fresh (ret_fresh
 * may be NULL) tells whether this call made the reservation (so a failed
 * apiserver bind must undo it): gs_sched_bind needs it, gs_sched_reserve
 * (sched.h, this with ret_fresh NULL) does not tell it. */
enum gs_err gs_fw_reserve(struct gs_sched *s, const struct gs_pod_request *pod, const char *node,
                          int64_t now_ns, struct gs_annotations *ret, bool *ret_fresh,
                          struct gs_status *st) GS_WUR;
/* Preemption on one node, a what-if under the read lock: the cheapest set
 * of pods of lower priority than pod (that no plugin protects) whose
 * eviction lets it fit (gs_preempt_pick), kube-scheduler's proposed UIDs
 * first. On SUCCESS *ret_uids (heap, gs_free; NULL otherwise) holds
 * *ret_n victims: those chosen for GPUs, then kube-scheduler's that hold no
 * GPU on node (it chose them for its own resources). UNSCHEDULABLE or
 * UNRESOLVABLE in st: no such set. GS_ENOTFOUND: node unknown. Nothing is
 * changed. */
enum gs_err gs_fw_preempt(struct gs_sched *s, const struct gs_pod_request *pod, const char *node,
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
};
/* gs_fw_preempt with the pods' budgets and host requests from info (NULL:
 * none): gs_preempt_pick_limited with the node's host view, and in
 * *ret_violations the victims answered (kube-scheduler's that hold no GPU
 * included) that violate a budget. */
enum gs_err gs_fw_preempt_limited(struct gs_sched *s, const struct gs_pod_request *pod,
                                  const char *node, const char *const *proposed,
                                  size_t nproposed, const struct gs_fw_preempt_info *info,
                                  char (**ret_uids)[GS_UID_MAX + 1], size_t *ret_n,
                                  uint32_t *ret_violations, struct gs_status *st) GS_WUR;

/* Cluster events the service composes (gs_sched_node_upsert,
 * gs_sched_set_unhealthy, gs_sched_pod_bound, gs_sched_pod_gone). */
enum gs_err gs_fw_node_upsert(struct gs_sched *s, const struct gs_node_spec *spec) GS_WUR;
enum gs_err gs_fw_node_set_unhealthy(struct gs_sched *s, const char *name, uint64_t mask) GS_WUR;
/* A pod seen with an allocation (from its annotations): recorded as BOUND
 * when bound, kept if already known. GS_ENOTFOUND: unknown node. */
enum gs_err gs_fw_pod_restore(struct gs_sched *s, const struct gs_alloc *alloc) GS_WUR;
/* A pod left (deleted, Succeeded, Failed): frees its allocation. */
/* Runs fn with the ledger write-locked (for the framework's own files:
 * claims.c). */
void gs__fw_write(struct gs_sched *s,
                  void (*fn)(struct gs_ledger *ledger, const struct gs_policy *policy, void *arg),
                  void *arg);
/* The GPUs the plugins' Reserve gives pod on node (under the node policy's
 * own choice: frag's least-delta GPU), given back at once: the ledger as
 * before. For a caller that holds the write lock (gs__fw_write's fn): a
 * claim placed as the gpu-mem pod of its shape (claims.c), pod->uid holding
 * nothing in the ledger. GS_ENOFIT with
 * st when the pod does not fit there. */
enum gs_err gs__fw_pick_locked(struct gs_sched *s, const struct gs_pod_request *pod,
                               const struct gs_node *node, int64_t now_ns,
                               struct gs_choice *ret, struct gs_status *st);
/* A DRA claim's charge recorded or replaced in one step (gs_ledger_claim_set),
 * and freed (GS_ENOTFOUND when the UID holds no claim; a pod's allocation
 * is never touched). */
enum gs_err gs_fw_claim_set(struct gs_sched *s, const struct gs_alloc *claim) GS_WUR;
enum gs_err gs_fw_claim_gone(struct gs_sched *s, const char *uid);
/* gs_claim_place and the charge recorded (ASSUMED) under one write lock, so
 * concurrent decisions never take the same memory; a UID already charged
 * answers its charge (never re-picked). */
struct gs_claim_request;
struct gs_claim_choice;
/* gs_claim_fit on each of the n nodes under the read lock (ret[i]: code,
 * reason, score100 and score). GS_EOK when some node fits (or n is 0).
 * pod (may be NULL: none held against it) is the claim's consumer: the
 * GPUs held for pods nominated to a node (hold.h) are not its, as for a
 * gpu-mem pod; gs_fw_claim_reserve drops pod's own hold once placed. */
struct gs_node_result;
enum gs_err gs_fw_claim_filter(struct gs_sched *s, const struct gs_pod_request *pod,
                               const char *const *nodes, size_t n,
                               const struct gs_claim_request *req, struct gs_node_result *ret);
enum gs_err gs_fw_claim_reserve(struct gs_sched *s, const struct gs_pod_request *pod,
                                const char *const *nodes, size_t n,
                                const struct gs_claim_request *req, const char *ns,
                                const char *name, const char *uid, int64_t now_ns,
                                struct gs_claim_choice *ret, struct gs_status *st) GS_WUR;
void gs_fw_pod_gone(struct gs_sched *s, const char *uid);
/* Preemption for a pod's nreqs unallocated claims on node (claim_preempt.c,
 * docs/dra.md; memory or whole devices, each placed in turn on the node as
 * its victims leave it): pod is the consumer (uid, priority, host requests); the
 * candidates are gpu-mem pods of lower priority no plugin protects and the
 * claims cons names with a lower consumer priority, merged by consumer pod.
 * GS_EOK with st's code: EOK and *ret (victims as pods; ret->victims owned
 * by the caller: gs_free) or why not (UNSCHEDULABLE, UNRESOLVABLE).
 * GS_ENOTFOUND: node unknown; GS_ENOMEM. Nothing changes. */
struct gs_claim_consumer;
struct gs_victim;
struct gs_fw_claim_victims {
  struct gs_victim *victims;
  size_t n;
  uint32_t violations; /* victims violating a disruption budget */
  int32_t maxprio;     /* the highest victim priority */
  uint64_t mib;        /* the GPU memory they hold */
};
enum gs_err gs_fw_claim_preempt(struct gs_sched *s, const struct gs_claim_request *reqs,
                                size_t nreqs, const struct gs_pod_request *pod, const char *node,
                                const struct gs_claim_consumer *cons, size_t ncons,
                                const struct gs_fw_preempt_info *info,
                                struct gs_fw_claim_victims *ret, struct gs_status *st) GS_WUR;

/* Every plugin's plans (describe hooks). Only inside gs_sched_read's fn
 * (the lock is held shared there). */
void gs_fw_describe(struct gs_sched *s,
                    void (*emit)(void *ctx, const struct gs_plan_view *plan), void *ctx);
/* May the pod holding alloc be evicted (every plugin's may_evict)? Only
 * inside gs_sched_read's fn. */
bool gs_fw_may_evict(struct gs_sched *s, const struct gs_alloc *alloc);
/* May the pod holding alloc make room for pod: of lower priority, not pod
 * itself, and evictable (gs_fw_may_evict: never a claim)? Under the lock. */
bool gs_fw_evicts_for(struct gs_sched *s, const struct gs_alloc *alloc,
                      const struct gs_pod_request *pod);
/* Under the lock: node's view, the count of its allocations and room for a
 * preemption candidate and an index per allocation (gs_free both);
 * GS_ENOTFOUND or GS_ENOMEM, nothing kept. */
enum gs_err gs_fw_preempt_room(struct gs_sched *s, const char *node,
                               const struct gs_node **ret_node, size_t *ret_count,
                               struct gs_preempt_candidate **ret_cands, uint32_t **ret_idx) GS_WUR;
/* Preemption for a whole gang (docs/gangs.md "Preemption"), a what-if
 * under the read lock: pod is a member of a job (whole GPUs:
 * gs_gang_preempt_pick; memory-shared: gs_gang_preempt_pick_mem); the slots its
 * job still needs (all of them, or those its running members do not hold)
 * are freed on the given nodes by evicting pods of lower priority than pod
 * that no plugin protects (gs_gang_preempt_pick), for every slot or for
 * none. GS_EOK with st->code: SUCCESS, *ret_uids (heap, gs_free) holding
 * *ret_n victims (0: the job fits already) and every slot's node (index
 * in nodes) and GPUs: *ret_slots (heap, gs_free; NULL when none) holds
 * *ret_nslots slots, in the order chosen, on SUCCESS with victims or
 * without; UNSCHEDULABLE or UNRESOLVABLE: no victims (st says why).
 * GS_ENOMEM. Nothing is changed. */
struct gs_gang_slot;
enum gs_err gs_fw_preempt_gang_slots(struct gs_sched *s, const struct gs_pod_request *pod,
                                     const char *const *nodes, size_t n,
                                     char (**ret_uids)[GS_UID_MAX + 1], size_t *ret_n,
                                     struct gs_gang_slot **ret_slots, uint32_t *ret_nslots,
                                     struct gs_status *st) GS_WUR;
/* Under the write lock: members[i] (i < nslots) holds slots[i] on
 * nodes[slots[i].node] from now_ns (hold.h gs__holds_set_slot); members
 * past nslots lose any slot they held. GS_EOK, or the first member's
 * error (GS_ETOOBIG past 256 holds; the others are held). */
enum gs_err gs_fw_hold_slots(struct gs_sched *s, const struct gs_pod_request *members,
                             size_t nmembers, const char *const *nodes,
                             const struct gs_gang_slot *slots, size_t nslots,
                             int64_t now_ns) GS_WUR;
/* Under the write lock: the slots of pod's job (a label gang, gang
 * preemption's choice) held for any member of the job
 * (gs__holds_set_job_slot, keys "<pod uid>#<i>"), an earlier preemption's
 * ended first. GS_EOK, or the first error (the others are held). */
enum gs_err gs_fw_hold_job_slots(struct gs_sched *s, const struct gs_pod_request *pod,
                                 const char *const *nodes, const struct gs_gang_slot *slots,
                                 size_t nslots) GS_WUR;
/* The plugin state of the named plugin, or NULL: for a plugin's own unit
 * tests only (product code describes plans through gs_fw_describe). Valid
 * while nothing else runs on s. */
void *gs_fw_plugin_state_for_test(struct gs_sched *s, const char *name);

#endif
