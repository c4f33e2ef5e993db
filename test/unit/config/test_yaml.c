/* gs_yaml_parse / gs_yaml_load_file: kubectl output, flow style, JSON,
 * scalar typing, anchors, merge keys, bounds and error positions. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DATA GS_TEST_DATA "/config/"

/* Path of a real object of reference/kube-fixtures, vendored verbatim under
 * test/data/reference/kube-fixtures (see its README): a fresh clone has it. */
static const char *fixture(const char *name) {
  static char path[1024];
  struct stat st;
  snprintf(path, sizeof path, "%s/reference/kube-fixtures/%s", GS_TEST_DATA, name);
  if (stat(path, &st) != 0)
    fail_msg("fixture %s not found", path);
  return path;
}

static json_t *parse_ok(const char *text) {
  struct gs_diag d = {0};
  json_t *v = NULL;
  enum gs_err err = gs_yaml_parse(text, strlen(text), "t.yaml", &v, &d);
  if (err != GS_EOK)
    print_error("unexpected error %s at %s: %s\n", gs_err_name(err), d.where, d.text);
  assert_int_equal(err, GS_EOK);
  assert_non_null(v);
  return v;
}

static enum gs_err parse_err(const char *text, struct gs_diag *d) {
  json_t *v = (json_t *)0x1;
  memset(d, 0, sizeof *d);
  enum gs_err err = gs_yaml_parse(text, strlen(text), "t.yaml", &v, d);
  assert_int_not_equal(err, GS_EOK);
  assert_ptr_equal(v, (json_t *)0x1); /* not written on error */
  assert_true(d->text[0] != '\0');
  return err;
}

/* json_t at a path like "items.0.metadata.name" (numbers index arrays). */
static json_t *at(json_t *v, const char *path) {
  char buf[256], *save = NULL;
  snprintf(buf, sizeof buf, "%s", path);
  for (char *tok = strtok_r(buf, ".", &save); tok && v; tok = strtok_r(NULL, ".", &save)) {
    if (json_is_array(v))
      v = json_array_get(v, (size_t)atoi(tok));
    else
      v = json_object_get(v, tok);
  }
  return v;
}

/* Same as at() but for keys that contain dots: the last key is given apart. */
static json_t *at_key(json_t *v, const char *path, const char *key) {
  return json_object_get(at(v, path), key);
}

static void assert_str(json_t *v, const char *want) {
  assert_non_null(v);
  assert_true(json_is_string(v));
  assert_string_equal(json_string_value(v), want);
}

static void assert_int(json_t *v, json_int_t want) {
  assert_non_null(v);
  assert_true(json_is_integer(v));
  assert_int_equal(json_integer_value(v), want);
}

/* ---- real documents ---------------------------------------------------- */

