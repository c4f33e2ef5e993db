/* nodePolicy frag (src/core/frag.c): the request distribution, the worked
 * examples of docs/placement.md, host-aware fragmentation, and every
 * delta and choice checked against a naive computation of place.h's
 * definition on random nodes, before and after a real reservation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include <gpushare/place.h>

#include "../testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB 1024u

static struct gs_ledger *ledger;
static struct gs_policy policy;

static int setup(void **state) {
  (void)state;
  ledger = gs_ledger_new(GS_UNIT_GIB);
  assert_non_null(ledger);
  gs_policy_init(&policy);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  gs_ledger_free(ledger);
  ledger = NULL;
  return 0;
}

static void add_node(const char *name, enum gs_mode mode, uint32_t ngpus, uint64_t units_per_gpu,
                     const uint64_t *used_units) {
  struct gs_node_spec s = gs_test_node(name, mode, ngpus, units_per_gpu * ngpus);
  assert_int_equal(gs_ledger_node_upsert(ledger, &s), GS_EOK);
  if (used_units != NULL)
    assert_int_equal(gs_test_load(ledger, policy.unit_mib, name, used_units, ngpus), 0);
}

static const struct gs_node *node(const char *name) {
  const struct gs_node *n = gs_ledger_node_get(ledger, name);
  assert_non_null(n);
  return n;
}

static void set_host(const char *name, uint64_t cpu, uint64_t mem, uint64_t cpu_used,
                     uint64_t mem_used) {
  struct gs_host h = {cpu, mem, cpu_used, mem_used};
  assert_int_equal(gs_ledger_node_set_host(ledger, name, &h), GS_EOK);
}

/* The table of d (static: one at a time). */
static const struct gs_frag_table *tbl(const struct gs_frag_dist *d) {
  static struct gs_frag_table t;
  gs_frag_table_build(&t, d);
  return &t;
}

static struct gs_frag_pick *pick_of(const struct gs_frag_dist *d) {
  static struct gs_frag_pick p;
  p = (struct gs_frag_pick){.table = tbl(d)};
  return &p;
}

static enum gs_err choose(const char *name, const struct gs_pod_request *req,
                          struct gs_frag_pick *pick, struct gs_choice *c) {
  struct gs_status st;
  return gs_place_pick_with(node(name), req, &policy, gs_place_choose_frag, pick, c, &st);
}

static void test_dist(void **state) {
  struct gs_frag_dist d;
  uint32_t sum = 0;
  (void)state;
  gs_frag_dist_init(&d);
  assert_int_equal(d.n, 0);
  gs_frag_dist_add(&d, 1, 8 * GIB);
  gs_frag_dist_add_host(&d, 1, 8 * GIB, 3000, 6000);
  gs_frag_dist_add(&d, 2, 8 * GIB);
  gs_frag_dist_add(&d, 0, 8 * GIB); /* nothing to count */
  gs_frag_dist_add_host(&d, 1, 0, 4000, 0); /* CPU-only: no class */
  assert_int_equal(d.n, 2);
  assert_int_equal(d.total, 3);
  assert_int_equal(d.c[0].weight, 2);
  assert_int_equal(d.c[0].cpu_sum, 3000);
  assert_int_equal(d.c[0].mem_sum, 6000);
  assert_int_equal(d.c[1].k, 2);
  /* Full: the lightest class makes room. */
  for (uint32_t i = 2; i < GS_FRAG_CLASSES; i++)
    gs_frag_dist_add(&d, 1, (uint64_t)(100 + i) * GIB);
  assert_int_equal(d.n, GS_FRAG_CLASSES);
  gs_frag_dist_add(&d, 3, 1 * GIB);
  assert_int_equal(d.n, GS_FRAG_CLASSES);
  assert_int_equal(d.c[0].weight, 2); /* the heavy one stays */
  /* The window: weights and sums halve, classes left with nothing go. */
  for (uint32_t i = 0; i < GS_FRAG_WINDOW; i++)
    gs_frag_dist_add(&d, 1, 8 * GIB);
  assert_true(d.total <= GS_FRAG_WINDOW);
  assert_true(d.n < GS_FRAG_CLASSES);
  assert_int_equal(d.c[0].mib, 8 * GIB);
  assert_true(d.c[0].cpu_sum < 3000);
  for (uint32_t c = 0; c < d.n; c++)
    sum += d.c[c].weight;
  assert_int_equal(sum, d.total);
}

