/* Preemptions under way (gs_sched_preempt_note / _unsettled / _settle /
 * _forget; issue 34's flake): the victims answered for a preemptor are
 * remembered per node until gs_sched_pod_gone says they went; a filter of
 * the preemptor on such a node waits for that instead of refusing it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include <gpushare/sched.h>

#include "../testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define NOW INT64_C(1700000000000000000)

static void bound(struct gs_sched *s, const char *uid, const char *node, uint64_t gib,
                  int32_t priority) {
  struct gs_alloc_part part;
  struct gs_alloc a = gs_test_bound_mem(&part, uid, node, 0, gib);
  a.priority = priority;
  assert_int_equal(gs_sched_pod_bound(s, &a), GS_EOK);
}

/* Two one-GPU nodes full of low-priority pods (the real test's), and the
 * answers gs_sched_preempt gives for a 16 GiB preemptor on both, noted. */
static struct gs_sched *setup(struct gs_pod_request *hi) {
  struct gs_policy policy;
  struct gs_sched *s;
  struct gs_node_spec va = gs_test_node("va", GS_MODE_SHARE, 1, 16),
                      vb = gs_test_node("vb", GS_MODE_SHARE, 1, 16);
  const char *pa[] = {"a50"}, *pb[] = {"b10a", "b10b"};
  struct gs_preempt_offer offers[] = {{"va", pa, 1}, {"vb", pb, 2}};
  struct gs_preempt_answer answers[2];
  gs_policy_init(&policy);
  s = gs_sched_new(&policy);
  assert_non_null(s);
  assert_int_equal(gs_sched_node_upsert(s, &va), GS_EOK);
  assert_int_equal(gs_sched_node_upsert(s, &vb), GS_EOK);
  bound(s, "a50", "va", 16, 50);
  bound(s, "b10a", "vb", 8, 10);
  bound(s, "b10b", "vb", 8, 10);
  *hi = gs_test_mem_pod("hi", 16, 1);
  hi->priority = 1000;
  assert_int_equal(gs_sched_preempt(s, hi, offers, 2, answers), GS_EOK);
  assert_true(answers[0].keep && answers[1].keep);
  gs_sched_preempt_note(s, hi->uid, offers, answers, 2);
  gs_sched_preempt_free(answers, 2);
  return s;
}

static enum gs_err filter(struct gs_sched *s, const struct gs_pod_request *p, const char *node) {
  const char *nodes[] = {node};
  struct gs_node_result r;
  assert_int_equal(gs_sched_filter(s, p, nodes, 1, NOW, &r), GS_EOK);
  return r.code;
}

static void *gone_a50(void *arg) {
  gs_sched_pod_gone(arg, "a50");
  return NULL;
}

static void test_the_filter_waits_for_the_victims_of_the_node_and_then_fits(void **state) {
  struct gs_pod_request hi;
  struct gs_sched *s = setup(&hi);
  const char *va[] = {"va"}, *vb[] = {"vb"}, *other[] = {"zz"};
  pthread_t th;
  (void)state;
  assert_true(gs_sched_preempt_unsettled(s, hi.uid, va, 1));
  assert_true(gs_sched_preempt_unsettled(s, hi.uid, vb, 1));
  assert_false(gs_sched_preempt_unsettled(s, hi.uid, other, 1));
  assert_false(gs_sched_preempt_unsettled(s, "uid-someone-else", va, 1));
  /* kube-scheduler deleted a50 and retries hi; gpushare still holds a50 */
  assert_int_equal(filter(s, &hi, "va"), GS_ENOFIT);
  assert_int_equal(pthread_create(&th, NULL, gone_a50, s), 0);
  assert_int_equal(gs_sched_preempt_settle(s, hi.uid, va, 1, 60000), GS_EOK);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_false(gs_sched_preempt_unsettled(s, hi.uid, va, 1));
  assert_int_equal(filter(s, &hi, "va"), GS_EOK);
  /* vb's victims were not taken: they stay, as does the record of them */
  assert_true(gs_sched_preempt_unsettled(s, hi.uid, vb, 1));
  gs_sched_preempt_forget(s, hi.uid); /* hi bound */
  assert_false(gs_sched_preempt_unsettled(s, hi.uid, vb, 1));
  assert_int_equal(gs_sched_preempt_settle(s, hi.uid, vb, 1, 0), GS_EOK);
  gs_sched_free(s);
}

static void test_victims_that_stay_end_the_wait_once(void **state) {
  struct gs_pod_request hi;
  struct gs_sched *s = setup(&hi);
  const char *vb[] = {"vb"};
  (void)state;
  /* kube-scheduler picked va: vb's victims stay; one bounded wait, then
   * the record is forgotten and the next filter does not wait */
  assert_int_equal(gs_sched_preempt_settle(s, hi.uid, vb, 1, 20), GS_ETIMEOUT);
  assert_false(gs_sched_preempt_unsettled(s, hi.uid, vb, 1));
  assert_int_equal(gs_sched_preempt_settle(s, hi.uid, vb, 1, 0), GS_EOK);
  gs_sched_free(s);
}

static void test_the_preemptor_gone_forgets_its_record(void **state) {
  struct gs_pod_request hi;
  struct gs_sched *s = setup(&hi);
  const char *va[] = {"va"};
  (void)state;
  gs_sched_pod_gone(s, hi.uid);
  assert_false(gs_sched_preempt_unsettled(s, hi.uid, va, 1));
  /* a nameless pod is never remembered nor waited for */
  gs_sched_preempt_note(s, "", NULL, NULL, 0);
  assert_false(gs_sched_preempt_unsettled(s, "", va, 1));
  assert_int_equal(gs_sched_preempt_settle(s, "", va, 1, 60000), GS_EOK);
  gs_sched_free(s);
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_the_filter_waits_for_the_victims_of_the_node_and_then_fits),
             cmocka_unit_test(test_victims_that_stay_end_the_wait_once),
             cmocka_unit_test(test_the_preemptor_gone_forgets_its_record))
