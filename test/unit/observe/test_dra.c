/* The DRA feed (src/observe/dra.c, docs/dra.md): ResourceSlices and
 * ResourceClaims in either order become claim charges in the ledger; bad
 * input is reported and never charges less than the cluster holds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "dra_test.h"
#include "feed.h"
#include "metrics.h"

#include <gpushare/alloc.h>

#include "../testutil.h"

#include <stdio.h>
#include <string.h>

/* A share node of 2 GPUs × 16 GiB. */
static void node(struct gs_sched *s, const char *name) {
  char text[512];
  json_t *n;
  snprintf(text, sizeof text,
           "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"ack.node.gpu.schedule\":\"share\"}},"
           "\"status\":{\"capacity\":{\"aliyun.com/gpu-mem\":\"32\",\"aliyun.com/gpu-count\":\"2\"}}}",
           name);
  n = gs_test_json(text);
  gs__feed_node(s, n);
  json_decref(n);
}

/* A slice of node with devices gpu-0 (index 0) and gpu-1 (index 1), shared
 * by memory, and nic-0 (no gpushare attribute). */
static void slice(struct gs__dra *d, struct gs_sched *s, const char *name, const char *nodename,
                  bool del) {
  char text[2048];
  snprintf(text, sizeof text,
           "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"driver\":\"gpu.gpushare.io\","
           "\"pool\":{\"name\":\"%s\",\"generation\":1,\"resourceSliceCount\":1},"
           "\"nodeName\":\"%s\",\"devices\":["
           "{\"name\":\"gpu-0\",\"allowMultipleAllocations\":true,"
           "\"attributes\":{\"gpushare.io/index\":{\"int\":0}},"
           "\"capacity\":{\"memory\":{\"value\":\"16Gi\"}}},"
           "{\"name\":\"gpu-1\",\"allowMultipleAllocations\":true,"
           "\"attributes\":{\"gpushare.io/index\":{\"int\":1}},"
           "\"capacity\":{\"memory\":{\"value\":\"16Gi\"}}},"
           "{\"name\":\"gpu-9\",\"attributes\":{\"gpushare.io/index\":{\"int\":9}}},"
           "{\"name\":\"nic-0\",\"attributes\":{\"kind\":{\"string\":\"nic\"}}}]}}",
           name, nodename, nodename);
  dra_feed(d, s, text, del ? gs__dra_slice_delete : gs__dra_slice);
}

/* A claim allocated on results (a JSON list text; NULL: not allocated). */
static void claim(struct gs__dra *d, struct gs_sched *s, const char *uid, const char *results,
                  bool del) {
  char text[2048];
  if (results != NULL)
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"c-%s\",\"namespace\":\"team\",\"uid\":\"%s\"},"
             "\"status\":{\"allocation\":{\"devices\":{\"results\":%s}}}}",
             uid, uid, results);
  else
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"c-%s\",\"namespace\":\"team\",\"uid\":\"%s\"},"
             "\"status\":{}}",
             uid, uid);
  dra_feed(d, s, text, del ? gs__dra_claim_delete : gs__dra_claim);
}

#define RES(pool, dev, mem)                                                                   \
  "{\"request\":\"gpu\",\"driver\":\"gpu.gpushare.io\",\"pool\":\"" pool "\",\"device\":\"" dev \
  "\"" mem "}"
#define MEM(q) ",\"consumedCapacity\":{\"memory\":\"" q "\"}"

struct used_call {
  const char *node;
  uint64_t used[2];
  size_t claims;
};
static void used_fn(const struct gs_ledger *ledger, void *arg) {
  struct used_call *c = arg;
  const struct gs_node *n = gs_ledger_node_get(ledger, c->node);
  c->used[0] = c->used[1] = 0;
  c->claims = 0;
  if (n == NULL)
    return;
  for (uint32_t g = 0; g < n->ngpus && g < 2; g++)
    c->used[g] = n->gpus[g].used_mib;
  for (size_t i = 0; i < gs_ledger_node_alloc_count(ledger, c->node); i++)
    c->claims += gs_ledger_node_alloc_at(ledger, c->node, i)->kind == GS_ALLOC_CLAIM;
}