/* The table: largest per-GPU memory first, mean host requests inverted. */
static void test_table(void **state) {
  struct gs_frag_dist d;
  const struct gs_frag_table *t;
  (void)state;
  gs_frag_dist_init(&d);
  gs_frag_dist_add_host(&d, 1, 4 * GIB, 2000, 0);
  gs_frag_dist_add_host(&d, 1, 4 * GIB, 6000, 0);
  gs_frag_dist_add(&d, 2, 16 * GIB);
  gs_frag_dist_add(&d, 1, 8 * GIB);
  t = tbl(&d);
  assert_int_equal(t->n, 3);
  assert_true(t->total == 4.0);
  assert_int_equal(t->c[0].mib, 16 * GIB);
  assert_int_equal(t->c[0].k, 2);
  assert_int_equal(t->c[1].mib, 8 * GIB);
  assert_int_equal(t->c[2].mib, 4 * GIB);
  assert_true(t->c[2].weight == 2.0);
  assert_true(fabs(t->c[2].cpu_inv - 1.0 / 4000) < 1e-12); /* mean 4000 milli */
  assert_true(t->c[2].mem_inv == 0);
  assert_true(t->c[0].cpu_inv == 0);
  assert_int_equal(tbl(NULL)->n, 0);
}

/* docs/placement.md, example 1: two 32 GiB GPUs, free 10 and 32; 8 GiB
 * and 32 GiB requests equally frequent. Before: the 32 GiB class strands
 * GPU 0's 10 GiB, the 8 GiB class nothing → (0 + 10) / 2 = 5 GiB. */
static void test_delta_worked_example(void **state) {
  struct gs_frag_dist d;
  const uint64_t used[2] = {22, 0};
  uint32_t g0 = 0, g1 = 1;
  (void)state;
  add_node("w", GS_MODE_SHARE, 2, 32, used);
  gs_frag_dist_init(&d);
  gs_frag_dist_add(&d, 1, 8 * GIB);
  gs_frag_dist_add(&d, 1, 32 * GIB);
  /* 8 GiB on GPU 0 (10 → 2): both classes strand 2 GiB → 2; delta −3 GiB. */
  assert_int_equal(gs_place_frag_delta(node("w"), &policy, tbl(&d), &g0, 1, 8 * GIB, 0, 0),
                   -3 * (int64_t)GIB);
  /* On GPU 1 (32 → 24): no GPU takes 32 GiB any more, all 34 GiB free are
   * stranded for that class → (0 + 34) / 2 = 17; delta +12 GiB. */
  assert_int_equal(gs_place_frag_delta(node("w"), &policy, tbl(&d), &g1, 1, 8 * GIB, 0, 0),
                   12 * (int64_t)GIB);
  /* Nothing learnt: the request itself is the workload. */
  gs_frag_dist_init(&d);
  assert_int_equal(gs_place_frag_delta(node("w"), &policy, tbl(&d), &g1, 1, 8 * GIB, 0, 0), 0);
  assert_int_equal(gs_place_frag_delta(node("w"), &policy, NULL, &g0, 1, 8 * GIB, 0, 0),
                   2 * (int64_t)GIB); /* 8 GiB class: 2 stranded after */
}

/* The chooser keeps room for the common size where binpack would strand
 * it, and the score maps the delta onto 0..10. */
