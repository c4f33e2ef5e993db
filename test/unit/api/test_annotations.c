/* Bind annotations (docs/contract.md §4): exact values, and reading them back. */
#include "api_test.h"

#define NS_TIME INT64_C(1700000000123456789)

static struct gs_gpu gpus[4];

/* A node of n GPUs of total_mib each (GPU i at index i). */
static struct gs_node make_node(uint32_t n, uint64_t total_mib) {
  struct gs_node node;
  memset(&node, 0, sizeof node);
  memset(gpus, 0, sizeof gpus);
  for (uint32_t i = 0; i < n; i++) {
    gpus[i].index = i;
    gpus[i].total_mib = total_mib;
    gpus[i].healthy = true;
  }
  node.name = "gpu-a";
  node.mode = GS_MODE_SHARE;
  node.ngpus = n;
  node.gpus = gpus;
  return node;
}

static struct gs_alloc make_alloc(enum gs_alloc_kind kind, uint32_t unit_mib,
                                  const struct gs_alloc_part *parts, uint32_t nparts) {
  struct gs_alloc a;
  memset(&a, 0, sizeof a);
  a.ns = "default";
  a.name = "p1";
  a.uid = "uid-1";
  a.node = "gpu-a";
  a.kind = kind;
  a.state = GS_ALLOC_ASSUMED;
  a.unit_mib = unit_mib;
  a.assume_time_ns = NS_TIME;
  a.nparts = nparts;
  a.parts = parts;
  return a;
}

static void expect(const struct gs_annotations *a, const char *key, const char *want) {
  const char *got = gs_annotations_get(a, key);
  if (got == NULL)
    fail_msg("annotation %s missing", key);
  if (strcmp(got, want) != 0)
    fail_msg("annotation %s = '%s', want '%s'", key, got, want);
}

/* Each key's value, as kv says: key, value, ..., NULL. */
static void expect_each(const struct gs_annotations *a, const char *const *kv) {
  for (size_t i = 0; kv[i] != NULL; i += 2)
    expect(a, kv[i], kv[i + 1]);
}
#define expect_all(a, ...) expect_each(a, (const char *const[]){__VA_ARGS__, NULL})

/* docs/contract.md §4 example: 8 units over GPUs 0 and 1 for container 0. */
static void test_mem_contract_example(void **state) {
  static const struct gs_alloc_part parts[] = {{0, 1, 4}, {0, 0, 4}}; /* unsorted on purpose */
  struct gs_node node = make_node(2, 16384);
  struct gs_alloc alloc = make_alloc(GS_ALLOC_MEM, GS_UNIT_GIB, parts, 2);
  struct gs_annotations ann = {0};
  (void)state;
  assert_int_equal(gs_annot_mem(&alloc, &node, &ann), GS_EOK);
  assert_int_equal(ann.n, 10);
  expect_all(&ann,
             GS_ANN_ALLOCATION, "{\"0\":{\"0\":4,\"1\":4}}",
             GS_ANN_ASSIGNED, "false",
             GS_ANN_ASSUME_TIME, "1700000000123456789",
             GS_ANN_DEVICE_RESOURCE, "{\"0\":16,\"1\":16}",
             GS_ANN_LEGACY_IDX, "0,1",
             GS_ANN_LEGACY_POD, "8",
             GS_ANN_LEGACY_DEV, "16",
             GS_ANN_LEGACY_ASSIGNED, "false",
             GS_ANN_LEGACY_ASSUME_TIME, "1700000000123456789",
             GS_ANN_UNIT_MIB, "1024");
  gs_annotations_clear(&ann);
}

/* 16 × 128 MiB on one GPU of a 4-GPU node, 128 MiB unit. */
static void test_mem_128(void **state) {
  static const struct gs_alloc_part parts[] = {{0, 2, 16}};
  struct gs_node node = make_node(4, 15360);
  struct gs_alloc alloc = make_alloc(GS_ALLOC_MEM, GS_UNIT_128MIB, parts, 1);
  struct gs_annotations ann = {0};
  (void)state;
  gpus[2].total_mib = 16384;
  assert_int_equal(gs_annot_mem(&alloc, &node, &ann), GS_EOK);
  expect_all(&ann,
             GS_ANN_ALLOCATION, "{\"0\":{\"2\":16}}",
             GS_ANN_DEVICE_RESOURCE, "{\"0\":120,\"1\":120,\"2\":128,\"3\":120}",
             GS_ANN_LEGACY_IDX, "2",
             GS_ANN_LEGACY_POD, "16",
             GS_ANN_LEGACY_DEV, "128",
             GS_ANN_UNIT_MIB, "128");
  gs_annotations_clear(&ann);
}

