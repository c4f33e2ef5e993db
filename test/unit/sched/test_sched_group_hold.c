/* A pod group's slots held after its preemption (gs_sched_preempt_group,
 * issue 34; docs/preemption.md "Pod groups' slots are held"): the core
 * returns every member's slot, each is held on its exact GPUs while the
 * victims terminate — a foreign pod of equal or lower priority is refused
 * there with the hold's reason — a reservation stands for its member's
 * slot and an undone one gives it back, and the hold ends at bind,
 * deletion, a cleared nomination or its bound in time. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include <gpushare/alloc.h>
#include <gpushare/sched.h>

#include "../testutil.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NOW INT64_C(1700000000000000000)
#define HELD "GPUs held for pod default/m0, nominated here by preemption"

static const char *nodes[] = {"n"};

static void bound(struct gs_sched *s, const char *uid, uint32_t gpu, uint64_t gib, int32_t prio) {
  struct gs_alloc_part part;
  struct gs_alloc a = gs_test_bound_mem(&part, uid, "n", gpu, gib);
  a.priority = prio;
  assert_int_equal(gs_sched_pod_bound(s, &a), GS_EOK);
}

static enum gs_err filter(struct gs_sched *s, const struct gs_pod_request *p, char *reason) {
  struct gs_node_result r;
  assert_int_equal(gs_sched_filter(s, p, nodes, 1, NOW, &r), GS_EOK);
  snprintf(reason, GS_REASON_MAX, "%s", r.reason);
  return r.code;
}

/* What the ledger says: used MiB per GPU (used[4]) or a pod's GPUs. */
struct look {
  const char *uid;
  uint64_t used[4];
  uint64_t gpus; /* bit i: the pod has a part on GPU i */
};

static void look_fn(const struct gs_ledger *ledger, void *arg) {
  struct look *l = arg;
  const struct gs_node *n = gs_ledger_node_get(ledger, "n");
  const struct gs_alloc *a = l->uid != NULL ? gs_ledger_alloc_get(ledger, l->uid) : NULL;
  for (uint32_t g = 0; g < 4 && g < n->ngpus; g++)
    l->used[g] = n->gpus[g].used_mib;
  for (uint32_t i = 0; a != NULL && i < a->nparts; i++)
    l->gpus |= UINT64_C(1) << a->parts[i].gpu;
}

static struct look look(struct gs_sched *s, const char *uid) {
  struct look l = {uid, {0}, 0};
  gs_sched_read(s, look_fn, NULL, &l);
  return l;
}

/* Node n: four 16 GiB GPUs; a 1 GiB pod of low priority on GPUs 0 and 1
 * (the victims), 11 GiB of top priority on GPUs 2 and 3. 40 GiB free, but
 * two 8 GiB members fit, not four. */
static struct gs_sched *cluster(void) {
  struct gs_policy policy;
  struct gs_sched *s;
  struct gs_node_spec spec = gs_test_node("n", GS_MODE_SHARE, 4, 64);
  gs_policy_init(&policy);
  s = gs_sched_new(&policy);
  assert_non_null(s);
  assert_int_equal(gs_sched_node_upsert(s, &spec), GS_EOK);
  bound(s, "v-a", 0, 1, 10);
  bound(s, "v-b", 1, 1, 10);
  bound(s, "t-c", 2, 11, 2000);
  bound(s, "t-d", 3, 11, 2000);
  return s;
}

/* The group's four 8 GiB members m0..m3 (priority 1000), and the pod the
 * front end asks for them: m0 as job podgroup.g of 4 replicas. */
static struct gs_pod_request group(struct gs_pod_request members[4]) {
  struct gs_pod_request gp;
  for (int i = 0; i < 4; i++) {
    char name[8];
    snprintf(name, sizeof name, "m%d", i);
    members[i] = gs_test_mem_pod(name, 8, 1);
    members[i].priority = 1000;
  }
  gp = members[0];
  snprintf(gp.gang_job, sizeof gp.gang_job, "podgroup.g");
  gp.gang_replicas = 4;
  return gp;
}

