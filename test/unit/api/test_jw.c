/* util's one JSON writer (jw.h) writes what jansson's compact dump writes
 * for the same values: strings with every escape and invalid UTF-8 (replaced
 * by '?' as gs__api_text replaces it), integers at both ends, and the
 * sticky failure of a bounded buffer. */
#include "api_test.h"

#include "api_internal.h"
#include "jw.h"

#include <gpushare/alloc.h>

static void same_string(const char *text) {
  struct gs_buf b = {0};
  json_t *v = gs__api_text(text);
  char *want, *got;
  assert_non_null(v);
  want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
  gs_jw_str(&b, text);
  got = gs_buf_take(&b);
  assert_non_null(want);
  assert_non_null(got);
  assert_string_equal(got, want);
  free(want);
  gs_free(got);
  json_decref(v);
}

static void test_strings_match_jansson(void **state) {
  static const char *const texts[] = {
      "", "plain node-name.1", "quote \" backslash \\ slash /", "\b\f\n\r\t",
      "\x01\x1f\x7f", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "cut \xc3", "bad \xff\xfe end",
      "overlong \xc0\xaf", "surrogate \xed\xa0\x80", "ok %s %d"};
  (void)state;
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
    same_string(texts[i]);
}

static void test_integers_and_keys(void **state) {
  static const int64_t ints[] = {0, 1, -1, 42, INT64_MAX, INT64_MIN + 1, -9007199254740993};
  struct gs_buf b = {0};
  char *got;
  (void)state;
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    json_t *v = json_integer(ints[i]);
    char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    gs_jw_int(&b, ints[i]);
    got = gs_buf_take(&b);
    assert_string_equal(got, want);
    free(want);
    gs_free(got);
    json_decref(v);
  }
  gs_jw_lit(&b, "{");
  gs_jw_key_uint(&b, 7);
  gs_jw_uint(&b, UINT64_MAX);
  gs_jw_lit(&b, "}");
  got = gs_buf_take(&b);
  assert_string_equal(got, "{\"7\":18446744073709551615}");
  gs_free(got);
}

/* A bounded buffer: past the bound nothing more is written and the
 * document is refused whole (never a truncated one). */
static void test_bound_is_sticky(void **state) {
  struct gs_buf b = {.max = 8};
  (void)state;
  gs_jw_str(&b, "abc");
  gs_jw_str(&b, "defgh");
  assert_int_equal(b.failed, GS_ETOOBIG);
  gs_jw_lit(&b, "}");
  assert_null(gs_buf_take(&b));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_strings_match_jansson),
      cmocka_unit_test(test_integers_and_keys),
      cmocka_unit_test(test_bound_is_sticky),
  };
  return cmocka_run_group_tests_name("jw", tests, NULL, NULL);
}
