/* v1.Node → struct gs_node_spec. */
#include "api_test.h"

static struct gs_topo topo_buf; /* 8 KiB: keep it off the stack */

/* node (stolen) decoded without a word in the diagnostic. */
static struct gs_node_spec decoded(json_t *node) {
  struct gs_node_spec spec;
  struct gs_diag diag = {{0}, {0}};
  assert_int_equal(gs_api_node_decode(node, &spec, &topo_buf, &diag), GS_EOK);
  assert_string_equal(diag.text, "");
  json_decref(node);
  return spec;
}

static void test_fixture_node(void **state) {
  struct gs_node_spec spec =
      decoded(load_fixture_json("api-roundtrip-v1.34.0-core.v1.Node.json"));
  (void)state;
  assert_string_equal(spec.name, "nameValue");
  assert_int_equal(spec.mode, GS_MODE_NONE);
  assert_int_equal(spec.placement, GS_PLACE_BINPACK);
  assert_int_equal(spec.gpu_count, 0);
  assert_int_equal(spec.gpu_mem_units, 0);
  assert_false(spec.has_per_gpu);
  assert_false(spec.has_topo);
  assert_null(spec.topo);
}

static void test_share_node(void **state) {
  struct gs_node_spec spec = decoded(load_data_json("node-share.json"));
  (void)state;
  assert_string_equal(spec.name, "gpu-a");
  assert_int_equal(spec.mode, GS_MODE_SHARE);
  assert_int_equal(spec.placement, GS_PLACE_SPREAD);
  assert_int_equal(spec.gpu_count, 2);
  assert_int_equal(spec.gpu_mem_units, 31);
  assert_int_equal(spec.whole_gpus, 0);
  assert_true(spec.has_per_gpu);
  assert_int_equal(spec.per_gpu_units[0], 15);
  assert_int_equal(spec.per_gpu_units[1], 16);
  assert_int_equal(spec.per_gpu_units[2], 0);
  assert_true(spec.has_topo);
  assert_ptr_equal(spec.topo, &topo_buf);
  assert_int_equal(topo_buf.n, 2);
  assert_int_equal(topo_buf.link[1], GS_LINK_NV);
  assert_int_equal(topo_buf.nvlinks[1], 2);
}

static void test_topology_node(void **state) {
  json_t *node = load_data_json("node-topology.json");
  struct gs_node_spec spec;
  (void)state;
  assert_int_equal(gs_api_node_decode(node, &spec, &topo_buf, NULL), GS_EOK);
  assert_int_equal(spec.mode, GS_MODE_TOPOLOGY);
  /* capacity lacks aliyun.com/gpu: allocatable is used; gpu-count falls
   * back to aliyun.com/gpu */
  assert_int_equal(spec.whole_gpus, 4);
  assert_int_equal(spec.gpu_count, 4);
  assert_int_equal(spec.gpu_mem_units, 0);
  assert_true(spec.has_topo);
  assert_int_equal(topo_buf.n, 4);
  assert_int_equal(topo_buf.link[0 * 4 + 3], GS_LINK_SYS); /* SOC */
  assert_int_equal(topo_buf.link[2 * 4 + 3], GS_LINK_NV);
  assert_int_equal(topo_buf.nvlinks[2 * 4 + 3], 12);
  json_decref(node);

  /* no topology buffer: the annotation is skipped */
  node = load_data_json("node-topology.json");
  assert_int_equal(gs_api_node_decode(node, &spec, NULL, NULL), GS_EOK);
  assert_false(spec.has_topo);
  assert_null(spec.topo);
  json_decref(node);
}

