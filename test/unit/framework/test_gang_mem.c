/* Memory-shared gangs through the framework (issue 34, docs/gangs.md):
 * pods asking aliyun.com/gpu-mem with the gang labels are placed all or
 * nothing, slot by slot as gpumem places one pod, on share nodes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "framework.h"
#include "gang/gang.h"
#include "plugins.h"
#include "fw_test.h"

#include <gpushare/annot.h>

#include "../reason_labels.h"
#include "../testutil.h"

#include <stdio.h>
#include <string.h>

#define SEC INT64_C(1000000000)

static const char *nodes[] = {"share-a", "share-b"};

static struct gs_sched *fw_new(void) {
  struct gs_policy policy;
  gs_policy_init(&policy); /* 1 GiB units, binpack */
  return fw_test_new(&policy);
}

/* A share node of one GPU of gib GiB. */
static void add_share_node(struct gs_sched *fw, const char *name, uint64_t gib) {
  struct gs_node_spec spec = gs_test_node(name, GS_MODE_SHARE, 1, gib);
  assert_int_equal(gs_fw_node_upsert(fw, &spec), GS_EOK);
}

static struct gs_pod_request member(const char *job, int i, uint32_t replicas, uint64_t gib) {
  char name[GS_UID_MAX - 3]; /* uid-<name> fits a UID */
  struct gs_pod_request p;
  snprintf(name, sizeof name, "%s-%d", job, i);
  p = gs_test_mem_pod(name, gib, 1);
  snprintf(p.gang_job, sizeof p.gang_job, "%s", job);
  p.gang_replicas = replicas;
  return p;
}

/* MiB used on the node's GPU 0, and how much of it placeholders hold. */
struct used {
  const char *node;
  uint64_t mib;
  uint64_t placeholder_mib;
  size_t members;
};
static void used_fn(const struct gs_ledger *l, void *arg) {
  struct used *u = arg;
  const struct gs_node *n = gs_ledger_node_get(l, u->node);
  u->mib = n != NULL ? n->gpus[0].used_mib : 0;
  (void)l;
}
static uint64_t used_gib(struct gs_sched *fw, const char *node) {
  struct used u = {node, 0, 0, 0};
  gs_sched_read(fw, used_fn, NULL, &u);
  return u.mib / 1024;
}

/* The gang's placeholder for slot 0..R-1, and a pod's own allocation. */
struct lookup {
  const char *uid;
  bool found;
  enum gs_alloc_kind kind;
  char node[64];
};
static void lookup_fn(const struct gs_ledger *l, void *arg) {
  struct lookup *q = arg;
  const struct gs_alloc *a = gs_ledger_alloc_get(l, q->uid);
  q->found = a != NULL;
  if (a != NULL) {
    q->kind = a->kind;
    snprintf(q->node, sizeof q->node, "%s", a->node);
  }
}
static struct lookup lookup(struct gs_sched *fw, const char *uid) {
  struct lookup q = {uid, false, 0, ""};
  gs_sched_read(fw, lookup_fn, NULL, &q);
  return q;
}

/* Filter over both nodes: the node the pod passes on (at most one for a
 * gang member), or NULL with the reason of the last refusal. */
static const char *passes(struct gs_sched *fw, const struct gs_pod_request *p, size_t nnodes,
                          char *reason, size_t len) {
  struct gs_node_result r[2];
  const char *chosen = NULL;
  assert_int_equal(gs_sched_filter(fw, p, nodes, nnodes, SEC, r), GS_EOK);
  for (size_t i = 0; i < nnodes; i++) {
    if (r[i].code == GS_EOK) {
      assert_null(chosen);
      chosen = nodes[i];
    } else {
      gs_test_assert_reason_label(&r[i].status);
      if (reason != NULL)
        snprintf(reason, len, "%s", r[i].reason);
    }
  }
  return chosen;
}

static void reserve(struct gs_sched *fw, const struct gs_pod_request *p, const char *node) {
  struct gs_annotations a = {0};
  struct gs_status st;
  bool fresh;
  assert_int_equal(gs_fw_reserve(fw, p, node, SEC, &a, &fresh, &st), GS_EOK);
  /* a memory pod's Binding annotations (docs/contract.md §4) */
  assert_non_null(gs_annotations_get(&a, GS_ANN_LEGACY_IDX));
  assert_null(gs_annotations_get(&a, GS_ANN_TOPO_ALLOCATION));
  gs_annotations_clear(&a);
}