static void test_mem_multi_container(void **state) {
  static const struct gs_alloc_part parts[] = {
      {10, 1, 3}, {2, 3, 1}, {10, 0, 3}, {2, 1, 1},
  };
  struct gs_node node = make_node(4, 16384);
  struct gs_alloc alloc = make_alloc(GS_ALLOC_MEM, GS_UNIT_GIB, parts, 4);
  struct gs_annotations ann = {0};
  (void)state;
  assert_int_equal(gs_annot_mem(&alloc, &node, &ann), GS_EOK);
  /* numeric order: container 2 before 10 */
  expect_all(&ann,
             GS_ANN_ALLOCATION, "{\"2\":{\"1\":1,\"3\":1},\"10\":{\"0\":3,\"1\":3}}",
             GS_ANN_LEGACY_IDX, "0,1,3",
             GS_ANN_LEGACY_POD, "8",
             GS_ANN_LEGACY_DEV, "16"); /* GPU 0, the first chosen */
  gs_annotations_clear(&ann);
}

static void test_mem_errors(void **state) {
  static const struct gs_alloc_part dup[] = {{0, 0, 1}, {0, 0, 2}};
  static const struct gs_alloc_part far[] = {{0, 7, 1}};
  static const struct gs_alloc_part big[] = {{0, 64, 1}};
  static const struct gs_alloc_part ok[] = {{0, 0, 1}};
  struct gs_node node = make_node(2, 16384);
  struct gs_alloc alloc;
  struct gs_annotations ann = {0};
  (void)state;
  /* a GPU twice, a GPU the node lacks, one past GS_MAX_GPUS, no parts, a
   * unit neither 1 GiB nor 128 MiB, whole GPUs */
  const struct {
    enum gs_alloc_kind kind;
    uint32_t unit_mib;
    const struct gs_alloc_part *parts;
    uint32_t nparts;
  } bad[] = {{GS_ALLOC_MEM, GS_UNIT_GIB, dup, 2},  {GS_ALLOC_MEM, GS_UNIT_GIB, far, 1},
             {GS_ALLOC_MEM, GS_UNIT_GIB, big, 1},  {GS_ALLOC_MEM, GS_UNIT_GIB, ok, 0},
             {GS_ALLOC_MEM, 512, ok, 1},           {GS_ALLOC_WHOLE, GS_UNIT_GIB, ok, 1}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    alloc = make_alloc(bad[i].kind, bad[i].unit_mib, bad[i].parts, bad[i].nparts);
    assert_int_equal(gs_annot_mem(&alloc, &node, &ann), GS_EINVAL);
  }
  assert_int_equal(gs_annot_mem(NULL, &node, &ann), GS_EINVAL);
  assert_int_equal(ann.n, 0);

  /* no room for ten more keys: nothing is written */
  for (int i = 0; i < GS_ANNOT_MAX - 5; i++) {
    char key[16];
    snprintf(key, sizeof key, "k%d", i);
    assert_int_equal(gs_annotations_set(&ann, key, "v"), GS_EOK);
  }
  alloc = make_alloc(GS_ALLOC_MEM, GS_UNIT_GIB, ok, 1);
  assert_int_equal(gs_annot_mem(&alloc, &node, &ann), GS_ETOOBIG);
  assert_int_equal(ann.n, GS_ANNOT_MAX - 5);
  gs_annotations_clear(&ann);
  /* existing keys are replaced, others kept */
  assert_int_equal(gs_annotations_set(&ann, GS_ANN_ASSIGNED, "true"), GS_EOK);
  assert_int_equal(gs_annotations_set(&ann, "other", "x"), GS_EOK);
  assert_int_equal(gs_annot_mem(&alloc, &node, &ann), GS_EOK);
  assert_int_equal(ann.n, 11);
  expect_all(&ann,
             GS_ANN_ASSIGNED, "false",
             "other", "x");
  gs_annotations_clear(&ann);
}

