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

#endif
