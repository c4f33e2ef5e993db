/* Whole-device DRA claims on topology nodes (issue 33, docs/dra.md): the
 * claim gets the GPU set, the verdict and the score the whole-GPU pod of the
 * same count gets (gs_place_pick), over real `nvidia-smi topo -m` tables. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include <gpushare/claim.h>
#include <gpushare/plugin.h> /* GS_SCORE_MAX */
#include <gpushare/topo.h>

#include "../testutil.h"

#include <stdio.h>
#include <string.h>

static struct gs_topo dgx1, pairs;

static int setup(void **state) {
  (void)state;
  assert_int_equal(gs_test_load_topo("dgx1_v100_topo-m.txt", &dgx1), 0);
  assert_int_equal(gs_test_load_topo("8gpu_nvlink_pairs_topo-m.txt", &pairs), 0);
  return 0;
}

/* An 8-GPU node of 32 GiB per GPU in mode, with topo (NULL: none). */
static void add_node(struct gs_ledger *l, const char *name, enum gs_mode mode,
                     const struct gs_topo *topo) {
  struct gs_node_spec s;
  memset(&s, 0, sizeof s);
  snprintf(s.name, sizeof s.name, "%s", name);
  s.mode = mode;
  s.gpu_count = 8;
  s.gpu_mem_units = 8 * 32;
  s.whole_gpus = 8;
  s.has_topo = topo != NULL;
  s.topo = topo;
  assert_int_equal(gs_ledger_node_upsert(l, &s), GS_EOK);
}

/* Records claim uid holding the GPUs of mask on node whole (nothing for 0). */
static void hold(struct gs_ledger *l, const char *node, const char *uid, uint64_t mask) {
  struct gs_alloc_part parts[GS_MAX_GPUS];
  uint32_t n = 0;
  for (uint32_t g = 0; g < 8; g++)
    if (mask >> g & 1)
      parts[n] = (struct gs_alloc_part){.container = n, .gpu = g, .units = GS_CLAIM_WHOLE}, n++;
  if (n == 0)
    return;
  struct gs_alloc a = {.ns = "t", .name = uid, .uid = uid, .node = node,
                       .kind = GS_ALLOC_CLAIM, .state = GS_ALLOC_BOUND,
                       .unit_mib = GS_CLAIM_UNIT_MIB, .nparts = n, .parts = parts,
                       .priority = INT32_MAX};
  assert_int_equal(gs_ledger_claim_set(l, &a), GS_EOK);
}

static uint64_t set_of(const struct gs_choice *c) {
  uint64_t set = 0;
  for (uint32_t i = 0; i < c->ngpus; i++)
    set |= UINT64_C(1) << c->gpus[i];
  return set;
}

/* The whole-GPU pod (aliyun.com/gpu: k) on node, as the gpumem plugin
 * places it. */
static enum gs_err pod_pick(const struct gs_ledger *l, const char *node,
                            const struct gs_policy *p, uint32_t k, struct gs_choice *c,
                            struct gs_status *st) {
  struct gs_pod_request pod;
  memset(&pod, 0, sizeof pod);
  pod.ncontainers = 1;
  pod.whole_gpus[0] = k;
  return gs_place_pick(gs_ledger_node_get(l, node), &pod, p, c, st);
}

/* The claim of k whole devices and the pod of k whole GPUs agree on node:
 * the verdict, the reason's code and text, the GPUs, the score (the
 * plugin's 0..100). Returns the verdict. */
static enum gs_err same_as_pod(const struct gs_ledger *l, const char *node,
                               const struct gs_policy *p, uint32_t k,
                               struct gs_claim_choice *ret) {
  const char *nodes[] = {node};
  struct gs_claim_request req = {0, k};
  struct gs_choice pc;
  struct gs_status pst, cst, fst;
  int64_t score = -1;
  enum gs_err pe = pod_pick(l, node, p, k, &pc, &pst);
  enum gs_err ce = gs_claim_place(l, nodes, 1, p, &req, ret, &cst);
  enum gs_err fe = gs_claim_fit(l, node, p, &req, &score, &fst);
  assert_int_equal(ce, pe);
  assert_int_equal(fe, pe);
  if (pe != GS_EOK) {
    assert_int_equal(cst.why, pst.why);
    assert_string_equal(cst.reason, pst.reason);
    assert_int_equal(fst.why, pst.why);
    assert_string_equal(fst.reason, pst.reason);
    return pe;
  }
  assert_string_equal(ret->node, node);
  assert_int_equal(ret->choice.ngpus, k);
  assert_int_equal(set_of(&ret->choice), set_of(&pc));
  for (uint32_t i = 1; i < k; i++)
    assert_true(ret->choice.gpus[i - 1] < ret->choice.gpus[i]); /* ascending */
  assert_int_equal(ret->choice.mib_per_gpu, 0);
  assert_int_equal(score, pc.score * (GS_SCORE_MAX / 10));
  return GS_EOK;
}

