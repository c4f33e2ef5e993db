/* A node spec for tests and fuzz targets (header-only, libc and the public
 * types only: the fuzz targets include it without cmocka). */
#ifndef GPUSHARE_TEST_NODE_SPEC_H
#define GPUSHARE_TEST_NODE_SPEC_H

#include <gpushare/types.h>

#include <stdio.h>
#include <string.h>

/* A node spec: gpus GPUs of mode with units in all (of the active unit);
 * the rest zero, for the caller to set. */
static inline struct gs_node_spec gs_test_node(const char *name, enum gs_mode mode, uint32_t gpus,
                                               uint64_t units) {
  struct gs_node_spec spec;
  memset(&spec, 0, sizeof spec);
  snprintf(spec.name, sizeof spec.name, "%s", name);
  spec.mode = mode;
  spec.gpu_count = gpus;
  spec.gpu_mem_units = units;
  return spec;
}

#endif
