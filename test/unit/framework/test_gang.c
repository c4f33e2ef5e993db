/* Gangs through the framework: all-or-nothing plans on topology nodes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "framework.h"
#include "gang/gang.h"
#include "plugins.h"

#include <gpushare/annot.h>
#include <gpushare/topo.h>

#include "../testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEC INT64_C(1000000000)

static struct gs_topo dgx1;

static int load_dgx1(void **state) {
  (void)state;
  assert_int_equal(gs_test_load_topo("dgx1_v100_topo-m.txt", &dgx1), 0);
  return 0;
}

static struct gs_fw *fw_new(uint32_t timeout_s) {
  struct gs_policy policy;
  size_t n;
  const struct gs_plugin_ops *const *plugins = gs_plugins_default(&n);
  gs_policy_init(&policy);
  policy.gang_timeout_s = timeout_s;
  return gs_fw_new(&policy, plugins, n);
}

static void add_topo_node(struct gs_fw *fw, const char *name) {
  struct gs_node_spec spec;
  memset(&spec, 0, sizeof spec);
  snprintf(spec.name, sizeof spec.name, "%s", name);
  spec.mode = GS_MODE_TOPOLOGY;
  spec.whole_gpus = 8;
  spec.has_topo = true;
  spec.topo = &dgx1;
  assert_int_equal(gs_fw_node_upsert(fw, &spec), GS_EOK);
}

static struct gs_pod_request member(const char *job, int i, uint32_t replicas, uint64_t gpus) {
  struct gs_pod_request p;
  memset(&p, 0, sizeof p);
  snprintf(p.ns, sizeof p.ns, "default");
  snprintf(p.name, sizeof p.name, "%s-%d", job, i);
  snprintf(p.uid, sizeof p.uid, "uid-%s-%d", job, i);
  p.ncontainers = 1;
  p.whole_gpus[0] = gpus;
  p.gpu_count = 1;
  snprintf(p.gang_job, sizeof p.gang_job, "%s", job);
  p.gang_replicas = replicas;
  return p;
}

struct owners {
  const char *node;
  uint32_t owned; /* GPUs with an owner */
  uint32_t by_members; /* GPUs owned by a real pod (not a placeholder) */
};
static void owners_fn(const struct gs_ledger *l, void *arg) {
  struct owners *o = arg;
  const struct gs_node *n = gs_ledger_node_get(l, o->node);
  o->owned = o->by_members = 0;
  for (uint32_t i = 0; n != NULL && i < n->ngpus; i++) {
    if (n->gpus[i].owner == NULL)
      continue;
    o->owned++;
    if (strncmp(n->gpus[i].owner->uid, GS_GANG_UID_PREFIX, strlen(GS_GANG_UID_PREFIX)) != 0)
      o->by_members++;
  }
}
static struct owners owners(struct gs_fw *fw, const char *node) {
  struct owners o = {node, 0, 0};
  gs_fw_read(fw, owners_fn, &o);
  return o;
}

/* kube-scheduler's cycle for one pod: filter over all nodes, then bind to
 * the one that passed. Returns the node or NULL. */
static void count_plan(void *arg, const struct gs_plan_view *p) {
  (void)p;
  (*(size_t *)arg)++;
}
static void plans_fn(const struct gs_ledger *l, void *arg) {
  struct gs_fw **fw = ((void **)arg)[0];
  (void)l;
  gs_fw_describe(*fw, count_plan, ((void **)arg)[1]);
}
/* Gang plans still holding slots, as the debug view sees them. */
static size_t plans(struct gs_fw *fw) {
  size_t n = 0;
  void *args[2] = {&fw, &n};
  gs_fw_read(fw, plans_fn, args);
  return n;
}

