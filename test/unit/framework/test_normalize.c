/* The extender's prioritize scores under nodePolicy frag spread over the
 * request's nodes (fragScoreNormalize; gs_place_scores_normalize, place.h;
 * issue 32): the arithmetic (rounding, ties, refused nodes), and the
 * framework's prioritize with and without it on the same cluster — the
 * same verdicts and 0..100 scores, the 0..10 ones spread; the memo's path
 * answers as the plain one; other policies are left as they were. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "framework.h"
#include "plugins.h"
#include "fw_test.h"

#include "../testutil.h"

#include <stdio.h>
#include <string.h>

#define NODES 9

static const char *const names[NODES] = {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "plain"};

static void set(struct gs_node_result *r, size_t n, const int64_t *score100) {
  memset(r, 0, n * sizeof *r);
  for (size_t i = 0; i < n; i++) {
    r[i].code = score100[i] < 0 ? GS_ENOFIT : GS_EOK;
    r[i].score100 = score100[i] < 0 ? 0 : score100[i];
    r[i].score = 77; /* overwritten */
  }
}

/* Exact scores: min..max onto 0..10, rounded half up; refused nodes 0 and
 * left out of min and max; score100 kept. */
static void test_arithmetic(void **state) {
  static const struct {
    int64_t in[5]; /* score100, -1 refused */
    int64_t want[5];
  } cases[] = {
      {{80, 55, 20, -1, 55}, {10, 6, 0, 0, 6}}, /* (55−20)/60 × 10 = 5.83 */
      {{0, 5, 100, 15, 4}, {0, 1, 10, 2, 0}},   /* 0.5 → 1, 1.5 → 2, 0.4 → 0 */
      {{100, 0, -1, 50, 95}, {10, 0, 0, 5, 10}}, /* 9.5 → 10 */
      {{42, 42, -1, 42, 42}, {10, 10, 0, 10, 10}}, /* all equal: the top */
      {{-1, -1, 61, -1, -1}, {0, 0, 10, 0, 0}},    /* one node fits */
      {{-1, -1, -1, -1, -1}, {0, 0, 0, 0, 0}},     /* none fits */
      {{51, 50, 50, 50, 50}, {10, 0, 0, 0, 0}},    /* one point apart */
  };
  struct gs_node_result r[5];
  (void)state;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    set(r, 5, cases[c].in);
    gs_place_scores_normalize(r, 5, 10);
    for (size_t i = 0; i < 5; i++) {
      if (r[i].score != cases[c].want[i])
        fail_msg("case %zu node %zu: score %lld, want %lld", c, i, (long long)r[i].score,
                 (long long)cases[c].want[i]);
      assert_int_equal(r[i].score100, cases[c].in[i] < 0 ? 0 : cases[c].in[i]);
    }
  }
  /* on the framework's scale too */
  set(r, 5, cases[0].in);
  gs_place_scores_normalize(r, 5, 100);
  assert_int_equal(r[0].score, 100);
  assert_int_equal(r[1].score, 58); /* 58.33 */
  assert_int_equal(r[2].score, 0);
  assert_int_equal(r[3].score, 0);
  gs_place_scores_normalize(r, 0, 10); /* no nodes: nothing to do */
}

/* Eight share nodes of two 16-GiB GPUs, loaded differently, four of them
 * with a host whose CPU is mostly taken, and a node without GPUs. */
static struct gs_sched *cluster(enum gs_placement node_policy, bool normalize) {
  static const uint64_t used[8][2] = {{0, 0}, {12, 0}, {8, 8}, {4, 14},
                                      {15, 15}, {10, 6}, {2, 0}, {12, 12}};
  struct gs_policy policy;
  struct gs_sched *fw;
  gs_policy_init(&policy);
  policy.node_policy = node_policy;
  policy.frag_aware = true;
  policy.frag_normalize = normalize;
  fw = fw_test_new(&policy);
  for (uint32_t i = 0; i < NODES; i++) {
    bool plain = i == NODES - 1;
    struct gs_node_spec spec = gs_test_node(names[i], plain ? GS_MODE_NONE : GS_MODE_SHARE,
                                            plain ? 0 : 2, plain ? 0 : 32);
    assert_int_equal(gs_fw_node_upsert(fw, &spec), GS_EOK);
    if (plain)
      continue;
    for (uint32_t g = 0; g < 2; g++) {
      char uid[32];
      struct gs_alloc_part part;
      struct gs_alloc a;
      if (used[i][g] == 0)
        continue;
      snprintf(uid, sizeof uid, "load-%u-%u", i, g);
      a = gs_test_bound_mem(&part, uid, names[i], g, used[i][g]);
      assert_int_equal(gs_fw_pod_restore(fw, &a), GS_EOK);
    }
    if (i % 2) {
      const char *one[1] = {names[i]};
      struct gs_host h = {32000, 131072, 28000 + 1000 * (i / 2), 65536};
      gs_sched_nodes_set_host(fw, one, &h, 1);
    }
  }
  return fw;
}