/* A plain 4 GiB pod bound on node (the cluster full but for 12 GiB). */
static void blocker(struct gs_sched *fw, const char *node) {
  struct gs_pod_request b = gs_test_mem_pod("blocker", 4, 1);
  reserve(fw, &b, node);
  gs_sched_post_bind(fw, b.uid);
}

/* 4 members of 4 GiB on one 16 GiB GPU that has 12 GiB free: none is
 * placed, nothing is held; with the blocker gone every slot is held at the
 * first member's filter, each member reserves its own, Permit waits for
 * the fourth, and the GPU is full of the job. */
static void test_none_held_until_all_fit_then_all_reserved(void **state) {
  struct gs_sched *fw = fw_new();
  struct gs_pod_request m[4];
  struct gs_status st;
  char reason[GS_REASON_MAX] = "";
  const char *n;
  (void)state;
  add_share_node(fw, "share-a", 16);
  blocker(fw, "share-a");
  for (int i = 0; i < 4; i++) {
    m[i] = member("infer", i, 4, 4);
    gs_sched_pod_seen(fw, &m[i], NULL);
  }
  assert_null(passes(fw, &m[0], 1, reason, sizeof reason));
  assert_string_equal(reason, "gang default/infer: only 3 of 4 replicas fit "
                              "(4 units of GPU memory on 1 GPU each)");
  assert_int_equal(used_gib(fw, "share-a"), 4); /* the blocker only */
  assert_false(lookup(fw, "gang/default/infer/0").found);

  gs_fw_pod_gone(fw, "uid-blocker");
  n = passes(fw, &m[0], 1, NULL, 0);
  assert_non_null(n);
  assert_string_equal(n, "share-a");
  assert_int_equal(used_gib(fw, "share-a"), 16); /* every slot held at once */
  for (int i = 0; i < 4; i++) {
    char uid[64];
    snprintf(uid, sizeof uid, "gang/default/infer/%d", i);
    assert_true(lookup(fw, uid).found);
    assert_int_equal(lookup(fw, uid).kind, GS_ALLOC_MEM);
  }
  /* a pod outside the job cannot take the held memory */
  {
    struct gs_pod_request other = gs_test_mem_pod("other", 1, 1);
    assert_null(passes(fw, &other, 1, NULL, 0));
  }
  for (int i = 0; i < 4; i++) {
    assert_string_equal(passes(fw, &m[i], 1, NULL, 0), "share-a");
    reserve(fw, &m[i], "share-a");
    assert_int_equal(lookup(fw, m[i].uid).kind, GS_ALLOC_MEM);
    assert_int_equal(gs_sched_permit(fw, &m[i], "share-a", SEC, &st), i < 3 ? GS_EWAIT : GS_EOK);
    if (i < 3) {
      char want[96];
      snprintf(want, sizeof want, "gang default/infer: %d of 4 members reserved", i + 1);
      assert_string_equal(st.reason, want);
    }
  }
  for (int i = 0; i < 4; i++)
    assert_int_equal(gs_sched_permit(fw, &m[i], "share-a", SEC, &st), GS_EOK);
  assert_int_equal(used_gib(fw, "share-a"), 16); /* the members', no placeholder left */
  for (int i = 0; i < 4; i++) {
    char uid[64];
    snprintf(uid, sizeof uid, "gang/default/infer/%d", i);
    assert_false(lookup(fw, uid).found);
  }
  gs_sched_free(fw);
}

/* Two 8 GiB GPUs on two nodes: the four 4 GiB slots fill both (binpack:
 * two each), each member passes on its own slot's node only. A member of
 * a running job that is deleted frees its 4 GiB; its replacement is planned
 * into them, on the same node. */