static void test_kubectl_list(void **state) {
  (void)state;
  struct gs_diag d = {0};
  json_t *doc = NULL;
  assert_int_equal(gs_yaml_load_file(DATA "kubectl-nodes-pods.yaml", &doc, &d), GS_EOK);
  assert_str(at(doc, "kind"), "List");
  assert_int_equal(json_array_size(at(doc, "items")), 3);
  assert_str(at(doc, "items.0.kind"), "Node");
  assert_str(at(doc, "items.0.metadata.name"), "gpu-node-a");
  assert_str(at_key(doc, "items.0.metadata.labels", "ack.node.gpu.schedule"), "share");
  assert_str(at_key(doc, "items.1.metadata.labels", "ack.node.gpu.schedule"), "cgpu");
  assert_str(at_key(doc, "items.0.status.capacity", "aliyun.com/gpu-mem"), "32");
  assert_str(at_key(doc, "items.0.status.capacity", "aliyun.com/gpu-count"), "2");
  assert_str(at_key(doc, "items.1.status.allocatable", "aliyun.com/gpu-mem"), "32");
  assert_str(at_key(doc, "items.0.status.capacity", "memory"), "196925332Ki");
  assert_str(at(doc, "items.0.status.conditions.0.status"), "True");
  assert_str(at(doc, "items.0.spec.podCIDRs.0"), "10.244.1.0/24");
  /* The pod. */
  assert_str(at(doc, "items.2.kind"), "Pod");
  assert_str(at_key(doc, "items.2.metadata.labels", "aliyun.com/gpu-count"), "2");
  assert_str(at_key(doc, "items.2.spec.containers.0.resources.limits", "aliyun.com/gpu-mem"),
             "16");
  assert_int(at(doc, "items.2.spec.priority"), 0);
  assert_int(at(doc, "items.2.spec.terminationGracePeriodSeconds"), 30);
  assert_true(json_is_true(at(doc, "items.2.spec.enableServiceLinks")));
  assert_true(json_is_object(at(doc, "items.2.spec.securityContext")));
  assert_int_equal(json_object_size(at(doc, "items.2.spec.securityContext")), 0);
  assert_true(json_is_null(at(doc, "items.2.status.conditions.0.lastProbeTime")));
  assert_str(at(doc, "items.2.status.conditions.0.message"),
             "0/2 nodes are available: 2 Insufficient aliyun.com/gpu-mem.");
  assert_str(at(doc, "items.2.spec.containers.0.command.2"), "--epochs=10");
  assert_str(at(doc, "items.2.metadata.creationTimestamp"), "2024-05-14T09:58:02Z");
  /* A block scalar keeps its text (and final newline); it is JSON inside. */
  json_t *last = at_key(doc, "items.2.metadata.annotations",
                        "kubectl.kubernetes.io/last-applied-configuration");
  assert_true(json_is_string(last));
  const char *s = json_string_value(last);
  assert_true(strncmp(s, "{\"apiVersion\":\"v1\"", 18) == 0);
  assert_int_equal(s[strlen(s) - 1], '\n');
  json_t *inner = json_loads(s, 0, NULL);
  assert_non_null(inner);
  assert_int(at_key(inner, "spec.containers.0.resources.limits", "aliyun.com/gpu-mem"), 16);
  json_decref(inner);
  assert_str(at(doc, "metadata.resourceVersion"), "");
  json_decref(doc);
}

static void test_flow_style(void **state) {
  (void)state;
  struct gs_diag d = {0};
  json_t *doc = NULL;
  assert_int_equal(gs_yaml_load_file(DATA "flow.yaml", &doc, &d), GS_EOK);
  assert_int_equal(json_array_size(at(doc, "items")), 2);
  assert_str(at(doc, "items.0.metadata.name"), "gpu-x");
  assert_str(at_key(doc, "items.0.metadata.labels", "ack.node.gpu.schedule"), "share");
  assert_str(at(doc, "items.0.metadata.labels.a"), "b");
  assert_int(at_key(doc, "items.0.status.capacity", "aliyun.com/gpu-mem"), 16);
  assert_int(at_key(doc, "items.0.status.capacity", "aliyun.com/gpu-count"), 2);
  assert_str(at_key(doc, "items.1.metadata.labels", "aliyun.com/gpu-count"), "1");
  assert_int_equal(json_array_size(at(doc, "items.1.spec.containers")), 1);
  assert_int(at_key(doc, "items.1.spec.containers.0.resources.limits", "aliyun.com/gpu-mem"), 4);
  json_decref(doc);

  doc = parse_ok("{name: x, labels: {a: b}}");
  assert_str(at(doc, "name"), "x");
  assert_str(at(doc, "labels.a"), "b");
  json_decref(doc);
}

static void test_json_text(void **state) {
  (void)state;
  struct gs_diag d = {0};
  json_t *doc = NULL;
  assert_int_equal(gs_yaml_load_file(DATA "list.json", &doc, &d), GS_EOK);
  json_error_t je;
  json_t *want = json_load_file(DATA "list.json", 0, &je);
  assert_non_null(want);
  assert_true(json_equal(doc, want));
  assert_int(at(doc, "items.1.spec.priority"), -5);
  assert_true(json_is_real(at(doc, "items.1.spec.ratio")));
  assert_str(at(doc, "items.1.spec.esc"), "tab\there \xc3\xa9");
  json_decref(want);
  json_decref(doc);

  /* Compact JSON (no spaces after ':' and ','). */
  doc = parse_ok("{\"a\":1,\"b\":[true,false,null,\"x\"],\"c\":{\"d\":-2.5e1}}");
  assert_int(at(doc, "a"), 1);
  assert_true(json_is_true(at(doc, "b.0")));
  assert_true(json_is_null(at(doc, "b.2")));
  assert_true(json_is_real(at(doc, "c.d")));
  assert_true(json_real_value(at(doc, "c.d")) == -25.0);
  json_decref(doc);
}

