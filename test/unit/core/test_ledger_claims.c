/* Ledger: DRA claim charges (docs/dra.md) — used memory to placement,
 * reserve and preemption; replaced in one step; released by UID; never a
 * pod's allocation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <gpushare/ledger.h>
#include <gpushare/place.h>
#include <gpushare/preempt.h>

#include "../testutil.h"

#include <stdio.h>
#include <string.h>

static void add_node(struct gs_ledger *l, const char *name, enum gs_mode mode, uint32_t ngpus,
                     uint64_t units_per_gpu) {
  struct gs_node_spec s = gs_test_node(name, mode, ngpus, units_per_gpu * ngpus);
  s.whole_gpus = mode == GS_MODE_TOPOLOGY ? ngpus : 0;
  assert_int_equal(gs_ledger_node_upsert(l, &s), GS_EOK);
}

static struct gs_alloc claim(const char *uid, const char *node, const struct gs_alloc_part *parts,
                             uint32_t n) {
  return (struct gs_alloc){.ns = "team", .name = uid, .uid = uid, .node = node,
                           .kind = GS_ALLOC_CLAIM, .state = GS_ALLOC_BOUND,
                           .unit_mib = GS_CLAIM_UNIT_MIB, .nparts = n, .parts = parts,
                           .priority = INT32_MAX};
}

static enum gs_err pod(struct gs_ledger *l, const char *uid, const char *node, uint32_t gpu,
                       uint64_t gib, int32_t prio) {
  struct gs_alloc_part part = {0, gpu, gib};
  struct gs_alloc a = {.ns = "default", .name = uid, .uid = uid, .node = node,
                       .kind = GS_ALLOC_MEM, .state = GS_ALLOC_BOUND, .unit_mib = 1024,
                       .nparts = 1, .parts = &part, .priority = prio};
  return gs_ledger_reserve(l, &a, 0);
}

static const struct gs_gpu *gpu(const struct gs_ledger *l, const char *node, uint32_t g) {
  return &gs_ledger_node_get(l, node)->gpus[g];
}

static void test_memory_claim_is_used_memory(void **state) {
  struct gs_ledger *l = gs_ledger_new(1024);
  struct gs_alloc_part p = {0, 0, 6 * 1024};
  struct gs_alloc c = claim("c1", "n", &p, 1);
  (void)state;
  add_node(l, "n", GS_MODE_SHARE, 2, 16);
  assert_int_equal(gs_ledger_claim_set(l, &c), GS_EOK);
  assert_int_equal(gpu(l, "n", 0)->used_mib, 6 * 1024);
  assert_int_equal(gpu(l, "n", 0)->npods, 1);
  /* 10 GiB are left on GPU 0: 11 do not fit, 10 do */
  assert_int_equal(pod(l, "p1", "n", 0, 11, 0), GS_ENOFIT);
  assert_int_equal(pod(l, "p1", "n", 0, 10, 0), GS_EOK);
  assert_int_equal(gpu(l, "n", 0)->used_mib, 16 * 1024);
  /* a claim's UID is no pod's; a pod's UID is no claim's */
  assert_int_equal(gs_ledger_claim_set(l, &(struct gs_alloc){
                       .ns = "team", .name = "p1", .uid = "p1", .node = "n",
                       .kind = GS_ALLOC_CLAIM, .unit_mib = 1, .nparts = 1, .parts = &p}),
                   GS_EEXISTS);
  assert_int_equal(gs_ledger_release(l, "c1"), GS_EOK);
  assert_int_equal(gpu(l, "n", 0)->used_mib, 10 * 1024);
  assert_int_equal(gpu(l, "n", 0)->npods, 1);
  gs_ledger_free(l);
}

