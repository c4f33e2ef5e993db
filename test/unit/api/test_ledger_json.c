/* Ledger views (docs/contract.md §5), byte-exact over a real ledger. */
#include "api_test.h"

#include "api_internal.h" /* gs__api_dump: the encoders' own byte form */
#include "../testutil.h"

static struct gs_node_spec spec_of(const char *name, enum gs_mode mode, enum gs_placement pl,
                                   uint32_t ngpus, uint64_t units_per_gpu) {
  struct gs_node_spec s = gs_test_node(name, mode, ngpus, units_per_gpu * ngpus);
  s.placement = pl;
  return s;
}

static void restore(struct gs_ledger *l, const char *ns, const char *name, const char *uid,
                    const char *node, enum gs_alloc_kind kind, uint32_t unit,
                    const struct gs_alloc_part *parts, uint32_t nparts) {
  struct gs_alloc a = {.ns = ns, .name = name, .uid = uid, .node = node, .kind = kind,
                       .state = GS_ALLOC_BOUND, .unit_mib = unit, .assume_time_ns = 1,
                       .nparts = nparts, .parts = parts};
  assert_int_equal(gs_ledger_restore(l, &a), GS_EOK);
}

/* cpu-1 (not GPU-sharing), gpu-a (share, spread; three pods in two
 * units), gpu-b (share; GPU 1 unhealthy), gpu-t (topology, GPU 1 owned). */
static struct gs_ledger *cluster(uint32_t unit) {
  static const struct gs_alloc_part p0[] = {{0, 1, 3}};
  static const struct gs_alloc_part p1[] = {{0, 0, 16}};
  static const struct gs_alloc_part p2[] = {{1, 1, 3}, {0, 0, 2}, {1, 0, 1}};
  static const struct gs_alloc_part p3[] = {{0, 1, 0}};
  struct gs_ledger *l = gs_ledger_new(unit);
  struct gs_node_spec s;
  assert_non_null(l);
  /* capacities given in the ledger's unit: 16 GiB and 8 GiB GPUs */
  s = spec_of("gpu-b", GS_MODE_SHARE, GS_PLACE_BINPACK, 2, 8192 / unit);
  assert_int_equal(gs_ledger_node_upsert(l, &s), GS_EOK);
  s = spec_of("gpu-a", GS_MODE_SHARE, GS_PLACE_SPREAD, 2, 16384 / unit);
  assert_int_equal(gs_ledger_node_upsert(l, &s), GS_EOK);
  s = spec_of("cpu-1", GS_MODE_NONE, GS_PLACE_BINPACK, 0, 0);
  assert_int_equal(gs_ledger_node_upsert(l, &s), GS_EOK);
  s = spec_of("gpu-t", GS_MODE_TOPOLOGY, GS_PLACE_BINPACK, 2, 16384 / unit);
  assert_int_equal(gs_ledger_node_upsert(l, &s), GS_EOK);
  assert_int_equal(gs_ledger_node_set_unhealthy(l, "gpu-b", 2), GS_EOK);
  restore(l, "ml", "p2", "uid-2", "gpu-a", GS_ALLOC_MEM, 1024, p2, 3);
  restore(l, "default", "p1", "uid-1", "gpu-a", GS_ALLOC_MEM, 128, p1, 1);
  restore(l, "default", "p0", "uid-0", "gpu-a", GS_ALLOC_MEM, 128, p0, 1);
  restore(l, "default", "p3", "uid-3", "gpu-t", GS_ALLOC_WHOLE, 128, p3, 1);
  return l;
}

#define GPU_A                                                                                \
  "{\"name\":\"gpu-a\",\"mode\":\"share\",\"placement\":\"spread\",\"gpus\":["               \
  "{\"index\":0,\"totalMiB\":16384,\"usedMiB\":5120,\"healthy\":true,\"pods\":["             \
  "{\"namespace\":\"default\",\"name\":\"p1\",\"uid\":\"uid-1\",\"container\":0,"            \
  "\"usedMiB\":2048},"                                                                       \
  "{\"namespace\":\"ml\",\"name\":\"p2\",\"uid\":\"uid-2\",\"container\":0,"                 \
  "\"usedMiB\":2048},"                                                                       \
  "{\"namespace\":\"ml\",\"name\":\"p2\",\"uid\":\"uid-2\",\"container\":1,"                 \
  "\"usedMiB\":1024}]},"                                                                     \
  "{\"index\":1,\"totalMiB\":16384,\"usedMiB\":3456,\"healthy\":true,\"pods\":["             \
  "{\"namespace\":\"default\",\"name\":\"p0\",\"uid\":\"uid-0\",\"container\":0,"            \
  "\"usedMiB\":384},"                                                                        \
  "{\"namespace\":\"ml\",\"name\":\"p2\",\"uid\":\"uid-2\",\"container\":1,"                 \
  "\"usedMiB\":3072}]}]}"

