/* The memo of the last prioritize (gs_sched_prioritize_memo): node for node
 * the answers of a fresh gs_sched_prioritize after every kind of ledger
 * change — reservations, releases, GPU health, node updates, nodes added
 * and removed, more changes than the log holds — while reusing what it
 * may: a pod signed as the last one is evaluated again only on the nodes
 * that changed. */
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
#include <stdlib.h>
#include <string.h>

#define NODES 600
/* the list also names nodes the ledger does not know (yet) */
#define LISTED (NODES + 8)

static char names_buf[LISTED][16];
static const char *names[LISTED];

static uint32_t rnd(uint32_t *s, uint32_t n) {
  *s = *s * 1103515245u + 12345u;
  return (*s >> 8) % n;
}

static struct gs_node_spec spec_of(uint32_t i, uint32_t *s) {
  static const enum gs_mode modes[] = {GS_MODE_SHARE, GS_MODE_CGPU, GS_MODE_MPS, GS_MODE_NONE};
  uint32_t gpus = 1 + rnd(s, 8), per = rnd(s, 2) ? 16 : 32;
  enum gs_mode mode = modes[rnd(s, 4)];
  struct gs_node_spec spec = gs_test_node(names[i], mode, mode == GS_MODE_NONE ? 0 : gpus,
                                          mode == GS_MODE_NONE ? 0 : (uint64_t)gpus * per);
  spec.placement = rnd(s, 3) == 0 ? GS_PLACE_SPREAD : GS_PLACE_BINPACK;
  return spec;
}

static struct gs_sched *cluster(enum gs_placement node_policy, uint32_t *s) {
  struct gs_policy policy;
  struct gs_sched *fw;
  gs_policy_init(&policy);
  policy.node_policy = node_policy;
  policy.frag_aware = node_policy == GS_PLACE_FRAG;
  policy.cgpu_max_pods = 3; /* reached now and then: the cap's refusals change too */
  fw = fw_test_new(&policy);
  for (uint32_t i = 0; i < LISTED; i++) {
    snprintf(names_buf[i], sizeof names_buf[i], "n%04u", i);
    names[i] = names_buf[i];
  }
  for (uint32_t i = 0; i < NODES; i++) {
    struct gs_node_spec spec = spec_of(i, s);
    assert_int_equal(gs_fw_node_upsert(fw, &spec), GS_EOK);
  }
  return fw;
}

/* Three pod shapes (so that signatures repeat and change) and, now and
 * then, one that asks for no GPU or one too large for any GPU. */
static struct gs_pod_request pod_of(uint32_t seq, uint32_t *s) {
  struct gs_pod_request p;
  char name[24];
  snprintf(name, sizeof name, "p%u", seq);
  p = gs_test_mem_pod(name, 4, 1);
  switch (rnd(s, 10)) {
  case 0:
    p.mem_units[0] = 8;
    p.gpu_count = 2;
    break;
  case 1:
    p.mem_units[0] = 12;
    break;
  case 2:
    p.mem_units[0] = 0; /* asks for no GPU: every node passes */
    break;
  case 3:
    p.mem_units[0] = 999; /* fits no GPU anywhere */
    break;
  default:
    break;
  }
  return p;
}

static void same(const struct gs_node_result *want, const struct gs_node_result *got,
                 uint32_t step) {
  for (size_t i = 0; i < LISTED; i++)
    if (want[i].code != got[i].code || want[i].score != got[i].score ||
        want[i].score100 != got[i].score100 || strcmp(want[i].reason, got[i].reason) != 0)
      fail_msg("step %u, node %s: memo %d %lld \"%s\", fresh %d %lld \"%s\"", step, names[i],
               got[i].code, (long long)got[i].score100, got[i].reason, want[i].code,
               (long long)want[i].score100, want[i].reason);
}

/* The best node of a prioritize, or -1. */
static int best(const struct gs_node_result *r) {
  int b = -1;
  for (int i = 0; i < LISTED; i++)
    if (r[i].code == GS_EOK && (b < 0 || r[i].score100 > r[b].score100))
      b = i;
  return b;
}

struct placed {
  char uid[GS_UID_MAX + 1];
};