/* Every JSON fixture reads the same through YAML as through jansson. */
static void test_json_fixtures_equal_jansson(void **state) {
  (void)state;
  static const char *const files[] = {
      "api-roundtrip-v1.34.0-core.v1.Pod.json",
      "api-roundtrip-v1.34.0-core.v1.Node.json",
      "api-roundtrip-v1.34.0-core.v1.Binding.json",
      "api-roundtrip-v1.34.0-core.v1.ConfigMap.json",
      "api-roundtrip-v1.34.0-coordination.k8s.io.v1.Lease.json",
      "api-roundtrip-v1.34.0-core.v1.Event.json",
      "api-roundtrip-v1.34.0-events.k8s.io.v1.Event.json",
      "configmap-patch-request-smp.json",
      "configmap-patch-response.json",
      "status-404-notfound.json",
      "status-422-invalid.json",
  };
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    const char *path = fixture(files[i]);
    struct gs_diag d = {0};
    json_t *got = NULL, *want;
    json_error_t je;
    want = json_load_file(path, 0, &je);
    assert_non_null(want);
    if (gs_yaml_load_file(path, &got, &d) != GS_EOK)
      fail_msg("%s: %s: %s", files[i], d.where, d.text);
    if (!json_equal(got, want))
      fail_msg("%s reads differently through YAML", files[i]);
    json_decref(got);
    json_decref(want);
  }
}

static void test_fixture_extended_resource_pod(void **state) {
  (void)state;
  struct gs_diag d = {0};
  json_t *doc = NULL;
  assert_int_equal(gs_yaml_load_file(fixture("website-extended-resource-pod.yaml"), &doc, &d),
                   GS_EOK);
  assert_str(at(doc, "kind"), "Pod");
  assert_str(at(doc, "metadata.name"), "extended-resource-demo");
  assert_str(at(doc, "spec.containers.0.image"), "nginx");
  assert_int(at_key(doc, "spec.containers.0.resources.limits", "example.com/dongle"), 3);
  assert_int(at_key(doc, "spec.containers.0.resources.requests", "example.com/dongle"), 3);
  json_decref(doc);
}

static void test_fixture_kubectl_edit_steps(void **state) {
  (void)state;
  struct gs_diag d = {0};
  json_t *doc = NULL;
  assert_int_equal(gs_yaml_load_file(fixture("kubectl-edit-testcase-list-errors-steps.yaml"), &doc,
                                     &d),
                   GS_EOK);
  assert_str(at(doc, "namespace"), "edit-test");
  assert_str(at(doc, "args.0"), "configmaps,services");
  assert_int(at(doc, "expectedExitCode"), 0);
  assert_true(json_array_size(at(doc, "steps")) >= 10);
  assert_str(at(doc, "steps.0.expectedMethod"), "GET");
  assert_int(at(doc, "steps.0.resultingStatusCode"), 200);
  assert_str(at(doc, "steps.0.resultingOutput"), "0.response");
  assert_str(at(doc, "steps.3.expectedContentType"), "application/strategic-merge-patch+json");
  assert_int(at(doc, "steps.3.resultingStatusCode"), 422);
  json_decref(doc);
}

/* ---- scalar typing ----------------------------------------------------- */