static void test_whole(void **state) {
  static const struct gs_alloc_part parts[] = {{0, 1, 0}, {0, 0, 0}};
  static const struct gs_alloc_part two[] = {{1, 3, 0}, {0, 2, 0}, {1, 0, 0}};
  static const struct gs_alloc_part shared[] = {{0, 1, 0}, {1, 1, 0}};
  struct gs_alloc alloc = make_alloc(GS_ALLOC_WHOLE, GS_UNIT_GIB, parts, 2);
  struct gs_annotations ann = {0};
  (void)state;
  assert_int_equal(gs_annot_whole(&alloc, &ann), GS_EOK);
  assert_int_equal(ann.n, 1);
  expect(&ann, GS_ANN_TOPO_ALLOCATION,
         "{\"allocatedGPUs\":{\"0\":[\"0\",\"1\"]},\"visibleGPUs\":[\"0\",\"1\"],"
         "\"assumeTime\":1700000000123456789,\"assigned\":false}");
  alloc = make_alloc(GS_ALLOC_WHOLE, GS_UNIT_GIB, two, 3);
  assert_int_equal(gs_annot_whole(&alloc, &ann), GS_EOK);
  expect(&ann, GS_ANN_TOPO_ALLOCATION,
         "{\"allocatedGPUs\":{\"0\":[\"2\"],\"1\":[\"0\",\"3\"]},\"visibleGPUs\":[\"0\",\"2\","
         "\"3\"],\"assumeTime\":1700000000123456789,\"assigned\":false}");
  alloc = make_alloc(GS_ALLOC_WHOLE, GS_UNIT_GIB, shared, 2);
  assert_int_equal(gs_annot_whole(&alloc, &ann), GS_EINVAL);
  alloc = make_alloc(GS_ALLOC_MEM, GS_UNIT_GIB, parts, 2);
  assert_int_equal(gs_annot_whole(&alloc, &ann), GS_EINVAL);
  gs_annotations_clear(&ann);
}

/* ---- reading back ------------------------------------------------------- */

/* A pod carrying ann (minus the key drop, if any). */
static json_t *pod_with(const struct gs_annotations *ann, const char *const *drop, size_t ndrop) {
  json_t *anns = json_object();
  for (size_t i = 0; i < ann->n; i++) {
    bool skip = false;
    for (size_t j = 0; j < ndrop; j++)
      skip |= strcmp(ann->kv[i].key, drop[j]) == 0;
    if (!skip)
      json_object_set_new(anns, ann->kv[i].key, json_string(ann->kv[i].value));
  }
  return json_pack("{s:{s:s,s:o}}", "metadata", "name", "p1", "annotations", anns);
}

static struct gs_api_alloc got; /* 6 KiB */

static void assert_same_parts(const struct gs_alloc_part *want, uint32_t n) {
  assert_int_equal(got.nparts, n);
  for (uint32_t i = 0; i < n; i++) {
    if (got.parts[i].container != want[i].container || got.parts[i].gpu != want[i].gpu ||
        got.parts[i].units != want[i].units)
      fail_msg("part %u: got (%u,%u,%llu) want (%u,%u,%llu)", i, got.parts[i].container,
               got.parts[i].gpu, (unsigned long long)got.parts[i].units, want[i].container,
               want[i].gpu, (unsigned long long)want[i].units);
  }
}

