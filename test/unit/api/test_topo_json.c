/* The topology annotation {"links":[[...]]} (docs/contract.md §7). */
#include "api_test.h"

static struct gs_topo topo, topo2;

static void test_decode_encode(void **state) {
  static const char text[] =
      "{\"links\":[[\"X\",\"NV1\",\"PIX\",\"SYS\"],[\"NV1\",\"X\",\"PXB\",\"NODE\"],"
      "[\"PIX\",\"PXB\",\"X\",\"NV63\"],[\"SYS\",\"NODE\",\"NV63\",\"X\"]]}";
  struct gs_diag diag = {{0}, {0}};
  (void)state;
  assert_int_equal(gs_api_topo_decode(text, &topo, &diag), GS_EOK);
  assert_int_equal(topo.n, 4);
  assert_int_equal(topo.link[0], GS_LINK_SELF);
  assert_int_equal(topo.link[1], GS_LINK_NV);
  assert_int_equal(topo.nvlinks[1], 1);
  assert_int_equal(topo.link[2], GS_LINK_PIX);
  assert_int_equal(topo.link[3], GS_LINK_SYS);
  assert_int_equal(topo.link[1 * 4 + 2], GS_LINK_PXB);
  assert_int_equal(topo.link[1 * 4 + 3], GS_LINK_NODE);
  assert_int_equal(topo.nvlinks[2 * 4 + 3], 63);
  assert_dump(gs_api_topo_encode(&topo), text);
}

static void test_soc_and_phb(void **state) {
  (void)state;
  assert_int_equal(gs_api_topo_decode("{\"links\":[[\"X\",\"SOC\",\"PHB\"],"
                                      "[\"SYS\",\"X\",\"SYS\"],[\"PHB\",\"SOC\",\"X\"]],"
                                      "\"extra\":1}",
                                      &topo, NULL),
                   GS_EOK);
  assert_int_equal(topo.link[1], GS_LINK_SYS);
  assert_int_equal(topo.link[2], GS_LINK_PHB);
  /* SOC is written back as SYS */
  assert_dump(gs_api_topo_encode(&topo), "{\"links\":[[\"X\",\"SYS\",\"PHB\"],"
                                         "[\"SYS\",\"X\",\"SYS\"],[\"PHB\",\"SYS\",\"X\"]]}");
  /* NV<k> up to 255, as gpushare-topo prints it (found by fuzz_topo_json) */
  assert_int_equal(gs_api_topo_decode("{\"links\":[[\"X\",\"NV255\"],[\"NV255\",\"X\"]]}",
                                      &topo, NULL),
                   GS_EOK);
  assert_int_equal(topo.nvlinks[1], 255);
  assert_dump(gs_api_topo_encode(&topo), "{\"links\":[[\"X\",\"NV255\"],[\"NV255\",\"X\"]]}");
  assert_int_equal(gs_api_topo_decode("{\"links\":[[\"X\"]]}", &topo, NULL), GS_EOK);
  assert_int_equal(topo.n, 1);
  assert_dump(gs_api_topo_encode(&topo), "{\"links\":[[\"X\"]]}");
}