static void test_choose_and_score(void **state) {
  struct gs_frag_dist d;
  struct gs_choice c;
  struct gs_status st;
  struct gs_pod_request req = gs_test_mem_pod("p", 6, 1);
  const uint64_t used[2] = {6, 4}, used_h[2] = {10, 0}; /* free 10, 12; 6, 16 */
  struct gs_frag_pick *pick;
  (void)state;
  add_node("f", GS_MODE_SHARE, 2, 16, used);
  gs_frag_dist_init(&d);
  for (int i = 0; i < 10; i++)
    gs_frag_dist_add(&d, 1, 6 * GIB);
  gs_frag_dist_add(&d, 1, 4 * GIB);
  assert_int_equal(gs_place_pick(node("f"), &req, &policy, &c, &st), GS_EOK);
  assert_int_equal(c.gpus[0], 0); /* binpack: 10 → 4, strands a 6 GiB slot */
  pick = pick_of(&d);
  assert_int_equal(choose("f", &req, pick, &c), GS_EOK);
  assert_int_equal(c.gpus[0], 1); /* 12 → 6: another 6 GiB still fits */
  assert_true(pick->has_delta);
  assert_int_equal(pick->delta, 0);
  assert_int_equal(gs_place_frag_score(node("f"), &policy, tbl(&d), NULL, &c, 10), 5);
  /* GPU 0 strands 4 GiB for 10 of 11 requests: delta 40/11 GiB (3724
   * MiB) on 6 GiB placed → (10 × (6144 − 3724) + 6144) / 12288 = 2. */
  c.gpus[0] = 0;
  assert_int_equal(gs_place_frag_score(node("f"), &policy, tbl(&d), NULL, &c, 10), 2);
  /* Several GPUs: the default choice, no delta handed back. */
  req = gs_test_mem_pod("p2", 4, 2);
  assert_int_equal(choose("f", &req, pick, &c), GS_EOK);
  assert_int_equal(c.ngpus, 2);
  assert_false(pick->has_delta);
  /* Score ends: all of it out of stranded space → 10; as much stranded
   * as placed → 0. Two 16 GiB GPUs, free 6 and 16, 16 GiB requests. */
  add_node("h", GS_MODE_SHARE, 2, 16, used_h);
  gs_frag_dist_init(&d);
  gs_frag_dist_add(&d, 1, 16 * GIB);
  c = (struct gs_choice){.ngpus = 1, .gpus = {0}, .mib_per_gpu = 6 * GIB, .score = 0};
  assert_int_equal(gs_place_frag_score(node("h"), &policy, tbl(&d), NULL, &c, 10), 10);
  c = (struct gs_choice){.ngpus = 1, .gpus = {1}, .mib_per_gpu = 6 * GIB, .score = 0};
  assert_int_equal(gs_place_frag_score(node("h"), &policy, tbl(&d), NULL, &c, 10), 0);
  /* Whole GPUs keep the fill score. */
  c = (struct gs_choice){.ngpus = 1, .gpus = {1}, .mib_per_gpu = 0, .score = 7};
  assert_int_equal(gs_place_frag_score(node("h"), &policy, tbl(&d), NULL, &c, 10), 7);
  assert_int_equal(gs_place_frag_score(node("h"), &policy, tbl(&d), NULL, &c, 100), 70);
  /* The score's ends and rounding. */
  assert_int_equal(gs_place_frag_delta_score(-100, 100, 10), 10);
  assert_int_equal(gs_place_frag_delta_score(100, 100, 10), 0);
  assert_int_equal(gs_place_frag_delta_score(0, 100, 10), 5);
  assert_int_equal(gs_place_frag_delta_score(-5, 100, 10), 5);  /* 5.25 */
  assert_int_equal(gs_place_frag_delta_score(-15, 100, 10), 6); /* 5.75 */
  assert_int_equal(gs_place_frag_delta_score(1, 0, 10), 0);
  assert_int_equal(gs_place_frag_delta_score(-1, 0, 10), 10);
  assert_int_equal(gs_place_frag_delta_score(0, 0, 10), 5);
  /* kube-scheduler's framework scale: the same line, 0..100. */
  assert_int_equal(gs_place_frag_delta_score(-5, 100, 100), 53); /* 52.5 */
  assert_int_equal(gs_place_frag_delta_score(0, 100, 100), 50);
  assert_int_equal(gs_place_frag_delta_score(3724, 6144, 100), 20);
  assert_int_equal(gs_place_frag_delta_score(-1, 0, 100), 100);
}

/* An 8-GPU job needs an empty node: a small pod breaking one scores lower
 * than the same pod on a node already in use. */