/* gs_sched_preempt_group: the two victims, every member's slot on n. */
static void preempt(struct gs_sched *s, const struct gs_pod_request *gp,
                    const struct gs_pod_request *members, size_t nmembers, int64_t now) {
  struct gs_victim *v = NULL;
  struct gs_status st;
  size_t n = 0, at[4] = {7, 7, 7, 7};
  assert_int_equal(gs_sched_preempt_group(s, gp, members, nmembers, nodes, 1, now, &v, &n, at, &st),
                   GS_EOK);
  assert_string_equal(st.reason, "");
  assert_int_equal(n, 2);
  assert_string_equal(v[0].name, "v-a");
  assert_string_equal(v[1].name, "v-b");
  for (size_t i = 0; i < nmembers; i++)
    assert_int_equal(at[i], 0);
  gs_free(v);
}

static void reserve(struct gs_sched *s, const struct gs_pod_request *m, uint64_t want_gpus) {
  struct gs_annotations ann = {0};
  struct gs_status st;
  assert_int_equal(gs_sched_reserve(s, m, "n", NOW, &ann, &st), GS_EOK);
  gs_annotations_clear(&ann);
  assert_int_equal(look(s, m->uid).gpus, want_gpus);
}

static void test_every_slot_is_held_until_its_member_binds(void **state) {
  struct gs_sched *s = cluster();
  struct gs_pod_request m[4], gp = group(m), q = gs_test_mem_pod("q", 8, 1), top = q;
  char reason[GS_REASON_MAX];
  struct look before = look(s, NULL), after;
  (void)state;
  q.priority = 1000; /* as high as the group: held back */
  top.priority = 2000;
  /* before: q fits (GPU 0 has 15 GiB free) */
  assert_int_equal(filter(s, &q, reason), GS_EOK);
  preempt(s, &gp, m, 4, NOW);
  after = look(s, NULL);
  assert_memory_equal(before.used, after.used, sizeof before.used); /* a what-if */
  /* the victims terminating: GPU 0 still has 15 GiB free, but every GiB
   * of GPUs 0 and 1 is a member's slot (m0, m2 on GPU 0; m1, m3 on 1) */
  assert_int_equal(filter(s, &q, reason), GS_ENOFIT);
  assert_string_equal(reason, HELD);
  assert_int_equal(filter(s, &top, reason), GS_EOK); /* higher priority: not held back */
  /* no member fits yet either: its siblings' slots are held for them */
  assert_int_not_equal(filter(s, &m[0], reason), GS_EOK);
  /* the victims gone: the GPUs are free and still refused to q */
  gs_sched_pod_gone(s, "v-a");
  gs_sched_pod_gone(s, "v-b");
  assert_int_equal(filter(s, &q, reason), GS_ENOFIT);
  assert_string_equal(reason, HELD);
  /* the pod-group cycle: each member reserved on its own slot, the siblings'
   * slots held meanwhile; then every reservation undone (the simulation) */
  reserve(s, &m[0], 1u << 0);
  reserve(s, &m[1], 1u << 1);
  reserve(s, &m[2], 1u << 0);
  reserve(s, &m[3], 1u << 1);
  for (int i = 3; i >= 0; i--)
    gs_sched_unreserve(s, &m[i], "n");
  /* undone: the slots are held again */
  assert_int_equal(filter(s, &q, reason), GS_ENOFIT);
  assert_string_equal(reason, HELD);
  /* reserved for good and bound: no hold left, the GPUs are the members' */
  for (int i = 0; i < 4; i++) {
    reserve(s, &m[i], 1u << (i % 2));
    gs_sched_post_bind(s, m[i].uid);
  }
  assert_int_equal(filter(s, &q, reason), GS_ENOFIT);
  assert_string_equal(reason, "insufficient GPU memory on any single GPU");
  after = look(s, NULL);
  assert_int_equal(after.used[0], 16384);
  assert_int_equal(after.used[1], 16384);
  /* a member that goes frees its GPUs to q: no hold outlives its bind */
  gs_sched_pod_gone(s, m[0].uid);
  assert_int_equal(filter(s, &q, reason), GS_EOK);
  gs_sched_free(s);
}

