/* GPU-aware preemption under disruption budgets and the host
 * (gs_preempt_pick_limited, gs_selector_matches; issue 34). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <gpushare/ledger.h>
#include <gpushare/preempt.h>

#include "../testutil.h"

#define GIB 1024u

struct fx {
  struct gs_ledger *l;
  struct gs_policy policy;
  struct gs_preempt_candidate cands[16];
  size_t n;
};

static void fx_init(struct fx *f, uint32_t gpus, uint64_t gib_each) {
  struct gs_node_spec spec = gs_test_node("n", GS_MODE_SHARE, gpus, gpus * gib_each);
  memset(f, 0, sizeof *f);
  f->l = gs_ledger_new(GIB);
  gs_policy_init(&f->policy);
  assert_int_equal(gs_ledger_node_upsert(f->l, &spec), GS_EOK);
}

/* The preemptor: gib GiB on one GPU, priority 100. */
static struct gs_pod_request preemptor(uint64_t gib) {
  struct gs_pod_request p = gs_test_mem_pod("hi", gib, 1);
  p.priority = 100;
  return p;
}

/* A bound pod of gib GiB on GPU g. */
static void put(struct fx *f, const char *uid, int32_t prio, uint64_t gib, uint32_t g) {
  struct gs_alloc_part part = {0, g, gib};
  struct gs_alloc a = {.ns = "default", .name = uid, .uid = uid, .node = "n",
                       .kind = GS_ALLOC_MEM, .state = GS_ALLOC_BOUND, .unit_mib = GIB,
                       .assume_time_ns = 1, .nparts = 1, .parts = &part, .priority = prio};
  assert_int_equal(gs_ledger_restore(f->l, &a), GS_EOK);
}

static void sort_cands(struct fx *f) {
  for (size_t i = 0; i < f->n; i++)
    for (size_t j = i + 1; j < f->n; j++)
      if (strcmp(f->cands[j].alloc->uid, f->cands[i].alloc->uid) < 0) {
        struct gs_preempt_candidate t = f->cands[i];
        f->cands[i] = f->cands[j];
        f->cands[j] = t;
      }
}

/* Candidates again from the ledger (its records move as it grows), in uid
 * order. */
static void cands(struct fx *f, const uint64_t *cpu, const uint64_t *budgets) {
  f->n = gs_ledger_node_alloc_count(f->l, "n");
  for (size_t i = 0; i < f->n; i++) {
    const struct gs_alloc *a = gs_ledger_node_alloc_at(f->l, "n", i);
    size_t k = (size_t)(a->uid[1] - '0'); /* uids "v0".."v9": their index in cpu, budgets */
    f->cands[i] = (struct gs_preempt_candidate){.alloc = a, .cpu_milli = cpu[k],
                                                .budgets = budgets[k]};
  }
  sort_cands(f);
}

static enum gs_err pick(struct fx *f, const struct gs_pod_request *req,
                         const struct gs_preempt_limits *lim, char *out, uint32_t *viol,
                         char *reason) {
  struct gs_place_pod pod;
  uint32_t idx[16];
  size_t n = 0;
  struct gs_status st;
  enum gs_err code;
  assert_int_equal(gs_place_prepare(req, &f->policy, &pod, NULL), GS_EOK);
  *viol = 99;
  code = gs_preempt_pick_limited(gs_ledger_node_get(f->l, "n"), &pod, 0, f->cands, f->n, lim,
                                 idx, &n, viol, &st);
  snprintf(reason, GS_REASON_MAX, "%s", st.reason);
  out[0] = '\0';
  for (size_t i = 0; code == GS_EOK && i < n; i++) /* candidates are in uid order */
    snprintf(out + strlen(out), 64, "%s%s", i ? "," : "", f->cands[idx[i]].alloc->uid);
  return code;
}

/* pick answers GS_EOK with the victims want ("v0,v2"); returns the
 * violations counted. */
