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
#include "../test_files.h"
#include "../test_json.h"
#include "../test_main.h"

/* The vendored copy under test/data (reference/kube-fixtures: verbatim, see
 * its README): a fresh clone has it, no path outside the checkout is read. */
static inline FILE *open_shared(const char *rel, char *path, size_t cap) {
  snprintf(path, cap, "%s/%s", GS_TEST_DATA, rel);
  return fopen(path, "rb");
}

/* A file under test/data/api. */
static inline char *read_data(const char *name, size_t *ret_len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/api/%s", GS_TEST_DATA, name);
  return gs_test_read(fopen(path, "rb"), path, ret_len);
}

/* A file under shared/reference/kube-fixtures. */
static inline char *read_fixture(const char *name, size_t *ret_len) {
  char rel[512], path[1024];
  snprintf(rel, sizeof rel, "reference/kube-fixtures/%s", name);
  return gs_test_read(open_shared(rel, path, sizeof path), path, ret_len);
}

static inline json_t *load_data_json(const char *name) {
  char *text = read_data(name, NULL);
  json_t *v = gs_test_json(text);
  free(text);
  return v;
}

static inline json_t *load_fixture_json(const char *name) {
  char *text = read_fixture(name, NULL);
  json_t *v = gs_test_json(text);
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

/* One row of a decoder's error table: the input, the error it gives, the
 * diag's where and a needle of its text. */
struct api_err_case {
  const char *input;
  enum gs_err err;
  const char *where;
  const char *needle;
};

/* Row i of an error table against what the decoder gave. */
static inline void check_err_case(size_t i, const struct api_err_case *c, enum gs_err err,
                                  const struct gs_diag *diag) {
  if (err != c->err)
    fail_msg("case %zu %s: got %s want %s (%s: %s)", i, c->input, gs_err_name(err),
             gs_err_name(c->err), diag->where, diag->text);
  if (strcmp(diag->where, c->where) != 0)
    fail_msg("case %zu: where \"%s\" want \"%s\" (%s)", i, diag->where, c->where, diag->text);
  assert_diag(*diag, c->needle);
}

#endif
