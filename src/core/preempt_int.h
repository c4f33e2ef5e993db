/* Internal to the core: what preemption for a pod (preempt.c) shares with
 * preemption for a gang (gang_preempt.c). */
#ifndef GPUSHARE_CORE_PREEMPT_INT_H
#define GPUSHARE_CORE_PREEMPT_INT_H

#include <gpushare/ledger.h>

#include <stdbool.h>
#include <stdint.h>

/* What a set of victims costs, lower first: a set found (ok) before none,
 * then the highest priority it evicts, then how many pods, then how many
 * MiB (0 for whole GPUs). Gangs' costs are always ok. */
struct gs__preempt_cost {
  bool ok;
  int32_t maxprio; /* gang_preempt.c: INT32_MIN when free already */
  uint32_t count;
  uint64_t mib;
};

static inline int gs__preempt_cost_cmp(const struct gs__preempt_cost *a,
                                       const struct gs__preempt_cost *b) {
  if (a->ok != b->ok)
    return a->ok ? -1 : 1;
  if (a->maxprio != b->maxprio)
    return a->maxprio < b->maxprio ? -1 : 1;
  if (a->count != b->count)
    return a->count < b->count ? -1 : 1;
  if (a->mib != b->mib)
    return a->mib < b->mib ? -1 : 1;
  return 0;
}

/* Whether alloc a has a part on GPU g; *ret_mib the MiB of its parts there. */
static inline bool gs__preempt_touches(const struct gs_alloc *a, uint32_t g, uint64_t *ret_mib) {
  bool t = false;
  *ret_mib = 0;
  for (uint32_t i = 0; i < a->nparts; i++)
    if (a->parts[i].gpu == g) {
      *ret_mib += gs_alloc_part_mib(a, &a->parts[i]);
      t = true;
    }
  return t;
}

#endif