static uint32_t picks(struct fx *f, const struct gs_pod_request *req,
                      const struct gs_preempt_limits *lim, const char *want) {
  char got[256], reason[GS_REASON_MAX];
  uint32_t viol;
  assert_int_equal(pick(f, req, lim, got, &viol, reason), GS_EOK);
  assert_string_equal(got, want);
  return viol;
}

/* Two GPUs of 16 GiB, each full with one 16 GiB pod: v0 on GPU 0, v1 on
 * GPU 1; a 10 GiB preemptor. A budget allowing no disruption over v0 (the
 * cheaper set by order) moves the choice to v1, no violation. */
static void test_budget_moves_the_choice(void **state) {
  struct fx f;
  struct gs_pod_request p = preemptor(10);
  uint64_t cpu[2] = {0, 0}, budgets[2] = {1, 0};
  int32_t allowed[1] = {0};
  struct gs_preempt_limits lim = {allowed, 1, false, 0, 0};
  (void)state;
  fx_init(&f, 2, 16);
  put(&f, "v0", 0, 16, 0);
  put(&f, "v1", 0, 16, 1);
  cands(&f, cpu, budgets);
  picks(&f, &p, NULL, "v0"); /* without budgets: GPU 0 on the tie */
  assert_int_equal(picks(&f, &p, &lim, "v1"), 0);
  /* a budget allowing one disruption: v0 may go, nothing violated */
  allowed[0] = 1;
  assert_int_equal(picks(&f, &p, &lim, "v0"), 0);
  /* both protected: the set is still found, and its violation counted */
  allowed[0] = 0;
  budgets[1] = 1;
  cands(&f, cpu, budgets);
  assert_int_equal(picks(&f, &p, &lim, "v0"), 1);
  gs_ledger_free(f.l);
}

/* When every set violates, the least-violating one: one GPU holds two pods
 * under an exhausted budget (both must go), the other one such pod and one
 * free: the second GPU, one violation. */
static void test_least_violating(void **state) {
  struct fx f;
  struct gs_pod_request p = preemptor(16);
  uint64_t cpu[3] = {0, 0, 0}, budgets[3] = {1, 1, 1};
  int32_t allowed[1] = {0};
  struct gs_preempt_limits lim = {allowed, 1, false, 0, 0};
  (void)state;
  fx_init(&f, 2, 16);
  put(&f, "v0", 0, 8, 0);
  put(&f, "v1", 0, 8, 0);
  put(&f, "v2", 0, 16, 1);
  cands(&f, cpu, budgets);
  assert_int_equal(picks(&f, &p, &lim, "v2"), 1);
  gs_ledger_free(f.l);
}

/* Violations counted as kube-scheduler counts them: the most important
 * victim first takes what a budget allows. */
static void test_budget_counted_kube_style(void **state) {
  uint64_t b[3] = {1, 1, 1};
  int32_t prios[3] = {5, 1, 3}, allowed[1] = {1};
  (void)state;
  /* the most important first: prio 5 takes the one disruption, the others violate */
  assert_int_equal(gs_preempt_violations(b, prios, 3, allowed, 1), 2);
  allowed[0] = 3;
  assert_int_equal(gs_preempt_violations(b, prios, 3, allowed, 1), 0);
  /* a pod under two budgets violates when either is short */
  {
    uint64_t b2[2] = {3, 2};
    int32_t p2[2] = {1, 1}, a2[2] = {5, 0};
    assert_int_equal(gs_preempt_violations(b2, p2, 2, a2, 2), 2);
  }
}

/* The host: GPU 0's pod frees the GPU but 2 CPUs; the preemptor needs 8
 * and the host has none free. GPU 1's pod frees 8: it is the one. With
 * only GPU 0's pod, nothing is answered, and the reason says why. */
