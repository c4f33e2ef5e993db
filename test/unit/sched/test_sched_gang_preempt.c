/* Preemption for a whole gang (gs_sched_preempt_gang, docs/gangs.md
 * "Preemption"): victims that free a slot of k whole GPUs for every member
 * the job needs, the cheapest first, or none at all. Two topology nodes of
 * 8 GPUs (DGX-1), full of single-GPU pods. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <gpushare/sched.h>
#include <gpushare/alloc.h>
#include <gpushare/topo.h>

#include "../testutil.h"

#include <stdio.h>
#include <string.h>

#define NOW INT64_C(1700000000000000000)

static struct gs_topo dgx1;
static const char *nodes[] = {"t-a", "t-b"};

static enum gs_err ok_bind(void *ctx, const struct gs_pod_request *pod, const char *node,
                           const struct gs_annotations *annots, struct gs_diag *diag) {
  (void)ctx, (void)pod, (void)node, (void)annots, (void)diag;
  return GS_EOK;
}

static struct gs_sched *sched_new(void) {
  struct gs_policy policy;
  struct gs_sched *s;
  gs_policy_init(&policy);
  s = gs_sched_new(&policy);
  assert_non_null(s);
  for (int i = 0; i < 2; i++) {
    struct gs_node_spec spec = gs_test_node(nodes[i], GS_MODE_TOPOLOGY, 0, 0);
    spec.whole_gpus = 8;
    spec.has_topo = true;
    spec.topo = &dgx1;
    assert_int_equal(gs_sched_node_upsert(s, &spec), GS_EOK);
  }
  return s;
}

static struct gs_pod_request whole(const char *name, uint64_t gpus, int32_t prio) {
  struct gs_pod_request p = gs_test_pod(name, "");
  snprintf(p.uid, sizeof p.uid, "uid-%s", name);
  p.whole_gpus[0] = gpus;
  p.gpu_count = 1;
  p.priority = prio;
  return p;
}

static void bind_to(struct gs_sched *s, const struct gs_pod_request *p, const char *node) {
  struct gs_binder b = {ok_bind, NULL};
  struct gs_sched_bind_result r;
  assert_int_equal(gs_sched_bind(s, p, NULL, node, NOW, &b, &r), GS_EOK);
  gs_annotations_clear(&r.annots);
}

/* A pod maker: whole(name, gpus, prio) or mem(name, gib, prio). */
typedef struct gs_pod_request (*make_fn)(const char *name, uint64_t size, int32_t prio);

/* Fills node with count pods of size made by make, of priority prio, named
 * <prefix>0..; the one numbered vip (if any) gets priority 2000. */
static void fill_with(struct gs_sched *s, const char *node, const char *prefix, int32_t prio,
                      int vip, int count, make_fn make, uint64_t size) {
  for (int i = 0; i < count; i++) {
    char name[32];
    struct gs_pod_request p;
    snprintf(name, sizeof name, "%s%d", prefix, i);
    p = make(name, size, i == vip ? 2000 : prio);
    bind_to(s, &p, node);
  }
}

/* The job's members of size made by make, seen by the watch; returns member 0. */
static struct gs_pod_request gang_with(struct gs_sched *s, const char *job, uint32_t replicas,
                                       make_fn make, uint64_t size) {
  struct gs_pod_request m0;
  for (uint32_t i = 0; i < replicas; i++) {
    char name[64];
    struct gs_pod_request m;
    snprintf(name, sizeof name, "%s-%u", job, i);
    m = make(name, size, 1000);
    snprintf(m.gang_job, sizeof m.gang_job, "%s", job);
    m.gang_replicas = replicas;
    gs_sched_pod_seen(s, &m, NULL);
    if (i == 0)
      m0 = m;
  }
  return m0;
}

/* Fills node with 8 single-GPU pods (see fill_with). */
static void fill(struct gs_sched *s, const char *node, const char *prefix, int32_t prio,
                 int vip) {
  fill_with(s, node, prefix, prio, vip, 8, whole, 1);
}

/* The job's members of gpus whole GPUs each; returns member 0. */
static struct gs_pod_request gang(struct gs_sched *s, const char *job, uint32_t replicas,
                                  uint64_t gpus) {
  return gang_with(s, job, replicas, whole, gpus);
}

/* The reason filter gives the member on node t-a. */
static void refused(struct gs_sched *s, const struct gs_pod_request *m, const char *want) {
  struct gs_node_result r[2];
  assert_int_equal(gs_sched_filter(s, m, nodes, 2, NOW, r), GS_EOK);
  assert_int_not_equal(r[0].code, GS_EOK);
  assert_string_equal(r[0].reason, want);
}

static int setup(void **state) {
  (void)state;
  assert_int_equal(gs_test_load_topo("dgx1_v100_topo-m.txt", &dgx1), 0);
  return 0;
}

/* gs_sched_preempt_gang for m0 over on[0..non): GS_EOK with want_n
 * victims, each named <prefix>... ('\0': any name), member 0's slot on
 * on[want_first] (-1: any of them); evict: the victims then go. */
