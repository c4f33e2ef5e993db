/* Multi-card memory pods and whole-GPU pods on a node with NVLink topology. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include <gpushare/ledger.h>
#include <gpushare/place.h>
#include <gpushare/topo.h>

#include "../testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct gs_topo dgx1;

static int setup(void **state) {
  (void)state;
  assert_int_equal(gs_test_load_topo("dgx1_v100_topo-m.txt", &dgx1), 0);
  return 0;
}

static struct gs_ledger *dgx_ledger(enum gs_mode mode, bool with_topo) {
  struct gs_ledger *l = gs_ledger_new(GS_UNIT_GIB);
  struct gs_node_spec spec;
  memset(&spec, 0, sizeof spec);
  snprintf(spec.name, sizeof spec.name, "dgx");
  spec.mode = mode;
  spec.gpu_count = 8;
  spec.gpu_mem_units = 8 * 32;
  spec.whole_gpus = 8;
  spec.has_topo = with_topo;
  spec.topo = with_topo ? &dgx1 : NULL;
  assert_int_equal(gs_ledger_node_upsert(l, &spec), GS_EOK);
  return l;
}

static uint32_t link_nv(uint32_t a, uint32_t b) { return dgx1.nvlinks[a * dgx1.n + b]; }

/* One container asking for mem_units on each of count GPUs, or for whole
 * GPUs, placed on the "dgx" node of l with the default policy. */
static enum gs_err pick(struct gs_ledger *l, uint32_t mem_units, uint32_t whole, uint32_t count,
                        struct gs_choice *c) {
  struct gs_policy policy;
  struct gs_pod_request req;
  struct gs_status st;
  gs_policy_init(&policy);
  memset(&req, 0, sizeof req);
  req.ncontainers = 1;
  req.mem_units[0] = mem_units;
  req.whole_gpus[0] = whole;
  req.gpu_count = count;
  return gs_place_pick(gs_ledger_node_get(l, "dgx"), &req, &policy, c, &st);
}

static void test_two_cards_get_a_double_nvlink_pair(void **state) {
  struct gs_ledger *l = dgx_ledger(GS_MODE_SHARE, true);
  struct gs_choice c;
  (void)state;
  assert_int_equal(pick(l, 8, 0, 2, &c), GS_EOK);
  assert_int_equal(c.ngpus, 2);
  assert_int_equal(link_nv(c.gpus[0], c.gpus[1]), 2);
  assert_int_equal(c.mib_per_gpu, 4096);
  gs_ledger_free(l);
}

static void test_whole_quad_is_all_nvlink(void **state) {
  struct gs_ledger *l = dgx_ledger(GS_MODE_TOPOLOGY, true);
  struct gs_choice c;
  (void)state;
  assert_int_equal(pick(l, 0, 4, 1, &c), GS_EOK);
  assert_int_equal(c.ngpus, 4);
  assert_true((c.gpus[0] == 0 && c.gpus[3] == 3) || (c.gpus[0] == 4 && c.gpus[3] == 7));
  gs_ledger_free(l);
}

static void test_better_connected_node_scores_higher(void **state) {
  struct gs_ledger *with = dgx_ledger(GS_MODE_SHARE, true);
  struct gs_ledger *without = dgx_ledger(GS_MODE_SHARE, false);
  struct gs_choice a, b;
  (void)state;
  assert_int_equal(pick(with, 8, 0, 2, &a), GS_EOK);
  assert_int_equal(pick(without, 8, 0, 2, &b), GS_EOK);
  assert_true(a.score > b.score);
  gs_ledger_free(with);
  gs_ledger_free(without);
}

GS_TEST_MAIN(setup, NULL, cmocka_unit_test(test_two_cards_get_a_double_nvlink_pair),
             cmocka_unit_test(test_whole_quad_is_all_nvlink),
             cmocka_unit_test(test_better_connected_node_scores_higher))
