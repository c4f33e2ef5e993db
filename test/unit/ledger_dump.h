/* The whole observable state of a ledger as text (nodes in order, their
 * GPUs and charges, topology, each node's allocations sorted by UID with
 * their parts), for tests that require "the ledger is exactly as before":
 * the allocation-failure torture tests of the core and of the service.
 * Header-only (each test is one binary); needs cmocka included first. */
#ifndef GPUSHARE_TEST_LEDGER_DUMP_H
#define GPUSHARE_TEST_LEDGER_DUMP_H

#include <gpushare/ledger.h>
#include <gpushare/topo.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DUMP_MAX (64u * 1024u)

/* ---- ledger dump ----------------------------------------------------------- */

struct dump {
  char text[DUMP_MAX];
  size_t len;
};

static inline void put(struct dump *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline void put(struct dump *d, const char *fmt, ...) {
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(d->text + d->len, sizeof d->text - d->len, fmt, ap);
  va_end(ap);
  assert_true(n >= 0 && (size_t)n < sizeof d->text - d->len);
  d->len += (size_t)n;
}

static inline int str_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Everything observable: nodes in order, their GPUs and charges, topology,
 * and each node's allocations (sorted by UID, with parts). */
static inline void dump_ledger(const struct gs_ledger *l, struct dump *d) {
  d->len = 0;
  d->text[0] = '\0';
  put(d, "unit=%u allocs=%zu\n", gs_ledger_unit_mib(l), gs_ledger_alloc_count(l));
  for (size_t i = 0; i < gs_ledger_node_count(l); i++) {
    const struct gs_node *n = gs_ledger_node_at(l, i);
    size_t na = gs_ledger_node_alloc_count(l, n->name);
    const char *uids[512];
    put(d, "node %s mode=%d place=%d gpus=%u unhealthy=%" PRIx64 " topo=%u orphans=%zu\n",
        n->name, (int)n->mode, (int)n->placement, n->ngpus, n->unhealthy_mask,
        n->topo ? n->topo->n : 0u, gs_ledger_node_orphans(l, n->name));
    if (n->topo != NULL)
      put(d, " topo %02x%02x\n", n->topo->link[1], n->topo->nvlinks[1]);
    for (uint32_t g = 0; g < n->ngpus; g++) {
      const struct gs_gpu *gpu = &n->gpus[g];
      put(d, " gpu %u total=%" PRIu64 " used=%" PRIu64 " pods=%u healthy=%d owner=%s\n",
          gpu->index, gpu->total_mib, gpu->used_mib, gpu->npods, gpu->healthy,
          gpu->owner ? gpu->owner->uid : "-");
    }
    assert_true(na <= 512);
    for (size_t k = 0; k < na; k++)
      uids[k] = gs_ledger_node_alloc_at(l, n->name, k)->uid;
    qsort(uids, na, sizeof uids[0], str_cmp);
    for (size_t k = 0; k < na; k++) {
      const struct gs_alloc *a = gs_ledger_alloc_get(l, uids[k]);
      assert_non_null(a);
      put(d, " alloc %s/%s uid=%s node=%s kind=%d state=%d unit=%u t=%" PRId64 " parts",
          a->ns, a->name, a->uid, a->node, (int)a->kind, (int)a->state, a->unit_mib,
          a->assume_time_ns);
      for (uint32_t p = 0; p < a->nparts; p++)
        put(d, " %u:%u:%" PRIu64, a->parts[p].container, a->parts[p].gpu, a->parts[p].units);
      put(d, "\n");
    }
  }
}

#endif
