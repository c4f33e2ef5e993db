/* Preemption for a claim pod (gs_sched_claim_preempt, docs/dra.md
 * "Preempting for claim pods"): claims gpushare placed stand in for their
 * one consumer pod at its priority; unnamed claims are never victims; the
 * fewest and lowest victims on one GPU of one node, as for gpu-mem pods. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <gpushare/alloc.h>
#include <gpushare/claim.h>
#include <gpushare/sched.h>

#include "../testutil.h"

#include <stdio.h>
#include <string.h>

#define GIB 1024u

struct fixture {
  struct gs_sched *s;
  struct gs_alloc_part parts[64];
  char uids[64][16], pods[64][16];
  struct gs_claim_consumer cons[64];
  size_t nclaims, ncons;
};

static struct gs_sched *service(void) {
  struct gs_policy pol;
  struct gs_sched *s;
  gs_policy_init(&pol);
  s = gs_sched_new(&pol);
  assert_non_null(s);
  for (int i = 0; i < 2; i++) {
    struct gs_node_spec spec = gs_test_node(i ? "b" : "a", GS_MODE_SHARE, 2, 32); /* 2 × 16 GiB */
    assert_int_equal(gs_sched_node_upsert(s, &spec), GS_EOK);
  }
  return s;
}

/* A 4 GiB-per-GPU claim on node/gpu consumed by pod at prio; named as a
 * consumer when named. */
static void claim(struct fixture *f, const char *node, uint32_t gpu, uint64_t mib,
                  const char *pod, int32_t prio, bool named) {
  size_t i = f->nclaims++;
  struct gs_alloc a;
  snprintf(f->uids[i], sizeof f->uids[i], "c%zu", i);
  snprintf(f->pods[i], sizeof f->pods[i], "%s", pod);
  f->parts[i] = (struct gs_alloc_part){0, gpu, mib};
  a = (struct gs_alloc){.ns = "t", .name = f->uids[i], .uid = f->uids[i], .node = node,
                        .kind = GS_ALLOC_CLAIM, .state = GS_ALLOC_BOUND,
                        .unit_mib = GS_CLAIM_UNIT_MIB, .nparts = 1, .parts = &f->parts[i],
                        .priority = INT32_MAX};
  assert_int_equal(gs_sched_claim_set(f->s, &a), GS_EOK);
  if (named)
    f->cons[f->ncons++] = (struct gs_claim_consumer){f->uids[i], "t", f->pods[i], f->pods[i], prio};
}

static struct gs_pod_request preemptor(int32_t prio) {
  struct gs_pod_request p = gs_test_pod("big", "big");
  p.priority = prio;
  return p;
}

static int victim_cmp(const void *a, const void *b) {
  return strcmp(((const struct gs_victim *)a)->name, ((const struct gs_victim *)b)->name);
}

/* The victims' names, sorted, joined by spaces (each pod once); the node
 * in *node; for the nreqs claims of reqs. */
static void answer_n(struct fixture *f, const struct gs_claim_request *reqs, size_t nreqs,
                     int32_t prio, enum gs_err want, const char **node, char *names,
                     size_t cap) {
  const char *nodes[] = {"a", "b", "nope"};
  struct gs_pod_request p = preemptor(prio);
  struct gs_victim *v = NULL;
  struct gs_status st = {GS_EOK, GS_R_OTHER, ""};
  size_t at = 99, n = 0;
  uint32_t viol = 99;
  enum gs_err e = gs_sched_claim_preempt(f->s, reqs, nreqs, &p, nodes, 3, f->cons, f->ncons,
                                         &at, &v, &n, &viol, &st);
  assert_int_equal(e, want);
  names[0] = '\0';
  if (e != GS_EOK) {
    snprintf(names, cap, "%s", st.reason);
    return;
  }
  assert_int_equal(viol, 0);
  *node = nodes[at];
  qsort(v, n, sizeof *v, victim_cmp);
  for (size_t i = 0; i < n; i++) {
    assert_string_equal(v[i].ns, "t");
    assert_string_equal(v[i].uid, v[i].name); /* the pod's, not the claim's */
    if (i > 0)
      assert_string_not_equal(v[i].name, v[i - 1].name); /* a pod is one victim */
    snprintf(names + strlen(names), cap - strlen(names), "%s%s", i ? " " : "", v[i].name);
  }
  gs_free(v);
}

