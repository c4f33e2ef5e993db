/* The framework with the built-in plugins: the scenarios of issue 2 as
 * kube-scheduler drives them (filter, prioritize, bind), in-process. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "framework.h"
#include "plugins.h"
#include "fw_test.h"

#include <gpushare/annot.h>

#include "../reason_labels.h"
#include "../testutil.h"

#include <stdio.h>
#include <string.h>

static struct gs_sched *fw_new(uint32_t unit) {
  struct gs_policy policy;
  gs_policy_init(&policy);
  policy.unit_mib = unit;
  return fw_test_new(&policy);
}

static void add_node(struct gs_sched *fw, const char *name, enum gs_mode mode, uint32_t gpus,
                     uint64_t units) {
  struct gs_node_spec spec = gs_test_node(name, mode, gpus, units);
  assert_int_equal(gs_fw_node_upsert(fw, &spec), GS_EOK);
}

static uint64_t used_mib(struct gs_sched *fw, const char *node, uint32_t gpu) {
  struct gs_test_used c = {node, gpu, 0};
  gs_sched_read(fw, gs_test_used_fn, NULL, &c);
  return c.used;
}

/* Binds pod to node the way the server does: prepare, then commit. */
static enum gs_err bind(struct gs_sched *fw, const struct gs_pod_request *pod, const char *node,
                        struct gs_annotations *annots, struct gs_status *st) {
  bool fresh = false;
  enum gs_err err = gs_fw_reserve(fw, pod, node, 1000, annots, &fresh, st);
  if (err == GS_EOK)
    gs_sched_post_bind(fw, pod->uid);
  return err;
}

static void test_unit_128mib_fills_one_gpu(void **state) {
  struct gs_sched *fw = fw_new(GS_UNIT_128MIB);
  const char *nodes[] = {"gpu-a"};
  struct gs_node_result r;
  struct gs_status st;
  char name[32];
  (void)state;

  add_node(fw, "gpu-a", GS_MODE_SHARE, 1, 128); /* 16 GiB in 128 MiB units */
  for (int i = 0; i < 8; i++) {
    struct gs_annotations a = {0};
    struct gs_pod_request p;
    snprintf(name, sizeof name, "p%d", i);
    p = gs_test_mem_pod(name, 16, 1);
    assert_int_equal(gs_sched_filter(fw, &p, nodes, 1, 0, &r), GS_EOK);
    assert_int_equal(r.code, GS_EOK);
    assert_int_equal(bind(fw, &p, "gpu-a", &a, &st), GS_EOK);
    assert_int_equal(used_mib(fw, "gpu-a", 0), (uint64_t)(i + 1) * 2048);
    if (i == 0) {
      assert_string_equal(gs_annotations_get(&a, GS_ANN_ALLOCATION), "{\"0\":{\"0\":16}}");
      assert_string_equal(gs_annotations_get(&a, GS_ANN_UNIT_MIB), "128");
      assert_string_equal(gs_annotations_get(&a, GS_ANN_LEGACY_DEV), "128");
      assert_string_equal(gs_annotations_get(&a, GS_ANN_DEVICE_RESOURCE), "{\"0\":128}");
    }
    gs_annotations_clear(&a);
  }
  {
    struct gs_pod_request p = gs_test_mem_pod("p8", 16, 1);
    struct gs_annotations a = {0};
    assert_int_equal(gs_sched_filter(fw, &p, nodes, 1, 0, &r), GS_EOK);
    assert_int_equal(r.code, GS_ENOFIT);
    assert_string_equal(r.reason, "insufficient GPU memory on any single GPU");
    assert_int_not_equal(bind(fw, &p, "gpu-a", &a, &st), GS_EOK);
    assert_int_equal(a.n, 0);
    assert_int_equal(used_mib(fw, "gpu-a", 0), 16384);
  }
  gs_sched_free(fw);
}

static void test_multi_card_split_and_refusal(void **state) {
  struct gs_sched *fw = fw_new(GS_UNIT_GIB);
  const char *nodes[] = {"gpu-b", "gpu-c"};
  struct gs_node_result r[2];
  struct gs_status st;
  struct gs_annotations a = {0};
  struct gs_pod_request p = gs_test_mem_pod("m", 8, 2), bad = gs_test_mem_pod("bad", 9, 2);
  (void)state;

  add_node(fw, "gpu-b", GS_MODE_SHARE, 4, 64);
  add_node(fw, "gpu-c", GS_MODE_SHARE, 4, 64);
  assert_int_equal(gs_sched_filter(fw, &p, nodes, 2, 0, r), GS_EOK);
  assert_int_equal(r[0].code, GS_EOK);
  assert_int_equal(bind(fw, &p, "gpu-b", &a, &st), GS_EOK);
  assert_string_equal(gs_annotations_get(&a, GS_ANN_ALLOCATION), "{\"0\":{\"0\":4,\"1\":4}}");
  assert_string_equal(gs_annotations_get(&a, GS_ANN_LEGACY_IDX), "0,1");
  assert_string_equal(gs_annotations_get(&a, GS_ANN_LEGACY_POD), "8");
  assert_int_equal(used_mib(fw, "gpu-b", 0), 4096);
  assert_int_equal(used_mib(fw, "gpu-b", 1), 4096);
  gs_annotations_clear(&a);

  assert_int_equal(gs_sched_filter(fw, &bad, nodes, 2, 0, r), GS_EOK);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(r[i].code, GS_EUNRESOLVABLE);
    gs_test_assert_reason_label(&r[i].status); /* the prefilter's, copied per node */
    assert_non_null(strstr(r[i].reason, "9"));
    assert_non_null(strstr(r[i].reason, "2"));
  }
  assert_string_equal(r[0].reason, r[1].reason);
  gs_sched_free(fw);
}