/* The hold's reason, naming one of the members m1..m3 (which one depends
 * on the order the holds are kept in). */
static void held_by_a_member(const char *reason) {
  bool named = false;
  for (int i = 1; i <= 3; i++) {
    char want[GS_REASON_MAX];
    snprintf(want, sizeof want, "GPUs held for pod default/m%d, nominated here by preemption", i);
    named = named || strcmp(reason, want) == 0;
  }
  if (!named)
    fail_msg("not the hold's reason: %s", reason);
}

static void test_a_hold_ends_with_its_member_or_its_nomination(void **state) {
  struct gs_sched *s = cluster();
  struct gs_pod_request m[4], gp = group(m), q = gs_test_mem_pod("q", 8, 1);
  char reason[GS_REASON_MAX];
  (void)state;
  q.priority = 1000;
  preempt(s, &gp, m, 4, NOW);
  gs_sched_pod_gone(s, "v-a");
  gs_sched_pod_gone(s, "v-b");
  /* kube-scheduler nominates each member to its slot's node: the slot
   * stays exact (not placed again as a pod nominated alone) */
  for (int i = 0; i < 4; i++)
    assert_int_equal(gs_sched_nominate(s, &m[i], "n"), GS_EOK);
  assert_int_equal(filter(s, &q, reason), GS_ENOFIT);
  assert_string_equal(reason, HELD);
  /* m0 deleted: its 8 GiB of GPU 0 are free again, m2's stay held */
  gs_sched_pod_gone(s, m[0].uid);
  assert_int_equal(filter(s, &q, reason), GS_EOK);
  q.mem_units[0] = 9; /* 9 GiB: only on GPU 0 with m2's slot given up */
  assert_int_equal(filter(s, &q, reason), GS_ENOFIT);
  held_by_a_member(reason);
  /* m1 nominated elsewhere: its slot on GPU 1 is not held here any more
   * (m3's is): 8 GiB free there, still not 9 */
  assert_int_equal(gs_sched_nominate(s, &m[1], "elsewhere"), GS_EOK);
  assert_int_equal(filter(s, &q, reason), GS_ENOFIT);
  q.mem_units[0] = 8;
  assert_int_equal(filter(s, &q, reason), GS_EOK);
  /* m2's nomination cleared (the group rejected): GPU 0 is all q's */
  assert_int_equal(gs_sched_nominate(s, &m[2], ""), GS_EOK);
  q.mem_units[0] = 16;
  assert_int_equal(filter(s, &q, reason), GS_EOK);
  gs_sched_free(s);
}

static void test_a_hold_is_bounded_in_time(void **state) {
  struct gs_sched *s = cluster();
  struct gs_pod_request m[4], gp = group(m), q = gs_test_mem_pod("q", 8, 1);
  char reason[GS_REASON_MAX];
  (void)state;
  q.priority = 1000;
  preempt(s, &gp, m, 4, NOW);
  gs_sched_pod_gone(s, "v-a");
  gs_sched_pod_gone(s, "v-b");
  gs_sched_tick(s, NOW + INT64_C(299) * 1000000000);
  assert_int_equal(filter(s, &q, reason), GS_ENOFIT);
  assert_string_equal(reason, HELD);
  /* 5 minutes: every slot given up (a retry's preemption would hold anew) */
  gs_sched_tick(s, NOW + INT64_C(301) * 1000000000);
  assert_int_equal(filter(s, &q, reason), GS_EOK);
  gs_sched_free(s);
}

