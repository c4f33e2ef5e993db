/* Placement: pod checks, GPU choice, reasons, scores and parts, driven
 * through a real ledger. One file (over 800 lines) because it is one
 * module's test binary, as the test layout wants. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include <gpushare/place.h>

#include "../reason_labels.h"
#include "../testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fixture {
  struct gs_ledger *ledger;
  struct gs_policy policy;
};

static struct fixture fx;

static void setup_unit(uint32_t unit_mib) {
  gs_ledger_free(fx.ledger);
  fx.ledger = gs_ledger_new(unit_mib);
  assert_non_null(fx.ledger);
  gs_policy_init(&fx.policy);
  fx.policy.unit_mib = unit_mib;
}

static int setup(void **state) {
  (void)state;
  memset(&fx, 0, sizeof fx);
  setup_unit(GS_UNIT_GIB);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  gs_ledger_free(fx.ledger);
  fx.ledger = NULL;
  return 0;
}

static void add_node(const char *name, enum gs_mode mode, enum gs_placement placement,
                     uint32_t ngpus, uint64_t units_per_gpu) {
  struct gs_node_spec s =
      gs_test_node(name, mode, mode == GS_MODE_TOPOLOGY ? 0 : ngpus, units_per_gpu * ngpus);
  s.placement = placement;
  s.whole_gpus = mode == GS_MODE_TOPOLOGY ? ngpus : 0;
  assert_int_equal(gs_ledger_node_upsert(fx.ledger, &s), GS_EOK);
}

static const struct gs_node *node(const char *name) {
  const struct gs_node *n = gs_ledger_node_get(fx.ledger, name);
  assert_non_null(n);
  return n;
}

static struct gs_pod_request mem_pod(const char *uid, uint64_t units, uint32_t count) {
  struct gs_pod_request r = gs_test_pod(uid, uid);
  r.mem_units[0] = units;
  r.gpu_count = count;
  return r;
}

static struct gs_pod_request whole_pod(const char *uid, uint64_t gpus) {
  struct gs_pod_request r = mem_pod(uid, 0, 1);
  r.whole_gpus[0] = gpus;
  return r;
}

/* Filter, then reserve what filter chose, as the framework does. */
static enum gs_err place(const char *node_name, const struct gs_pod_request *req,
                         struct gs_choice *ret_choice, struct gs_status *st) {
  struct gs_choice choice;
  struct gs_alloc_part parts[GS_MAX_PARTS];
  struct gs_alloc a;
  enum gs_err fit = gs_place_pick(node(node_name), req, &fx.policy, &choice, st);
  if (fit != GS_EOK) {
    if (st != NULL)
      gs_test_assert_reason_label(st);
    return fit;
  }
  a = (struct gs_alloc){.ns = req->ns, .name = req->name, .uid = req->uid, .node = node_name,
                        .kind = gs_pod_request_is_whole(req) ? GS_ALLOC_WHOLE : GS_ALLOC_MEM,
                        .unit_mib = fx.policy.unit_mib, .parts = parts};
  a.nparts = gs_place_parts(req, &choice, parts, GS_MAX_PARTS);
  assert_true(a.nparts > 0);
  assert_int_equal(gs_ledger_reserve(fx.ledger, &a, fx.policy.cgpu_max_pods), GS_EOK);
  if (ret_choice != NULL)
    *ret_choice = choice;
  return fit;
}

/* Puts used_units[i] on GPU i (one pod each). */
/* The choice is the n GPUs want, in that order. */
static void expect_gpus(const struct gs_choice *c, uint32_t n, const uint32_t *want) {
  assert_int_equal(c->ngpus, n);
  for (uint32_t i = 0; i < n; i++)
    assert_int_equal(c->gpus[i], want[i]);
}

/* gs_place_pick on node name succeeds with the n GPUs want, in that order
 * (*c: the choice, for more checks). */
static void expect_pick(const char *name, const struct gs_pod_request *req, struct gs_choice *c,
                        uint32_t n, const uint32_t *want) {
  struct gs_status st;
  assert_int_equal(gs_place_pick(node(name), req, &fx.policy, c, &st), GS_EOK);
  expect_gpus(c, n, want);
}

static void load(const char *node_name, const uint64_t *used_units, uint32_t n) {
  assert_int_equal(gs_test_load(fx.ledger, fx.policy.unit_mib, node_name, used_units, n), 0);
}

static void test_policy_defaults(void **state) {
  struct gs_policy p;
  (void)state;
  memset(&p, 0xff, sizeof p);
  gs_policy_init(&p);
  assert_int_equal(p.unit_mib, 1024);
  assert_int_equal(p.cgpu_max_pods, 16);
  assert_int_equal(p.node_policy, GS_PLACE_BINPACK);
  assert_false(p.frag_aware);
  assert_int_equal(p.gang_timeout_s, 60);
}

/* 128 MiB unit, one 16 GiB GPU: eight 2 GiB pods, the ninth does not fit. */
static void test_share_128mib_fill(void **state) {
  struct gs_choice c;
  struct gs_status st;
  char uid[32];
  struct gs_pod_request req;
  struct gs_alloc_part part = {0, 0, 16};
  struct gs_alloc a = {.ns = "default", .name = "p8", .uid = "p8", .node = "gpu-a",
                       .kind = GS_ALLOC_MEM, .unit_mib = 128, .nparts = 1, .parts = &part};
  (void)state;
  setup_unit(GS_UNIT_128MIB);
  add_node("gpu-a", GS_MODE_SHARE, GS_PLACE_BINPACK, 1, 128);
  for (int i = 0; i < 8; i++) {
    snprintf(uid, sizeof uid, "p%d", i);
    req = mem_pod(uid, 16, 1);
    assert_int_equal(place("gpu-a", &req, &c, &st), GS_EOK);
    expect_gpus(&c, 1, (const uint32_t[]){0});
    assert_int_equal(c.mib_per_gpu, 2048);
    assert_int_equal(node("gpu-a")->gpus[0].used_mib, 2048u * (i + 1));
  }
  req = mem_pod("p8", 16, 1);
  assert_int_equal(gs_place_pick(node("gpu-a"), &req, &fx.policy, &c, &st), GS_ENOFIT);
  assert_string_equal(st.reason, "insufficient GPU memory on any single GPU");
  assert_int_equal(gs_ledger_reserve(fx.ledger, &a, 16), GS_ENOFIT);
  assert_int_equal(node("gpu-a")->gpus[0].used_mib, 16384);
  assert_int_equal(gs_ledger_alloc_count(fx.ledger), 8);
}