static void test_roundtrip_v2(void **state) {
  static const struct gs_alloc_part parts[] = {{0, 0, 4}, {0, 1, 4}, {3, 2, 7}};
  struct gs_node node = make_node(4, 16384);
  struct gs_alloc alloc = make_alloc(GS_ALLOC_MEM, GS_UNIT_128MIB, parts, 3);
  struct gs_annotations ann = {0};
  struct gs_diag diag = {{0}, {0}};
  json_t *pod;
  (void)state;
  assert_int_equal(gs_annot_mem(&alloc, &node, &ann), GS_EOK);
  pod = pod_with(&ann, NULL, 0);
  assert_int_equal(gs_api_alloc_from_pod(pod, GS_UNIT_GIB, &got, &diag), GS_EOK);
  assert_int_equal(got.kind, GS_ALLOC_MEM);
  assert_int_equal(got.unit_mib, GS_UNIT_128MIB); /* from gpushare.io/unit-mib */
  assert_int_equal(got.assume_time_ns, NS_TIME);
  assert_false(got.assigned);
  assert_same_parts(parts, 3);
  /* the device plugin marks it assigned */
  json_object_set_new(json_object_get(json_object_get(pod, "metadata"), "annotations"),
                      GS_ANN_ASSIGNED, json_string("true"));
  assert_int_equal(gs_api_alloc_from_pod(pod, GS_UNIT_GIB, &got, &diag), GS_EOK);
  assert_true(got.assigned);
  json_decref(pod);
  /* without the unit key, the default unit applies */
  {
    const char *drop[] = {GS_ANN_UNIT_MIB};
    pod = pod_with(&ann, drop, 1);
    assert_int_equal(gs_api_alloc_from_pod(pod, GS_UNIT_GIB, &got, &diag), GS_EOK);
    assert_int_equal(got.unit_mib, GS_UNIT_GIB);
    json_decref(pod);
  }
  gs_annotations_clear(&ann);
}

static void test_roundtrip_legacy(void **state) {
  static const struct gs_alloc_part parts[] = {{0, 1, 4}, {0, 3, 4}};
  static const char *const drop[] = {GS_ANN_ALLOCATION, GS_ANN_ASSIGNED, GS_ANN_ASSUME_TIME};
  struct gs_node node = make_node(4, 16384);
  struct gs_alloc alloc = make_alloc(GS_ALLOC_MEM, GS_UNIT_GIB, parts, 2);
  struct gs_annotations ann = {0};
  struct gs_diag diag = {{0}, {0}};
  json_t *pod, *anns;
  (void)state;
  assert_int_equal(gs_annot_mem(&alloc, &node, &ann), GS_EOK);
  pod = pod_with(&ann, drop, 3);
  assert_int_equal(gs_api_alloc_from_pod(pod, GS_UNIT_128MIB, &got, &diag), GS_EOK);
  assert_int_equal(got.kind, GS_ALLOC_MEM);
  assert_int_equal(got.unit_mib, GS_UNIT_GIB);
  assert_int_equal(got.assume_time_ns, NS_TIME);
  assert_false(got.assigned);
  assert_same_parts(parts, 2);
  assert_true(got.unit_recorded);

  /* Aliyun's device plugin: only IDX/POD/ASSIGNED/ASSUME_TIME, any order;
   * an odd total leaves the remainder on the first GPU */
  anns = json_object_get(json_object_get(pod, "metadata"), "annotations");
  json_object_del(anns, GS_ANN_UNIT_MIB);
  json_object_set_new(anns, GS_ANN_LEGACY_IDX, json_string("3,1"));
  json_object_set_new(anns, GS_ANN_LEGACY_POD, json_string("9"));
  json_object_set_new(anns, GS_ANN_LEGACY_ASSIGNED, json_string("true"));
  assert_int_equal(gs_api_alloc_from_pod(pod, GS_UNIT_128MIB, &got, &diag), GS_EOK);
  assert_int_equal(got.unit_mib, GS_UNIT_128MIB);
  assert_false(got.unit_recorded); /* the service infers it (issue 13 item 7) */
  assert_int_equal(got.dev_units, 16); /* ALIYUN_COM_GPU_MEM_DEV as written above */
  assert_true(got.assigned);
  {
    static const struct gs_alloc_part want[] = {{0, 1, 5}, {0, 3, 4}};
    assert_same_parts(want, 2);
  }
  json_object_set_new(anns, GS_ANN_LEGACY_DEV, json_string("sixteen"));
  assert_int_equal(gs_api_alloc_from_pod(pod, GS_UNIT_128MIB, &got, &diag), GS_EOK);
  assert_int_equal(got.dev_units, 0); /* unreadable: unknown, the larger reading applies */
  json_object_del(anns, GS_ANN_LEGACY_DEV);
  assert_int_equal(gs_api_alloc_from_pod(pod, GS_UNIT_128MIB, &got, &diag), GS_EOK);
  assert_int_equal(got.dev_units, 0);
  /* the single-GPU form */
  json_object_set_new(anns, GS_ANN_LEGACY_IDX, json_string("0"));
  json_object_del(anns, GS_ANN_LEGACY_ASSUME_TIME);
  assert_int_equal(gs_api_alloc_from_pod(pod, GS_UNIT_GIB, &got, &diag), GS_EOK);
  {
    static const struct gs_alloc_part want[] = {{0, 0, 9}};
    assert_same_parts(want, 1);
    assert_int_equal(got.assume_time_ns, 0);
  }
  json_decref(pod);
  gs_annotations_clear(&ann);
}