static void test_ledger_all(void **state) {
  struct gs_ledger *l = cluster(GS_UNIT_128MIB);
  json_t *out = NULL;
  (void)state;
  assert_int_equal(gs_api_ledger_json(l, NULL, NULL, &out), GS_EOK);
  assert_dump(
      gs__api_dump(out),
      "{\"unit\":\"128MiB\",\"unitMiB\":128,\"nodes\":["
      "{\"name\":\"cpu-1\",\"mode\":\"default\",\"placement\":\"binpack\",\"gpus\":[]}," GPU_A
      ",{\"name\":\"gpu-b\",\"mode\":\"share\",\"placement\":\"binpack\",\"gpus\":["
      "{\"index\":0,\"totalMiB\":8192,\"usedMiB\":0,\"healthy\":true,\"pods\":[]},"
      "{\"index\":1,\"totalMiB\":8192,\"usedMiB\":0,\"healthy\":false,\"pods\":[]}]},"
      "{\"name\":\"gpu-t\",\"mode\":\"topology\",\"placement\":\"binpack\",\"gpus\":["
      "{\"index\":0,\"totalMiB\":16384,\"usedMiB\":0,\"healthy\":true,\"owner\":null,"
      "\"pods\":[]},"
      "{\"index\":1,\"totalMiB\":16384,\"usedMiB\":0,\"healthy\":true,\"owner\":{"
      "\"namespace\":\"default\",\"name\":\"p3\",\"uid\":\"uid-3\"},\"pods\":["
      "{\"namespace\":\"default\",\"name\":\"p3\",\"uid\":\"uid-3\",\"container\":0,"
      "\"usedMiB\":0}]}]}],"
      "\"gangs\":[]}");
  json_decref(out);
  gs_ledger_free(l);
}

static void test_ledger_one_node_and_view(void **state) {
  struct gs_ledger *l = cluster(GS_UNIT_128MIB);
  json_t *gangs = gs_test_json("[{\"job\":\"default/pytorch-dist-nccl\",\"replicas\":2,"
                                "\"placed\":1,\"nodes\":{\"gpu-b\":[0,3]}}]");
  struct gs_api_ledger_view view = {GS_UNIT_GIB, gangs, NULL};
  json_t *out = NULL;
  (void)state;
  assert_int_equal(gs_api_ledger_json(l, "gpu-a", &view, &out), GS_EOK);
  assert_dump(gs__api_dump(out),
              "{\"unit\":\"128MiB\",\"unitMiB\":128,\"pendingUnit\":\"1GiB\",\"nodes\":[" GPU_A
              "],\"gangs\":[{\"job\":\"default/pytorch-dist-nccl\",\"replicas\":2,"
              "\"placed\":1,\"nodes\":{\"gpu-b\":[0,3]}}]}");
  json_decref(out);
  /* an invalid ConfigMap is shown beside the unit */
  view.config_error = "ConfigMap kube-system/gpushare-config: nodePolicy: bad";
  out = NULL;
  assert_int_equal(gs_api_ledger_json(l, "gpu-a", &view, &out), GS_EOK);
  assert_string_equal(json_string_value(json_object_get(out, "configError")),
                      "ConfigMap kube-system/gpushare-config: nodePolicy: bad");
  json_decref(out);
  view.config_error = NULL;
  /* the view stays the caller's */
  assert_int_equal(gangs->refcount, 1);
  view.pending_unit_mib = 0;
  view.gangs = NULL;
  out = NULL;
  assert_int_equal(gs_api_ledger_json(l, "nope", &view, &out), GS_ENOTFOUND);
  assert_null(out);
  view.gangs = json_object(); /* not an array */
  assert_int_equal(gs_api_ledger_json(l, NULL, &view, &out), GS_EINVAL);
  json_decref(view.gangs);
  assert_int_equal(gs_api_ledger_json(NULL, NULL, NULL, &out), GS_EINVAL);
  json_decref(gangs);
  gs_ledger_free(l);
}

static void test_ledger_empty(void **state) {
  struct gs_ledger *l = gs_ledger_new(GS_UNIT_GIB);
  json_t *out = NULL;
  (void)state;
  assert_int_equal(gs_api_ledger_json(l, NULL, NULL, &out), GS_EOK);
  assert_dump(gs__api_dump(out), "{\"unit\":\"1GiB\",\"unitMiB\":1024,\"nodes\":[],\"gangs\":[]}");
  json_decref(out);
  assert_int_equal(gs_api_inspect_json(l, NULL, &out), GS_EOK);
  assert_dump(gs__api_dump(out), "{\"nodes\":[]}");
  json_decref(out);
  gs_ledger_free(l);
}

