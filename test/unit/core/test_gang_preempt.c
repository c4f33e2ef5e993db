/* Preemption for a whole gang (gs_gang_preempt_pick, docs/gangs.md
 * "Preemption"): slots of k whole GPUs on topology nodes, the cheapest node
 * per slot, every slot or nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include <gpushare/gang_preempt.h>
#include <gpushare/ledger.h>

#include "../testutil.h"

#include <stdio.h>
#include <string.h>

#define GIB 1024u

static struct gs_ledger *ledger(void) {
  struct gs_ledger *l = gs_ledger_new(GIB);
  for (int i = 0; i < 2; i++) {
    struct gs_node_spec spec = gs_test_node(i == 0 ? "t1" : "t2", GS_MODE_TOPOLOGY, 0, 0);
    spec.whole_gpus = 4;
    assert_int_equal(gs_ledger_node_upsert(l, &spec), GS_EOK);
  }
  return l;
}

/* A whole-GPU pod of priority prio on GPUs g0 (and g1 when >= 0). */
static void whole(struct gs_ledger *l, const char *node, const char *uid, int32_t prio, int g0,
                  int g1) {
  struct gs_alloc_part parts[2] = {{0, (uint32_t)g0, 0}, {0, (uint32_t)g1, 0}};
  struct gs_alloc a = {.ns = "default", .name = uid, .uid = uid, .node = node,
                       .kind = GS_ALLOC_WHOLE, .state = GS_ALLOC_BOUND, .unit_mib = GIB,
                       .assume_time_ns = 1, .nparts = g1 < 0 ? 1 : 2, .parts = parts,
                       .priority = prio};
  assert_int_equal(gs_ledger_restore(l, &a), GS_EOK);
}

struct pick {
  enum gs_err code;
  char victims[256]; /* sorted, comma-joined */
  char first[16];
  char reason[GS_REASON_MAX];
};

/* Every pod of priority below `below` is a candidate. */
static struct pick pick(struct gs_ledger *l, uint32_t slots, uint32_t k, int32_t below) {
  const struct gs_node *nodes[2] = {gs_ledger_node_get(l, "t1"), gs_ledger_node_get(l, "t2")};
  struct gs_preempt_candidate cands[32];
  bool out[32];
  const char *names[32];
  size_t n = 0, nv = 0, first = 99;
  struct gs_status st;
  struct pick r = {0};
  for (int i = 0; i < 2; i++)
    for (size_t j = 0; j < gs_ledger_node_alloc_count(l, nodes[i]->name); j++) {
      const struct gs_alloc *a = gs_ledger_node_alloc_at(l, nodes[i]->name, j);
      if (a->priority < below)
        cands[n++] = (struct gs_preempt_candidate){.alloc = a, .proposed = false};
    }
  memset(out, 0x55, sizeof out); /* neither true nor false: written or not */
  r.code = gs_gang_preempt_pick(nodes, 2, slots, k, cands, n, out, &first, &st);
  snprintf(r.reason, sizeof r.reason, "%s", st.reason);
  if (r.code != GS_EOK) {
    assert_int_equal(first, 99); /* nothing written */
    return r;
  }
  snprintf(r.first, sizeof r.first, "%s", nodes[first]->name);
  for (size_t i = 0; i < n; i++)
    if (out[i])
      names[nv++] = cands[i].alloc->uid;
  for (size_t i = 0; i < nv; i++)
    for (size_t j = i + 1; j < nv; j++)
      if (strcmp(names[j], names[i]) < 0) {
        const char *t = names[i];
        names[i] = names[j];
        names[j] = t;
      }
  for (size_t i = 0; i < nv; i++)
    snprintf(r.victims + strlen(r.victims), sizeof r.victims - strlen(r.victims), "%s%s",
             i ? "," : "", names[i]);
  return r;
}

/* pick answers GS_EOK with the victims want ("" for none) and, unless
 * first is NULL, the first slot on node first. */
static void picks(struct gs_ledger *l, uint32_t slots, uint32_t k, int32_t below,
                  const char *want, const char *first) {
  struct pick r = pick(l, slots, k, below);
  assert_int_equal(r.code, GS_EOK);
  assert_string_equal(r.victims, want);
  if (first != NULL)
    assert_string_equal(r.first, first);
}

/* Lower priorities go first: two pods of priority 1 on t2 rather than one
 * two-GPU pod of priority 5 on t1; a second slot then takes t1, and the
 * two-GPU victim frees both of its GPUs for it. */
static void test_cheapest_node_per_slot(void **state) {
  struct gs_ledger *l = ledger();
  (void)state;
  whole(l, "t1", "wide", 5, 0, 1);
  whole(l, "t1", "hi-a", 50, 2, -1);
  whole(l, "t1", "hi-b", 50, 3, -1);
  whole(l, "t2", "x", 1, 0, -1);
  whole(l, "t2", "y", 1, 1, -1);
  whole(l, "t2", "hi-c", 50, 2, -1);
  whole(l, "t2", "hi-d", 50, 3, -1);
  picks(l, 1, 2, 10, "x,y", "t2");
  picks(l, 2, 2, 10, "wide,x,y", NULL);
  gs_ledger_free(l);
}

/* All or nothing: three slots of 2 GPUs where the pods of priority 50 may
 * not go leave room for two: nothing is chosen, and the reason says how
 * many could be freed. With priority 50 evictable too, all three fit. */
static void test_none_unless_every_slot(void **state) {
  struct gs_ledger *l = ledger();
  struct pick r;
  (void)state;
  whole(l, "t1", "wide", 5, 0, 1);
  whole(l, "t1", "hi-a", 50, 2, -1);
  whole(l, "t2", "x", 1, 0, -1);
  whole(l, "t2", "hi-c", 50, 3, -1);
  r = pick(l, 3, 2, 10); /* t1: GPUs 0,1 and 3 usable; t2: 0,1,2: one pair each */
  assert_int_equal(r.code, GS_ENOFIT);
  assert_string_equal(r.reason, "gang preemption: only 2 of 3 replicas (2 whole GPUs each) can be "
                                "freed by evicting lower-priority pods; none is evicted");
  r = pick(l, 3, 2, 100);
  assert_int_equal(r.code, GS_EOK);
  gs_ledger_free(l);
}

/* Free GPUs cost nothing: a slot that fits already takes no victim, and the
 * fuller node's free GPUs are used before an empty node's (binpack). */
static void test_free_gpus_first(void **state) {
  struct gs_ledger *l = ledger();
  (void)state;
  whole(l, "t1", "x", 1, 0, -1);
  whole(l, "t1", "y", 1, 1, -1);
  picks(l, 1, 2, 10, "", "t1");
  picks(l, 3, 2, 10, "", NULL); /* t1's free pair, t2's two pairs: no victim */
  picks(l, 4, 2, 10, "x,y", NULL); /* the fourth slot needs t1's busy pair */
  assert_int_equal(pick(l, 1, 0, 10).code, GS_EINVAL);
  gs_ledger_free(l);
}

GS_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_cheapest_node_per_slot),
             cmocka_unit_test(test_none_unless_every_slot), cmocka_unit_test(test_free_gpus_first))
