/* PodDisruptionBudgets and pods' labels and requests, from the objects the
 * watches deliver through the feed to the service's preemption (issue 34):
 * a budget moves the choice, a violation is counted, kube-scheduler's
 * victim without a GPU counts too, a bad budget is refused and forgotten. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "api.h"
#include "feed.h"
#include "host.h"

#include "../test_json.h"
#include "../testutil.h"

#include <stdio.h>
#include <string.h>

static void feed_pdb(struct gs_sched *s, const char *text) {
  json_t *v = gs_test_json(text);
  gs__feed_pdb(s, v);
  json_decref(v);
}

static void bound(struct gs_sched *s, const char *uid, uint32_t gpu, uint64_t gib) {
  struct gs_alloc_part part;
  struct gs_alloc a = gs_test_bound_mem(&part, uid, "n", gpu, gib);
  assert_int_equal(gs_sched_pod_bound(s, &a), GS_EOK);
}

/* A pod object bound to n with labels, as the watch delivers it (to the
 * extender's host view too when h is not NULL, as its sink does). */
static void feed_pod(struct gs_sched *s, struct gs__hosts *h, const char *uid,
                     const char *labels, const char *cpu) {
  char text[1024];
  json_t *v;
  snprintf(text, sizeof text,
           "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"%s\","
           "\"labels\":%s},\"spec\":{\"nodeName\":\"n\",\"containers\":[{\"name\":\"c\","
           "\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]},\"status\":{\"phase\":\"Running\"}}",
           uid, uid, labels, cpu);
  v = gs_test_json(text);
  gs__feed_pod(s, v);
  if (h != NULL)
    gs__hosts_pod(h, v);
  json_decref(v);
}

static void offer(struct gs_sched *s, const char *const *proposed, size_t np,
                  struct gs_preempt_answer *ret) {
  struct gs_pod_request p = gs_test_mem_pod("hi", 16, 1);
  struct gs_preempt_offer o = {"n", proposed, np};
  p.priority = 100;
  assert_int_equal(gs_sched_preempt(s, &p, &o, 1, ret), GS_EOK);
}

/* offer's answer: the node kept, nvictims victims (the GPU pods in order,
 * kube-scheduler's after them) whose names joined by commas end with want
 * (NULL: any), and violations of budgets. */
static void offered(struct gs_sched *s, const char *const *proposed, size_t np, size_t nvictims,
                    const char *want, uint32_t violations) {
  struct gs_preempt_answer a;
  char got[256] = "";
  offer(s, proposed, np, &a);
  assert_true(a.keep);
  assert_int_equal(a.nvictims, nvictims);
  for (size_t i = 0; i < a.nvictims; i++)
    snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? "," : "", a.victims[i]);
  if (want != NULL)
    assert_string_equal(got + (strlen(got) > strlen(want) ? strlen(got) - strlen(want) : 0),
                        want);
  assert_int_equal(a.pdb_violations, violations);
  gs_sched_preempt_free(&a, 1);
}

static void test_budgets_through_the_feed(void **state) {
  struct gs_policy policy;
  struct gs_sched *s;
  struct gs_node_spec spec = gs_test_node("n", GS_MODE_SHARE, 2, 32);
  static const char *db_pdb =
      "{\"metadata\":{\"name\":\"db\",\"namespace\":\"default\"},"
      "\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"db\"},"
      "\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"a\",\"b\"]}]}},"
      "\"status\":{\"disruptionsAllowed\":0}}";
  (void)state;
  gs_policy_init(&policy);
  s = gs_sched_new(&policy);
  assert_non_null(s);
  assert_int_equal(gs_sched_node_upsert(s, &spec), GS_EOK);
  bound(s, "v0", 0, 16);
  bound(s, "v1", 1, 16);
  feed_pod(s, NULL, "v0", "{\"app\":\"db\",\"tier\":\"a\"}", "1");
  feed_pod(s, NULL, "v1", "{\"app\":\"web\"}", "1");
  /* no budget: GPU 0's pod (the order) */
  offered(s, NULL, 0, 1, "v0", 0);
  /* v0 protected: v1 instead, nothing violated */
  feed_pdb(s, db_pdb);
  offered(s, NULL, 0, 1, "v1", 0);
  /* v1 protected too (a NotIn budget over what is not db): one set, one violation */
  feed_pdb(s, "{\"metadata\":{\"name\":\"rest\",\"namespace\":\"default\"},"
              "\"spec\":{\"selector\":{\"matchExpressions\":[{\"key\":\"app\","
              "\"operator\":\"NotIn\",\"values\":[\"db\"]}]}}}");
  offered(s, NULL, 0, 1, NULL, 1);
  /* kube-scheduler's victim without a GPU, selected by "rest": counted */
  feed_pod(s, NULL, "cpu-only", "{\"app\":\"batch\"}", "2");
  {
    static const char *const proposed[] = {"cpu-only"};
    offered(s, proposed, 1, 2, ",cpu-only", 2);
  }
  /* the budgets gone: nothing violated */
  {
    json_t *v = gs_test_json("{\"metadata\":{\"name\":\"rest\",\"namespace\":\"default\"}}");
    gs__feed_pdb_delete(s, v);
    json_decref(v);
  }
  /* an unknown operator: refused, and the budget of that name forgotten */
  feed_pdb(s, "{\"metadata\":{\"name\":\"db\",\"namespace\":\"default\"},"
              "\"spec\":{\"selector\":{\"matchExpressions\":[{\"key\":\"app\","
              "\"operator\":\"Gt\",\"values\":[\"1\"]}]}}}");
  offered(s, NULL, 0, 1, "v0", 0);
  /* a pod gone takes its labels along: budgets cannot select it */
  gs_sched_pod_gone(s, "v0");
  gs_sched_free(s);
}