/* 1 GiB unit, 4 × 16: 8 over 2 cards is 4 + 4 on two GPUs; 9 over 2 never. */
static void test_multi_card(void **state) {
  struct gs_choice c;
  struct gs_alloc_part parts[8];
  struct gs_status st;
  struct gs_pod_request req = mem_pod("p", 8, 2);
  const struct gs_alloc *a;
  (void)state;
  add_node("gpu-a", GS_MODE_SHARE, GS_PLACE_BINPACK, 4, 16);
  assert_int_equal(gs_place_check_pod(&req, &fx.policy, &st), GS_EOK);
  assert_string_equal(st.reason, "");
  assert_int_equal(place("gpu-a", &req, &c, &st), GS_EOK);
  expect_gpus(&c, 2, (const uint32_t[]){0, 1});
  assert_int_equal(c.mib_per_gpu, 4096);
  assert_int_equal(gs_place_parts(&req, &c, parts, 8), 2);
  assert_int_equal(parts[0].container, 0);
  assert_int_equal(parts[0].gpu, 0);
  assert_int_equal(parts[0].units, 4);
  assert_int_equal(parts[1].container, 0);
  assert_int_equal(parts[1].gpu, 1);
  assert_int_equal(parts[1].units, 4);
  a = gs_ledger_alloc_get(fx.ledger, "p");
  assert_non_null(a);
  assert_int_equal(node("gpu-a")->gpus[0].used_mib, 4096);
  assert_int_equal(node("gpu-a")->gpus[1].used_mib, 4096);
  assert_int_equal(node("gpu-a")->gpus[2].used_mib, 0);

  req = mem_pod("q", 9, 2);
  assert_int_equal(gs_place_check_pod(&req, &fx.policy, &st), GS_EUNRESOLVABLE);
  assert_string_equal(st.reason, "aliyun.com/gpu-mem 9 is not divisible by aliyun.com/gpu-count 2");
  assert_int_equal(gs_place_pick(node("gpu-a"), &req, &fx.policy, &c, &st), GS_EUNRESOLVABLE);
  assert_non_null(strstr(st.reason, "9"));
  assert_non_null(strstr(st.reason, "2"));
  /* A second container that does not divide is just as invalid. */
  req = mem_pod("q", 8, 2);
  req.ncontainers = 2;
  req.mem_units[1] = 3;
  assert_int_equal(gs_place_check_pod(&req, &fx.policy, &st), GS_EUNRESOLVABLE);
  assert_string_equal(st.reason, "aliyun.com/gpu-mem 3 is not divisible by aliyun.com/gpu-count 2");
  req.mem_units[1] = 0;
  req.init_mem_units = 5;
  assert_int_equal(gs_place_check_pod(&req, &fx.policy, &st), GS_EUNRESOLVABLE);
  assert_non_null(strstr(st.reason, "5"));
}

/* Free 12, 8, 4, 16 GiB; request 8. */
static void test_binpack_spread(void **state) {
  const uint64_t used[4] = {4, 8, 12, 0};
  struct gs_choice c;
  struct gs_pod_request req = mem_pod("p", 8, 1);
  (void)state;
  add_node("bin", GS_MODE_SHARE, GS_PLACE_BINPACK, 4, 16);
  add_node("spr", GS_MODE_SHARE, GS_PLACE_SPREAD, 4, 16);
  load("bin", used, 4);
  load("spr", used, 4);
  expect_pick("bin", &req, &c, 1, (const uint32_t[]){1});
  expect_pick("spr", &req, &c, 1, (const uint32_t[]){3});
  /* Ties go to the lowest index, either way. */
  add_node("tie", GS_MODE_SHARE, GS_PLACE_BINPACK, 4, 16);
  add_node("tie-s", GS_MODE_SHARE, GS_PLACE_SPREAD, 4, 16);
  {
    const uint64_t tie[4] = {8, 4, 8, 4};
    load("tie", tie, 4);
    load("tie-s", tie, 4);
  }
  expect_pick("tie", &req, &c, 1, (const uint32_t[]){0});
  expect_pick("tie-s", &req, &c, 1, (const uint32_t[]){1});
  /* M > 1: binpack takes the M fullest that fit, spread the M emptiest. */
  req = mem_pod("m", 8, 2);
  expect_pick("bin", &req, &c, 2, (const uint32_t[]){1, 2});
  expect_pick("spr", &req, &c, 2, (const uint32_t[]){0, 3});
}

/* The same cause gives the same text on every node. */
static void test_multi_card_reason(void **state) {
  const uint64_t a_used[2] = {14, 0};
  const uint64_t b_used[3] = {0, 13, 15};
  struct gs_choice c;
  struct gs_status ra, rb;
  struct gs_pod_request req = mem_pod("p", 8, 2);
  (void)state;
  add_node("node-a", GS_MODE_SHARE, GS_PLACE_BINPACK, 2, 16);
  add_node("node-b", GS_MODE_SHARE, GS_PLACE_SPREAD, 3, 16);
  load("node-a", a_used, 2);
  load("node-b", b_used, 3);
  assert_int_equal(gs_place_pick(node("node-a"), &req, &fx.policy, &c, &ra), GS_ENOFIT);
  assert_int_equal(gs_place_pick(node("node-b"), &req, &fx.policy, &c, &rb), GS_ENOFIT);
  assert_string_equal(ra.reason, "fewer than 2 GPUs with 4096 MiB free");
  assert_string_equal(ra.reason, rb.reason);
  assert_null(strstr(ra.reason, "node-"));
}

/* Issue 16 item 6: a node labelled gpushare.io/multi-card=false (its device
 * plugin gives a pod one GPU) refuses pods split over several GPUs, with a
 * reason saying why; one-GPU pods still fit there. */
