/* gpushare — the scheduler service: one object that owns the framework
 * (plugins over the ledger, and its lock), the reconciliation of the
 * cluster's nodes and pods, the pods kept for later (allocation seen before
 * its node), the unhealthy GPUs, and the bind orchestration (reserve →
 * annotations → the cluster's Binding → commit or undo) as one call.
 *
 * It speaks core types only: node specs, pod requests, allocations, node
 * names, results with reasons, annotations. Front ends (the HTTP extender
 * in src/server, the scheduling-framework plugin) decode their own wire
 * formats into these and call it; it knows no HTTP, JSON or Kubernetes.
 *
 * Threads: every function is safe to call from any thread, concurrently,
 * unless it says otherwise. Filter and prioritize run in parallel with each
 * other; binds and cluster events serialise on the ledger's lock only for
 * their ledger work (a bind's cluster call runs outside it).
 *
 * Ownership: parameters are borrowed for the call; nothing is kept unless
 * said (gs_sched_pod_bound copies what it keeps).
 */
#ifndef GPUSHARE_SCHED_H
#define GPUSHARE_SCHED_H

#include <gpushare/ledger.h>
#include <gpushare/place.h>
#include <gpushare/plugin.h>
#include <gpushare/version.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gs_sched;

/* Creates a service with an empty ledger in policy->unit_mib and the
 * default plugins (gang, then gpumem). policy is copied. NULL on allocation
 * failure. Owned by the caller: gs_sched_free. */
struct gs_sched *gs_sched_new(const struct gs_policy *policy);
/* Frees everything. Accepts NULL. Not concurrently with other calls. */
void gs_sched_free(struct gs_sched *s);
/* The policy in force (fixed at creation; borrowed for the service's life). */
const struct gs_policy *gs_sched_policy(const struct gs_sched *s);

/* ---- the cluster, as the front end's watch sees it -------------------- */

/* A node was added or changed: the ledger takes its GPUs, unhealthy GPUs
 * recorded for it apply, and pods kept for it are restored. */
enum gs_err gs_sched_node_upsert(struct gs_sched *s, const struct gs_node_spec *spec) GS_WUR;
/* A node left. Its allocations stay recorded until their pods go. GS_ENOTFOUND
 * when the node was unknown. */
enum gs_err gs_sched_node_remove(struct gs_sched *s, const char *name) GS_WUR;
/* The node's unhealthy GPUs (bit i: GPU index i; 0: all healthy). Kept for a
 * node not known yet and applied when it comes. */
enum gs_err gs_sched_set_unhealthy(struct gs_sched *s, const char *node, uint64_t mask) GS_WUR;
/* The host resources of n nodes (types.h struct gs_host: allocatable and
 * requested CPU and memory), as the front end knows them at the start of a
 * cycle; only nodePolicy frag weighs them. Unknown nodes are passed over.
 * The in-process plugin feeds kube-scheduler's NodeInfo here. */
void gs_sched_nodes_set_host(struct gs_sched *s, const char *const *names,
                             const struct gs_host *hosts, size_t n);
/* A non-terminal pod seen bound with an allocation (read from its
 * annotations). GS_EOK: in the ledger (or already there). GS_EAGAIN: its
 * node is not known yet, or memory ran out: a copy is kept and restored when
 * the node comes (or by gs_sched_retry_kept). Any other error: refused
 * (e.g. more memory than the GPU has), nothing kept. */
enum gs_err gs_sched_pod_bound(struct gs_sched *s, const struct gs_alloc *alloc) GS_WUR;
/* A pod exists, as the watch sees it: pending (alloc NULL) or bound with
 * its allocation (after gs_sched_pod_bound). Front ends call it for pods of
 * distributed jobs (labels gpu-topology and gpu-topology-replica) on every
 * add or change: a job's members are counted as present from it, and a
 * running job's slots are rebuilt from it after a restart (docs/gangs.md).
 * Harmless for other pods. */
void gs_sched_pod_seen(struct gs_sched *s, const struct gs_pod_request *pod,
                       const struct gs_alloc *alloc);
/* A pod left (deleted, Succeeded or Failed): its allocation is freed and any
 * copy kept for later forgotten. */
void gs_sched_pod_gone(struct gs_sched *s, const char *uid);
/* Pods kept for later: how many, and a retry of all of them (returns how
 * many are still kept). */
size_t gs_sched_kept_count(struct gs_sched *s);
size_t gs_sched_retry_kept(struct gs_sched *s);

