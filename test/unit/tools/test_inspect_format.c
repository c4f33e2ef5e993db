/* gpushare-inspect's text: the table and -d views against golden files
 * (test/data/inspect/NAME.json → NAME.txt, NAME_details.txt), the amounts,
 * shape errors with their JSON paths, and the request helpers.
 *
 * On a golden mismatch the actual text is written to
 * GS_BINARY_DIR/inspect-<golden file> so `diff` shows what changed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "../test_main.h"

#include "format.h"
#include "request.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  char *p;
  long n;
  if (f == NULL)
    return NULL;
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return NULL;
  }
  p = malloc((size_t)n + 1);
  if (p != NULL && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  if (p != NULL)
    p[n] = '\0';
  fclose(f);
  return p;
}

static json_t *load(const char *name) {
  char path[512];
  json_error_t jerr;
  json_t *j;
  snprintf(path, sizeof path, "%s/inspect/%s", GS_TEST_DATA, name);
  j = json_load_file(path, 0, &jerr);
  if (j == NULL)
    fail_msg("%s: %s (line %d)", path, jerr.text, jerr.line);
  return j;
}

static char *render_ok(const json_t *root, enum gs_inspect_view view) {
  struct gs_diag diag = {{0}, {0}};
  char *text = NULL;
  enum gs_err e = gs_inspect_render(root, view, &text, &diag);
  if (e != GS_EOK)
    fail_msg("render: %s: %s: %s", gs_err_name(e), diag.where, diag.text);
  assert_non_null(text);
  assert_string_equal(diag.text, "");
  return text;
}

static void expect_golden(const char *json_name, enum gs_inspect_view view, const char *golden) {
  char path[512];
  json_t *root = load(json_name);
  char *text = render_ok(root, view), *want;
  snprintf(path, sizeof path, "%s/inspect/%s", GS_TEST_DATA, golden);
  want = slurp(path);
  if (want == NULL || strcmp(want, text) != 0) {
    char out[512];
    FILE *f;
    snprintf(out, sizeof out, "%s/inspect-%s", GS_BINARY_DIR, golden);
    f = fopen(out, "wb");
    if (f != NULL) {
      fputs(text, f);
      fclose(f);
    }
    fail_msg("%s differs from the rendering of %s; actual text in %s", path, json_name, out);
  }
  free(want);
  free(text);
  json_decref(root);
}

/* ---- golden views ------------------------------------------------------------ */

static void table_cluster_1gib(void **state) {
  (void)state;
  expect_golden("cluster_1gib.json", GS_INSPECT_TABLE, "cluster_1gib.txt");
}

static void details_cluster_1gib(void **state) {
  (void)state;
  expect_golden("cluster_1gib.json", GS_INSPECT_DETAILS, "cluster_1gib_details.txt");
}

static void table_pending_unit(void **state) {
  (void)state;
  expect_golden("seed_128mib_pending.json", GS_INSPECT_TABLE, "seed_128mib_pending.txt");
}

static void details_pending_unit(void **state) {
  (void)state;
  expect_golden("seed_128mib_pending.json", GS_INSPECT_DETAILS,
                "seed_128mib_pending_details.txt");
}

static void table_empty(void **state) {
  (void)state;
  expect_golden("empty.json", GS_INSPECT_TABLE, "empty.txt");
  expect_golden("empty.json", GS_INSPECT_DETAILS, "empty_details.txt");
}

static void table_single_node(void **state) {
  (void)state;
  expect_golden("node_gpu_b.json", GS_INSPECT_TABLE, "node_gpu_b.txt");
}

/* ---- behaviours named in the issue, checked on small inline inputs -------- */

static char *render_text(const char *json, enum gs_inspect_view view) {
  json_error_t jerr;
  json_t *root = json_loads(json, 0, &jerr);
  char *text;
  if (root == NULL)
    fail_msg("test JSON: %s", jerr.text);
  text = render_ok(root, view);
  json_decref(root);
  return text;
}