static void test_single_card_node(void **state) {
  struct gs_node_spec s;
  struct gs_choice c;
  struct gs_status st;
  struct gs_pod_request two = mem_pod("two", 8, 2), one = mem_pod("one", 8, 1);
  (void)state;
  memset(&s, 0, sizeof s);
  snprintf(s.name, sizeof s.name, "aliyun-plugin");
  s.mode = GS_MODE_SHARE;
  s.gpu_count = 4;
  s.gpu_mem_units = 64;
  s.single_card = true;
  assert_int_equal(gs_ledger_node_upsert(fx.ledger, &s), GS_EOK);
  assert_true(node("aliyun-plugin")->single_card);
  assert_int_equal(gs_place_pick(node("aliyun-plugin"), &two, &fx.policy, &c, &st),
                   GS_ENOFIT);
  assert_string_equal(st.reason,
                      "node's device plugin runs one GPU per pod (label gpushare.io/multi-card=false)");
  assert_int_equal(gs_place_pick(node("aliyun-plugin"), &one, &fx.policy, &c, &st),
                   GS_EOK);
  /* the label removed (an update of the node): the split fits again */
  s.single_card = false;
  assert_int_equal(gs_ledger_node_upsert(fx.ledger, &s), GS_EOK);
  assert_int_equal(gs_place_pick(node("aliyun-plugin"), &two, &fx.policy, &c, &st),
                   GS_EOK);
}

/* cgpu caps pods per GPU; share does not. 128 MiB pods on 16 GiB GPUs. */
static void test_cgpu_cap(void **state) {
  struct gs_choice c;
  struct gs_status st;
  char uid[32];
  struct gs_pod_request req;
  (void)state;
  setup_unit(GS_UNIT_128MIB);
  add_node("cgpu", GS_MODE_CGPU, GS_PLACE_BINPACK, 1, 128);
  add_node("share", GS_MODE_SHARE, GS_PLACE_BINPACK, 1, 128);
  for (int i = 0; i < 16; i++) {
    snprintf(uid, sizeof uid, "c%d", i);
    req = mem_pod(uid, 1, 1);
    assert_int_equal(place("cgpu", &req, NULL, &st), GS_EOK);
    snprintf(uid, sizeof uid, "s%d", i);
    req = mem_pod(uid, 1, 1);
    assert_int_equal(place("share", &req, NULL, &st), GS_EOK);
  }
  req = mem_pod("c16", 1, 1);
  assert_int_equal(gs_place_pick(node("cgpu"), &req, &fx.policy, &c, &st), GS_ENOFIT);
  assert_string_equal(st.reason, "GPU pod limit reached (cgpu)");
  req = mem_pod("s16", 1, 1);
  assert_int_equal(place("share", &req, NULL, &st), GS_EOK);
  /* When memory is what is short, say so even under the cap. */
  req = mem_pod("big", 127, 1);
  assert_int_equal(gs_place_pick(node("cgpu"), &req, &fx.policy, &c, &st), GS_ENOFIT);
  assert_string_equal(st.reason, "insufficient GPU memory on any single GPU");
}

/* Every refusal of the core carries its reason's code, whose label is the
 * documented one of its text (reason_labels.h): the node's, the GPUs', the
 * pod's. */
static void test_reason_codes(void **state) {
  static const uint64_t full[] = {16, 16};
  struct gs_choice c;
  struct gs_status st;
  struct gs_pod_request r;
  struct reason_case {
    const char *node;
    struct gs_pod_request pod;
    enum gs_reason why;
  } cases[8];
  size_t n = 0;
  (void)state;
  add_node("plain", GS_MODE_NONE, GS_PLACE_BINPACK, 2, 16);
  add_node("topo", GS_MODE_TOPOLOGY, GS_PLACE_BINPACK, 2, 0);
  add_node("share", GS_MODE_SHARE, GS_PLACE_BINPACK, 2, 16);
  add_node("full", GS_MODE_SHARE, GS_PLACE_BINPACK, 2, 16);
  load("full", full, 2);
  cases[n++] = (struct reason_case){"plain", mem_pod("a", 1, 1), GS_R_NODE_NOT_MANAGED};
  cases[n++] = (struct reason_case){"topo", mem_pod("b", 1, 1), GS_R_NODE_WHOLE_GPUS_ONLY};
  cases[n++] = (struct reason_case){"share", whole_pod("c", 1), GS_R_NODE_MEMORY_ONLY};
  cases[n++] = (struct reason_case){"full", mem_pod("d", 1, 1),
                                      GS_R_INSUFFICIENT_GPU_MEMORY};
  cases[n++] = (struct reason_case){"full", mem_pod("e", 2, 2),
                                      GS_R_INSUFFICIENT_GPU_MEMORY};
  cases[n++] = (struct reason_case){"topo", whole_pod("f", 3), GS_R_INSUFFICIENT_WHOLE_GPUS};
  cases[n++] = (struct reason_case){"share", mem_pod("g", 3, 2), GS_R_INVALID_POD};
  r = mem_pod("h", 1, 1);
  r.whole_gpus[0] = 1;
  cases[n++] = (struct reason_case){"share", r, GS_R_INVALID_POD};
  for (size_t i = 0; i < n; i++) {
    st.why = GS_R_OTHER;
    assert_int_not_equal(gs_place_pick(node(cases[i].node), &cases[i].pod, &fx.policy, &c, &st),
                         GS_EOK);
    assert_int_equal(st.why, cases[i].why);
    gs_test_assert_reason_label(&st);
  }
}

static void test_not_sharing(void **state) {
  struct gs_choice c;
  struct gs_status st;
  struct gs_pod_request req = mem_pod("p", 1, 1);
  struct gs_pod_request whole = whole_pod("w", 1);
  (void)state;
  add_node("plain", GS_MODE_NONE, GS_PLACE_BINPACK, 4, 16);
  add_node("zero-cap", GS_MODE_SHARE, GS_PLACE_BINPACK, 4, 0);
  add_node("zero-gpus", GS_MODE_SHARE, GS_PLACE_BINPACK, 0, 0);
  add_node("topo-empty", GS_MODE_TOPOLOGY, GS_PLACE_BINPACK, 0, 0);
  add_node("topo", GS_MODE_TOPOLOGY, GS_PLACE_BINPACK, 4, 0);
  add_node("share", GS_MODE_SHARE, GS_PLACE_BINPACK, 4, 16);
  assert_int_equal(gs_place_pick(node("plain"), &req, &fx.policy, &c, &st), GS_ENOFIT);
  assert_string_equal(st.reason, "node is not a GPU-sharing node");
  assert_int_equal(gs_place_pick(node("zero-cap"), &req, &fx.policy, &c, &st), GS_ENOFIT);
  assert_string_equal(st.reason, "node is not a GPU-sharing node");
  assert_int_equal(gs_place_pick(node("zero-gpus"), &req, &fx.policy, &c, &st), GS_ENOFIT);
  assert_string_equal(st.reason, "node is not a GPU-sharing node");
  assert_int_equal(gs_place_pick(node("topo-empty"), &whole, &fx.policy, &c, &st),
                   GS_ENOFIT);
  assert_string_equal(st.reason, "node is not a GPU-sharing node");
  assert_int_equal(gs_place_pick(node("plain"), &whole, &fx.policy, &c, &st), GS_ENOFIT);
  assert_string_equal(st.reason, "node is not a GPU-sharing node");
  assert_int_equal(gs_place_pick(node("topo"), &req, &fx.policy, &c, &st), GS_ENOFIT);
  assert_string_equal(st.reason, "node serves whole GPUs only (topology mode)");
  assert_int_equal(gs_place_pick(node("share"), &whole, &fx.policy, &c, &st), GS_ENOFIT);
  assert_string_equal(st.reason, "node does not serve whole GPUs");
}

