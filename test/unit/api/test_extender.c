/* Extender v1 wire types: exact bytes in, exact bytes out. */
#include "api_test.h"

static enum gs_err args_text(const char *body, struct gs_api_args *args, struct gs_diag *diag) {
  memset(diag, 0, sizeof *diag);
  return gs_api_args_decode(body, strlen(body), args, diag);
}

static void test_args_names_form(void **state) {
  size_t len;
  char *body = read_data("args-names.json", &len);
  struct gs_api_args args;
  struct gs_diag diag = {{0}, {0}};
  struct gs_pod_request req;
  (void)state;
  assert_int_equal(gs_api_args_decode(body, len, &args, &diag), GS_EOK);
  assert_true(args.by_names);
  assert_int_equal(args.nnodes, 3);
  assert_string_equal(args.names[0], "gpu-a");
  assert_string_equal(args.names[2], "cpu-1");
  assert_null(args.nodes[0]);
  assert_null(args.nodes[2]);
  assert_int_equal(gs_api_pod_decode(args.pod, &req, &diag), GS_EOK);
  assert_string_equal(req.name, "trainer-0");
  assert_int_equal(req.mem_units[0], 8);
  gs_api_args_release(&args);
  assert_null(args.root);
  gs_api_args_release(&args); /* twice is harmless */
  free(body);
}

static void test_args_nodes_form(void **state) {
  size_t len;
  char *body = read_data("args-nodes.json", &len);
  struct gs_api_args args;
  struct gs_diag diag = {{0}, {0}};
  struct gs_node_spec spec;
  (void)state;
  assert_int_equal(gs_api_args_decode(body, len, &args, &diag), GS_EOK);
  assert_false(args.by_names);
  assert_int_equal(args.nnodes, 3);
  assert_string_equal(args.names[0], "gpu-a");
  assert_string_equal(args.names[1], "gpu-b");
  assert_non_null(args.nodes[1]);
  assert_int_equal(gs_api_node_decode(args.nodes[0], &spec, NULL, &diag), GS_EOK);
  assert_int_equal(spec.mode, GS_MODE_SHARE);
  gs_api_args_release(&args);
  free(body);
}

static void test_args_empty_lists(void **state) {
  struct gs_api_args args;
  struct gs_diag diag;
  (void)state;
  assert_int_equal(args_text("{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[]}", &args,
                             &diag),
                   GS_EOK);
  assert_true(args.by_names);
  assert_int_equal(args.nnodes, 0);
  gs_api_args_release(&args);
  assert_int_equal(args_text("{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"Nodes\":{\"metadata\":{},"
                             "\"items\":null},\"NodeNames\":null}",
                             &args, &diag),
                   GS_EOK);
  assert_false(args.by_names);
  assert_int_equal(args.nnodes, 0);
  gs_api_args_release(&args);
  /* unknown fields and kind/apiVersion are ignored */
  assert_int_equal(args_text("{\"Pod\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"x\":1},"
                             "\"NodeNames\":[\"a\"],\"Extra\":[1,2]}",
                             &args, &diag),
                   GS_EOK);
  gs_api_args_release(&args);
}

