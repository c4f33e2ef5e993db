/* Nominated pods' GPUs held while their victims terminate
 * (include/gpushare/preempt.h gs_preempt_hold_view, gs_preempt_hold_slots). */
#include <gpushare/preempt.h>

#include <string.h>

/* Owns a whole GPU a nominated pod will take: no allocation of the ledger's. */
static const struct gs_alloc held_owner = {.ns = "", .name = "", .uid = "", .node = ""};

enum gs_err gs_preempt_hold_view(const struct gs_node *node, const struct gs_place_pod *const *held,
                                 size_t n, struct gs_node *ret_view, struct gs_gpu *gpus,
                                 struct gs_status *st) {
  struct gs_node view = *node;
  memcpy(gpus, node->gpus, node->ngpus * sizeof *gpus);
  view.gpus = gpus;
  for (size_t i = 0; i < n; i++) {
    struct gs_choice choice;
    struct gs_status why;
    if (gs_place_pick_prepared(&view, held[i], NULL, NULL, &choice, &why) != GS_EOK)
      return gs_status_set(st, GS_ENOFIT, GS_R_OTHER,
                           "GPUs held for pod %s/%s, nominated here by preemption",
                           held[i]->req->ns, held[i]->req->name);
    for (uint32_t k = 0; k < choice.ngpus; k++) {
      struct gs_gpu *g = &gpus[choice.gpus[k]];
      if (held[i]->mem) {
        g->used_mib += choice.mib_per_gpu;
        g->npods++;
      } else {
        g->owner = &held_owner;
        g->npods++;
      }
    }
  }
  *ret_view = view;
  return GS_EOK;
}

enum gs_err gs_preempt_hold_slots(const struct gs_node *node, const struct gs_hold_slot *slots,
                                  size_t n, const struct gs_place_pod *pod,
                                  struct gs_node *ret_view, struct gs_gpu *gpus,
                                  struct gs_status *st) {
  struct gs_node view = *node;
  struct gs_choice choice;
  struct gs_status why;
  memcpy(gpus, node->gpus, node->ngpus * sizeof *gpus);
  view.gpus = gpus;
  for (size_t i = 0; i < n; i++)
    for (uint32_t g = 0; g < node->ngpus && g < GS_MAX_GPUS; g++) {
      struct gs_gpu *gpu = &gpus[g];
      if (!(slots[i].gpus & (UINT64_C(1) << g)))
        continue;
      gpu->npods++;
      if (slots[i].mib_per_gpu == 0) {
        gpu->owner = &held_owner;
        continue;
      }
      if (gpu->used_mib <= gpu->total_mib && gpu->total_mib - gpu->used_mib >= slots[i].mib_per_gpu)
        gpu->used_mib += slots[i].mib_per_gpu;
      else if (gpu->used_mib < gpu->total_mib)
        gpu->used_mib = gpu->total_mib; /* a victim still there: full */
    }
  if (n > 0 && pod != NULL && gs_place_pick_prepared(&view, pod, NULL, NULL, &choice, &why) != GS_EOK &&
      gs_place_pick_prepared(node, pod, NULL, NULL, &choice, &why) == GS_EOK)
    return gs_status_set(st, GS_ENOFIT, GS_R_OTHER,
                         "GPUs held for pod %s/%s, nominated here by preemption",
                         slots[0].req->ns, slots[0].req->name);
  *ret_view = view;
  return GS_EOK;
}