/* One step of a cluster's life; returns how many ledger changes it made
 * (*set: a node came or left). */
static unsigned change(struct gs_sched *fw, uint32_t *s, struct placed *live, size_t *nlive,
                       bool *present, bool *set) {
  uint32_t i = rnd(s, NODES), what = rnd(s, 20);
  if (what < 8 && *nlive > 0) { /* a pod ends */
    size_t k = rnd(s, (uint32_t)*nlive);
    gs_fw_pod_gone(fw, live[k].uid);
    live[k] = live[--*nlive];
    return 1;
  }
  if (what < 11) {
    assert_int_equal(gs_fw_node_set_unhealthy(fw, names[i], rnd(s, 4) ? 0 : 1u << rnd(s, 4)),
                     present[i] ? GS_EOK : GS_ENOTFOUND);
    return present[i];
  }
  if (what < 13 && present[i]) { /* the device plugin reports other GPUs */
    struct gs_node_spec spec = spec_of(i, s);
    assert_int_equal(gs_fw_node_upsert(fw, &spec), GS_EOK);
    return 1;
  }
  if (what == 13) { /* a node leaves, or comes (back) */
    if (present[i]) {
      assert_int_equal(gs_sched_node_remove(fw, names[i]), GS_EOK);
      for (size_t k = 0; k < *nlive;) /* its pods went with it */
        if (strncmp(live[k].uid, names[i], 5) == 0)
          live[k] = live[--*nlive];
        else
          k++;
    } else {
      struct gs_node_spec spec = spec_of(i, s);
      assert_int_equal(gs_fw_node_upsert(fw, &spec), GS_EOK);
    }
    present[i] = !present[i];
    *set = true;
    return 1;
  }
  return 0;
}

/* A scheduler's life over the memo: every answer the fresh one's; reuse
 * whenever the pod is signed as the last and few nodes changed. */
static void run_life(enum gs_placement np, uint32_t seed) {
  static struct gs_node_result fresh[LISTED];
  static struct placed live[4096];
  static bool present[LISTED];
  const struct gs_node_result *got;
  struct gs_sched_memo *memo = gs_sched_memo_new();
  uint32_t s = seed;
  struct gs_sched *fw = cluster(np, &s);
  size_t nlive = 0, reused = 0;
  char last_sig[GS_REASON_MAX] = "";
  unsigned changes = 0;
  bool set = false;
  assert_non_null(memo);
  for (uint32_t i = 0; i < LISTED; i++)
    present[i] = i < NODES;
  for (uint32_t step = 0; step < 1500; step++) {
    struct gs_pod_request p = pod_of(step, &s);
    char sig[GS_REASON_MAX];
    bool signed_ = gs_place_signature(&p, gs_sched_policy(fw), sig) == GS_EOK && sig[0] != '\0';
    int b;
    assert_int_equal(gs_sched_prioritize_memo(fw, memo, &p, names, LISTED, step, &got), GS_EOK);
    assert_int_equal(gs_sched_prioritize(fw, &p, names, LISTED, step, fresh), GS_EOK);
    same(fresh, got, step);
    /* reuse exactly when allowed: the same signature, no node came or
     * left, a few changes */
    if (signed_ && strcmp(sig, last_sig) == 0 && !set && changes <= 16) {
      assert_true(gs_sched_memo_evaluated(memo) <= changes);
      reused++;
    } else if (!signed_ || strcmp(sig, last_sig) != 0) {
      if (p.mem_units[0] != 0 && p.mem_units[0] != 999)
        assert_int_equal(gs_sched_memo_evaluated(memo), LISTED);
    }
    snprintf(last_sig, sizeof last_sig, "%s", signed_ ? sig : "");
    changes = 0;
    set = false;
    /* kube-scheduler reserves the pod on the best node */
    if ((b = best(fresh)) >= 0 && p.mem_units[0] != 0 && nlive < 4096) {
      struct gs_annotations annots = {0};
      struct gs_status st = {GS_EOK, GS_R_OTHER, ""};
      bool fresh_res = false;
      snprintf(p.uid, sizeof p.uid, "%s-%u", names[b], step); /* the node in the UID */
      assert_int_equal(gs_fw_reserve(fw, &p, names[b], step, &annots, &fresh_res, &st),
                       GS_EOK);
      gs_annotations_clear(&annots);
      gs_sched_post_bind(fw, p.uid);
      snprintf(live[nlive++].uid, sizeof live[0].uid, "%s", p.uid);
      changes++;
    }
    if (rnd(&s, 3) == 0)
      changes += change(fw, &s, live, &nlive, present, &set);
    if (rnd(&s, 50) == 0) /* a burst: more changes than the log holds */
      for (int k = 0; k < 300; k++)
        changes += change(fw, &s, live, &nlive, present, &set);
  }
  if (np != GS_PLACE_FRAG)
    assert_true(reused > 300); /* the memo was used, not only right */
  else
    assert_int_equal(reused, 0);
  gs_sched_memo_free(memo);
  gs_sched_free(fw);
}

