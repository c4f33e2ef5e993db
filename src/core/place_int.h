/* Internal to the core: what placement (place.c) shares with the
 * fragmentation-aware policy (frag.c). */
#ifndef GPUSHARE_CORE_PLACE_INT_H
#define GPUSHARE_CORE_PLACE_INT_H

#include <gpushare/place.h>

#include <stdint.h>

static inline uint64_t gpu_free_mib(const struct gs_gpu *gpu) {
  /* A restore may record more than a GPU holds: nothing is free then. */
  return gpu->total_mib > gpu->used_mib ? gpu->total_mib - gpu->used_mib : 0;
}

/* The order of GPU g for a memory pod needing need_mib, as one integer,
 * smaller first (place.c). */
uint64_t gs__place_mem_key(const struct gs_node *node, const struct gs_policy *policy,
                           uint64_t need_mib, uint32_t g);

#endif