static void test_reasons_never_name_nodes(void **state) {
  struct gs_sched *fw = fw_new(GS_UNIT_GIB);
  const char *nodes[] = {"plain-node", "cpu-node", "ghost-node"};
  struct gs_node_result r[3];
  struct gs_pod_request p = gs_test_mem_pod("x", 1, 1);
  (void)state;

  add_node(fw, "plain-node", GS_MODE_NONE, 2, 32);
  add_node(fw, "cpu-node", GS_MODE_SHARE, 0, 0);
  assert_int_equal(gs_sched_filter(fw, &p, nodes, 3, 0, r), GS_EOK);
  assert_string_equal(r[0].reason, "node is not a GPU-sharing node");
  assert_string_equal(r[1].reason, "node is not a GPU-sharing node");
  assert_string_equal(r[2].reason, "node unknown to gpushare");
  for (int i = 0; i < 3; i++) {
    assert_int_equal(r[i].code, GS_ENOFIT);
    gs_test_assert_reason_label(&r[i].status);
    assert_null(strstr(r[i].reason, nodes[i]));
  }
  gs_sched_free(fw);
}

static void test_bind_is_idempotent_and_abort_frees(void **state) {
  struct gs_sched *fw = fw_new(GS_UNIT_GIB);
  struct gs_pod_request p = gs_test_mem_pod("idem", 6, 1), q = gs_test_mem_pod("other", 12, 1);
  struct gs_annotations a1 = {0}, a2 = {0};
  struct gs_status st;
  bool fresh = true;
  (void)state;

  add_node(fw, "gpu-d", GS_MODE_SHARE, 2, 32);
  assert_int_equal(bind(fw, &p, "gpu-d", &a1, &st), GS_EOK);
  /* The same UID again: same annotations, no second charge. */
  assert_int_equal(gs_fw_reserve(fw, &p, "gpu-d", 2000, &a2, &fresh, &st), GS_EOK);
  assert_false(fresh);
  assert_string_equal(gs_annotations_get(&a1, GS_ANN_ALLOCATION),
                      gs_annotations_get(&a2, GS_ANN_ALLOCATION));
  assert_int_equal(used_mib(fw, "gpu-d", 0) + used_mib(fw, "gpu-d", 1), 6144);
  gs_annotations_clear(&a1);
  gs_annotations_clear(&a2);

  /* Another node for a pod that already has GPUs: refused. */
  add_node(fw, "gpu-e", GS_MODE_SHARE, 1, 16);
  assert_int_equal(gs_fw_reserve(fw, &p, "gpu-e", 2000, &a2, &fresh, &st), GS_ECONFLICT);
  /* The verdict keeps its cause: an internal error, with its own code. */
  assert_int_equal(st.code, GS_ECONFLICT);
  assert_true(gs_status_is_error(st.code));
  assert_string_equal(gs_status_name(st.code), "Error");
  assert_string_equal(st.reason, "pod already has GPUs reserved on another node");

  /* A failed apiserver bind undoes a fresh reservation. */
  assert_int_equal(gs_fw_reserve(fw, &q, "gpu-d", 3000, &a2, &fresh, &st), GS_EOK);
  assert_true(fresh);
  gs_sched_unreserve(fw, &q, "gpu-d");
  gs_annotations_clear(&a2);
  assert_int_equal(used_mib(fw, "gpu-d", 0) + used_mib(fw, "gpu-d", 1), 6144);

  /* Deleted pods free their memory. */
  gs_fw_pod_gone(fw, p.uid);
  assert_int_equal(used_mib(fw, "gpu-d", 0) + used_mib(fw, "gpu-d", 1), 0);
  gs_sched_free(fw);
}