static void check_scalar(const char *yaml_value, json_type type, const char *str,
                         json_int_t ival) {
  char text[256];
  snprintf(text, sizeof text, "v: %s\n", yaml_value);
  json_t *doc = parse_ok(text);
  json_t *v = json_object_get(doc, "v");
  assert_non_null(v);
  if (json_typeof(v) != type)
    fail_msg("v: %s gave JSON type %d, want %d", yaml_value, json_typeof(v), type);
  if (type == JSON_STRING)
    assert_string_equal(json_string_value(v), str);
  if (type == JSON_INTEGER)
    assert_int_equal(json_integer_value(v), ival);
  json_decref(doc);
}

static void test_scalars(void **state) {
  (void)state;
  static const struct {
    const char *yaml;
    json_int_t ival;
  } ints[] = {{"1", 1}, {"0", 0}, {"-3", -3}, {"+7", 7}, {"-0", 0},
              {"9223372036854775807", INT64_MAX}, {"-9223372036854775808", INT64_MIN},
              {"!!int \"12\"", 12}, {"!!float 3", 3}, {"!custom 12", 12}};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
    check_scalar(ints[i].yaml, JSON_INTEGER, NULL, ints[i].ival);
  static const char *const reals[] = {"9223372036854775808", "1.5", "-2e3", ".5", "5.", "1E+2"};
  for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++)
    check_scalar(reals[i], JSON_REAL, NULL, 0);
  /* Plain scalars that stay the string they are: bases and separators
     (documented departure), near-booleans, near-nulls, text. */
  static const char *const as_is[] = {
      "0x1F", "0777", "0o17",        "1_000",       "1.2.3", "1e",
      "+",    "e3",   "128Mi",       "500m",        "tRUE",  "yess",
      "nULL", "hello world", "2024-05-14T09:58:02Z", "0.0.0.0:32766"};
  for (size_t i = 0; i < sizeof as_is / sizeof as_is[0]; i++)
    check_scalar(as_is[i], JSON_STRING, as_is[i], 0);
  /* YAML 1.1 booleans, as Kubernetes reads them. */
  static const char *const t[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                  "y",    "Y",    "on",   "On",  "ON"};
  static const char *const f[] = {"false", "False", "FALSE", "no", "No", "NO",
                                  "n",     "N",     "off",   "Off", "OFF"};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    check_scalar(t[i], JSON_TRUE, NULL, 0);
    check_scalar(f[i], JSON_FALSE, NULL, 0);
  }
  check_scalar("!!bool 'on'", JSON_TRUE, NULL, 0);
  static const char *const nulls[] = {"", "~", "null", "Null", "NULL", "!!null ''"};
  for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
    check_scalar(nulls[i], JSON_NULL, NULL, 0);
  /* Quoted and block scalars are strings; so are tagged ones. */
  static const struct {
    const char *yaml, *str;
  } strings[] = {{"'yes'", "yes"},
                 {"\"1\"", "1"},
                 {"\"\"", ""},
                 {"'null'", "null"},
                 {"\"a\\tb\"", "a\tb"},
                 {"|\n  12\n  yes\n", "12\nyes\n"},
                 {">-\n  folded\n  text\n", "folded text"},
                 {"!!str 12", "12"},
                 {"!!str yes", "yes"},
                 {"! 12", "12"}};
  for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
    check_scalar(strings[i].yaml, JSON_STRING, strings[i].str, 0);
}

static void test_scalar_errors(void **state) {
  (void)state;
  struct gs_diag d;
  static const char *const bad[] = {"v: .inf\n", "v: -.Inf\n", "v: .nan\n", "v: 1e999\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(parse_err(bad[i], &d), GS_EPARSE);
    assert_string_equal(d.where, "t.yaml:1:4");
    assert_non_null(strstr(d.text, "has no JSON form"));
  }
  assert_int_equal(parse_err("v: !!int abc\n", &d), GS_EPARSE);
  assert_string_equal(d.where, "t.yaml:1:4");
  assert_string_equal(d.text, "cannot read \"abc\" as int");
  /* An embedded NUL stays a string; jansson keeps the length. */
  json_t *doc = parse_ok("v: \"a\\0b\"\n");
  assert_int_equal(json_string_length(json_object_get(doc, "v")), 3);
  json_decref(doc);
}

