/* Small helpers shared by unit tests (header-only: each test is one binary). */
#ifndef GPUSHARE_TESTUTIL_H
#define GPUSHARE_TESTUTIL_H

#include <gpushare/ledger.h>
#include <gpushare/topo.h>

#include "node_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An empty diag, for a call that expects one (a cluster's binder). */
static inline struct gs_diag *gs_test_diag(struct gs_diag *d) {
  d->where[0] = d->text[0] = '\0';
  return d;
}

/* A ledger reader (gs_sched_read): the MiB used on one GPU
 * of a node, UINT64_MAX when there is no such GPU. */
struct gs_test_used {
  const char *node;
  uint32_t gpu;
  uint64_t used;
};
static inline void gs_test_used_fn(const struct gs_ledger *l, void *arg) {
  struct gs_test_used *c = arg;
  const struct gs_node *n = gs_ledger_node_get(l, c->node);
  c->used = n != NULL && c->gpu < n->ngpus ? n->gpus[c->gpu].used_mib : UINT64_MAX;
}

/* A one-container pod default/<name> with UID uid, asking nothing yet. */
static inline struct gs_pod_request gs_test_pod(const char *name, const char *uid) {
  struct gs_pod_request p;
  memset(&p, 0, sizeof p);
  snprintf(p.ns, sizeof p.ns, "default");
  snprintf(p.name, sizeof p.name, "%s", name);
  snprintf(p.uid, sizeof p.uid, "%s", uid);
  p.ncontainers = 1;
  return p;
}

/* A one-container memory pod default/<name>, UID uid-<name>, over count GPUs. */
static inline struct gs_pod_request gs_test_mem_pod(const char *name, uint64_t units,
                                                    uint32_t count) {
  char uid[GS_UID_MAX + 1];
  struct gs_pod_request p;
  snprintf(uid, sizeof uid, "uid-%s", name);
  p = gs_test_pod(name, uid);
  p.mem_units[0] = units;
  p.gpu_count = count;
  return p;
}

/* A bound memory pod default/<uid> (name and UID uid) of gib 1 GiB units
 * on GPU gpu of node, assumed at 1 ns, priority 0; *part is its one part. */
static inline struct gs_alloc gs_test_bound_mem(struct gs_alloc_part *part, const char *uid,
                                                const char *node, uint32_t gpu, uint64_t gib) {
  struct gs_alloc a = {.ns = "default", .name = uid, .uid = uid, .node = node,
                       .kind = GS_ALLOC_MEM, .state = GS_ALLOC_BOUND, .unit_mib = 1024,
                       .assume_time_ns = 1, .nparts = 1, .parts = part, .priority = 0};
  *part = (struct gs_alloc_part){0, gpu, gib};
  return a;
}

/* Puts used_units[g] (of unit_mib) on GPU g of node, one restored pod
 * each (UIDs load-N); 0 on success. */
static inline int gs_test_load(struct gs_ledger *ledger, uint64_t unit_mib, const char *node,
                               const uint64_t *used_units, uint32_t n) {
  static int seq;
  char uid[32];
  for (uint32_t g = 0; g < n; g++) {
    struct gs_alloc_part part = {0, g, used_units[g]};
    struct gs_alloc a = {.ns = "default", .node = node, .kind = GS_ALLOC_MEM,
                         .unit_mib = unit_mib, .nparts = 1, .parts = &part};
    if (used_units[g] == 0)
      continue;
    snprintf(uid, sizeof uid, "load-%d", seq++);
    a.uid = a.name = uid;
    if (gs_ledger_restore(ledger, &a) != GS_EOK)
      return -1;
  }
  return 0;
}

/* Parses a topology file of test/data/topologies (vendored copies of
 * ../shared/data/topologies, so a fresh clone has them) into *ret; 0 on
 * success. The tests assert on the result. */
static inline int gs_test_load_topo(const char *file, struct gs_topo *ret) {
  char path[512], *text;
  struct gs_diag diag = {"", ""};
  FILE *f;
  long len;
  int rc = -1;
  snprintf(path, sizeof path, "%s/topologies/%s", GS_TEST_DATA, file);
  if ((f = fopen(path, "rb")) == NULL)
    return -1;
  if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (text = malloc((size_t)len)) != NULL) {
    if (fread(text, 1, (size_t)len, f) == (size_t)len &&
        gs_topo_parse_text(text, (size_t)len, ret, &diag) == GS_EOK)
      rc = 0;
    free(text);
  }
  fclose(f);
  return rc;
}

#endif