/* ---- DRA claims (docs/dra.md) ------------------------------------------
 * An allocated ResourceClaim's memory on GPUs of a node gpushare manages,
 * as the front end's feed resolved it (kind GS_ALLOC_CLAIM, parts in MiB or
 * GS_CLAIM_WHOLE, keyed by the claim's UID): used memory to every filter,
 * prioritize, bind, Reserve and preemption, never a victim. */

/* Records or replaces the claim's charge in one step. GS_EAGAIN: the node is
 * not known yet (or memory ran out): a copy is kept and charged when the
 * node comes, as for pods (the earlier charge, if any, is freed). GS_EEXISTS
 * when the UID is a pod's; GS_EINVAL for a shape that is not a claim's. */
enum gs_err gs_sched_claim_set(struct gs_sched *s, const struct gs_alloc *claim) GS_WUR;
/* The claim was deallocated or deleted: its charge (or kept copy) goes.
 * A pod's allocation under the same UID is never touched. */
void gs_sched_claim_gone(struct gs_sched *s, const char *uid);
/* gpushare placing a claim (issue 33 item 2; gpushare/claim.h): the node
 * and GPUs for req among the n named nodes (gs_claim_place), charged at
 * once as ASSUMED (assume time now_ns) so that no other decision takes the
 * memory until the front end has written the allocation (the feed's charge
 * then replaces it) or drops it (gs_sched_claim_gone; an ASSUMED charge also
 * expires with gs_sched_expire_assumed). A UID already charged answers its
 * charge. GS_EOK fills *ret; GS_ENOFIT / GS_EUNRESOLVABLE with st's reason;
 * GS_EEXISTS when the UID is a pod's. pod (may be NULL) is the claim's
 * consumer (uid, priority): with one node, the GPUs held there for pods
 * nominated by preemption are not its (gs_sched_nominate, with the hold's
 * reason when the node holds none for it), and its own hold ends once the
 * claim is charged. */
struct gs_claim_request;
struct gs_claim_choice;
enum gs_err gs_sched_claim_reserve(struct gs_sched *s, const struct gs_pod_request *pod,
                                   const char *const *nodes, size_t n,
                                   const struct gs_claim_request *req, const char *ns,
                                   const char *name, const char *uid, int64_t now_ns,
                                   struct gs_claim_choice *ret, struct gs_status *st) GS_WUR;

/* pod (identity, priority, host requests kept) shaped as the gpu-mem pod a
 * memory claim of req is placed as, in the service's unit
 * (gs_claim_shape_pod), and no gang member (a gang of claim pods is
 * gs_sched_claim_gang_permit's): a pod using that claim is scored so.
 * False, pod unchanged, for whole devices. */
bool gs_sched_claim_shape(const struct gs_sched *s, const struct gs_claim_request *req,
                          struct gs_pod_request *pod);

/* The per-node verdicts for a claim's request (gpushare-scheduler's Filter
 * and Score for a pod whose claim gpushare places; gs_claim_fit): ret[i]
 * for nodes[i] — code GS_EOK / GS_ENOFIT / GS_EUNRESOLVABLE with its
 * reason, score100 0..100 (score 0..10). Charges nothing. GS_EOK when some
 * node fits; GS_ENOFIT when none; GS_EINVAL for bad arguments. pod (may
 * be NULL) is the claim's consumer: GPUs held for nominated pods are not
 * its, as gs_sched_claim_reserve says. */
struct gs_node_result;
enum gs_err gs_sched_claim_filter(struct gs_sched *s, const struct gs_pod_request *pod,
                                  const char *const *nodes, size_t n,
                                  const struct gs_claim_request *req,
                                  struct gs_node_result *ret) GS_WUR;

/* Gangs of claim pods (docs/dra.md): a pod whose GPUs are claims gpushare
 * placed, member uid of job ns/job (label gpu-topology) of replicas members
 * (gpu-topology-replica), reserved and asking in Permit. GS_EWAIT (st says
 * how many of how many) until replicas members of the job have asked; then
 * GS_EOK for each of them and for every later ask (the job is released:
 * none waits again for a member that left). GS_EINVAL for a job without a
 * name or replicas out of 1..10000; GS_ENOMEM. */
enum gs_err gs_sched_claim_gang_permit(struct gs_sched *s, const char *ns, const char *job,
                                       uint32_t replicas, const char *uid,
                                       struct gs_status *st) GS_WUR;
