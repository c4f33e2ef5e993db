/* GPU-aware preemption: the cheapest set of lower-priority pods whose
 * eviction lets the pod fit on one GPU, M GPUs or k whole GPUs (issue 14). */
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
  struct gs_preempt_candidate cands[64];
  size_t n;
};

/* A pod of gib GiB on each of the listed GPUs (a -1 ends the list). */
static void put(struct fx *f, const char *node, const char *uid, int32_t prio, uint64_t gib,
                int g0, int g1) {
  struct gs_alloc_part parts[2] = {{0, (uint32_t)g0, gib}, {0, (uint32_t)g1, gib}};
  struct gs_alloc a = {.ns = "default", .name = uid, .uid = uid, .node = node,
                       .kind = GS_ALLOC_MEM, .state = GS_ALLOC_BOUND, .unit_mib = GIB,
                       .assume_time_ns = 1, .nparts = g1 < 0 ? 1 : 2, .parts = parts,
                       .priority = prio};
  assert_int_equal(gs_ledger_restore(f->l, &a), GS_EOK);
}

static void whole(struct fx *f, const char *node, const char *uid, int32_t prio, int g) {
  struct gs_alloc_part part = {0, (uint32_t)g, 0};
  struct gs_alloc a = {.ns = "default", .name = uid, .uid = uid, .node = node,
                       .kind = GS_ALLOC_WHOLE, .state = GS_ALLOC_BOUND, .unit_mib = GIB,
                       .assume_time_ns = 1, .nparts = 1, .parts = &part, .priority = prio};
  assert_int_equal(gs_ledger_restore(f->l, &a), GS_EOK);
}

/* Every pod on node below prio is a candidate; proposed: the UIDs listed. */
static void candidates(struct fx *f, const char *node, int32_t below, const char *const *proposed) {
  f->n = 0;
  for (size_t i = 0; i < gs_ledger_node_alloc_count(f->l, node); i++) {
    const struct gs_alloc *a = gs_ledger_node_alloc_at(f->l, node, i);
    bool p = false;
    if (a->priority >= below)
      continue;
    for (size_t j = 0; proposed != NULL && proposed[j] != NULL; j++)
      p = p || strcmp(proposed[j], a->uid) == 0;
    f->cands[f->n++] = (struct gs_preempt_candidate){.alloc = a, .proposed = p};
  }
}

/* The chosen victims' UIDs, sorted, comma-joined. */
static enum gs_err pick(struct fx *f, const char *node, const struct gs_pod_request *req,
                         char *out, size_t len, char *reason) {
  struct gs_place_pod pod;
  uint32_t idx[64];
  size_t n = 0;
  const char *names[64];
  enum gs_err code;
  struct gs_status st;
  assert_int_equal(gs_place_prepare(req, &f->policy, &pod, NULL), GS_EOK);
  code = gs_preempt_pick(gs_ledger_node_get(f->l, node), &pod, f->policy.cgpu_max_pods,
                         f->cands, f->n, idx, &n, &st);
  snprintf(reason, GS_REASON_MAX, "%s", st.reason);
  out[0] = '\0';
  if (code != GS_EOK)
    return code;
  for (size_t i = 0; i < n; i++)
    names[i] = f->cands[idx[i]].alloc->uid;
  for (size_t i = 0; i < n; i++) /* sort for stable comparisons */
    for (size_t j = i + 1; j < n; j++)
      if (strcmp(names[j], names[i]) < 0) {
        const char *t = names[i];
        names[i] = names[j];
        names[j] = t;
      }
  for (size_t i = 0; i < n; i++)
    snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? "," : "", names[i]);
  return code;
}

static struct fx *fx_new(uint32_t gpus, uint64_t gib_each, enum gs_mode mode) {
  static struct fx f;
  struct gs_node_spec spec = gs_test_node("n", mode, gpus, gpus * gib_each);
  if (f.l != NULL)
    gs_ledger_free(f.l);
  memset(&f, 0, sizeof f);
  f.l = gs_ledger_new(GIB);
  gs_policy_init(&f.policy);
  assert_int_equal(gs_ledger_node_upsert(f.l, &spec), GS_EOK);
  return &f;
}

/* The node: two 16 GiB GPUs, each full with 6 + 6 + 4 GiB of
 * low-priority pods; a 10 GiB pod of higher priority. The cheapest set on
 * one GPU: two pods, 6 + 4 = 10 GiB (not 6 + 6), all on the same GPU, even
 * when kube-scheduler proposed a spread set that frees no single GPU. */
