/* String map: put/get/del against a reference array, through growth and
 * many deletions (backward shift must keep every probe run reachable). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "strmap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NKEYS 20000

static void test_basic(void **state) {
  struct gs_strmap *m = gs_strmap_new();
  int a = 1, b = 2;
  (void)state;
  assert_non_null(m);
  assert_null(gs_strmap_get(m, "x"));
  assert_int_equal(gs_strmap_put(m, "x", &a), GS_EOK);
  assert_int_equal(gs_strmap_put(m, "x", &b), GS_EEXISTS);
  assert_ptr_equal(gs_strmap_get(m, "x"), &a);
  assert_int_equal(gs_strmap_count(m), 1);
  assert_null(gs_strmap_del(m, "y"));
  assert_ptr_equal(gs_strmap_del(m, "x"), &a);
  assert_null(gs_strmap_get(m, "x"));
  assert_int_equal(gs_strmap_count(m), 0);
  gs_strmap_free(m);
  gs_strmap_free(NULL);
}

static void test_many(void **state) {
  static char keys[NKEYS][40];
  static bool present[NKEYS];
  struct gs_strmap *m = gs_strmap_new();
  size_t live = 0, cursor = 0, seen = 0;
  const char *k;
  void *v;
  uint32_t rng = 12345;
  (void)state;
  assert_non_null(m);
  for (int i = 0; i < NKEYS; i++)
    snprintf(keys[i], sizeof keys[i], "8f0c1e2a-0000-4000-8000-%012d", i);
  /* Random puts and deletes; check everything against present[]. */
  for (int round = 0; round < 4 * NKEYS; round++) {
    int i;
    rng = rng * 1103515245u + 12345u;
    i = (int)((rng >> 8) % NKEYS);
    if (present[i]) {
      assert_ptr_equal(gs_strmap_del(m, keys[i]), keys[i]);
      present[i] = false;
      live--;
    } else {
      assert_int_equal(gs_strmap_put(m, keys[i], keys[i]), GS_EOK);
      present[i] = true;
      live++;
    }
  }
  assert_int_equal(gs_strmap_count(m), live);
  for (int i = 0; i < NKEYS; i++) {
    if (present[i])
      assert_ptr_equal(gs_strmap_get(m, keys[i]), keys[i]);
    else
      assert_null(gs_strmap_get(m, keys[i]));
  }
  while (gs_strmap_next(m, &cursor, &k, &v)) {
    assert_ptr_equal(k, v);
    seen++;
  }
  assert_int_equal(seen, live);
  assert_int_equal(gs_strmap_reserve(m, 100000), GS_EOK);
  assert_int_equal(gs_strmap_reserve(m, (size_t)GS_STRMAP_MAX_ENTRIES + 1), GS_ETOOBIG);
  for (int i = 0; i < NKEYS; i++)
    if (present[i])
      assert_ptr_equal(gs_strmap_get(m, keys[i]), keys[i]);
  gs_strmap_free(m);
}

/* The split lookup (hash, prefetch, get_hashed) answers as get does. */
static void test_hashed(void **state) {
  static char keys[1000][16];
  struct gs_strmap *m = gs_strmap_new();
  (void)state;
  assert_non_null(m);
  for (int i = 0; i < 1000; i++) {
    snprintf(keys[i], sizeof keys[i], "node-%05d", i);
    if (i % 2 == 0)
      assert_int_equal(gs_strmap_put(m, keys[i], keys[i]), GS_EOK);
  }
  for (int i = 0; i < 1000; i++) {
    uint64_t h = gs_strmap_hash(keys[i]);
    gs_strmap_prefetch(m, h);
    assert_ptr_equal(gs_strmap_get_hashed(m, keys[i], h), gs_strmap_get(m, keys[i]));
    assert_ptr_equal(gs_strmap_get_hashed(m, keys[i], h), i % 2 == 0 ? keys[i] : NULL);
  }
  gs_strmap_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_basic),
      cmocka_unit_test(test_many),
      cmocka_unit_test(test_hashed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