/* Bad annotations are ignored (the node stays usable) and reported. */
static void test_bad_annotations(void **state) {
  json_t *node = load_data_json("node-bad-annotations.json");
  struct gs_node_spec spec;
  struct gs_diag diag = {{0}, {0}};
  (void)state;
  memset(&topo_buf, 0, sizeof topo_buf);
  assert_int_equal(gs_api_node_decode(node, &spec, &topo_buf, &diag), GS_EOK);
  assert_int_equal(spec.mode, GS_MODE_CGPU);
  assert_int_equal(spec.gpu_count, 2);
  assert_int_equal(spec.gpu_mem_units, 32);
  assert_false(spec.has_per_gpu);
  assert_int_equal(spec.per_gpu_units[0], 0);
  assert_false(spec.has_topo);
  assert_null(spec.topo);
  assert_int_equal(topo_buf.n, 0); /* untouched */
  assert_where(diag, "Node.metadata.annotations[\"gpushare.alibabacloud.com/device-resource\"]");
  assert_diag(diag, "GPU index \"x\"");
  json_decref(node);

  /* only the topology one bad */
  node = gs_test_json("{\"metadata\":{\"name\":\"n\",\"annotations\":{"
                       "\"gpushare.io/topology\":\"{\\\"links\\\":[[\\\"X\\\",\\\"NV1\\\"],"
                       "[\\\"NV1\\\",\\\"NVX\\\"]]}\"}}}");
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_api_node_decode(node, &spec, &topo_buf, &diag), GS_EOK);
  assert_false(spec.has_topo);
  assert_where(diag, "Node.metadata.annotations[\"gpushare.io/topology\"]");
  assert_diag(diag, "links[1][1]");
  assert_diag(diag, "annotation ignored");
  json_decref(node);

  /* non-string annotation values and non-object annotations */
  node = gs_test_json("{\"metadata\":{\"name\":\"n\",\"annotations\":{"
                       "\"gpushare.alibabacloud.com/device-resource\":{\"0\":1}}}}");
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_api_node_decode(node, &spec, &topo_buf, &diag), GS_EOK);
  assert_false(spec.has_per_gpu);
  assert_diag(diag, "must be a string");
  json_decref(node);
  node = gs_test_json("{\"metadata\":{\"name\":\"n\",\"annotations\":[]}}");
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_api_node_decode(node, &spec, &topo_buf, &diag), GS_EOK);
  assert_diag(diag, "annotations ignored");
  json_decref(node);
}

static void test_device_resource_forms(void **state) {
  static const struct {
    const char *ann; /* JSON string literal content */
    bool ok;
  } cases[] = {
      {"{\\\"0\\\":16,\\\"1\\\":\\\"16\\\",\\\"3\\\":8}", true},
      {"{}", false},
      {"[]", false},
      {"{\\\"0\\\":-1}", false},
      {"{\\\"0\\\":1.5}", false},
      {"{\\\"64\\\":1}", false},
      {"{\\\"-1\\\":1}", false},
      {"{\\\"0\\\":1,\\\"0\\\":2}", false},
      {"{\\\"1\\\":1,\\\"01\\\":2}", false}, /* one GPU spelt twice */
      {"not json", false},
      {"{\\\"0\\\":16} trailing", false},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[512];
    struct gs_node_spec spec;
    struct gs_diag diag = {{0}, {0}};
    json_t *node;
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"n\",\"annotations\":{"
             "\"gpushare.alibabacloud.com/device-resource\":\"%s\"}}}",
             cases[i].ann);
    node = gs_test_json(text);
    assert_int_equal(gs_api_node_decode(node, &spec, NULL, &diag), GS_EOK);
    if (spec.has_per_gpu != cases[i].ok)
      fail_msg("case %zu: has_per_gpu %d (%s)", i, spec.has_per_gpu, diag.text);
    assert_int_equal(diag.text[0] == '\0', cases[i].ok);
    if (cases[i].ok) {
      assert_int_equal(spec.per_gpu_units[1], 16);
      assert_int_equal(spec.per_gpu_units[2], 0);
      assert_int_equal(spec.per_gpu_units[3], 8);
    }
    json_decref(node);
  }
}

