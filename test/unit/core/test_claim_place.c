/* Placing DRA claims (gpushare/claim.h, docs/dra.md): the core's decision of
 * node and GPUs, recorded as claim charges in the ledger. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include <gpushare/claim.h>

#include <stdio.h>
#include <string.h>

static void add_node(struct gs_ledger *l, const char *name, uint32_t ngpus, uint64_t gib) {
  struct gs_node_spec s;
  memset(&s, 0, sizeof s);
  snprintf(s.name, sizeof s.name, "%s", name);
  s.mode = GS_MODE_SHARE;
  s.gpu_count = ngpus;
  s.gpu_mem_units = gib * ngpus;
  assert_int_equal(gs_ledger_node_upsert(l, &s), GS_EOK);
}

/* Places req over nodes and records it as claim uid; returns the verdict. */
static enum gs_err place(struct gs_ledger *l, const char *const *nodes, size_t n,
                         const struct gs_policy *p, uint64_t mib, uint32_t count, const char *uid,
                         struct gs_claim_choice *out) {
  struct gs_claim_request req = {mib, count};
  struct gs_alloc_part parts[GS_MAX_GPUS];
  struct gs_alloc a;
  struct gs_status st;
  enum gs_err e = gs_claim_place(l, nodes, n, p, &req, out, &st);
  if (e != GS_EOK)
    return e;
  assert_int_equal(st.code, GS_EOK);
  gs_claim_charge(out, "team", uid, uid, mib, parts, &a);
  assert_int_equal(gs_ledger_claim_fits(l, &a), GS_EOK);
  assert_int_equal(gs_ledger_claim_set(l, &a), GS_EOK);
  return e;
}

static void test_4gib_claims_binpack_onto_one_gpu(void **state) {
  struct gs_ledger *l = gs_ledger_new(1024);
  const char *nodes[] = {"n"};
  struct gs_policy p;
  struct gs_claim_choice c;
  char uid[8];
  (void)state;
  gs_policy_init(&p);
  add_node(l, "n", 2, 16);
  for (int i = 0; i < 4; i++) {
    snprintf(uid, sizeof uid, "c%d", i);
    assert_int_equal(place(l, nodes, 1, &p, 4096, 1, uid, &c), GS_EOK);
    assert_string_equal(c.node, "n");
    assert_int_equal(c.choice.ngpus, 1);
    assert_int_equal(c.choice.gpus[0], 0);
    assert_int_equal(c.choice.mib_per_gpu, 4096);
  }
  assert_int_equal(gs_ledger_node_get(l, "n")->gpus[0].used_mib, 16384);
  assert_int_equal(place(l, nodes, 1, &p, 4096, 1, "c4", &c), GS_EOK);
  assert_int_equal(c.choice.gpus[0], 1);
  gs_ledger_free(l);
}

static void test_8gib_over_2_gpus_is_4_plus_4(void **state) {
  struct gs_ledger *l = gs_ledger_new(1024);
  const char *nodes[] = {"n"};
  struct gs_policy p;
  struct gs_claim_choice c;
  (void)state;
  gs_policy_init(&p);
  add_node(l, "n", 4, 16);
  assert_int_equal(place(l, nodes, 1, &p, 8192 / 2, 2, "pair", &c), GS_EOK);
  assert_int_equal(c.choice.ngpus, 2);
  assert_int_equal(c.choice.gpus[0], 0);
  assert_int_equal(c.choice.gpus[1], 1);
  assert_int_equal(gs_ledger_node_get(l, "n")->gpus[0].used_mib, 4096);
  assert_int_equal(gs_ledger_node_get(l, "n")->gpus[1].used_mib, 4096);
  gs_ledger_free(l);
}

static void test_node_policy_and_whole_devices(void **state) {
  struct gs_ledger *l = gs_ledger_new(1024);
  const char *nodes[] = {"b", "a", "ghost"};
  struct gs_policy p;
  struct gs_claim_choice c;
  struct gs_status st;
  (void)state;
  gs_policy_init(&p);
  add_node(l, "a", 4, 16);
  add_node(l, "b", 4, 16);
  /* binpack: the fuller node wins once one has memory in use */
  assert_int_equal(place(l, nodes, 3, &p, 2048, 1, "first", &c), GS_EOK);
  assert_string_equal(c.node, "a"); /* a tie: the lower name */
  assert_int_equal(place(l, nodes, 3, &p, 2048, 1, "second", &c), GS_EOK);
  assert_string_equal(c.node, "a");
  /* whole devices: GPUs nothing touches (GPU 0 of a holds claims) */
  assert_int_equal(place(l, nodes, 3, &p, 0, 3, "whole", &c), GS_EOK);
  assert_string_equal(c.node, "a"); /* binpack: the node left with fewer free GPUs */
  assert_int_equal(c.choice.ngpus, 3);
  assert_int_equal(c.choice.gpus[0], 1);
  assert_int_equal(c.choice.gpus[2], 3);
  assert_int_equal(gs_ledger_node_get(l, "a")->gpus[3].used_mib, 16384);
  /* no node with 2 free whole GPUs left on a; b has 4 */
  p.node_policy = GS_PLACE_SPREAD;
  assert_int_equal(place(l, nodes, 3, &p, 0, 2, "whole2", &c), GS_EOK);
  assert_string_equal(c.node, "b");
  /* refusals */
  {
    struct gs_claim_request big = {20 * 1024, 1}, none = {1024, 0};
    assert_int_equal(gs_claim_place(l, nodes, 3, &p, &big, &c, &st), GS_ENOFIT);
    assert_int_equal(st.why, GS_R_INSUFFICIENT_GPU_MEMORY);
    assert_int_equal(gs_claim_place(l, nodes, 3, &p, &none, &c, &st), GS_EUNRESOLVABLE);
    assert_int_equal(gs_claim_place(l, nodes + 2, 1, &p, &big, &c, &st), GS_ENOFIT);
    assert_int_equal(st.why, GS_R_NODE_UNKNOWN);
  }
  gs_ledger_free(l);
}

GS_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_4gib_claims_binpack_onto_one_gpu),
             cmocka_unit_test(test_8gib_over_2_gpus_is_4_plus_4),
             cmocka_unit_test(test_node_policy_and_whole_devices))
