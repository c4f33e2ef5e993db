/* The ledger's change log (gs_ledger_gen, gs_ledger_changed_since): every
 * change of a node's view is told once per node, a node added or removed
 * makes earlier generations unanswerable, and so does falling more than
 * GS_LEDGER_CHANGES_MAX (or the caller's max) changes behind. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include <gpushare/ledger.h>

#include "../testutil.h"

#include <stdint.h>

static struct gs_ledger *two_nodes(void) {
  struct gs_ledger *l = gs_ledger_new(GS_UNIT_GIB);
  struct gs_node_spec a = gs_test_node("a", GS_MODE_SHARE, 2, 32);
  struct gs_node_spec b = gs_test_node("b", GS_MODE_SHARE, 2, 32);
  assert_non_null(l);
  assert_int_equal(gs_ledger_node_upsert(l, &a), GS_EOK);
  assert_int_equal(gs_ledger_node_upsert(l, &b), GS_EOK);
  return l;
}

static enum gs_err put(struct gs_ledger *l, const char *node, const char *uid, uint64_t units) {
  struct gs_alloc_part part = {0, 0, units};
  struct gs_alloc a = {.ns = "default", .name = uid, .uid = uid, .node = node,
                       .kind = GS_ALLOC_MEM, .unit_mib = GS_UNIT_GIB, .nparts = 1,
                       .parts = &part};
  return gs_ledger_reserve(l, &a, 0);
}

static void test_each_change_told_once(void **state) {
  struct gs_ledger *l = two_nodes();
  const struct gs_node *a = gs_ledger_node_get(l, "a"), *b = gs_ledger_node_get(l, "b");
  const struct gs_node *got[8];
  struct gs_host host = {1000, 0, 1024, 0};
  uint64_t g0 = gs_ledger_gen(l), g1;
  (void)state;
  assert_int_equal(gs_ledger_changed_since(l, g0, got, 8), 0);
  assert_int_equal(put(l, "a", "p1", 4), GS_EOK);
  assert_int_equal(put(l, "a", "p2", 4), GS_EOK);
  assert_int_equal(gs_ledger_changed_since(l, g0, got, 8), 1); /* a, once */
  assert_ptr_equal(got[0], a);
  g1 = gs_ledger_gen(l);
  assert_int_equal(g1, g0 + 2);
  assert_int_equal(gs_ledger_confirm(l, "p1"), GS_EOK); /* the view does not change */
  assert_int_equal(gs_ledger_changed_since(l, g1, got, 8), 0);
  assert_int_equal(gs_ledger_node_set_unhealthy(l, "b", 1), GS_EOK);
  assert_int_equal(gs_ledger_release(l, "p2"), GS_EOK);
  assert_int_equal(gs_ledger_node_set_host(l, "b", &host), GS_EOK);
  assert_int_equal(gs_ledger_changed_since(l, g1, got, 8), 2);
  assert_ptr_equal(got[0], b);
  assert_ptr_equal(got[1], a);
  /* refused changes change nothing */
  g1 = gs_ledger_gen(l);
  assert_int_equal(put(l, "a", "p1", 4), GS_EEXISTS);
  assert_int_equal(put(l, "b", "p9", 99), GS_ENOFIT);
  assert_int_equal(gs_ledger_gen(l), g1);
  /* the caller's max counts changes */
  assert_int_equal(gs_ledger_changed_since(l, g0, got, 4), SIZE_MAX);
  assert_int_equal(gs_ledger_changed_since(l, g0, got, 5), 2);
  gs_ledger_free(l);
}

static void test_node_set_changes_end_the_answers(void **state) {
  struct gs_ledger *l = two_nodes();
  struct gs_node_spec c = gs_test_node("c", GS_MODE_SHARE, 1, 16);
  struct gs_node_spec a2 = gs_test_node("a", GS_MODE_SHARE, 1, 16);
  const struct gs_node *got[8];
  uint64_t g0 = gs_ledger_gen(l), g1;
  (void)state;
  assert_int_equal(gs_ledger_node_upsert(l, &a2), GS_EOK); /* an update: told */
  assert_int_equal(gs_ledger_changed_since(l, g0, got, 8), 1);
  assert_int_equal(gs_ledger_node_upsert(l, &c), GS_EOK); /* added: not */
  assert_int_equal(gs_ledger_changed_since(l, g0, got, 8), SIZE_MAX);
  g1 = gs_ledger_gen(l);
  assert_int_equal(gs_ledger_changed_since(l, g1, got, 8), 0);
  assert_int_equal(gs_ledger_node_remove(l, "b"), GS_EOK);
  assert_int_equal(gs_ledger_changed_since(l, g1, got, 8), SIZE_MAX);
  assert_int_equal(gs_ledger_changed_since(l, gs_ledger_gen(l) + 1, got, 8), SIZE_MAX);
  gs_ledger_free(l);
}

static void test_too_far_behind(void **state) {
  struct gs_ledger *l = two_nodes();
  static const struct gs_node *got[GS_LEDGER_CHANGES_MAX + 8];
  uint64_t g0 = gs_ledger_gen(l);
  (void)state;
  for (unsigned i = 0; i < GS_LEDGER_CHANGES_MAX; i++)
    assert_int_equal(gs_ledger_node_set_unhealthy(l, i % 2 ? "a" : "b", i % 4), GS_EOK);
  assert_int_equal(gs_ledger_changed_since(l, g0, got, GS_LEDGER_CHANGES_MAX + 8), 2);
  assert_int_equal(gs_ledger_node_set_unhealthy(l, "a", 0), GS_EOK);
  assert_int_equal(gs_ledger_changed_since(l, g0, got, GS_LEDGER_CHANGES_MAX + 8), SIZE_MAX);
  assert_int_equal(gs_ledger_changed_since(l, g0 + 1, got, GS_LEDGER_CHANGES_MAX + 8), 2);
  gs_ledger_free(l);
}

GS_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_each_change_told_once),
             cmocka_unit_test(test_node_set_changes_end_the_answers),
             cmocka_unit_test(test_too_far_behind))