static void test_unhealthy(void **state) {
  struct gs_choice c;
  struct gs_status st;
  struct gs_pod_request req = mem_pod("p", 4, 1);
  const uint64_t used[3] = {10, 0, 0};
  (void)state;
  add_node("gpu-a", GS_MODE_SHARE, GS_PLACE_BINPACK, 3, 16);
  load("gpu-a", used, 3);
  assert_int_equal(gs_place_pick(node("gpu-a"), &req, &fx.policy, &c, &st), GS_EOK);
  assert_int_equal(c.gpus[0], 0); /* the fullest... */
  assert_int_equal(gs_ledger_node_set_unhealthy(fx.ledger, "gpu-a", 0x1), GS_EOK);
  assert_int_equal(gs_place_pick(node("gpu-a"), &req, &fx.policy, &c, &st), GS_EOK);
  assert_int_equal(c.gpus[0], 1); /* ...until it is unhealthy */
  req.gpu_count = 2;
  assert_int_equal(gs_ledger_node_set_unhealthy(fx.ledger, "gpu-a", 0x2), GS_EOK);
  expect_pick("gpu-a", &req, &c, 2, (const uint32_t[]){0, 2});
  assert_int_equal(gs_ledger_node_set_unhealthy(fx.ledger, "gpu-a", 0x7), GS_EOK);
  assert_int_equal(gs_place_pick(node("gpu-a"), &req, &fx.policy, &c, &st), GS_ENOFIT);
  assert_string_equal(st.reason, "no healthy GPU");
  /* Never chosen, whatever the policy. */
  assert_int_equal(gs_ledger_node_set_unhealthy(fx.ledger, "gpu-a", 0x6), GS_EOK);
  req.gpu_count = 1;
  for (int frag = 0; frag < 2; frag++) {
    fx.policy.frag_aware = frag;
    expect_pick("gpu-a", &req, &c, 1, (const uint32_t[]){0});
  }
}

static void test_check_pod(void **state) {
  struct gs_status st;
  struct gs_choice c;
  struct gs_pod_request req = mem_pod("p", 0, 1);
  (void)state;
  add_node("gpu-a", GS_MODE_SHARE, GS_PLACE_BINPACK, 1, 16);
  assert_int_equal(gs_place_check_pod(&req, &fx.policy, &st), GS_ESKIP);
  assert_int_equal(gs_place_pick(node("gpu-a"), &req, &fx.policy, &c, &st), GS_ESKIP);
  req.mem_units[0] = 2;
  req.whole_gpus[0] = 1;
  assert_int_equal(gs_place_check_pod(&req, &fx.policy, &st), GS_EUNRESOLVABLE);
  assert_non_null(strstr(st.reason, "both aliyun.com/gpu-mem and aliyun.com/gpu"));
  req = mem_pod("p", 2, 0);
  assert_int_equal(gs_place_check_pod(&req, &fx.policy, &st), GS_EUNRESOLVABLE);
  assert_string_equal(st.reason, "aliyun.com/gpu-count 0 is out of range 1..64");
  req.gpu_count = GS_MAX_GPUS + 1;
  assert_int_equal(gs_place_check_pod(&req, &fx.policy, &st), GS_EUNRESOLVABLE);
  req = whole_pod("w", GS_MAX_GPUS + 1);
  assert_int_equal(gs_place_check_pod(&req, &fx.policy, &st), GS_EUNRESOLVABLE);
  req = mem_pod("p", UINT64_C(1) << 62, 1);
  assert_int_equal(gs_place_check_pod(&req, &fx.policy, &st), GS_EUNRESOLVABLE);
  /* 64 containers on 8 GPUs would need 512 parts. */
  req = mem_pod("p", 8, 8);
  req.ncontainers = GS_MAX_CONTAINERS;
  for (int i = 0; i < GS_MAX_CONTAINERS; i++)
    req.mem_units[i] = 8;
  assert_int_equal(gs_place_check_pod(&req, &fx.policy, &st), GS_EUNRESOLVABLE);
  req.ncontainers = GS_MAX_CONTAINERS + 1;
  assert_int_equal(gs_place_check_pod(&req, &fx.policy, &st), GS_EUNRESOLVABLE);
}

/* Whole GPUs on a topology node: lowest free indices, owned whole. */
static void test_whole(void **state) {
  struct gs_choice c;
  struct gs_alloc_part parts[8];
  struct gs_status st;
  struct gs_pod_request a = whole_pod("a", 1), b = whole_pod("b", 2), d = whole_pod("d", 2);
  (void)state;
  add_node("topo", GS_MODE_TOPOLOGY, GS_PLACE_BINPACK, 4, 0);
  a.ncontainers = 2;
  a.whole_gpus[1] = 1; /* two containers, one GPU each */
  assert_int_equal(place("topo", &a, &c, &st), GS_EOK);
  expect_gpus(&c, 2, (const uint32_t[]){0, 1});
  assert_int_equal(c.mib_per_gpu, 0);
  assert_int_equal(c.score, 5); /* 2 of 4 GPUs busy after */
  assert_int_equal(gs_place_parts(&a, &c, parts, 8), 2);
  assert_int_equal(parts[0].container, 0);
  assert_int_equal(parts[0].gpu, 0);
  assert_int_equal(parts[1].container, 1);
  assert_int_equal(parts[1].gpu, 1);
  assert_int_equal(parts[1].units, 0);
  assert_ptr_equal(node("topo")->gpus[1].owner, gs_ledger_alloc_get(fx.ledger, "a"));
  assert_int_equal(place("topo", &b, &c, &st), GS_EOK);
  assert_int_equal(c.gpus[0], 2);
  assert_int_equal(c.gpus[1], 3);
  assert_int_equal(gs_place_pick(node("topo"), &d, &fx.policy, &c, &st), GS_ENOFIT);
  assert_string_equal(st.reason, "fewer than 2 free whole GPUs");
  assert_int_equal(gs_ledger_release(fx.ledger, "a"), GS_EOK);
  assert_int_equal(place("topo", &d, &c, &st), GS_EOK);
  assert_int_equal(c.gpus[0], 0);
  assert_int_equal(c.gpus[1], 1);
}