static void test_errors(void **state) {
  static const struct api_err_case cases[] = {
      {"", GS_EPARSE, "", "invalid JSON"},
      {"[]", GS_EPARSE, "", "must be a JSON object"},
      {"{}", GS_EPARSE, "links", "missing"},
      {"{\"links\":{}}", GS_EPARSE, "links", "not an array"},
      {"{\"links\":[]}", GS_EPARSE, "links", "no GPUs"},
      {"{\"links\":[[\"X\",\"NV1\"]]}", GS_EPARSE, "links[0]", "square"},
      {"{\"links\":[[\"X\",\"NV1\"],[\"NV1\"]]}", GS_EPARSE, "links[1]", "square"},
      {"{\"links\":[[\"X\",\"NV1\"],\"NV1\"]}", GS_EPARSE, "links[1]", "square"},
      {"{\"links\":[[\"X\",1],[\"NV1\",\"X\"]]}", GS_EPARSE, "links[0][1]", "string"},
      {"{\"links\":[[\"X\",\"NV0\"],[\"NV1\",\"X\"]]}", GS_EPARSE, "links[0][1]", "NV0"},
      {"{\"links\":[[\"X\",\"NV256\"],[\"NV1\",\"X\"]]}", GS_EPARSE, "links[0][1]", "NV256"},
      /* found by fuzz_topo_json: cells fine, matrix asymmetric */
      {"{\"links\":[[\"X\",\"NV2\"],[\"NV1\",\"X\"]]}", GS_EPARSE, "links", "symmetric"},
      {"{\"links\":[[\"X\",\"PIX\"],[\"SYS\",\"X\"]]}", GS_EPARSE, "links", "symmetric"},
      {"{\"links\":[[\"X\",\"NV01\"],[\"NV1\",\"X\"]]}", GS_EPARSE, "links[0][1]", "NV01"},
      {"{\"links\":[[\"X\",\"NV\"],[\"NV1\",\"X\"]]}", GS_EPARSE, "links[0][1]", "unknown"},
      {"{\"links\":[[\"X\",\"nv1\"],[\"NV1\",\"X\"]]}", GS_EPARSE, "links[0][1]", "unknown"},
      {"{\"links\":[[\"X\",\"X\"],[\"NV1\",\"X\"]]}", GS_EPARSE, "links[0][1]",
       "diagonal only"},
      {"{\"links\":[[\"SYS\",\"NV1\"],[\"NV1\",\"X\"]]}", GS_EPARSE, "links[0][0]",
       "diagonal must be"},
      {"{\"links\":[[\"X\",\"CPU Affinity\"],[\"NV1\",\"X\"]]}", GS_EPARSE, "links[0][1]",
       "unknown"},
      {"{\"links\":[[\"X\"]],\"links\":[[\"X\"]]}", GS_EPARSE, "", "duplicate"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct gs_diag diag = {{0}, {0}};
    enum gs_err err;
    memset(&topo, 0xAB, sizeof topo);
    err = gs_api_topo_decode(cases[i].input, &topo, &diag);
    check_err_case(i, &cases[i], err, &diag);
    assert_int_equal(topo.n, 0xABABABABu); /* untouched on error */
  }
  assert_int_equal(gs_api_topo_decode(NULL, &topo, NULL), GS_EPARSE);
}

static void test_size_cap(void **state) {
  json_t *links = json_array(), *doc;
  char *text;
  (void)state;
  for (int i = 0; i < GS_MAX_GPUS + 1; i++) {
    json_t *row = json_array();
    for (int j = 0; j < GS_MAX_GPUS + 1; j++)
      json_array_append_new(row, json_string(i == j ? "X" : "SYS"));
    json_array_append_new(links, row);
  }
  doc = json_pack("{s:o}", "links", links);
  text = json_dumps(doc, JSON_COMPACT);
  assert_int_equal(gs_api_topo_decode(text, &topo, NULL), GS_ETOOBIG);
  free(text);
  /* exactly GS_MAX_GPUS fits and round-trips */
  json_array_remove(links, GS_MAX_GPUS);
  for (int i = 0; i < GS_MAX_GPUS; i++)
    json_array_remove(json_array_get(links, (size_t)i), GS_MAX_GPUS);
  text = json_dumps(doc, JSON_COMPACT);
  assert_int_equal(gs_api_topo_decode(text, &topo, NULL), GS_EOK);
  assert_int_equal(topo.n, GS_MAX_GPUS);
  assert_dump(gs_api_topo_encode(&topo), text);
  free(text);
  json_decref(doc);
}

static void test_encode_invalid(void **state) {
  (void)state;
  assert_null(gs_api_topo_encode(NULL));
  memset(&topo2, 0, sizeof topo2);
  assert_null(gs_api_topo_encode(&topo2)); /* n == 0 */
  topo2.n = 2;
  topo2.link[0] = topo2.link[3] = GS_LINK_SELF;
  topo2.link[1] = topo2.link[2] = GS_LINK_UNKNOWN;
  assert_null(gs_api_topo_encode(&topo2));
  topo2.link[1] = topo2.link[2] = GS_LINK_NV; /* NV without a width */
  assert_null(gs_api_topo_encode(&topo2));
  topo2.nvlinks[1] = topo2.nvlinks[2] = 4;
  assert_dump(gs_api_topo_encode(&topo2), "{\"links\":[[\"X\",\"NV4\"],[\"NV4\",\"X\"]]}");
  topo2.link[3] = GS_LINK_PIX; /* diagonal not X */
  assert_null(gs_api_topo_encode(&topo2));
  topo2.n = GS_MAX_GPUS + 1;
  assert_null(gs_api_topo_encode(&topo2));
}

GS_TEST_MAIN_NAMED("api_topo_json", NULL, NULL, cmocka_unit_test(test_decode_encode),
                   cmocka_unit_test(test_soc_and_phb), cmocka_unit_test(test_errors),
                   cmocka_unit_test(test_size_cap), cmocka_unit_test(test_encode_invalid))