static void test_host_cpu(void **state) {
  struct fx f;
  struct gs_pod_request p = preemptor(16);
  uint64_t cpu[2] = {2000, 8000}, budgets[2] = {0, 0};
  struct gs_preempt_limits lim = {NULL, 0, true, 0, 0};
  struct gs_host host = {.cpu_milli = 16000, .mem_mib = 65536, .cpu_used_milli = 16000,
                         .mem_used_mib = 1024};
  char got[256], reason[GS_REASON_MAX];
  uint32_t viol;
  (void)state;
  fx_init(&f, 2, 16);
  p.cpu_milli = 8000;
  put(&f, "v0", 0, 16, 0);
  put(&f, "v1", 5, 16, 1);
  assert_int_equal(gs_ledger_node_set_host(f.l, "n", &host), GS_EOK);
  cands(&f, cpu, budgets);
  /* without the host check: v0 (lower priority) */
  picks(&f, &p, NULL, "v0");
  picks(&f, &p, &lim, "v1");
  /* v1 may not go: no set frees the host */
  f.n = 1;
  assert_int_equal(pick(&f, &p, &lim, got, &viol, reason), GS_ENOFIT);
  assert_string_equal(reason, "lower-priority pods free GPUs for the pod but not its CPU and "
                              "memory on the node");
  /* another victim that holds no GPU (kube-scheduler's) frees the rest */
  lim.freed_cpu_milli = 6000;
  picks(&f, &p, &lim, "v0");
  /* an unknown host (cpu 0) is not checked */
  lim.freed_cpu_milli = 0;
  host = (struct gs_host){0, 0, 0, 0};
  assert_int_equal(gs_ledger_node_set_host(f.l, "n", &host), GS_EOK);
  picks(&f, &p, &lim, "v0");
  gs_ledger_free(f.l);
}

/* A GPU-freeing victim short of CPU is topped up with another
 * lower-priority pod that frees the rest. */
static void test_host_topped_up(void **state) {
  struct fx f;
  struct gs_pod_request p = preemptor(16);
  uint64_t cpu[3] = {2000, 0, 6000}, budgets[3] = {0, 0, 0};
  struct gs_preempt_limits lim = {NULL, 0, true, 0, 0};
  struct gs_host host = {.cpu_milli = 8000, .cpu_used_milli = 8000};
  (void)state;
  fx_init(&f, 2, 16);
  p.cpu_milli = 8000;
  put(&f, "v0", 0, 16, 0);
  put(&f, "v1", 50, 16, 1); /* frees a GPU, no CPU */
  put(&f, "v2", 1, 0, 1);   /* no GPU memory here, 6 CPUs */
  assert_int_equal(gs_ledger_node_set_host(f.l, "n", &host), GS_EOK);
  cands(&f, cpu, budgets);
  picks(&f, &p, &lim, "v0,v2");
  gs_ledger_free(f.l);
}

static void test_selector(void **state) {
  const char *labels = "app=web\ntier=gold\n";
  (void)state;
  assert_true(gs_selector_matches("", labels));
  assert_false(gs_selector_matches(NULL, labels));
  assert_true(gs_selector_matches("=app=web", labels));
  assert_true(gs_selector_matches("=app=db,web\n+tier", labels));
  assert_false(gs_selector_matches("=app=web\n=tier=silver", labels));
  assert_false(gs_selector_matches("=app=we", labels)); /* whole values only */
  assert_false(gs_selector_matches("=ap=web", labels)); /* whole keys only */
  assert_true(gs_selector_matches("!app=db\n-zone", labels));
  assert_false(gs_selector_matches("!app=db,web", labels));
  assert_true(gs_selector_matches("!zone=a", labels)); /* NotIn: holds without the label */
  assert_false(gs_selector_matches("-app", labels));
  assert_false(gs_selector_matches("?app", labels)); /* malformed: selects nothing */
  assert_true(gs_selector_matches("+app", "x=1\napp=\n")); /* an empty value exists */
  assert_false(gs_selector_matches("=app=web", NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_budget_moves_the_choice),
      cmocka_unit_test(test_least_violating),
      cmocka_unit_test(test_budget_counted_kube_style),
      cmocka_unit_test(test_host_cpu),
      cmocka_unit_test(test_host_topped_up),
      cmocka_unit_test(test_selector),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