static void test_keys(void **state) {
  (void)state;
  json_t *doc = parse_ok("1: a\nyes: b\n~: c\n\"q\": d\ntrue: e\n1.5: f\n");
  assert_str(json_object_get(doc, "1"), "a");
  assert_str(json_object_get(doc, "yes"), "b");
  assert_str(json_object_get(doc, "~"), "c");
  assert_str(json_object_get(doc, "q"), "d");
  assert_str(json_object_get(doc, "true"), "e");
  assert_str(json_object_get(doc, "1.5"), "f");
  json_decref(doc);

  /* Duplicate keys: the last wins. */
  doc = parse_ok("a: 1\na: 2\n");
  assert_int(json_object_get(doc, "a"), 2);
  json_decref(doc);

  struct gs_diag d;
  assert_int_equal(parse_err("? [a, b]\n: c\n", &d), GS_EPARSE);
  assert_string_equal(d.where, "t.yaml:1:3");
  assert_string_equal(d.text, "a mapping key must be a scalar, not a list");
  assert_int_equal(parse_err("{ {a: b}: c }\n", &d), GS_EPARSE);
  assert_string_equal(d.text, "a mapping key must be a scalar, not a mapping");
}

/* ---- anchors, aliases, merge keys ------------------------------------- */

static void test_anchors(void **state) {
  (void)state;
  json_t *doc = parse_ok("base: &b {x: 1, y: [1, 2]}\n"
                         "copy: *b\n"
                         "s: &s hello\n"
                         "t: *s\n"
                         "list: [&n 5, *n, *n]\n"
                         "*s : keyed by alias\n");
  assert_true(json_equal(json_object_get(doc, "base"), json_object_get(doc, "copy")));
  /* A copy, not a shared reference: changing one leaves the other. */
  assert_ptr_not_equal(json_object_get(doc, "base"), json_object_get(doc, "copy"));
  json_object_set_new(json_object_get(doc, "copy"), "x", json_integer(9));
  assert_int(at(doc, "base.x"), 1);
  assert_str(json_object_get(doc, "t"), "hello");
  assert_int(at(doc, "list.2"), 5);
  assert_str(json_object_get(doc, "hello"), "keyed by alias");
  json_decref(doc);

  /* A redefined anchor refers to its latest node. */
  doc = parse_ok("a: &x 1\nb: &x 2\nc: *x\n");
  assert_int(json_object_get(doc, "c"), 2);
  json_decref(doc);
}

static void test_merge_keys(void **state) {
  (void)state;
  json_t *doc = parse_ok("defaults: &d {mode: share, placement: binpack}\n"
                         "other: &o {placement: spread, extra: 1}\n"
                         "node:\n"
                         "  placement: spread\n"
                         "  <<: *d\n"
                         "  name: n1\n"
                         "two:\n"
                         "  <<: [*d, *o]\n"
                         "quoted: {\"<<\": 5}\n");
  assert_str(at(doc, "node.mode"), "share");
  assert_str(at(doc, "node.placement"), "spread"); /* own key wins, before or after */
  assert_str(at(doc, "node.name"), "n1");
  assert_int_equal(json_object_size(at(doc, "node")), 3);
  assert_str(at(doc, "two.placement"), "binpack"); /* earlier merge source wins */
  assert_int(at(doc, "two.extra"), 1);
  assert_int(json_object_get(at(doc, "quoted"), "<<"), 5);
  json_decref(doc);

  struct gs_diag d;
  assert_int_equal(parse_err("a: {<<: 5}\n", &d), GS_EPARSE);
  assert_string_equal(d.text, "a merge key \"<<\" needs a mapping or a list of mappings");
}

static void test_alias_errors(void **state) {
  (void)state;
  struct gs_diag d;
  assert_int_equal(parse_err("a: 1\nb: *nope\n", &d), GS_EPARSE);
  assert_string_equal(d.where, "t.yaml:2:4");
  assert_string_equal(d.text, "unknown anchor \"nope\" (or a recursive alias)");
  /* An alias inside its own anchor would be a cycle. */
  assert_int_equal(parse_err("a: &x [1, *x]\n", &d), GS_EPARSE);
  assert_string_equal(d.where, "t.yaml:1:11");
  assert_int_equal(parse_err("a: &k [1]\n*k : 2\n", &d), GS_EPARSE);
  assert_string_equal(d.text, "alias *k used as a key is not a string");
}

