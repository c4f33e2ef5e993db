/* The scheduler service (include/gpushare/sched.h): reconciliation of nodes
 * and pods (pods kept until their node comes, unhealthy GPUs recorded ahead
 * of their node) and the bind orchestration as one call, with a binder that
 * records what the cluster was asked to write. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <gpushare/annot.h>
#include <gpushare/sched.h>

#include "../testutil.h"

#include <stdio.h>
#include <string.h>

#define NOW INT64_C(1700000000000000000)

struct rec_binder {
  int calls;
  enum gs_err answer;
  char node[GS_NAME_MAX + 1];
  char alloc[256];
  const char *why; /* the error text; NULL: "apiserver said no" */
};

static enum gs_err rec_bind(void *ctx, const struct gs_pod_request *pod, const char *node,
                            const struct gs_annotations *annots, struct gs_diag *diag) {
  struct rec_binder *b = ctx;
  const char *a = gs_annotations_get(annots, GS_ANN_ALLOCATION);
  (void)pod;
  b->calls++;
  snprintf(b->node, sizeof b->node, "%s", node);
  snprintf(b->alloc, sizeof b->alloc, "%s", a ? a : "");
  if (b->answer != GS_EOK)
    gs_diag_set(diag, "", "%s", b->why ? b->why : "apiserver said no");
  return b->answer;
}

static struct gs_sched *sched_new(void) {
  struct gs_policy policy;
  gs_policy_init(&policy);
  return gs_sched_new(&policy);
}

static uint64_t used_mib(struct gs_sched *s, const char *node, uint32_t gpu) {
  struct gs_test_used c = {node, gpu, 0};
  gs_sched_read(s, gs_test_used_fn, NULL, &c);
  return c.used;
}

static void test_pod_seen_before_its_node_is_kept_then_restored(void **state) {
  struct gs_sched *s = sched_new();
  struct gs_node_spec n = gs_test_node("late", GS_MODE_SHARE, 2, 32);
  struct gs_alloc_part parts[] = {{0, 1, 3}};
  struct gs_alloc a = {"default", "early", "uid-early", "late", GS_ALLOC_MEM, GS_ALLOC_BOUND,
                       1024, NOW, 1, parts, 0, 0};
  (void)state;
  assert_int_equal(gs_sched_pod_bound(s, &a), GS_EAGAIN);
  assert_int_equal(gs_sched_kept_count(s), 1);
  assert_int_equal(gs_sched_retry_kept(s), 1); /* still no node */
  assert_int_equal(gs_sched_node_upsert(s, &n), GS_EOK);
  assert_int_equal(gs_sched_kept_count(s), 0);
  assert_int_equal(used_mib(s, "late", 0), 0);
  assert_int_equal(used_mib(s, "late", 1), 3072);
  /* seen again (a resync): no double charge */
  assert_int_equal(gs_sched_pod_bound(s, &a), GS_EOK);
  assert_int_equal(used_mib(s, "late", 1), 3072);
  gs_sched_pod_gone(s, "uid-early");
  assert_int_equal(used_mib(s, "late", 1), 0);
  gs_sched_free(s);
}

static void test_a_kept_pod_that_goes_is_never_restored(void **state) {
  struct gs_sched *s = sched_new();
  struct gs_node_spec n = gs_test_node("late", GS_MODE_SHARE, 1, 16);
  struct gs_alloc_part parts[] = {{0, 0, 4}};
  struct gs_alloc a = {"default", "gone", "uid-gone", "late", GS_ALLOC_MEM, GS_ALLOC_BOUND,
                       1024, NOW, 1, parts, 0, 0};
  (void)state;
  assert_int_equal(gs_sched_pod_bound(s, &a), GS_EAGAIN);
  gs_sched_pod_gone(s, "uid-gone");
  assert_int_equal(gs_sched_kept_count(s), 0);
  assert_int_equal(gs_sched_node_upsert(s, &n), GS_EOK);
  assert_int_equal(used_mib(s, "late", 0), 0);
  gs_sched_free(s);
}

/* Pods seen before their nodes are kept per node: a node's arrival restores
 * its own pods only (start-up: every pod may come before every node). */