/* DRA claims (docs/dra.md) are rows beside the pods, marked "(claim)". */
static void claims_listed_beside_pods(void **state) {
  char *t = render_text("{\"unitMiB\":1024,\"nodes\":[{\"name\":\"n\",\"mode\":\"share\",\"gpus\":["
                        "{\"index\":0,\"totalMiB\":16384,\"usedMiB\":16384,"
                        "\"pods\":[{\"namespace\":\"d\",\"name\":\"p\",\"container\":0,\"usedMiB\":4096}],"
                        "\"claims\":[{\"namespace\":\"t\",\"name\":\"c\",\"uid\":\"u\","
                        "\"usedMiB\":12288}]}]}]}",
                        GS_INSPECT_DETAILS);
  (void)state;
  assert_non_null(strstr(t, "d          p          0    0 "));
  assert_non_null(strstr(t, "t          c (claim)  0    -          12 "));
  free(t);
  /* a claim only: the table is there, not "no pods" */
  t = render_text("{\"unitMiB\":1024,\"nodes\":[{\"name\":\"n\",\"gpus\":["
                  "{\"index\":0,\"totalMiB\":16384,\"usedMiB\":16384,"
                  "\"claims\":[{\"namespace\":\"t\",\"name\":\"w\",\"usedMiB\":16384,"
                  "\"whole\":true}]}]}]}",
                  GS_INSPECT_DETAILS);
  assert_null(strstr(t, "no pods"));
  assert_non_null(strstr(t, "w (claim)"));
  free(t);
}

static void unhealthy_marker_and_footnote(void **state) {
  char *t = render_text("{\"unitMiB\":1024,\"nodes\":[{\"name\":\"n\",\"mode\":\"share\",\"gpus\":["
                        "{\"index\":0,\"totalMiB\":8192,\"usedMiB\":1024},"
                        "{\"index\":1,\"totalMiB\":8192,\"usedMiB\":0,\"healthy\":false}]}]}",
                        GS_INSPECT_TABLE);
  (void)state;
  assert_non_null(strstr(t, "1/8  "));   /* healthy: no marker */
  assert_non_null(strstr(t, "0/8*  ")); /* unhealthy: marked */
  assert_non_null(strstr(t, "\n* unhealthy GPU: never chosen for new pods\n"));
  free(t);
  /* no unhealthy GPU, no footnote */
  t = render_text("{\"unitMiB\":1024,\"nodes\":[{\"name\":\"n\",\"gpus\":["
                  "{\"index\":0,\"totalMiB\":8192,\"usedMiB\":1024,\"healthy\":true}]}]}",
                  GS_INSPECT_TABLE);
  assert_null(strchr(t, '*'));
  assert_null(strstr(t, "unhealthy"));
  free(t);
}

static void pending_unit_note(void **state) {
  static const char *const with[] = {
      "{\"unit\":\"1GiB\",\"unitMiB\":1024,\"pendingUnit\":\"128MiB\",\"nodes\":[]}",
  };
  static const char *const without[] = {
      "{\"unit\":\"1GiB\",\"unitMiB\":1024,\"nodes\":[]}",
      "{\"unit\":\"1GiB\",\"unitMiB\":1024,\"pendingUnit\":null,\"nodes\":[]}",
      "{\"unit\":\"1GiB\",\"unitMiB\":1024,\"pendingUnit\":\"\",\"nodes\":[]}",
  };
  (void)state;
  for (size_t v = 0; v < 2; v++) {
    char *t = render_text(with[0], (enum gs_inspect_view)v);
    assert_non_null(strstr(t, "\nnote: gpuMemoryUnit changes to 128MiB at the next restart\n"));
    free(t);
    for (size_t i = 0; i < sizeof without / sizeof without[0]; i++) {
      t = render_text(without[i], (enum gs_inspect_view)v);
      assert_null(strstr(t, "note:"));
      free(t);
    }
  }
}

/* GPU columns follow the index: a node with GPUs 0 and 2 leaves GPU1 blank,
 * and a node with fewer GPUs leaves the last columns blank. */
static void columns_follow_gpu_index(void **state) {
  (void)state;
  expect_golden("gpu_index_columns.json", GS_INSPECT_TABLE, "gpu_index_columns.txt");
}

/* Without "unit" (older extender), the name comes from unitMiB. */
static void unit_name_from_size(void **state) {
  char *t = render_text("{\"unitMiB\":128,\"nodes\":[]}", GS_INSPECT_TABLE);
  (void)state;
  assert_non_null(strstr(t, "GPU Memory(128MiB)"));
  free(t);
  t = render_text("{\"unitMiB\":1024,\"nodes\":[]}", GS_INSPECT_TABLE);
  assert_non_null(strstr(t, "GPU Memory(GiB)"));
  free(t);
}

/* Issue 16 item 4: nodes gpushare does not manage are neither rows nor in
 * the totals (a note counts them); whole GPUs whose memory is unknown show
 * who owns them (1/1, 0/1) and the node its GPUs, not 0/0. */
