/* Internal to the core: what placement (place.c) shares with the
 * fragmentation-aware policy (frag.c). */
#ifndef GPUSHARE_CORE_PLACE_INT_H
#define GPUSHARE_CORE_PLACE_INT_H

#include <gpushare/place.h>

#include <stdbool.h>
#include <stdint.h>

static inline uint64_t gpu_free_mib(const struct gs_gpu *gpu) {
  /* A restore may record more than a GPU holds: nothing is free then. */
  return gpu->total_mib > gpu->used_mib ? gpu->total_mib - gpu->used_mib : 0;
}

/* Fragmentation class of what a GPU keeps after taking need: a GPU filled
 * exactly wastes nothing; one that can still take another pod of this size
 * is not stranded; a smaller remainder likely stays unused. Lower is
 * better. This is the policy->frag_aware hook. */
static inline uint64_t gs__place_frag_class(uint64_t free_mib, uint64_t need_mib) {
  uint64_t rest = free_mib - need_mib, some = rest != 0;
  /* Without branches: computed for every GPU of every node (place.c). */
  return some + (some & (rest < need_mib));
}

/* The order of GPUs for a memory pod as one integer per GPU, smaller
 * first: the fragmentation class (policy->frag_aware), then free memory
 * (binpack: least first; spread: most first), then the index. Comparing
 * integers is what made the choice cheap enough to run for every node of
 * every request (docs/benchmarks.md, core). Free memory is below 2^41 MiB
 * (parts are capped at 2^40): 54 bits hold it. */
#define GS__KEY_FREE_MAX ((UINT64_C(1) << 54) - 1)

/* GS__KEY_FREE_MAX under spread, else 0 (x ^ GS__KEY_FREE_MAX =
 * GS__KEY_FREE_MAX − x for x ≤ GS__KEY_FREE_MAX). */
static inline uint64_t gs__place_spread_flip(const struct gs_node *node) {
  return node->placement == GS_PLACE_SPREAD ? GS__KEY_FREE_MAX : 0;
}

/* The key of GPU g with free_mib free (place.c and frag.c's choosers). */
static inline uint64_t gs__place_mem_key_of(uint64_t free_mib, uint64_t need_mib, bool frag_aware,
                                            uint64_t spread_flip, uint32_t g) {
  uint64_t cls = 0;
  if (free_mib > GS__KEY_FREE_MAX)
    free_mib = GS__KEY_FREE_MAX;
  if (frag_aware)
    cls = gs__place_frag_class(free_mib, need_mib);
  return cls << 60 | (free_mib ^ spread_flip) << 6 | g;
}

/* The same for GPU g of node as the ledger has it. */
uint64_t gs__place_mem_key(const struct gs_node *node, const struct gs_policy *policy,
                           uint64_t need_mib, uint32_t g);

#endif