static void test_cheapest_set_on_one_gpu(void **state) {
  struct fx *f = fx_new(2, 16, GS_MODE_SHARE);
  struct gs_pod_request p = gs_test_mem_pod("hi", 10, 1);
  static const char *spread[] = {"a4", "b6", NULL}; /* 4 on GPU 0, 6 on GPU 1 */
  char got[256], reason[GS_REASON_MAX];
  (void)state;
  p.priority = 1000;
  put(f, "n", "a6", 0, 6, 0, -1);
  put(f, "n", "a6b", 0, 6, 0, -1);
  put(f, "n", "a4", 0, 4, 0, -1);
  put(f, "n", "b6", 0, 6, 1, -1);
  put(f, "n", "b6b", 0, 6, 1, -1);
  put(f, "n", "b4", 0, 4, 1, -1);
  candidates(f, "n", 1000, NULL);
  assert_int_equal(pick(f, "n", &p, got, sizeof got, reason), GS_EOK);
  assert_string_equal(got, "a4,a6"); /* GPU 0 first on a tie */
  /* kube-scheduler's spread proposal frees no GPU: others are taken */
  candidates(f, "n", 1000, spread);
  assert_int_equal(pick(f, "n", &p, got, sizeof got, reason), GS_EOK);
  assert_true(strcmp(got, "a4,a6") == 0 || strcmp(got, "a4,a6b") == 0 ||
              strcmp(got, "b4,b6") == 0 || strcmp(got, "b4,b6b") == 0);
  /* a proposal that works is kept to: its pods only */
  {
    static const char *ok[] = {"b6", "b6b", NULL};
    candidates(f, "n", 1000, ok);
    assert_int_equal(pick(f, "n", &p, got, sizeof got, reason), GS_EOK);
    assert_string_equal(got, "b6,b6b");
  }
  gs_ledger_free(f->l);
  f->l = NULL;
}

/* Lower priorities go first, then fewer pods: a set of priority-1 pods wins
 * over one pod of priority 5, even if it is two pods. Equal or higher
 * priority is never a candidate. */
static void test_priority_then_count_then_memory(void **state) {
  struct fx *f = fx_new(1, 16, GS_MODE_SHARE);
  struct gs_pod_request p = gs_test_mem_pod("hi", 8, 1);
  char got[256], reason[GS_REASON_MAX];
  (void)state;
  p.priority = 10;
  put(f, "n", "p5", 5, 8, 0, -1);
  put(f, "n", "p1a", 1, 4, 0, -1);
  put(f, "n", "p1b", 1, 4, 0, -1);
  candidates(f, "n", 10, NULL);
  assert_int_equal(pick(f, "n", &p, got, sizeof got, reason), GS_EOK);
  assert_string_equal(got, "p1a,p1b");
  /* the preemptor at priority 5: p5 is not a candidate; the two p1 still do */
  p.priority = 5;
  candidates(f, "n", 5, NULL);
  assert_int_equal(pick(f, "n", &p, got, sizeof got, reason), GS_EOK);
  assert_string_equal(got, "p1a,p1b");
  /* at priority 1 nothing may go */
  p.priority = 1;
  candidates(f, "n", 1, NULL);
  assert_int_equal(f->n, 0);
  assert_int_equal(pick(f, "n", &p, got, sizeof got, reason), GS_ENOFIT);
  assert_string_equal(reason, "no lower-priority pods free one GPU for the pod");
  gs_ledger_free(f->l);
  f->l = NULL;
}

/* M GPUs: a 2 x 8 GiB pod on a node of four 16 GiB GPUs each holding
 * 12 GiB: two GPUs are freed, one small pod each; a two-GPU pod counts once. */
static void test_multi_card_frees_m_gpus(void **state) {
  struct fx *f = fx_new(4, 16, GS_MODE_SHARE);
  struct gs_pod_request p = gs_test_mem_pod("hi", 16, 2);
  char got[256], reason[GS_REASON_MAX];
  (void)state;
  p.priority = 100;
  put(f, "n", "g0-8", 0, 8, 0, -1);
  put(f, "n", "g0-4", 0, 4, 0, -1);
  put(f, "n", "g1-12", 50, 12, 1, -1);
  put(f, "n", "g2-8", 0, 8, 2, -1);
  put(f, "n", "g2-4", 0, 4, 2, -1);
  put(f, "n", "g3-12", 50, 12, 3, -1);
  candidates(f, "n", 100, NULL);
  assert_int_equal(pick(f, "n", &p, got, sizeof got, reason), GS_EOK);
  assert_string_equal(got, "g0-4,g2-4");
  /* one pod across GPUs 1 and 3 (6 GiB on each): evicting it frees both */
  f = fx_new(4, 16, GS_MODE_SHARE);
  put(f, "n", "full0", 200, 16, 0, -1);
  put(f, "n", "full2", 200, 16, 2, -1);
  put(f, "n", "both", 0, 6, 1, 3);
  put(f, "n", "g1", 0, 4, 1, -1);
  put(f, "n", "g3", 0, 4, 3, -1);
  candidates(f, "n", 100, NULL);
  assert_int_equal(pick(f, "n", &p, got, sizeof got, reason), GS_EOK);
  assert_string_equal(got, "both");
  /* three GPUs full of high priority: never */
  p = gs_test_mem_pod("hi", 24, 3);
  p.priority = 100;
  candidates(f, "n", 100, NULL);
  assert_int_equal(pick(f, "n", &p, got, sizeof got, reason), GS_ENOFIT);
  assert_string_equal(reason, "no lower-priority pods free 3 GPUs for the pod");
  gs_ledger_free(f->l);
  f->l = NULL;
}