/* A GPU carrying a memory pod is not free for a whole-GPU pod. */
static void test_whole_skips_shared_gpu(void **state) {
  struct gs_choice c;
  struct gs_pod_request w = whole_pod("w", 2);
  const uint64_t used[3] = {1, 0, 0};
  (void)state;
  add_node("topo", GS_MODE_TOPOLOGY, GS_PLACE_BINPACK, 3, 16);
  load("topo", used, 3);
  expect_pick("topo", &w, &c, 2, (const uint32_t[]){1, 2});
}

static void test_score(void **state) {
  struct gs_choice c;
  struct gs_status st;
  struct gs_pod_request req = mem_pod("p", 4, 1);
  const uint64_t used[1] = {8};
  (void)state;
  add_node("gpu-a", GS_MODE_SHARE, GS_PLACE_BINPACK, 1, 16);
  load("gpu-a", used, 1);
  /* (8 + 4) / 16 = 0.75 → round(7.5) = 8; spread 10 − 8 = 2. */
  assert_int_equal(gs_place_pick(node("gpu-a"), &req, &fx.policy, &c, &st), GS_EOK);
  assert_int_equal(c.score, 8);
  fx.policy.node_policy = GS_PLACE_SPREAD;
  assert_int_equal(gs_place_pick(node("gpu-a"), &req, &fx.policy, &c, &st), GS_EOK);
  assert_int_equal(c.score, 2);
  /* Over two GPUs: (8 + 2 + 0 + 2) / 32 = 0.375 → 4 (binpack). */
  add_node("gpu-b", GS_MODE_SHARE, GS_PLACE_SPREAD, 2, 16);
  load("gpu-b", used, 1);
  fx.policy.node_policy = GS_PLACE_BINPACK;
  req.gpu_count = 2;
  assert_int_equal(gs_place_pick(node("gpu-b"), &req, &fx.policy, &c, &st), GS_EOK);
  assert_int_equal(c.score, 4);
  /* Exactly full: 10. */
  req = mem_pod("f", 16, 1);
  add_node("gpu-c", GS_MODE_SHARE, GS_PLACE_BINPACK, 1, 16);
  assert_int_equal(gs_place_pick(node("gpu-c"), &req, &fx.policy, &c, &st), GS_EOK);
  assert_int_equal(c.score, 10);
}

/* Init containers: Kubernetes' effective request, the excess charged to the
 * first GPU container. */
static void test_parts_init_and_containers(void **state) {
  struct gs_choice c;
  struct gs_alloc_part parts[16];
  struct gs_status st;
  struct gs_pod_request req = mem_pod("p", 0, 2);
  (void)state;
  add_node("gpu-a", GS_MODE_SHARE, GS_PLACE_BINPACK, 4, 16);
  req.ncontainers = 3;
  req.mem_units[1] = 2; /* container 0 asks nothing */
  req.mem_units[2] = 4;
  req.init_mem_units = 10; /* excess 4 */
  assert_int_equal(gs_place_pick(node("gpu-a"), &req, &fx.policy, &c, &st), GS_EOK);
  assert_int_equal(c.mib_per_gpu, 5 * 1024);
  assert_int_equal(gs_place_parts(&req, &c, parts, 16), 4);
  assert_int_equal(parts[0].container, 1);
  assert_int_equal(parts[0].units, 3); /* (2 + 4) / 2 */
  assert_int_equal(parts[1].container, 1);
  assert_int_equal(parts[2].container, 2);
  assert_int_equal(parts[2].units, 2);
  assert_int_equal(parts[3].gpu, c.gpus[1]);
  assert_int_equal(gs_place_parts(&req, &c, parts, 3), 0); /* cap too small */
  /* Init only: container 0 carries it. */
  req = mem_pod("q", 0, 1);
  req.init_mem_units = 6;
  assert_int_equal(gs_place_pick(node("gpu-a"), &req, &fx.policy, &c, &st), GS_EOK);
  assert_int_equal(gs_place_parts(&req, &c, parts, 16), 1);
  assert_int_equal(parts[0].container, 0);
  assert_int_equal(parts[0].units, 6);
  /* Whole GPUs with an init container asking more. */
  add_node("topo", GS_MODE_TOPOLOGY, GS_PLACE_BINPACK, 4, 0);
  req = whole_pod("w", 0);
  req.ncontainers = 2;
  req.whole_gpus[1] = 1;
  req.init_whole_gpus = 3;
  assert_int_equal(gs_place_pick(node("topo"), &req, &fx.policy, &c, &st), GS_EOK);
  assert_int_equal(c.ngpus, 3);
  assert_int_equal(gs_place_parts(&req, &c, parts, 16), 3);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(parts[i].container, 1);
    assert_int_equal(parts[i].gpu, (uint32_t)i);
  }
}

/* Frag-aware: prefer an exact fit or a remainder that still holds another
 * such pod over leaving a stranded sliver. */
