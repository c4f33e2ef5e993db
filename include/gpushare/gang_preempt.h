/* gpushare — GPU-aware preemption for a whole gang (docs/gangs.md,
 * "Preemption"): victims for every member, or none.
 *
 * A what-if on read-only node views, like gs_preempt_pick (preempt.h), for
 * a job of `slots` members of k whole GPUs each on topology nodes: a slot
 * needs k GPUs of one node that are free or become free when the chosen
 * victims go. Slot by slot, the node whose k cheapest GPUs cost least —
 * the lowest highest victim priority, then the fewest victims, then the
 * node with fewer usable GPUs (large free nodes stay whole) — is taken; a
 * GPU's cost is that of the candidates on it not already chosen. If any
 * slot finds no node, nothing is chosen at all.
 */
#ifndef GPUSHARE_GANG_PREEMPT_H
#define GPUSHARE_GANG_PREEMPT_H

#include <gpushare/ledger.h>
#include <gpushare/preempt.h>
#include <gpushare/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Picks the victims for `slots` slots of k whole GPUs over nodes (views,
 * borrowed; other than topology nodes are passed over). cands are the pods
 * that may go (lower priority than the gang, not protected), on any of the
 * nodes; a GPU with anything else on it is not usable. GS_EOK: ret_out[i]
 * (room for ncands) says whether cands[i] goes (none when every slot fits
 * already) and *ret_first the index in nodes of the first slot's node.
 * GS_ENOFIT: not every slot can be freed; st says how many could, nothing
 * is written. GS_EINVAL: k or slots 0, or k above GS_MAX_GPUS. */
enum gs_err gs_gang_preempt_pick(const struct gs_node *const *nodes, size_t nnodes, uint32_t slots,
                                 uint32_t k, const struct gs_preempt_candidate *cands,
                                 size_t ncands, bool *ret_out, size_t *ret_first,
                                 struct gs_status *st) GS_WUR;

/* The same for a memory-shared gang: `slots` members each placed as pod
 * (prepared with gs_place_prepare: N units over M GPUs) is placed, on
 * nodes serving GPU memory. Slot by slot, each node's cheapest set is
 * gs_preempt_pick's on the node as the slots before and the victims before
 * leave it; the node whose set costs least (the lowest highest priority,
 * then the fewest victims, then the least memory) takes the slot, on the
 * GPUs gs_place_pick_prepared then chooses. cgpu_max_pods as for
 * gs_preempt_pick. Results as gs_gang_preempt_pick. */
enum gs_err gs_gang_preempt_pick_mem(const struct gs_node *const *nodes, size_t nnodes,
                                     uint32_t slots, const struct gs_place_pod *pod,
                                     uint32_t cgpu_max_pods,
                                     const struct gs_preempt_candidate *cands, size_t ncands,
                                     bool *ret_out, size_t *ret_first,
                                     struct gs_status *st) GS_WUR;

/* One slot chosen: nodes[node], the GPUs it takes there (bit i: GPU i)
 * and the memory on each (0: whole GPUs). */
struct gs_gang_slot {
  size_t node;
  uint64_t gpus;
  uint64_t mib_per_gpu;
};
/* gs_gang_preempt_pick (pod whole: its k GPUs) or gs_gang_preempt_pick_mem
 * (pod memory) for pod (prepared), with each slot's node and GPUs in
 * ret_slots (room for slots), in the order chosen: what a slot of the
 * job is to be held as while its victims go (docs/preemption.md, "Pod
 * groups' slots are held"). Results otherwise as those; GS_EINVAL for no
 * pod, no slots or no ret_slots. */
enum gs_err gs_gang_preempt_slots(const struct gs_node *const *nodes, size_t nnodes,
                                  uint32_t slots, const struct gs_place_pod *pod,
                                  uint32_t cgpu_max_pods,
                                  const struct gs_preempt_candidate *cands, size_t ncands,
                                  bool *ret_out, struct gs_gang_slot *ret_slots,
                                  struct gs_status *st) GS_WUR;

#endif
