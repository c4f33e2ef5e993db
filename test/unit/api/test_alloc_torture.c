/* Allocation-failure torture of the api codecs (issue 7 item 6). jansson
 * allocates through the hook too (json_set_alloc_funcs), so every malloc
 * on the decode and encode paths can be made to fail: for N = 1, 2, ...
 * the Nth allocation fails until the operation no longer reaches N. A run
 * that hit the failure must return GS_ENOMEM (never GS_EPARSE: good input
 * would be called malformed), or, if it reports success, exactly the
 * result of an undisturbed run (never a silently degraded one); nothing
 * may leak (LeakSanitizer at exit). */
#include "api_test.h"

#include "alloc.h"
#include "api_internal.h"

#include <gpushare/ledger.h>

/* What one operation produced, rendered to text (after the hook is
 * disarmed) so that runs compare. */
struct result {
  enum gs_err err;
  struct gs_diag diag;
  struct gs_api_args args;
  bool have_args;
  struct gs_pod_request req;
  struct gs_node_spec spec;
  struct gs_topo topo;
  struct gs_api_alloc alloc;
  struct gs_api_bind_args bind;
  char *text;  /* a malloc'd string result, or NULL */
  json_t *doc; /* a json result, or NULL */
  char rendered[16384];
};

struct op {
  const char *name;
  void (*run)(struct result *r);
};

static void rput(struct result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void rput(struct result *r, const char *fmt, ...) {
  size_t len = strlen(r->rendered);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->rendered + len, sizeof r->rendered - len, fmt, ap);
  va_end(ap);
}

/* Everything the caller could observe of a successful result. */
static void render(struct result *r) {
  r->rendered[0] = '\0';
  rput(r, "err=%s\n", gs_err_name(r->err));
  if (r->err != GS_EOK)
    return;
  if (r->have_args) {
    rput(r, "args by_names=%d n=%zu pod=%s\n", r->args.by_names, r->args.nnodes,
         json_string_value(json_object_get(json_object_get(r->args.pod, "metadata"), "name")));
    for (size_t i = 0; i < r->args.nnodes; i++)
      rput(r, " %s%s\n", r->args.names[i], r->args.nodes[i] ? " +obj" : "");
  }
  rput(r, "req %s/%s/%s n=%u mem=%llu,%llu init=%llu whole=%llu count=%u gang=%s/%u\n",
       r->req.ns, r->req.name, r->req.uid, r->req.ncontainers,
       (unsigned long long)r->req.mem_units[0], (unsigned long long)r->req.mem_units[1],
       (unsigned long long)r->req.init_mem_units, (unsigned long long)r->req.whole_gpus[0],
       r->req.gpu_count, r->req.gang_job, r->req.gang_replicas);
  rput(r, "spec %s mode=%d place=%d count=%u mem=%llu per_gpu=%d:%llu,%llu whole=%llu topo=%d\n",
       r->spec.name, (int)r->spec.mode, (int)r->spec.placement, r->spec.gpu_count,
       (unsigned long long)r->spec.gpu_mem_units, r->spec.has_per_gpu,
       (unsigned long long)r->spec.per_gpu_units[0],
       (unsigned long long)r->spec.per_gpu_units[1], (unsigned long long)r->spec.whole_gpus,
       r->spec.has_topo);
  rput(r, "topo n=%u", r->topo.n);
  for (uint32_t i = 0; i < r->topo.n * r->topo.n && i < 64; i++)
    rput(r, " %u/%u", r->topo.link[i], r->topo.nvlinks[i]);
  rput(r, "\nalloc kind=%d unit=%u t=%lld assigned=%d", (int)r->alloc.kind, r->alloc.unit_mib,
       (long long)r->alloc.assume_time_ns, r->alloc.assigned);
  for (uint32_t i = 0; i < r->alloc.nparts; i++)
    rput(r, " %u:%u:%llu", r->alloc.parts[i].container, r->alloc.parts[i].gpu,
         (unsigned long long)r->alloc.parts[i].units);
  rput(r, "\nbind %s/%s/%s/%s\n", r->bind.pod_ns, r->bind.pod_name, r->bind.pod_uid,
       r->bind.node);
  if (r->text != NULL)
    rput(r, "text %s\n", r->text);
  if (r->doc != NULL) {
    char *d = gs__api_dump(r->doc);
    assert_non_null(d);
    rput(r, "doc %s\n", d);
    free(d);
  }
}