#define INSPECT_GPU_A                                                                        \
  "{\"name\":\"gpu-a\",\"totalGPU\":256,\"usedGPU\":67,\"devs\":["                           \
  "{\"id\":0,\"totalGPU\":128,\"usedGPU\":40,\"pods\":["                                     \
  "{\"name\":\"p1\",\"namespace\":\"default\",\"usedGPU\":16},"                              \
  "{\"name\":\"p2\",\"namespace\":\"ml\",\"usedGPU\":24}]},"                                 \
  "{\"id\":1,\"totalGPU\":128,\"usedGPU\":27,\"pods\":["                                     \
  "{\"name\":\"p0\",\"namespace\":\"default\",\"usedGPU\":3},"                               \
  "{\"name\":\"p2\",\"namespace\":\"ml\",\"usedGPU\":24}]}]}"

static void test_inspect_128(void **state) {
  struct gs_ledger *l = cluster(GS_UNIT_128MIB);
  json_t *out = NULL;
  (void)state;
  assert_int_equal(gs_api_inspect_json(l, NULL, &out), GS_EOK);
  /* cpu-1 is not GPU-sharing: left out */
  assert_dump(gs__api_dump(out),
              "{\"nodes\":[" INSPECT_GPU_A
              ",{\"name\":\"gpu-b\",\"totalGPU\":128,\"usedGPU\":0,\"devs\":["
              "{\"id\":0,\"totalGPU\":64,\"usedGPU\":0,\"pods\":[]},"
              "{\"id\":1,\"totalGPU\":64,\"usedGPU\":0,\"pods\":[]}]},"
              "{\"name\":\"gpu-t\",\"totalGPU\":256,\"usedGPU\":0,\"devs\":["
              "{\"id\":0,\"totalGPU\":128,\"usedGPU\":0,\"pods\":[]},"
              "{\"id\":1,\"totalGPU\":128,\"usedGPU\":0,\"pods\":["
              "{\"name\":\"p3\",\"namespace\":\"default\",\"usedGPU\":0}]}]}]}");
  json_decref(out);
  assert_int_equal(gs_api_inspect_json(l, "gpu-a", &out), GS_EOK);
  assert_dump(gs__api_dump(out), "{\"nodes\":[" INSPECT_GPU_A "]}");
  json_decref(out);
  out = NULL;
  assert_int_equal(gs_api_inspect_json(l, "cpu-1", &out), GS_ENOTFOUND);
  assert_int_equal(gs_api_inspect_json(l, "nope", &out), GS_ENOTFOUND);
  assert_null(out);
  gs_ledger_free(l);
}

/* 1 GiB unit: 384 MiB of a 128 MiB-unit pod rounds down to 0 GiB; the GPU
 * figure is its own MiB rounded down (3456 MiB → 3), not a sum of rows. */
static void test_inspect_rounding(void **state) {
  struct gs_ledger *l = cluster(GS_UNIT_GIB);
  json_t *out = NULL;
  (void)state;
  assert_int_equal(gs_api_inspect_json(l, "gpu-a", &out), GS_EOK);
  assert_dump(gs__api_dump(out),
              "{\"nodes\":[{\"name\":\"gpu-a\",\"totalGPU\":32,\"usedGPU\":8,\"devs\":["
              "{\"id\":0,\"totalGPU\":16,\"usedGPU\":5,\"pods\":["
              "{\"name\":\"p1\",\"namespace\":\"default\",\"usedGPU\":2},"
              "{\"name\":\"p2\",\"namespace\":\"ml\",\"usedGPU\":3}]},"
              "{\"id\":1,\"totalGPU\":16,\"usedGPU\":3,\"pods\":["
              "{\"name\":\"p0\",\"namespace\":\"default\",\"usedGPU\":0},"
              "{\"name\":\"p2\",\"namespace\":\"ml\",\"usedGPU\":3}]}]}]}");
  json_decref(out);
  assert_int_equal(gs_api_ledger_json(l, "gpu-a", NULL, &out), GS_EOK);
  assert_dump(gs__api_dump(out), "{\"unit\":\"1GiB\",\"unitMiB\":1024,\"nodes\":[" GPU_A
                                 "],\"gangs\":[]}");
  json_decref(out);
  gs_ledger_free(l);
}

