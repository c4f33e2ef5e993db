/* Gangs through the framework: all-or-nothing plans on topology nodes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "framework.h"
#include "gang/gang.h"
#include "plugins.h"
#include "fw_test.h"

#include <gpushare/annot.h>
#include <gpushare/topo.h>

#include "../reason_labels.h"
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

static struct gs_sched *fw_new(uint32_t timeout_s) {
  struct gs_policy policy;
  gs_policy_init(&policy);
  policy.gang_timeout_s = timeout_s;
  return fw_test_new(&policy);
}

static void add_topo_node(struct gs_sched *fw, const char *name) {
  struct gs_node_spec spec;
  memset(&spec, 0, sizeof spec);
  snprintf(spec.name, sizeof spec.name, "%s", name);
  spec.mode = GS_MODE_TOPOLOGY;
  spec.whole_gpus = 8;
  spec.has_topo = true;
  spec.topo = &dgx1;
  assert_int_equal(gs_fw_node_upsert(fw, &spec), GS_EOK);
}

/* What every case starts from (its *state): gangs time out after 60 s, two
 * DGX-1 nodes topo-a and topo-b; freed after the case. */
static int two_nodes(void **state) {
  struct gs_sched *fw = fw_new(60);
  assert_non_null(fw);
  add_topo_node(fw, "topo-a");
  add_topo_node(fw, "topo-b");
  *state = fw;
  return 0;
}

static int free_fw(void **state) {
  gs_sched_free(*state);
  return 0;
}

