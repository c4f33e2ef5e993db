/* The extender's host view (src/observe/host.c, issue 32): each node's
 * allocatable CPU and memory and the requests of the pods bound to it, from
 * the watch's objects, as the service's ledger holds them afterwards. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "host.h"
#include "feed.h"

#include <gpushare/ledger.h>
#include <gpushare/sched.h>

#include <string.h>

static json_t *node(const char *name, const char *cpu, const char *mem) {
  return json_pack("{s:{s:s, s:{s:s}}, s:{s:{s:s, s:s, s:s, s:s}, s:{s:s, s:s, s:s, s:s}}}",
                   "metadata", "name", name, "labels", "ack.node.gpu.schedule", "share",
                   "status", "capacity", "cpu", cpu, "memory", mem, "aliyun.com/gpu-mem", "16",
                   "aliyun.com/gpu-count", "2", "allocatable", "cpu", cpu, "memory", mem,
                   "aliyun.com/gpu-mem", "16", "aliyun.com/gpu-count", "2");
}

/* A pod asking cpu and memory (one container), bound to node_name unless
 * NULL, in phase. */
static json_t *pod(const char *uid, const char *node_name, const char *cpu, const char *mem,
                   const char *phase) {
  json_t *p = json_pack("{s:{s:s, s:s, s:s}, s:{s:[{s:s, s:{s:{s:s, s:s}}}]}, s:{s:s}}",
                        "metadata", "name", uid, "namespace", "default", "uid", uid, "spec",
                        "containers", "name", "c", "resources", "requests", "cpu", cpu,
                        "memory", mem, "status", "phase", phase);
  if (node_name != NULL)
    json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string(node_name));
  return p;
}

struct got {
  const char *node;
  struct gs_host host;
  bool found;
};

static void read_host(const struct gs_ledger *l, void *arg) {
  struct got *g = arg;
  const struct gs_node *n = gs_ledger_node_get(l, g->node);
  g->found = n != NULL;
  if (n != NULL)
    g->host = n->host;
}

/* The ledger's host for name equals (cpu, cpu_used, mem, mem_used). */
static void assert_ledger_host(struct gs_sched *s, const char *name, uint64_t cpu,
                               uint64_t cpu_used, uint64_t mem, uint64_t mem_used) {
  struct got g = {.node = name};
  gs_sched_read(s, read_host, NULL, &g);
  assert_true(g.found);
  assert_int_equal(g.host.cpu_milli, cpu);
  assert_int_equal(g.host.cpu_used_milli, cpu_used);
  assert_int_equal(g.host.mem_mib, mem);
  assert_int_equal(g.host.mem_used_mib, mem_used);
}

/* A pod object to the view (and dropped). */
static void feed(struct gs__hosts *h, json_t *pod) {
  gs__hosts_pod(h, pod);
  json_decref(pod);
}

/* A Node to the service and the view, as the extender's sink hands it. */
static void feed_node(struct gs_sched *s, struct gs__hosts *h, const char *name, const char *cpu,
                      const char *mem) {
  json_t *n = node(name, cpu, mem);
  gs__feed_node(s, n);
  gs__hosts_node(h, n);
  json_decref(n);
}

/* A service under nodePolicy frag and its host view (*ret_h). */
static struct gs_sched *frag_sched(struct gs__hosts **ret_h) {
  struct gs_policy policy;
  struct gs_sched *s;
  gs_policy_init(&policy);
  policy.node_policy = GS_PLACE_FRAG;
  s = gs_sched_new(&policy);
  assert_non_null(s);
  *ret_h = gs__hosts_new(s);
  assert_non_null(*ret_h);
  return s;
}

static void test_bound_pods_counted_on_their_node(void **state) {
  struct gs__hosts *h;
  struct gs_sched *s = frag_sched(&h);
  json_t *n;
  (void)state;
  feed_node(s, h, "a", "96", "384Gi");
  feed_node(s, h, "b", "16000m", "122880Mi");
  assert_ledger_host(s, "a", 96000, 0, 393216, 0);

  /* pending: not counted; bound: counted (memory rounded up to MiB) */
  feed(h, pod("p1", NULL, "8", "30517Mi", "Pending"));
  assert_ledger_host(s, "a", 96000, 0, 393216, 0);
  feed(h, pod("p1", "a", "8", "30517Mi", "Pending"));
  feed(h, pod("p2", "a", "500m", "1000001", "Running"));
  assert_ledger_host(s, "a", 96000, 8500, 393216, 30518);
  /* the same pod seen again is counted once */
  feed(h, pod("p2", "a", "500m", "1000001", "Running"));
  assert_ledger_host(s, "a", 96000, 8500, 393216, 30518);
  /* a pod that moved (deleted and made again under the same uid) moves */
  feed(h, pod("p2", "b", "500m", "1000001", "Running"));
  assert_ledger_host(s, "a", 96000, 8000, 393216, 30517);
  assert_ledger_host(s, "b", 16000, 500, 122880, 1);
  /* terminal: its requests are released; deleted: too */
  feed(h, pod("p2", "b", "500m", "1000001", "Succeeded"));
  assert_ledger_host(s, "b", 16000, 0, 122880, 0);
  n = pod("p1", "a", "8", "30517Mi", "Running");
  gs__hosts_pod_delete(h, n);
  json_decref(n);
  assert_ledger_host(s, "a", 96000, 0, 393216, 0);
  /* a pod on a node not seen yet is kept and counted when the node comes */
  feed(h, pod("p3", "c", "2", "1Gi", "Running"));
  feed_node(s, h, "c", "4", "8Gi");
  assert_ledger_host(s, "c", 4000, 2000, 8192, 1024);
  {
    struct gs_host got;
    assert_true(gs__hosts_get(h, "c", &got));
    assert_int_equal(got.cpu_used_milli, 2000);
    gs__hosts_node_delete(h, "c"); /* its pod still counted until it goes */
    assert_true(gs__hosts_get(h, "c", &got));
    assert_int_equal(got.cpu_milli, 0);
    assert_int_equal(got.cpu_used_milli, 2000);
    assert_false(gs__hosts_get(h, "nowhere", &got));
  }
  gs__hosts_free(h);
  gs_sched_free(s);
}

/* A pod whose request does not decode is not counted, and changes nothing. */
static void test_bad_request_not_counted(void **state) {
  struct gs__hosts *h;
  struct gs_sched *s = frag_sched(&h);
  (void)state;
  feed_node(s, h, "a", "8", "16Gi");
  feed(h, pod("p1", "a", "1", "1Gi", "Running"));
  feed(h, pod("p2", "a", "-1", "1Gi", "Running"));
  assert_ledger_host(s, "a", 8000, 1000, 16384, 1024);
  /* a pod once counted whose request turns bad is taken off */
  feed(h, pod("p1", "a", "lots", "1Gi", "Running"));
  assert_ledger_host(s, "a", 8000, 0, 16384, 0);
  gs__hosts_free(h);
  gs_sched_free(s);
  gs__hosts_free(NULL);
}

GS_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_bound_pods_counted_on_their_node),
             cmocka_unit_test(test_bad_request_not_counted))