/* kube-scheduler's plugin reuses a memo for pods signed alike: a member
 * signed as the foreign pod before it is not refused by its own slot. */
static void test_the_memo_does_not_lend_a_hold(void **state) {
  struct gs_sched *s = cluster();
  struct gs_pod_request m[4], gp = group(m), q = gs_test_mem_pod("q", 8, 1);
  struct gs_sched_memo *memo = gs_sched_memo_new();
  const struct gs_node_result *r;
  (void)state;
  assert_non_null(memo);
  q.priority = 1000;
  preempt(s, &gp, m, 4, NOW);
  gs_sched_pod_gone(s, "v-a");
  gs_sched_pod_gone(s, "v-b");
  assert_int_equal(gs_sched_prioritize_memo(s, memo, &q, nodes, 1, NOW, &r), GS_EOK);
  assert_int_equal(r[0].code, GS_ENOFIT);
  assert_string_equal(r[0].reason, HELD);
  assert_int_equal(gs_sched_prioritize_memo(s, memo, &m[0], nodes, 1, NOW, &r), GS_EOK);
  assert_int_equal(r[0].code, GS_EOK);
  assert_int_equal(gs_sched_prioritize_memo(s, memo, &q, nodes, 1, NOW, &r), GS_EOK);
  assert_int_equal(r[0].code, GS_ENOFIT);
  gs_sched_memo_free(memo);
  gs_sched_free(s);
}

/* Fewer members than slots: the ones listed are held and answered, the
 * rest not; a member gpushare does not place is answered, not held, and
 * says so; no victims: nothing held, nothing written. */
static void test_members_past_the_slots_and_bad_members(void **state) {
  struct gs_sched *s = cluster();
  struct gs_pod_request m[4], gp = group(m), q = gs_test_mem_pod("q", 8, 1), odd[2];
  struct gs_victim *v = NULL;
  struct gs_status st;
  size_t n = 0, at[2] = {7, 7};
  char reason[GS_REASON_MAX];
  (void)state;
  q.priority = 1000;
  gp.gang_replicas = 1; /* one slot needed */
  /* one slot fits without preemption: nothing to do, nothing held */
  assert_int_equal(gs_sched_preempt_group(s, &gp, m, 2, nodes, 1, NOW, &v, &n, at, &st),
                   GS_ENOTFOUND);
  assert_null(v);
  assert_int_equal(at[0], 7);
  assert_string_equal(st.reason, "the pod group fits without preemption");
  assert_int_equal(filter(s, &q, reason), GS_EOK);
  /* three slots for two members: the third slot is not held */
  gp.gang_replicas = 3;
  assert_int_equal(gs_sched_preempt_group(s, &gp, m, 2, nodes, 1, NOW, &v, &n, at, &st), GS_EOK);
  assert_int_equal(n, 1); /* v-a frees GPU 0 for the third slot */
  assert_int_equal(at[0], 0);
  assert_int_equal(at[1], 0);
  gs_free(v);
  gs_sched_pod_gone(s, "v-a");
  /* m0 on GPU 0, m1 on GPU 1: GPU 0 keeps 8 GiB for q (the third slot is
   * no one's) */
  assert_int_equal(filter(s, &q, reason), GS_EOK);
  /* a member asking no GPU cannot be held: answered all the same */
  odd[0] = m[2];
  odd[1] = gs_test_pod("cpu-only", "uid-cpu-only");
  gp.gang_replicas = 4; /* the fourth slot needs v-b gone */
  at[0] = at[1] = 7;
  v = NULL;
  assert_int_equal(gs_sched_preempt_group(s, &gp, odd, 2, nodes, 1, NOW, &v, &n, at, &st), GS_EOK);
  assert_string_equal(st.reason, "not every slot is held: invalid argument");
  assert_int_equal(at[1], 0);
  gs_free(v);
  gs_sched_free(s);
}