static struct gs_pod_request member(const char *job, int i, uint32_t replicas, uint64_t gpus) {
  char name[GS_NAME_MAX + 1], uid[GS_UID_MAX + 1], full[160];
  struct gs_pod_request p;
  /* a long job name cuts the name and the UID (test_long_namespace_and_job_names),
   * as it always did; said so, a Release build's -Wformat-truncation is quiet */
  snprintf(full, sizeof full, "%s-%d", job, i);
  snprintf(name, sizeof name, "%.*s", (int)sizeof name - 1, full);
  snprintf(full, sizeof full, "uid-%s-%d", job, i);
  snprintf(uid, sizeof uid, "%.*s", (int)sizeof uid - 1, full);
  p = gs_test_pod(name, uid);
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
static struct owners owners(struct gs_sched *fw, const char *node) {
  struct owners o = {node, 0, 0};
  gs_sched_read(fw, owners_fn, NULL, &o);
  return o;
}


/* The gangs describe lists, as the debug view sees them. */
struct listing {
  size_t n, waiting;
  char job[64];
  uint32_t replicas, placed, nslots;
};
static void list_gang(void *arg, const struct gs_plan_view *p) {
  struct listing *l = arg;
  l->n++;
  l->waiting += p->waiting;
  snprintf(l->job, sizeof l->job, "%s/%s", p->ns, p->job);
  l->replicas = p->replicas;
  l->placed = p->placed;
  l->nslots = p->nslots;
}
static void list_fn(const struct gs_ledger *l, void *arg) {
  struct gs_sched **fw = ((void **)arg)[0];
  (void)l;
  gs_fw_describe(*fw, list_gang, ((void **)arg)[1]);
}
static struct listing listed(struct gs_sched *fw) {
  struct listing l = {0};
  void *args[2] = {&fw, &l};
  gs_sched_read(fw, list_fn, NULL, args);
  return l;
}
/* Gang plans still holding slots (gpushare_gangs_waiting). */
static size_t plans(struct gs_sched *fw) { return listed(fw).waiting; }

/* kube-scheduler's cycle for one pod: filter over all nodes, then bind to
 * the one that passed. Returns the node or NULL (then *code and reason say
 * why: the last node's). */
static const char *schedule_code(struct gs_sched *fw, const struct gs_pod_request *p, int64_t now,
                                 char *reason, size_t len, enum gs_err *code) {
  static const char *nodes[] = {"topo-a", "topo-b"};
  struct gs_node_result r[2];
  struct gs_annotations a = {0};
  struct gs_status st;
  bool fresh;
  const char *chosen = NULL;
  assert_int_equal(gs_sched_filter(fw, p, nodes, 2, now, r), GS_EOK);
  for (int i = 0; i < 2; i++) {
    if (r[i].code == GS_EOK) {
      assert_null(chosen); /* a member passes only on its slot's node */
      chosen = nodes[i];
    } else {
      gs_test_assert_reason_label(&r[i].status);
      if (reason != NULL)
        snprintf(reason, len, "%s", r[i].reason);
      if (code != NULL)
        *code = r[i].code;
    }
  }
  if (chosen == NULL)
    return NULL;
  assert_int_equal(gs_fw_reserve(fw, p, chosen, now, &a, &fresh, &st), GS_EOK);
  assert_non_null(gs_annotations_get(&a, GS_ANN_TOPO_ALLOCATION));
  gs_annotations_clear(&a);
  gs_sched_post_bind(fw, p->uid);
  return chosen;
}

static const char *schedule(struct gs_sched *fw, const struct gs_pod_request *p, int64_t now,
                            char *reason, size_t len) {
  return schedule_code(fw, p, now, reason, len, NULL);
}

/* The watch reports a pending member (docs/gangs.md: members present). */
static void seen(struct gs_sched *fw, const struct gs_pod_request *p) { gs_sched_pod_seen(fw, p, NULL); }

/* Notices from tick, collected. */
struct notices {
  int gang, pods;
  char last_pod[64], message[512];
};
static void on_notice(void *ctx, const struct gs_notice *n) {
  struct notices *ns = ctx;
  assert_int_equal(n->kind, GS_NOTICE_GANG_TIMEOUT);
  if (n->pod == NULL) {
    ns->gang++;
    snprintf(ns->message, sizeof ns->message, "%s", n->message);
  } else {
    ns->pods++;
    snprintf(ns->last_pod, sizeof ns->last_pod, "%s", n->pod);
  }
}

static uint32_t held(struct gs_sched *fw) {
  return owners(fw, "topo-a").owned + owners(fw, "topo-b").owned;
}
static uint32_t by_members(struct gs_sched *fw) {
  return owners(fw, "topo-a").by_members + owners(fw, "topo-b").by_members;
}

/* Issue 13 item 1: a member alone is refused, with how many of R are
 * present, and holds nothing; when the last member appears the plan holds
 * every slot and the members bind. */
static void test_no_member_binds_before_all_exist(void **state) {
  struct gs_sched *fw = *state;
  struct gs_pod_request m0 = member("pytorch", 0, 3, 1), m1 = member("pytorch", 1, 3, 1),
                        m2 = member("pytorch", 2, 3, 1);
  char reason[GS_REASON_MAX] = "";
  enum gs_err code = GS_EOK;
  assert_null(schedule_code(fw, &m0, 1 * SEC, reason, sizeof reason, &code));
  assert_string_equal(reason, "gang default/pytorch: 1 of 3 members present");
  assert_int_equal(code, GS_EUNRESOLVABLE);
  assert_int_equal(held(fw), 0);
  assert_int_equal(plans(fw), 0);
  seen(fw, &m1); /* the watch saw the second one */
  assert_null(schedule_code(fw, &m0, 2 * SEC, reason, sizeof reason, &code));
  assert_string_equal(reason, "gang default/pytorch: 2 of 3 members present");
  assert_int_equal(held(fw), 0);
  /* The third: all present, the plan holds all three slots at once. */
  assert_non_null(schedule(fw, &m2, 3 * SEC, NULL, 0));
  assert_int_equal(held(fw), 3);
  assert_int_equal(by_members(fw), 1);
  assert_int_equal(plans(fw), 1);
  assert_non_null(schedule(fw, &m0, 4 * SEC, NULL, 0));
  assert_non_null(schedule(fw, &m1, 4 * SEC, NULL, 0));
  assert_int_equal(by_members(fw), 3);
  gs_sched_tick(fw, 5 * SEC);
  assert_int_equal(plans(fw), 0); /* complete: no longer a plan */
}

static void test_two_replicas_both_bound(void **state) {
  struct gs_sched *fw = *state;
  struct gs_pod_request m0 = member("pytorch", 0, 2, 1), m1 = member("pytorch", 1, 2, 1);
  seen(fw, &m1);
  assert_non_null(schedule(fw, &m0, 1 * SEC, NULL, 0));
  /* After the first member, the plan holds both slots. */
  assert_int_equal(held(fw), 2);
  assert_non_null(schedule(fw, &m1, 2 * SEC, NULL, 0));
  assert_int_equal(by_members(fw), 2);
  gs_sched_tick(fw, 3 * SEC);
  assert_int_equal(plans(fw), 0);
}

/* Issue 30: a running gang stays listed while any member holds its GPUs,
 * whatever the time since its plan completed, and goes with the last one. */
static void test_running_gang_listed_until_its_last_member_goes(void **state) {
  struct gs_sched *fw = *state;
  struct gs_pod_request m0 = member("live", 0, 2, 2), m1 = member("live", 1, 2, 2);
  struct listing l;
  seen(fw, &m1);
  assert_int_equal(listed(fw).n, 0); /* members pending, nothing held: not listed */
  assert_non_null(schedule(fw, &m0, 1 * SEC, NULL, 0));
  l = listed(fw);
  assert_int_equal(l.n, 1);
  assert_int_equal(l.waiting, 1);
  assert_int_equal(l.placed, 1);
  assert_int_equal(l.nslots, 2);
  assert_non_null(schedule(fw, &m1, 2 * SEC, NULL, 0));
  gs_sched_tick(fw, 3 * SEC); /* the plan completes */
  gs_sched_tick(fw, 1000 * SEC);
  l = listed(fw);
  assert_int_equal(l.n, 1);
  assert_int_equal(l.waiting, 0);
  assert_string_equal(l.job, "default/live");
  assert_int_equal(l.replicas, 2);
  assert_int_equal(l.placed, 2);
  assert_int_equal(l.nslots, 2);
  gs_fw_pod_gone(fw, m0.uid);
  l = listed(fw);
  assert_int_equal(l.n, 1); /* one member still runs */
  assert_int_equal(l.waiting, 0);
  assert_int_equal(l.placed, 1);
  assert_int_equal(l.nslots, 1);
  gs_fw_pod_gone(fw, m1.uid);
  assert_int_equal(listed(fw).n, 0); /* the last member gone: so is the gang */
  assert_int_equal(held(fw), 0);
}

/* After a restart the bound members, read by the watch, list the gang. */
static void test_gang_rebuilt_after_a_restart_is_listed(void **state) {
  struct gs_sched *fw = *state;
  struct gs_pod_request m1 = member("back", 1, 2, 4);
  struct gs_alloc_part parts[4];
  struct gs_alloc a = {.ns = "default", .name = "back-1", .uid = "uid-back-1", .node = "topo-b",
                       .kind = GS_ALLOC_WHOLE, .state = GS_ALLOC_BOUND, .unit_mib = 1024,
                       .nparts = 4, .parts = parts};
  struct listing l;
  for (uint32_t i = 0; i < 4; i++)
    parts[i] = (struct gs_alloc_part){0, i, 0};
  assert_int_equal(gs_fw_pod_restore(fw, &a), GS_EOK);
  gs_sched_pod_seen(fw, &m1, &a);
  l = listed(fw);
  assert_int_equal(l.n, 1);
  assert_int_equal(l.waiting, 0);
  assert_string_equal(l.job, "default/back");
  assert_int_equal(l.placed, 1);
  assert_int_equal(l.nslots, 1);
  gs_fw_pod_gone(fw, m1.uid);
  assert_int_equal(listed(fw).n, 0);
}

/* A namespace and a job name of 63 characters each: the placeholder UIDs
 * must still fit the ledger (seen on the real control plane: the job was
 * refused with "only 0 of 2 replicas fit" on an empty 8-GPU node). */
static void test_long_namespace_and_job_names(void **state) {
  struct gs_sched *fw = *state;
  char job[64], ns[64];
  struct gs_pod_request m[4];
  memset(job, 'j', 63);
  job[63] = '\0';
  memset(ns, 'n', 63);
  ns[63] = '\0';
  for (int i = 0; i < 4; i++) {
    if (i == 2)
      job[62] = 'k'; /* the same job name in another namespace is another gang */
    m[i] = member(job, i % 2, 2, 1);
    snprintf(m[i].ns, sizeof m[i].ns, "%s", ns);
    snprintf(m[i].uid, sizeof m[i].uid, "uid-m%d", i);
    seen(fw, &m[i]);
  }
  assert_non_null(schedule(fw, &m[0], 1 * SEC, NULL, 0));
  assert_non_null(schedule(fw, &m[2], 1 * SEC, NULL, 0));
  assert_int_equal(held(fw), 4);
  assert_non_null(schedule(fw, &m[1], 2 * SEC, NULL, 0));
  assert_non_null(schedule(fw, &m[3], 2 * SEC, NULL, 0));
  assert_int_equal(by_members(fw), 4);
}

static void test_gang_that_cannot_fit_binds_nothing(void **state) {
  struct gs_sched *fw = *state;
  struct gs_pod_request m0 = member("big", 0, 3, 8), m1 = member("big", 1, 3, 8),
                        m2 = member("big", 2, 3, 8);
  char reason[GS_REASON_MAX] = "";
  seen(fw, &m1);
  seen(fw, &m2);
  assert_null(schedule(fw, &m0, 1 * SEC, reason, sizeof reason));
  assert_string_equal(reason, "gang default/big: only 2 of 3 replicas fit (8 whole GPUs each)");
  assert_int_equal(held(fw), 0);
  assert_int_equal(plans(fw), 0);
}

/* Issue 13 item 4: the slots of members not bound are released, with a
 * notice for the gang and one for each such member. */
static void test_incomplete_gang_times_out(void **state) {
  struct gs_sched *fw = *state;
  struct gs_pod_request m0 = member("slow", 0, 2, 4), m1 = member("slow", 1, 2, 4);
  struct notices got = {0};
  struct gs_notify notify = {on_notice, &got};
  struct gs_node_result r[2];
  static const char *nodes[] = {"topo-a", "topo-b"};
  seen(fw, &m1);
  assert_non_null(schedule(fw, &m0, 1 * SEC, NULL, 0));
  /* m1 passes filter (its slot is assigned) but never binds */
  assert_int_equal(gs_sched_filter(fw, &m1, nodes, 2, 2 * SEC, r), GS_EOK);
  assert_int_equal(held(fw), 8);
  gs_sched_set_notify(fw, &notify);
  gs_sched_tick(fw, 30 * SEC);
  assert_int_equal(held(fw), 8);
  assert_int_equal(got.gang, 0);
  gs_sched_set_notify(fw, &notify);
  gs_sched_tick(fw, 62 * SEC);
  /* The second slot is released; the bound member keeps its 4 GPUs. */
  assert_int_equal(held(fw), 4);
  assert_int_equal(by_members(fw), 4);
  assert_int_equal(plans(fw), 0);
  assert_int_equal(got.gang, 1);
  assert_int_equal(got.pods, 1);
  assert_string_equal(got.last_pod, "slow-1");
  assert_non_null(strstr(got.message, "gang default/slow: 1 of 2 members bound within "
                                      "gangTimeoutSeconds (60 s)"));
  gs_sched_set_notify(fw, &notify);
  gs_sched_tick(fw, 200 * SEC);
  assert_int_equal(got.gang, 1); /* once */
  /* m1 comes back: all present, its slot is planned again and binds */
  assert_non_null(schedule(fw, &m1, 201 * SEC, NULL, 0));
  assert_int_equal(by_members(fw), 8);
}

static void test_four_gpu_member_gets_an_nvlink_quad(void **state) {
  struct gs_sched *fw = *state;
  struct gs_pod_request m0 = member("quad", 0, 1, 4);
  struct gs_annotations a = {0};
  struct gs_status st;
  bool fresh;
  const char *alloc;
  assert_int_equal(gs_fw_reserve(fw, &m0, "topo-a", SEC, &a, &fresh, &st), GS_EOK);
  alloc = gs_annotations_get(&a, GS_ANN_TOPO_ALLOCATION);
  assert_non_null(alloc);
  /* DGX-1: {0,1,2,3} or its mirror {4,5,6,7} are the all-NVLink quads. */
  assert_true(strstr(alloc, "\"visibleGPUs\":[\"0\",\"1\",\"2\",\"3\"]") != NULL ||
              strstr(alloc, "\"visibleGPUs\":[\"4\",\"5\",\"6\",\"7\"]") != NULL);
  gs_annotations_clear(&a);
}

/* A member deleted while the plan is being bound: its slot is held again
 * for the replacement. */
static void test_deleted_member_frees_its_slot(void **state) {
  struct gs_sched *fw = *state;
  struct gs_pod_request m0 = member("del", 0, 2, 2), m1 = member("del", 1, 2, 2),
                        m2 = member("del", 2, 2, 2);
  seen(fw, &m1);
  assert_non_null(schedule(fw, &m0, 1 * SEC, NULL, 0));
  gs_fw_pod_gone(fw, m0.uid);
  assert_int_equal(held(fw), 4);
  assert_int_equal(by_members(fw), 0);
  assert_non_null(schedule(fw, &m2, 2 * SEC, NULL, 0));
  assert_non_null(schedule(fw, &m1, 3 * SEC, NULL, 0));
  assert_int_equal(by_members(fw), 4);
}

/* Issue 13 item 2: 2 x 4 GPUs bound on an 8-GPU node; a member deleted and
 * recreated is planned into the 4 free GPUs. */
static void test_replacement_of_a_running_member(void **state) {
  struct gs_sched *fw = *state;
  struct gs_pod_request m0 = member("run", 0, 2, 4), m1 = member("run", 1, 2, 4),
                        m2 = member("run", 2, 2, 4);
  const char *n0, *n1, *n2;
  seen(fw, &m1);
  n0 = schedule(fw, &m0, 1 * SEC, NULL, 0);
  n1 = schedule(fw, &m1, 1 * SEC, NULL, 0);
  assert_non_null(n0);
  assert_non_null(n1);
  assert_string_equal(n0, n1); /* one node: the job stays together */
  gs_sched_tick(fw, 2 * SEC);
  assert_int_equal(plans(fw), 0);
  gs_fw_pod_gone(fw, m1.uid);
  assert_int_equal(by_members(fw), 4);
  assert_int_equal(held(fw), 4); /* nothing held for a running job's lost member */
  n2 = schedule(fw, &m2, 100 * SEC, NULL, 0);
  assert_non_null(n2);
  assert_string_equal(n2, n0); /* the job's node first */
  assert_int_equal(by_members(fw), 8);
}

/* Issue 13 item 2 after a restart: the bound member is reported by the
 * watch with its allocation; the replacement is planned beside it. */
static void test_replacement_after_a_restart(void **state) {
  struct gs_sched *fw = *state;
  struct gs_pod_request m1 = member("re", 1, 2, 4), m2 = member("re", 2, 2, 4);
  struct gs_alloc_part parts[4];
  struct gs_alloc a = {.ns = "default", .name = "re-1", .uid = "uid-re-1", .node = "topo-b",
                       .kind = GS_ALLOC_WHOLE, .state = GS_ALLOC_BOUND, .unit_mib = 1024,
                       .nparts = 4, .parts = parts};
  for (uint32_t i = 0; i < 4; i++)
    parts[i] = (struct gs_alloc_part){0, 4 + i, 0};
  assert_int_equal(gs_fw_pod_restore(fw, &a), GS_EOK);
  gs_sched_pod_seen(fw, &m1, &a);
  assert_string_equal(schedule(fw, &m2, 1 * SEC, NULL, 0), "topo-b");
  assert_int_equal(owners(fw, "topo-b").by_members, 8);
}

/* Issue 13 item 3: members that disagree refuse the job before any binds,
 * as unresolvable, naming both; nothing is held. */
static void test_disagreeing_members_refuse_the_job(void **state) {
  struct gs_sched *fw = *state;
  struct gs_pod_request m0 = member("mix", 0, 2, 2), m1 = member("mix", 1, 2, 4),
                        m2 = member("mix", 2, 2, 2);
  char reason[GS_REASON_MAX] = "";
  enum gs_err code = GS_EOK;
  const char *want = "gang default/mix: members disagree: pod mix-0 asks 2 GPUs x 2 replicas, "
                     "pod mix-1 asks 4 GPUs x 2 replicas";
  assert_null(schedule(fw, &m0, 1 * SEC, reason, sizeof reason));
  assert_string_equal(reason, "gang default/mix: 1 of 2 members present");
  assert_null(schedule_code(fw, &m1, 2 * SEC, reason, sizeof reason, &code));
  assert_string_equal(reason, want);
  assert_int_equal(code, GS_EUNRESOLVABLE);
  assert_null(schedule_code(fw, &m0, 3 * SEC, reason, sizeof reason, &code));
  assert_string_equal(reason, want);
  assert_int_equal(held(fw), 0);
  /* the odd one is deleted and a right one comes: the job runs */
  gs_fw_pod_gone(fw, m1.uid);
  assert_non_null(schedule(fw, &m2, 4 * SEC, NULL, 0));
  assert_non_null(schedule(fw, &m0, 4 * SEC, NULL, 0));
  assert_int_equal(by_members(fw), 4);
}

/* A replica count that differs is a disagreement too; more pods than
 * replicas: the extra one is refused. */
static void test_replica_disagreement_and_surplus(void **state) {
  struct gs_sched *fw = *state;
  struct gs_pod_request a0 = member("rep", 0, 2, 1), a1 = member("rep", 1, 3, 1);
  struct gs_pod_request b0 = member("sur", 0, 1, 1), b1 = member("sur", 1, 1, 1);
  char reason[GS_REASON_MAX] = "";
  seen(fw, &a0);
  assert_null(schedule(fw, &a1, 1 * SEC, reason, sizeof reason));
  assert_string_equal(reason, "gang default/rep: members disagree: pod rep-0 asks 1 GPUs x 2 "
                              "replicas, pod rep-1 asks 1 GPUs x 3 replicas");
  assert_non_null(schedule(fw, &b0, 1 * SEC, NULL, 0));
  assert_null(schedule(fw, &b1, 2 * SEC, reason, sizeof reason));
  assert_string_equal(reason, "gang default/sur: all 1 replica slots are taken");
}

/* Permit's cases: filter over both nodes, reserve p on the first that
 * passes; returns that node. */
static const char *reserve_where_it_fits(struct gs_sched *fw, const struct gs_pod_request *p) {
  static const char *nodes[] = {"topo-a", "topo-b"};
  struct gs_node_result r[2];
  struct gs_annotations a = {0};
  struct gs_status st;
  bool fresh;
  assert_int_equal(gs_sched_filter(fw, p, nodes, 2, SEC, r), GS_EOK);
  const char *n = r[0].code == GS_EOK ? nodes[0] : nodes[1];
  assert_int_equal(gs_fw_reserve(fw, p, n, SEC, &a, &fresh, &st), GS_EOK);
  gs_annotations_clear(&a);
  return n;
}

/* Permit (for the in-process front end): a reserved member waits until
 * every member of its job is reserved, then all may bind. */
static void test_permit_waits_for_the_whole_job(void **state) {
  struct gs_sched *fw = *state;
  struct gs_pod_request m0 = member("perm", 0, 2, 2), m1 = member("perm", 1, 2, 2),
                        loner = member("alone", 0, 1, 1);
  const char *n0 = NULL, *n1 = NULL;
  struct gs_status st;
  seen(fw, &m1);
  n0 = reserve_where_it_fits(fw, &m0);
  assert_int_equal(gs_sched_permit(fw, &m0, n0, SEC, &st), GS_EWAIT);
  assert_string_equal(st.reason, "gang default/perm: 1 of 2 members reserved");
  n1 = reserve_where_it_fits(fw, &m1);
  assert_int_equal(gs_sched_permit(fw, &m1, n1, SEC, &st), GS_EOK);
  assert_int_equal(gs_sched_permit(fw, &m0, n0, SEC, &st), GS_EOK);
  /* not a member with a slot: refused; not a gang member at all: allowed */
  assert_int_equal(gs_sched_permit(fw, &loner, "topo-a", SEC, &st), GS_ENOFIT);
  loner.gang_job[0] = '\0';
  assert_int_equal(gs_sched_permit(fw, &loner, "topo-a", SEC, &st), GS_EOK);
}

/* A reservation undone (the Binding failed, Permit timed out) gives the
 * slot back to the plan at once: the member reserves it again at its next
 * attempt, without waiting for tick (seen on the real control plane: "no
 * plugin reserved GPUs for the pod" after a Permit timeout). */
static void test_undone_reservation_is_held_again_at_once(void **state) {
  struct gs_sched *fw = *state;
  struct gs_pod_request m0 = member("undo", 0, 2, 2), m1 = member("undo", 1, 2, 2);
  struct gs_annotations a = {0};
  const char *n0;
  struct gs_status st;
  bool fresh;
  seen(fw, &m1);
  n0 = reserve_where_it_fits(fw, &m0);
  assert_int_equal(by_members(fw), 2);
  gs_sched_unreserve(fw, &m0, n0);
  assert_int_equal(by_members(fw), 0);
  assert_int_equal(held(fw), 4); /* both slots held by the plan again */
  assert_int_equal(gs_fw_reserve(fw, &m0, n0, 2 * SEC, &a, &fresh, &st), GS_EOK);
  assert_non_null(gs_annotations_get(&a, GS_ANN_TOPO_ALLOCATION));
  gs_annotations_clear(&a);
  assert_int_equal(by_members(fw), 2);
}

#define GANG_CASE(t) cmocka_unit_test_setup_teardown(t, two_nodes, free_fw)

int main(void) {
  const struct CMUnitTest tests[] = {
      GANG_CASE(test_no_member_binds_before_all_exist),
      GANG_CASE(test_two_replicas_both_bound),
      GANG_CASE(test_running_gang_listed_until_its_last_member_goes),
      GANG_CASE(test_gang_rebuilt_after_a_restart_is_listed),
      GANG_CASE(test_gang_that_cannot_fit_binds_nothing),
      GANG_CASE(test_long_namespace_and_job_names),
      GANG_CASE(test_incomplete_gang_times_out),
      GANG_CASE(test_four_gpu_member_gets_an_nvlink_quad),
      GANG_CASE(test_deleted_member_frees_its_slot),
      GANG_CASE(test_replacement_of_a_running_member),
      GANG_CASE(test_replacement_after_a_restart),
      GANG_CASE(test_disagreeing_members_refuse_the_job),
      GANG_CASE(test_replica_disagreement_and_surplus),
      GANG_CASE(test_permit_waits_for_the_whole_job),
      GANG_CASE(test_undone_reservation_is_held_again_at_once),
  };
  return cmocka_run_group_tests(tests, load_dgx1, NULL);
}