static void answer(struct fixture *f, const struct gs_claim_request *req, int32_t prio,
                   enum gs_err want, const char **node, char *names, size_t cap) {
  answer_n(f, req, 1, prio, want, node, names, cap);
}

/* Both nodes full of 4 GiB claims of priority 10, pods p<node><gpu><k>. */
static void fill(struct fixture *f) {
  for (int n = 0; n < 2; n++)
    for (uint32_t g = 0; g < 2; g++)
      for (int k = 0; k < 4; k++) {
        char pod[16];
        snprintf(pod, sizeof pod, "p%c%u%d", n ? 'b' : 'a', g, k);
        claim(f, n ? "b" : "a", g, 4 * GIB, pod, 10, true);
      }
}

/* The case: both nodes full of 4 GiB claims of low priority; a
 * 16 GiB claim of high priority: the four pods of one GPU go, nothing else. */
static void test_one_gpu_of_claim_pods(void **state) {
  struct fixture f = {.s = service()};
  struct gs_claim_request req = {16 * GIB, 1};
  const char *node = NULL;
  char names[256];
  (void)state;
  for (int n = 0; n < 2; n++)
    for (uint32_t g = 0; g < 2; g++)
      for (int k = 0; k < 4; k++) {
        char pod[16];
        snprintf(pod, sizeof pod, "p%c%u%d", n ? 'b' : 'a', g, k);
        claim(&f, n ? "b" : "a", g, 4 * GIB, pod, 10, true);
      }
  answer(&f, &req, 1000, GS_EOK, &node, names, sizeof names);
  assert_string_equal(node, "a");
  assert_string_equal(names, "pa00 pa01 pa02 pa03");
  /* not higher than the consumers: nothing */
  answer(&f, &req, 10, GS_ENOTFOUND, &node, names, sizeof names);
  assert_string_equal(names, "no lower-priority pods free one GPU for the pod");
  /* a claim of a's GPU 0 and one of b's GPU 0 named by nobody (placed by
   * another allocator, or shared): those GPUs cannot be freed; a's GPU 1 */
  memmove(&f.cons[0], &f.cons[1], 15 * sizeof f.cons[0]); /* pa00's claim unnamed */
  f.ncons--;
  memmove(&f.cons[7], &f.cons[8], 7 * sizeof f.cons[0]); /* pb00's (was index 8) */
  f.ncons--;
  answer(&f, &req, 1000, GS_EOK, &node, names, sizeof names);
  assert_string_equal(node, "a");
  assert_string_equal(names, "pa10 pa11 pa12 pa13");
  gs_sched_free(f.s);
}

/* Whole-device claims (issue 33): a preemptor claiming a whole device
 * clears one GPU (every pod on it goes), two devices two GPUs of one node;
 * a claim holding a whole device is a victim like any, its GPU's memory
 * freed at once. */
static void test_whole_device_claims(void **state) {
  struct fixture f = {.s = service()};
  struct gs_claim_request whole = {0, 1}, mem = {8 * GIB, 1};
  const char *node = NULL;
  char names[256];
  (void)state;
  fill(&f);
  answer(&f, &whole, 1000, GS_EOK, &node, names, sizeof names);
  assert_string_equal(node, "a");
  assert_string_equal(names, "pa00 pa01 pa02 pa03");
  whole.count = 2;
  answer(&f, &whole, 1000, GS_EOK, &node, names, sizeof names);
  assert_string_equal(node, "a");
  assert_string_equal(names, "pa00 pa01 pa02 pa03 pa10 pa11 pa12 pa13");
  whole.count = 3; /* more devices than a node has */
  answer(&f, &whole, 1000, GS_ENOTFOUND, &node, names, sizeof names);
  assert_string_equal(names, "no lower-priority pods free 3 GPUs for the pod");
  gs_sched_free(f.s);

  /* a: GPU 0 a whole device of w's, GPU 1 four 4 GiB pods; b: priority 50 */
  f = (struct fixture){.s = service()};
  claim(&f, "a", 0, GS_CLAIM_WHOLE, "w", 10, true);
  for (int k = 0; k < 4; k++) {
    char pod[16];
    snprintf(pod, sizeof pod, "q%d", k);
    claim(&f, "a", 1, 4 * GIB, pod, 10, true);
  }
  for (uint32_t g = 0; g < 2; g++)
    claim(&f, "b", g, 16 * GIB, g ? "b1" : "b0", 50, true);
  answer(&f, &mem, 100, GS_EOK, &node, names, sizeof names); /* one victim, not two */
  assert_string_equal(node, "a");
  assert_string_equal(names, "w");
  whole.count = 1;
  answer(&f, &whole, 100, GS_EOK, &node, names, sizeof names); /* one, not four */
  assert_string_equal(names, "w");
  f.cons[0].priority = 20; /* w above the q's: the lowest highest priority */
  answer(&f, &mem, 100, GS_EOK, &node, names, sizeof names);
  assert_string_equal(names, "q0 q1");
  answer(&f, &whole, 100, GS_EOK, &node, names, sizeof names);
  assert_string_equal(names, "q0 q1 q2 q3");
  f.cons[0].uid = NULL; /* w's claim named by nobody: never a victim */
  f.cons[1].priority = 50; /* and q0 not lower than the preemptor (nor b's) */
  answer(&f, &whole, 50, GS_ENOTFOUND, &node, names, sizeof names);
  assert_string_equal(names, "no lower-priority pods free one GPU for the pod");
  gs_sched_free(f.s);
}