static void test_frag_aware(void **state) {
  struct gs_choice c;
  struct gs_status st;
  struct gs_pod_request req = mem_pod("p", 4, 1);
  const uint64_t used[3] = {4, 8, 10}; /* free 12, 8, 6 */
  const uint64_t used2[2] = {0, 12};   /* free 16, 4 */
  (void)state;
  add_node("bin", GS_MODE_SHARE, GS_PLACE_BINPACK, 3, 16);
  add_node("spr", GS_MODE_SHARE, GS_PLACE_SPREAD, 2, 16);
  load("bin", used, 3);
  load("spr", used2, 2);
  assert_int_equal(gs_place_pick(node("bin"), &req, &fx.policy, &c, &st), GS_EOK);
  assert_int_equal(c.gpus[0], 2); /* plain binpack leaves 2 stranded */
  expect_pick("spr", &req, &c, 1, (const uint32_t[]){0});
  fx.policy.frag_aware = true;
  assert_int_equal(gs_place_pick(node("bin"), &req, &fx.policy, &c, &st), GS_EOK);
  assert_int_equal(c.gpus[0], 1); /* leaves 4: room for another */
  assert_int_equal(gs_place_pick(node("spr"), &req, &fx.policy, &c, &st), GS_EOK);
  assert_int_equal(c.gpus[0], 1); /* exact fit */
}

static enum gs_err choose_last(void *ctx, const struct gs_node *n,
                               const struct gs_pod_request *req, const struct gs_policy *policy,
                               uint64_t candidates, uint32_t k, uint64_t mib_per_gpu,
                               uint32_t ret_gpus[GS_MAX_GPUS], struct gs_status *st) {
  uint32_t got = 0;
  int *mode = ctx;
  (void)req;
  (void)policy;
  (void)mib_per_gpu;
  if (*mode == 1) {
    return gs_status_set(st, GS_ENOFIT, GS_R_OTHER, "no NVLink pair free");
  }
  if (*mode == 2) {
    for (uint32_t i = 0; i < k; i++)
      ret_gpus[i] = 0; /* duplicates: invalid */
    return GS_EOK;
  }
  for (uint32_t g = n->ngpus; g-- > 0 && got < k;)
    if (candidates >> g & 1)
      ret_gpus[got++] = g; /* descending: the caller sorts */
  return GS_EOK;
}

static void test_chooser_seam(void **state) {
  struct gs_choice c;
  struct gs_status st;
  struct gs_pod_request req = whole_pod("w", 2);
  int mode = 0;
  (void)state;
  add_node("topo", GS_MODE_TOPOLOGY, GS_PLACE_BINPACK, 4, 0);
  assert_int_equal(gs_place_pick_with(node("topo"), &req, &fx.policy, choose_last, &mode, &c,
                                      &st),
                   GS_EOK);
  expect_gpus(&c, 2, (const uint32_t[]){2, 3});
  mode = 1;
  assert_int_equal(gs_place_pick_with(node("topo"), &req, &fx.policy, choose_last, &mode, &c,
                                      &st),
                   GS_ENOFIT);
  assert_string_equal(st.reason, "no NVLink pair free");
  mode = 2;
  assert_int_equal(gs_place_pick_with(node("topo"), &req, &fx.policy, choose_last, &mode, &c,
                                      &st),
                   GS_ENOFIT);
  assert_string_equal(st.reason, "GPU chooser returned an invalid set");
}

/* Property: whatever pick accepts, reserve accepts; the ledger never goes
 * over capacity through pick + reserve. */
static void test_pick_then_reserve(void **state) {
  uint32_t rng = 7;
  struct gs_status st;
  char uid[32];
  int placed = 0;
  (void)state;
  setup_unit(GS_UNIT_128MIB);
  add_node("share", GS_MODE_SHARE, GS_PLACE_BINPACK, 4, 120);
  add_node("spread", GS_MODE_SHARE, GS_PLACE_SPREAD, 8, 100);
  add_node("cgpu", GS_MODE_CGPU, GS_PLACE_BINPACK, 2, 128);
  fx.policy.cgpu_max_pods = 3;
  for (int i = 0; i < 2000; i++) {
    static const char *const nodes[] = {"share", "spread", "cgpu"};
    static const uint32_t counts[] = {1, 1, 1, 2, 4};
    struct gs_pod_request req;
    const char *n;
    rng = rng * 1103515245u + 12345u;
    n = nodes[(rng >> 16) % 3];
    snprintf(uid, sizeof uid, "p%d", i);
    req = mem_pod(uid, 0, counts[(rng >> 8) % 5]);
    req.mem_units[0] = req.gpu_count * (1 + (rng >> 20) % 24);
    if (place(n, &req, NULL, &st) == GS_EOK)
      placed++;
    if ((rng >> 4) % 3 == 0 && i > 10) {
      snprintf(uid, sizeof uid, "p%d", i - 10);
      enum gs_err err = gs_ledger_release(fx.ledger, uid);
      assert_true(err == GS_EOK || err == GS_ENOTFOUND); /* it may not have fit */
    }
  }
  assert_true(placed > 100);
  for (size_t k = 0; k < gs_ledger_node_count(fx.ledger); k++) {
    const struct gs_node *nd = gs_ledger_node_at(fx.ledger, k);
    for (uint32_t g = 0; g < nd->ngpus; g++) {
      assert_true(nd->gpus[g].used_mib <= nd->gpus[g].total_mib);
      if (nd->mode == GS_MODE_CGPU)
        assert_true(nd->gpus[g].npods <= 3);
    }
  }
}

/* The GPUs a memory pod should get, computed the slow, obvious way: sort
 * every usable GPU by (fragmentation class when frag-aware, free memory —
 * least first under binpack, most first under spread —, index) and take
 * the first k, returned in index order. */
struct ref_gpu {
  int cls;
  uint64_t free_mib;
  uint32_t g;
  bool spread;
};

static int ref_cmp(const void *pa, const void *pb) {
  const struct ref_gpu *a = pa, *b = pb;
  if (a->cls != b->cls)
    return a->cls < b->cls ? -1 : 1;
  if (a->free_mib != b->free_mib)
    return (a->free_mib < b->free_mib) != a->spread ? -1 : 1;
  return a->g < b->g ? -1 : a->g > b->g;
}