static const char *schedule(struct gs_fw *fw, const struct gs_pod_request *p, int64_t now,
                            char *reason, size_t len) {
  static const char *nodes[] = {"topo-a", "topo-b"};
  struct gs_node_result r[2];
  struct gs_annotations a = {0};
  struct gs_status st;
  bool fresh;
  const char *chosen = NULL;
  assert_int_equal(gs_fw_filter(fw, p, nodes, 2, now, r), GS_EOK);
  for (int i = 0; i < 2; i++) {
    if (r[i].code == GS_CODE_SUCCESS) {
      assert_null(chosen); /* a member passes only on its slot's node */
      chosen = nodes[i];
    } else if (reason != NULL) {
      snprintf(reason, len, "%s", r[i].reason);
    }
  }
  if (chosen == NULL)
    return NULL;
  assert_int_equal(gs_fw_bind_prepare(fw, p, chosen, now, &a, &fresh, &st), GS_EOK);
  assert_non_null(gs_annotations_get(&a, GS_ANN_TOPO_ALLOCATION));
  gs_annotations_clear(&a);
  gs_fw_bind_commit(fw, p->uid);
  return chosen;
}

static void test_two_replicas_both_bound(void **state) {
  struct gs_fw *fw = fw_new(60);
  struct gs_pod_request m0 = member("pytorch", 0, 2, 1), m1 = member("pytorch", 1, 2, 1);
  const char *n0, *n1;
  (void)state;
  add_topo_node(fw, "topo-a");
  add_topo_node(fw, "topo-b");
  n0 = schedule(fw, &m0, 1 * SEC, NULL, 0);
  assert_non_null(n0);
  /* After the first member, the plan holds both slots. */
  assert_int_equal(owners(fw, "topo-a").owned + owners(fw, "topo-b").owned, 2);
  n1 = schedule(fw, &m1, 2 * SEC, NULL, 0);
  assert_non_null(n1);
  assert_int_equal(owners(fw, "topo-a").by_members + owners(fw, "topo-b").by_members, 2);
  /* Complete gangs are no longer listed. */
  gs_fw_tick(fw, 3 * SEC);
  assert_int_equal(plans(fw), 0);
  gs_fw_free(fw);
}

/* A namespace and a job name of 63 characters each: the placeholder UIDs
 * must still fit the ledger (seen on the real control plane: the job was
 * refused with "only 0 of 2 replicas fit" on an empty 8-GPU node). */
static void test_long_namespace_and_job_names(void **state) {
  struct gs_fw *fw = fw_new(60);
  char job[64], ns[64];
  struct gs_pod_request m0, m1, o0, o1;
  (void)state;
  memset(job, 'j', 63);
  job[63] = '\0';
  memset(ns, 'n', 63);
  ns[63] = '\0';
  m0 = member(job, 0, 2, 1);
  m1 = member(job, 1, 2, 1);
  snprintf(m0.ns, sizeof m0.ns, "%s", ns);
  snprintf(m1.ns, sizeof m1.ns, "%s", ns);
  /* the same job name in another namespace is another gang */
  job[62] = 'k';
  o0 = member(job, 0, 2, 1);
  o1 = member(job, 1, 2, 1);
  snprintf(o0.ns, sizeof o0.ns, "%s", ns);
  snprintf(o1.ns, sizeof o1.ns, "%s", ns);
  snprintf(m0.uid, sizeof m0.uid, "uid-m0");
  snprintf(m1.uid, sizeof m1.uid, "uid-m1");
  snprintf(o0.uid, sizeof o0.uid, "uid-o0");
  snprintf(o1.uid, sizeof o1.uid, "uid-o1");
  add_topo_node(fw, "topo-a");
  add_topo_node(fw, "topo-b");
  assert_non_null(schedule(fw, &m0, 1 * SEC, NULL, 0));
  assert_non_null(schedule(fw, &o0, 1 * SEC, NULL, 0));
  assert_int_equal(owners(fw, "topo-a").owned + owners(fw, "topo-b").owned, 4);
  assert_non_null(schedule(fw, &m1, 2 * SEC, NULL, 0));
  assert_non_null(schedule(fw, &o1, 2 * SEC, NULL, 0));
  assert_int_equal(owners(fw, "topo-a").by_members + owners(fw, "topo-b").by_members, 4);
  gs_fw_free(fw);
}

static void test_gang_that_cannot_fit_binds_nothing(void **state) {
  struct gs_fw *fw = fw_new(60);
  struct gs_pod_request m0 = member("big", 0, 3, 8);
  char reason[GS_REASON_MAX] = "";
  (void)state;
  add_topo_node(fw, "topo-a");
  add_topo_node(fw, "topo-b");
  assert_null(schedule(fw, &m0, 1 * SEC, reason, sizeof reason));
  assert_non_null(strstr(reason, "default/big"));
  assert_non_null(strstr(reason, "2 of 3"));
  assert_null(strstr(reason, "topo-"));
  assert_int_equal(owners(fw, "topo-a").owned + owners(fw, "topo-b").owned, 0);
  assert_int_equal(plans(fw), 0);
  gs_fw_free(fw);
}

