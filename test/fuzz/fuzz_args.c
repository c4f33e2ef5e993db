/* Fuzz target "args": a filter/prioritize body (ExtenderArgs), then
 * everything the server does with one: the Pod's request and any
 * allocation it carries, every node of the Nodes form (with its
 * device-resource and topology annotations) into a framework with the
 * built-in plugins, filter, prioritize, the result encoders, and a bind on
 * the first node that passes, whose annotations must read back to the
 * allocation the ledger holds. */
#include "fuzz.h"

#include "api.h"
#include "framework.h"
#include "plugins.h"

#define NOW_NS INT64_C(1700000000000000000)

static struct gs_sched *fw_new(void) {
  struct gs_policy policy;
  size_t n;
  const struct gs_plugin_ops *const *plugins = gs_plugins_default(&n);
  gs_policy_init(&policy);
  return gs__sched_new_with(&policy, plugins, n, NULL);
}

static int part_cmp(const void *a, const void *b) {
  const struct gs_alloc_part *x = a, *y = b;
  if (x->container != y->container)
    return x->container < y->container ? -1 : 1;
  if (x->gpu != y->gpu)
    return x->gpu < y->gpu ? -1 : 1;
  return 0;
}

struct roundtrip {
  const char *uid;
  const struct gs_api_alloc *back;
  bool checked;
};

/* The ledger's allocation of rt->uid equals what its annotations read back. */
static void compare_fn(const struct gs_ledger *ledger, void *arg) {
  struct roundtrip *rt = arg;
  const struct gs_alloc *a = gs_ledger_alloc_get(ledger, rt->uid);
  struct gs_alloc_part parts[GS_MAX_PARTS];
  FUZZ_CHECK(a != NULL);
  FUZZ_CHECK(a->kind == rt->back->kind);
  FUZZ_CHECK(a->nparts == rt->back->nparts && a->nparts <= GS_MAX_PARTS);
  memcpy(parts, a->parts, a->nparts * sizeof parts[0]);
  qsort(parts, a->nparts, sizeof parts[0], part_cmp);
  for (uint32_t i = 0; i < a->nparts; i++) {
    FUZZ_CHECK(parts[i].container == rt->back->parts[i].container);
    FUZZ_CHECK(parts[i].gpu == rt->back->parts[i].gpu);
    if (a->kind == GS_ALLOC_MEM)
      FUZZ_CHECK(parts[i].units * a->unit_mib ==
                 rt->back->parts[i].units * rt->back->unit_mib);
  }
  rt->checked = true;
}

/* Bind annotations → a Pod object → gs_api_alloc_from_pod. */
static void check_bind_annotations(struct gs_sched *fw, const char *uid,
                                   const struct gs_annotations *ann) {
  json_t *pod = json_object(), *meta = json_object(), *anns = json_object();
  struct gs_api_alloc back;
  struct gs_diag diag = {{0}, {0}};
  struct roundtrip rt = {uid, &back, false};
  enum gs_err err;
  FUZZ_CHECK(pod != NULL && meta != NULL && anns != NULL);
  for (size_t i = 0; i < ann->n; i++)
    FUZZ_CHECK(json_object_set_new(anns, ann->kv[i].key, json_string(ann->kv[i].value)) == 0);
  FUZZ_CHECK(json_object_set_new(meta, "annotations", anns) == 0);
  FUZZ_CHECK(json_object_set_new(pod, "metadata", meta) == 0);
  err = gs_api_alloc_from_pod(pod, gs_sched_policy(fw)->unit_mib, &back, &diag);
  if (err != GS_EOK)
    fprintf(stderr, "read-back: %s: %s\n", diag.where, diag.text);
  FUZZ_CHECK(err == GS_EOK);
  gs_sched_read(fw, compare_fn, NULL, &rt);
  FUZZ_CHECK(rt.checked);
  json_decref(pod);
}

/* An allocation the Pod carries, recorded as the rebuild would. */
static void restore_pod(struct gs_sched *fw, const json_t *pod, const struct gs_pod_request *req) {
  static struct gs_api_alloc a;
  struct gs_diag diag = {{0}, {0}};
  enum gs_err err = gs_api_alloc_from_pod(pod, gs_sched_policy(fw)->unit_mib, &a, &diag);
  const char *node = gs_api_pod_node(pod);
  if (err != GS_ENOTFOUND)
    FUZZ_CHECK_DIAG(err, diag);
  if (err != GS_EOK || node == NULL)
    return;
  struct gs_alloc alloc = {
      .ns = req->ns, .name = req->name, .uid = req->uid, .node = node,
      .kind = a.kind, .state = GS_ALLOC_BOUND, .unit_mib = a.unit_mib,
      .assume_time_ns = a.assume_time_ns, .nparts = a.nparts, .parts = a.parts,
  };
  err = gs_fw_pod_restore(fw, &alloc);
  FUZZ_CHECK(err != GS_ENOMEM);
}