/* Two pods of one name (a recreated pod, new UID) stay separate rows. */
static void test_same_name_pods(void **state) {
  static const struct gs_alloc_part a[] = {{0, 0, 1}, {1, 0, 1}};
  static const struct gs_alloc_part b[] = {{0, 0, 2}};
  struct gs_ledger *l = gs_ledger_new(GS_UNIT_GIB);
  struct gs_node_spec s = spec_of("n", GS_MODE_SHARE, GS_PLACE_BINPACK, 1, 16);
  json_t *out = NULL;
  (void)state;
  assert_int_equal(gs_ledger_node_upsert(l, &s), GS_EOK);
  restore(l, "default", "p", "uid-b", "n", GS_ALLOC_MEM, 1024, b, 1);
  restore(l, "default", "p", "uid-a", "n", GS_ALLOC_MEM, 1024, a, 2);
  assert_int_equal(gs_api_inspect_json(l, NULL, &out), GS_EOK);
  assert_dump(gs__api_dump(out),
              "{\"nodes\":[{\"name\":\"n\",\"totalGPU\":16,\"usedGPU\":4,\"devs\":["
              "{\"id\":0,\"totalGPU\":16,\"usedGPU\":4,\"pods\":["
              "{\"name\":\"p\",\"namespace\":\"default\",\"usedGPU\":2},"
              "{\"name\":\"p\",\"namespace\":\"default\",\"usedGPU\":2}]}]}]}");
  json_decref(out);
  gs_ledger_free(l);
}

/* Restart: every allocation's bind annotations, read back and restored
 * into a fresh ledger, give the same /debug/ledger bytes. */
static void test_rebuild_from_annotations(void **state) {
  struct gs_ledger *l = cluster(GS_UNIT_128MIB), *fresh = gs_ledger_new(GS_UNIT_GIB);
  static struct gs_api_alloc got;
  json_t *before = NULL, *after = NULL;
  char *a, *b;
  (void)state;
  for (size_t i = 0; i < gs_ledger_node_count(l); i++) {
    const struct gs_node *node = gs_ledger_node_at(l, i);
    struct gs_node_spec s = spec_of(node->name, node->mode, node->placement, node->ngpus,
                                    node->ngpus ? node->gpus[0].total_mib / GS_UNIT_GIB : 0);
    assert_int_equal(gs_ledger_node_upsert(fresh, &s), GS_EOK);
    assert_int_equal(gs_ledger_node_set_unhealthy(fresh, node->name, node->unhealthy_mask),
                     GS_EOK);
    for (size_t k = 0; k < gs_ledger_node_alloc_count(l, node->name); k++) {
      const struct gs_alloc *alloc = gs_ledger_node_alloc_at(l, node->name, k);
      struct gs_annotations ann = {0};
      struct gs_diag diag = {{0}, {0}};
      json_t *anns = json_object(), *pod;
      if (alloc->kind == GS_ALLOC_MEM)
        assert_int_equal(gs_annot_mem(alloc, node, &ann), GS_EOK);
      else
        assert_int_equal(gs_annot_whole(alloc, &ann), GS_EOK);
      for (size_t j = 0; j < ann.n; j++)
        json_object_set_new(anns, ann.kv[j].key, json_string(ann.kv[j].value));
      gs_annotations_clear(&ann);
      pod = json_pack("{s:{s:s,s:s,s:s,s:o}}", "metadata", "name", alloc->name, "namespace",
                      alloc->ns, "uid", alloc->uid, "annotations", anns);
      /* the default unit differs from every recorded one on purpose */
      assert_int_equal(gs_api_alloc_from_pod(pod, GS_UNIT_GIB, &got, &diag), GS_EOK);
      {
        struct gs_alloc r = {.ns = gs_api_pod_ns(pod), .name = gs_api_pod_name(pod),
                             .uid = gs_api_pod_uid(pod), .node = node->name, .kind = got.kind,
                             .state = GS_ALLOC_BOUND, .unit_mib = got.unit_mib,
                             .assume_time_ns = got.assume_time_ns, .nparts = got.nparts,
                             .parts = got.parts};
        if (r.kind == GS_ALLOC_WHOLE)
          r.unit_mib = alloc->unit_mib;
        assert_int_equal(gs_ledger_restore(fresh, &r), GS_EOK);
      }
      json_decref(pod);
    }
  }
  assert_int_equal(gs_api_ledger_json(l, NULL, NULL, &before), GS_EOK);
  assert_int_equal(gs_api_ledger_json(fresh, NULL, NULL, &after), GS_EOK);
  a = gs__api_dump(before);
  b = gs__api_dump(after);
  /* only the active unit differs */
  assert_non_null(strstr(b, "{\"unit\":\"1GiB\",\"unitMiB\":1024,"));
  assert_string_equal(strchr(a, '['), strchr(b, '['));
  free(a);
  free(b);
  json_decref(before);
  json_decref(after);
  gs_ledger_free(fresh);
  gs_ledger_free(l);
}

GS_TEST_MAIN_NAMED("api_ledger_json", NULL, NULL, cmocka_unit_test(test_ledger_all),
                   cmocka_unit_test(test_ledger_one_node_and_view),
                   cmocka_unit_test(test_ledger_empty), cmocka_unit_test(test_inspect_128),
                   cmocka_unit_test(test_inspect_rounding), cmocka_unit_test(test_same_name_pods),
                   cmocka_unit_test(test_rebuild_from_annotations))