static uint32_t nv(const struct gs_topo *t, uint32_t a, uint32_t b) {
  return t->nvlinks[a * t->n + b];
}

/* DGX-1 all free: a 2-device claim gets an NV2 pair, {0,3} (docs/topology.md
 * example F), as the pod; recorded, the next one gets the next NV2 pair the
 * pod would get; a 4-device claim then the NVLinked quad left whole. */
static void test_two_devices_get_the_pods_nvlink_pair(void **state) {
  struct gs_ledger *l = gs_ledger_new(GS_UNIT_GIB);
  struct gs_policy p;
  struct gs_claim_choice c;
  struct gs_alloc_part parts[GS_MAX_GPUS];
  struct gs_alloc a;
  (void)state;
  gs_policy_init(&p);
  add_node(l, "dgx", GS_MODE_TOPOLOGY, &dgx1);
  assert_int_equal(same_as_pod(l, "dgx", &p, 2, &c), GS_EOK);
  assert_int_equal(c.choice.gpus[0], 0);
  assert_int_equal(c.choice.gpus[1], 3);
  assert_int_equal(nv(&dgx1, 0, 3), 2);
  gs_claim_charge(&c, "t", "first", "first", 0, parts, &a);
  assert_int_equal(a.nparts, 2);
  assert_int_equal(parts[0].gpu, 0);
  assert_int_equal(parts[1].gpu, 3);
  assert_int_equal(gs_ledger_claim_set(l, &a), GS_EOK);
  assert_int_equal(gs_ledger_node_get(l, "dgx")->gpus[3].used_mib, 32 * 1024);
  assert_int_equal(same_as_pod(l, "dgx", &p, 2, &c), GS_EOK);
  assert_int_equal(nv(&dgx1, c.choice.gpus[0], c.choice.gpus[1]), 2);
  assert_int_equal(set_of(&c.choice) & 0x9, 0);
  gs_ledger_free(l);
}

/* docs/topology.md example A: free {0,2,4,5}, k = 2 → {0,2}, leaving the
 * NV1 pair {4,5} (a greedy pick would take the NV2 pair {0,4}). */
static void test_the_set_that_keeps_a_pair_free(void **state) {
  struct gs_ledger *l = gs_ledger_new(GS_UNIT_GIB);
  struct gs_policy p;
  struct gs_claim_choice c;
  (void)state;
  gs_policy_init(&p);
  add_node(l, "dgx", GS_MODE_TOPOLOGY, &dgx1);
  hold(l, "dgx", "busy", 0xff & ~(uint64_t)0x35);
  assert_int_equal(same_as_pod(l, "dgx", &p, 2, &c), GS_EOK);
  assert_int_equal(set_of(&c.choice), 0x5);
  gs_ledger_free(l);
}

/* Every free mask of an 8-GPU node, claims of 1..8 devices, binpack and
 * spread, DGX-1 and bridged pairs: the claim's verdict, reason, set and
 * score are the pod's. */
static void test_every_mask_as_the_pod(void **state) {
  const struct gs_topo *topos[] = {&dgx1, &pairs};
  struct gs_claim_choice c;
  struct gs_policy p;
  unsigned ok = 0, refused = 0;
  (void)state;
  for (size_t t = 0; t < 2; t++) {
    /* one ledger (the node's choice table is built once), the busy GPUs
     * one claim replaced in a step */
    struct gs_ledger *l = gs_ledger_new(GS_UNIT_GIB);
    add_node(l, "n", GS_MODE_TOPOLOGY, topos[t]);
    for (uint64_t busy = 0; busy < 256; busy++) {
      if (busy == 0)
        assert_null(gs_ledger_alloc_get(l, "busy"));
      hold(l, "n", "busy", busy);
      for (int spread = 0; spread < 2; spread++) {
        gs_policy_init(&p);
        p.node_policy = spread ? GS_PLACE_SPREAD : GS_PLACE_BINPACK;
        for (uint32_t k = 1; k <= 8; k++) {
          if (same_as_pod(l, "n", &p, k, &c) == GS_EOK)
            ok++;
          else
            refused++;
        }
      }
    }
    gs_ledger_free(l);
  }
  /* C(8,f) masks with f free take k ≤ f: Σ_f C(8,f)·f = 1024 per policy */
  assert_int_equal(ok, 2 * 2 * 1024);
  assert_int_equal(refused, 2 * 2 * (256 * 8 - 1024));
}

/* Two topology nodes with two free GPUs each: on "a-frag" they are joined
 * across sockets only (SYS), on "b-good" by NV2. Both are scored as the pod
 * is (the set's weakest link counts half), so the claim goes to b-good
 * although a-frag is first by name; a node with one free GPU is refused
 * with the pod's reason; one without a healthy GPU too. */