static void test_billion_laughs(void **state) {
  (void)state;
  struct gs_diag d;
  const char *lol = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
                    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
                    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
                    "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
                    "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
  assert_int_equal(parse_err(lol, &d), GS_ETOOBIG);
  assert_non_null(strstr(d.text, "billion laughs"));
  assert_true(strncmp(d.where, "t.yaml:", 7) == 0);

  /* A few levels of the same thing are fine: 9^4 nodes. */
  json_t *doc = parse_ok("a: &a [1,1,1,1,1,1,1,1,1]\n"
                         "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                         "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                         "d: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n");
  assert_int(at(doc, "d.8.8.8.8"), 1);
  json_decref(doc);
}

static void test_depth_limit(void **state) {
  (void)state;
  struct gs_diag d;
  size_t n = GS_YAML_DEPTH_MAX + 1;
  char *text = malloc(2 * n + 1);
  memset(text, '[', n);
  memset(text + n, ']', n);
  text[2 * n] = '\0';
  assert_int_equal(parse_err(text, &d), GS_ETOOBIG);
  assert_non_null(strstr(d.text, "nested deeper than"));
  /* Exactly the limit is fine. */
  text[n - 1] = ' ';
  text[n] = ' ';
  json_t *doc = parse_ok(text);
  json_decref(doc);
  free(text);

  /* Aliases cannot be used to build deeper trees than the limit. */
  char *deep = malloc(4 * GS_YAML_DEPTH_MAX);
  size_t k = (size_t)snprintf(deep, 64, "a: &a ");
  for (size_t i = 0; i < GS_YAML_DEPTH_MAX - 2; i++)
    deep[k++] = '[';
  for (size_t i = 0; i < GS_YAML_DEPTH_MAX - 2; i++)
    deep[k++] = ']';
  k += (size_t)snprintf(deep + k, 64, "\nb: [[[[*a]]]]\n");
  deep[k] = '\0';
  assert_int_equal(parse_err(deep, &d), GS_ETOOBIG);
  assert_non_null(strstr(d.text, "deeper than"));
  free(deep);
}

/* ---- documents, errors ------------------------------------------------- */

static void test_documents(void **state) {
  (void)state;
  json_t *doc = parse_ok("a: 1\n---\nb: 2\n");
  assert_int(json_object_get(doc, "a"), 1);
  assert_null(json_object_get(doc, "b"));
  json_decref(doc);
  /* Later documents are not parsed at all. */
  doc = parse_ok("---\na: 1\n...\n---\nb: [unclosed\n");
  assert_int(json_object_get(doc, "a"), 1);
  json_decref(doc);
  doc = parse_ok("");
  assert_true(json_is_null(doc));
  json_decref(doc);
  doc = parse_ok("# only a comment\n");
  assert_true(json_is_null(doc));
  json_decref(doc);
  doc = parse_ok("--- 42\n");
  assert_int(doc, 42);
  json_decref(doc);
  doc = parse_ok("- a\n- b\n");
  assert_int_equal(json_array_size(doc), 2);
  json_decref(doc);
}

/* gs_yaml_load_file_docs (the demo's file, issue 16 item 7): every
 * document, empty ones left out, anchors per document. */