static void check_dump(char *out) {
  json_t *doc;
  FUZZ_CHECK(out != NULL);
  doc = json_loads(out, 0, NULL);
  FUZZ_CHECK(doc != NULL);
  json_decref(doc);
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct gs_topo topo;
  struct gs_api_args args;
  struct gs_pod_request req;
  struct gs_node_spec spec;
  struct gs_diag diag = {{0}, {0}};
  struct gs_node_result *res = NULL;
  struct gs_api_filter_result *fr;
  int64_t *scores = NULL;
  struct gs_sched *fw;
  bool pod_ok;
  enum gs_err err;

  fuzz_init();
  err = gs_api_args_decode((const char *)data, size, &args, &diag);
  FUZZ_CHECK_DIAG(err, diag);
  if (err != GS_EOK)
    return 0;
  FUZZ_CHECK(json_is_object(args.pod));
  FUZZ_CHECK(args.nnodes == 0 || (args.names != NULL && args.nodes != NULL));

  memset(&diag, 0, sizeof diag);
  err = gs_api_pod_decode(args.pod, &req, &diag);
  FUZZ_CHECK_DIAG(err, diag);
  pod_ok = err == GS_EOK;
  (void)gs_api_pod_ns(args.pod);
  (void)gs_api_pod_uid(args.pod);
  (void)gs_api_pod_phase(args.pod);
  (void)gs_api_pod_is_terminal(args.pod);

  fw = fw_new();
  FUZZ_CHECK(fw != NULL);
  for (size_t i = 0; i < args.nnodes; i++) {
    FUZZ_CHECK(args.names[i] != NULL && args.names[i][0] != '\0');
    if (args.nodes[i] == NULL)
      continue;
    memset(&diag, 0, sizeof diag);
    err = gs_api_node_decode(args.nodes[i], &spec, &topo, &diag);
    FUZZ_CHECK_DIAG(err, diag);
    if (err != GS_EOK)
      continue;
    FUZZ_CHECK(strcmp(spec.name, args.names[i]) == 0);
    err = gs_fw_node_upsert(fw, &spec);
    FUZZ_CHECK(err != GS_ENOMEM);
  }
  if (pod_ok)
    restore_pod(fw, args.pod, &req);

  if (pod_ok && args.nnodes > 0) {
    res = calloc(args.nnodes, sizeof *res);
    scores = calloc(args.nnodes, sizeof *scores);
    FUZZ_CHECK(res != NULL && scores != NULL);
    err = gs_sched_filter(fw, &req, args.names, args.nnodes, NOW_NS, res);
    FUZZ_CHECK(err == GS_EOK);
    fr = gs_api_filter_result_new(args.by_names);
    FUZZ_CHECK(fr != NULL);
    for (size_t i = 0; i < args.nnodes; i++) {
      if (res[i].code == GS_EOK)
        err = gs_api_filter_result_pass(fr, args.names[i], args.nodes[i]);
      else
        err = gs_api_filter_result_fail(fr, args.names[i], res[i].reason,
                                        res[i].code == GS_EUNRESOLVABLE);
      FUZZ_CHECK(err == GS_EOK);
    }
    check_dump(gs_api_filter_result_dump(fr));
    gs_api_filter_result_free(fr);

    err = gs_sched_prioritize(fw, &req, args.names, args.nnodes, NOW_NS, res);
    FUZZ_CHECK(err == GS_EOK);
    for (size_t i = 0; i < args.nnodes; i++) {
      FUZZ_CHECK(res[i].score >= 0 && res[i].score <= 10);
      scores[i] = res[i].score;
    }
    check_dump(gs_api_priorities_dump(args.names, scores, args.nnodes));

    for (size_t i = 0; i < args.nnodes; i++) {
      struct gs_annotations ann = {0};
      struct gs_status st = {GS_EOK, GS_R_OTHER, ""};
      bool fresh = false;
      if (res[i].code != GS_EOK)
        continue;
      err = gs_fw_reserve(fw, &req, args.names[i], NOW_NS, &ann, &fresh, &st);
      if (err == GS_EOK) {
        check_bind_annotations(fw, req.uid, &ann);
        gs_sched_post_bind(fw, req.uid);
      }
      gs_annotations_clear(&ann);
      break;
    }
  }
  check_dump(gs_api_filter_error_dump(diag.text));
  free(res);
  free(scores);
  gs_sched_free(fw);
  gs_api_args_release(&args);
  return 0;
}