static void test_slots_over_two_nodes_and_a_replacement(void **state) {
  struct gs_sched *fw = fw_new();
  struct gs_pod_request m[5];
  const char *where[4];
  struct gs_notify none = {NULL, NULL};
  (void)state;
  add_share_node(fw, "share-a", 8);
  add_share_node(fw, "share-b", 8);
  for (int i = 0; i < 4; i++) {
    m[i] = member("spread", i, 4, 4);
    gs_sched_pod_seen(fw, &m[i], NULL);
  }
  for (int i = 0; i < 4; i++) {
    where[i] = passes(fw, &m[i], 2, NULL, 0);
    assert_non_null(where[i]);
    reserve(fw, &m[i], where[i]);
    gs_sched_post_bind(fw, m[i].uid);
  }
  assert_int_equal(used_gib(fw, "share-a"), 8);
  assert_int_equal(used_gib(fw, "share-b"), 8);
  gs_sched_set_notify(fw, &none);
  gs_sched_tick(fw, 2 * SEC); /* every member bound: the plan is complete */
  gs_fw_pod_gone(fw, m[2].uid);
  assert_int_equal(used_gib(fw, "share-a") + used_gib(fw, "share-b"), 12);
  m[4] = member("spread", 4, 4, 4);
  gs_sched_pod_seen(fw, &m[4], NULL);
  assert_string_equal(passes(fw, &m[4], 2, NULL, 0), where[2]);
  reserve(fw, &m[4], where[2]);
  assert_int_equal(used_gib(fw, "share-a"), 8);
  assert_int_equal(used_gib(fw, "share-b"), 8);
  gs_sched_free(fw);
}

/* Members asking different memory refuse the job as unresolvable, in the
 * memory words; a member of a memory gang whose request is invalid for
 * gpumem (gpu-count 0) is refused as gpumem refuses it. */
static void test_memory_members_that_disagree(void **state) {
  struct gs_sched *fw = fw_new();
  struct gs_pod_request a = member("mix", 0, 2, 4), b = member("mix", 1, 2, 6),
                        bad = member("bad", 0, 1, 4);
  char reason[GS_REASON_MAX] = "";
  struct gs_node_result r[1];
  (void)state;
  add_share_node(fw, "share-a", 16);
  gs_sched_pod_seen(fw, &a, NULL);
  assert_null(passes(fw, &b, 1, reason, sizeof reason));
  assert_string_equal(reason, "gang default/mix: members disagree: pod mix-0 asks 4 units of "
                              "GPU memory on 1 GPU x 2 replicas, pod mix-1 asks 6 units of GPU "
                              "memory on 1 GPU x 2 replicas");
  assert_int_equal(used_gib(fw, "share-a"), 0);
  bad.gpu_count = 0;
  assert_int_equal(gs_sched_filter(fw, &bad, nodes, 1, SEC, r), GS_EOK);
  assert_int_equal(r[0].code, GS_EUNRESOLVABLE);
  assert_int_equal(used_gib(fw, "share-a"), 0);
  gs_sched_free(fw);
}

/* The plan undone by the timeout releases the placeholders' memory. */
static void test_a_memory_plan_times_out(void **state) {
  struct gs_sched *fw = fw_new();
  struct gs_pod_request m0 = member("late", 0, 2, 8), m1 = member("late", 1, 2, 8);
  struct gs_notify none = {NULL, NULL};
  (void)state;
  add_share_node(fw, "share-a", 16);
  gs_sched_pod_seen(fw, &m1, NULL);
  assert_string_equal(passes(fw, &m0, 1, NULL, 0), "share-a");
  assert_int_equal(used_gib(fw, "share-a"), 16);
  gs_sched_set_notify(fw, &none);
  gs_sched_tick(fw, 2 * SEC);
  assert_int_equal(used_gib(fw, "share-a"), 16);
  gs_sched_set_notify(fw, &none);
  gs_sched_tick(fw, 70 * SEC); /* past gangTimeoutSeconds (60) */
  assert_int_equal(used_gib(fw, "share-a"), 0);
  gs_sched_free(fw);
}

GS_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_none_held_until_all_fit_then_all_reserved),
             cmocka_unit_test(test_slots_over_two_nodes_and_a_replacement),
             cmocka_unit_test(test_memory_members_that_disagree),
             cmocka_unit_test(test_a_memory_plan_times_out))