static void test_whole_claim_takes_the_gpu(void **state) {
  struct gs_ledger *l = gs_ledger_new(128);
  struct gs_alloc_part p = {0, 1, GS_CLAIM_WHOLE};
  struct gs_alloc c = claim("w", "n", &p, 1);
  (void)state;
  add_node(l, "n", GS_MODE_SHARE, 2, 128); /* 16 GiB in 128 MiB units */
  assert_int_equal(gs_ledger_claim_set(l, &c), GS_EOK);
  assert_int_equal(gpu(l, "n", 1)->used_mib, 16384);
  assert_int_equal(gs_ledger_part_charge_mib(gpu(l, "n", 1), gs_ledger_alloc_get(l, "w"), &p),
                   16384);
  assert_int_equal(pod(l, "p", "n", 1, 1, 0), GS_ENOFIT);
  {
    struct gs_alloc_part pp = {0, 1, 1};
    struct gs_alloc a = {.ns = "d", .name = "p", .uid = "p", .node = "n", .kind = GS_ALLOC_MEM,
                         .unit_mib = 128, .nparts = 1, .parts = &pp};
    assert_int_equal(gs_ledger_reserve(l, &a, 0), GS_ENOFIT);
    pp.gpu = 0;
    assert_int_equal(gs_ledger_reserve(l, &a, 0), GS_EOK);
  }
  /* the GPU's capacity changes: the whole claim follows it */
  add_node(l, "n", GS_MODE_SHARE, 2, 256);
  assert_int_equal(gpu(l, "n", 1)->used_mib, 32768);
  assert_int_equal(gs_ledger_release(l, "w"), GS_EOK);
  assert_int_equal(gpu(l, "n", 1)->used_mib, 0);
  gs_ledger_free(l);
}

static void test_whole_gpu_pods_never_take_a_claimed_gpu(void **state) {
  struct gs_ledger *l = gs_ledger_new(1024);
  struct gs_alloc_part p = {0, 0, 512};
  struct gs_alloc c = claim("c", "t", &p, 1);
  struct gs_alloc_part wp = {0, 0, 0};
  struct gs_alloc w = {.ns = "d", .name = "w", .uid = "w", .node = "t", .kind = GS_ALLOC_WHOLE,
                       .unit_mib = 1024, .nparts = 1, .parts = &wp};
  (void)state;
  add_node(l, "t", GS_MODE_TOPOLOGY, 2, 16);
  assert_int_equal(gs_ledger_claim_set(l, &c), GS_EOK);
  assert_int_equal(gs_ledger_reserve(l, &w, 0), GS_ENOFIT);
  wp.gpu = 1;
  assert_int_equal(gs_ledger_reserve(l, &w, 0), GS_EOK);
  gs_ledger_free(l);
}

static void test_replace_is_one_step_and_moves(void **state) {
  struct gs_ledger *l = gs_ledger_new(1024);
  struct gs_alloc_part p = {0, 0, 4096};
  struct gs_alloc c = claim("c", "a", &p, 1);
  (void)state;
  add_node(l, "a", GS_MODE_SHARE, 2, 16);
  add_node(l, "b", GS_MODE_SHARE, 2, 16);
  assert_int_equal(gs_ledger_claim_set(l, &c), GS_EOK);
  p = (struct gs_alloc_part){0, 1, 8192};
  assert_int_equal(gs_ledger_claim_set(l, &c), GS_EOK);
  assert_int_equal(gpu(l, "a", 0)->used_mib, 0);
  assert_int_equal(gpu(l, "a", 0)->npods, 0);
  assert_int_equal(gpu(l, "a", 1)->used_mib, 8192);
  assert_int_equal(gs_ledger_alloc_count(l), 1);
  c.node = "b";
  assert_int_equal(gs_ledger_claim_set(l, &c), GS_EOK);
  assert_int_equal(gpu(l, "a", 1)->used_mib, 0);
  assert_int_equal(gpu(l, "b", 1)->used_mib, 8192);
  assert_int_equal(gs_ledger_node_alloc_count(l, "a"), 0);
  /* an unknown node: nothing changes */
  c.node = "zz";
  assert_int_equal(gs_ledger_claim_set(l, &c), GS_ENOTFOUND);
  assert_int_equal(gpu(l, "b", 1)->used_mib, 8192);
  gs_ledger_free(l);
}