static uint32_t ref_choice(const struct gs_node *n, const struct gs_policy *policy,
                           uint64_t need_mib, uint32_t k, uint32_t ret[GS_MAX_GPUS]) {
  struct ref_gpu c[GS_MAX_GPUS];
  uint32_t nc = 0, out = 0;
  uint64_t set = 0;
  for (uint32_t g = 0; g < n->ngpus; g++) {
    const struct gs_gpu *gpu = &n->gpus[g];
    uint64_t free_mib = gpu->total_mib - gpu->used_mib;
    if (!gpu->healthy || gpu->owner != NULL || free_mib < need_mib)
      continue;
    if (n->mode == GS_MODE_CGPU && policy->cgpu_max_pods != 0 &&
        gpu->npods >= policy->cgpu_max_pods)
      continue;
    c[nc].cls = !policy->frag_aware             ? 0
                : free_mib == need_mib          ? 0
                : free_mib - need_mib >= need_mib ? 1
                                                : 2;
    c[nc].free_mib = free_mib;
    c[nc].g = g;
    c[nc].spread = n->placement == GS_PLACE_SPREAD;
    nc++;
  }
  if (nc < k)
    return 0;
  qsort(c, nc, sizeof c[0], ref_cmp);
  for (uint32_t i = 0; i < k; i++)
    set |= UINT64_C(1) << c[i].g;
  for (uint32_t g = 0; g < n->ngpus; g++)
    if (set >> g & 1)
      ret[out++] = g;
  return out;
}

/* Without an interconnect to weigh, the default chooser takes a one-pass
 * shortcut inside gs_place_pick (the k best GPUs kept while collecting
 * candidates); naming the chooser explicitly takes the general path. Both
 * must agree with each other and with the obvious sort (ref_choice) on
 * every node state, placement, policy and GPU count. */
static void test_one_gpu_shortcut(void **state) {
  uint32_t rng = 7;
  (void)state;
  for (int round = 0; round < 400; round++) {
    char name[16];
    const struct gs_node *n;
    enum gs_mode mode = round % 3 == 0 ? GS_MODE_CGPU : GS_MODE_SHARE;
    enum gs_placement pl = round % 2 ? GS_PLACE_SPREAD : GS_PLACE_BINPACK;
    snprintf(name, sizeof name, "r%d", round);
    add_node(name, mode, pl, 1 + round % 8, round % 5 == 0 ? 32 : 16);
    n = node(name);
    for (uint32_t g = 0; g < n->ngpus; g++) {
      struct gs_alloc_part part;
      struct gs_alloc a;
      char uid[48];
      rng = rng * 1103515245u + 12345u;
      part = (struct gs_alloc_part){0, g, (rng >> 16) % (n->gpus[g].total_mib / 1024 + 1)};
      if (part.units == 0)
        continue;
      snprintf(uid, sizeof uid, "%s-%u", name, g);
      a = (struct gs_alloc){.ns = "d", .name = uid, .uid = uid, .node = name,
                            .kind = GS_ALLOC_MEM, .state = GS_ALLOC_BOUND,
                            .unit_mib = GS_UNIT_GIB, .assume_time_ns = 1, .nparts = 1,
                            .parts = &part};
      assert_int_equal(gs_ledger_reserve(fx.ledger, &a, 0), GS_EOK);
    }
    if (round % 7 == 0)
      assert_int_equal(gs_ledger_node_set_unhealthy(fx.ledger, name, 1u), GS_EOK);
    n = node(name);
    for (uint64_t units = 1; units <= 17; units += 4) {
      for (int frag = 0; frag < 10; frag++) {
        uint32_t k = 1 + (uint32_t)frag / 2; /* 1 to 5 GPUs */
        struct gs_pod_request r = mem_pod("p", units * k, k);
        struct gs_choice a, b;
        struct gs_status ra, rb;
        enum gs_err fa, fb;
        fx.policy.frag_aware = frag % 2;
        fx.policy.node_policy = round % 4 < 2 ? GS_PLACE_BINPACK : GS_PLACE_SPREAD;
        /* cgpu nodes: no cap, a cap of 1 (GPUs holding a pod are out), 16. */
        fx.policy.cgpu_max_pods = (uint32_t[]){0, 1, 16}[(round / 3 + frag) % 3];
        fa = gs_place_pick(n, &r, &fx.policy, &a, &ra);
        fb = gs_place_pick_with(n, &r, &fx.policy, gs_place_choose_default, NULL, &b, &rb);
        assert_int_equal(fa, fb);
        assert_string_equal(ra.reason, rb.reason);
        if (fa != GS_EOK)
          continue;
        assert_int_equal(a.ngpus, k);
        assert_int_equal(b.ngpus, k);
        assert_memory_equal(a.gpus, b.gpus, k * sizeof a.gpus[0]);
        {
          uint32_t want[GS_MAX_GPUS];
          assert_int_equal(ref_choice(n, &fx.policy, a.mib_per_gpu, k, want), k);
          assert_memory_equal(a.gpus, want, k * sizeof want[0]);
        }
        assert_int_equal(a.mib_per_gpu, b.mib_per_gpu);
        assert_int_equal(a.score, b.score);
      }
    }
  }
  fx.policy.frag_aware = false;
  fx.policy.cgpu_max_pods = 16;
}

/* A pod prepared once (gs_place_prepare) and placed on many nodes
 * (gs_place_pick_prepared) answers as checking it per node does: the same
 * verdict and reason as gs_place_check_pod, the fields the obvious way,
 * and on every node, chooser and policy the same verdict, reason and
 * choice as gs_place_pick_with; and gs_place_fits_prepared the same verdict
 * and status as the default chooser's pick. Random pods, many of them
 * invalid. */