static void test_expire_assumed(void **state) {
  struct gs_sched *fw = fw_new(GS_UNIT_GIB);
  struct gs_pod_request p = gs_test_mem_pod("stale", 4, 1);
  struct gs_annotations a = {0};
  struct gs_status st;
  bool fresh;
  (void)state;

  add_node(fw, "gpu-f", GS_MODE_SHARE, 1, 16);
  assert_int_equal(gs_fw_reserve(fw, &p, "gpu-f", 1000, &a, &fresh, &st), GS_EOK);
  gs_annotations_clear(&a);
  assert_int_equal(gs_sched_expire_assumed(fw, 1500, 1000), 0);
  assert_int_equal(gs_sched_expire_assumed(fw, 5000, 1000), 1);
  assert_int_equal(used_mib(fw, "gpu-f", 0), 0);
  gs_sched_free(fw);
}

static void test_unmanaged_pod_passes(void **state) {
  struct gs_sched *fw = fw_new(GS_UNIT_GIB);
  struct gs_pod_request p = gs_test_mem_pod("cpu-only", 0, 1);
  const char *nodes[] = {"anything"};
  struct gs_node_result r;
  (void)state;
  assert_int_equal(gs_sched_filter(fw, &p, nodes, 1, 0, &r), GS_EOK);
  assert_int_equal(r.code, GS_EOK);
  gs_sched_free(fw);
}

/* A plugin with filter_score: prioritize takes its one-pass answer and
 * never calls its score hook; filter still calls filter. */
static int fs_filter_calls, fs_score_calls, fs_combined_calls;
static enum gs_err fs_filter(void *self, const struct gs_cycle *c, const struct gs_node *node,
                              struct gs_status *st) {
  (void)self;
  (void)c;
  fs_filter_calls++;
  if (strcmp(node->name, "b") == 0)
    return gs_status_set(st, GS_ENOFIT, GS_R_OTHER, "no b");
  return GS_EOK;
}
static enum gs_err fs_score(void *self, const struct gs_cycle *c, const struct gs_node *node,
                             int64_t *ret) {
  (void)self;
  (void)c;
  (void)node;
  fs_score_calls++;
  *ret = 1;
  return GS_EOK;
}
static enum gs_err fs_combined(void *self, const struct gs_cycle *c, const struct gs_node *node,
                                struct gs_status *st, int64_t *ret_score, bool *ret_scored) {
  (void)self;
  (void)c;
  fs_combined_calls++;
  *ret_scored = false;
  if (strcmp(node->name, "b") == 0)
    return gs_status_set(st, GS_ENOFIT, GS_R_OTHER, "no b");
  if (strcmp(node->name, "c") == 0)
    return GS_ESKIP; /* no opinion: not scored */
  *ret_score = 65; /* 0..GS_SCORE_MAX: the extender's 7 (6.5 rounded up) */
  *ret_scored = true;
  return GS_EOK;
}
static enum gs_err fs_pre(void *self, const struct gs_cycle *c, struct gs_status *st) {
  (void)self;
  (void)c;
  (void)st;
  return GS_EOK;
}
static const struct gs_plugin_ops fs_plugin = {
    .name = "fs",
    .api_version = GS_PLUGIN_API_VERSION,
    .pre_filter = fs_pre,
    .filter = fs_filter,
    .score = fs_score,
    .filter_score = fs_combined,
};

/* One code: the framework's verdicts are values of enum gs_err. */
static void test_verdicts_are_error_codes(void **state) {
  (void)state;
  assert_string_equal(gs_status_name(GS_EOK), "Success");
  assert_string_equal(gs_status_name(GS_ENOFIT), "Unschedulable");
  assert_string_equal(gs_status_name(GS_EUNRESOLVABLE), "UnschedulableAndUnresolvable");
  assert_string_equal(gs_status_name(GS_ESKIP), "Skip");
  assert_string_equal(gs_status_name(GS_EWAIT), "Wait");
  assert_string_equal(gs_status_name(GS_ENOMEM), "Error");
  assert_string_equal(gs_status_name((enum gs_err)999), "Error");
  assert_false(gs_status_is_error(GS_EOK));
  assert_false(gs_status_is_error(GS_ENOFIT));
  assert_false(gs_status_is_error(GS_EUNRESOLVABLE));
  assert_false(gs_status_is_error(GS_ESKIP));
  assert_false(gs_status_is_error(GS_EWAIT));
  assert_true(gs_status_is_error(GS_ENOMEM));
  assert_true(gs_status_is_error(GS_ECONFLICT));
  assert_string_equal(gs_err_name(GS_EUNRESOLVABLE), "GS_EUNRESOLVABLE");
  assert_string_equal(gs_strerror(GS_EUNRESOLVABLE), "cannot fit on any node");
  assert_string_equal(gs_err_name(GS_ESKIP), "GS_ESKIP");
  assert_string_equal(gs_err_name(GS_EWAIT), "GS_EWAIT");
  /* append-only: the old values keep their numbers */
  assert_int_equal(GS_EOK, 0);
  assert_int_equal(GS_EAGAIN, 16);
  assert_int_equal(GS_EUNRESOLVABLE, 17);
  assert_int_equal(GS_ERR_COUNT_, 20);
}

/* A plugin built against plugin.h 7 (its annotation hook was bind): the
 * service refuses it and says which plugin and which versions. */
