/* gpushare — placing a DRA claim (docs/dra.md, issue 33 item 2): the core's
 * decision of node and GPUs for a ResourceClaim asking GPU memory of
 * gpushare's DeviceClass, over the one ledger, with the node policy pods
 * get. Pure: reads the ledger, never changes it; the caller records the
 * choice with gs_ledger_claim_set (or gs_sched_claim_set).
 *
 * gpushare-scheduler's plugin asks gs_sched_claim_filter (per node, this
 * file's gs_claim_fit) and gs_sched_claim_reserve (gs_claim_place on the
 * node kube-scheduler chose), then writes the claim's status.allocation. */
#ifndef GPUSHARE_CLAIM_H
#define GPUSHARE_CLAIM_H

#include <gpushare/ledger.h>
#include <gpushare/place.h>

/* A claim's request: count GPUs of one node with mib_per_gpu MiB each (a
 * request of capacity.requests.memory M with count K: M on each, DRA's
 * meaning of a capacity request), or count whole devices (mib_per_gpu 0). */
struct gs_claim_request {
  uint64_t mib_per_gpu;
  uint32_t count;
};

/* The decision. */
struct gs_claim_choice {
  char node[GS_NAME_MAX + 1];
  struct gs_choice choice; /* GPUs ascending; mib_per_gpu 0 for whole devices */
};

/* Picks the node and GPUs for req among the n named nodes (unknown names
 * are passed over): memory claims on share, cgpu and mps nodes as a
 * gpu-mem pod of count GPUs × mib_per_gpu (rounded up to the policy's unit
 * for the check) would be placed — the GPU by the node's placement
 * (binpack: the fullest GPU that fits), the node by the policy's nodePolicy
 * score, ties to the lower name; whole devices on GPUs nothing touches:
 * on a topology node as the whole-GPU pod of count GPUs would be (its
 * NVLink set, verdict and score: gs_place_pick), on the other gpushare
 * nodes by the number of such GPUs, the fewest that still has count
 * (binpack) or the most (spread), the set by gs_place_choose_default (the
 * NVLink choice when the node has a topology). GS_EOK fills *ret; GS_ENOFIT with
 * st's reason when no node fits; GS_EUNRESOLVABLE for a request no node
 * could ever hold (count 0 or above GS_MAX_GPUS, a memory past the part
 * cap). */
enum gs_err gs_claim_place(const struct gs_ledger *ledger, const char *const *nodes, size_t n,
                           const struct gs_policy *policy, const struct gs_claim_request *req,
                           struct gs_claim_choice *ret, struct gs_status *st) GS_WUR;

/* One node's verdict for req, as gs_claim_place weighs it: GS_EOK with
 * *score in 0..GS_SCORE_MAX (the framework's scale, higher is better under
 * the policy's nodePolicy); GS_ENOFIT with st's reason (the node unknown,
 * no room); GS_EUNRESOLVABLE for a request no node could hold. */
enum gs_err gs_claim_fit(const struct gs_ledger *ledger, const char *node,
                         const struct gs_policy *policy, const struct gs_claim_request *req,
                         int64_t *score, struct gs_status *st) GS_WUR;

/* gs_claim_fit on a node as given (NULL: unknown) — a view of a ledger's
 * node, e.g. with GPUs held for pods nominated there (docs/preemption.md) —
 * and, when ret is not NULL, the choice gs_claim_place would make on it
 * (written on GS_EOK only). */
enum gs_err gs_claim_fit_node(const struct gs_node *node, const struct gs_policy *policy,
                              const struct gs_claim_request *req, struct gs_claim_choice *ret,
                              int64_t *score, struct gs_status *st) GS_WUR;

/* Shapes pod — its identity, priority and host requests kept — as the
 * gpu-mem pod a memory claim of req is placed as (gs_claim_place): count
 * GPUs of one node × mib_per_gpu rounded up to unit_mib units, on its first
 * container, nothing else asked; so the pod that uses the claim is scored
 * as a gpu-mem pod of that shape (the node policy, frag with the host
 * view). False, pod unchanged, for whole devices (no gpu-mem pod means
 * them) or a count outside 1..GS_MAX_GPUS. */
bool gs_claim_shape_pod(const struct gs_claim_request *req, uint32_t unit_mib,
                        struct gs_pod_request *pod);
/* Shapes pod, kept as gs_claim_shape_pod keeps it, as the whole-GPU pod
 * (aliyun.com/gpu: count) a claim of count whole devices is weighed as on
 * a topology node. False, pod unchanged, for a count outside
 * 1..GS_MAX_GPUS. */
bool gs_claim_shape_whole_pod(const struct gs_claim_request *req, struct gs_pod_request *pod);

/* The charge of a choice for claim uid (ns/name): parts written into
 * parts[0..choice.ngpus), *ret_alloc borrows them and the strings. */
void gs_claim_charge(const struct gs_claim_choice *c, const char *ns, const char *name,
                     const char *uid, uint64_t mib_per_gpu, struct gs_alloc_part *parts,
                     struct gs_alloc *ret_alloc);

#endif