static void test_all_documents(void **state) {
  char path[] = "/tmp/gs-yaml-docs-XXXXXX";
  struct gs_diag d = {"", ""};
  json_t *docs = NULL;
  int fd = mkstemp(path);
  FILE *f;
  (void)state;
  assert_true(fd >= 0);
  f = fdopen(fd, "w");
  fputs("a: &x 1\nb: *x\n---\n---\n# nothing\n---\n- 2\n...\n--- 3\n", f);
  fclose(f);
  assert_int_equal(gs_yaml_load_file_docs(path, &docs, &d), GS_EOK);
  assert_int_equal(json_array_size(docs), 3);
  assert_int(json_object_get(json_array_get(docs, 0), "b"), 1);
  assert_int(json_array_get(json_array_get(docs, 1), 0), 2);
  assert_int(json_array_get(docs, 2), 3);
  json_decref(docs);
  /* an anchor of another document is not there */
  f = fopen(path, "w");
  fputs("a: &x 1\n---\nb: *x\n", f);
  fclose(f);
  docs = NULL;
  assert_int_not_equal(gs_yaml_load_file_docs(path, &docs, &d), GS_EOK);
  assert_null(docs);
  assert_non_null(strstr(d.text, "x"));
  /* an error in a later document is an error */
  f = fopen(path, "w");
  fputs("a: 1\n---\nb: [unclosed\n", f);
  fclose(f);
  assert_int_not_equal(gs_yaml_load_file_docs(path, &docs, &d), GS_EOK);
  unlink(path);
}

static void test_syntax_errors(void **state) {
  (void)state;
  struct gs_diag d;
  assert_int_equal(parse_err("a: b\n  c: d\n", &d), GS_EPARSE);
  assert_string_equal(d.where, "t.yaml:2:4");
  assert_string_equal(d.text, "mapping values are not allowed in this context");

  assert_int_equal(parse_err("a: [1, 2\nb: 3\n", &d), GS_EPARSE);
  assert_string_equal(d.where, "t.yaml:2:2");
  assert_string_equal(d.text,
                      "did not find expected ',' or ']' (while parsing a flow sequence at 1:4)");

  assert_int_equal(parse_err("a: 1\n\tb: 2\n", &d), GS_EPARSE);
  assert_string_equal(d.where, "t.yaml:2:1");
  assert_string_equal(d.text, "found a tab character that violates indentation (while scanning "
                              "a plain scalar at 1:4)");

  assert_int_equal(parse_err("items:\n- name: a\n  x: [1\n- name: b\n", &d), GS_EPARSE);
  assert_string_equal(d.where, "t.yaml:4:7");
  assert_string_equal(d.text,
                      "did not find expected ',' or ']' (while parsing a flow sequence at 3:6)");

  assert_int_equal(parse_err("a: \"unterminated\n", &d), GS_EPARSE);
  assert_string_equal(d.where, "t.yaml:2:1");
  assert_non_null(strstr(d.text, "found unexpected end of stream"));

  /* Reader errors carry a byte offset: still line:col. */
  assert_int_equal(parse_err("a: 1\nb: x\xff\n", &d), GS_EPARSE);
  assert_string_equal(d.where, "t.yaml:2:5");
  assert_string_equal(d.text, "invalid leading UTF-8 octet (byte 0xff)");

  /* The first error wins: a diag already set is kept. */
  struct gs_diag kept = {.where = "x", .text = "earlier"};
  json_t *v = NULL;
  assert_int_equal(gs_yaml_parse("a: [", 4, "t.yaml", &v, &kept), GS_EPARSE);
  assert_string_equal(kept.text, "earlier");
  /* No diag at all is fine, and no name gives "<input>". */
  assert_int_equal(gs_yaml_parse("a: [", 4, NULL, &v, NULL), GS_EPARSE);
  memset(&d, 0, sizeof d);
  assert_int_equal(gs_yaml_parse("a: [", 4, NULL, &v, &d), GS_EPARSE);
  assert_true(strncmp(d.where, "<input>:", 8) == 0);
}

static void test_load_file_errors(void **state) {
  (void)state;
  struct gs_diag d = {0};
  json_t *v = NULL;
  assert_int_equal(gs_yaml_load_file("/nonexistent/gpushare.yaml", &v, &d), GS_EIO);
  assert_string_equal(d.text, "cannot read /nonexistent/gpushare.yaml: No such file or directory");
  assert_string_equal(d.where, "/nonexistent/gpushare.yaml");
  assert_null(v);
  memset(&d, 0, sizeof d);
  assert_int_equal(gs_yaml_load_file(GS_TEST_DATA, &v, &d), GS_EIO);
  assert_non_null(strstr(d.text, "Is a directory"));
  /* A file's errors are named after the file. */
  memset(&d, 0, sizeof d);
  assert_int_equal(gs_yaml_load_file(DATA "flow.yaml", &v, &d), GS_EOK);
  json_decref(v);
}