static void test_kept_pods_are_restored_node_by_node(void **state) {
  struct gs_sched *s = sched_new();
  static const char *const nodes[] = {"n-a", "n-b", "n-c"};
  struct gs_alloc_part parts[] = {{0, 0, 1}};
  char uids[12][16];
  (void)state;
  for (int i = 0; i < 12; i++) {
    struct gs_alloc a = {"default", uids[i], uids[i], nodes[i % 3], GS_ALLOC_MEM, GS_ALLOC_BOUND,
                         1024, NOW, 1, parts, 0, 0};
    snprintf(uids[i], sizeof uids[i], "u%d", i);
    assert_int_equal(gs_sched_pod_bound(s, &a), GS_EAGAIN);
  }
  assert_int_equal(gs_sched_kept_count(s), 12);
  {
    struct gs_node_spec b = gs_test_node("n-b", GS_MODE_SHARE, 1, 16);
    assert_int_equal(gs_sched_node_upsert(s, &b), GS_EOK);
  }
  assert_int_equal(gs_sched_kept_count(s), 8);
  assert_int_equal(used_mib(s, "n-b", 0), 4 * 1024);
  gs_sched_pod_gone(s, "u0"); /* one of n-a's */
  assert_int_equal(gs_sched_kept_count(s), 7);
  for (int i = 0; i < 3; i += 2) {
    struct gs_node_spec n = gs_test_node(nodes[i], GS_MODE_SHARE, 1, 16);
    assert_int_equal(gs_sched_node_upsert(s, &n), GS_EOK);
  }
  assert_int_equal(gs_sched_kept_count(s), 0);
  assert_int_equal(gs_sched_retry_kept(s), 0);
  assert_int_equal(used_mib(s, "n-a", 0), 3 * 1024);
  assert_int_equal(used_mib(s, "n-c", 0), 4 * 1024);
  gs_sched_free(s);
}

static void test_unhealthy_gpus_recorded_before_the_node_apply_when_it_comes(void **state) {
  struct gs_sched *s = sched_new();
  struct gs_node_spec n = gs_test_node("sick", GS_MODE_SHARE, 2, 32);
  struct gs_pod_request p = gs_test_mem_pod("p", 4, 1);
  const char *nodes[] = {"sick"};
  struct gs_node_result r;
  struct rec_binder rb = {0, GS_EOK, "", "", NULL};
  struct gs_binder b = {rec_bind, &rb};
  struct gs_sched_bind_result res;
  (void)state;
  assert_int_equal(gs_sched_set_unhealthy(s, "sick", 0x1), GS_EOK);
  assert_int_equal(gs_sched_node_upsert(s, &n), GS_EOK);
  assert_int_equal(gs_sched_filter(s, &p, nodes, 1, NOW, &r), GS_EOK);
  assert_int_equal(r.code, GS_EOK);
  assert_int_equal(gs_sched_bind(s, &p, NULL, "sick", NOW, &b, &res), GS_EOK);
  assert_string_equal(rb.alloc, "{\"0\":{\"1\":4}}"); /* GPU 0 is unhealthy */
  gs_annotations_clear(&res.annots);
  /* both unhealthy: no room */
  assert_int_equal(gs_sched_set_unhealthy(s, "sick", 0x3), GS_EOK);
  assert_int_equal(gs_sched_filter(s, &p, nodes, 1, NOW, &r), GS_EOK);
  assert_int_equal(r.code, GS_ENOFIT);
  gs_sched_free(s);
}

static void test_bind_is_one_call_and_idempotent(void **state) {
  struct gs_sched *s = sched_new();
  struct gs_node_spec n = gs_test_node("gpu-a", GS_MODE_SHARE, 2, 32);
  struct gs_pod_request p = gs_test_mem_pod("p", 8, 2);
  struct rec_binder rb = {0, GS_EOK, "", "", NULL};
  struct gs_binder b = {rec_bind, &rb};
  struct gs_sched_bind_result res;
  (void)state;
  assert_int_equal(gs_sched_node_upsert(s, &n), GS_EOK);
  assert_int_equal(gs_sched_bind(s, &p, NULL, "gpu-a", NOW, &b, &res), GS_EOK);
  assert_true(res.bound);
  assert_false(res.already);
  assert_string_equal(res.diag.text, "");
  assert_string_equal(gs_annotations_get(&res.annots, GS_ANN_ALLOCATION), "{\"0\":{\"0\":4,\"1\":4}}");
  gs_annotations_clear(&res.annots);
  assert_int_equal(rb.calls, 1);
  assert_string_equal(rb.node, "gpu-a");
  assert_int_equal(used_mib(s, "gpu-a", 0), 4096);
  /* the same bind again, the pod now bound there: success, nothing written */
  assert_int_equal(gs_sched_bind(s, &p, "gpu-a", "gpu-a", NOW, &b, &res), GS_EOK);
  assert_true(res.already);
  assert_false(res.bound);
  assert_int_equal(rb.calls, 1);
  assert_int_equal(used_mib(s, "gpu-a", 0), 4096);
  /* bound elsewhere: refused, nothing changes */
  assert_int_equal(gs_sched_bind(s, &p, "gpu-b", "gpu-a", NOW, &b, &res), GS_ECONFLICT);
  assert_string_equal(res.diag.text, "pod default/p is already assigned to node gpu-b");
  assert_int_equal(rb.calls, 1);
  gs_sched_free(s);
}