static void test_incomplete_gang_times_out(void **state) {
  struct gs_fw *fw = fw_new(60);
  struct gs_pod_request m0 = member("slow", 0, 2, 4);
  (void)state;
  add_topo_node(fw, "topo-a");
  add_topo_node(fw, "topo-b");
  assert_non_null(schedule(fw, &m0, 1 * SEC, NULL, 0));
  assert_int_equal(owners(fw, "topo-a").owned + owners(fw, "topo-b").owned, 8);
  gs_fw_tick(fw, 30 * SEC);
  assert_int_equal(owners(fw, "topo-a").owned + owners(fw, "topo-b").owned, 8);
  gs_fw_tick(fw, 62 * SEC);
  /* The second slot is released; the bound member keeps its 4 GPUs. */
  assert_int_equal(owners(fw, "topo-a").owned + owners(fw, "topo-b").owned, 4);
  assert_int_equal(owners(fw, "topo-a").by_members + owners(fw, "topo-b").by_members, 4);
  assert_int_equal(plans(fw), 0);
  gs_fw_free(fw);
}

static void test_four_gpu_member_gets_an_nvlink_quad(void **state) {
  struct gs_fw *fw = fw_new(60);
  struct gs_pod_request m0 = member("quad", 0, 1, 4);
  struct gs_annotations a = {0};
  struct gs_status st;
  bool fresh;
  const char *alloc;
  (void)state;
  add_topo_node(fw, "topo-a");
  add_topo_node(fw, "topo-b");
  assert_int_equal(gs_fw_bind_prepare(fw, &m0, "topo-a", SEC, &a, &fresh, &st), GS_EOK);
  alloc = gs_annotations_get(&a, GS_ANN_TOPO_ALLOCATION);
  assert_non_null(alloc);
  /* DGX-1: {0,1,2,3} or its mirror {4,5,6,7} are the all-NVLink quads. */
  assert_true(strstr(alloc, "\"visibleGPUs\":[\"0\",\"1\",\"2\",\"3\"]") != NULL ||
              strstr(alloc, "\"visibleGPUs\":[\"4\",\"5\",\"6\",\"7\"]") != NULL);
  gs_annotations_clear(&a);
  gs_fw_free(fw);
}

static void test_deleted_member_frees_its_slot(void **state) {
  struct gs_fw *fw = fw_new(60);
  struct gs_pod_request m0 = member("del", 0, 2, 2), m1 = member("del", 1, 2, 2),
                        m2 = member("del", 2, 2, 2);
  (void)state;
  add_topo_node(fw, "topo-a");
  add_topo_node(fw, "topo-b");
  assert_non_null(schedule(fw, &m0, 1 * SEC, NULL, 0));
  gs_fw_pod_gone(fw, m0.uid);
  /* The slot goes back to the plan: the GPUs stay held for a replacement. */
  assert_int_equal(owners(fw, "topo-a").owned + owners(fw, "topo-b").owned, 4);
  assert_int_equal(owners(fw, "topo-a").by_members + owners(fw, "topo-b").by_members, 0);
  assert_non_null(schedule(fw, &m2, 2 * SEC, NULL, 0));
  assert_non_null(schedule(fw, &m1, 3 * SEC, NULL, 0));
  assert_int_equal(owners(fw, "topo-a").by_members + owners(fw, "topo-b").by_members, 4);
  gs_fw_free(fw);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_two_replicas_both_bound),
      cmocka_unit_test(test_gang_that_cannot_fit_binds_nothing),
      cmocka_unit_test(test_long_namespace_and_job_names),
      cmocka_unit_test(test_incomplete_gang_times_out),
      cmocka_unit_test(test_four_gpu_member_gets_an_nvlink_quad),
      cmocka_unit_test(test_deleted_member_frees_its_slot),
  };
  return cmocka_run_group_tests(tests, load_dgx1, NULL);
}