/* Robustness: mutated documents either parse or fail with a diagnostic,
 * never crash or leak (run under ASan/UBSan). Deterministic (fixed seed). */
static void test_mutations(void **state) {
  (void)state;
  static const char *const seeds[] = {
      "apiVersion: v1\nitems:\n- kind: Node\n  metadata: {name: a, labels: {x: \"1\"}}\n",
      "a: &a [1, {b: *a}]\nc: {<<: [&x {d: 1}, *x], e: |\n  text\n}\n",
      "{\"a\":[1,2.5,true,null,\"s\\u00e9\"],\"b\":{\"c\":-1}}",
      "- &k key\n- {*k : v, ? [x] : y}\n--- !!int 5\n",
      "s: 'q''uote'\nt: \"esc\\t\\0\"\nu: >-\n  folded\n  more\nv: !!str 1\n"};
  static const char *const toks[] = {"&a ", "*a", "<<: ", "[", "]", "{", "}", "\n", "- ",
                                     ": ",  "!!int ", "'", "\"", "|\n", "---\n", "\t", "\xff",
                                     "#",   ",", "? ", "~", "*x", "&x "};
  uint32_t rng = 12345;
#define NEXT() (rng = rng * 1103515245u + 12345u, (rng >> 8) & 0xFFFFu)
  char buf[1024];
  for (int iter = 0; iter < 3000; iter++) {
    const char *seed = seeds[NEXT() % (sizeof seeds / sizeof seeds[0])];
    size_t len = strlen(seed);
    memcpy(buf, seed, len);
    for (int m = 0, nm = 1 + (int)(NEXT() % 6); m < nm; m++) {
      size_t pos = len ? NEXT() % (len + 1) : 0;
      const char *tok = toks[NEXT() % (sizeof toks / sizeof toks[0])];
      size_t tl = strlen(tok);
      if (NEXT() % 3 == 0 && len > 0) { /* delete */
        size_t del = 1 + NEXT() % 8;
        if (pos + del > len)
          del = len - pos;
        memmove(buf + pos, buf + pos + del, len - pos - del);
        len -= del;
      } else if (len + tl < sizeof buf) { /* insert */
        memmove(buf + pos + tl, buf + pos, len - pos);
        memcpy(buf + pos, tok, tl);
        len += tl;
      }
    }
    struct gs_diag d = {0};
    json_t *v = NULL;
    enum gs_err err = gs_yaml_parse(buf, len, "m.yaml", &v, &d);
    if (err == GS_EOK) {
      char *out = json_dumps(v, JSON_ENCODE_ANY);
      assert_non_null(out);
      free(out);
      json_decref(v);
    } else {
      assert_true(d.text[0] != '\0');
      assert_true(strncmp(d.where, "m.yaml:", 7) == 0);
    }
  }
#undef NEXT
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_kubectl_list),
             cmocka_unit_test(test_flow_style),
             cmocka_unit_test(test_json_text),
             cmocka_unit_test(test_json_fixtures_equal_jansson),
             cmocka_unit_test(test_fixture_extended_resource_pod),
             cmocka_unit_test(test_fixture_kubectl_edit_steps),
             cmocka_unit_test(test_scalars),
             cmocka_unit_test(test_scalar_errors),
             cmocka_unit_test(test_keys),
             cmocka_unit_test(test_anchors),
             cmocka_unit_test(test_all_documents),
             cmocka_unit_test(test_merge_keys),
             cmocka_unit_test(test_alias_errors),
             cmocka_unit_test(test_billion_laughs),
             cmocka_unit_test(test_depth_limit),
             cmocka_unit_test(test_documents),
             cmocka_unit_test(test_syntax_errors),
             cmocka_unit_test(test_load_file_errors),
             cmocka_unit_test(test_mutations))