static void test_prepared_pod(void **state) {
  static const enum gs_mode modes[] = {GS_MODE_NONE, GS_MODE_SHARE, GS_MODE_CGPU, GS_MODE_MPS,
                                       GS_MODE_TOPOLOGY};
  const struct gs_node *nodes[40];
  struct gs_frag_dist dist;
  struct gs_frag_table table;
  struct gs_frag_pick pick = {.table = &table};
  uint32_t rng = 99;
  (void)state;
  gs_frag_dist_init(&dist);
  gs_frag_dist_add(&dist, 1, 4 * GS_UNIT_GIB);
  gs_frag_dist_add(&dist, 2, 8 * GS_UNIT_GIB);
  gs_frag_table_build(&table, &dist);
  for (int i = 0; i < 40; i++) {
    char name[16];
    enum gs_mode mode = modes[i % 5];
    snprintf(name, sizeof name, "n%d", i);
    add_node(name, mode, i % 2 ? GS_PLACE_SPREAD : GS_PLACE_BINPACK, (uint32_t)(i % 9),
             i % 3 ? 16 : 32);
    if (gs_mode_is_memory(mode) && i % 9 > 0) {
      uint64_t used[8] = {0};
      for (int g = 0; g < i % 9; g++)
        used[g] = (uint64_t)(i * 7 + g * 5) % 17;
      load(name, used, (uint32_t)(i % 9));
    }
    if (i % 11 == 0)
      assert_int_equal(gs_ledger_node_set_unhealthy(fx.ledger, name, 2u), GS_EOK);
  }
  for (int i = 0; i < 40; i++) {
    char name[16];
    snprintf(name, sizeof name, "n%d", i);
    nodes[i] = node(name);
  }
  for (int round = 0; round < 2000; round++) {
    struct gs_pod_request r = mem_pod("p", 0, 1);
    struct gs_place_pod pod;
    struct gs_status ra, rb;
    enum gs_err fa, fb;
    rng = rng * 1103515245u + 12345u;
    r.ncontainers = 1 + (rng >> 8) % 3;
    for (uint32_t c = 0; c < r.ncontainers; c++) {
      rng = rng * 1103515245u + 12345u;
      r.mem_units[c] = (rng >> 8) % 3 == 0 ? 0 : (rng >> 12) % 24;
      r.whole_gpus[c] = (rng >> 20) % 7 == 0 ? (rng >> 24) % 4 : 0;
    }
    rng = rng * 1103515245u + 12345u;
    r.init_mem_units = (rng >> 8) % 5 == 0 ? (rng >> 12) % 40 : 0;
    r.init_whole_gpus = (rng >> 16) % 9 == 0 ? (rng >> 20) % 3 : 0;
    r.gpu_count = (rng >> 24) % 5; /* 0 is invalid for memory pods */
    fx.policy.frag_aware = round % 3 == 0;
    fx.policy.node_policy = round % 4 == 1 ? GS_PLACE_SPREAD : GS_PLACE_BINPACK;
    fx.policy.unit_mib = round % 5 == 0 ? GS_UNIT_128MIB : GS_UNIT_GIB;
    fa = gs_place_check_pod(&r, &fx.policy, &ra);
    memset(&pod, 0xa5, sizeof pod);
    fb = gs_place_prepare(&r, &fx.policy, &pod, &rb);
    assert_int_equal(fa, fb);
    assert_string_equal(ra.reason, rb.reason);
    if (fb != GS_EOK) {
      assert_int_equal(pod.k, 0xa5a5a5a5u); /* written on success only */
      continue;
    }
    assert_ptr_equal(pod.req, &r);
    assert_ptr_equal(pod.policy, &fx.policy);
    assert_int_equal(pod.mem, gs_pod_request_is_memory(&r));
    if (pod.mem) {
      assert_int_equal(pod.k, r.gpu_count);
      assert_int_equal(pod.mib_per_gpu,
                       gs_pod_request_mem_effective(&r) / r.gpu_count * fx.policy.unit_mib);
    } else {
      assert_int_equal(pod.k, gs_pod_request_whole_effective(&r));
      assert_int_equal(pod.mib_per_gpu, 0);
    }
    for (int i = 0; i < 40; i++) {
      for (int ch = 0; ch < 3; ch++) {
        gs_place_choose_fn fn = ch == 0 ? NULL
                                : ch == 1 ? gs_place_choose_default
                                          : gs_place_choose_frag;
        struct gs_choice a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        fa = gs_place_pick_with(nodes[i], &r, &fx.policy, fn, &pick, &a, &ra);
        fb = gs_place_pick_prepared(nodes[i], &pod, fn, &pick, &b, &rb);
        assert_int_equal(fa, fb);
        assert_string_equal(ra.reason, rb.reason);
        assert_memory_equal(&a, &b, sizeof a);
        if (ch == 0) { /* the verdict alone (filter's): the same code, reason code and text */
          struct gs_status rc;
          memset(&rc, 0x5a, sizeof rc);
          assert_int_equal(gs_place_fits_prepared(nodes[i], &pod, &rc), fb);
          assert_int_equal(rc.code, rb.code);
          assert_int_equal(rc.why, rb.why);
          assert_string_equal(rc.reason, rb.reason);
          assert_int_equal(gs_place_fits_prepared(nodes[i], &pod, NULL), fb);
        }
      }
    }
  }
  fx.policy = (struct gs_policy){0};
  gs_policy_init(&fx.policy);
}

/* The one gang-membership predicate: gang labels and whole GPUs or GPU
 * memory (a memory-shared gang, issue 34); without a GPU request the labels
 * mean nothing. */
static void test_gang_membership(void **state) {
  struct gs_pod_request m = whole_pod("m", 2), mem = mem_pod("x", 4, 1), plain = whole_pod("p", 1);
  (void)state;
  snprintf(m.gang_job, sizeof m.gang_job, "job");
  m.gang_replicas = 2;
  snprintf(mem.gang_job, sizeof mem.gang_job, "job");
  mem.gang_replicas = 2;
  assert_true(gs_pod_request_is_gang_member(&m));
  assert_true(gs_pod_request_is_gang_member(&mem));
  assert_false(gs_pod_request_is_gang_member(&plain));
  {
    struct gs_pod_request cpu = {0};
    snprintf(cpu.gang_job, sizeof cpu.gang_job, "job");
    cpu.gang_replicas = 2;
    cpu.ncontainers = 1;
    assert_false(gs_pod_request_is_gang_member(&cpu));
  }
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_gang_membership),
             GS_TEST_FX(test_policy_defaults),
             GS_TEST_FX(test_share_128mib_fill),
             GS_TEST_FX(test_multi_card),
             GS_TEST_FX(test_binpack_spread),
             GS_TEST_FX(test_multi_card_reason),
             GS_TEST_FX(test_reason_codes),
             GS_TEST_FX(test_single_card_node),
             GS_TEST_FX(test_cgpu_cap),
             GS_TEST_FX(test_not_sharing),
             GS_TEST_FX(test_unhealthy),
             GS_TEST_FX(test_check_pod),
             GS_TEST_FX(test_whole),
             GS_TEST_FX(test_whole_skips_shared_gpu),
             GS_TEST_FX(test_score),
             GS_TEST_FX(test_parts_init_and_containers),
             GS_TEST_FX(test_frag_aware),
             GS_TEST_FX(test_chooser_seam),
             GS_TEST_FX(test_pick_then_reserve),
             GS_TEST_FX(test_one_gpu_shortcut),
             GS_TEST_FX(test_prepared_pod))
