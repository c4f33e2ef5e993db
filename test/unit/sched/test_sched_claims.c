/* The service's DRA claims (gs_sched_claim_set / gs_sched_claim_gone,
 * docs/dra.md): kept until the node comes, moved in one step, never mixed
 * up with a pod's allocation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <gpushare/sched.h>

#include <stdio.h>
#include <string.h>

static void node(struct gs_sched *s, const char *name) {
  struct gs_node_spec spec;
  memset(&spec, 0, sizeof spec);
  snprintf(spec.name, sizeof spec.name, "%s", name);
  spec.mode = GS_MODE_SHARE;
  spec.gpu_count = 2;
  spec.gpu_mem_units = 32;
  assert_int_equal(gs_sched_node_upsert(s, &spec), GS_EOK);
}

struct used {
  const char *node;
  uint64_t mib[2];
  const struct gs_alloc *dummy;
  int kind; /* of uid "x", -1 when absent */
};
static void used_fn(const struct gs_ledger *l, void *arg) {
  struct used *u = arg;
  const struct gs_node *n = gs_ledger_node_get(l, u->node);
  const struct gs_alloc *a = gs_ledger_alloc_get(l, "x");
  u->mib[0] = n ? n->gpus[0].used_mib : 0;
  u->mib[1] = n ? n->gpus[1].used_mib : 0;
  u->kind = a ? (int)a->kind : -1;
}
static struct used used(struct gs_sched *s, const char *n) {
  struct used u = {n, {0, 0}, NULL, -1};
  gs_sched_read(s, used_fn, NULL, &u);
  return u;
}

static struct gs_alloc claim(const char *node, const struct gs_alloc_part *p) {
  return (struct gs_alloc){.ns = "t", .name = "c", .uid = "x", .node = node,
                           .kind = GS_ALLOC_CLAIM, .state = GS_ALLOC_BOUND,
                           .unit_mib = GS_CLAIM_UNIT_MIB, .nparts = 1, .parts = p};
}

static void test_kept_moved_and_gone(void **state) {
  struct gs_policy pol;
  struct gs_sched *s;
  struct gs_alloc_part p = {0, 1, 3000};
  struct gs_alloc c = claim("b", &p);
  (void)state;
  gs_policy_init(&pol);
  s = gs_sched_new(&pol);
  node(s, "a");
  /* node b unknown: kept, charged when b comes */
  assert_int_equal(gs_sched_claim_set(s, &c), GS_EAGAIN);
  assert_int_equal(gs_sched_kept_count(s), 1);
  node(s, "b");
  assert_int_equal(gs_sched_kept_count(s), 0);
  assert_int_equal(used(s, "b").mib[1], 3000);
  /* moved to a: b freed in the same step */
  c.node = "a";
  assert_int_equal(gs_sched_claim_set(s, &c), GS_EOK);
  assert_int_equal(used(s, "b").mib[1], 0);
  assert_int_equal(used(s, "a").mib[1], 3000);
  /* moved to an unknown node: a freed, kept for later */
  c.node = "zz";
  assert_int_equal(gs_sched_claim_set(s, &c), GS_EAGAIN);
  assert_int_equal(used(s, "a").mib[1], 0);
  gs_sched_claim_gone(s, "x");
  assert_int_equal(gs_sched_kept_count(s), 0);
  node(s, "zz");
  assert_int_equal(used(s, "zz").mib[1], 0);
  /* a pod's shape is not a claim's */
  c.kind = GS_ALLOC_MEM;
  assert_int_equal(gs_sched_claim_set(s, &c), GS_EINVAL);
  gs_sched_free(s);
}

static void test_a_pods_uid_is_never_a_claims(void **state) {
  struct gs_policy pol;
  struct gs_sched *s;
  struct gs_alloc_part pp = {0, 0, 2}, cp = {0, 1, 1024};
  struct gs_alloc pod = {.ns = "d", .name = "p", .uid = "x", .node = "a", .kind = GS_ALLOC_MEM,
                         .state = GS_ALLOC_BOUND, .unit_mib = 1024, .nparts = 1, .parts = &pp};
  struct gs_alloc c = claim("a", &cp);
  (void)state;
  gs_policy_init(&pol);
  s = gs_sched_new(&pol);
  node(s, "a");
  assert_int_equal(gs_sched_pod_bound(s, &pod), GS_EOK);
  assert_int_equal(gs_sched_claim_set(s, &c), GS_EEXISTS);
  gs_sched_claim_gone(s, "x"); /* a claim's end never frees a pod */
  assert_int_equal(used(s, "a").mib[0], 2048);
  assert_int_equal(used(s, "a").mib[1], 0);
  assert_int_equal(used(s, "a").kind, GS_ALLOC_MEM);
  gs_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kept_moved_and_gone),
      cmocka_unit_test(test_a_pods_uid_is_never_a_claims),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
