/* Whole-device claims on topology nodes through the service (issue 33,
 * docs/dra.md): gs_sched_claim_filter's verdicts and scores are
 * gs_sched_prioritize's for the whole-GPU pod of the same count, and
 * gs_sched_claim_reserve charges the GPUs gs_sched_reserve gives that pod —
 * the NVLink set of a real DGX-1 `nvidia-smi topo -m`. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include <gpushare/annot.h>
#include <gpushare/claim.h>
#include <gpushare/sched.h>
#include <gpushare/topo.h>

#include "../testutil.h"

#include <stdio.h>
#include <string.h>

static struct gs_topo dgx1;

static int setup(void **state) {
  (void)state;
  return gs_test_load_topo("dgx1_v100_topo-m.txt", &dgx1);
}

static void topo_node(struct gs_sched *s, const char *name) {
  struct gs_node_spec spec = gs_test_node(name, GS_MODE_TOPOLOGY, 8, 8 * 32);
  spec.whole_gpus = 8;
  spec.has_topo = true;
  spec.topo = &dgx1;
  assert_int_equal(gs_sched_node_upsert(s, &spec), GS_EOK);
}

/* The GPUs allocation uid holds, as a mask (0: none). */
struct held {
  const char *uid;
  uint64_t mask;
};
static void held_fn(const struct gs_ledger *l, void *arg) {
  struct held *h = arg;
  const struct gs_alloc *a = gs_ledger_alloc_get(l, h->uid);
  h->mask = 0;
  for (uint32_t i = 0; a != NULL && i < a->nparts; i++)
    h->mask |= UINT64_C(1) << a->parts[i].gpu;
}
static uint64_t held(struct gs_sched *s, const char *uid) {
  struct held h = {uid, 0};
  gs_sched_read(s, held_fn, NULL, &h);
  return h.mask;
}

/* Claim uid allocated whole on the GPUs of mask of node (as the feed
 * records an allocation it sees). */
static void hold(struct gs_sched *s, const char *node, const char *uid, uint64_t mask) {
  struct gs_alloc_part parts[GS_MAX_GPUS];
  uint32_t n = 0;
  for (uint32_t g = 0; g < 8; g++)
    if (mask >> g & 1)
      parts[n] = (struct gs_alloc_part){.container = n, .gpu = g, .units = GS_CLAIM_WHOLE}, n++;
  struct gs_alloc a = {.ns = "t", .name = uid, .uid = uid, .node = node,
                       .kind = GS_ALLOC_CLAIM, .state = GS_ALLOC_BOUND,
                       .unit_mib = GS_CLAIM_UNIT_MIB, .nparts = n, .parts = parts};
  assert_int_equal(gs_sched_claim_set(s, &a), GS_EOK);
}

static struct gs_pod_request whole_pod(const char *uid, uint32_t k) {
  struct gs_pod_request p = gs_test_pod(uid, uid);
  p.whole_gpus[0] = k;
  return p;
}

/* The pod's reservation on node, given back at once: the GPUs it got. */
static uint64_t pod_gets(struct gs_sched *s, uint32_t k, const char *node) {
  struct gs_pod_request p = whole_pod("probe", k);
  struct gs_annotations an;
  struct gs_status st;
  uint64_t mask;
  memset(&an, 0, sizeof an);
  assert_int_equal(gs_sched_reserve(s, &p, node, 1, &an, &st), GS_EOK);
  gs_annotations_clear(&an);
  mask = held(s, "probe");
  gs_sched_unreserve(s, &p, node);
  assert_int_equal(held(s, "probe"), 0);
  return mask;
}

/* Filter and Score of a 2-device claim over three topology nodes — all
 * free, fragmented (free {0,5}: SYS only), one free GPU — equal the
 * whole-GPU pod's prioritize: codes, reasons, scores on 0..100. */