static void test_args_errors(void **state) {
  static const struct {
    const char *body;
    enum gs_err err;
    const char *where;
    const char *needle;
  } cases[] = {
      {"", GS_EPARSE, "ExtenderArgs", "empty request body"},
      {"{", GS_EPARSE, "ExtenderArgs", "malformed JSON"},
      {"{\"Pod\":{}} x", GS_EPARSE, "ExtenderArgs", "malformed JSON"},
      {"[]", GS_EPARSE, "ExtenderArgs", "must be a JSON object"},
      {"\"Pod\"", GS_EPARSE, "ExtenderArgs", "malformed JSON"}, /* jansson: not an object/array */
      {"{\"NodeNames\":[\"a\"]}", GS_EPARSE, "Pod", "missing Pod"},
      {"{\"Pod\":null,\"NodeNames\":[\"a\"]}", GS_EPARSE, "Pod", "missing Pod"},
      {"{\"Pod\":[],\"NodeNames\":[\"a\"]}", GS_EPARSE, "Pod", "must be an object"},
      {"{\"Pod\":{},\"NodeNames\":[\"a\"]}", GS_EPARSE, "Pod.metadata.name", "missing pod name"},
      {"{\"Pod\":{\"metadata\":{\"name\":3}},\"NodeNames\":[\"a\"]}", GS_EPARSE,
       "Pod.metadata.name", "must be a string"},
      {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}}}", GS_EPARSE, "ExtenderArgs",
       "neither NodeNames nor Nodes given"},
      {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"Nodes\":null,\"NodeNames\":null}", GS_EPARSE,
       "ExtenderArgs", "neither NodeNames nor Nodes given"},
      {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"Nodes\":{\"items\":[]},\"NodeNames\":[]}",
       GS_EPARSE, "ExtenderArgs", "both NodeNames and Nodes given"},
      {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":\"a\"}", GS_EPARSE, "NodeNames",
       "must be an array of strings"},
      {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"a\",1]}", GS_EPARSE,
       "NodeNames[1]", "non-empty string"},
      {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"\"]}", GS_EPARSE,
       "NodeNames[0]", "non-empty string"},
      {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"Nodes\":[]}", GS_EPARSE, "Nodes",
       "NodeList object"},
      {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"Nodes\":{\"items\":{}}}", GS_EPARSE,
       "Nodes.items", "must be an array"},
      {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"Nodes\":{\"items\":[{\"metadata\":{"
       "\"name\":\"a\"}},7]}}",
       GS_EPARSE, "Nodes.items[1]", "must be an object"},
      {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"Nodes\":{\"items\":[{\"metadata\":{}}]}}",
       GS_EPARSE, "Nodes.items[0].metadata.name", "missing node name"},
      {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"Nodes\":{\"items\":[{\"metadata\":[]}]}}",
       GS_EPARSE, "Nodes.items[0].metadata", "must be an object"},
      {"{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"Pod\":{\"metadata\":{\"name\":\"q\"}},"
       "\"NodeNames\":[]}",
       GS_EPARSE, "ExtenderArgs", "duplicate"},
      {"{\"Pod\":{\"metadata\":{\"name\":\"p\\u0000q\"}},\"NodeNames\":[]}", GS_EPARSE,
       "ExtenderArgs", "malformed JSON"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct gs_api_args args;
    struct gs_diag diag;
    enum gs_err err;
    memset(&args, 0x5A, sizeof args);
    err = args_text(cases[i].body, &args, &diag);
    if (err != cases[i].err)
      fail_msg("case %zu %s: got %s want %s (%s: %s)", i, cases[i].body, gs_err_name(err),
               gs_err_name(cases[i].err), diag.where, diag.text);
    if (strcmp(diag.where, cases[i].where) != 0)
      fail_msg("case %zu: where \"%s\" want \"%s\" (%s)", i, diag.where, cases[i].where,
               diag.text);
    assert_diag(diag, cases[i].needle);
    assert_int_equal(args.nnodes, (size_t)0x5A5A5A5A5A5A5A5Au); /* ret untouched */
  }
  {
    struct gs_api_args args;
    struct gs_diag diag = {{0}, {0}};
    assert_int_equal(gs_api_args_decode(NULL, 0, &args, &diag), GS_EPARSE);
    memset(&diag, 0, sizeof diag);
    assert_int_equal(gs_api_args_decode("{}", GS_API_BODY_MAX + 1u, &args, &diag), GS_ETOOBIG);
    /* invalid UTF-8 */
    memset(&diag, 0, sizeof diag);
    assert_int_equal(args_text("{\"Pod\":{\"metadata\":{\"name\":\"\xff\"}},\"NodeNames\":[]}",
                               &args, &diag),
                     GS_EPARSE);
  }
}