static void victims(struct gs_sched *s, const struct gs_pod_request *m0, const char *const *on,
                    size_t non, size_t want_n, char prefix, int want_first, bool evict) {
  struct gs_victim *v = NULL;
  struct gs_status st;
  size_t n = 0, first = 99;
  assert_int_equal(gs_sched_preempt_gang(s, m0, on, non, &v, &n, &first, &st), GS_EOK);
  assert_int_equal(n, want_n);
  if (want_first >= 0)
    assert_int_equal(first, want_first);
  else
    assert_true(first < non);
  for (size_t i = 0; i < n; i++) {
    if (prefix != '\0')
      assert_int_equal(v[i].name[0], prefix);
    if (evict)
      gs_sched_pod_gone(s, v[i].uid);
  }
  gs_free(v);
}

/* The same call finding no victims: GS_ENOTFOUND, nothing written, and
 * st's reason want (NULL: any); returns st. */
static struct gs_status no_victims(struct gs_sched *s, const struct gs_pod_request *m0,
                                   const char *const *on, size_t non, const char *want) {
  struct gs_victim *v = NULL;
  struct gs_status st;
  size_t n = 77, first = 77;
  assert_int_equal(gs_sched_preempt_gang(s, m0, on, non, &v, &n, &first, &st), GS_ENOTFOUND);
  assert_null(v);
  assert_int_equal(n, 77); /* nothing written */
  assert_int_equal(first, 77);
  if (want != NULL)
    assert_string_equal(st.reason, want);
  return st;
}

/* 4 members of 4 GPUs on 16 busy GPUs of priority 10: every pod goes
 * (victims for all four members), and then the job is planned and fits. */
static void test_victims_for_every_member(void **state) {
  struct gs_sched *s = sched_new();
  struct gs_pod_request m0;
  struct gs_node_result r[2];
  (void)state;
  fill(s, "t-a", "a", 10, -1);
  fill(s, "t-b", "b", 10, -1);
  m0 = gang(s, "train", 4, 4);
  refused(s, &m0, "gang default/train: only 0 of 4 replicas fit (4 whole GPUs each)");
  victims(s, &m0, nodes, 2, 16, '\0', -1, true);
  assert_int_equal(gs_sched_filter(s, &m0, nodes, 2, NOW, r), GS_EOK);
  assert_true(r[0].code == GS_EOK || r[1].code == GS_EOK);
  gs_sched_free(s);
}

/* The job's slots are held once its victims are chosen (docs/preemption.md
 * "A label gang's slots are held"): while the victims go and after, a pod
 * outside the job of lower or equal priority cannot take the GPUs they
 * free, a member of the job can, a pod of higher priority can; the hold
 * ends 5 minutes after the next tick. */
static void test_the_jobs_slots_are_held(void **state) {
  struct gs_sched *s = sched_new();
  struct gs_pod_request m0, m1, late = whole("late", 1, 1000), vip = whole("vip", 1, 3000);
  const char *a[] = {"t-a"};
  struct gs_victim *v = NULL;
  struct gs_node_result r[1];
  struct gs_status st;
  size_t n = 0, first = 9;
  (void)state;
  fill(s, "t-a", "a", 10, -1);
  m0 = gang(s, "train", 2, 4);
  m1 = m0;
  snprintf(m1.name, sizeof m1.name, "train-1");
  snprintf(m1.uid, sizeof m1.uid, "uid-train-1");
  assert_int_equal(gs_sched_preempt_gang(s, &m0, a, 1, &v, &n, &first, &st), GS_EOK);
  assert_int_equal(n, 8);
  for (size_t i = 0; i < 4; i++) /* half of them gone */
    gs_sched_pod_gone(s, v[i].uid);
  assert_int_equal(gs_sched_filter(s, &late, a, 1, NOW, r), GS_EOK);
  assert_int_equal(r[0].code, GS_ENOFIT);
  assert_string_equal(r[0].reason, "GPUs held for pod default/train-0, nominated here by preemption");
  for (size_t i = 4; i < n; i++)
    gs_sched_pod_gone(s, v[i].uid);
  gs_free(v);
  assert_int_equal(gs_sched_filter(s, &late, a, 1, NOW, r), GS_EOK);
  assert_int_equal(r[0].code, GS_ENOFIT);
  assert_string_equal(r[0].reason, "GPUs held for pod default/train-0, nominated here by preemption");
  assert_int_equal(gs_sched_filter(s, &vip, a, 1, NOW, r), GS_EOK);
  assert_int_equal(r[0].code, GS_EOK);
  assert_int_equal(gs_sched_filter(s, &m1, a, 1, NOW, r), GS_EOK);
  assert_int_equal(r[0].code, GS_EOK);
  gs_sched_tick(s, NOW);                            /* the bound starts */
  gs_sched_tick(s, NOW + INT64_C(299) * 1000000000); /* not yet */
  assert_int_equal(gs_sched_filter(s, &late, a, 1, NOW, r), GS_EOK);
  assert_int_equal(r[0].code, GS_ENOFIT);
  gs_sched_tick(s, NOW + INT64_C(301) * 1000000000);
  assert_int_equal(gs_sched_filter(s, &late, a, 1, NOW, r), GS_EOK);
  assert_int_equal(r[0].code, GS_EOK);
  gs_sched_free(s);
}