static void test_old_plugin_version_refused(void **state) {
  static const struct gs_plugin_ops old = {.name = "oldbind", .api_version = 7u};
  static const struct gs_plugin_ops *const list[] = {&fs_plugin, &old};
  struct gs_diag diag = {"", ""};
  struct gs_policy policy;
  (void)state;
  assert_int_equal(GS_PLUGIN_API_VERSION, 8u);
  gs_policy_init(&policy);
  assert_null(gs__sched_new_with(&policy, list, 2, &diag));
  assert_string_equal(diag.text, "plugin oldbind: built for GS_PLUGIN_API_VERSION 7, this gpushare "
                                 "runs plugins of version 8 (rebuild it against gpushare/plugin.h: "
                                 "docs/plugin.md)");
  assert_null(gs__sched_new_with(&policy, list + 1, 1, NULL)); /* no diag: refused all the same */
  diag.text[0] = '\0';
  struct gs_sched *s = gs__sched_new_with(&policy, list, 1, &diag);
  assert_non_null(s); /* the current version loads */
  assert_string_equal(diag.text, "");
  gs_sched_free(s);
}

static void test_filter_score_hook(void **state) {
  static const struct gs_plugin_ops *const list[] = {&fs_plugin};
  const char *names[] = {"a", "b", "c", "zz"};
  struct gs_node_result res[4];
  struct gs_pod_request pod = gs_test_mem_pod("p", 1, 1);
  struct gs_policy policy;
  struct gs_sched *fw;
  (void)state;
  gs_policy_init(&policy);
  fw = gs__sched_new_with(&policy, list, 1, NULL);
  assert_non_null(fw);
  add_node(fw, "a", GS_MODE_SHARE, 1, 16);
  add_node(fw, "b", GS_MODE_SHARE, 1, 16);
  add_node(fw, "c", GS_MODE_SHARE, 1, 16);
  assert_int_equal(gs_sched_prioritize(fw, &pod, names, 4, 1, res), GS_EOK);
  assert_int_equal(fs_score_calls, 0);
  assert_int_equal(fs_filter_calls, 0);
  assert_int_equal(fs_combined_calls, 3); /* zz is unknown to the ledger */
  assert_int_equal(res[0].code, GS_EOK);
  assert_int_equal(res[0].score, 7);
  assert_int_equal(res[0].score100, 65);
  assert_int_equal(res[1].code, GS_ENOFIT);
  assert_string_equal(res[1].reason, "no b");
  assert_int_equal(res[2].code, GS_EOK);
  assert_int_equal(res[2].score, 0);
  assert_int_equal(res[3].code, GS_ENOFIT);
  assert_int_equal(gs_sched_filter(fw, &pod, names, 4, 1, res), GS_EOK);
  assert_int_equal(fs_filter_calls, 3);
  assert_int_equal(fs_combined_calls, 3);
  assert_int_equal(res[1].code, GS_ENOFIT);
  gs_sched_free(fw);
}

/* Per-cycle state: each plugin gets its own bytes, zeroed when a cycle
 * starts, kept from pre_filter to the per-node hooks and to reserve and
 * bind of the same cycle. Two copies of one plugin ("cs1", "cs2") stamp
 * their own marks and must never see the other's. */
static int cs_seen_dirty, cs_seen_foreign, cs_filter_ok, cs_reserve_ok;
static enum gs_err cs_pre(void *self, const struct gs_cycle *c, struct gs_status *st) {
  unsigned char *b = c->state;
  (void)st;
  for (size_t i = 0; i < GS_CYCLE_STATE_MAX; i++)
    cs_seen_dirty += b[i] != 0;
  memset(b, (int)(uintptr_t)self, GS_CYCLE_STATE_MAX); /* self: 1 or 2 */
  return GS_EOK;
}
static enum gs_err cs_filter(void *self, const struct gs_cycle *c, const struct gs_node *node,
                              struct gs_status *st) {
  const unsigned char *b = c->state;
  (void)node;
  (void)st;
  cs_seen_foreign += b[0] != (unsigned char)(uintptr_t)self ||
                     b[GS_CYCLE_STATE_MAX - 1] != (unsigned char)(uintptr_t)self;
  cs_filter_ok++;
  return GS_EOK;
}
static enum gs_err cs_reserve(void *self, struct gs_cycle *c, const struct gs_node *node,
                               struct gs_status *st) {
  (void)node;
  (void)st;
  cs_seen_foreign += ((unsigned char *)c->state)[7] != (unsigned char)(uintptr_t)self;
  cs_reserve_ok++;
  return GS_ESKIP;
}
static void *cs_create1(const struct gs_policy *p) {
  (void)p;
  return (void *)(uintptr_t)1;
}
static void *cs_create2(const struct gs_policy *p) {
  (void)p;
  return (void *)(uintptr_t)2;
}
static const struct gs_plugin_ops cs1_plugin = {
    .name = "cs1", .api_version = GS_PLUGIN_API_VERSION, .create = cs_create1,
    .pre_filter = cs_pre, .filter = cs_filter, .reserve = cs_reserve};