static struct gs_pod_request pod_of(int kind) {
  struct gs_pod_request p = gs_test_mem_pod("p", 4, 1);
  p.cpu_milli = 2000;
  p.mem_mib = 8192;
  if (kind == 1) { /* two cards of 3 GiB */
    p.mem_units[0] = 6;
    p.gpu_count = 2;
  } else if (kind == 2) { /* CPU only: frag scores its host request */
    p.mem_units[0] = 0;
    p.cpu_milli = 3000;
  }
  return p;
}

/* Prioritize twice (the first call teaches frag the pod's class). */
static void prioritize(struct gs_sched *fw, const struct gs_pod_request *p,
                       struct gs_node_result *r) {
  assert_int_equal(gs_sched_prioritize(fw, p, names, NODES, 1, r), GS_EOK);
  assert_int_equal(gs_sched_prioritize(fw, p, names, NODES, 1, r), GS_EOK);
}

static void test_frag_prioritize_spreads_the_extender_score(void **state) {
  struct gs_sched *plain = cluster(GS_PLACE_FRAG, false), *norm = cluster(GS_PLACE_FRAG, true);
  (void)state;
  for (int kind = 0; kind < 3; kind++) {
    struct gs_pod_request p = pod_of(kind);
    struct gs_node_result a[NODES], b[NODES], want[NODES];
    int64_t lo = 100, hi = 0;
    size_t fit = 0;
    prioritize(plain, &p, a);
    prioritize(norm, &p, b);
    for (size_t i = 0; i < NODES; i++) {
      assert_int_equal(b[i].code, a[i].code);
      assert_int_equal(b[i].score100, a[i].score100);
      assert_string_equal(b[i].reason, a[i].reason);
      /* without the key: score100 rounded half up */
      assert_int_equal(a[i].score, (a[i].score100 + 5) / 10);
      if (a[i].code == GS_EOK) {
        fit++;
        lo = a[i].score100 < lo ? a[i].score100 : lo;
        hi = a[i].score100 > hi ? a[i].score100 : hi;
      }
    }
    /* the cluster gives the spread something to do */
    if (fit < 3 || hi - lo < 3)
      fail_msg("kind %d: %zu nodes fit, score100 %lld..%lld", kind, fit, (long long)lo,
               (long long)hi);
    if (kind < 2) /* no GPUs: refused (a CPU-only pod fits) */
      assert_int_not_equal(a[NODES - 1].code, GS_EOK);
    memcpy(want, a, sizeof want);
    gs_place_scores_normalize(want, NODES, 10);
    for (size_t i = 0; i < NODES; i++) {
      if (b[i].score != want[i].score)
        fail_msg("kind %d node %s: score %lld, want %lld (score100 %lld in %lld..%lld)", kind,
                 names[i], (long long)b[i].score, (long long)want[i].score,
                 (long long)a[i].score100, (long long)lo, (long long)hi);
      if (a[i].code == GS_EOK && a[i].score100 == hi)
        assert_int_equal(b[i].score, 10);
      if (a[i].code == GS_EOK && a[i].score100 == lo)
        assert_int_equal(b[i].score, 0);
      if (a[i].code != GS_EOK)
        assert_int_equal(b[i].score, 0);
    }
    /* the memo's path (the plugin's) answers as the plain one */
    {
      struct gs_sched_memo *memo = gs_sched_memo_new();
      const struct gs_node_result *m;
      assert_non_null(memo);
      for (int round = 0; round < 2; round++) { /* evaluated, then remembered */
        assert_int_equal(gs_sched_prioritize_memo(norm, memo, &p, names, NODES, 1, &m), GS_EOK);
        for (size_t i = 0; i < NODES; i++) {
          assert_int_equal(m[i].score, b[i].score);
          assert_int_equal(m[i].score100, b[i].score100);
        }
      }
      gs_sched_memo_free(memo);
    }
  }
  gs_sched_free(plain);
  gs_sched_free(norm);
}

/* binpack and spread: the key changes nothing; a pod gpushare has no
 * opinion on keeps 0 everywhere. */
static void test_other_policies_and_skipped_pods_unchanged(void **state) {
  (void)state;
  for (int pol = 0; pol < 2; pol++) {
    enum gs_placement np = pol ? GS_PLACE_SPREAD : GS_PLACE_BINPACK;
    struct gs_sched *plain = cluster(np, false), *norm = cluster(np, true);
    struct gs_pod_request p = pod_of(0), none = gs_test_pod("none", "uid-none");
    struct gs_node_result a[NODES], b[NODES];
    prioritize(plain, &p, a);
    prioritize(norm, &p, b);
    for (size_t i = 0; i < NODES; i++) {
      assert_int_equal(b[i].code, a[i].code);
      assert_int_equal(b[i].score, a[i].score);
      assert_int_equal(b[i].score, (b[i].score100 + 5) / 10);
    }
    gs_sched_free(plain);
    gs_sched_free(norm);
    norm = cluster(GS_PLACE_FRAG, true);
    prioritize(norm, &none, b);
    for (size_t i = 0; i < NODES; i++) {
      assert_int_equal(b[i].code, GS_EOK);
      assert_int_equal(b[i].score, 0);
    }
    gs_sched_free(norm);
  }
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_arithmetic),
             cmocka_unit_test(test_frag_prioritize_spreads_the_extender_score),
             cmocka_unit_test(test_other_policies_and_skipped_pods_unchanged))