/* Member uid is no longer reserved (Unreserve, a Permit timeout) or its pod
 * is gone (gs_sched_pod_gone calls it): it no longer counts. */
void gs_sched_claim_gang_leave(struct gs_sched *s, const char *uid);
/* Preemption for a claim pod (docs/dra.md "Preempting for claim pods"):
 * pod (uid, priority, host requests) waits for its nreqs claims of
 * gpushare's DeviceClass asking reqs[0..nreqs) (memory per GPU, or whole
 * devices: mib_per_gpu 0; at most GS_CLAIM_PREEMPT_MAX) that fit on none
 * of the n nodes. Victims of lower priority than pod on one node whose
 * eviction frees room for every claim (each placed in turn as its victims
 * leave; a victim counted once): gpu-mem pods as gs_sched_preempt takes them,
 * and the claims the caller names in consumers — a claim gpushare placed
 * whose status.reservedFor is its one consumer pod, which stands in as the
 * victim at that pod's priority (claims named nowhere stay never-victims).
 * The cheapest node as gs_sched_preempt_cheapest ranks them; a node where
 * the claims fit already (freed since the caller's Filter) is the cheapest,
 * with no victims. GS_EOK:
 * *ret_node (index into nodes), *ret_victims (pods; owned by the caller:
 * gs_free), *ret_n, *ret_violations. GS_ENOTFOUND: no node has such a set
 * (st: the first node's reason); GS_ENOMEM. Nothing in the ledger changes. */
struct gs_claim_consumer {
  const char *claim_uid;       /* the claim, as charged in the ledger */
  const char *ns, *name, *uid; /* its one consumer pod */
  int32_t priority;            /* the pod's spec.priority */
};
struct gs_victim;
#define GS_CLAIM_PREEMPT_MAX 8 /* a preemptor's unallocated claims */
enum gs_err gs_sched_claim_preempt(struct gs_sched *s, const struct gs_claim_request *reqs,
                                   size_t nreqs, const struct gs_pod_request *pod,
                                   const char *const *nodes,
                                   size_t n, const struct gs_claim_consumer *consumers,
                                   size_t nconsumers, size_t *ret_node,
                                   struct gs_victim **ret_victims, size_t *ret_n,
                                   uint32_t *ret_violations, struct gs_status *st) GS_WUR;

/* ---- time --------------------------------------------------------------- */

/* Where the service's notices go (a gang timed out: struct gs_notice,
 * plugin.h): the front end posts Events and logs. Set once, before ticks
 * start; notify is copied (NULL: notices dropped). The callback runs on the
 * ticking thread with the ledger locked: it must be quick and must not call
 * the service. */
void gs_sched_set_notify(struct gs_sched *s, const struct gs_notify *notify);
/* Lets time-driven plugins act (gang timeouts). now_ns: unix ns. */
void gs_sched_tick(struct gs_sched *s, int64_t now_ns);
/* Gangs timed out since the service was made (each gang once per timeout). */
uint64_t gs_sched_gang_timeouts(struct gs_sched *s);
/* Releases reservations whose bind was never confirmed within max_age_ns;
 * returns how many. */
size_t gs_sched_expire_assumed(struct gs_sched *s, int64_t now_ns, int64_t max_age_ns);

/* ---- the verbs ------------------------------------------------------------ */

/* What the service makes of pod before any node (kube-scheduler's
 * PreFilter): GS_ESKIP when it has nothing to say about it (it asks no GPU
 * resource gpushare manages and is no member of a distributed job; when
 * scoring, nor does nodePolicy frag score its host request: the verdicts
 * would all pass), else GS_EOK, with *ret_score_only true when the
 * verdicts and scores hold but nothing is to be reserved (nodePolicy frag
 * scoring a pod that asks no GPU). An invalid pod is GS_EOK: filter
 * refuses it on every node, saying why. *ret_score_only is always
 * written. */
enum gs_err gs_sched_pre_filter(struct gs_sched *s, const struct gs_pod_request *pod,
                                bool scoring, bool *ret_score_only) GS_WUR;
/* What makes two pods the same to the service, under its policy, for
 * kube-scheduler's pod signatures (gs_place_signature, place.h): GS_EOK
 * with the text in ret_sig; GS_ESKIP, ret_sig ""; else GS_EUNRESOLVABLE
 * with why it cannot be signed in ret_sig. */