static const struct gs_plugin_ops cs2_plugin = {
    .name = "cs2", .api_version = GS_PLUGIN_API_VERSION, .create = cs_create2,
    .pre_filter = cs_pre, .filter = cs_filter, .reserve = cs_reserve};

static void test_cycle_state(void **state) {
  const struct gs_plugin_ops *list[3];
  size_t n;
  const struct gs_plugin_ops *const *defaults = gs_plugins_default(&n);
  const char *names[] = {"a", "b"};
  struct gs_node_result res[2];
  struct gs_pod_request pod = gs_test_mem_pod("p", 1, 1);
  struct gs_annotations ann = {0};
  struct gs_policy policy;
  struct gs_status st;
  struct gs_sched *fw;
  bool fresh;
  (void)state;
  list[0] = &cs1_plugin;
  list[1] = &cs2_plugin;
  list[2] = defaults[n - 1]; /* gpumem reserves and binds */
  gs_policy_init(&policy);
  fw = gs__sched_new_with(&policy, list, 3, NULL);
  assert_non_null(fw);
  add_node(fw, "a", GS_MODE_SHARE, 1, 16);
  add_node(fw, "b", GS_MODE_SHARE, 1, 16);
  for (int round = 0; round < 3; round++) {
    assert_int_equal(gs_sched_filter(fw, &pod, names, 2, 1, res), GS_EOK);
    assert_int_equal(gs_sched_prioritize(fw, &pod, names, 2, 1, res), GS_EOK);
  }
  assert_int_equal(gs_fw_reserve(fw, &pod, "a", 1, &ann, &fresh, &st), GS_EOK);
  gs_annotations_clear(&ann);
  assert_int_equal(cs_seen_dirty, 0);   /* every cycle starts zeroed */
  assert_int_equal(cs_seen_foreign, 0); /* and each plugin sees only its own */
  assert_int_equal(cs_filter_ok, 2 * 2 * 6);
  assert_int_equal(cs_reserve_ok, 2);
  gs_sched_free(fw);
}

/* gpumem's one-pass prioritize gives each node the score placement gives. */
static struct gs_pod_request prio_pod;
struct pick_call {
  const char *node;
  int64_t score;
  enum gs_err fit;
};
static void pick_fn(const struct gs_ledger *l, void *arg) {
  struct pick_call *c = arg;
  struct gs_choice choice;
  struct gs_policy policy;
  struct gs_status st;
  gs_policy_init(&policy);
  c->fit = gs_place_pick(gs_ledger_node_get(l, c->node), &prio_pod, &policy, &choice, &st);
  c->score = c->fit == GS_EOK ? choice.score : 0;
}

static void test_prioritize_matches_placement(void **state) {
  struct gs_sched *fw = fw_new(GS_UNIT_GIB);
  const char *names[] = {"n0", "n1", "n2", "n3"};
  struct gs_node_result res[4];
  struct gs_annotations ann = {0};
  struct gs_status st;
  bool fresh;
  (void)state;
  for (int i = 0; i < 4; i++)
    add_node(fw, names[i], GS_MODE_SHARE, 2, 32);
  for (int i = 0; i < 6; i++) {
    char pname[16];
    struct gs_pod_request p;
    snprintf(pname, sizeof pname, "fill%d", i);
    p = gs_test_mem_pod(pname, (uint64_t)(3 + 2 * i), 1);
    assert_int_equal(gs_fw_reserve(fw, &p, names[i % 4], 1, &ann, &fresh, &st), GS_EOK);
    gs_annotations_clear(&ann);
  }
  prio_pod = gs_test_mem_pod("new", 4, 1);
  assert_int_equal(gs_sched_prioritize(fw, &prio_pod, names, 4, 1, res), GS_EOK);
  for (int i = 0; i < 4; i++) {
    struct pick_call c = {names[i], 0, GS_ENOFIT};
    gs_sched_read(fw, pick_fn, NULL, &c);
    assert_int_equal(res[i].code, c.fit == GS_EOK ? GS_EOK : GS_ENOFIT);
    assert_int_equal(res[i].score, c.score);
  }
  gs_sched_free(fw);
}

/* nodePolicy frag through the plugins: gpumem learns the requests it sees
 * and prioritize keeps an empty node for the 8-GPU jobs. */