static struct used_call used(struct gs_sched *s, const char *nodename) {
  struct used_call c = {nodename, {0, 0}, 0};
  gs_sched_read(s, used_fn, NULL, &c);
  return c;
}

struct fixture {
  struct gs_sched *s;
  struct gs__dra *d;
};

static int setup(void **state) {
  static struct fixture f;
  struct gs_policy p;
  gs_policy_init(&p);
  f.s = gs_sched_new(&p);
  f.d = gs__dra_new();
  *state = &f;
  return f.s && f.d ? 0 : -1;
}

static int teardown(void **state) {
  struct fixture *f = *state;
  gs__dra_free(f->d);
  gs_sched_free(f->s);
  return 0;
}

static void test_claim_first_then_slice_then_gone(void **state) {
  struct fixture *f = *state;
  node(f->s, "n1");
  claim(f->d, f->s, "u1", "[" RES("n1", "gpu-1", MEM("4Gi")) "]", false);
  assert_int_equal(used(f->s, "n1").used[1], 0); /* no slice yet: unresolved */
  assert_int_equal(gs__dra_counts(f->d).unresolved, 1);
  slice(f->d, f->s, "n1-gpus", "n1", false);
  assert_int_equal(used(f->s, "n1").used[1], 4096);
  assert_int_equal(used(f->s, "n1").used[0], 0);
  assert_int_equal(gs__dra_counts(f->d).charged, 1);
  assert_int_equal(gs__dra_counts(f->d).unresolved, 0);
  /* deallocated: freed */
  claim(f->d, f->s, "u1", NULL, false);
  assert_int_equal(used(f->s, "n1").used[1], 0);
  assert_int_equal(used(f->s, "n1").claims, 0);
  /* allocated again (1500Mi rounds to MiB as is), then deleted */
  claim(f->d, f->s, "u1", "[" RES("n1", "gpu-0", MEM("1500Mi")) "]", false);
  assert_int_equal(used(f->s, "n1").used[0], 1500);
  claim(f->d, f->s, "u1", NULL, true);
  assert_int_equal(used(f->s, "n1").used[0], 0);
  assert_int_equal(gs__dra_counts(f->d).claims, 0);
}

/* A claim at resourceVersion rv, allocated on results (NULL: not). */
static void claim_rv(struct gs__dra *d, struct gs_sched *s, const char *uid, const char *rv,
                     const char *results) {
  char text[2048];
  snprintf(text, sizeof text,
           "{\"metadata\":{\"name\":\"c-%s\",\"namespace\":\"team\",\"uid\":\"%s\","
           "\"resourceVersion\":\"%s\"},\"status\":{%s%s%s}}",
           uid, uid, rv, results ? "\"allocation\":{\"devices\":{\"results\":" : "",
           results ? results : "", results ? "}}" : "");
  dra_feed(d, s, text, gs__dra_claim);
}

/* gpushare-scheduler feeds the allocation it wrote (version 12) before its
 * informer delivers the claim's earlier versions (11: the finalizer added,
 * not yet allocated): an older version never undoes the charge; a newer
 * deallocation does. */
static void test_an_older_version_never_undoes_a_charge(void **state) {
  struct fixture *f = *state;
  node(f->s, "n1");
  slice(f->d, f->s, "n1-gpus", "n1", false);
  claim_rv(f->d, f->s, "u7", "12", "[" RES("n1", "gpu-0", MEM("8Gi")) "]");
  assert_int_equal(used(f->s, "n1").used[0], 8192);
  claim_rv(f->d, f->s, "u7", "11", NULL);
  assert_int_equal(used(f->s, "n1").used[0], 8192);
  claim_rv(f->d, f->s, "u7", "12", "[" RES("n1", "gpu-0", MEM("8Gi")) "]"); /* the informer's copy */
  claim_rv(f->d, f->s, "u7", "13", "[" RES("n1", "gpu-0", MEM("8Gi")) "]"); /* reservedFor changed */
  claim_rv(f->d, f->s, "u7", "12", NULL);
  assert_int_equal(used(f->s, "n1").used[0], 8192);
  claim_rv(f->d, f->s, "u7", "14", NULL); /* deallocated */
  assert_int_equal(used(f->s, "n1").used[0], 0);
  assert_int_equal(gs__dra_counts(f->d).claims, 0);
}