static void test_filter_and_score_are_the_pods(void **state) {
  struct gs_policy pol;
  struct gs_sched *s;
  const char *nodes[] = {"t-free", "t-frag", "t-one"};
  struct gs_claim_request req = {0, 2};
  struct gs_pod_request pod = whole_pod("p", 2);
  struct gs_node_result cr[3], pr[3];
  (void)state;
  gs_policy_init(&pol);
  s = gs_sched_new(&pol);
  for (size_t i = 0; i < 3; i++)
    topo_node(s, nodes[i]);
  /* busy GPUs: a whole-device claim allocated on them (the feed's charge) */
  hold(s, "t-frag", "ff", 0xff & ~(uint64_t)0x21); /* free {0,5} */
  hold(s, "t-one", "fo", 0xfe);                    /* free {0} */
  assert_int_equal(held(s, "ff"), 0xde);
  assert_int_equal(gs_sched_claim_filter(s, NULL, nodes, 3, &req, cr), GS_EOK);
  assert_int_equal(gs_sched_prioritize(s, &pod, nodes, 3, 1, pr), GS_EOK);
  for (size_t i = 0; i < 3; i++) {
    assert_int_equal(cr[i].code, pr[i].code);
    assert_int_equal(cr[i].why, pr[i].why);
    assert_string_equal(cr[i].reason, pr[i].reason);
    assert_int_equal(cr[i].score100, pr[i].score100);
    assert_int_equal(cr[i].score, pr[i].score);
  }
  assert_int_equal(cr[0].code, GS_EOK);
  assert_int_equal(cr[1].code, GS_EOK);
  assert_int_equal(cr[2].code, GS_ENOFIT);
  assert_string_equal(cr[2].reason, "fewer than 2 free whole GPUs");
  /* the fragmented node's SYS pair scores below an NVLink pair, although
   * it is fuller (binpack alone would prefer it) */
  assert_true(cr[1].score100 < cr[0].score100);
  gs_sched_free(s);
}

/* Reserve: the claim is charged the GPUs gs_sched_reserve gives the pod —
 * on the free DGX-1 the NV2 pair {0,3}; retried, the same; the next claim
 * the pod's next pair; a 4-device claim the quad the pod would get. */
static void test_reserve_charges_the_pods_set(void **state) {
  struct gs_policy pol;
  struct gs_sched *s;
  const char *nodes[] = {"dgx"};
  struct gs_claim_request two = {0, 2}, four = {0, 4};
  struct gs_claim_choice c;
  struct gs_status st;
  uint64_t want;
  (void)state;
  gs_policy_init(&pol);
  s = gs_sched_new(&pol);
  topo_node(s, "dgx");
  want = pod_gets(s, 2, "dgx");
  assert_int_equal(want, 0x9); /* {0,3}: NV2 */
  assert_int_equal(gs_sched_claim_reserve(s, NULL, nodes, 1, &two, "t", "c1", "u1", 1, &c, &st),
                   GS_EOK);
  assert_int_equal(held(s, "u1"), want);
  assert_string_equal(c.node, "dgx");
  assert_int_equal(c.choice.ngpus, 2);
  assert_int_equal(c.choice.gpus[0], 0);
  assert_int_equal(c.choice.gpus[1], 3);
  assert_int_equal(c.choice.mib_per_gpu, 0);
  /* a retried reserve: the same GPUs */
  assert_int_equal(gs_sched_claim_reserve(s, NULL, nodes, 1, &two, "t", "c1", "u1", 2, &c, &st),
                   GS_EOK);
  assert_int_equal(held(s, "u1"), want);
  want = pod_gets(s, 2, "dgx");
  assert_int_equal(want & 0x9, 0);
  assert_int_equal(dgx1.nvlinks[__builtin_ctzll(want) * 8 + (63 - __builtin_clzll(want))], 2);
  assert_int_equal(gs_sched_claim_reserve(s, NULL, nodes, 1, &two, "t", "c2", "u2", 3, &c, &st),
                   GS_EOK);
  assert_int_equal(held(s, "u2"), want);
  want = pod_gets(s, 4, "dgx");
  assert_int_equal(gs_sched_claim_reserve(s, NULL, nodes, 1, &four, "t", "c3", "u3", 4, &c, &st),
                   GS_EOK);
  assert_int_equal(held(s, "u3"), want);
  /* full: the pod's refusal */
  assert_int_equal(gs_sched_claim_reserve(s, NULL, nodes, 1, &two, "t", "c4", "u4", 5, &c, &st),
                   GS_ENOFIT);
  assert_string_equal(st.reason, "fewer than 2 free whole GPUs");
  assert_int_equal(held(s, "u4"), 0);
  gs_sched_free(s);
}

GS_TEST_MAIN(setup, NULL, cmocka_unit_test(test_filter_and_score_are_the_pods),
             cmocka_unit_test(test_reserve_charges_the_pods_set))