enum gs_err gs_sched_signature(struct gs_sched *s, const struct gs_pod_request *pod,
                               char ret_sig[GS_REASON_MAX]);

/* Filter: ret[i] for each of the n nodes (ret has room for n). A node the
 * ledger does not know: UNSCHEDULABLE "node unknown to gpushare". A pod that
 * asks for no GPU resource gpushare manages passes everywhere. */
enum gs_err gs_sched_filter(struct gs_sched *s, const struct gs_pod_request *pod,
                            const char *const *nodes, size_t n, int64_t now_ns,
                            struct gs_node_result *ret) GS_WUR;
/* Prioritize: like filter, with ret[i].score in 0..10 (0 where infeasible).
 * Under nodePolicy frag with fragScoreNormalize, score is score100 spread
 * over the nodes that fit (gs_place_scores_normalize, place.h), here and in
 * gs_sched_prioritize_memo (whose changed positions then speak of
 * score100, code and reason: any score may move). */
enum gs_err gs_sched_prioritize(struct gs_sched *s, const struct gs_pod_request *pod,
                                const char *const *nodes, size_t n, int64_t now_ns,
                                struct gs_node_result *ret) GS_WUR;

/* Prioritize over a node list the caller keeps (the same array, unchanged)
 * from call to call, remembering the results in memo (a caller's own:
 * gs_sched_memo_new; calls with one memo must not overlap): the same
 * results as gs_sched_prioritize, in *ret (n of them, valid until the next
 * call with memo). A pod signed as the last one (gs_place_signature) is
 * evaluated again only on the nodes whose ledger views changed since;
 * kube-scheduler's plugin calls it for every pod (docs/plugin.md).
 * gs_sched_memo_forget when the list changes or its array may be reused. */
struct gs_sched_memo;
struct gs_sched_memo *gs_sched_memo_new(void);
void gs_sched_memo_free(struct gs_sched_memo *memo); /* accepts NULL */
void gs_sched_memo_forget(struct gs_sched_memo *memo);
/* Nodes the memo's last call evaluated (tests, benchmarks). */
size_t gs_sched_memo_evaluated(const struct gs_sched_memo *memo);
/* The positions whose results the memo's last call may have changed from
 * the call's before (ascending, borrowed until the next call), so that a
 * caller keeping its own copy of the answers updates only those: true
 * with them in *ret_idx and *ret_n; false when any may have. */
bool gs_sched_memo_changed(const struct gs_sched_memo *memo, const size_t **ret_idx,
                           size_t *ret_n);
enum gs_err gs_sched_prioritize_memo(struct gs_sched *s, struct gs_sched_memo *memo,
                                     const struct gs_pod_request *pod, const char *const *nodes,
                                     size_t n, int64_t now_ns,
                                     const struct gs_node_result **ret) GS_WUR;

/* The cluster's side of a bind: write the Binding of pod to node carrying
 * annots, in one step. GS_EOK, or an error with diag->text saying why
 * (diag arrives empty). */
struct gs_binder {
  enum gs_err (*bind)(void *ctx, const struct gs_pod_request *pod, const char *node,
                      const struct gs_annotations *annots, struct gs_diag *diag);
  void *ctx;
};

/* What a bind did. */
struct gs_sched_bind_result {
  bool bound;          /* this call wrote the Binding */
  bool already;        /* the pod was already bound there with its allocation: success, nothing written */
  bool cluster_failed; /* the ledger had room but the cluster's Binding failed (and was undone) */
  bool no_fit;         /* refused by the ledger or the plugins: no room, pod invalid for gpushare */
  struct gs_diag diag; /* why, when the call failed (text "" on success) */
  struct gs_annotations annots; /* what the Binding carried (bound only); gs_annotations_clear */
};

/* Binds pod to node as one call: reserves its GPUs (or finds the
 * reservation it already has there: never re-picks devices), produces the
 * annotations, has binder write the Binding, then commits; on any failure
 * the reservation is undone and the ledger is as before. bound_node: the
 * node the pod is already bound to (NULL or "" when pending) — bound there
 * with an allocation is success (idempotent); bound elsewhere or without an
 * allocation is an error. GS_EOK on success; else the error, with
 * ret->diag.text saying why and ret->no_fit / ret->cluster_failed saying
 * whose refusal it was. ret is written in every case; clear ret->annots
 * after use. */