static void test_bad_shapes_change_nothing(void **state) {
  struct gs_ledger *l = gs_ledger_new(1024);
  struct gs_alloc_part p = {0, 0, 1024}, big = {0, 0, (UINT64_C(1) << 40) + 1};
  struct gs_alloc c = claim("c", "n", &p, 1);
  (void)state;
  add_node(l, "n", GS_MODE_SHARE, 1, 16);
  c.unit_mib = 1024; /* a claim counts MiB */
  assert_int_equal(gs_ledger_claim_set(l, &c), GS_EINVAL);
  c.unit_mib = 1;
  c.kind = GS_ALLOC_MEM;
  assert_int_equal(gs_ledger_claim_set(l, &c), GS_EINVAL);
  c.kind = GS_ALLOC_CLAIM;
  c.parts = &big;
  assert_int_equal(gs_ledger_claim_set(l, &c), GS_ERANGE);
  c.nparts = 0;
  assert_int_equal(gs_ledger_claim_set(l, &c), GS_EINVAL);
  assert_int_equal(gs_ledger_alloc_count(l), 0);
  assert_int_equal(gpu(l, "n", 0)->used_mib, 0);
  /* a claim past the GPU (the cluster's truth) is recorded, never refused */
  p.units = 20 * 1024;
  c.parts = &p;
  c.nparts = 1;
  assert_int_equal(gs_ledger_claim_fits(l, &c), GS_ENOFIT);
  assert_int_equal(gs_ledger_claim_set(l, &c), GS_EOK);
  assert_int_equal(pod(l, "p", "n", 0, 1, 0), GS_ENOFIT);
  gs_ledger_free(l);
}

/* Placement and preemption see the claim; preemption never names it. */
static void test_place_and_preempt_see_claims(void **state) {
  struct gs_ledger *l = gs_ledger_new(1024);
  struct gs_alloc_part p = {0, 0, 12 * 1024};
  struct gs_alloc c = claim("c", "n", &p, 1);
  struct gs_pod_request req;
  struct gs_place_pod pp;
  struct gs_policy pol;
  struct gs_status st;
  struct gs_preempt_candidate cands[1];
  uint32_t idx[2];
  size_t nv = 0;
  (void)state;
  add_node(l, "n", GS_MODE_SHARE, 1, 16);
  assert_int_equal(gs_ledger_claim_set(l, &c), GS_EOK);
  assert_int_equal(pod(l, "low", "n", 0, 2, 0), GS_EOK);
  req = gs_test_pod("hi", "hi");
  req.mem_units[0] = 5;
  req.gpu_count = 1;
  req.priority = 100;
  gs_policy_init(&pol);
  assert_int_equal(gs_place_prepare(&req, &pol, &pp, &st), GS_EOK);
  /* 2 GiB free: a 5 GiB pod does not fit ... */
  {
    struct gs_choice ch;
    assert_int_equal(gs_place_pick_prepared(gs_ledger_node_get(l, "n"), &pp, NULL, NULL, &ch, &st),
                     GS_ENOFIT);
  }
  /* ... and evicting the 2 GiB pod does not make room (4 GiB): the claim
   * stays, it is no candidate (the framework never offers one) */
  cands[0] = (struct gs_preempt_candidate){.alloc = gs_ledger_alloc_get(l, "low"), .proposed = false};
  assert_int_equal(gs_preempt_pick(gs_ledger_node_get(l, "n"), &pp, 0, cands, 1, idx, &nv, &st),
                   GS_ENOFIT);
  gs_ledger_free(l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_memory_claim_is_used_memory),
      cmocka_unit_test(test_whole_claim_takes_the_gpu),
      cmocka_unit_test(test_whole_gpu_pods_never_take_a_claimed_gpu),
      cmocka_unit_test(test_replace_is_one_step_and_moves),
      cmocka_unit_test(test_bad_shapes_change_nothing),
      cmocka_unit_test(test_place_and_preempt_see_claims),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
