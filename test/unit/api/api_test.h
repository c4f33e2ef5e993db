/* Shared helpers of the api unit tests (header-only, static). */
#ifndef GS_API_TEST_H
#define GS_API_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api.h"

/* The vendored copy under test/data (reference/kube-fixtures: verbatim, see
 * its README): a fresh clone has it, no path outside the checkout is read. */
static inline FILE *open_shared(const char *rel, char *path, size_t cap) {
  snprintf(path, cap, "%s/%s", GS_TEST_DATA, rel);
  return fopen(path, "rb");
}

/* Reads a whole file (malloc'd, NUL-terminated); fails the test if absent. */
static inline char *read_file_or_fail(FILE *f, const char *path, size_t *ret_len) {
  char *buf;
  long len;
  if (f == NULL)
    fail_msg("cannot open %s", path);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  len = ftell(f);
  assert_true(len >= 0);
  rewind(f);
  buf = malloc((size_t)len + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
  buf[len] = '\0';
  fclose(f);
  if (ret_len != NULL)
    *ret_len = (size_t)len;
  return buf;
}

/* A file under test/data/api. */
static inline char *read_data(const char *name, size_t *ret_len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/api/%s", GS_TEST_DATA, name);
  return read_file_or_fail(fopen(path, "rb"), path, ret_len);
}

/* A file under shared/reference/kube-fixtures. */
static inline char *read_fixture(const char *name, size_t *ret_len) {
  char rel[512], path[1024];
  snprintf(rel, sizeof rel, "reference/kube-fixtures/%s", name);
  return read_file_or_fail(open_shared(rel, path, sizeof path), path, ret_len);
}

static inline json_t *parse_or_fail(const char *text) {
  json_error_t jerr;
  json_t *v = json_loads(text, 0, &jerr);
  if (v == NULL)
    fail_msg("bad test JSON: %s: %s", jerr.text, text);
  return v;
}

static inline json_t *load_data_json(const char *name) {
  char *text = read_data(name, NULL);
  json_t *v = parse_or_fail(text);
  free(text);
  return v;
}

static inline json_t *load_fixture_json(const char *name) {
  char *text = read_fixture(name, NULL);
  json_t *v = parse_or_fail(text);
  free(text);
  return v;
}

/* Asserts that a malloc'd dump equals want, then frees it. */
#define assert_dump(got, want)                                                               \
  do {                                                                                       \
    char *got_ = (got);                                                                      \
    assert_non_null(got_);                                                                   \
    assert_string_equal(got_, (want));                                                       \
    free(got_);                                                                              \
  } while (0)

/* Asserts that diag's text contains needle. */
#define assert_diag(diag, needle)                                                            \
  do {                                                                                       \
    if (strstr((diag).text, (needle)) == NULL)                                               \
      fail_msg("diag \"%s: %s\" lacks \"%s\"", (diag).where, (diag).text, (needle));         \
  } while (0)

#define assert_where(diag, want) assert_string_equal((diag).where, (want))

#endif