/* The extender's host view (host.h, the one frag weighs too): the node's
 * allocatable from its object, its requests from the pods'. A preemptor
 * needing 6 CPUs on a node of 8, all requested: GPU 0's pod frees 2, GPU
 * 1's 6: GPU 1's goes. Needing 9: no set frees it, the node is dropped. */
static void test_host_from_the_feed(void **state) {
  struct gs_policy policy;
  struct gs_sched *s;
  struct gs__hosts *h;
  struct gs_preempt_answer a;
  struct gs_pod_request p = gs_test_mem_pod("hi", 16, 1);
  struct gs_preempt_offer o = {"n", NULL, 0};
  json_t *node = gs_test_json(
      "{\"metadata\":{\"name\":\"n\",\"labels\":{\"ack.node.gpu.schedule\":\"share\"}},"
      "\"status\":{\"capacity\":{\"aliyun.com/gpu-mem\":\"32\",\"aliyun.com/gpu-count\":\"2\","
      "\"cpu\":\"8\",\"memory\":\"64Gi\"},\"allocatable\":{\"aliyun.com/gpu-mem\":\"32\","
      "\"aliyun.com/gpu-count\":\"2\",\"cpu\":\"8\",\"memory\":\"64Gi\"}}}");
  (void)state;
  gs_policy_init(&policy);
  s = gs_sched_new(&policy);
  assert_non_null(s);
  h = gs__hosts_new(s);
  assert_non_null(h);
  gs__feed_node(s, node);
  gs__hosts_node(h, node);
  bound(s, "v0", 0, 16);
  bound(s, "v1", 1, 16);
  feed_pod(s, h, "v0", "{}", "2");
  feed_pod(s, h, "v1", "{}", "6");
  p.priority = 100;
  p.cpu_milli = 6000;
  assert_int_equal(gs_sched_preempt(s, &p, &o, 1, &a), GS_EOK);
  assert_true(a.keep);
  assert_int_equal(a.nvictims, 1);
  assert_string_equal(a.victims[0], "v1");
  gs_sched_preempt_free(&a, 1);
  p.cpu_milli = 9000;
  assert_int_equal(gs_sched_preempt(s, &p, &o, 1, &a), GS_EOK);
  assert_false(a.keep);
  assert_string_equal(a.reason, "lower-priority pods free GPUs for the pod but not its CPU and "
                                "memory on the node");
  /* no allocatable on the object: the host unknown, not checked */
  json_object_del(json_object_get(node, "status"), "allocatable");
  gs__feed_node(s, node);
  gs__hosts_node(h, node);
  assert_int_equal(gs_sched_preempt(s, &p, &o, 1, &a), GS_EOK);
  assert_true(a.keep);
  assert_string_equal(a.victims[0], "v0");
  gs_sched_preempt_free(&a, 1);
  json_decref(node);
  gs__hosts_free(h);
  gs_sched_free(s);
}

static void test_pdb_decode(void **state) {
  struct gs_api_pdb d;
  struct gs_diag diag = {"", ""};
  json_t *v;
  char labels[64];
  (void)state;
  v = gs_test_json("{\"metadata\":{\"name\":\"x\",\"namespace\":\"ns\"},\"spec\":{\"selector\":{"
            "\"matchLabels\":{\"a\":\"1\"},\"matchExpressions\":["
            "{\"key\":\"b\",\"operator\":\"NotIn\",\"values\":[\"2\",\"3\"]},"
            "{\"key\":\"c\",\"operator\":\"Exists\"},"
            "{\"key\":\"d\",\"operator\":\"DoesNotExist\"}]}},"
            "\"status\":{\"disruptionsAllowed\":2}}");
  assert_int_equal(gs_api_pdb_decode(v, &d, &diag), GS_EOK);
  assert_string_equal(d.ns, "ns");
  assert_string_equal(d.selector, "=a=1\n!b=2,3\n+c\n-d\n");
  assert_false(d.selector_null);
  assert_int_equal(d.allowed, 2);
  json_decref(v);
  /* no selector selects nothing; status absent: no disruption allowed */
  v = gs_test_json("{\"metadata\":{\"name\":\"x\"},\"spec\":{}}");
  assert_int_equal(gs_api_pdb_decode(v, &d, &diag), GS_EOK);
  assert_true(d.selector_null);
  assert_string_equal(d.ns, "default");
  assert_int_equal(d.allowed, 0);
  json_decref(v);
  v = gs_test_json("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"selector\":{\"matchExpressions\":"
            "[{\"key\":\"b\",\"operator\":\"In\"}]}}}");
  assert_int_equal(gs_api_pdb_decode(v, &d, &diag), GS_EPARSE);
  assert_string_equal(diag.where, "PodDisruptionBudget.spec.selector.matchExpressions[0]");
  assert_string_equal(diag.text, "operator In needs values");
  json_decref(v);
  v = gs_test_json("{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":\"\"}}}");
  assert_int_equal(gs_api_pod_labels_text(v, labels, sizeof labels), GS_EOK);
  assert_string_equal(labels, "a=1\nb=\n");
  assert_int_equal(gs_api_pod_labels_text(v, labels, 5), GS_ETOOBIG);
  json_decref(v);
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_budgets_through_the_feed),
             cmocka_unit_test(test_host_from_the_feed),
             cmocka_unit_test(test_pdb_decode))