static void test_slice_and_claim_before_the_node(void **state) {
  struct fixture *f = *state;
  slice(f->d, f->s, "n2-gpus", "n2", false);
  claim(f->d, f->s, "u2", "[" RES("n2", "gpu-0", MEM("2Gi")) "," RES("n2", "gpu-1", MEM("2Gi")) "]",
        false);
  assert_int_equal(gs_sched_kept_count(f->s), 1); /* the node is not known yet */
  node(f->s, "n2");
  assert_int_equal(used(f->s, "n2").used[0], 2048);
  assert_int_equal(used(f->s, "n2").used[1], 2048);
  assert_int_equal(used(f->s, "n2").claims, 1);
  assert_int_equal(gs_sched_kept_count(f->s), 0);
}

static void test_exclusive_claim_takes_the_whole_gpu(void **state) {
  struct fixture *f = *state;
  node(f->s, "n3");
  slice(f->d, f->s, "n3-gpus", "n3", false);
  claim(f->d, f->s, "u3", "[" RES("n3", "gpu-1", "") "]", false); /* no consumedCapacity */
  assert_int_equal(used(f->s, "n3").used[1], 16384);
}

static void test_bad_input_is_reported_and_never_undercharges(void **state) {
  struct fixture *f = *state;
  struct gs_metrics *m = gs_metrics_new();
  char *text;
  node(f->s, "n4");
  slice(f->d, f->s, "n4-gpus", "n4", false);
  claim(f->d, f->s, "u4", "[" RES("n4", "gpu-0", MEM("3Gi")) "]", false);
  assert_int_equal(used(f->s, "n4").used[0], 3072);
  /* a malformed update (capacity not a quantity, a result without device):
   * the earlier charge stays */
  claim(f->d, f->s, "u4", "[" RES("n4", "gpu-0", MEM("lots")) "]", false);
  claim(f->d, f->s, "u4", "[{\"driver\":\"gpu.gpushare.io\",\"pool\":\"n4\"}]", false);
  claim(f->d, f->s, "u4", "{\"not\":\"a list\"}", false);
  assert_int_equal(used(f->s, "n4").used[0], 3072);
  /* a device of another kind (no gpushare attribute): not charged */
  claim(f->d, f->s, "u5", "[" RES("n4", "nic-0", "") "]", false);
  /* an index past the node's GPUs: not charged, reported */
  claim(f->d, f->s, "u6", "[" RES("n4", "gpu-9", "") "]", false);
  /* an unknown device: unresolved */
  claim(f->d, f->s, "u7", "[" RES("n4", "gpu-7", MEM("1Gi")) "]", false);
  assert_int_equal(used(f->s, "n4").used[0], 3072);
  assert_int_equal(used(f->s, "n4").used[1], 0);
  /* a shareID used twice on one device: both charged, reported */
  claim(f->d, f->s, "u8", "[" RES("n4", "gpu-1", MEM("1Gi") ",\"shareID\":\"s1\"") "]", false);
  claim(f->d, f->s, "u9", "[" RES("n4", "gpu-1", MEM("1Gi") ",\"shareID\":\"s1\"") "]", false);
  assert_int_equal(used(f->s, "n4").used[1], 2048);
  /* the slice goes while claims hold its devices: their charges stay (stale) */
  slice(f->d, f->s, "n4-gpus", "n4", true);
  assert_int_equal(used(f->s, "n4").used[0], 3072);
  assert_int_equal(used(f->s, "n4").used[1], 2048);
  /* a slice without a driver: ignored */
  dra_feed(f->d, f->s, "{\"metadata\":{\"name\":\"x\"},\"spec\":{\"devices\":[]}}",
           gs__dra_slice);
  gs__dra_gauges(f->d, m);
  text = gs_metrics_render(m);
  assert_non_null(text);
  assert_non_null(strstr(text, "gpushare_dra_problems{reason=\"malformed\"} 4\n"));
  assert_non_null(strstr(text, "gpushare_dra_problems{reason=\"device_not_managed\"} 1\n"));
  assert_non_null(strstr(text, "gpushare_dra_problems{reason=\"gpu_out_of_range\"} 1\n"));
  assert_non_null(strstr(text, "gpushare_dra_problems{reason=\"share_conflict\"} 1\n"));
  /* u4, u6, u8, u9 */
  assert_non_null(strstr(text, "gpushare_dra_problems{reason=\"stale\"} 4\n"));
  /* u7, and u5 once its device's slice is gone */
  assert_non_null(strstr(text, "gpushare_dra_problems{reason=\"device_unknown\"} 2\n"));
  assert_non_null(strstr(text, "gpushare_dra_claims{state=\"unresolved\"} 2\n"));
  gs_free(text);
  gs_metrics_free(m);
}

