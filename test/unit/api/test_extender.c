/* Extender v1 wire types: exact bytes in, exact bytes out. */
#include "api_test.h"

static enum gs_err args_text(const char *body, struct gs_api_args *args, struct gs_diag *diag) {
  memset(diag, 0, sizeof *diag);
  return gs_api_args_decode(body, strlen(body), args, diag);
}

/* The data file's ExtenderArgs, decoded: three nodes, gpu-a first, by
 * name or as Node objects. Returns the body (free it after the release). */
static char *args_file(const char *file, bool by_names, struct gs_api_args *args) {
  size_t len;
  char *body = read_data(file, &len);
  struct gs_diag diag = {{0}, {0}};
  assert_int_equal(gs_api_args_decode(body, len, args, &diag), GS_EOK);
  assert_int_equal(args->by_names, by_names);
  assert_int_equal(args->nnodes, 3);
  assert_string_equal(args->names[0], "gpu-a");
  return body;
}

static void test_args_names_form(void **state) {
  struct gs_api_args args;
  char *body = args_file("args-names.json", true, &args);
  struct gs_diag diag = {{0}, {0}};
  struct gs_pod_request req;
  (void)state;
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
  struct gs_api_args args;
  char *body = args_file("args-nodes.json", false, &args);
  struct gs_diag diag = {{0}, {0}};
  struct gs_node_spec spec;
  (void)state;
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
  static const struct api_err_case cases[] = {
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
    err = args_text(cases[i].input, &args, &diag);
    check_err_case(i, &cases[i], err, &diag);
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
  static const char dumped[] =
      "{\"Nodes\":null,\"NodeNames\":[\"gpu-node-2\",\"gpu-node-4\"],"
      "\"FailedNodes\":{\"gpu-node-1\":\"insufficient GPU memory on any single GPU\","
      "\"cpu-0\":\"node unknown to gpushare\"},"
      "\"FailedAndUnresolvableNodes\":{\"gpu-node-3\":\"node is not a GPU-sharing node\"},"
      "\"Error\":\"\"}";
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
  assert_dump(gs_api_filter_result_dump(r), dumped);
  /* dumping twice gives the same bytes */
  assert_dump(gs_api_filter_result_dump(r), dumped);
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
  json_t *n1 = gs_test_json("{\"metadata\":{\"name\":\"a\",\"labels\":{\"z\":\"1\",\"a\":\"2\"}},"
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
  static const struct api_err_case cases[] = {
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
    err = gs_api_bind_args_decode(cases[i].input, strlen(cases[i].input), &b, &diag);
    check_err_case(i, &cases[i], err, &diag);
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

/* The filter and prioritize answers are written without jansson values;
 * they must be the bytes json_dumps gives for the same values, whatever
 * the names and reasons hold (escapes, UTF-8, invalid UTF-8, '%',
 * repeated names). The reference here builds them with jansson. */
static json_t *ref_text(const char *text) {
  /* gs__api_text's rule: invalid UTF-8 bytes become '?'. */
  json_t *v = json_string(text);
  if (v == NULL) {
    char *copy = strdup(text);
    for (unsigned char *c = (unsigned char *)copy; *c; c++)
      if (*c >= 0x80) {
        size_t n = (*c & 0xE0) == 0xC0 ? 2 : (*c & 0xF0) == 0xE0 ? 3 : (*c & 0xF8) == 0xF0 ? 4 : 0;
        json_t *probe = NULL;
        if (n > 0) {
          char tmp[5] = {0};
          memcpy(tmp, c, n);
          probe = strlen(tmp) == n ? json_string(tmp) : NULL;
        }
        if (probe == NULL) {
          *c = '?';
        } else {
          json_decref(probe);
          c += n - 1;
        }
      }
    v = json_string(copy);
    free(copy);
  }
  return v;
}

static void test_answers_match_jansson(void **state) {
  static const char *const pool[] = {
      "gpu-a", "gpu-b", "n\"q", "back\\slash", "tab\there", "ctl\x01\x1f", "caf\xC3\xA9",
      "\xE2\x82\xAC-euro", "emoji-\xF0\x9F\x98\x80", "slash/ok", "del\x7f",
  };
  static const char *const reasons[] = {
      "insufficient GPU memory on any single GPU", "50% full", "cut \xE2\x82",
      "bad \xFF byte", "over\xC0\xAFlong", "quote \" and \\", "nl\nx",
  };
  uint32_t rng = 99;
  (void)state;
  for (int round = 0; round < 300; round++) {
    struct gs_api_filter_result *r = gs_api_filter_result_new(true);
    json_t *pass = json_array(), *failed = json_object(), *unres = json_object(), *root;
    const char *hosts[16];
    int64_t scores[16];
    char *got, *want;
    int n = round % 16;
    for (int i = 0; i < n; i++) {
      const char *name = pool[(rng = rng * 1103515245u + 12345u) >> 16 & 0xff ? (rng >> 8) % 11 : 0];
      const char *why = reasons[(rng >> 4) % 7];
      hosts[i] = name;
      scores[i] = (int64_t)((rng >> 12) % 11);
      switch ((rng >> 20) % 3) {
      case 0:
        assert_int_equal(gs_api_filter_result_pass(r, name, NULL), GS_EOK);
        json_array_append_new(pass, ref_text(name));
        break;
      case 1:
        assert_int_equal(gs_api_filter_result_fail(r, name, why, false), GS_EOK);
        json_object_set_new(failed, name, ref_text(why));
        break;
      default:
        assert_int_equal(gs_api_filter_result_fail(r, name, why, true), GS_EOK);
        json_object_set_new(unres, name, ref_text(why));
        break;
      }
    }
    if (round % 5 == 0)
      assert_int_equal(gs_api_filter_result_error(r, reasons[round % 7]), GS_EOK);
    root = json_pack("{s:n,s:o,s:o,s:o,s:s}", "Nodes", "NodeNames", pass, "FailedNodes", failed,
                     "FailedAndUnresolvableNodes", unres, "Error", "");
    if (round % 5 == 0) {
      char *pct = NULL;
      json_t *e;
      const char *src = reasons[round % 7];
      size_t k = 0;
      pct = calloc(strlen(src) * 3 + 1, 1);
      for (const char *c = src; *c; c++) {
        if (*c == '%') {
          memcpy(pct + k, "\xEF\xBC\x85", 3);
          k += 3;
        } else {
          pct[k++] = *c;
        }
      }
      e = ref_text(pct);
      json_object_set_new(root, "Error", e);
      free(pct);
    }
    got = gs_api_filter_result_dump(r);
    want = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    free(want);
    json_decref(root);
    gs_api_filter_result_free(r);

    /* Integers of any size and sign print as jansson prints them. */
    if (round == 0) {
      const char *h3[] = {"a", "b", "c", "d"};
      int64_t big[] = {INT64_MIN, -5, 1234567, INT64_MAX};
      got = gs_api_priorities_dump(h3, big, 4);
      assert_string_equal(got, "[{\"Host\":\"a\",\"Score\":-9223372036854775808},"
                               "{\"Host\":\"b\",\"Score\":-5},"
                               "{\"Host\":\"c\",\"Score\":1234567},"
                               "{\"Host\":\"d\",\"Score\":9223372036854775807}]");
      free(got);
    }
    /* Prioritize: the same names as hosts. */
    {
      json_t *list = json_array();
      for (int i = 0; i < n; i++)
        json_array_append_new(list, json_pack("{s:o,s:I}", "Host", ref_text(hosts[i]), "Score",
                                              (json_int_t)scores[i]));
      got = gs_api_priorities_dump(hosts, scores, (size_t)n);
      want = json_dumps(list, JSON_COMPACT | JSON_PRESERVE_ORDER);
      assert_non_null(got);
      assert_string_equal(got, want);
      free(got);
      free(want);
      json_decref(list);
    }
  }
}

/* The fast scanner for the common ExtenderArgs shape must agree with the
 * general path on every body. An unknown leading member ("_x":0) sends a
 * body down the general path without changing what it means, so each body
 * is decoded both ways: valid shapes, near misses, and random mutations. */
static void decode_both(const char *body, size_t len) {
  struct gs_api_args a, b;
  struct gs_diag da = {"", ""}, db = {"", ""};
  enum gs_err ea, eb;
  size_t i = 0;
  char *alt;
  while (i < len && (body[i] == ' ' || body[i] == '\n' || body[i] == '\t' || body[i] == '\r'))
    i++;
  if (i >= len || body[i] != '{')
    return; /* not an object: the fast path never takes it */
  alt = malloc(len + 8);
  memcpy(alt, body, i + 1);
  memcpy(alt + i + 1, "\"_x\":0,", 7);
  memcpy(alt + i + 8, body + i + 1, len - i - 1);
  ea = gs_api_args_decode(body, len, &a, &da);
  eb = gs_api_args_decode(alt, len + 7, &b, &db);
  /* A body that decodes has members, so the variant is valid JSON too. */
  assert_int_equal(ea == GS_EOK, eb == GS_EOK);
  if (ea != GS_EOK) {
    /* The fast path only ever succeeds; a failure is the general path's. */
    if (eb == GS_EOK)
      gs_api_args_release(&b);
    free(alt);
    return;
  }
  assert_int_equal(a.by_names, b.by_names);
  assert_int_equal(a.nnodes, b.nnodes);
  for (size_t k = 0; k < a.nnodes; k++) {
    assert_string_equal(a.names[k], b.names[k]);
    assert_ptr_equal(a.nodes[k] == NULL, b.nodes[k] == NULL);
  }
  assert_true(json_equal((json_t *)a.pod, (json_t *)b.pod));
  gs_api_args_release(&a);
  gs_api_args_release(&b);
  free(alt);
}

static void test_args_fast_path_agrees(void **state) {
  static const char *const bodies[] = {
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"Nodes\":null,\"NodeNames\":[\"a\",\"b\"]}",
      " {\n \"NodeNames\" : [ \"a\" , \"b\" ] ,\t\"Pod\":{\"metadata\":{\"name\":\"p\"}} }\r\n",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[]}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"a\\u0062\"]}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"caf\xC3\xA9\"]}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"\"]}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"a\"],\"NodeNames\":[\"b\"]}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"a\"]} x",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"},\"metadata\":{}},\"NodeNames\":[\"a\"]}",
      "{\"Pod\":{\"metadata\":{\"name\":\"\"}},\"NodeNames\":[\"a\"]}",
      "{\"Pod\":{\"metadata\":{}},\"NodeNames\":[\"a\"]}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\",\"x\":\"}{][\\\"\"}},\"NodeNames\":[\"a\"]}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"Nodes\":{\"items\":[]},\"NodeNames\":[\"a\"]}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"Nodes\":null}",
      "{\"Pod\":null,\"NodeNames\":[\"a\"]}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"a\",]}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"a\" \"b\"]}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"tab\there\"]}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"}} \"NodeNames\":[\"a\"]}",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"a\"]",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"},\"NodeNames\":[\"a\"]}",
      "{}",
  };
  static const char seed[] =
      "{\"Pod\":{\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\",\"labels\":"
      "{\"aliyun.com/gpu-count\":\"2\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
      "\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":\"8\"}}}]}},\"Nodes\":null,"
      "\"NodeNames\":[\"gpu-a\",\"gpu-b\",\"node-00001\"]}";
  static const char alphabet[] = "{}[]\",: \\nul0aX\x01\xC3";
  uint32_t rng = 4242;
  char buf[sizeof seed + 16];
  (void)state;
  for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
    decode_both(bodies[i], strlen(bodies[i]));
  decode_both(seed, sizeof seed - 1);
  for (int round = 0; round < 20000; round++) {
    size_t len = sizeof seed - 1;
    memcpy(buf, seed, len);
    for (int k = 0; k < 1 + round % 3; k++) {
      size_t at;
      rng = rng * 1103515245u + 12345u;
      at = (rng >> 8) % len;
      switch ((rng >> 4) % 3) {
      case 0: /* replace */
        buf[at] = alphabet[(rng >> 20) % (sizeof alphabet - 1)];
        break;
      case 1: /* delete */
        memmove(buf + at, buf + at + 1, len - at - 1);
        len--;
        break;
      default: /* insert */
        if (len + 1 < sizeof buf) {
          memmove(buf + at + 1, buf + at, len - at);
          buf[at] = alphabet[(rng >> 20) % (sizeof alphabet - 1)];
          len++;
        }
        break;
      }
    }
    decode_both(buf, len);
  }
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
      cmocka_unit_test(test_answers_match_jansson),
      cmocka_unit_test(test_args_fast_path_agrees),
  };
  return cmocka_run_group_tests_name("api_extender", tests, NULL, NULL);
}
