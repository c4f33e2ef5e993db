/* Fuzz-ish robustness: truncated, byte-mutated and type-mutated inputs
 * through every decoder. The only assertion is "no crash, no leak, and a
 * diagnostic on every error" (run under ASan/UBSan). Deterministic seed. */
#include "api_test.h"

static uint64_t rng = 0x9E3779B97F4A7C15u;

static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static size_t pick(size_t n) {
  return n == 0 ? 0 : (size_t)(next() % n);
}

static struct gs_topo topo_buf;
static struct gs_api_alloc alloc_buf;

/* Reads an allocation back; any error but "none" carries a diagnostic. */
static void check_alloc(const json_t *pod, uint32_t unit) {
  struct gs_diag diag = {{0}, {0}};
  enum gs_err err = gs_api_alloc_from_pod(pod, unit, &alloc_buf, &diag);
  if (err != GS_EOK && err != GS_ENOTFOUND && err != GS_ENOMEM)
    assert_true(diag.text[0] != '\0');
}

/* Every decoder downstream of a body that parsed. */
static void exercise_args(const char *body, size_t len) {
  struct gs_api_args args;
  struct gs_diag diag = {{0}, {0}};
  struct gs_pod_request req;
  struct gs_node_spec spec;
  struct gs_api_filter_result *r;
  enum gs_err err = gs_api_args_decode(body, len, &args, &diag);
  if (err != GS_EOK) {
    assert_true(diag.text[0] != '\0');
    return;
  }
  memset(&diag, 0, sizeof diag);
  if (gs_api_pod_decode(args.pod, &req, &diag) != GS_EOK)
    assert_true(diag.text[0] != '\0');
  check_alloc(args.pod, GS_UNIT_GIB);
  (void)gs_api_pod_ns(args.pod);
  (void)gs_api_pod_is_terminal(args.pod);
  r = gs_api_filter_result_new(args.by_names);
  assert_non_null(r);
  for (size_t i = 0; i < args.nnodes; i++) {
    if (args.nodes[i] != NULL) {
      memset(&diag, 0, sizeof diag);
      if (gs_api_node_decode(args.nodes[i], &spec, &topo_buf, &diag) != GS_EOK)
        assert_true(diag.text[0] != '\0');
    }
    if (i % 2 == 0)
      assert_int_equal(gs_api_filter_result_pass(r, args.names[i], args.nodes[i]), GS_EOK);
    else
      assert_int_equal(gs_api_filter_result_fail(r, args.names[i], diag.text, i % 3 == 0),
                       GS_EOK);
  }
  gs_api_args_release(&args);
  {
    char *out = gs_api_filter_result_dump(r);
    assert_non_null(out);
    free(out);
  }
  gs_api_filter_result_free(r);
}

static void exercise_bind(const char *body, size_t len) {
  struct gs_api_bind_args b;
  struct gs_diag diag = {{0}, {0}};
  if (gs_api_bind_args_decode(body, len, &b, &diag) != GS_EOK)
    assert_true(diag.text[0] != '\0');
}

static void exercise_topo(const char *text) {
  struct gs_diag diag = {{0}, {0}};
  if (gs_api_topo_decode(text, &topo_buf, &diag) != GS_EOK) {
    assert_true(diag.text[0] != '\0');
  } else {
    char *out = gs_api_topo_encode(&topo_buf);
    assert_non_null(out);
    free(out);
  }
}