/* Whole GPUs: a topology node of four GPUs, three holding a low-priority
 * pod each; a group of four 1-GPU members: three victims, four slots, the
 * free GPU 3 held though nothing is on it. */
static void test_whole_gpu_slots_are_held(void **state) {
  struct gs_policy policy;
  struct gs_sched *s;
  struct gs_node_spec spec = gs_test_node("n", GS_MODE_TOPOLOGY, 0, 0);
  struct gs_pod_request m[4], gp, q;
  struct gs_victim *v = NULL;
  struct gs_status st;
  size_t n = 0, at[4];
  char reason[GS_REASON_MAX];
  (void)state;
  spec.whole_gpus = 4;
  gs_policy_init(&policy);
  s = gs_sched_new(&policy);
  assert_int_equal(gs_sched_node_upsert(s, &spec), GS_EOK);
  for (int i = 0; i < 3; i++) {
    char uid[16];
    struct gs_alloc_part part = {0, (uint32_t)i, 0};
    struct gs_alloc a = {.ns = "default", .node = "n", .kind = GS_ALLOC_WHOLE,
                         .state = GS_ALLOC_BOUND, .unit_mib = 1024, .assume_time_ns = 1,
                         .nparts = 1, .parts = &part, .priority = 10};
    snprintf(uid, sizeof uid, "low-%d", i);
    a.name = a.uid = uid;
    assert_int_equal(gs_sched_pod_bound(s, &a), GS_EOK);
  }
  for (int i = 0; i < 4; i++) {
    char name[8];
    snprintf(name, sizeof name, "m%d", i);
    m[i] = gs_test_pod(name, "");
    snprintf(m[i].uid, sizeof m[i].uid, "uid-%s", name);
    m[i].whole_gpus[0] = 1;
    m[i].gpu_count = 1;
    m[i].priority = 1000;
  }
  q = m[0];
  snprintf(q.name, sizeof q.name, "q");
  snprintf(q.uid, sizeof q.uid, "uid-q");
  gp = m[0];
  snprintf(gp.gang_job, sizeof gp.gang_job, "podgroup.g");
  gp.gang_replicas = 4;
  assert_int_equal(filter(s, &q, reason), GS_EOK); /* GPU 3 is free */
  assert_int_equal(gs_sched_preempt_group(s, &gp, m, 4, nodes, 1, NOW, &v, &n, at, &st), GS_EOK);
  assert_int_equal(n, 3);
  for (int i = 0; i < 4; i++)
    assert_int_equal(at[i], 0);
  gs_free(v);
  assert_int_equal(filter(s, &q, reason), GS_ENOFIT);
  assert_string_equal(reason, HELD);
  for (int i = 0; i < 3; i++) {
    char uid[16];
    snprintf(uid, sizeof uid, "low-%d", i);
    gs_sched_pod_gone(s, uid);
  }
  /* every member on its own GPU, then q finds none */
  {
    uint64_t all = 0;
    for (int i = 0; i < 4; i++) {
      struct gs_annotations ann = {0};
      assert_int_equal(gs_sched_reserve(s, &m[i], "n", NOW, &ann, &st), GS_EOK);
      gs_annotations_clear(&ann);
      all |= look(s, m[i].uid).gpus;
    }
    assert_int_equal(all, 0xf);
  }
  assert_int_equal(filter(s, &q, reason), GS_ENOFIT);
  assert_string_not_equal(reason, HELD);
  gs_sched_free(s);
}

GS_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_every_slot_is_held_until_its_member_binds),
             cmocka_unit_test(test_a_hold_ends_with_its_member_or_its_nomination),
             cmocka_unit_test(test_a_hold_is_bounded_in_time),
             cmocka_unit_test(test_the_memo_does_not_lend_a_hold),
             cmocka_unit_test(test_members_past_the_slots_and_bad_members),
             cmocka_unit_test(test_whole_gpu_slots_are_held))