static void unmanaged_nodes_and_whole_gpus(void **state) {
  (void)state;
  expect_golden("unmanaged_whole.json", GS_INSPECT_TABLE, "unmanaged_whole.txt");
  char *t = render_text("{\"unit\":\"1GiB\",\"unitMiB\":1024,\"nodes\":[{\"name\":\"t\",\"mode\":"
                  "\"topology\",\"gpus\":[{\"index\":0,\"totalMiB\":0,\"usedMiB\":0,\"owner\":"
                  "null}]}]}",
                  GS_INSPECT_DETAILS);
  assert_non_null(strstr(t, "\n0    whole                 whole                 yes      0     -\n"));
  assert_non_null(strstr(t, "\nAllocated/Total:  0/1 GPUs (0%)\n"));
  free(t);
}

static void details_owner_and_missing_container(void **state) {
  (void)state;
  expect_golden("owner_details.json", GS_INSPECT_DETAILS, "owner_details.txt");
}

static void gang_nodes_sorted(void **state) {
  char *t = render_text("{\"unitMiB\":1024,\"nodes\":[],\"gangs\":["
                        "{\"job\":\"ns/j\",\"replicas\":3,\"placed\":0,\"nodes\":{}},"
                        "{\"job\":\"ns/k\",\"replicas\":2,\"placed\":2,"
                        "\"nodes\":{\"z\":[1],\"a\":[0,2]}}]}",
                        GS_INSPECT_TABLE);
  (void)state;
  assert_non_null(strstr(t, "\n\nGANG  REPLICAS  PLACED  NODES\n"
                            "ns/j  3         0       -\n"
                            "ns/k  2         2       a[0,2],z[1]\n"));
  free(t);
}

/* ---- amounts ------------------------------------------------------------------ */

