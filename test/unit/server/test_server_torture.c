/* Allocation-failure torture of the server's routes (issue 12 item 5): each
 * request is replayed with the n-th allocation failing, for every n until a
 * run passes without a failure. Every answer must be a well-formed HTTP
 * answer, the ledger (as /debug/ledger shows it) unchanged when the answer
 * says the call failed, and exactly the unhooked result when it says it
 * worked; ASan (the test command) finds leaks and bad accesses. The server
 * runs on the embedded demo cluster, its routes called directly. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "demo.h"
#include "server_int.h"

#include <gpushare/alloc.h>

#include "alloc.h" /* util: the failure injection */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char cluster_path[256];

static const char cluster[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
    "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\",\"labels\":{\"ack.node.gpu.schedule\":"
    "\"share\"}},\"status\":{\"capacity\":{\"aliyun.com/gpu-mem\":\"32\","
    "\"aliyun.com/gpu-count\":\"2\"}}},"
    "{\"kind\":\"Node\",\"metadata\":{\"name\":\"t\",\"labels\":{\"ack.node.gpu.schedule\":"
    "\"topology\"}},\"status\":{\"capacity\":{\"aliyun.com/gpu\":\"4\"}}},"
    "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"old\",\"namespace\":\"default\",\"uid\":\"u-old\","
    "\"annotations\":{\"scheduler.framework.gpushare.allocation\":\"{\\\"0\\\":{\\\"0\\\":12}}\","
    "\"gpushare.io/unit-mib\":\"1024\"}},\"spec\":{\"nodeName\":\"n\",\"priority\":0,"
    "\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":\"12\"}}}]},"
    "\"status\":{\"phase\":\"Running\"}},"
    "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"new\",\"namespace\":\"default\",\"uid\":\"u-new\"},"
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":"
    "\"6\"}}}]},\"status\":{\"phase\":\"Pending\"}}]}";

#define POD_NEW                                                                       \
  "{\"metadata\":{\"name\":\"new\",\"namespace\":\"default\",\"uid\":\"u-new\"},"       \
  "\"spec\":{\"priority\":100,\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":" \
  "{\"aliyun.com/gpu-mem\":\"6\"}}}]}}"

struct op {
  const char *what, *method, *path, *body;
  bool changes; /* success changes the ledger */
};

static const struct op ops[] = {
    {"filter", "POST", "/gpushare-scheduler/filter",
     "{\"Pod\":" POD_NEW ",\"Nodes\":null,\"NodeNames\":[\"n\",\"t\",\"zz\"]}", false},
    {"prioritize", "POST", "/gpushare-scheduler/prioritize",
     "{\"Pod\":" POD_NEW ",\"Nodes\":null,\"NodeNames\":[\"n\",\"t\"]}", false},
    {"preempt", "POST", "/gpushare-scheduler/preempt",
     "{\"Pod\":{\"metadata\":{\"name\":\"big\",\"uid\":\"u-big\"},\"spec\":{\"priority\":100,"
     "\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":\"10\"}}}]}},"
     "\"NodeNameToMetaVictims\":{\"n\":{\"Pods\":[{\"UID\":\"u-old\"}]}}}",
     false},
    {"bind", "POST", "/gpushare-scheduler/bind",
     "{\"PodName\":\"new\",\"PodNamespace\":\"default\",\"PodUID\":\"u-new\",\"Node\":\"n\"}", true},
    {"ledger", "GET", "/debug/ledger", "", false},
    {"inspect", "GET", "/gpushare-scheduler/inspect", "", false},
    {"metrics", "GET", "/metrics", "", false},
};

static struct gs_server *fixture(void) {
  struct gs_config cfg;
  struct gs_cluster c;
  struct gs_diag diag = {"", ""};
  struct gs_policy policy;
  struct gs_server *s;
  gs_config_defaults(&cfg);
  assert_int_equal(gs_cluster_demo_new(cluster_path, &c, &diag), GS_EOK);
  s = gs_server_new(&cfg, c, &diag);
  assert_non_null(s);
  gs_policy_init(&policy);
  assert_int_equal(gs_server_start(s, &policy, &diag), GS_EOK);
  return s;
}

static char *call(struct gs_server *s, const struct op *op, int *status) {
  struct gs_http_request req = {op->method, op->path, "", op->body, strlen(op->body), NULL,
                                "127.0.0.1:1", false};
  struct gs_http_response resp = {200, NULL, NULL, 0};
  gs__server_handle(s, &req, &resp);
  *status = resp.status;
  return resp.body;
}

/* The ledger as /debug/ledger shows it (called with failures off). */
static char *ledger(struct gs_server *s) {
  static const struct op view = {"ledger", "GET", "/debug/ledger", "", false};
  int st;
  char *body = call(s, &view, &st);
  assert_int_equal(st, 200);
  assert_non_null(body);
  return body;
}

static void torture(const struct op *op) {
  struct gs_server *s = fixture();
  char *want, *before;
  int st;
  unsigned long n;
  free(call(s, op, &st));
  assert_int_equal(st, 200);
  want = ledger(s);
  gs_server_free(s);
  for (n = 1; n < 200000; n++) {
    char *after, *body;
    bool hit;
    s = fixture();
    before = ledger(s);
    gs_alloc_fail_after(n);
    body = call(s, op, &st);
    hit = gs_alloc_fail_hit();
    gs_alloc_fail_after(0);
    after = ledger(s);
    assert_true(st >= 200 && st <= 599);
    if (!hit) {
      assert_int_equal(st, 200);
      assert_string_equal(after, want);
      free(body);
      free(after);
      free(before);
      gs_server_free(s);
      break;
    }
    /* a failed call leaves the ledger as it was; a call that worked, as the
     * unhooked run left it */
    if (strcmp(after, before) != 0 && strcmp(after, want) != 0)
      fail_msg("%s: allocation %lu failed and the ledger is neither before nor after:\n%s",
               op->what, n, after);
    if (!op->changes && strcmp(after, before) != 0)
      fail_msg("%s: allocation %lu failed and a read-only call changed the ledger", op->what, n);
    if (op->changes && body != NULL && strstr(body, "\"Error\":\"\"") != NULL)
      assert_string_equal(after, want); /* said success: the allocation is there */
    free(body);
    free(after);
    free(before);
    gs_server_free(s);
  }
  print_message("%s: %lu allocation points walked\n", op->what, n - 1);
  free(want);
}

static void test_routes_under_allocation_failures(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    torture(&ops[i]);
}

static int setup(void **state) {
  FILE *f;
  (void)state;
  /* jansson allocates through the hook too, as in the product (main.c
   * installs the arena hook, which falls back to these) */
  json_set_alloc_funcs(gs_malloc, gs_free);
  snprintf(cluster_path, sizeof cluster_path, "%s/gs-torture-%d.json",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
  f = fopen(cluster_path, "w");
  assert_non_null(f);
  assert_int_equal(fputs(cluster, f) >= 0, 1);
  fclose(f);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  remove(cluster_path);
  return 0;
}

GS_TEST_MAIN(setup, teardown,
             cmocka_unit_test(test_routes_under_allocation_failures))