enum gs_err gs_sched_bind(struct gs_sched *s, const struct gs_pod_request *pod,
                          const char *bound_node, const char *node, int64_t now_ns,
                          const struct gs_binder *binder, struct gs_sched_bind_result *ret) GS_WUR;

/* The bind's steps apart, for a front end whose scheduler calls them at
 * different times: the scheduling framework's Reserve, Unreserve, Permit
 * and PostBind, one name per step from kube-scheduler's extension point
 * through the shim (gs_shim_reserve, ...) to these, whose bodies are the
 * framework's (src/framework/framework.c). gs_sched_reserve reserves pod's GPUs on node (or finds the
 * reservation it already has there) and writes the annotations its Binding
 * must carry to ret_annots (the plugins' pre_bind; clear them after use);
 * on failure st says why and nothing changed. gs_sched_unreserve undoes a
 * reservation the cluster never confirmed; gs_sched_post_bind records the
 * Binding as done (the plugin's Bind wrote it). */
enum gs_err gs_sched_reserve(struct gs_sched *s, const struct gs_pod_request *pod,
                             const char *node, int64_t now_ns, struct gs_annotations *ret_annots,
                             struct gs_status *st) GS_WUR;
void gs_sched_unreserve(struct gs_sched *s, const struct gs_pod_request *pod, const char *node);
void gs_sched_post_bind(struct gs_sched *s, const char *uid);

/* Permit, for a front end that can hold a pod between its reservation and
 * its Binding (the scheduling framework's Permit; the extender cannot and
 * never calls it, docs/gangs.md). pod must hold a reservation on node.
 * GS_EOK: bind it now. GS_EWAIT: hold it and ask again when
 * another pod was reserved (a gang member waits for its job: st says how
 * many are reserved). Anything else: reject it. */
enum gs_err gs_sched_permit(struct gs_sched *s, const struct gs_pod_request *pod,
                             const char *node, int64_t now_ns, struct gs_status *st);

/* ---- preemption -------------------------------------------------------------- */

/* A node offered for preemption, with the victims kube-scheduler proposed
 * there (UIDs; borrowed). */
struct gs_preempt_offer {
  const char *node;
  const char *const *victims;
  size_t nvictims;
};
/* The service's answer for one offer. */
struct gs_preempt_answer {
  bool keep;                    /* the node stays a candidate, with victims */
  char reason[GS_REASON_MAX];   /* why it was dropped */
  size_t nvictims;
  char (*victims)[GS_UID_MAX + 1]; /* heap; gs_sched_preempt_free */
  uint32_t pdb_violations;      /* victims that violate a disruption budget (appended) */
};

/* GPU-aware preemption, a what-if (docs/preemption.md): for each offered
 * node, the cheapest set of pods of lower priority than pod whose eviction
 * lets it fit on one GPU, on M GPUs, or on its whole GPUs; kube-scheduler's
 * own victims first, the node's other lower-priority pods only when those
 * cannot make room; kube-scheduler's victims that hold no GPU on the node
 * are kept. A node where no such set exists, or where nothing needs to go,
 * is dropped (keep false, reason). Gang members are never victims. Sets
 * that violate no PodDisruptionBudget come first (gs_sched_pdb_upsert);
 * pdb_violations counts the answer's victims that violate one. Nothing
 * in the ledger changes. ret has room for n answers; free them with
 * gs_sched_preempt_free. GS_EOK, or GS_ENOMEM (every answer dropped). */
enum gs_err gs_sched_preempt(struct gs_sched *s, const struct gs_pod_request *pod,
                             const struct gs_preempt_offer *offers, size_t n,
                             struct gs_preempt_answer *ret) GS_WUR;
void gs_sched_preempt_free(struct gs_preempt_answer *answers, size_t n);

/* What preemption weighs besides GPUs (docs/preemption.md), fed by the
 * front ends' watches. A PodDisruptionBudget (policy/v1): its selector in
 * the text form of gs_selector_matches (preempt.h; src/api writes it from
 * spec.selector; NULL selects nothing) and status.disruptionsAllowed.
 * Victims are chosen so that no budget goes below zero where any set
 * allows it, and each answer counts the victims that violate one. */
