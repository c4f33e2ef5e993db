/* Internal to the core: what preemption for a pod (preempt.c) shares with
 * preemption for a gang (gang_preempt.c). */
#ifndef GPUSHARE_CORE_PREEMPT_INT_H
#define GPUSHARE_CORE_PREEMPT_INT_H

#include <gpushare/ledger.h>

#include <stdbool.h>
#include <stdint.h>

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