/* A pod with several claims (issue 33): a preemptor's two claims are
 * placed in turn, the second on the node its first's victims left; a
 * victim holding two claims (on two GPUs) frees both and is one victim. */
static void test_several_claims(void **state) {
  struct fixture f = {.s = service()};
  struct gs_claim_request two[2] = {{16 * GIB, 1}, {16 * GIB, 1}};
  struct gs_claim_request mixed[2] = {{8 * GIB, 1}, {0, 1}};
  struct gs_claim_request bad[GS_CLAIM_PREEMPT_MAX + 1];
  const char *node = NULL;
  char names[256];
  (void)state;
  fill(&f);
  answer_n(&f, two, 2, 1000, GS_EOK, &node, names, sizeof names);
  assert_string_equal(node, "a");
  assert_string_equal(names, "pa00 pa01 pa02 pa03 pa10 pa11 pa12 pa13");
  /* 8 GiB and a whole device: two pods of one GPU, all four of the other */
  answer_n(&f, mixed, 2, 1000, GS_EOK, &node, names, sizeof names);
  assert_string_equal(node, "a");
  assert_string_equal(names, "pa00 pa01 pa10 pa11 pa12 pa13");
  for (size_t i = 0; i < GS_CLAIM_PREEMPT_MAX + 1; i++)
    bad[i] = (struct gs_claim_request){GIB, 1};
  answer_n(&f, bad, GS_CLAIM_PREEMPT_MAX + 1, 1000, GS_ENOTFOUND, &node, names, sizeof names);
  assert_string_equal(names, "preemption for 1..8 unallocated claims per pod");
  gs_sched_free(f.s);

  /* a: q holds 8 GiB on each GPU (two claims), r and s (priority 20) the
   * other 8 GiB of GPU 0 and GPU 1; b: priority 50 */
  f = (struct fixture){.s = service()};
  claim(&f, "a", 0, 8 * GIB, "q", 10, true);
  claim(&f, "a", 1, 8 * GIB, "q", 10, true);
  claim(&f, "a", 0, 8 * GIB, "r", 20, true);
  claim(&f, "a", 1, 8 * GIB, "s", 20, true);
  for (uint32_t g = 0; g < 2; g++)
    claim(&f, "b", g, 16 * GIB, g ? "b1" : "b0", 50, true);
  two[0].mib_per_gpu = two[1].mib_per_gpu = 8 * GIB;
  answer_n(&f, two, 2, 100, GS_EOK, &node, names, sizeof names);
  assert_string_equal(node, "a");
  assert_string_equal(names, "q"); /* once, and both its claims freed */
  /* 8 + 16 GiB: q, the first claim on GPU 0 (binpack, the lower index),
   * then the 16 GiB on GPU 1 without s */
  two[1].mib_per_gpu = 16 * GIB;
  answer_n(&f, two, 2, 100, GS_EOK, &node, names, sizeof names);
  assert_string_equal(names, "q s");
  gs_sched_free(f.s);
}