static void test_a_failed_cluster_bind_is_undone(void **state) {
  struct gs_sched *s = sched_new();
  struct gs_node_spec n = gs_test_node("gpu-a", GS_MODE_SHARE, 1, 16);
  struct gs_pod_request p = gs_test_mem_pod("p", 6, 1);
  struct rec_binder rb = {0, GS_ETIMEOUT, "", "", NULL};
  struct gs_binder b = {rec_bind, &rb};
  struct gs_sched_bind_result res;
  (void)state;
  assert_int_equal(gs_sched_node_upsert(s, &n), GS_EOK);
  assert_int_equal(gs_sched_bind(s, &p, NULL, "gpu-a", NOW, &b, &res), GS_ETIMEOUT);
  assert_true(res.cluster_failed);
  assert_false(res.bound);
  assert_string_equal(res.diag.text, "binding to gpu-a failed: apiserver said no");
  assert_int_equal(used_mib(s, "gpu-a", 0), 0);
  /* the apiserver is back: the same pod binds */
  rb.answer = GS_EOK;
  assert_int_equal(gs_sched_bind(s, &p, NULL, "gpu-a", NOW, &b, &res), GS_EOK);
  gs_annotations_clear(&res.annots);
  assert_int_equal(used_mib(s, "gpu-a", 0), 6144);
  gs_sched_free(s);
}

/* The apiserver's whole answer reaches kube-scheduler: a reason of 700
 * bytes (long names and an RBAC message) is not cut. */
static void test_a_long_cluster_reason_is_kept(void **state) {
  struct gs_sched *s = sched_new();
  struct gs_node_spec n = gs_test_node("gpu-a", GS_MODE_SHARE, 1, 16);
  struct gs_pod_request p = gs_test_mem_pod("p", 6, 1);
  char why[701];
  struct rec_binder rb = {0, GS_EHTTP, "", "", why};
  struct gs_binder b = {rec_bind, &rb};
  struct gs_sched_bind_result res;
  (void)state;
  memset(why, 'x', sizeof why - 2);
  why[sizeof why - 2] = 'z';
  why[sizeof why - 1] = '\0';
  assert_int_equal(gs_sched_node_upsert(s, &n), GS_EOK);
  assert_int_equal(gs_sched_bind(s, &p, NULL, "gpu-a", NOW, &b, &res), GS_EHTTP);
  assert_true(res.cluster_failed);
  assert_int_equal(strlen(res.diag.text), strlen("binding to gpu-a failed: ") + 700);
  assert_int_equal(strncmp(res.diag.text, "binding to gpu-a failed: xxx", 28), 0);
  assert_int_equal(res.diag.text[strlen(res.diag.text) - 1], 'z');
  assert_int_equal(used_mib(s, "gpu-a", 0), 0);
  gs_sched_free(s);
}

static void test_no_room_never_reaches_the_cluster(void **state) {
  struct gs_sched *s = sched_new();
  struct gs_node_spec n = gs_test_node("gpu-a", GS_MODE_SHARE, 1, 16);
  struct gs_pod_request big = gs_test_mem_pod("big", 17, 1), odd = gs_test_mem_pod("odd", 9, 2);
  struct rec_binder rb = {0, GS_EOK, "", "", NULL};
  struct gs_binder b = {rec_bind, &rb};
  struct gs_sched_bind_result res;
  (void)state;
  assert_int_equal(gs_sched_node_upsert(s, &n), GS_EOK);
  assert_int_not_equal(gs_sched_bind(s, &big, NULL, "gpu-a", NOW, &b, &res), GS_EOK);
  assert_true(res.no_fit);
  assert_non_null(strstr(res.diag.text, "cannot bind pod default/big: "));
  assert_int_not_equal(gs_sched_bind(s, &odd, NULL, "gpu-a", NOW, &b, &res), GS_EOK);
  assert_true(res.no_fit);
  assert_non_null(strstr(res.diag.text, "9 is not divisible by aliyun.com/gpu-count 2"));
  assert_int_not_equal(gs_sched_bind(s, &big, NULL, "nowhere", NOW, &b, &res), GS_EOK);
  assert_string_equal(res.diag.text, "cannot bind pod default/big: node unknown to gpushare");
  assert_int_equal(rb.calls, 0);
  assert_int_equal(used_mib(s, "gpu-a", 0), 0);
  gs_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pod_seen_before_its_node_is_kept_then_restored),
      cmocka_unit_test(test_a_kept_pod_that_goes_is_never_restored),
      cmocka_unit_test(test_kept_pods_are_restored_node_by_node),
      cmocka_unit_test(test_unhealthy_gpus_recorded_before_the_node_apply_when_it_comes),
      cmocka_unit_test(test_bind_is_one_call_and_idempotent),
      cmocka_unit_test(test_a_failed_cluster_bind_is_undone),
      cmocka_unit_test(test_a_long_cluster_reason_is_kept),
      cmocka_unit_test(test_no_room_never_reaches_the_cluster),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