static void release(struct result *r) {
  if (r->have_args)
    gs_api_args_release(&r->args);
  free(r->text);
  json_decref(r->doc);
}

static struct result ref, cur; /* large: keep them off the stack */

/* Runs op for N = 1, 2, ... failing allocations; returns the number of
 * failure points. */
static unsigned long torture(const struct op *op) {
  unsigned long n;
  memset(&ref, 0, sizeof ref);
  op->run(&ref);
  render(&ref);
  for (n = 1;; n++) {
    bool hit;
    memset(&cur, 0, sizeof cur);
    gs_alloc_fail_after(n);
    op->run(&cur);
    hit = gs_alloc_fail_hit();
    gs_alloc_fail_after(0);
    render(&cur);
    if (!hit || cur.err == GS_EOK) {
      /* undisturbed, or recovered: the very same result */
      if (strcmp(cur.rendered, ref.rendered) != 0)
        fail_msg("%s: allocation %lu failed (hit %d); got\n%s\nwant\n%s", op->name, n, hit,
                 cur.rendered, ref.rendered);
    } else if (cur.err != GS_ENOMEM) {
      /* not GS_EPARSE: a caller would call good input malformed */
      fail_msg("%s: allocation %lu failed: got %s (%s: %s)", op->name, n, gs_err_name(cur.err),
               cur.diag.where, cur.diag.text);
    }
    release(&cur);
    if (!hit)
      break;
  }
  release(&ref);
  printf("# %s: %lu allocation failure points\n", op->name, n - 1);
  return n - 1;
}

/* ---- inputs (read before any hook is armed) --------------------------------- */

static char *body_nodes, *body_names;
static size_t len_nodes, len_names;
static json_t *pod_multi, *pod_v2, *pod_legacy, *pod_topo, *node_share, *node_topo;
static struct gs_ledger *ledger;

static const char bind_body[] =
    "{\"PodName\":\"p\",\"PodNamespace\":\"ns\",\"PodUID\":\"u\",\"Node\":\"gpu-a\"}";
static const char topo_text[] =
    "{\"links\":[[\"X\",\"NV2\",\"SYS\"],[\"NV2\",\"X\",\"PIX\"],[\"SYS\",\"PIX\",\"X\"]]}";

static void inputs_load(void) {
  static const struct gs_alloc_part p1[] = {{0, 0, 4}, {1, 1, 2}}, w1[] = {{0, 1, 0}};
  struct gs_node_spec s;
  struct gs_alloc a = {.ns = "ml", .name = "p1", .uid = "u1", .node = "gpu-a",
                       .kind = GS_ALLOC_MEM, .state = GS_ALLOC_BOUND, .unit_mib = 1024,
                       .assume_time_ns = 5, .nparts = 2, .parts = p1};
  body_nodes = read_data("args-nodes.json", &len_nodes);
  body_names = read_data("args-names.json", &len_names);
  pod_multi = load_data_json("pod-share-multi.json");
  node_share = load_data_json("node-share.json");
  node_topo = load_data_json("node-topology.json");
  pod_v2 = gs_test_json(
      "{\"metadata\":{\"annotations\":{\"scheduler.framework.gpushare.allocation\":"
      "\"{\\\"0\\\":{\\\"0\\\":4,\\\"1\\\":4},\\\"1\\\":{\\\"1\\\":\\\"2\\\"}}\","
      "\"scheduler.framework.gpushare.assigned\":\"true\","
      "\"scheduler.framework.gpushare.assume-time\":\"17\",\"gpushare.io/unit-mib\":\"128\"}}}");
  pod_legacy = gs_test_json("{\"metadata\":{\"annotations\":{\"ALIYUN_COM_GPU_MEM_IDX\":\"2,0\","
                             "\"ALIYUN_COM_GPU_MEM_POD\":\"9\","
                             "\"ALIYUN_COM_GPU_MEM_ASSUME_TIME\":\"3\"}}}");
  pod_topo = gs_test_json(
      "{\"metadata\":{\"annotations\":{\"gputopology.alibabacloud.com/allocation\":"
      "\"{\\\"allocatedGPUs\\\":{\\\"0\\\":[\\\"0\\\",\\\"1\\\"],\\\"1\\\":[3]},"
      "\\\"assumeTime\\\":4,\\\"assigned\\\":true}\"}}}");
  ledger = gs_ledger_new(GS_UNIT_128MIB);
  assert_non_null(ledger);
  memset(&s, 0, sizeof s);
  strcpy(s.name, "gpu-a");
  s.mode = GS_MODE_SHARE;
  s.gpu_count = 2;
  s.gpu_mem_units = 256;
  assert_int_equal(gs_ledger_node_upsert(ledger, &s), GS_EOK);
  strcpy(s.name, "gpu-t");
  s.mode = GS_MODE_TOPOLOGY;
  assert_int_equal(gs_ledger_node_upsert(ledger, &s), GS_EOK);
  assert_int_equal(gs_ledger_restore(ledger, &a), GS_EOK);
  a.uid = "u2";
  a.name = "p2";
  a.node = "gpu-t";
  a.kind = GS_ALLOC_WHOLE;
  a.parts = w1;
  a.nparts = 1;
  assert_int_equal(gs_ledger_restore(ledger, &a), GS_EOK);
}

