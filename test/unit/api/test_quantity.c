/* Quantities that must be whole numbers (docs/kube-protocol.md §C.12). */
#include "api_test.h"

static enum gs_err qstr(const char *text, uint64_t *v) {
  json_t *j = json_string(text);
  enum gs_err err;
  assert_non_null(j);
  err = gs_api_quantity_whole(j, v);
  json_decref(j);
  return err;
}

static void test_whole_strings(void **state) {
  static const struct {
    const char *text;
    uint64_t want;
  } cases[] = {
      {"0", 0},
      {"4", 4},
      {"16", 16},
      {"+4", 4},
      {"-0", 0},
      {"007", 7},
      {"2Ki", 2048},
      {"1Mi", 1048576},
      {"1Gi", UINT64_C(1) << 30},
      {"1Ti", UINT64_C(1) << 40},
      {"8Pi", UINT64_C(1) << 53},
      {"1k", 1000},
      {"1M", 1000000},
      {"1G", 1000000000},
      {"1T", UINT64_C(1000000000000)},
      {"9P", UINT64_C(9000000000000000)},
      {"1e3", 1000},
      {"1E3", 1000},
      {"1e+3", 1000},
      {"100e-2", 1},
      {"1000m", 1},
      {"2000m", 2},
      {"1.5k", 1500},
      {"0.5Ki", 512},
      {"0.25Ki", 256},
      {".5Ki", 512},
      {"3.", 3},
      {"4.000", 4},
      {"0.0", 0},
      {"0m", 0},
      {"0e99999", 0},
      {"9007199254740992", UINT64_C(9007199254740992)},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint64_t v = 12345;
    enum gs_err err = qstr(cases[i].text, &v);
    if (err != GS_EOK)
      fail_msg("\"%s\": %s", cases[i].text, gs_err_name(err));
    if (v != cases[i].want)
      fail_msg("\"%s\": got %llu want %llu", cases[i].text, (unsigned long long)v,
               (unsigned long long)cases[i].want);
  }
}

