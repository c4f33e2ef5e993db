/* Allocation-failure torture of the scheduler service, the framework and
 * the plugins (issue 12, item 5): for N = 1, 2, 3, ... the Nth allocation of
 * an operation fails, until the operation runs without reaching N
 * allocations. Each run must not crash, must answer an error or a result
 * (never a half-done one), must leave the ledger exactly as it was when it
 * fails (a dump of every node, GPU and allocation compared before and after)
 * and leak nothing (LeakSanitizer at exit in the ASan build). The run that
 * succeeds must leave the same ledger as an unhooked run. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "alloc.h"

#include <gpushare/annot.h>
#include <gpushare/sched.h>

#include "../ledger_dump.h"
#include "../testutil.h"

#define NOW INT64_C(1700000000000000000)

static struct gs_topo dgx1;

static int load(void **state) {
  (void)state;
  assert_int_equal(gs_test_load_topo("dgx1_v100_topo-m.txt", &dgx1), 0);
  return 0;
}

static enum gs_err ok_bind(void *ctx, const struct gs_pod_request *pod, const char *node,
                           const struct gs_annotations *annots, struct gs_diag *diag) {
  (void)ctx, (void)pod, (void)node, (void)annots, (void)diag;
  return GS_EOK;
}

static void dump_fn(const struct gs_ledger *l, void *arg) { dump_ledger(l, arg); }

static void dump_sched(struct gs_sched *s, struct dump *d) { gs_sched_read(s, dump_fn, NULL, d); }

/* A service with a share node, a 4-GPU share node and two DGX-1 topology
 * nodes, some pods bound, unhooked. */
static struct gs_sched *fixture(void) {
  struct gs_policy policy;
  struct gs_sched *s;
  struct gs_node_spec a = gs_test_node("share-a", GS_MODE_SHARE, 1, 16),
                      b = gs_test_node("share-b", GS_MODE_SHARE, 4, 64), t;
  struct gs_binder binder = {ok_bind, NULL};
  struct gs_sched_bind_result r;
  gs_policy_init(&policy);
  s = gs_sched_new(&policy);
  assert_non_null(s);
  assert_int_equal(gs_sched_node_upsert(s, &a), GS_EOK);
  assert_int_equal(gs_sched_node_upsert(s, &b), GS_EOK);
  for (int i = 0; i < 2; i++) {
    t = gs_test_node(i ? "topo-b" : "topo-a", GS_MODE_TOPOLOGY, 8, 0);
    t.whole_gpus = 8;
    t.has_topo = true;
    t.topo = &dgx1;
    assert_int_equal(gs_sched_node_upsert(s, &t), GS_EOK);
  }
  for (int i = 0; i < 3; i++) {
    char name[16];
    struct gs_pod_request p;
    snprintf(name, sizeof name, "old-%d", i);
    p = gs_test_mem_pod(name, 2 + (uint64_t)i, 1);
    assert_int_equal(gs_sched_bind(s, &p, NULL, "share-b", NOW, &binder, &r), GS_EOK);
    gs_annotations_clear(&r.annots);
  }
  return s;
}

static struct gs_pod_request member(int i) {
  struct gs_pod_request p = gs_test_mem_pod(i ? "job-1" : "job-0", 0, 1);
  p.mem_units[0] = 0;
  p.whole_gpus[0] = 2;
  snprintf(p.gang_job, sizeof p.gang_job, "job");
  p.gang_replicas = 2;
  return p;
}

/* One operation on the service. Returns GS_EOK when it did what it should;
 * an error otherwise (the ledger must then be unchanged). */
typedef enum gs_err (*op_fn)(struct gs_sched *s);

static enum gs_err op_filter(struct gs_sched *s) {
  const char *nodes[] = {"share-a", "share-b", "topo-a", "topo-b"};
  struct gs_node_result r[4];
  struct gs_pod_request p = gs_test_mem_pod("f", 8, 2);
  return gs_sched_prioritize(s, &p, nodes, 4, NOW, r);
}

static enum gs_err op_bind(struct gs_sched *s) {
  struct gs_binder binder = {ok_bind, NULL};
  struct gs_sched_bind_result r;
  struct gs_pod_request p = gs_test_mem_pod("new", 8, 2);
  enum gs_err e = gs_sched_bind(s, &p, NULL, "share-b", NOW, &binder, &r);
  gs_annotations_clear(&r.annots);
  return e;
}