static void inputs_free(void) {
  free(body_nodes);
  free(body_names);
  json_decref(pod_multi);
  json_decref(pod_v2);
  json_decref(pod_legacy);
  json_decref(pod_topo);
  json_decref(node_share);
  json_decref(node_topo);
  gs_ledger_free(ledger);
}

/* ---- operations ------------------------------------------------------------ */

static void run_args_nodes(struct result *r) {
  r->err = gs_api_args_decode(body_nodes, len_nodes, &r->args, &r->diag);
  r->have_args = r->err == GS_EOK;
}

static void run_args_names(struct result *r) {
  r->err = gs_api_args_decode(body_names, len_names, &r->args, &r->diag);
  r->have_args = r->err == GS_EOK;
}

static void run_pod(struct result *r) {
  r->err = gs_api_pod_decode(pod_multi, &r->req, &r->diag);
}

static void run_node_share(struct result *r) {
  r->err = gs_api_node_decode(node_share, &r->spec, &r->topo, &r->diag);
}

static void run_node_topo(struct result *r) {
  r->err = gs_api_node_decode(node_topo, &r->spec, &r->topo, &r->diag);
}

static void run_alloc_v2(struct result *r) {
  r->err = gs_api_alloc_from_pod(pod_v2, GS_UNIT_GIB, &r->alloc, &r->diag);
}

static void run_alloc_legacy(struct result *r) {
  r->err = gs_api_alloc_from_pod(pod_legacy, GS_UNIT_GIB, &r->alloc, &r->diag);
}

static void run_alloc_topo(struct result *r) {
  r->err = gs_api_alloc_from_pod(pod_topo, GS_UNIT_GIB, &r->alloc, &r->diag);
}

static void run_topo_decode(struct result *r) {
  r->err = gs_api_topo_decode(topo_text, &r->topo, &r->diag);
}

static void run_topo_encode(struct result *r) {
  static struct gs_topo t;
  if (t.n == 0)
    assert_int_equal(gs_api_topo_decode(topo_text, &t, NULL), GS_EOK);
  r->text = gs_api_topo_encode(&t);
  r->err = r->text != NULL ? GS_EOK : GS_ENOMEM;
}

static void run_bind(struct result *r) {
  r->err = gs_api_bind_args_decode(bind_body, sizeof bind_body - 1, &r->bind, &r->diag);
}