static void test_bad_strings(void **state) {
  static const struct {
    const char *text;
    enum gs_err err;
    const char *needle;
  } cases[] = {
      {"", GS_EPARSE, "empty"},
      {"-1", GS_ERANGE, "negative"},
      {"-1Ki", GS_ERANGE, "negative"},
      {"1.5", GS_EPARSE, "not a whole number"},
      {"500m", GS_EPARSE, "not a whole number"},
      {"1e-3", GS_EPARSE, "not a whole number"},
      {"0.3Ki", GS_EPARSE, "not a whole number"},
      {"1.0001k", GS_EPARSE, "not a whole number"},
      {"abc", GS_EPARSE, "not a valid quantity"},
      {"4 ", GS_EPARSE, "not a valid quantity"},
      {" 4", GS_EPARSE, "not a valid quantity"},
      {"4x", GS_EPARSE, "not a valid quantity"},
      {"4Ki ", GS_EPARSE, "not a valid quantity"},
      {"4KiB", GS_EPARSE, "not a valid quantity"},
      {"4ki", GS_EPARSE, "not a valid quantity"},
      {"4K", GS_EPARSE, "not a valid quantity"},
      {"1e", GS_EPARSE, "not a valid quantity"},
      {"1e+", GS_EPARSE, "not a valid quantity"},
      {"1e3.5", GS_EPARSE, "not a valid quantity"},
      {".", GS_EPARSE, "not a valid quantity"},
      {"+", GS_EPARSE, "not a valid quantity"},
      {"--1", GS_EPARSE, "not a valid quantity"},
      {"1..2", GS_EPARSE, "not a valid quantity"},
      {"0x10", GS_EPARSE, "not a valid quantity"},
      {"Ki", GS_EPARSE, "not a valid quantity"},
      {"9007199254740993", GS_ERANGE, "too large"},
      {"18446744073709551616", GS_ERANGE, "too large"},
      {"1Ei", GS_ERANGE, "too large"},
      {"10P", GS_ERANGE, "too large"},
      {"1e17", GS_ERANGE, "too large"},
      {"1e99999999999", GS_ERANGE, "too large"},
      {"1e-99999999999", GS_EPARSE, "not a whole number"},
      {"00000000000000000000000000000000000000000000000000000000000000001", GS_EPARSE,
       "longer than"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct gs_diag diag = {{0}, {0}};
    uint64_t v = 777;
    json_t *j = json_string(cases[i].text);
    enum gs_err err = gs_api_quantity_whole_diag(j, "here", &v, &diag);
    json_decref(j);
    if (err != cases[i].err)
      fail_msg("\"%s\": got %s want %s", cases[i].text, gs_err_name(err),
               gs_err_name(cases[i].err));
    assert_int_equal(v, 777); /* untouched on error */
    assert_where(diag, "here");
    assert_diag(diag, cases[i].needle);
  }
}

static void test_json_numbers(void **state) {
  struct gs_diag diag = {{0}, {0}};
  uint64_t v = 0;
  json_t *j;
  (void)state;

  j = json_integer(16);
  assert_int_equal(gs_api_quantity_whole(j, &v), GS_EOK);
  assert_int_equal(v, 16);
  json_decref(j);

  j = json_integer(-1);
  assert_int_equal(gs_api_quantity_whole_diag(j, "q", &v, &diag), GS_ERANGE);
  assert_diag(diag, "negative");
  json_decref(j);

  j = json_integer((json_int_t)(UINT64_C(1) << 53) + 1);
  assert_int_equal(gs_api_quantity_whole(j, &v), GS_ERANGE);
  json_decref(j);

  memset(&diag, 0, sizeof diag);
  j = json_real(4.0);
  assert_int_equal(gs_api_quantity_whole_diag(j, "q", &v, &diag), GS_EPARSE);
  assert_diag(diag, "real number");
  json_decref(j);

  j = json_true();
  assert_int_equal(gs_api_quantity_whole(j, &v), GS_EPARSE);
  assert_int_equal(gs_api_quantity_whole(NULL, &v), GS_EPARSE);
  j = json_object();
  assert_int_equal(gs_api_quantity_whole(j, &v), GS_EPARSE);
  json_decref(j);
}

static void test_str_entry(void **state) {
  uint64_t v = 0;
  (void)state;
  assert_int_equal(gs_api_quantity_whole_str("2Ki", "x", &v, NULL), GS_EOK);
  assert_int_equal(v, 2048);
  assert_int_equal(gs_api_quantity_whole_str(NULL, "x", &v, NULL), GS_EPARSE);
}

/* Scaled and rounded up: CPU in milli, memory in MiB. */
static void test_scaled(void **state) {
  static const struct {
    const char *text;
    int e10, b2;
    enum gs_err err;
    uint64_t want;
  } cases[] = {
      {"100m", 3, 0, GS_EOK, 100},
      {"0.5", 3, 0, GS_EOK, 500},
      {"1e-3", 3, 0, GS_EOK, 1},
      {"1n", 3, 0, GS_EPARSE, 0}, /* no such suffix */
      {"0.0001", 3, 0, GS_EOK, 1}, /* rounded up */
      {"1Ki", 3, 0, GS_EOK, 1024000},
      {"64", 3, 0, GS_EOK, 64000},
      {"0", 3, 0, GS_EOK, 0},
      {"1Gi", 0, -20, GS_EOK, 1024},
      {"0.5Gi", 0, -20, GS_EOK, 512},
      {"1G", 0, -20, GS_EOK, 954},
      {"129e6", 0, -20, GS_EOK, 124},
      {"1", 0, -20, GS_EOK, 1},
      {"8Ei", 0, -20, GS_EOK, UINT64_C(1) << 43},
      {"16Ei", 3, 0, GS_ERANGE, 0},
      {"1e99", 3, 0, GS_ERANGE, 0},
      {"1e-99", 0, -20, GS_EOK, 1},
      {"-1", 3, 0, GS_ERANGE, 0},
      {"1234567890123456789", 3, 0, GS_EPARSE, 0},
      {"x", 3, 0, GS_EPARSE, 0},
      {"", 3, 0, GS_EPARSE, 0},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_t *j = json_string(cases[i].text);
    uint64_t v = 0;
    enum gs_err err = gs_api_quantity_scaled_diag(j, cases[i].e10, cases[i].b2, "q", &v, NULL);
    json_decref(j);
    if (err != cases[i].err || (err == GS_EOK && v != cases[i].want))
      fail_msg("case %zu \"%s\": %s %llu", i, cases[i].text, gs_err_name(err),
               (unsigned long long)v);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_whole_strings),
      cmocka_unit_test(test_bad_strings),
      cmocka_unit_test(test_json_numbers),
      cmocka_unit_test(test_str_entry),
      cmocka_unit_test(test_scaled),
  };
  return cmocka_run_group_tests_name("api_quantity", tests, NULL, NULL);
}