static void test_frag_policy(void **state) {
  struct gs_policy policy;
  const char *names[] = {"empty", "used"};
  struct gs_node_result res[2];
  struct gs_annotations ann = {0};
  struct gs_status st;
  struct gs_sched *fw;
  bool fresh;
  (void)state;
  gs_policy_init(&policy);
  policy.node_policy = GS_PLACE_FRAG;
  policy.frag_aware = true;
  fw = fw_test_new(&policy);
  add_node(fw, "empty", GS_MODE_SHARE, 8, 256);
  add_node(fw, "used", GS_MODE_SHARE, 8, 256);
  {
    struct gs_pod_request full = gs_test_mem_pod("full", 32, 1);
    assert_int_equal(gs_fw_reserve(fw, &full, "used", 1, &ann, &fresh, &st), GS_EOK);
    gs_annotations_clear(&ann);
    gs_sched_post_bind(fw, full.uid);
  }
  /* Requests seen: many small ones and a few 8 × 32 GiB jobs. */
  for (int i = 0; i < 20; i++) {
    char pname[16];
    struct gs_pod_request p;
    snprintf(pname, sizeof pname, "%s%d", i % 5 == 0 ? "job" : "small", i);
    p = i % 5 == 0 ? gs_test_mem_pod(pname, 256, 8) : gs_test_mem_pod(pname, 8, 1);
    assert_int_equal(gs_sched_filter(fw, &p, names, 2, 1, res), GS_EOK);
  }
  {
    struct gs_pod_request p = gs_test_mem_pod("newsmall", 8, 1);
    assert_int_equal(gs_sched_prioritize(fw, &p, names, 2, 1, res), GS_EOK);
    assert_int_equal(res[0].code, GS_EOK);
    assert_int_equal(res[1].code, GS_EOK);
    assert_true(res[1].score > res[0].score);
    assert_int_equal(gs_fw_reserve(fw, &p, "used", 1, &ann, &fresh, &st), GS_EOK);
    assert_true(fresh);
    gs_annotations_clear(&ann);
  }
  /* A pod asking only CPU: scored (the host is unknown here: nothing
   * stranded, the middle of the range), never filtered — every node
   * passes, one unknown to the ledger too — and nothing to reserve. */
  {
    const char *three[] = {"empty", "used", "nowhere"};
    struct gs_node_result r3[3];
    struct gs_pod_request cpu = gs_test_mem_pod("cpu", 0, 1);
    cpu.ncontainers = 1;
    cpu.cpu_milli = 2000;
    assert_int_equal(gs_sched_filter(fw, &cpu, three, 3, 1, r3), GS_EOK);
    for (int i = 0; i < 3; i++) {
      assert_int_equal(r3[i].code, GS_EOK);
      assert_string_equal(r3[i].reason, "");
    }
    assert_int_equal(gs_sched_prioritize(fw, &cpu, three, 3, 1, r3), GS_EOK);
    assert_int_equal(r3[0].code, GS_EOK);
    assert_int_equal(r3[0].score100, 50);
    assert_int_equal(r3[0].score, 5);
    assert_int_equal(r3[2].code, GS_ENOFIT); /* not scored */
    assert_int_equal(r3[2].score, 0);
    assert_int_equal(gs_fw_reserve(fw, &cpu, "empty", 1, &ann, &fresh, &st), GS_EINVAL);
    assert_string_equal(st.reason, "pod requests no GPU resource managed by gpushare");
  }
  gs_sched_free(fw);
}

/* The framework checks the pod once per verb and hands the per-node hooks
 * the prepared pod (c->place); the other hooks, and every hook for a pod
 * that fails the check, see NULL. */
static int probe_seen_place[4], probe_calls[4]; /* pre_filter, filter, score, reserve */
static const struct gs_pod_request *probe_pod;
static void probe(int hook, const struct gs_cycle *c) {
  probe_calls[hook]++;
  if (c->place == NULL)
    return;
  assert_ptr_equal(c->place->req, c->pod);
  assert_ptr_equal(c->place->req, probe_pod);
  assert_ptr_equal(c->place->policy, c->policy);
  probe_seen_place[hook]++;
}
static enum gs_err probe_pre(void *self, const struct gs_cycle *c, struct gs_status *st) {
  (void)self;
  (void)st;
  probe(0, c);
  return GS_EOK;
}
static enum gs_err probe_filter(void *self, const struct gs_cycle *c, const struct gs_node *node,
                                 struct gs_status *st) {
  (void)self;
  (void)node;
  (void)st;
  probe(1, c);
  return GS_EOK;
}
static enum gs_err probe_score(void *self, const struct gs_cycle *c, const struct gs_node *node,
                                int64_t *ret) {
  (void)self;
  (void)node;
  probe(2, c);
  *ret = 1;
  return GS_EOK;
}
static enum gs_err probe_reserve(void *self, struct gs_cycle *c, const struct gs_node *node,
                                  struct gs_status *st) {
  (void)self;
  (void)node;
  (void)st;
  probe(3, c);
  return GS_EOK;
}
static const struct gs_plugin_ops probe_plugin = {
    .name = "probe",
    .api_version = GS_PLUGIN_API_VERSION,
    .pre_filter = probe_pre,
    .filter = probe_filter,
    .score = probe_score,
    .reserve = probe_reserve,
};