/* A filter answer in both forms, with reasons that need escaping. */
static void run_filter_result(struct result *r) {
  json_t *all = json_array();
  r->err = all != NULL ? GS_EOK : GS_ENOMEM;
  for (size_t f = 0; r->err == GS_EOK && f < 2; f++) {
    struct gs_api_filter_result *fr = gs_api_filter_result_new(f == 0);
    char *out = NULL;
    r->err = fr != NULL ? GS_EOK : GS_ENOMEM;
    if (r->err == GS_EOK)
      r->err = gs_api_filter_result_pass(fr, "gpu-a", node_share);
    if (r->err == GS_EOK)
      r->err = gs_api_filter_result_fail(fr, "gpu-b", "insufficient GPU memory", false);
    if (r->err == GS_EOK)
      r->err = gs_api_filter_result_fail(fr, "gpu-c", "bad \xff byte", true);
    if (r->err == GS_EOK)
      r->err = gs_api_filter_result_error(fr, "50% off \xc3");
    if (r->err == GS_EOK) {
      out = gs_api_filter_result_dump(fr);
      r->err = out != NULL ? GS_EOK : GS_ENOMEM;
    }
    if (r->err == GS_EOK && json_array_append_new(all, json_string(out)) != 0)
      r->err = GS_ENOMEM;
    free(out);
    gs_api_filter_result_free(fr);
  }
  if (r->err == GS_EOK)
    r->doc = all;
  else
    json_decref(all);
}

/* The one-shot encoders. */
static void run_dumps(struct result *r) {
  static const char *const hosts[] = {"gpu-a", "gpu-b"};
  static const int64_t scores[] = {10, 3};
  char *outs[5];
  size_t len = 0;
  outs[0] = gs_api_filter_error_dump("bad 100% \xfe");
  outs[1] = gs_api_priorities_dump(hosts, scores, 2);
  outs[2] = gs_api_bind_result_dump("no room 5%");
  outs[3] = gs_api_error_dump("not found \x80");
  outs[4] = NULL;
  r->err = GS_EOK;
  for (size_t i = 0; i < 4; i++) {
    if (outs[i] == NULL)
      r->err = GS_ENOMEM;
    else
      len += strlen(outs[i]) + 1;
  }
  if (r->err == GS_EOK) {
    r->text = malloc(len + 1);
    assert_non_null(r->text);
    r->text[0] = '\0';
    for (size_t i = 0; i < 4; i++) {
      strcat(r->text, outs[i]);
      strcat(r->text, "\n");
    }
  }
  for (size_t i = 0; i < 4; i++)
    free(outs[i]);
}

static void run_ledger_json(struct result *r) {
  struct gs_api_ledger_view view = {.pending_unit_mib = GS_UNIT_GIB, .gangs = NULL};
  r->err = gs_api_ledger_json(ledger, NULL, &view, &r->doc);
}

static void run_ledger_json_node(struct result *r) {
  r->err = gs_api_ledger_json(ledger, "gpu-t", NULL, &r->doc);
}

static void run_inspect_json(struct result *r) {
  r->err = gs_api_inspect_json(ledger, NULL, &r->doc);
}

static void test_decoders(void **state) {
  static const struct op ops[] = {
      {"args (Nodes form)", run_args_nodes},
      {"args (NodeNames form)", run_args_names},
      {"pod", run_pod},
      {"node (share, annotations)", run_node_share},
      {"node (topology)", run_node_topo},
      {"allocation V2", run_alloc_v2},
      {"allocation legacy", run_alloc_legacy},
      {"allocation topology", run_alloc_topo},
      {"topology decode", run_topo_decode},
      {"bind args", run_bind},
  };
  (void)state;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    unsigned long points = torture(&ops[i]);
    /* jansson parses every body: each decoder has failure points, except
     * pod decode, which reads an already parsed object */
    if (ops[i].run != run_pod)
      assert_true(points > 0);
  }
}

static void test_encoders(void **state) {
  static const struct op ops[] = {
      {"topology encode", run_topo_encode},
      {"filter result", run_filter_result},
      {"one-shot dumps", run_dumps},
      {"ledger json", run_ledger_json},
      {"ledger json, one node", run_ledger_json_node},
      {"inspect json", run_inspect_json},
  };
  (void)state;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    assert_true(torture(&ops[i]) > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decoders),
      cmocka_unit_test(test_encoders),
  };
  int rc;
  /* Before jansson allocates anything: its memory goes through the hook. */
  json_set_alloc_funcs(gs_malloc, gs_free);
  inputs_load();
  rc = cmocka_run_group_tests(tests, NULL, NULL);
  inputs_free();
  return rc;
}