/* A claim another allocator put beside gpu-mem pods past the GPU's memory:
 * charged (the truth), reported as over_committed; no pod gets more. */
static void test_over_commit_by_another_allocator_is_reported(void **state) {
  struct fixture *f = *state;
  struct gs_metrics *m = gs_metrics_new();
  struct gs_alloc_part part = {0, 0, 10};
  struct gs_alloc pod = {.ns = "d", .name = "p", .uid = "pod-1", .node = "n6",
                         .kind = GS_ALLOC_MEM, .state = GS_ALLOC_BOUND, .unit_mib = 1024,
                         .nparts = 1, .parts = &part};
  char *text;
  node(f->s, "n6");
  slice(f->d, f->s, "n6-gpus", "n6", false);
  assert_int_equal(gs_sched_pod_bound(f->s, &pod), GS_EOK);
  claim(f->d, f->s, "u11", "[" RES("n6", "gpu-0", MEM("8Gi")) "]", false);
  assert_int_equal(used(f->s, "n6").used[0], 18 * 1024);
  gs__dra_gauges(f->d, m);
  text = gs_metrics_render(m);
  assert_non_null(strstr(text, "gpushare_dra_problems{reason=\"over_committed\"} 1\n"));
  gs_free(text);
  gs_metrics_free(m);
}

/* Preemption for a gpu-mem pod never names a claim, and never counts on
 * the memory a claim holds. */
static void test_preemption_never_takes_a_claim(void **state) {
  struct fixture *f = *state;
  struct gs_pod_request req;
  struct gs_preempt_offer offer = {"n5", NULL, 0};
  struct gs_preempt_answer ans;
  node(f->s, "n5");
  slice(f->d, f->s, "n5-gpus", "n5", false);
  claim(f->d, f->s, "u10", "[" RES("n5", "gpu-0", MEM("16Gi")) "," RES("n5", "gpu-1", MEM("16Gi")) "]",
        false);
  req = gs_test_pod("hi", "hi-uid");
  req.mem_units[0] = 1;
  req.gpu_count = 1;
  req.priority = 1000000;
  assert_int_equal(gs_sched_preempt(f->s, &req, &offer, 1, &ans), GS_EOK);
  assert_false(ans.keep);
  assert_int_equal(ans.nvictims, 0);
  gs_sched_preempt_free(&ans, 1);
}

GS_TEST_MAIN(NULL, NULL,
             GS_TEST_FX(test_claim_first_then_slice_then_gone),
             GS_TEST_FX(test_an_older_version_never_undoes_a_charge),
             GS_TEST_FX(test_slice_and_claim_before_the_node),
             GS_TEST_FX(test_exclusive_claim_takes_the_whole_gpu),
             cmocka_unit_test_setup_teardown(test_bad_input_is_reported_and_never_undercharges, setup,
             teardown),
             GS_TEST_FX(test_preemption_never_takes_a_claim),
             cmocka_unit_test_setup_teardown(test_over_commit_by_another_allocator_is_reported, setup,
             teardown))