static void test_args_name_cap(void **state) {
  char body[600], name[GS_NAME_MAX + 2];
  struct gs_api_args args;
  struct gs_diag diag;
  (void)state;
  memset(name, 'n', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  snprintf(body, sizeof body, "{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"%s\"]}",
           name);
  assert_int_equal(args_text(body, &args, &diag), GS_ETOOBIG);
  assert_where(diag, "NodeNames[0]");
  snprintf(body, sizeof body, "{\"Pod\":{\"metadata\":{\"name\":\"%s\"}},\"NodeNames\":[]}",
           name);
  assert_int_equal(args_text(body, &args, &diag), GS_ETOOBIG);
  assert_where(diag, "Pod.metadata.name");
}

/* ---- filter result ------------------------------------------------------ */

static void test_filter_names(void **state) {
  struct gs_api_filter_result *r = gs_api_filter_result_new(true);
  (void)state;
  assert_non_null(r);
  assert_dump(gs_api_filter_result_dump(r),
              "{\"Nodes\":null,\"NodeNames\":[],\"FailedNodes\":{},"
              "\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
  assert_int_equal(gs_api_filter_result_pass(r, "gpu-node-2", NULL), GS_EOK);
  assert_int_equal(gs_api_filter_result_pass(r, "gpu-node-4", NULL), GS_EOK);
  assert_int_equal(gs_api_filter_result_fail(r, "gpu-node-1",
                                             "insufficient GPU memory on any single GPU", false),
                   GS_EOK);
  assert_int_equal(gs_api_filter_result_fail(r, "gpu-node-3", "node is not a GPU-sharing node",
                                             true),
                   GS_EOK);
  assert_int_equal(gs_api_filter_result_fail(r, "cpu-0", "node unknown to gpushare", false),
                   GS_EOK);
  assert_dump(gs_api_filter_result_dump(r),
              "{\"Nodes\":null,\"NodeNames\":[\"gpu-node-2\",\"gpu-node-4\"],"
              "\"FailedNodes\":{\"gpu-node-1\":\"insufficient GPU memory on any single GPU\","
              "\"cpu-0\":\"node unknown to gpushare\"},"
              "\"FailedAndUnresolvableNodes\":{\"gpu-node-3\":\"node is not a GPU-sharing node\"},"
              "\"Error\":\"\"}");
  /* dumping twice gives the same bytes */
  assert_dump(gs_api_filter_result_dump(r),
              "{\"Nodes\":null,\"NodeNames\":[\"gpu-node-2\",\"gpu-node-4\"],"
              "\"FailedNodes\":{\"gpu-node-1\":\"insufficient GPU memory on any single GPU\","
              "\"cpu-0\":\"node unknown to gpushare\"},"
              "\"FailedAndUnresolvableNodes\":{\"gpu-node-3\":\"node is not a GPU-sharing node\"},"
              "\"Error\":\"\"}");
  assert_int_equal(gs_api_filter_result_error(r, "ledger busy"), GS_EOK);
  assert_dump(gs_api_filter_result_dump(r),
              "{\"Nodes\":null,\"NodeNames\":[\"gpu-node-2\",\"gpu-node-4\"],"
              "\"FailedNodes\":{\"gpu-node-1\":\"insufficient GPU memory on any single GPU\","
              "\"cpu-0\":\"node unknown to gpushare\"},"
              "\"FailedAndUnresolvableNodes\":{\"gpu-node-3\":\"node is not a GPU-sharing node\"},"
              "\"Error\":\"ledger busy\"}");
  gs_api_filter_result_free(r);
  gs_api_filter_result_free(NULL);
}

static void test_filter_nodes(void **state) {
  json_t *n1 = parse_or_fail("{\"metadata\":{\"name\":\"a\",\"labels\":{\"z\":\"1\",\"a\":\"2\"}},"
                             "\"status\":{\"capacity\":{\"aliyun.com/gpu-mem\":\"16\"}}}");
  struct gs_api_filter_result *r = gs_api_filter_result_new(false);
  (void)state;
  assert_dump(gs_api_filter_result_dump(r),
              "{\"Nodes\":{\"metadata\":{},\"items\":[]},\"NodeNames\":null,\"FailedNodes\":{},"
              "\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
  assert_int_equal(gs_api_filter_result_pass(r, "a", NULL), GS_EINVAL);
  assert_int_equal(gs_api_filter_result_pass(r, "a", n1), GS_EOK);
  assert_int_equal(gs_api_filter_result_fail(r, "b", "node unknown to gpushare", false), GS_EOK);
  json_decref(n1); /* the result holds its own reference */
  assert_dump(gs_api_filter_result_dump(r),
              "{\"Nodes\":{\"metadata\":{},\"items\":[{\"metadata\":{\"name\":\"a\",\"labels\":{"
              "\"z\":\"1\",\"a\":\"2\"}},\"status\":{\"capacity\":{\"aliyun.com/gpu-mem\":\"16\"}}}"
              "]},\"NodeNames\":null,\"FailedNodes\":{\"b\":\"node unknown to gpushare\"},"
              "\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
  gs_api_filter_result_free(r);
}

/* A passing node goes back byte-for-byte as kube-scheduler (Go, compact)
 * sent it. */
static void test_filter_nodes_unmodified(void **state) {
  size_t len;
  static const char prefix[] = "{\"Nodes\":{\"metadata\":{},\"items\":[{\"metadata\"";
  char *body = read_data("args-nodes.json", &len), *out, *start, *end, *want;
  struct gs_api_args args;
  struct gs_api_filter_result *r = gs_api_filter_result_new(false);
  (void)state;
  assert_int_equal(gs_api_args_decode(body, len, &args, NULL), GS_EOK);
  assert_int_equal(gs_api_filter_result_pass(r, args.names[0], args.nodes[0]), GS_EOK);
  gs_api_args_release(&args); /* the result outlives the request document */
  out = gs_api_filter_result_dump(r);
  assert_non_null(out);
  start = strstr(body, "\"items\":[") + strlen("\"items\":[");
  end = strstr(start, ",{\"metadata\":{\"name\":\"gpu-b\"");
  assert_non_null(end);
  want = strndup(start, (size_t)(end - start));
  assert_non_null(strstr(out, want));
  assert_int_equal(strncmp(out, prefix, strlen(prefix)), 0);
  free(want);
  free(out);
  free(body);
  gs_api_filter_result_free(r);
}

static void test_filter_error_dump(void **state) {
  (void)state;
  assert_dump(gs_api_filter_error_dump("Pod.spec.containers[0].resources.limits[\"aliyun.com/"
                                       "gpu-mem\"]: quantity \"-1\" is negative"),
              "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},"
              "\"FailedAndUnresolvableNodes\":{},\"Error\":\"Pod.spec.containers[0].resources."
              "limits[\\\"aliyun.com/gpu-mem\\\"]: quantity \\\"-1\\\" is negative\"}");
  /* '%' becomes U+FF05 so Go's fmt never reads it as a verb */
  assert_dump(gs_api_filter_error_dump("quantity \"50%\" bad %d"),
              "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},"
              "\"FailedAndUnresolvableNodes\":{},\"Error\":\"quantity \\\"50\xEF\xBC\x85\\\" bad "
              "\xEF\xBC\x85"
              "d\"}");
  /* a text cut inside a UTF-8 character still gives valid JSON */
  assert_dump(gs_api_filter_error_dump("cut \xE2\x82"), "{\"Nodes\":null,\"NodeNames\":null,"
                                                        "\"FailedNodes\":{},"
                                                        "\"FailedAndUnresolvableNodes\":{},"
                                                        "\"Error\":\"cut ??\"}");
}

static void test_priorities(void **state) {
  const char *hosts[] = {"gpu-node-1", "gpu-node-2", "gpu-node-3"};
  const int64_t scores[] = {3, 10, 0};
  (void)state;
  assert_dump(gs_api_priorities_dump(hosts, scores, 3),
              "[{\"Host\":\"gpu-node-1\",\"Score\":3},{\"Host\":\"gpu-node-2\",\"Score\":10},"
              "{\"Host\":\"gpu-node-3\",\"Score\":0}]");
  assert_dump(gs_api_priorities_dump(NULL, NULL, 0), "[]");
}

/* ---- bind --------------------------------------------------------------- */

static void test_bind_args(void **state) {
  size_t len;
  char *body = read_data("bind-args.json", &len);
  struct gs_api_bind_args b;
  struct gs_diag diag = {{0}, {0}};
  (void)state;
  assert_int_equal(gs_api_bind_args_decode(body, len, &b, &diag), GS_EOK);
  assert_string_equal(b.pod_name, "trainer-0");
  assert_string_equal(b.pod_ns, "ml");
  assert_string_equal(b.pod_uid, "5b1e2f7c-3c1d-4d0e-9a55-0e4b0c7d1a2b");
  assert_string_equal(b.node, "gpu-a");
  free(body);

  body = "{\"PodName\":\"p\",\"PodNamespace\":\"default\",\"PodUID\":\"\",\"Node\":\"n\","
         "\"Extra\":1}";
  assert_int_equal(gs_api_bind_args_decode(body, strlen(body), &b, &diag), GS_EOK);
  assert_string_equal(b.pod_uid, "");
}

static void test_bind_args_errors(void **state) {
  static const struct {
    const char *body;
    enum gs_err err;
    const char *where;
    const char *needle;
  } cases[] = {
      {"", GS_EPARSE, "ExtenderBindingArgs", "empty"},
      {"{\"PodName\":", GS_EPARSE, "ExtenderBindingArgs", "malformed JSON"},
      {"[\"p\"]", GS_EPARSE, "ExtenderBindingArgs", "JSON object"},
      {"{}", GS_EPARSE, "PodName", "missing"},
      {"{\"PodName\":1,\"PodNamespace\":\"d\",\"PodUID\":\"u\",\"Node\":\"n\"}", GS_EPARSE,
       "PodName", "must be a string"},
      {"{\"PodName\":\"\",\"PodNamespace\":\"d\",\"PodUID\":\"u\",\"Node\":\"n\"}", GS_EPARSE,
       "PodName", "must not be empty"},
      {"{\"PodName\":\"p\",\"PodNamespace\":null,\"PodUID\":\"u\",\"Node\":\"n\"}", GS_EPARSE,
       "PodNamespace", "must be a string"},
      {"{\"PodName\":\"p\",\"PodNamespace\":\"d\",\"Node\":\"n\"}", GS_EPARSE, "PodUID",
       "missing"},
      {"{\"PodName\":\"p\",\"PodNamespace\":\"d\",\"PodUID\":5,\"Node\":\"n\"}", GS_EPARSE,
       "PodUID", "must be a string"},
      {"{\"PodName\":\"p\",\"PodNamespace\":\"d\",\"PodUID\":\"u\",\"Node\":[]}", GS_EPARSE,
       "Node", "must be a string"},
      {"{\"PodName\":\"p\",\"PodNamespace\":\"d\",\"PodUID\":\"u\",\"Node\":\"\"}", GS_EPARSE,
       "Node", "must not be empty"},
      {"{\"PodName\":\"p\",\"PodNamespace\":\"d\",\"PodUID\":\"u\",\"Node\":\"n\",\"Node\":\"m\"}",
       GS_EPARSE, "ExtenderBindingArgs", "duplicate"},
      {"{\"PodName\":\"p\",\"PodNamespace\":\"0123456789012345678901234567890123456789012345678"
       "901234567890123\",\"PodUID\":\"u\",\"Node\":\"n\"}",
       GS_ETOOBIG, "PodNamespace", "limit of 63"},
      {"{\"PodName\":\"p\",\"PodNamespace\":\"d\",\"PodUID\":\"0123456789012345678901234567890"
       "1234567890123456789012345678901234\",\"Node\":\"n\"}",
       GS_ETOOBIG, "PodUID", "limit of 63"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct gs_api_bind_args b;
    struct gs_diag diag = {{0}, {0}};
    enum gs_err err;
    memset(&b, 'z', sizeof b);
    err = gs_api_bind_args_decode(cases[i].body, strlen(cases[i].body), &b, &diag);
    if (err != cases[i].err)
      fail_msg("case %zu %s: got %s want %s (%s: %s)", i, cases[i].body, gs_err_name(err),
               gs_err_name(cases[i].err), diag.where, diag.text);
    assert_where(diag, cases[i].where);
    assert_diag(diag, cases[i].needle);
    assert_int_equal(b.pod_name[0], 'z'); /* ret untouched */
  }
}

static void test_bind_and_error_results(void **state) {
  (void)state;
  assert_dump(gs_api_bind_result_dump(""), "{\"Error\":\"\"}");
  assert_dump(gs_api_bind_result_dump(NULL), "{\"Error\":\"\"}");
  assert_dump(gs_api_bind_result_dump("pod default/p: no room any more on gpu-a"),
              "{\"Error\":\"pod default/p: no room any more on gpu-a\"}");
  assert_dump(gs_api_bind_result_dump("100%"), "{\"Error\":\"100\xEF\xBC\x85\"}");
  /* HTTP error bodies are not formatted by Go: '%' stays */
  assert_dump(gs_api_error_dump("body over 16 MiB (100%)"),
              "{\"Error\":\"body over 16 MiB (100%)\"}");
  assert_dump(gs_api_error_dump("tab\there \"q\" \\"), "{\"Error\":\"tab\\there \\\"q\\\" \\\\\"}");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_args_names_form),
      cmocka_unit_test(test_args_nodes_form),
      cmocka_unit_test(test_args_empty_lists),
      cmocka_unit_test(test_args_errors),
      cmocka_unit_test(test_args_name_cap),
      cmocka_unit_test(test_filter_names),
      cmocka_unit_test(test_filter_nodes),
      cmocka_unit_test(test_filter_nodes_unmodified),
      cmocka_unit_test(test_filter_error_dump),
      cmocka_unit_test(test_priorities),
      cmocka_unit_test(test_bind_args),
      cmocka_unit_test(test_bind_args_errors),
      cmocka_unit_test(test_bind_and_error_results),
  };
  return cmocka_run_group_tests_name("api_extender", tests, NULL, NULL);
}
