/* Nominated pods' GPUs held (gs_sched_nominate, issue 34): while the
 * victims of a preemption terminate, a pod of equal or lower priority
 * cannot take the GPU the nominated pod will take; a higher-priority pod
 * and the nominated pod itself are not held back; the hold ends when the
 * pod is reserved or goes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include <gpushare/sched.h>

#include "../testutil.h"

#include <stdio.h>
#include <string.h>

#define NOW INT64_C(1700000000000000000)

static void bound(struct gs_sched *s, const char *uid, uint32_t gpu, uint64_t gib) {
  struct gs_alloc_part part;
  struct gs_alloc a = gs_test_bound_mem(&part, uid, "n", gpu, gib);
  assert_int_equal(gs_sched_pod_bound(s, &a), GS_EOK);
}

static enum gs_err filter(struct gs_sched *s, const struct gs_pod_request *p, char *reason) {
  const char *nodes[] = {"n"};
  struct gs_node_result r;
  assert_int_equal(gs_sched_filter(s, p, nodes, 1, NOW, &r), GS_EOK);
  snprintf(reason, GS_REASON_MAX, "%s", r.reason);
  return r.code;
}

static void test_a_nominated_pods_gpu_is_held(void **state) {
  struct gs_policy policy;
  struct gs_sched *s;
  struct gs_node_spec spec = gs_test_node("n", GS_MODE_SHARE, 2, 32);
  struct gs_pod_request hi = gs_test_mem_pod("hi", 16, 1), lo = gs_test_mem_pod("lo", 8, 1),
                        top = gs_test_mem_pod("top", 8, 1);
  struct gs_annotations ann = {0};
  struct gs_status st;
  char reason[GS_REASON_MAX];
  (void)state;
  gs_policy_init(&policy);
  s = gs_sched_new(&policy);
  assert_non_null(s);
  assert_int_equal(gs_sched_node_upsert(s, &spec), GS_EOK);
  hi.priority = 100;
  lo.priority = 100; /* equal priority: held back too */
  top.priority = 200;
  bound(s, "victim", 0, 16);
  bound(s, "other", 1, 8);
  /* before the nomination, lo fits (GPU 1) */
  assert_int_equal(filter(s, &lo, reason), GS_EOK);
  assert_int_equal(gs_sched_nominate(s, &hi, "n"), GS_EOK);
  /* the victim still there: hi does not fit yet, so the node takes no pod
   * of hi's priority or lower (kube-scheduler's rule for its resources) */
  assert_int_equal(filter(s, &lo, reason), GS_ENOFIT);
  assert_string_equal(reason, "GPUs held for pod default/hi, nominated here by preemption");
  assert_int_equal(filter(s, &top, reason), GS_EOK);
  /* the victim gone: GPU 0 is hi's; lo still fits beside "other" on GPU 1 */
  gs_sched_pod_gone(s, "victim");
  assert_int_equal(filter(s, &lo, reason), GS_EOK);
  lo.mem_units[0] = 12; /* 12 GiB: only GPU 0 had room, and it is held */
  assert_int_equal(filter(s, &lo, reason), GS_ENOFIT);
  assert_int_equal(gs_sched_reserve(s, &lo, "n", NOW, &ann, &st), GS_ENOFIT);
  /* hi itself is not held back by its own hold */
  assert_int_equal(filter(s, &hi, reason), GS_EOK);
  /* nominated elsewhere (or no longer): nothing held here */
  assert_int_equal(gs_sched_nominate(s, &hi, NULL), GS_EOK);
  assert_int_equal(filter(s, &lo, reason), GS_EOK);
  assert_int_equal(gs_sched_nominate(s, &hi, "n"), GS_EOK);
  assert_int_equal(filter(s, &lo, reason), GS_ENOFIT);
  /* hi reserved: its nomination is done, the hold ends with it */
  assert_int_equal(gs_sched_reserve(s, &hi, "n", NOW, &ann, &st), GS_EOK);
  gs_annotations_clear(&ann);
  gs_sched_unreserve(s, &hi, "n");
  assert_int_equal(filter(s, &lo, reason), GS_EOK);
  /* a pod that goes takes its hold along */
  assert_int_equal(gs_sched_nominate(s, &hi, "n"), GS_EOK);
  gs_sched_pod_gone(s, hi.uid);
  assert_int_equal(filter(s, &lo, reason), GS_EOK);
  gs_sched_free(s);
}

/* The memo of the last prioritize (kube-scheduler's plugin reuses it for a
 * pod signed alike): a nomination that begins or ends is seen at once. */
static void test_the_memo_sees_a_nomination(void **state) {
  struct gs_policy policy;
  struct gs_sched *s;
  struct gs_sched_memo *memo;
  struct gs_node_spec spec = gs_test_node("n", GS_MODE_SHARE, 1, 16);
  struct gs_pod_request hi = gs_test_mem_pod("hi", 16, 1), lo = gs_test_mem_pod("lo", 8, 1);
  const char *nodes[] = {"n"};
  const struct gs_node_result *r;
  (void)state;
  gs_policy_init(&policy);
  s = gs_sched_new(&policy);
  memo = gs_sched_memo_new();
  assert_non_null(memo);
  assert_int_equal(gs_sched_node_upsert(s, &spec), GS_EOK);
  hi.priority = 100;
  assert_int_equal(gs_sched_prioritize_memo(s, memo, &lo, nodes, 1, NOW, &r), GS_EOK);
  assert_int_equal(r[0].code, GS_EOK);
  assert_int_equal(gs_sched_nominate(s, &hi, "n"), GS_EOK);
  assert_int_equal(gs_sched_prioritize_memo(s, memo, &lo, nodes, 1, NOW, &r), GS_EOK);
  assert_int_equal(r[0].code, GS_ENOFIT);
  assert_int_equal(gs_sched_nominate(s, &hi, ""), GS_EOK);
  assert_int_equal(gs_sched_prioritize_memo(s, memo, &lo, nodes, 1, NOW, &r), GS_EOK);
  assert_int_equal(r[0].code, GS_EOK);
  gs_sched_memo_free(memo);
  gs_sched_free(s);
}

GS_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_a_nominated_pods_gpu_is_held),
             cmocka_unit_test(test_the_memo_sees_a_nomination))