/* A nominated claim preemptor's GPUs are held (issue 34's rule for claim
 * pods, gs_sched_claim_nominate): while its victims' claims are charged
 * and after, until it is reserved, another claim pod or gpu-mem pod of
 * lower or equal priority cannot take them, with the text a gpu-mem hold
 * gives; the preemptor itself is not held back. */
static void test_claim_preemptor_held(void **state) {
  struct fixture f = {.s = service()};
  struct gs_claim_request req = {16 * GIB, 1}, small = {4 * GIB, 1};
  struct gs_pod_request big = preemptor(1000), late = gs_test_pod("late", "late");
  struct gs_pod_request mem = gs_test_mem_pod("mem", 4, 1);
  struct gs_claim_choice c;
  struct gs_status st = {GS_EOK, GS_R_OTHER, ""};
  struct gs_node_result res[1];
  const char *a[] = {"a"};
  const char *node = NULL;
  char names[256];
  (void)state;
  snprintf(big.ns, sizeof big.ns, "t");
  late.priority = mem.priority = 10;
  for (int k = 0; k < 3; k++) { /* a: GPU 0 three 4 GiB pods, GPU 1 full */
    char pod[16];
    snprintf(pod, sizeof pod, "v%d", k);
    claim(&f, "a", 0, 4 * GIB, pod, 10, true);
  }
  claim(&f, "a", 1, 16 * GIB, "a1", 500, true);
  for (uint32_t g = 0; g < 2; g++)
    claim(&f, "b", g, 16 * GIB, g ? "b1" : "b0", 500, true);
  answer(&f, &req, 1000, GS_EOK, &node, names, sizeof names);
  assert_string_equal(names, "v0 v1 v2");
  assert_int_equal(gs_sched_claim_nominate(f.s, &req, 1, &big, "a"), GS_EOK);
  /* the victims still hold GPU 0 (4 GiB free): nothing for late or mem */
  assert_int_equal(gs_sched_claim_filter(f.s, &late, a, 1, &small, res), GS_ENOFIT);
  assert_string_equal(res[0].reason, "GPUs held for pod t/big, nominated here by preemption");
  assert_int_equal(gs_sched_claim_filter(f.s, NULL, a, 1, &small, res), GS_EOK); /* no pod: none */
  assert_int_equal(gs_sched_filter(f.s, &mem, a, 1, 0, res), GS_EOK);
  assert_int_equal(res[0].code, GS_ENOFIT);
  assert_string_equal(res[0].reason, "GPUs held for pod t/big, nominated here by preemption");
  assert_int_equal(gs_sched_claim_reserve(f.s, &late, a, 1, &small, "t", "lc", "lc", 0, &c, &st),
                   GS_ENOFIT);
  assert_string_equal(st.reason, "GPUs held for pod t/big, nominated here by preemption");
  assert_int_equal(gs_sched_claim_filter(f.s, &late, a, 1, &small, res), GS_ENOFIT); /* lc not charged */
  /* the victims' claims deallocated: GPU 0 is big's */
  for (int k = 0; k < 3; k++)
    gs_sched_claim_gone(f.s, f.uids[k]);
  assert_int_equal(gs_sched_claim_filter(f.s, &late, a, 1, &small, res), GS_ENOFIT);
  assert_string_equal(res[0].reason, "insufficient GPU memory on any single GPU");
  assert_int_equal(gs_sched_claim_filter(f.s, &big, a, 1, &req, res), GS_EOK);
  /* its PostFilter run after the victims went (a stale Filter): the node,
   * no victims */
  answer(&f, &req, 1000, GS_EOK, &node, names, sizeof names);
  assert_string_equal(node, "a");
  assert_string_equal(names, "");
  /* the nomination cleared: the hold ends; set again, it holds again */
  assert_int_equal(gs_sched_claim_nominate(f.s, &req, 1, &big, NULL), GS_EOK);
  assert_int_equal(gs_sched_claim_filter(f.s, &late, a, 1, &small, res), GS_EOK);
  assert_int_equal(gs_sched_claim_nominate(f.s, &req, 1, &big, "a"), GS_EOK);
  assert_int_equal(gs_sched_claim_filter(f.s, &late, a, 1, &small, res), GS_ENOFIT);
  /* big's claim reserved on GPU 0: its hold ends (given back, GPU 0 is free) */
  assert_int_equal(gs_sched_claim_reserve(f.s, &big, a, 1, &req, "t", "bc", "bc", 0, &c, &st),
                   GS_EOK);
  assert_int_equal(c.choice.ngpus, 1);
  assert_int_equal(c.choice.gpus[0], 0);
  gs_sched_claim_gone(f.s, "bc");
  assert_int_equal(gs_sched_claim_filter(f.s, &late, a, 1, &small, res), GS_EOK);
  /* one whole device (GPU 1 is a1's): GPU 0 held whole for big, nothing
   * left for late; the nomination cleared, late fits again */
  req.mib_per_gpu = 0;
  assert_int_equal(gs_sched_claim_nominate(f.s, &req, 1, &big, "a"), GS_EOK);
  assert_int_equal(gs_sched_claim_filter(f.s, &late, a, 1, &small, res), GS_ENOFIT);
  assert_string_equal(res[0].reason, "insufficient GPU memory on any single GPU");
  assert_int_equal(gs_sched_filter(f.s, &mem, a, 1, 0, res), GS_EOK);
  assert_int_equal(res[0].code, GS_ENOFIT);
  assert_int_equal(gs_sched_claim_filter(f.s, &big, a, 1, &req, res), GS_EOK); /* not itself */
  assert_int_equal(gs_sched_claim_nominate(f.s, &req, 1, &big, NULL), GS_EOK);
  assert_int_equal(gs_sched_claim_filter(f.s, &late, a, 1, &small, res), GS_EOK);
  /* a shape not held: several claims (an earlier hold ends) */
  assert_int_equal(gs_sched_claim_nominate(f.s, &req, 1, &big, "a"), GS_EOK);
  {
    struct gs_claim_request several[2] = {{4 * GIB, 1}, {0, 1}};
    assert_int_equal(gs_sched_claim_nominate(f.s, several, 2, &big, "a"), GS_ESKIP);
  }
  assert_int_equal(gs_sched_claim_filter(f.s, &late, a, 1, &small, res), GS_EOK);
  assert_int_equal(gs_sched_claim_nominate(f.s, NULL, 1, &big, "a"), GS_EINVAL);
  gs_sched_free(f.s);
}