static enum gs_err op_gang(struct gs_sched *s) {
  const char *nodes[] = {"topo-a", "topo-b"};
  struct gs_node_result r[2];
  struct gs_pod_request m = member(0), other = member(1);
  enum gs_err e;
  gs_sched_pod_seen(s, &other, NULL); /* the watch saw the second member */
  e = gs_sched_filter(s, &m, nodes, 2, NOW, r);
  if (e != GS_EOK)
    return e;
  /* the plan holds both slots, or it failed as a whole */
  return r[0].code == GS_EOK || r[1].code == GS_EOK ? GS_EOK : GS_ENOMEM;
}

static enum gs_err op_node(struct gs_sched *s) {
  struct gs_node_spec n = gs_test_node("share-c", GS_MODE_SHARE, 8, 128);
  return gs_sched_node_upsert(s, &n);
}

static enum gs_err op_restore(struct gs_sched *s) {
  struct gs_alloc_part parts[] = {{0, 1, 3}, {0, 2, 3}};
  struct gs_alloc a = {"default", "seen", "uid-seen", "share-b", GS_ALLOC_MEM, GS_ALLOC_BOUND,
                       1024, NOW, 2, parts, 0, 0};
  return gs_sched_pod_bound(s, &a);
}

static void torture(op_fn op, const char *what) {
  struct dump *want = malloc(sizeof *want), *before = malloc(sizeof *before),
              *after = malloc(sizeof *after);
  struct gs_sched *s;
  unsigned long n;
  assert_non_null(want);
  assert_non_null(before);
  assert_non_null(after);
  /* the unhooked result */
  s = fixture();
  assert_int_equal(op(s), GS_EOK);
  dump_sched(s, want);
  gs_sched_free(s);
  for (n = 1; n < 100000; n++) {
    enum gs_err e;
    bool hit;
    s = fixture();
    dump_sched(s, before);
    gs_alloc_fail_after(n);
    e = op(s);
    hit = gs_alloc_fail_hit();
    gs_alloc_fail_after(0);
    dump_sched(s, after);
    if (!hit) {
      assert_int_equal(e, GS_EOK);
      if (strcmp(after->text, want->text) != 0)
        fail_msg("%s: the run without a failure differs from the unhooked one:\n%s\n--- vs ---\n%s",
                 what, after->text, want->text);
      gs_sched_free(s);
      break;
    }
    if (e != GS_EOK && strcmp(after->text, before->text) != 0)
      fail_msg("%s: allocation %lu failed (%s) and the ledger changed:\n%s\n--- was ---\n%s", what,
               n, gs_strerror(e), after->text, before->text);
    if (e == GS_EOK && strcmp(after->text, want->text) != 0)
      fail_msg("%s: allocation %lu failed, the call said success, the ledger differs", what, n);
    gs_sched_free(s);
  }
  print_message("%s: %lu allocation points walked\n", what, n - 1);
  free(want);
  free(before);
  free(after);
}

static void test_service_new(void **state) {
  struct gs_policy policy;
  (void)state;
  gs_policy_init(&policy);
  for (unsigned long n = 1;; n++) {
    struct gs_sched *s;
    bool hit;
    gs_alloc_fail_after(n);
    s = gs_sched_new(&policy);
    hit = gs_alloc_fail_hit();
    gs_alloc_fail_after(0);
    if (!hit) {
      assert_non_null(s);
      gs_sched_free(s);
      break;
    }
    assert_null(s);
  }
}

static void test_prioritize(void **state) {
  (void)state;
  torture(op_filter, "prioritize");
}

static void test_bind(void **state) {
  (void)state;
  torture(op_bind, "bind");
}

static void test_gang_plan(void **state) {
  (void)state;
  torture(op_gang, "gang plan");
}

static void test_node_upsert(void **state) {
  (void)state;
  torture(op_node, "node upsert");
}

static void test_pod_bound(void **state) {
  (void)state;
  /* out of memory: the pod is kept for a retry (GS_EAGAIN) or refused;
   * the ledger stays as it was either way */
  torture(op_restore, "pod bound");
}

GS_TEST_MAIN(load, NULL, cmocka_unit_test(test_service_new), cmocka_unit_test(test_prioritize),
             cmocka_unit_test(test_bind), cmocka_unit_test(test_gang_plan),
             cmocka_unit_test(test_node_upsert), cmocka_unit_test(test_pod_bound))