/* Truncates at every length, then applies random byte edits. */
static void byte_mutations(const char *orig, size_t len, void (*fn)(const char *, size_t),
                           int rounds) {
  char *buf = malloc(len + 16);
  assert_non_null(buf);
  for (size_t cut = 0; cut <= len; cut += 1 + cut / 64)
    fn(orig, cut);
  for (int r = 0; r < rounds; r++) {
    size_t n = len;
    memcpy(buf, orig, len);
    for (int k = 0, edits = 1 + (int)pick(4); k < edits; k++) {
      size_t at = pick(n);
      static const char junk[] = "{}[]\",:0-1.5e9 \\u\xff\x00nulltrue";
      switch (pick(4)) {
      case 0: /* flip */
        buf[at] = (char)(buf[at] ^ (1 << pick(8)));
        break;
      case 1: /* replace with a JSON-ish byte */
        buf[at] = junk[pick(sizeof junk - 1)];
        break;
      case 2: /* delete */
        if (n > 0) {
          memmove(buf + at, buf + at + 1, n - at - 1);
          n--;
        }
        break;
      default: /* insert */
        if (n < len + 15) {
          memmove(buf + at + 1, buf + at, n - at);
          buf[at] = junk[pick(sizeof junk - 1)];
          n++;
        }
        break;
      }
    }
    fn(buf, n);
  }
  free(buf);
}

/* Collects every value of the tree (borrowed), depth first. */
static void collect(json_t *v, json_t **out, size_t *n, size_t cap) {
  const char *key;
  json_t *child;
  size_t i;
  if (*n < cap)
    out[(*n)++] = v;
  if (json_is_object(v)) {
    json_object_foreach(v, key, child)
        collect(child, out, n, cap);
  } else if (json_is_array(v)) {
    json_array_foreach(v, i, child)
        collect(child, out, n, cap);
  }
}

static json_t *random_value(void) {
  static const char *const strings[] = {
      "", "x", "-1", "1.5", "500m", "4", "2Ki", "1e3", "0", "65", "true", "{}",
      "{\"0\":{\"0\":4}}", "{\"links\":[[\"X\"]]}", "0,1", "NV1", "Always", "share", "topology",
      "99999999999999999999", "\xc3\xa9t\xc3\xa9"};
  switch (pick(9)) {
  case 0:
    return json_null();
  case 1:
    return json_true();
  case 2:
    return json_integer((json_int_t)pick(100) - 50);
  case 3:
    return json_integer(INT64_MAX);
  case 4:
    return json_real(1.5);
  case 5:
    return json_array();
  case 6:
    return json_object();
  default:
    return json_string(strings[pick(sizeof strings / sizeof strings[0])]);
  }
}

/* Replaces a random member or element of the tree with a random value. */
static void tree_mutate(json_t *root) {
  json_t *all[4096];
  size_t n = 0, i;
  json_t *parent, *child;
  const char *key;
  collect(root, all, &n, sizeof all / sizeof all[0]);
  for (int tries = 0; tries < 16; tries++) {
    parent = all[pick(n)];
    if (json_is_object(parent) && json_object_size(parent) > 0) {
      size_t want = pick(json_object_size(parent)), k = 0;
      json_object_foreach(parent, key, child) {
        if (k++ == want) {
          json_object_set_new(parent, key, random_value());
          return;
        }
      }
    } else if (json_is_array(parent) && json_array_size(parent) > 0) {
      i = pick(json_array_size(parent));
      json_array_set_new(parent, i, random_value());
      return;
    }
  }
}

static void tree_mutations(const char *orig, void (*fn)(const char *, size_t), int rounds) {
  for (int r = 0; r < rounds; r++) {
    json_t *doc = gs_test_json(orig);
    char *text;
    for (int k = 0, edits = 1 + (int)pick(3); k < edits; k++)
      tree_mutate(doc);
    text = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_non_null(text);
    fn(text, strlen(text));
    free(text);
    json_decref(doc);
  }
}

static void topo_adapter(const char *text, size_t len) {
  char *copy = strndup(text, len);
  assert_non_null(copy);
  exercise_topo(copy);
  free(copy);
}

/* An annotation value mutated inside a pod. */
static void alloc_adapter(const char *text, size_t len) {
  static const char *const keys[] = {GS_ANN_ALLOCATION, GS_ANN_TOPO_ALLOCATION,
                                     GS_ANN_LEGACY_IDX};
  char *copy = strndup(text, len);
  json_t *pod, *s;
  assert_non_null(copy);
  s = json_string(copy);
  if (s != NULL) { /* byte mutations may leave invalid UTF-8 */
    pod = json_pack("{s:{s:{s:o,s:s}}}", "metadata", "annotations", keys[pick(3)], s,
                    GS_ANN_LEGACY_POD, "8");
    assert_non_null(pod);
    check_alloc(pod, GS_UNIT_GIB);
    json_decref(pod);
  }
  free(copy);
}