/* A whole-device claim preemptor nominated to a topology node holds the
 * GPUs the whole-GPU pod of its count would take: with one of two GPUs
 * held, a whole-device claim of another pod finds one GPU short; the
 * nomination cleared, both are free. */
static void test_whole_device_preemptor_held_on_topology(void **state) {
  struct gs_policy pol;
  struct gs_sched *s;
  struct gs_node_spec spec = gs_test_node("t", GS_MODE_TOPOLOGY, 2, 32);
  struct gs_claim_request one = {0, 1}, two = {0, 2};
  struct gs_pod_request big = preemptor(1000), late = gs_test_pod("late", "late");
  struct gs_node_result res[1];
  const char *t[] = {"t"};
  (void)state;
  gs_policy_init(&pol);
  assert_non_null(s = gs_sched_new(&pol));
  assert_int_equal(gs_sched_node_upsert(s, &spec), GS_EOK);
  snprintf(big.ns, sizeof big.ns, "t");
  late.priority = 10;
  assert_int_equal(gs_sched_claim_filter(s, &late, t, 1, &two, res), GS_EOK);
  assert_int_equal(gs_sched_claim_nominate(s, &one, 1, &big, "t"), GS_EOK);
  assert_int_equal(gs_sched_claim_filter(s, &late, t, 1, &two, res), GS_ENOFIT);
  assert_int_equal(gs_sched_claim_filter(s, &late, t, 1, &one, res), GS_EOK);
  assert_int_equal(gs_sched_claim_nominate(s, &one, 1, &big, NULL), GS_EOK);
  assert_int_equal(gs_sched_claim_filter(s, &late, t, 1, &two, res), GS_EOK);
  gs_sched_free(s);
}

/* Claims and gpu-mem pods weighed together: the lowest highest priority
 * wins, and a pod's two claims are one victim. */