static void test_binpack(void **state) {
  (void)state;
  run_life(GS_PLACE_BINPACK, 3);
}

static void test_spread(void **state) {
  (void)state;
  run_life(GS_PLACE_SPREAD, 4);
}

/* nodePolicy frag signs no pod: every call evaluates every node. */
static void test_frag_never_reused(void **state) {
  (void)state;
  run_life(GS_PLACE_FRAG, 5);
}

/* A reservation changes one node: the next pod signed alike is evaluated
 * there only, and sees that node's new state; another list (or the same
 * array after gs_sched_memo_forget) is evaluated whole. */
static void test_one_node_again(void **state) {
  const struct gs_node_result *got;
  struct gs_sched_memo *memo = gs_sched_memo_new();
  struct gs_policy policy;
  struct gs_sched *fw;
  const char *list[3] = {"a", "b", "c"};
  struct gs_pod_request p = gs_test_mem_pod("x", 16, 1);
  struct gs_annotations annots = {0};
  struct gs_status st = {GS_EOK, GS_R_OTHER, ""};
  bool fresh;
  (void)state;
  gs_policy_init(&policy);
  fw = fw_test_new(&policy);
  for (int i = 0; i < 3; i++) {
    struct gs_node_spec spec = gs_test_node(list[i], GS_MODE_SHARE, 1, 16);
    assert_int_equal(gs_fw_node_upsert(fw, &spec), GS_EOK);
  }
  assert_int_equal(gs_sched_prioritize_memo(fw, memo, &p, list, 3, 0, &got), GS_EOK);
  assert_int_equal(gs_sched_memo_evaluated(memo), 3);
  assert_int_equal(got[1].code, GS_EOK);
  assert_int_equal(gs_fw_reserve(fw, &p, "b", 0, &annots, &fresh, &st), GS_EOK);
  gs_annotations_clear(&annots);
  snprintf(p.uid, sizeof p.uid, "uid-y"); /* the next pod, signed alike */
  assert_int_equal(gs_sched_prioritize_memo(fw, memo, &p, list, 3, 0, &got), GS_EOK);
  assert_int_equal(gs_sched_memo_evaluated(memo), 1);
  assert_int_equal(got[0].code, GS_EOK);
  assert_int_equal(got[1].code, GS_ENOFIT); /* b's one GPU is full now */
  assert_int_equal(got[2].code, GS_EOK);
  assert_int_equal(gs_sched_prioritize_memo(fw, memo, &p, list, 3, 0, &got), GS_EOK);
  assert_int_equal(gs_sched_memo_evaluated(memo), 0); /* nothing changed */
  assert_int_equal(gs_sched_prioritize_memo(fw, memo, &p, list, 2, 0, &got), GS_EOK);
  assert_int_equal(gs_sched_memo_evaluated(memo), 2); /* another list */
  gs_sched_memo_forget(memo);
  assert_int_equal(gs_sched_prioritize_memo(fw, memo, &p, list, 2, 0, &got), GS_EOK);
  assert_int_equal(gs_sched_memo_evaluated(memo), 2);
  gs_sched_memo_free(memo);
  gs_sched_free(fw);
}

GS_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_binpack), cmocka_unit_test(test_spread),
             cmocka_unit_test(test_frag_never_reused), cmocka_unit_test(test_one_node_again))