static void test_args_bodies(void **state) {
  static const char *const files[] = {"args-names.json", "args-nodes.json"};
  (void)state;
  for (size_t f = 0; f < 2; f++) {
    size_t len;
    char *body = read_data(files[f], &len);
    byte_mutations(body, len, exercise_args, 3000);
    tree_mutations(body, exercise_args, 3000);
    free(body);
  }
}

static void test_bind_bodies(void **state) {
  size_t len;
  char *body = read_data("bind-args.json", &len);
  (void)state;
  byte_mutations(body, len, exercise_bind, 5000);
  tree_mutations(body, exercise_bind, 2000);
  free(body);
}

static void test_topology_texts(void **state) {
  static const char text[] =
      "{\"links\":[[\"X\",\"NV1\",\"SYS\"],[\"NV1\",\"X\",\"PIX\"],[\"SYS\",\"PIX\",\"X\"]]}";
  (void)state;
  byte_mutations(text, strlen(text), topo_adapter, 5000);
  tree_mutations(text, topo_adapter, 3000);
}

static void test_annotation_values(void **state) {
  static const char *const values[] = {
      "{\"0\":{\"0\":4,\"1\":4},\"2\":{\"3\":1}}",
      "{\"allocatedGPUs\":{\"0\":[\"0\",\"1\"]},\"visibleGPUs\":[\"0\",\"1\"],"
      "\"assumeTime\":1700000000000000000,\"assigned\":false}",
  };
  (void)state;
  for (size_t i = 0; i < 2; i++) {
    byte_mutations(values[i], strlen(values[i]), alloc_adapter, 3000);
    tree_mutations(values[i], alloc_adapter, 2000);
  }
  byte_mutations("0,1,2,3", 7, alloc_adapter, 2000);
}

/* Whole fixtures with mutated trees through the object decoders. */
static void fixture_adapter(const char *text, size_t len) {
  json_t *doc = json_loadb(text, len, 0, NULL);
  struct gs_pod_request req;
  struct gs_node_spec spec;
  struct gs_diag diag = {{0}, {0}};
  if (doc == NULL)
    return;
  if (gs_api_pod_decode(doc, &req, &diag) != GS_EOK)
    assert_true(diag.text[0] != '\0');
  memset(&diag, 0, sizeof diag);
  if (gs_api_node_decode(doc, &spec, &topo_buf, &diag) != GS_EOK)
    assert_true(diag.text[0] != '\0');
  check_alloc(doc, GS_UNIT_128MIB);
  (void)gs_api_pod_node(doc);
  (void)gs_api_pod_phase(doc);
  json_decref(doc);
}

static void test_fixture_trees(void **state) {
  static const char *const fixtures[] = {"api-roundtrip-v1.34.0-core.v1.Pod.json",
                                         "api-roundtrip-v1.34.0-core.v1.Node.json"};
  static const char *const data[] = {"pod-share-multi.json", "pod-sidecar.json",
                                     "node-share.json", "node-topology.json"};
  (void)state;
  for (size_t i = 0; i < 2; i++) {
    char *text = read_fixture(fixtures[i], NULL); /* large: fewer rounds */
    tree_mutations(text, fixture_adapter, 300);
    free(text);
  }
  for (size_t i = 0; i < 4; i++) {
    char *text = read_data(data[i], NULL);
    tree_mutations(text, fixture_adapter, 1500);
    free(text);
  }
}

GS_TEST_MAIN_NAMED("api_fuzz", NULL, NULL, cmocka_unit_test(test_args_bodies),
                   cmocka_unit_test(test_bind_bodies), cmocka_unit_test(test_topology_texts),
                   cmocka_unit_test(test_annotation_values), cmocka_unit_test(test_fixture_trees))