/* One pod of priority 2000 (above the job's 1000) on t-a: t-a can free one
 * slot of 4 only (7 GPUs), t-b two: 3 of 4 members. Nothing is evicted,
 * and st says how many could have been freed. */
static void test_none_when_not_every_member_can_be_freed(void **state) {
  struct gs_sched *s = sched_new();
  struct gs_pod_request m0;
  (void)state;
  fill(s, "t-a", "a", 10, 3);
  fill(s, "t-b", "b", 10, -1);
  m0 = gang(s, "train", 4, 4);
  no_victims(s, &m0, nodes, 2,
             "gang preemption: only 3 of 4 replicas (4 whole GPUs each) can be freed by evicting "
             "lower-priority pods; none is evicted");
  gs_sched_free(s);
}

/* Two members of 4 GPUs: t-a's pods (priority 10) go rather than t-b's
 * (priority 50), both slots on t-a; t-b is untouched. */
static void test_the_cheapest_pods_go(void **state) {
  struct gs_sched *s = sched_new();
  struct gs_pod_request m0;
  (void)state;
  fill(s, "t-a", "a", 10, -1);
  fill(s, "t-b", "b", 50, -1);
  m0 = gang(s, "pair", 2, 4);
  victims(s, &m0, nodes, 2, 8, 'a', 0, false);
  gs_sched_free(s);
}

/* Members of a gang are never victims of another gang; a job with its
 * slots held asks for nothing; a pod that is not a whole-GPU gang member
 * is not for this call. */
static void test_gang_members_are_never_victims(void **state) {
  struct gs_sched *s = sched_new();
  struct gs_pod_request first_job, m0, plain = whole("plain", 1, 5000);
  struct gs_node_result r[2];
  (void)state;
  /* a low-priority job of 2 x 8 GPUs holds both nodes */
  first_job = gang(s, "low", 2, 8);
  first_job.priority = 1;
  assert_int_equal(gs_sched_filter(s, &first_job, nodes, 2, NOW, r), GS_EOK);
  m0 = gang(s, "high", 1, 1);
  no_victims(s, &m0, nodes, 2,
             "gang preemption: only 0 of 1 replicas (1 whole GPUs each) can be freed by evicting "
             "lower-priority pods; none is evicted");
  /* the "low" job's plan holds its slots: nothing to preempt for it */
  no_victims(s, &first_job, nodes, 2,
             "gang default/low: its plan holds its slots already: nothing to preempt");
  assert_int_equal(no_victims(s, &plain, nodes, 2, NULL).code, GS_EUNRESOLVABLE);
  gs_sched_free(s);
}

/* A memory-shared job: share nodes of one 16 GiB GPU, each full of four
 * 4 GiB pods. */
static void share_node(struct gs_sched *s, const char *name) {
  struct gs_node_spec spec = gs_test_node(name, GS_MODE_SHARE, 1, 16);
  assert_int_equal(gs_sched_node_upsert(s, &spec), GS_EOK);
}

static struct gs_pod_request mem(const char *name, uint64_t gib, int32_t prio) {
  struct gs_pod_request p = whole(name, 0, prio);
  p.whole_gpus[0] = 0;
  p.mem_units[0] = gib;
  return p;
}

/* Four 4 GiB members on a GPU full of four 4 GiB pods of priority 10: all
 * four go; with one of them at priority 2000 only three slots can be
 * freed, and none goes. Two nodes, priority 10 and 50: the job of 2 x 8 GiB
 * takes the cheaper node's pods only. */
static void test_memory_shared_gangs(void **state) {
  static const char *share[] = {"s-a", "s-b"};
  struct gs_sched *s = sched_new();
  struct gs_pod_request m0;
  (void)state;
  share_node(s, "s-a");
  share_node(s, "s-b");
  fill_with(s, "s-a", "a", 10, -1, 4, mem, 4);
  fill_with(s, "s-b", "b", 50, 1, 4, mem, 4);
  m0 = gang_with(s, "infer", 4, mem, 4);
  victims(s, &m0, share, 1, 4, 'a', 0, false);
  no_victims(s, &m0, share + 1, 1,
             "gang preemption: only 3 of 4 replicas (4096 MiB on 1 GPU each) can be freed by "
             "evicting lower-priority pods; none is evicted");
  m0 = gang_with(s, "pair", 2, mem, 8);
  victims(s, &m0, share, 2, 4, 'a', 0, false);
  gs_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_victims_for_every_member),
      cmocka_unit_test(test_none_when_not_every_member_can_be_freed),
      cmocka_unit_test(test_the_cheapest_pods_go),
      cmocka_unit_test(test_gang_members_are_never_victims),
      cmocka_unit_test(test_memory_shared_gangs),
      cmocka_unit_test(test_the_jobs_slots_are_held),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