static void test_roundtrip_whole(void **state) {
  static const struct gs_alloc_part parts[] = {{0, 2, 0}, {1, 0, 0}, {1, 3, 0}};
  struct gs_alloc alloc = make_alloc(GS_ALLOC_WHOLE, GS_UNIT_GIB, parts, 3);
  struct gs_annotations ann = {0};
  struct gs_diag diag = {{0}, {0}};
  json_t *pod;
  (void)state;
  assert_int_equal(gs_annot_whole(&alloc, &ann), GS_EOK);
  pod = pod_with(&ann, NULL, 0);
  assert_int_equal(gs_api_alloc_from_pod(pod, GS_UNIT_GIB, &got, &diag), GS_EOK);
  assert_int_equal(got.kind, GS_ALLOC_WHOLE);
  assert_int_equal(got.assume_time_ns, NS_TIME);
  assert_false(got.assigned);
  assert_same_parts(parts, 3);
  json_decref(pod);
  /* assigned true, integer GPU ids, no assumeTime */
  pod = gs_test_json("{\"metadata\":{\"annotations\":{\"gputopology.alibabacloud.com/"
                      "allocation\":\"{\\\"allocatedGPUs\\\":{\\\"0\\\":[1,\\\"0\\\"]},"
                      "\\\"assigned\\\":true}\"}}}");
  assert_int_equal(gs_api_alloc_from_pod(pod, GS_UNIT_GIB, &got, &diag), GS_EOK);
  assert_true(got.assigned);
  assert_int_equal(got.assume_time_ns, 0);
  {
    static const struct gs_alloc_part want[] = {{0, 0, 0}, {0, 1, 0}};
    assert_same_parts(want, 2);
  }
  json_decref(pod);
  gs_annotations_clear(&ann);
}

static void test_not_found(void **state) {
  static const char *const pods[] = {
      "{}",
      "{\"metadata\":{\"name\":\"p\"}}",
      "{\"metadata\":{\"name\":\"p\",\"annotations\":null}}",
      "{\"metadata\":{\"name\":\"p\",\"annotations\":{\"a\":\"b\"}}}",
      ("{\"metadata\":{\"annotations\":{\"gpushare.io/unit-mib\":\"1024\","
       "\"scheduler.framework.gpushare.assigned\":\"true\"}}}"),
  };
  (void)state;
  for (size_t i = 0; i < sizeof pods / sizeof pods[0]; i++) {
    json_t *pod = gs_test_json(pods[i]);
    assert_int_equal(gs_api_alloc_from_pod(pod, GS_UNIT_GIB, &got, NULL), GS_ENOTFOUND);
    json_decref(pod);
  }
  {
    json_t *fixture = load_fixture_json("api-roundtrip-v1.34.0-core.v1.Pod.json");
    assert_int_equal(gs_api_alloc_from_pod(fixture, GS_UNIT_GIB, &got, NULL), GS_ENOTFOUND);
    json_decref(fixture);
  }
}