static void test_fragmented_node_scored_and_refused_as_for_pods(void **state) {
  struct gs_ledger *l = gs_ledger_new(GS_UNIT_GIB);
  const char *nodes[] = {"a-frag", "b-good", "c-one"};
  struct gs_policy p;
  struct gs_claim_choice c;
  struct gs_claim_request req = {0, 2};
  struct gs_status st;
  int64_t frag = -1, good = -1;
  (void)state;
  gs_policy_init(&p);
  add_node(l, "a-frag", GS_MODE_TOPOLOGY, &dgx1);
  add_node(l, "b-good", GS_MODE_TOPOLOGY, &dgx1);
  add_node(l, "c-one", GS_MODE_TOPOLOGY, &dgx1);
  assert_int_equal(nv(&dgx1, 0, 5), 0);
  assert_int_equal(nv(&dgx1, 4, 7), 2);
  hold(l, "a-frag", "fa", 0xff & ~(uint64_t)0x21); /* free {0,5} */
  hold(l, "b-good", "fb", 0xff & ~(uint64_t)0x90); /* free {4,7} */
  hold(l, "c-one", "fc", 0xfe);                    /* free {0} */
  assert_int_equal(same_as_pod(l, "a-frag", &p, 2, &c), GS_EOK);
  assert_int_equal(set_of(&c.choice), 0x21);
  assert_int_equal(same_as_pod(l, "b-good", &p, 2, &c), GS_EOK);
  assert_int_equal(set_of(&c.choice), 0x90);
  assert_int_equal(gs_claim_fit(l, "a-frag", &p, &req, &frag, &st), GS_EOK);
  assert_int_equal(gs_claim_fit(l, "b-good", &p, &req, &good, &st), GS_EOK);
  assert_true(frag < good);
  assert_int_equal(same_as_pod(l, "c-one", &p, 2, &c), GS_ENOFIT);
  assert_int_equal(gs_claim_fit(l, "c-one", &p, &req, &frag, &st), GS_ENOFIT);
  assert_string_equal(st.reason, "fewer than 2 free whole GPUs");
  assert_int_equal(st.why, GS_R_INSUFFICIENT_WHOLE_GPUS);
  assert_int_equal(gs_claim_place(l, nodes, 3, &p, &req, &c, &st), GS_EOK);
  assert_string_equal(c.node, "b-good");
  assert_int_equal(set_of(&c.choice), 0x90);
  /* every GPU unhealthy: the pod's reason */
  assert_int_equal(gs_ledger_node_set_unhealthy(l, "c-one", 0xff), GS_EOK);
  assert_int_equal(same_as_pod(l, "c-one", &p, 1, &c), GS_ENOFIT);
  assert_int_equal(gs_claim_fit(l, "c-one", &p, &req, &frag, &st), GS_ENOFIT);
  assert_string_equal(st.reason, "no healthy GPU");
  /* nothing was charged by the decisions */
  assert_int_equal(gs_ledger_node_get(l, "b-good")->gpus[4].used_mib, 0);
  gs_ledger_free(l);
}

/* A share node carrying a topology (bridged pairs): whole devices are
 * chosen as the pod's chooser chooses them — the NV12 pair {0,2}, not the
 * lowest indices {0,1}; without a topology the lowest indices, as before. */
static void test_share_node_with_a_topology(void **state) {
  struct gs_ledger *l = gs_ledger_new(GS_UNIT_GIB);
  const char *with[] = {"with"}, *without[] = {"without"};
  struct gs_policy p;
  struct gs_claim_choice c;
  struct gs_claim_request req = {0, 2};
  struct gs_status st;
  (void)state;
  gs_policy_init(&p);
  add_node(l, "with", GS_MODE_SHARE, &pairs);
  add_node(l, "without", GS_MODE_SHARE, NULL);
  assert_int_equal(gs_claim_place(l, with, 1, &p, &req, &c, &st), GS_EOK);
  assert_int_equal(set_of(&c.choice), 0x5);
  assert_int_equal(nv(&pairs, 0, 2), 12);
  assert_int_equal(gs_claim_place(l, without, 1, &p, &req, &c, &st), GS_EOK);
  assert_int_equal(set_of(&c.choice), 0x3);
  gs_ledger_free(l);
}

GS_TEST_MAIN(setup, NULL, cmocka_unit_test(test_two_devices_get_the_pods_nvlink_pair),
             cmocka_unit_test(test_the_set_that_keeps_a_pair_free),
             cmocka_unit_test(test_every_mask_as_the_pod),
             cmocka_unit_test(test_fragmented_node_scored_and_refused_as_for_pods),
             cmocka_unit_test(test_share_node_with_a_topology))
