/* The service's DRA claims (gs_sched_claim_set / gs_sched_claim_gone,
 * docs/dra.md): kept until the node comes, moved in one step, never mixed
 * up with a pod's allocation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include <gpushare/claim.h>
#include <gpushare/sched.h>

#include "../testutil.h"

#include <stdio.h>
#include <string.h>

static void node(struct gs_sched *s, const char *name) {
  struct gs_node_spec spec = gs_test_node(name, GS_MODE_SHARE, 2, 32);
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

/* gpushare placing claims: reserved at once, never re-picked, replaced by
 * the allocation the feed sees, or expired / dropped. */
static void test_reserve(void **state) {
  struct gs_policy pol;
  struct gs_sched *s;
  const char *nodes[] = {"a"};
  struct gs_claim_request req = {4096, 1};
  struct gs_claim_choice c;
  struct gs_status st;
  char uid[8];
  (void)state;
  gs_policy_init(&pol);
  s = gs_sched_new(&pol);
  node(s, "a");
  for (int i = 0; i < 4; i++) {
    snprintf(uid, sizeof uid, "r%d", i);
    assert_int_equal(gs_sched_claim_reserve(s, NULL, nodes, 1, &req, "t", uid, uid, 100, &c, &st),
                     GS_EOK);
    assert_string_equal(c.node, "a");
    assert_int_equal(c.choice.gpus[0], 0); /* binpack: all four on GPU 0 */
  }
  assert_int_equal(used(s, "a").mib[0], 16384);
  /* a retried reserve answers the same GPUs and charges nothing more */
  assert_int_equal(gs_sched_claim_reserve(s, NULL, nodes, 1, &req, "t", "r3", "r3", 200, &c, &st),
                   GS_EOK);
  assert_int_equal(c.choice.gpus[0], 0);
  assert_int_equal(c.choice.mib_per_gpu, 4096);
  assert_int_equal(used(s, "a").mib[0], 16384);
  /* the feed sees r0's allocation: bound, it no longer expires */
  {
    struct gs_alloc_part p = {0, 0, 4096};
    struct gs_alloc a = {.ns = "t", .name = "r0", .uid = "r0", .node = "a",
                         .kind = GS_ALLOC_CLAIM, .state = GS_ALLOC_BOUND,
                         .unit_mib = GS_CLAIM_UNIT_MIB, .nparts = 1, .parts = &p};
    assert_int_equal(gs_sched_claim_set(s, &a), GS_EOK);
  }
  gs_sched_claim_gone(s, "r1"); /* the front end dropped it */
  assert_int_equal(gs_sched_expire_assumed(s, 100 + 1000, 500), 2); /* r2, r3 */
  assert_int_equal(used(s, "a").mib[0], 4096);
  /* 8 GiB over 2 GPUs: 4 + 4; no room for 2 × 14 GiB */
  req = (struct gs_claim_request){4096, 2};
  assert_int_equal(gs_sched_claim_reserve(s, NULL, nodes, 1, &req, "t", "pair", "pair", 0, &c, &st),
                   GS_EOK);
  assert_int_equal(c.choice.ngpus, 2);
  req = (struct gs_claim_request){14 * 1024, 2};
  assert_int_equal(gs_sched_claim_reserve(s, NULL, nodes, 1, &req, "t", "big", "big", 0, &c, &st),
                   GS_ENOFIT);
  assert_int_equal(st.why, GS_R_INSUFFICIENT_GPU_MEMORY);
  gs_sched_free(s);
}

/* gs_sched_claim_filter: each node's verdict and score for a claim, as
 * reserve would weigh it; nothing charged. */
static void test_filter(void **state) {
  struct gs_policy pol;
  struct gs_sched *s;
  const char *nodes[] = {"a", "b", "nope"};
  struct gs_claim_request req = {4096, 1};
  struct gs_claim_choice c;
  struct gs_status st;
  struct gs_node_result res[3];
  (void)state;
  gs_policy_init(&pol);
  s = gs_sched_new(&pol);
  node(s, "a");
  node(s, "b");
  assert_int_equal(gs_sched_claim_reserve(s, NULL, nodes, 1, &req, "t", "r", "r", 0, &c, &st), GS_EOK);
  assert_int_equal(gs_sched_claim_filter(s, NULL, nodes, 3, &req, res), GS_EOK);
  assert_int_equal(res[0].code, GS_EOK);
  assert_int_equal(res[1].code, GS_EOK);
  assert_int_equal(res[2].code, GS_ENOFIT);
  assert_int_equal(res[2].why, GS_R_NODE_UNKNOWN);
  /* binpack: the node with a claim already scores higher */
  assert_true(res[0].score100 > res[1].score100);
  assert_true(res[0].score100 <= 100);
  assert_int_equal(used(s, "b").mib[0], 0); /* filter charged nothing */
  /* 2 × 16 GiB: only b (a holds 4 GiB) */
  req = (struct gs_claim_request){16384, 2};
  assert_int_equal(gs_sched_claim_filter(s, NULL, nodes, 2, &req, res), GS_EOK);
  assert_int_equal(res[0].code, GS_ENOFIT);
  assert_int_equal(res[1].code, GS_EOK);
  /* whole devices: a has one untouched GPU, b two; binpack prefers a for one */
  req = (struct gs_claim_request){0, 1};
  assert_int_equal(gs_sched_claim_filter(s, NULL, nodes, 2, &req, res), GS_EOK);
  assert_true(res[0].score100 > res[1].score100);
  /* a request no node could hold; bad arguments */
  req = (struct gs_claim_request){4096, 0};
  assert_int_equal(gs_sched_claim_filter(s, NULL, nodes, 2, &req, res), GS_ENOFIT);
  assert_int_equal(res[0].code, GS_EUNRESOLVABLE);
  assert_int_equal(gs_sched_claim_filter(s, NULL, NULL, 2, &req, res), GS_EINVAL);
  gs_sched_free(s);
}