static void test_prepared_pod_in_cycle(void **state) {
  static const struct gs_plugin_ops *const list[] = {&probe_plugin};
  const char *names[] = {"a", "b"};
  struct gs_node_result res[2];
  struct gs_pod_request pod = gs_test_mem_pod("p", 2, 1), bad = gs_test_mem_pod("bad", 3, 2);
  struct gs_annotations ann = {0};
  struct gs_status st;
  struct gs_policy policy;
  struct gs_sched *fw;
  bool fresh;
  (void)state;
  gs_policy_init(&policy);
  fw = gs__sched_new_with(&policy, list, 1, NULL);
  assert_non_null(fw);
  add_node(fw, "a", GS_MODE_SHARE, 1, 16);
  add_node(fw, "b", GS_MODE_SHARE, 1, 16);
  probe_pod = &pod;
  assert_int_equal(gs_sched_filter(fw, &pod, names, 2, 1, res), GS_EOK);
  assert_int_equal(gs_sched_prioritize(fw, &pod, names, 2, 1, res), GS_EOK);
  assert_int_equal(probe_calls[1], 4);
  assert_int_equal(probe_seen_place[1], 4);
  assert_int_equal(probe_calls[2], 2);
  assert_int_equal(probe_seen_place[2], 2);
  /* 3 GiB over 2 GPUs is invalid: the plugin is still asked, without it. */
  probe_pod = &bad;
  assert_int_equal(gs_sched_filter(fw, &bad, names, 2, 1, res), GS_EOK);
  assert_int_equal(probe_calls[1], 6);
  assert_int_equal(probe_seen_place[1], 4);
  probe_pod = &pod;
  /* The probe reserves nothing: an error, after its reserve ran. */
  assert_int_equal(gs_fw_reserve(fw, &pod, "a", 1, &ann, &fresh, &st), GS_EINVAL);
  gs_annotations_clear(&ann);
  assert_true(probe_calls[0] > 0);
  assert_int_equal(probe_seen_place[0], 0);
  assert_int_equal(probe_calls[3], 1);
  assert_int_equal(probe_seen_place[3], 0);
  gs_sched_free(fw);
}

/* gpumem answers the same with the framework's prepared pod as without
 * (a hand-made cycle, c->place NULL, checks the pod itself), for valid
 * and invalid pods, under binpack and frag. */
struct gpumem_call {
  const struct gs_policy *policy;
  void *self;
  const char *const *names;
  size_t n;
};
static void gpumem_same_fn(const struct gs_ledger *l, void *arg) {
  struct gpumem_call *call = arg;
  struct gs_pod_request pods[6];
  pods[0] = gs_test_mem_pod("p0", 2, 1);
  pods[1] = gs_test_mem_pod("p1", 12, 1);
  pods[2] = gs_test_mem_pod("p2", 8, 2);
  pods[3] = gs_test_mem_pod("p3", 3, 2); /* invalid: 3 over 2 GPUs */
  pods[4] = gs_test_mem_pod("p4", 0, 1);
  pods[4].whole_gpus[0] = 1;
  pods[5] = gs_test_mem_pod("p5", 0, 1); /* asks for nothing */
  for (int i = 0; i < 6; i++) {
    struct gs_cycle with = {&pods[i], call->policy, (struct gs_ledger *)l, 1, NULL, NULL, false};
    struct gs_cycle without = with;
    struct gs_place_pod place;
    if (gs_place_prepare(&pods[i], call->policy, &place, NULL) == GS_EOK)
      with.place = &place;
    for (size_t j = 0; j < call->n; j++) {
      const struct gs_node *node = gs_ledger_node_get(l, call->names[j]);
      struct gs_status sa = {GS_EOK, GS_R_OTHER, ""}, sb = {GS_EOK, GS_R_OTHER, ""};
      int64_t a = -1, b = -1;
      bool ka = false, kb = false;
      assert_int_equal(gs_plugin_gpumem.filter(call->self, &with, node, &sa),
                       gs_plugin_gpumem.filter(call->self, &without, node, &sb));
      assert_int_equal(sa.code, sb.code);
      assert_string_equal(sa.reason, sb.reason);
      assert_int_equal(gs_plugin_gpumem.filter_score(call->self, &with, node, &sa, &a, &ka),
                       gs_plugin_gpumem.filter_score(call->self, &without, node, &sb, &b, &kb));
      assert_int_equal(ka, kb);
      assert_int_equal(a, b);
      assert_string_equal(sa.reason, sb.reason);
      a = b = -1;
      assert_int_equal(gs_plugin_gpumem.score(call->self, &with, node, &a),
                       gs_plugin_gpumem.score(call->self, &without, node, &b));
      assert_int_equal(a, b);
    }
  }
}