static void test_keeps_empty_nodes(void **state) {
  struct gs_frag_dist d;
  struct gs_choice c;
  struct gs_pod_request req = gs_test_mem_pod("small", 8, 1);
  const uint64_t used[8] = {32, 0, 0, 0, 0, 0, 0, 0};
  int64_t on_empty, on_used;
  (void)state;
  add_node("empty", GS_MODE_SHARE, 8, 32, NULL);
  add_node("used", GS_MODE_SHARE, 8, 32, used);
  gs_frag_dist_init(&d);
  for (int i = 0; i < 50; i++)
    gs_frag_dist_add(&d, 1, 8 * GIB);
  gs_frag_dist_add(&d, 8, 32 * GIB);
  assert_int_equal(choose("empty", &req, pick_of(&d), &c), GS_EOK);
  on_empty = gs_place_frag_score(node("empty"), &policy, tbl(&d), NULL, &c, 10);
  assert_int_equal(choose("used", &req, pick_of(&d), &c), GS_EOK);
  on_used = gs_place_frag_score(node("used"), &policy, tbl(&d), NULL, &c, 10);
  /* Empty: 248 GiB stranded for 1 of 51 requests (4.86 GiB) → 2; used:
   * the 8-GPU class was stranded anyway and loses 8 GiB of it → 5. */
  assert_int_equal(on_empty, 2);
  assert_int_equal(on_used, 5);
}

/* docs/placement.md, example 2: the host strands GPUs. Two empty 16 GiB
 * GPUs, 4 GiB requests asking 2 CPUs each on average. */
static void test_host_strands_gpus(void **state) {
  struct gs_frag_dist d;
  struct gs_choice c;
  struct gs_pod_request cpu_pod = gs_test_mem_pod("cpu", 0, 0), gpu_pod;
  uint32_t g0 = 0;
  (void)state;
  add_node("n", GS_MODE_SHARE, 2, 16, NULL);
  add_node("plain", GS_MODE_NONE, 0, 0, NULL);
  gs_frag_dist_init(&d);
  gs_frag_dist_add_host(&d, 1, 4 * GIB, 2000, 0);
  cpu_pod.ncontainers = 0;
  cpu_pod.cpu_milli = 6000;
  /* Host unknown: nothing weighs it. */
  assert_int_equal(gs_place_frag_score(node("n"), &policy, tbl(&d), &cpu_pod, NULL, 10), 5);
  /* 8 CPUs free: room for 4 pods, 2 GPUs take them → nothing stranded.
   * Taking 6 CPUs leaves room for 1 of the 2: half of 32 GiB stranded. */
  set_host("n", 8000, 0, 0, 0);
  assert_int_equal(gs_place_frag_delta(node("n"), &policy, tbl(&d), NULL, 0, 0, 6000, 0),
                   16 * (int64_t)GIB);
  assert_int_equal(gs_place_frag_score(node("n"), &policy, tbl(&d), &cpu_pod, NULL, 10), 0);
  /* Taking 7 of 8 CPUs: no room for one → all 32 GiB stranded. */
  cpu_pod.cpu_milli = 7000;
  assert_int_equal(gs_place_frag_delta(node("n"), &policy, tbl(&d), NULL, 0, 0, 7000, 0),
                   32 * (int64_t)GIB);
  /* 2 CPUs: room for 3 ≥ 2 → no change, score 5; a node without GPUs
   * strands nothing either. */
  cpu_pod.cpu_milli = 2000;
  assert_int_equal(gs_place_frag_score(node("n"), &policy, tbl(&d), &cpu_pod, NULL, 10), 5);
  assert_int_equal(gs_place_frag_score(node("plain"), &policy, tbl(&d), &cpu_pod, NULL, 10), 5);
  /* Memory counts like CPU. */
  gs_frag_dist_init(&d);
  gs_frag_dist_add_host(&d, 1, 4 * GIB, 0, 10 * GIB);
  set_host("n", 0, 40 * GIB, 0, 25 * GIB); /* room for 1 */
  assert_int_equal(gs_place_frag_delta(node("n"), &policy, tbl(&d), NULL, 0, 0, 0, 0), 0);
  assert_int_equal(gs_place_frag_delta(node("n"), &policy, tbl(&d), NULL, 0, 0, 0, 6 * GIB),
                   16 * (int64_t)GIB); /* room 1 → 0: the other 16 GiB too */
  /* A GPU pod's own host request counts with its GPU memory: 4 GiB on GPU
   * 0 with 6 GiB of host memory: 12 + 16 free, all stranded after, half
   * before → +12 GiB. */
  gpu_pod = gs_test_mem_pod("g", 4, 1);
  gpu_pod.mem_mib = 6 * GIB;
  assert_int_equal(gs_place_frag_delta(node("n"), &policy, tbl(&d), &g0, 1, 4 * GIB, 0, 6 * GIB),
                   12 * (int64_t)GIB);
  {
    struct gs_frag_pick *pick = pick_of(&d);
    assert_int_equal(choose("n", &gpu_pod, pick, &c), GS_EOK);
    assert_int_equal(c.gpus[0], 0); /* alike GPUs: the first */
    assert_true(pick->has_delta);
    assert_int_equal(pick->delta, 12 * (int64_t)GIB);
    assert_int_equal(gs_place_frag_score(node("n"), &policy, tbl(&d), &gpu_pod, &c, 10), 0);
  }
}

