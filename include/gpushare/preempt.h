/* gpushare — GPU-aware preemption: which pods of a node to evict so that a
 * pod fits on one GPU, on M GPUs, or on k whole GPUs (docs/preemption.md).
 *
 * A what-if on a read-only node view: nothing is changed. The caller says
 * which pods may go (lower priority than the preemptor, not protected) and
 * which of them kube-scheduler proposed; the choice prefers a set made of
 * proposed pods only, and among the sets that make the pod fit takes the
 * cheapest: the lowest highest priority, then the fewest pods, then the
 * least GPU memory freed.
 */
#ifndef GPUSHARE_PREEMPT_H
#define GPUSHARE_PREEMPT_H

#include <gpushare/ledger.h>
#include <gpushare/place.h>
#include <gpushare/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A pod of the node that may be evicted. */
struct gs_preempt_candidate {
  const struct gs_alloc *alloc; /* its allocation on the node (borrowed) */
  bool proposed;                /* kube-scheduler named it */
  /* Appended (zero: nothing known), read by gs_preempt_pick_limited only. */
  uint64_t cpu_milli, mem_mib; /* its host requests (what its eviction frees) */
  uint64_t budgets;            /* bit b: disruption budget b of the limits selects it */
};

/* Picks the victims on node for pod (prepared with gs_place_prepare).
 * cgpu_max_pods applies on cgpu nodes (0: no cap). On GS_EOK
 * ret_idx[0..*ret_n) are indices into cands (ret_idx has room for n); an
 * empty set means the pod fits already. Otherwise UNSCHEDULABLE (no set of
 * these pods frees room: st says why) or UNRESOLVABLE (the node cannot
 * serve the pod at all); nothing is written to ret_idx. */
enum gs_err gs_preempt_pick(const struct gs_node *node, const struct gs_place_pod *pod,
                             uint32_t cgpu_max_pods, const struct gs_preempt_candidate *cands,
                             size_t n, uint32_t *ret_idx, size_t *ret_n,
                             struct gs_status *st);

/* ---- budgets and the host (docs/preemption.md) ----------------------------- */

#define GS_PREEMPT_BUDGETS_MAX 64

/* What else bounds a choice. Budgets are PodDisruptionBudgets: allowed[b]
 * is budget b's disruptionsAllowed. host: the preemptor's CPU and memory
 * (pod->req->cpu_milli, mem_mib) must fit in the node's host view
 * (node->host; not checked while its cpu_milli is 0, unknown) once the
 * victims' requests and freed_* (freed by victims that are not candidates:
 * kube-scheduler's own that hold no GPU) are returned. */
struct gs_preempt_limits {
  const int32_t *allowed;
  uint32_t nbudgets; /* at most GS_PREEMPT_BUDGETS_MAX */
  bool host;
  uint64_t freed_cpu_milli, freed_mem_mib;
};

/* gs_preempt_pick under lim (NULL: as gs_preempt_pick). A set that
 * violates no budget is preferred over one that does, as kube-scheduler's
 * DefaultPreemption prefers; when every set violates, the one found is
 * kept with its violating victims spared where the pod still fits, and
 * *ret_violations says how many of its victims violate (written on GS_EOK).
 * A set whose victims do not free the host for the pod is never answered:
 * more candidates are added to free it, or UNSCHEDULABLE. */
enum gs_err gs_preempt_pick_limited(const struct gs_node *node, const struct gs_place_pod *pod,
                                    uint32_t cgpu_max_pods,
                                    const struct gs_preempt_candidate *cands, size_t n,
                                    const struct gs_preempt_limits *lim, uint32_t *ret_idx,
                                    size_t *ret_n, uint32_t *ret_violations,
                                    struct gs_status *st);

/* How many of n victims (budget masks and priorities) violate a budget, as
 * kube-scheduler counts: the most important first (highest priority, then
 * the order given), each taking one disruption from every budget selecting
 * it; a victim that takes one a budget does not allow violates. */
uint32_t gs_preempt_violations(const uint64_t *budgets, const int32_t *prios, size_t n,
                               const int32_t *allowed, uint32_t nbudgets);

/* ---- nominated pods (docs/preemption.md) ------------------------------------- */

/* The node as another pod sees it while the n pods in held (prepared;
 * kube-scheduler nominated them to it: status.nominatedNodeName) wait for
 * their victims to go, as kube-scheduler adds nominated pods of equal or
 * higher priority to a node before its filters run: each is placed on the
 * view in turn and its GPUs charged. *ret_view is node with its GPUs in
 * gpus (room for node->ngpus; ret_view->gpus points there). GS_EOK, or
 * GS_ENOFIT when a held pod does not fit now (its victims are still
 * there): the GPUs it waits for are not to be given away, so the node
 * holds nothing for another pod (st says so). */
enum gs_err gs_preempt_hold_view(const struct gs_node *node, const struct gs_place_pod *const *held,
                                 size_t n, struct gs_node *ret_view, struct gs_gpu *gpus,
                                 struct gs_status *st);

/* A slot held exactly (docs/preemption.md "Pod groups' slots are held"):
 * the GPUs gang preemption chose for a member (bit i: GPU i of the node)
 * and the memory it takes on each (0: whole GPUs); req names the member
 * (borrowed). */
struct gs_hold_slot {
  const struct gs_pod_request *req;
  uint64_t gpus;
  uint64_t mib_per_gpu;
};
/* The node as another pod sees it while n slots are held on it: each
 * slot's GPUs charged as its member will take them — its memory added
 * (no more than a GPU has: a victim still there leaves it full), a whole
 * GPU owned. *ret_view is node with its GPUs in gpus (room for
 * node->ngpus). pod (prepared; may be NULL) is the pod that asks: GS_ENOFIT
 * with the hold's reason ("GPUs held for pod ns/name, nominated here by
 * preemption", the first slot's member) when pod fits on node but not on
 * the view; else GS_EOK with the view (the plugins give their own reasons
 * where it fits neither). */
enum gs_err gs_preempt_hold_slots(const struct gs_node *node, const struct gs_hold_slot *slots,
                                  size_t n, const struct gs_place_pod *pod,
                                  struct gs_node *ret_view, struct gs_gpu *gpus,
                                  struct gs_status *st);

/* Does a label selector select a pod with these labels? Both in the text
 * form src/api writes (docs/preemption.md): labels are "key=value" lines;
 * a selector is lines of requirements, all of which must hold:
 * "=key=v1,v2" (key In), "!key=v1,v2" (key NotIn), "+key" (Exists),
 * "-key" (DoesNotExist). An empty selector selects every pod, NULL none.
 * A malformed line selects nothing. */
bool gs_selector_matches(const char *selector, const char *labels);

#endif