static void test_errors(void **state) {
  static const struct api_err_case cases[] = {
      {"null", GS_EPARSE, "Node", "must be an object"},
      {"{}", GS_EPARSE, "Node.metadata.name", "missing node name"},
      {"{\"metadata\":{\"name\":[]}}", GS_EPARSE, "Node.metadata.name", "must be a string"},
      {"{\"metadata\":{\"name\":\"n\",\"labels\":{\"ack.node.gpu.schedule\":1}}}", GS_EPARSE,
       "Node.metadata.labels[\"ack.node.gpu.schedule\"]", "must be a string"},
      {"{\"metadata\":{\"name\":\"n\"},\"status\":{\"capacity\":[]}}", GS_EPARSE,
       "Node.status.capacity", "must be an object"},
      {"{\"metadata\":{\"name\":\"n\"},\"status\":{\"capacity\":{\"aliyun.com/gpu-mem\":"
       "\"-1\"}}}",
       GS_ERANGE, "Node.status.capacity[\"aliyun.com/gpu-mem\"]", "negative"},
      {"{\"metadata\":{\"name\":\"n\"},\"status\":{\"allocatable\":{\"aliyun.com/gpu-count\":"
       "\"1.5\"}}}",
       GS_EPARSE, "Node.status.allocatable[\"aliyun.com/gpu-count\"]", "not a whole number"},
      {"{\"metadata\":{\"name\":\"n\"},\"status\":{\"capacity\":{\"aliyun.com/gpu-count\":"
       "\"65\"}}}",
       GS_ETOOBIG, "Node.status.capacity[\"aliyun.com/gpu-count\"]", "more than the limit"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct gs_node_spec spec;
    struct gs_diag diag = {{0}, {0}};
    json_t *node = json_loads(cases[i].input, JSON_DECODE_ANY, NULL);
    enum gs_err err = gs_api_node_decode(node, &spec, &topo_buf, &diag);
    json_decref(node);
    check_err_case(i, &cases[i], err, &diag);
  }
}

static void test_modes(void **state) {
  static const struct {
    const char *label;
    enum gs_mode mode;
  } cases[] = {
      {"share", GS_MODE_SHARE}, {"cgpu", GS_MODE_CGPU},        {"mps", GS_MODE_MPS},
      {"topology", GS_MODE_TOPOLOGY}, {"default", GS_MODE_NONE}, {"exclusive", GS_MODE_NONE},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_t *node = json_pack("{s:{s:s,s:{s:s}}}", "metadata", "name", "n", "labels",
                             GS_LABEL_MODE, cases[i].label);
    struct gs_node_spec spec;
    assert_int_equal(gs_api_node_decode(node, &spec, NULL, NULL), GS_EOK);
    assert_int_equal(spec.mode, cases[i].mode);
    json_decref(node);
  }
  {
    json_t *node = load_data_json("node-plain.json");
    struct gs_node_spec spec;
    assert_int_equal(gs_api_node_decode(node, &spec, NULL, NULL), GS_EOK);
    assert_int_equal(spec.mode, GS_MODE_NONE);
    assert_int_equal(spec.gpu_count, 0);
    json_decref(node);
  }
}

/* gpushare.io/multi-card: only "false" marks a one-GPU-per-pod plugin. */
static void test_multi_card_label(void **state) {
  static const struct {
    const char *value; /* NULL: no label */
    bool single;
  } cases[] = {{NULL, false}, {"false", true}, {"true", false}, {"False", false}, {"", false}};
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_t *node = json_pack("{s:{s:s,s:{s:s}}}", "metadata", "name", "n", "labels",
                             GS_LABEL_MODE, "share");
    struct gs_node_spec spec;
    if (cases[i].value != NULL)
      json_object_set_new(json_object_get(json_object_get(node, "metadata"), "labels"),
                          GS_LABEL_MULTI_CARD, json_string(cases[i].value));
    assert_int_equal(gs_api_node_decode(node, &spec, NULL, NULL), GS_EOK);
    assert_int_equal(spec.single_card, cases[i].single);
    json_decref(node);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_multi_card_label),
      cmocka_unit_test(test_fixture_node),    cmocka_unit_test(test_share_node),
      cmocka_unit_test(test_topology_node),   cmocka_unit_test(test_bad_annotations),
      cmocka_unit_test(test_device_resource_forms), cmocka_unit_test(test_errors),
      cmocka_unit_test(test_modes),
  };
  return cmocka_run_group_tests_name("api_node", tests, NULL, NULL);
}