/* ---- the reference: place.h's definition, computed naively -------------- */

struct ref_class {
  uint32_t k;
  uint64_t mib;
  uint32_t w;
  uint64_t cpu_sum, mem_sum;
};

static bool capped(const struct gs_node *n, const struct gs_gpu *g) {
  return n->mode == GS_MODE_CGPU && policy.cgpu_max_pods != 0 && g->npods >= policy.cgpu_max_pods;
}

static double ref_room(const struct gs_host *h, const struct ref_class *c) {
  double room = HUGE_VAL;
  if (h->cpu_milli > 0 && c->cpu_sum > 0) {
    double free = h->cpu_milli > h->cpu_used_milli ? (double)(h->cpu_milli - h->cpu_used_milli) : 0;
    room = fmin(room, floor(free / ((double)c->cpu_sum / c->w)));
  }
  if (h->mem_mib > 0 && c->mem_sum > 0) {
    double free = h->mem_mib > h->mem_used_mib ? (double)(h->mem_mib - h->mem_used_mib) : 0;
    room = fmin(room, floor(free / ((double)c->mem_sum / c->w)));
  }
  return room;
}

/* The node's fragmentation in MiB, straight from the definition. */
static double ref_frag(const struct gs_node *n, const struct ref_class *cls, uint32_t ncls) {
  double sum = 0, wsum = 0;
  for (uint32_t i = 0; i < ncls; i++) {
    const struct ref_class *c = &cls[i];
    double all = 0, unusable = 0, frag, room = ref_room(&n->host, c);
    uint32_t fit = 0;
    for (uint32_t g = 0; g < n->ngpus; g++) {
      const struct gs_gpu *gpu = &n->gpus[g];
      double free = gpu->healthy && gpu->owner == NULL && gpu->total_mib > gpu->used_mib
                        ? (double)(gpu->total_mib - gpu->used_mib)
                        : 0;
      all += free;
      if (free >= (double)c->mib && !capped(n, gpu))
        fit++;
      else
        unusable += free;
    }
    if (fit < c->k || room < 1) {
      frag = all;
    } else {
      double s = fit / c->k;
      frag = room >= s ? unusable : unusable + (all - unusable) * (s - room) / s;
    }
    sum += c->w * frag;
    wsum += c->w;
  }
  return wsum > 0 ? sum / wsum : 0;
}

static uint32_t rnd(uint32_t *s, uint32_t n) {
  *s = *s * 1103515245u + 12345u;
  return (*s >> 8) % n;
}

/* The fragmentation growth of a CPU-only pod asking what req asks of the
 * host: recompute with the host's use raised. */