struct gs_pdb {
  const char *ns, *name, *selector;
  int32_t allowed;
};
enum gs_err gs_sched_pdb_upsert(struct gs_sched *s, const struct gs_pdb *pdb) GS_WUR;
void gs_sched_pdb_remove(struct gs_sched *s, const char *ns, const char *name);
/* A pod's labels ("key=value" lines) and host requests (CPU millicores,
 * memory MiB: effective requests), kept until gs_sched_pod_gone: budgets
 * select victims by them, and preemption's host check counts what a
 * victim's eviction frees: where the node's host view is known
 * (gs_sched_nodes_set_host: the plugin's NodeInfo, the extender's own
 * watch), a set that frees GPUs but leaves the preemptor's CPU or memory
 * (pod->cpu_milli, mem_mib) short is never answered (more victims are
 * taken if they free it, else the node is dropped). */
struct gs_pod_meta {
  const char *uid, *ns, *labels;
  uint64_t cpu_milli, mem_mib;
};
enum gs_err gs_sched_pod_meta(struct gs_sched *s, const struct gs_pod_meta *m) GS_WUR;


/* pod is nominated to node by preemption (kube-scheduler's
 * status.nominatedNodeName; NULL or "": not, or no longer): as
 * kube-scheduler holds a nominated pod's resources, the GPUs it will take
 * there are held against pods of equal or lower priority until it is
 * reserved, bound or gone — while its victims terminate no other pod takes
 * them, and a node where it does not fit yet takes none of those pods.
 * A pod gpushare does not place is not held. GS_ETOOBIG past 256 at once. */
enum gs_err gs_sched_nominate(struct gs_sched *s, const struct gs_pod_request *pod,
                              const char *node) GS_WUR;
/* gs_sched_nominate for a pod whose GPUs are its claims (docs/dra.md
 * "Preempting for claim pods"): one claim of memory (count GPUs × MiB) is
 * held as the gpu-mem pod of its shape (gs_claim_shape_pod) — the same
 * rules and text as a gpu-mem pod's hold; one claim of whole devices as
 * the pod that takes them whole on node (a topology node: the whole-GPU
 * pod of its count; another: the gpu-mem pod of count GPUs × the node's
 * smallest healthy GPU); the hold ends as that one's does, and when the
 * claim is reserved for pod (gs_sched_claim_reserve). Several claims are
 * not held (GS_ESKIP; an earlier hold of pod ends); node NULL or "": the
 * hold ends. GS_EINVAL for bad arguments. */
struct gs_claim_request;
enum gs_err gs_sched_claim_nominate(struct gs_sched *s, const struct gs_claim_request *reqs,
                                    size_t nreqs, const struct gs_pod_request *pod,
                                    const char *node) GS_WUR;

/* A pod to evict, as the ledger records it. */
struct gs_victim {
  char ns[GS_NS_MAX + 1], name[GS_NAME_MAX + 1], uid[GS_UID_MAX + 1];
};
/* For a front end that picks the node itself (the scheduling framework's
 * PostFilter; the extender hands every kept node to kube-scheduler): of
 * the n answers gs_sched_preempt gave, the cheapest kept node — the fewest
 * victims violating a disruption budget, then the lowest highest victim
 * priority, then the fewest victims, then the least GPU
 * memory, then the order given — in *ret_best, and its victims still in
 * the ledger in *ret_victims (*ret_n of them; owned by the caller:
 * gs_free). GS_ENOTFOUND when no node is kept (or none of its victims is
 * left), GS_ENOMEM; nothing is written then. */
enum gs_err gs_sched_preempt_cheapest(struct gs_sched *s, const struct gs_preempt_answer *answers,
                                      size_t n, size_t *ret_best, struct gs_victim **ret_victims,
                                      size_t *ret_n) GS_WUR;

/* GPU-aware preemption for a whole gang (docs/gangs.md "Preemption"): pod
 * is a member of a job (labels gpu-topology and gpu-topology-replica)
 * refused because its job does not fit. Victims of lower priority than pod
 * (never gang members) on the n nodes, freeing a slot for every member the
 * job still needs — k whole GPUs of one topology node, or the member's
 * memory on the GPUs of one memory node — or none at all. GS_EOK: *ret_victims (owned by the caller: gs_free) holds
 * the *ret_n victims, *ret_node the index in nodes of the first slot's
 * node (to nominate), and every slot is held for the job's members until
 * one of them is reserved (docs/preemption.md "A label gang's slots are
 * held"). GS_ENOTFOUND: no set frees every slot, or none is needed; st
 * says why; nothing written or held. GS_ENOMEM. Nothing in the ledger
 * changes. */