static void test_malformed(void **state) {
  static const struct {
    const char *key, *value;
    const char *where_key; /* annotation named in diag->where */
    const char *needle;
  } cases[] = {
      {GS_ANN_ALLOCATION, "", GS_ANN_ALLOCATION, "invalid JSON"},
      {GS_ANN_ALLOCATION, "{\"0\":{\"0\":4}", GS_ANN_ALLOCATION, "invalid JSON"},
      {GS_ANN_ALLOCATION, "[1]", GS_ANN_ALLOCATION, "must be a JSON object"},
      {GS_ANN_ALLOCATION, "{}", GS_ANN_ALLOCATION, "empty"},
      {GS_ANN_ALLOCATION, "{\"x\":{\"0\":4}}", GS_ANN_ALLOCATION, "container index \"x\""},
      {GS_ANN_ALLOCATION, "{\"64\":{\"0\":4}}", GS_ANN_ALLOCATION, "container index \"64\""},
      {GS_ANN_ALLOCATION, "{\"0\":4}", GS_ANN_ALLOCATION, "must be an object"},
      {GS_ANN_ALLOCATION, "{\"0\":{\"64\":4}}", GS_ANN_ALLOCATION, "GPU index \"64\""},
      {GS_ANN_ALLOCATION, "{\"0\":{\"0\":-4}}", GS_ANN_ALLOCATION, "negative"},
      {GS_ANN_ALLOCATION, "{\"0\":{\"0\":4.5}}", GS_ANN_ALLOCATION, "real number"},
      {GS_ANN_ALLOCATION, "{\"0\":{\"0\":4,\"0\":4}}", GS_ANN_ALLOCATION, "duplicate"},
      /* found by fuzz_alloc: one (container, GPU) pair spelt twice */
      {GS_ANN_ALLOCATION, "{\"0\":{\"1\":4,\"01\":4}}", GS_ANN_ALLOCATION, "given twice"},
      {GS_ANN_ALLOCATION, "{\"0\":{\"1\":4},\"00\":{\"1\":4}}", GS_ANN_ALLOCATION,
       "given twice"},
      {GS_ANN_LEGACY_IDX, "", GS_ANN_LEGACY_IDX, "distinct GPU indices"},
      {GS_ANN_LEGACY_IDX, "0,,1", GS_ANN_LEGACY_IDX, "distinct GPU indices"},
      {GS_ANN_LEGACY_IDX, "0,0", GS_ANN_LEGACY_IDX, "distinct GPU indices"},
      {GS_ANN_LEGACY_IDX, "-1", GS_ANN_LEGACY_IDX, "distinct GPU indices"},
      {GS_ANN_LEGACY_IDX, "1,", GS_ANN_LEGACY_IDX, "distinct GPU indices"},
      {GS_ANN_LEGACY_IDX, "0", GS_ANN_LEGACY_POD, "missing"},
      {GS_ANN_TOPO_ALLOCATION, "{}", GS_ANN_TOPO_ALLOCATION, "allocatedGPUs must be"},
      {GS_ANN_TOPO_ALLOCATION, "{\"allocatedGPUs\":{\"0\":\"1\"}}", GS_ANN_TOPO_ALLOCATION,
       "array of GPU indices"},
      {GS_ANN_TOPO_ALLOCATION, "{\"allocatedGPUs\":{\"0\":[\"1\"],\"1\":[\"1\"]}}",
       GS_ANN_TOPO_ALLOCATION, "distinct GPU index"},
      {GS_ANN_TOPO_ALLOCATION, "{\"allocatedGPUs\":{\"0\":[\"x\"]}}", GS_ANN_TOPO_ALLOCATION,
       "distinct GPU index"},
      {GS_ANN_TOPO_ALLOCATION, "{\"allocatedGPUs\":{\"0\":[]}}", GS_ANN_TOPO_ALLOCATION,
       "empty"},
      {GS_ANN_TOPO_ALLOCATION, "{\"allocatedGPUs\":{\"0\":[0]},\"assumeTime\":\"1\"}",
       GS_ANN_TOPO_ALLOCATION, "assumeTime must be an integer"},
      {GS_ANN_TOPO_ALLOCATION, "{\"allocatedGPUs\":{\"0\":[0]},\"assigned\":\"false\"}",
       GS_ANN_TOPO_ALLOCATION, "assigned must be a boolean"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct gs_diag diag = {{0}, {0}};
    char where[256];
    json_t *pod = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", cases[i].key,
                            cases[i].value);
    enum gs_err err = gs_api_alloc_from_pod(pod, GS_UNIT_GIB, &got, &diag);
    json_decref(pod);
    if (err != GS_EPARSE)
      fail_msg("case %zu: got %s (%s)", i, gs_err_name(err), diag.text);
    snprintf(where, sizeof where, "Pod.metadata.annotations[\"%s\"]", cases[i].where_key);
    if (strncmp(diag.where, where, strlen(where)) != 0)
      fail_msg("case %zu: where %s want %s", i, diag.where, where);
    assert_diag(diag, cases[i].needle);
  }
}