static double ref_frag_cpu_only(const char *name, const struct gs_pod_request *req,
                                const struct ref_class *cls, uint32_t ncls) {
  struct gs_host h0 = node(name)->host, h1 = h0;
  double before = ref_frag(node(name), cls, ncls), after;
  h1.cpu_used_milli += req->cpu_milli;
  h1.mem_used_mib += req->mem_mib;
  assert_int_equal(gs_ledger_node_set_host(ledger, name, &h1), GS_EOK);
  after = ref_frag(node(name), cls, ncls);
  assert_int_equal(gs_ledger_node_set_host(ledger, name, &h0), GS_EOK);
  return after - before;
}

/* The fragmentation growth of placing req as c on node name, measured on
 * the ledger itself: reserve, recompute, release. */
static double ref_delta(const char *name, const struct gs_pod_request *req, const struct gs_choice *c,
                        const struct ref_class *cls, uint32_t ncls) {
  struct gs_alloc_part parts[GS_MAX_PARTS];
  struct gs_alloc a = {.ns = req->ns, .name = req->name, .uid = req->uid, .node = name,
                       .kind = GS_ALLOC_MEM, .unit_mib = policy.unit_mib, .parts = parts};
  struct gs_host h0 = node(name)->host, h1 = h0;
  double before = ref_frag(node(name), cls, ncls), after;
  a.nparts = gs_place_parts(req, c, parts, GS_MAX_PARTS);
  assert_true(a.nparts > 0);
  assert_int_equal(gs_ledger_reserve(ledger, &a, policy.cgpu_max_pods), GS_EOK);
  h1.cpu_used_milli += req->cpu_milli;
  h1.mem_used_mib += req->mem_mib;
  assert_int_equal(gs_ledger_node_set_host(ledger, name, &h1), GS_EOK);
  after = ref_frag(node(name), cls, ncls);
  assert_int_equal(gs_ledger_release(ledger, req->uid), GS_EOK);
  assert_int_equal(gs_ledger_node_set_host(ledger, name, &h0), GS_EOK);
  return after - before;
}

/* Random nodes (share and cgpu, 1..8 GPUs, loads, unhealthy GPUs, hosts
 * known or not, exhausted or not), random workloads and pods: the delta
 * of every candidate GPU, the chooser's pick and its delta, and the
 * CPU-only delta all agree with the reference to within rounding. */