enum gs_err gs_sched_preempt_gang(struct gs_sched *s, const struct gs_pod_request *pod,
                                  const char *const *nodes, size_t n,
                                  struct gs_victim **ret_victims, size_t *ret_n, size_t *ret_node,
                                  struct gs_status *st) GS_WUR;

/* Preemptions under way (both forms; docs/preemption.md "Victims gone
 * before the watch says so": the extender's filter waits for them, the
 * plugin's PostFilter chooses no new victims meanwhile). kube-scheduler deletes the victims on the
 * node it picks and retries the preemptor as soon as its own cache drops
 * them; the front end's watch may bring the deletions a moment later, and
 * a filter answered meanwhile would refuse the node, so kube-scheduler
 * would preempt again elsewhere. gs_sched_preempt_note remembers, for the
 * preemptor pod_uid, the victims answers (gs_sched_preempt's, for offers)
 * kept on each node (at most 256 preemptors, for 2 minutes; a later note
 * replaces an earlier). gs_sched_preempt_unsettled: some of them are still
 * held on one of nodes (not gone: gs_sched_pod_gone). gs_sched_preempt_settle
 * waits up to timeout_ms for those to be gone: GS_EOK when none is left
 * (at once when none was), GS_ETIMEOUT when some stay (the record is then
 * forgotten: one wait per preemption). gs_sched_preempt_forget forgets
 * pod_uid's record (it is bound); gs_sched_pod_gone does too. Thread-safe;
 * the ledger is not locked while waiting. */
void gs_sched_preempt_note(struct gs_sched *s, const char *pod_uid,
                           const struct gs_preempt_offer *offers,
                           const struct gs_preempt_answer *answers, size_t n);
bool gs_sched_preempt_unsettled(struct gs_sched *s, const char *pod_uid,
                                const char *const *nodes, size_t n);
enum gs_err gs_sched_preempt_settle(struct gs_sched *s, const char *pod_uid,
                                    const char *const *nodes, size_t n,
                                    int64_t timeout_ms) GS_WUR;
void gs_sched_preempt_forget(struct gs_sched *s, const char *pod_uid);

/* GPU-aware preemption for a pod group (kube-scheduler's Workload API,
 * docs/gangs.md "Preemption"): pod stands for the group as a job of equal
 * members (labels gpu-topology and gpu-topology-replica: the slots it
 * needs), members are the group's pods being scheduled, in the order the
 * front end lists them. Victims as gs_sched_preempt_gang; on GS_EOK each
 * slot chosen is held for a member, members[i] the i-th (docs/preemption.md
 * "Pod groups' slots are held"): its exact node and GPUs are taken, for
 * every pod of equal or lower priority but the member, until the member is
 * bound or gone, nominated elsewhere or no longer (gs_sched_nominate), or
 * 5 minutes pass; while the member is reserved its allocation stands for
 * the slot. ret_member_node (room for nmembers) gets, for each member, the
 * index in nodes of its slot's node (to nominate it there), or SIZE_MAX for
 * a member past the slots (any hold it had ends); *ret_victims (owned by
 * the caller: gs_free) the *ret_n victims; st's reason "" — or, when a
 * slot could not be held (past 256 holds at once, a member gpushare does
 * not place), "not every slot is held: ..." with the rest answered and
 * held all the same. GS_ENOTFOUND, GS_ENOMEM: as gs_sched_preempt_gang,
 * nothing held. Nothing else in the ledger changes. */
enum gs_err gs_sched_preempt_group(struct gs_sched *s, const struct gs_pod_request *pod,
                                   const struct gs_pod_request *members, size_t nmembers,
                                   const char *const *nodes, size_t n, int64_t now_ns,
                                   struct gs_victim **ret_victims, size_t *ret_n,
                                   size_t *ret_member_node, struct gs_status *st) GS_WUR;

/* ---- views ------------------------------------------------------------------ */

/* Runs fn with the ledger read-locked; nothing read may escape fn. plan
 * (may be NULL) gets each plan the plugins hold (gang slots not all bound:
 * struct gs_plan_view, plugin.h) inside the same lock, before fn. */
void gs_sched_read(struct gs_sched *s, void (*fn)(const struct gs_ledger *ledger, void *arg),
                   void (*plan)(void *arg, const struct gs_plan_view *p), void *arg);
/* Plans holding slots not all bound yet (read-locked). */
size_t gs_sched_plans_waiting(struct gs_sched *s);

#endif