static void test_gpumem_prepared_same(void **state) {
  const char *names[] = {"s0", "s1", "c0", "t0", "none"};
  (void)state;
  for (int frag = 0; frag < 2; frag++) {
    struct gs_policy policy;
    struct gs_sched *fw;
    struct gs_annotations ann = {0};
    struct gs_status st;
    bool fresh;
    struct gpumem_call call;
    gs_policy_init(&policy);
    if (frag)
      policy.node_policy = GS_PLACE_FRAG;
    fw = fw_test_new(&policy);
    add_node(fw, "s0", GS_MODE_SHARE, 2, 32);
    add_node(fw, "s1", GS_MODE_SHARE, 4, 64);
    add_node(fw, "c0", GS_MODE_CGPU, 2, 48);
    add_node(fw, "t0", GS_MODE_TOPOLOGY, 4, 0);
    add_node(fw, "none", GS_MODE_NONE, 2, 32);
    for (int i = 0; i < 3; i++) {
      char pname[16];
      struct gs_pod_request p;
      snprintf(pname, sizeof pname, "fill%d", i);
      p = gs_test_mem_pod(pname, (uint64_t)(5 + 4 * i), 1);
      assert_int_equal(gs_fw_reserve(fw, &p, i == 2 ? "c0" : "s0", 1, &ann, &fresh, &st),
                       GS_EOK);
      gs_annotations_clear(&ann);
    }
    call = (struct gpumem_call){gs_sched_policy(fw), gs_fw_plugin_state_for_test(fw, "gpumem"), names, 5};
    gs_sched_read(fw, gpumem_same_fn, NULL, &call);
    gs_sched_free(fw);
  }
}

/* Plugins write the result's own status (no copy per node): text left by
 * a passing plugin is cleared, a refusal's reason arrives whole, and one
 * that fills the buffer without a terminator is cut at GS_REASON_MAX − 1
 * as the copy did. */
static enum gs_err scribble_filter(void *self, const struct gs_cycle *c,
                                    const struct gs_node *node, struct gs_status *st) {
  (void)self;
  (void)c;
  if (strcmp(node->name, "pass") == 0) {
    snprintf(st->reason, sizeof st->reason, "left over");
    return GS_EOK;
  }
  if (strcmp(node->name, "long") == 0) {
    memset(st->reason, 'x', sizeof st->reason); /* no terminator */
    return st->code = GS_ENOFIT;
  }
  return gs_status_set(st, GS_EUNRESOLVABLE, GS_R_OTHER, "refused %s", "here");
}
static const struct gs_plugin_ops scribble_plugin = {
    .name = "scribble",
    .api_version = GS_PLUGIN_API_VERSION,
    .filter = scribble_filter,
};

static void test_result_is_plugin_status(void **state) {
  static const struct gs_plugin_ops *const list[] = {&fs_plugin, &scribble_plugin};
  const char *names[] = {"pass", "long", "other"};
  struct gs_node_result res[3];
  struct gs_pod_request pod = gs_test_mem_pod("p", 1, 1);
  struct gs_policy policy;
  struct gs_sched *fw;
  (void)state;
  gs_policy_init(&policy);
  fw = gs__sched_new_with(&policy, list, 2, NULL);
  assert_non_null(fw);
  for (int i = 0; i < 3; i++)
    add_node(fw, names[i], GS_MODE_SHARE, 1, 16);
  for (int verb = 0; verb < 2; verb++) {
    memset(res, 0x55, sizeof res);
    if (verb == 0)
      assert_int_equal(gs_sched_filter(fw, &pod, names, 3, 1, res), GS_EOK);
    else
      assert_int_equal(gs_sched_prioritize(fw, &pod, names, 3, 1, res), GS_EOK);
    assert_int_equal(res[0].code, GS_EOK);
    assert_string_equal(res[0].reason, "");
    assert_int_equal(res[0].score, verb == 0 ? 0 : 7); /* fs_combined's score */
    assert_int_equal(res[0].score100, verb == 0 ? 0 : 65);
    assert_int_equal(res[1].code, GS_ENOFIT);
    assert_int_equal(strlen(res[1].reason), GS_REASON_MAX - 1);
    assert_int_equal(res[1].score, 0);
    assert_int_equal(res[2].code, GS_EUNRESOLVABLE);
    assert_string_equal(res[2].reason, "refused here");
  }
  gs_sched_free(fw);
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_unit_128mib_fills_one_gpu),
             cmocka_unit_test(test_multi_card_split_and_refusal),
             cmocka_unit_test(test_reasons_never_name_nodes),
             cmocka_unit_test(test_bind_is_idempotent_and_abort_frees),
             cmocka_unit_test(test_expire_assumed),
             cmocka_unit_test(test_unmanaged_pod_passes),
             cmocka_unit_test(test_verdicts_are_error_codes),
             cmocka_unit_test(test_filter_score_hook),
             cmocka_unit_test(test_cycle_state),
             cmocka_unit_test(test_prioritize_matches_placement),
             cmocka_unit_test(test_frag_policy),
             cmocka_unit_test(test_prepared_pod_in_cycle),
             cmocka_unit_test(test_gpumem_prepared_same),
             cmocka_unit_test(test_result_is_plugin_status),
             cmocka_unit_test(test_old_plugin_version_refused))