static void test_reference_random(void **state) {
  uint32_t s = 2026, checked = 0, chosen = 0;
  (void)state;
  policy.unit_mib = GS_UNIT_128MIB;
  gs_ledger_free(ledger);
  ledger = gs_ledger_new(GS_UNIT_128MIB);
  for (int round = 0; round < 400; round++) {
    struct ref_class cls[6];
    struct gs_frag_dist d;
    struct gs_frag_pick pick;
    struct gs_frag_table t;
    struct gs_pod_request req;
    struct gs_choice c;
    char name[16];
    struct gs_status st;
    uint32_t ngpus = 1 + rnd(&s, 8), ncls = 1 + rnd(&s, 6), units = rnd(&s, 2) ? 128 : 256;
    uint64_t used[8] = {0};
    enum gs_err rc;
    snprintf(name, sizeof name, "r%d", round);
    policy.cgpu_max_pods = rnd(&s, 3) == 0 ? 2 : 16;
    add_node(name, rnd(&s, 3) == 0 ? GS_MODE_CGPU : GS_MODE_SHARE, ngpus, units, NULL);
    for (uint32_t g = 0; g < ngpus; g++) {
      uint32_t pods = rnd(&s, 3);
      for (uint32_t p = 0; p < pods; p++) {
        memset(used, 0, sizeof used);
        used[g] = rnd(&s, (uint32_t)units / 2 + 1);
        assert_int_equal(gs_test_load(ledger, policy.unit_mib, name, used, ngpus), 0);
      }
    }
    if (rnd(&s, 5) == 0)
      assert_int_equal(gs_ledger_node_set_unhealthy(ledger, name, 1u << rnd(&s, ngpus)), GS_EOK);
    if (rnd(&s, 4) != 0) {
      uint64_t cpu = 4000 + 1000 * rnd(&s, 60), mem = (uint64_t)(16 + rnd(&s, 240)) * GIB;
      set_host(name, rnd(&s, 5) ? cpu : 0, rnd(&s, 5) ? mem : 0, rnd(&s, (uint32_t)cpu),
               rnd(&s, (uint32_t)mem));
    }
    gs_frag_dist_init(&d);
    for (uint32_t i = 0; i < ncls; i++) {
      cls[i] = (struct ref_class){.k = rnd(&s, 4) == 0 ? 1 + rnd(&s, 4) : 1,
                                  .mib = (uint64_t)(1 + rnd(&s, units)) * GS_UNIT_128MIB,
                                  .w = 1 + rnd(&s, 20)};
      cls[i].cpu_sum = rnd(&s, 3) ? (uint64_t)cls[i].w * (500 + rnd(&s, 16000)) : 0;
      cls[i].mem_sum = rnd(&s, 3) ? (uint64_t)cls[i].w * (512 + rnd(&s, 64 * GIB)) : 0;
      /* Spread each class's sums over its requests as the learner sees them. */
      for (uint32_t r = 0; r < cls[i].w; r++)
        gs_frag_dist_add_host(&d, cls[i].k, cls[i].mib,
                              cls[i].cpu_sum / cls[i].w + (r < cls[i].cpu_sum % cls[i].w),
                              cls[i].mem_sum / cls[i].w + (r < cls[i].mem_sum % cls[i].w));
    }
    /* Classes drawn twice merged in d: merge them in the reference too. */
    for (uint32_t i = 0; i < ncls; i++)
      for (uint32_t j = i + 1; j < ncls; j++)
        if (cls[j].k == cls[i].k && cls[j].mib == cls[i].mib) {
          cls[i].w += cls[j].w;
          cls[i].cpu_sum += cls[j].cpu_sum;
          cls[i].mem_sum += cls[j].mem_sum;
          cls[j--] = cls[--ncls];
        }
    gs_frag_table_build(&t, &d);
    req = gs_test_mem_pod(name, 1 + rnd(&s, units), rnd(&s, 4) == 0 ? 2 : 1);
    req.cpu_milli = rnd(&s, 2) ? 100 * rnd(&s, 100) : 0;
    req.mem_mib = rnd(&s, 2) ? 256 * rnd(&s, 100) : 0;
    /* The CPU-only delta. */
    assert_true(fabs((double)gs_place_frag_delta(node(name), &policy, &t, NULL, 0, 0,
                                                 req.cpu_milli, req.mem_mib) -
                     ref_frag_cpu_only(name, &req, cls, ncls)) <= 1);
    pick = (struct gs_frag_pick){.table = &t};
    rc = gs_place_pick_with(node(name), &req, &policy, gs_place_choose_frag, &pick, &c, &st);
    if (rc != GS_EOK)
      continue;
    chosen++;
    {
      double want = ref_delta(name, &req, &c, cls, ncls);
      int64_t got = gs_place_frag_delta(node(name), &policy, &t, c.gpus, c.ngpus, c.mib_per_gpu,
                                        req.cpu_milli, req.mem_mib);
      assert_true(fabs((double)got - want) <= 1);
      if (c.ngpus == 1) {
        /* The pick's delta, and no candidate does better. */
        assert_true(pick.has_delta);
        assert_true(fabs((double)pick.delta - want) <= 1);
        for (uint32_t g = 0; g < ngpus; g++) {
          struct gs_choice o = c;
          const struct gs_gpu *gpu = &node(name)->gpus[g];
          if (!gpu->healthy || capped(node(name), gpu) ||
              gpu->total_mib - gpu->used_mib < c.mib_per_gpu)
            continue;
          o.gpus[0] = g;
          assert_true(ref_delta(name, &req, &o, cls, ncls) >= want - 1);
          checked++;
        }
      }
    }
  }
  assert_true(chosen > 200); /* the random cases do reach placements */
  assert_true(checked > 500);
}

GS_TEST_MAIN(NULL, NULL,
             GS_TEST_FX(test_dist),
             GS_TEST_FX(test_table),
             GS_TEST_FX(test_delta_worked_example),
             GS_TEST_FX(test_choose_and_score),
             GS_TEST_FX(test_keeps_empty_nodes),
             GS_TEST_FX(test_host_strands_gpus),
             GS_TEST_FX(test_reference_random))