static void test_malformed_other_keys(void **state) {
  static const char *const pods[] = {
      "{\"metadata\":{\"annotations\":[]}}",
      "{\"metadata\":{\"annotations\":{\"scheduler.framework.gpushare.allocation\":{}}}}",
      "{\"metadata\":{\"annotations\":{\"scheduler.framework.gpushare.allocation\":"
      "\"{\\\"0\\\":{\\\"0\\\":1}}\",\"gpushare.io/unit-mib\":\"256\"}}}",
      "{\"metadata\":{\"annotations\":{\"scheduler.framework.gpushare.allocation\":"
      "\"{\\\"0\\\":{\\\"0\\\":1}}\",\"scheduler.framework.gpushare.assume-time\":\"soon\"}}}",
      "{\"metadata\":{\"annotations\":{\"ALIYUN_COM_GPU_MEM_IDX\":\"0\","
      "\"ALIYUN_COM_GPU_MEM_POD\":\"1.5\"}}}",
      "{\"metadata\":{\"annotations\":{\"ALIYUN_COM_GPU_MEM_IDX\":\"0\","
      "\"ALIYUN_COM_GPU_MEM_POD\":4}}}",
      "[]",
  };
  (void)state;
  for (size_t i = 0; i < sizeof pods / sizeof pods[0]; i++) {
    struct gs_diag diag = {{0}, {0}};
    json_t *pod = gs_test_json(pods[i]);
    enum gs_err err = gs_api_alloc_from_pod(pod, GS_UNIT_GIB, &got, &diag);
    json_decref(pod);
    if (err != GS_EPARSE)
      fail_msg("case %zu: got %s", i, gs_err_name(err));
    assert_true(diag.text[0] != '\0');
  }
}

static void test_parts_cap(void **state) {
  json_t *v2 = json_object(), *pod;
  char *text, key[8];
  (void)state;
  for (int c = 0; c < 4; c++) {
    json_t *inner = json_object();
    for (int g = 0; g < GS_MAX_GPUS; g++) {
      snprintf(key, sizeof key, "%d", g);
      json_object_set_new(inner, key, json_integer(1));
    }
    snprintf(key, sizeof key, "%d", c);
    json_object_set_new(v2, key, inner);
  }
  text = json_dumps(v2, JSON_COMPACT);
  pod = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", GS_ANN_ALLOCATION, text);
  assert_int_equal(gs_api_alloc_from_pod(pod, GS_UNIT_GIB, &got, NULL), GS_EOK);
  assert_int_equal(got.nparts, GS_MAX_PARTS);
  assert_int_equal(got.parts[GS_MAX_PARTS - 1].container, 3);
  assert_int_equal(got.parts[GS_MAX_PARTS - 1].gpu, 63);
  json_decref(pod);
  free(text);
  json_object_set_new(v2, "4", json_pack("{s:i}", "0", 1));
  text = json_dumps(v2, JSON_COMPACT);
  pod = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", GS_ANN_ALLOCATION, text);
  assert_int_equal(gs_api_alloc_from_pod(pod, GS_UNIT_GIB, &got, NULL), GS_ETOOBIG);
  json_decref(pod);
  free(text);
  json_decref(v2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mem_contract_example),
      cmocka_unit_test(test_mem_128),
      cmocka_unit_test(test_mem_multi_container),
      cmocka_unit_test(test_mem_errors),
      cmocka_unit_test(test_whole),
      cmocka_unit_test(test_roundtrip_v2),
      cmocka_unit_test(test_roundtrip_legacy),
      cmocka_unit_test(test_roundtrip_whole),
      cmocka_unit_test(test_not_found),
      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_malformed_other_keys),
      cmocka_unit_test(test_parts_cap),
  };
  return cmocka_run_group_tests_name("api_annotations", tests, NULL, NULL);
}