static void test_claims_beside_gpu_mem_pods(void **state) {
  struct fixture f = {.s = service()};
  struct gs_claim_request req = {8 * GIB, 1};
  struct gs_alloc_part pp = {0, 0, 8}; /* 8 GiB in the ledger's 1 GiB unit */
  struct gs_alloc pod = {.ns = "t", .name = "mem", .uid = "mem", .node = "a",
                         .kind = GS_ALLOC_MEM, .state = GS_ALLOC_BOUND, .unit_mib = 1024,
                         .nparts = 1, .parts = &pp, .priority = 5};
  const char *node = NULL;
  char names[256];
  (void)state;
  /* a: GPU 0 = the gpu-mem pod (prio 5) + 2 claims (prio 10); GPU 1 = q's
   * two claims + r + s (prio 3). b: full of priority 50. */
  assert_int_equal(gs_sched_pod_bound(f.s, &pod), GS_EOK);
  claim(&f, "a", 0, 4 * GIB, "x", 10, true);
  claim(&f, "a", 0, 4 * GIB, "y", 10, true);
  claim(&f, "a", 1, 4 * GIB, "q", 3, true);
  claim(&f, "a", 1, 4 * GIB, "q", 3, true);
  claim(&f, "a", 1, 4 * GIB, "r", 3, true);
  claim(&f, "a", 1, 4 * GIB, "s", 3, true);
  for (uint32_t g = 0; g < 2; g++)
    claim(&f, "b", g, 16 * GIB, g ? "b1" : "b0", 50, true);
  answer(&f, &req, 100, GS_EOK, &node, names, sizeof names);
  assert_string_equal(node, "a");
  assert_string_equal(names, "q");
  /* q unnamed (both its claims): GPU 1 needs r and s (2 victims, prio 3),
   * GPU 0 the gpu-mem pod (1 victim, prio 5): the lower priority wins */
  f.cons[2].uid = f.cons[3].uid = NULL;
  answer(&f, &req, 100, GS_EOK, &node, names, sizeof names);
  assert_string_equal(names, "r s");
  /* r and s only as high as the preemptor: the gpu-mem pod */
  f.cons[4].priority = f.cons[5].priority = 100;
  answer(&f, &req, 100, GS_EOK, &node, names, sizeof names);
  assert_string_equal(names, "mem");
  gs_sched_free(f.s);
}

/* PodDisruptionBudgets count for claim pods as for gpu-mem pods (the
 * consumer pod's labels): a budget allowing no disruption over GPU 0's
 * pods moves the victims to GPU 1, with no violation. */
static void test_budgets_of_claim_pods(void **state) {
  struct fixture f = {.s = service()};
  struct gs_claim_request req = {16 * GIB, 1};
  struct gs_pdb pdb = {"t", "keep-x", "=app=x", 0};
  const char *node = NULL;
  char names[256];
  (void)state;
  for (uint32_t g = 0; g < 2; g++)
    for (int k = 0; k < 4; k++) {
      char pod[16], labels[16];
      struct gs_pod_meta meta;
      snprintf(pod, sizeof pod, "%c%d", g ? 'y' : 'x', k);
      snprintf(labels, sizeof labels, "app=%c", g ? 'y' : 'x');
      claim(&f, "a", g, 4 * GIB, pod, 10, true);
      meta = (struct gs_pod_meta){.uid = pod, .ns = "t", .labels = labels};
      assert_int_equal(gs_sched_pod_meta(f.s, &meta), GS_EOK);
    }
  for (uint32_t g = 0; g < 2; g++) /* b full of what may not go */
    claim(&f, "b", g, 16 * GIB, g ? "b1" : "b0", 10, false);
  answer(&f, &req, 1000, GS_EOK, &node, names, sizeof names);
  assert_string_equal(names, "x0 x1 x2 x3"); /* no budget: GPU 0 first */
  assert_int_equal(gs_sched_pdb_upsert(f.s, &pdb), GS_EOK);
  answer(&f, &req, 1000, GS_EOK, &node, names, sizeof names);
  assert_string_equal(node, "a");
  assert_string_equal(names, "y0 y1 y2 y3");
  gs_sched_free(f.s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_gpu_of_claim_pods),
      cmocka_unit_test(test_claims_beside_gpu_mem_pods),
      cmocka_unit_test(test_budgets_of_claim_pods),
      cmocka_unit_test(test_whole_device_claims),
      cmocka_unit_test(test_several_claims),
      cmocka_unit_test(test_claim_preemptor_held),
      cmocka_unit_test(test_whole_device_preemptor_held_on_topology),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