/* A gang of claim pods waits in Permit until every member asked; a member
 * that leaves stops counting; once released, the job never waits again. */
static void test_gang(void **state) {
  struct gs_policy pol;
  struct gs_sched *s;
  struct gs_status st;
  (void)state;
  gs_policy_init(&pol);
  s = gs_sched_new(&pol);
  assert_int_equal(gs_sched_claim_gang_permit(s, "t", "j", 3, "a", &st), GS_EWAIT);
  assert_string_equal(st.reason, "waiting for the job t/j: 1 of 3 members reserved");
  assert_int_equal(gs_sched_claim_gang_permit(s, "t", "j", 3, "b", &st), GS_EWAIT);
  assert_int_equal(gs_sched_claim_gang_permit(s, "t", "j", 3, "a", &st), GS_EWAIT); /* asked again */
  gs_sched_claim_gang_leave(s, "b"); /* b's reservation given back (a timeout) */
  assert_int_equal(gs_sched_claim_gang_permit(s, "t", "j", 3, "c", &st), GS_EWAIT);
  assert_string_equal(st.reason, "waiting for the job t/j: 2 of 3 members reserved");
  /* the same job name in another namespace is another job */
  assert_int_equal(gs_sched_claim_gang_permit(s, "u", "j", 3, "x", &st), GS_EWAIT);
  assert_int_equal(gs_sched_claim_gang_permit(s, "t", "j", 3, "b", &st), GS_EOK);
  /* released: the others are let go when they ask again, even after one is gone */
  gs_sched_pod_gone(s, "b");
  assert_int_equal(gs_sched_claim_gang_permit(s, "t", "j", 3, "a", &st), GS_EOK);
  assert_int_equal(gs_sched_claim_gang_permit(s, "t", "j", 3, "c", &st), GS_EOK);
  assert_int_equal(gs_sched_claim_gang_permit(s, "u", "j", 3, "x", &st), GS_EWAIT);
  /* every member gone: the name starts a new job */
  gs_sched_pod_gone(s, "a");
  gs_sched_pod_gone(s, "c");
  assert_int_equal(gs_sched_claim_gang_permit(s, "t", "j", 2, "d", &st), GS_EWAIT);
  assert_int_equal(gs_sched_claim_gang_permit(s, "t", "j", 0, "e", &st), GS_EINVAL);
  assert_int_equal(gs_sched_claim_gang_permit(s, "t", "", 2, "e", &st), GS_EINVAL);
  gs_sched_free(s);
}

/* Claim pods of a job of gpushare's labels scored as their claim's shape
 * (gs_sched_claim_shape): the shape is no gang member, so the gang plugin
 * makes no plan for it — its placeholders would charge the ledger beside
 * the claims (seen in test_real_plugin_claims' gang case: every claim
 * counted twice). */
static void test_a_claim_gangs_shape_plans_nothing(void **state) {
  struct gs_policy pol;
  struct gs_sched *s;
  const char *nodes[] = {"a"};
  struct gs_claim_request req = {4096, 1};
  struct gs_node_result res[1];
  (void)state;
  gs_policy_init(&pol);
  s = gs_sched_new(&pol);
  node(s, "a");
  for (int i = 0; i < 3; i++) {
    char name[8];
    struct gs_pod_request m;
    snprintf(name, sizeof name, "m%d", i);
    m = gs_test_pod(name, name);
    snprintf(m.gang_job, sizeof m.gang_job, "j");
    m.gang_replicas = 3;
    assert_true(gs_sched_claim_shape(s, &req, &m));
    assert_string_equal(m.gang_job, "");
    assert_int_equal(gs_sched_filter(s, &m, nodes, 1, 0, res), GS_EOK);
    assert_int_equal(res[0].code, GS_EOK);
  }
  assert_int_equal(gs_sched_plans_waiting(s), 0);
  assert_int_equal(used(s, "a").mib[0], 0);
  assert_int_equal(used(s, "a").mib[1], 0);
  gs_sched_free(s);
}

GS_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_kept_moved_and_gone),
             cmocka_unit_test(test_a_pods_uid_is_never_a_claims), cmocka_unit_test(test_reserve),
             cmocka_unit_test(test_filter), cmocka_unit_test(test_gang),
             cmocka_unit_test(test_a_claim_gangs_shape_plans_nothing))