/* Whole GPUs: every pod on a GPU must go; a GPU holding a protected pod is
 * never chosen. */
static void test_whole_gpus(void **state) {
  struct fx *f = fx_new(4, 16, GS_MODE_TOPOLOGY);
  struct gs_pod_request p = gs_test_mem_pod("hi", 0, 1);
  char got[256], reason[GS_REASON_MAX];
  (void)state;
  p.whole_gpus[0] = 2;
  p.priority = 100;
  whole(f, "n", "w0", 0, 0);
  whole(f, "n", "w1", 200, 1);
  whole(f, "n", "w2", 5, 2);
  candidates(f, "n", 100, NULL);
  /* GPU 3 is free; one more: GPU 0 (priority 0) beats GPU 2 (priority 5) */
  assert_int_equal(pick(f, "n", &p, got, sizeof got, reason), GS_EOK);
  assert_string_equal(got, "w0");
  p.whole_gpus[0] = 4; /* w1 may not go */
  assert_int_equal(pick(f, "n", &p, got, sizeof got, reason), GS_ENOFIT);
  gs_ledger_free(f->l);
  f->l = NULL;
}

/* cgpu: the pod-count cap needs a slot freed even when memory suffices. */
static void test_cgpu_cap(void **state) {
  struct fx *f = fx_new(1, 16, GS_MODE_CGPU);
  struct gs_pod_request p = gs_test_mem_pod("hi", 1, 1);
  char got[256], reason[GS_REASON_MAX];
  (void)state;
  f->policy.cgpu_max_pods = 3;
  p.priority = 9;
  put(f, "n", "c1", 0, 1, 0, -1);
  put(f, "n", "c2", 0, 2, 0, -1);
  put(f, "n", "c3", 0, 3, 0, -1);
  candidates(f, "n", 9, NULL);
  assert_int_equal(pick(f, "n", &p, got, sizeof got, reason), GS_EOK);
  assert_string_equal(got, "c1"); /* one slot, the least memory */
  gs_ledger_free(f->l);
  f->l = NULL;
}

/* Already fits: no victims. The wrong kind of node: unresolvable. */
static void test_fits_and_wrong_node(void **state) {
  struct fx *f = fx_new(2, 16, GS_MODE_SHARE);
  struct gs_pod_request p = gs_test_mem_pod("hi", 4, 1);
  char got[256], reason[GS_REASON_MAX];
  (void)state;
  p.priority = 1;
  put(f, "n", "x", 0, 14, 0, -1);
  candidates(f, "n", 1, NULL);
  assert_int_equal(pick(f, "n", &p, got, sizeof got, reason), GS_EOK);
  assert_string_equal(got, "");
  p.mem_units[0] = 0;
  p.whole_gpus[0] = 1;
  assert_int_equal(pick(f, "n", &p, got, sizeof got, reason), GS_EUNRESOLVABLE);
  assert_string_equal(reason, "node does not serve whole GPUs");
  gs_ledger_free(f->l);
  f->l = NULL;
}

/* Many small pods on one GPU: the search stays bounded and still finds a
 * set of the fewest pods. */
static void test_many_pods_bounded(void **state) {
  struct fx *f = fx_new(1, 64, GS_MODE_SHARE);
  struct gs_pod_request p = gs_test_mem_pod("hi", 40, 1);
  char got[1024], reason[GS_REASON_MAX], uid[16];
  (void)state;
  p.priority = 1;
  for (int i = 0; i < 60; i++) {
    snprintf(uid, sizeof uid, "s%02d", i);
    put(f, "n", uid, 0, 1, 0, -1);
  }
  candidates(f, "n", 1, NULL);
  assert_int_equal(pick(f, "n", &p, got, sizeof got, reason), GS_EOK);
  assert_int_equal(strlen(got), 36 * 3 + 35); /* 36 pods of 1 GiB: 60 - 36 + 40 = 64 */
  gs_ledger_free(f->l);
  f->l = NULL;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cheapest_set_on_one_gpu),
      cmocka_unit_test(test_priority_then_count_then_memory),
      cmocka_unit_test(test_multi_card_frees_m_gpus),
      cmocka_unit_test(test_whole_gpus),
      cmocka_unit_test(test_cgpu_cap),
      cmocka_unit_test(test_fits_and_wrong_node),
      cmocka_unit_test(test_many_pods_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