static void amounts(void **state) {
  static const struct {
    uint64_t mib, unit;
    bool up;
    const char *want;
  } cases[] = {
      {0, 1024, true, "0"},          {16384, 1024, false, "16"},   {2048, 128, true, "16"},
      {640, 1024, true, "0.7"},      {640, 1024, false, "0.6"},    {1, 1024, true, "0.1"},
      {1, 1024, false, "0.0"},       {1023, 1024, true, "1.0"},    {1023, 1024, false, "0.9"},
      {15109, 1024, false, "14.7"},  {15109, 1024, true, "14.8"},  {1536, 1024, true, "1.5"},
      {1536, 1024, false, "1.5"},    {200, 128, true, "1.6"},      {200, 128, false, "1.5"},
      {GS_INSPECT_MIB_MAX, 1, false, "1099511627776"},
      {UINT64_MAX, 1024, true, "18014398509481984.0"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char out[GS_INSPECT_AMOUNT_MAX];
    gs_inspect_amount(cases[i].mib, cases[i].unit, cases[i].up, out);
    if (strcmp(out, cases[i].want) != 0)
      fail_msg("case %zu: %" PRIu64 " MiB in %" PRIu64 ": got %s, want %s", i, cases[i].mib,
               cases[i].unit, out, cases[i].want);
  }
}

static void unit_labels(void **state) {
  (void)state;
  assert_string_equal(gs_inspect_unit_label("1GiB"), "GiB");
  assert_string_equal(gs_inspect_unit_label("128MiB"), "128MiB");
  assert_string_equal(gs_inspect_unit_label("1"), "1");
  assert_string_equal(gs_inspect_unit_label(""), "");
  assert_string_equal(gs_inspect_unit_label("16GiB"), "16GiB");
}

/* ---- shape errors ----------------------------------------------------------- */

#define N0 "{\"unitMiB\":1024,\"nodes\":[{\"name\":\"n\",\"gpus\":["
#define G0 "{\"index\":0,\"totalMiB\":1024,\"usedMiB\":0"

static void bad_shapes(void **state) {
  static const struct {
    const char *json;
    enum gs_err err;
    const char *where, *text;
  } cases[] = {
      {"[]", GS_EPARSE, "(top level)", "expected an object, got an array"},
      {"{\"nodes\":[]}", GS_EPARSE, "unitMiB", "required key is missing"},
      {"{\"unitMiB\":\"1024\",\"nodes\":[]}", GS_EPARSE, "unitMiB",
       "expected a non-negative integer, got a string"},
      {"{\"unitMiB\":0,\"nodes\":[]}", GS_ERANGE, "unitMiB", "must be positive"},
      {"{\"unitMiB\":4194304,\"nodes\":[]}", GS_ERANGE, "unitMiB",
       "4194304 is beyond the limit 1048576"},
      {"{\"unitMiB\":1024,\"unit\":1,\"nodes\":[]}", GS_EPARSE, "unit",
       "expected a string, got an integer"},
      {"{\"unitMiB\":1024,\"pendingUnit\":5,\"nodes\":[]}", GS_EPARSE, "pendingUnit",
       "expected a string or null, got an integer"},
      {"{\"unitMiB\":1024}", GS_EPARSE, "nodes", "required key is missing"},
      {"{\"unitMiB\":1024,\"nodes\":{}}", GS_EPARSE, "nodes", "expected an array, got an object"},
      {"{\"unitMiB\":1024,\"nodes\":[7]}", GS_EPARSE, "nodes[0]",
       "expected an object, got an integer"},
      {"{\"unitMiB\":1024,\"nodes\":[{\"name\":3,\"gpus\":[]}]}", GS_EPARSE, "nodes[0].name",
       "expected a string, got an integer"},
      {"{\"unitMiB\":1024,\"nodes\":[{\"name\":\"n\"}]}", GS_EPARSE, "nodes[0].gpus",
       "required key is missing"},
      {"{\"unitMiB\":1024,\"nodes\":[{\"name\":\"n\",\"mode\":true,\"gpus\":[]}]}", GS_EPARSE,
       "nodes[0].mode", "expected a string, got a boolean"},
      {N0 "{\"index\":0,\"totalMiB\":1024,\"usedMiB\":\"2048\"}]}]}", GS_EPARSE,
       "nodes[0].gpus[0].usedMiB", "expected a non-negative integer, got a string"},
      {N0 "{\"index\":0,\"totalMiB\":1024,\"usedMiB\":-1}]}]}", GS_EPARSE,
       "nodes[0].gpus[0].usedMiB", "expected a non-negative integer, got a negative integer"},
      {N0 "{\"index\":0,\"totalMiB\":1024.5,\"usedMiB\":0}]}]}", GS_EPARSE,
       "nodes[0].gpus[0].totalMiB",
       "expected a non-negative integer, got a number with a fraction"},
      {N0 "{\"totalMiB\":1024,\"usedMiB\":0}]}]}", GS_EPARSE, "nodes[0].gpus[0].index",
       "required key is missing"},
      {N0 "{\"index\":5000,\"totalMiB\":1024,\"usedMiB\":0}]}]}", GS_ERANGE,
       "nodes[0].gpus[0].index", "5000 is beyond the limit 1023"},
      {N0 "{\"index\":0,\"totalMiB\":2199023255552,\"usedMiB\":0}]}]}", GS_ERANGE,
       "nodes[0].gpus[0].totalMiB", "2199023255552 is beyond the limit 1099511627776"},
      {N0 G0 "}," G0 "}]}]}", GS_EPARSE, "nodes[0].gpus[1].index",
       "GPU index 0 appears twice on the node"},
      {N0 G0 ",\"healthy\":\"yes\"}]}]}", GS_EPARSE, "nodes[0].gpus[0].healthy",
       "expected a boolean, got a string"},
      {N0 G0 ",\"owner\":\"ns/p\"}]}]}", GS_EPARSE, "nodes[0].gpus[0].owner",
       "expected an object or null, got a string"},
      {N0 G0 ",\"owner\":{\"namespace\":\"ns\"}}]}]}", GS_EPARSE, "nodes[0].gpus[0].owner.name",
       "required key is missing"},
      {N0 G0 ",\"pods\":{}}]}]}", GS_EPARSE, "nodes[0].gpus[0].pods",
       "expected an array, got an object"},
      {N0 G0 ",\"pods\":[{\"namespace\":null,\"name\":\"p\",\"usedMiB\":1}]}]}]}", GS_EPARSE,
       "nodes[0].gpus[0].pods[0].namespace", "expected a string, got null"},
      {N0 G0 ",\"pods\":[{\"namespace\":\"d\",\"name\":\"p\",\"usedMiB\":1},"
             "{\"namespace\":\"d\",\"name\":\"q\",\"container\":\"0\",\"usedMiB\":1}]}]}]}",
       GS_EPARSE, "nodes[0].gpus[0].pods[1].container",
       "expected a non-negative integer, got a string"},
      {N0 G0 ",\"pods\":[{\"namespace\":\"d\",\"name\":\"p\"}]}]}]}", GS_EPARSE,
       "nodes[0].gpus[0].pods[0].usedMiB", "required key is missing"},
      {"{\"unitMiB\":1024,\"nodes\":[],\"gangs\":{}}", GS_EPARSE, "gangs",
       "expected an array, got an object"},
      {"{\"unitMiB\":1024,\"nodes\":[],\"gangs\":[{\"replicas\":2,\"placed\":1}]}", GS_EPARSE,
       "gangs[0].job", "required key is missing"},
      {"{\"unitMiB\":1024,\"nodes\":[],\"gangs\":[{\"job\":\"j\",\"replicas\":\"2\","
       "\"placed\":1}]}",
       GS_EPARSE, "gangs[0].replicas", "expected a non-negative integer, got a string"},
      {"{\"unitMiB\":1024,\"nodes\":[],\"gangs\":[{\"job\":\"j\",\"replicas\":2,\"placed\":1,"
       "\"nodes\":{\"gpu-b\":\"0,3\"}}]}",
       GS_EPARSE, "gangs[0].nodes.gpu-b", "expected an array of GPU indices, got a string"},
      {"{\"unitMiB\":1024,\"nodes\":[],\"gangs\":[{\"job\":\"j\",\"replicas\":2,\"placed\":1,"
       "\"nodes\":{\"gpu-b\":[0,-3]}}]}",
       GS_EPARSE, "gangs[0].nodes.gpu-b[1]",
       "expected a non-negative integer, got a negative integer"},
      {"{\"unitMiB\":1024,\"nodes\":[],\"gangs\":[{\"job\":\"j\",\"replicas\":2,\"placed\":1,"
       "\"nodes\":[]}]}",
       GS_EPARSE, "gangs[0].nodes", "expected an object, got an array"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct gs_diag diag = {{0}, {0}};
    json_error_t jerr;
    json_t *root = json_loads(cases[i].json, 0, &jerr);
    char *text = (char *)"untouched";
    enum gs_err e;
    if (root == NULL)
      fail_msg("case %zu: test JSON: %s", i, jerr.text);
    for (size_t v = 0; v < 2; v++) {
      memset(&diag, 0, sizeof diag);
      e = gs_inspect_render(root, (enum gs_inspect_view)v, &text, &diag);
      if (e != cases[i].err || strcmp(diag.where, cases[i].where) != 0 ||
          strcmp(diag.text, cases[i].text) != 0)
        fail_msg("case %zu: got %s \"%s: %s\", want %s \"%s: %s\"", i, gs_err_name(e), diag.where,
                 diag.text, gs_err_name(cases[i].err), cases[i].where, cases[i].text);
      assert_string_equal(text, "untouched"); /* ret_text only on success */
    }
    json_decref(root);
  }
}

/* Unknown keys anywhere are ignored (the extender may grow). */
static void extra_keys_tolerated(void **state) {
  char *t = render_text("{\"apiVersion\":2,\"unit\":\"1GiB\",\"unitMiB\":1024,\"nodes\":[{"
                        "\"name\":\"n\",\"labels\":{},\"gpus\":[{\"index\":0,\"totalMiB\":1024,"
                        "\"usedMiB\":0,\"uuid\":\"GPU-1\",\"pods\":[]}]}],\"gangs\":null,"
                        "\"future\":[1,2]}",
                        GS_INSPECT_TABLE);
  (void)state;
  free(t);
}

/* ---- request helpers --------------------------------------------------------- */

static void urls(void **state) {
  static const struct {
    const char *base, *node, *want;
  } cases[] = {
      {"http://127.0.0.1:32766", NULL, "http://127.0.0.1:32766/debug/ledger"},
      {"http://127.0.0.1:32766/", NULL, "http://127.0.0.1:32766/debug/ledger"},
      {"http://127.0.0.1:32766///", "gpu-a", "http://127.0.0.1:32766/debug/ledger?node=gpu-a"},
      {"https://ext.kube-system.svc/prefix/", "a b/c?d&e=f%",
       "https://ext.kube-system.svc/prefix/debug/ledger?node=a%20b%2Fc%3Fd%26e%3Df%25"},
      {"http://h", "n.o_d~e-1", "http://h/debug/ledger?node=n.o_d~e-1"},
      {"http://h", "\xc3\xa9", "http://h/debug/ledger?node=%C3%A9"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *url = NULL;
    assert_int_equal(gs_inspect_url_new(cases[i].base, cases[i].node, &url), GS_EOK);
    assert_string_equal(url, cases[i].want);
    free(url);
  }
}

static void url_too_long(void **state) {
  char *node = malloc(GS_INSPECT_URL_MAX), *url = (char *)"untouched";
  (void)state;
  assert_non_null(node);
  memset(node, '/', GS_INSPECT_URL_MAX - 1);
  node[GS_INSPECT_URL_MAX - 1] = '\0';
  assert_int_equal(gs_inspect_url_new("http://h", node, &url), GS_ETOOBIG);
  assert_string_equal(url, "untouched");
  free(node);
}

static void url_validity(void **state) {
  (void)state;
  assert_true(gs_inspect_url_is_valid("http://127.0.0.1:32766"));
  assert_true(gs_inspect_url_is_valid("HTTPS://ext:443/"));
  assert_true(gs_inspect_url_is_valid("http://[::1]:32766"));
  assert_false(gs_inspect_url_is_valid("127.0.0.1:32766"));
  assert_false(gs_inspect_url_is_valid("ftp://h"));
  assert_false(gs_inspect_url_is_valid("http://"));
  assert_false(gs_inspect_url_is_valid("http:///x"));
  assert_false(gs_inspect_url_is_valid("http://h x"));
  assert_false(gs_inspect_url_is_valid(""));
  assert_int_equal(gs_inspect_base_len("http://h//"), 8);
  assert_int_equal(gs_inspect_base_len("http://h"), 8);
}

static void error_texts(void **state) {
  static const struct {
    const char *body, *want;
  } cases[] = {
      {"{\"error\":\"node x is unknown to gpushare\"}", "node x is unknown to gpushare"},
      {"{\"Error\":\"not leader\"}", "not leader"},
      {"{\"error\":5,\"Error\":\"fallback\"}", "fallback"},
      {"\n  \r\n  service unavailable  \r\nmore\n", "service unavailable"},
      {"<html><body>502 Bad Gateway</body></html>", "<html><body>502 Bad Gateway</body></html>"},
      {"{\"error\":\"a\\u0007b\\nc\"}", "a?b?c"},
      {"", ""},
      {"   \n\t\n", ""},
      {"{\"other\":1}", "{\"other\":1}"},
  };
  char out[GS_INSPECT_ERROR_TEXT_MAX], small[8], *big;
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gs_inspect_error_text(cases[i].body, strlen(cases[i].body), out, sizeof out);
    assert_string_equal(out, cases[i].want);
  }
  gs_inspect_error_text(NULL, 0, out, sizeof out);
  assert_string_equal(out, "");
  gs_inspect_error_text("0123456789", 10, small, sizeof small);
  assert_string_equal(small, "0123...");
  /* not NUL-terminated: only body_len bytes are read */
  gs_inspect_error_text("okXXXX", 2, out, sizeof out);
  assert_string_equal(out, "ok");
  big = malloc(100000);
  assert_non_null(big);
  memset(big, 'x', 100000);
  gs_inspect_error_text(big, 100000, out, sizeof out);
  assert_int_equal(strlen(out), sizeof out - 1);
  assert_string_equal(out + sizeof out - 4, "...");
  free(big);
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(table_cluster_1gib),
             cmocka_unit_test(claims_listed_beside_pods),
             cmocka_unit_test(details_cluster_1gib),
             cmocka_unit_test(table_pending_unit),
             cmocka_unit_test(details_pending_unit),
             cmocka_unit_test(table_empty),
             cmocka_unit_test(table_single_node),
             cmocka_unit_test(unhealthy_marker_and_footnote),
             cmocka_unit_test(pending_unit_note),
             cmocka_unit_test(columns_follow_gpu_index),
             cmocka_unit_test(unit_name_from_size),
             cmocka_unit_test(details_owner_and_missing_container),
             cmocka_unit_test(unmanaged_nodes_and_whole_gpus),
             cmocka_unit_test(gang_nodes_sorted),
             cmocka_unit_test(amounts),
             cmocka_unit_test(unit_labels),
             cmocka_unit_test(bad_shapes),
             cmocka_unit_test(extra_keys_tolerated),
             cmocka_unit_test(urls),
             cmocka_unit_test(url_too_long),
             cmocka_unit_test(url_validity),
             cmocka_unit_test(error_texts))
