/* String map: put/get/del against a reference array, through growth and
 * many deletions (backward shift must keep every probe run reachable). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "strmap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NKEYS 20000

static uint64_t hash_of(const char *key) {
  size_t len;
  return gs_strmap_hash(key, &len);
}

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

/* The split lookup (hash, prefetches, get_hashed) answers as get does. */
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
    size_t len;
    uint64_t h = gs_strmap_hash(keys[i], &len);
    assert_int_equal(len, strlen(keys[i]));
    gs_strmap_prefetch(m, h);
    gs_strmap_prefetch_entry(m, h);
    assert_ptr_equal(gs_strmap_get_hashed(m, keys[i], len, h), gs_strmap_get(m, keys[i]));
    assert_ptr_equal(gs_strmap_get_hashed(m, keys[i], len, h), i % 2 == 0 ? keys[i] : NULL);
  }
  gs_strmap_free(m);
}

/* Keys of every length 0..40 (the hash reads 8 bytes a step, then a
 * partial tail: every tail length must be covered) and keys that differ
 * in one byte only, at every position: all distinct entries. */
static void test_lengths(void **state) {
  static char keys[41][41];
  static char flipped[41][40][41];
  struct gs_strmap *m = gs_strmap_new();
  (void)state;
  assert_non_null(m);
  for (int len = 0; len <= 40; len++) {
    for (int i = 0; i < len; i++)
      keys[len][i] = (char)('a' + i % 26);
    keys[len][len] = '\0';
    assert_int_equal(gs_strmap_put(m, keys[len], keys[len]), GS_EOK);
    for (int pos = 0; pos < len; pos++) {
      memcpy(flipped[len][pos], keys[len], (size_t)len + 1);
      flipped[len][pos][pos] = 'Z';
      assert_int_equal(gs_strmap_put(m, flipped[len][pos], flipped[len][pos]), GS_EOK);
    }
  }
  for (int len = 0; len <= 40; len++) {
    char copy[41];
    memcpy(copy, keys[len], (size_t)len + 1); /* found by content, not address */
    assert_ptr_equal(gs_strmap_get(m, copy), keys[len]);
    assert_ptr_equal(gs_strmap_get_hashed(m, copy, (size_t)len, hash_of(copy)), keys[len]);
    for (int pos = 0; pos < len; pos++) {
      assert_ptr_equal(gs_strmap_get(m, flipped[len][pos]), flipped[len][pos]);
      assert_int_not_equal(hash_of(flipped[len][pos]), hash_of(keys[len]));
    }
    /* One byte longer or shorter than a key: absent. */
    if (len < 40) {
      copy[len] = 'Q';
      copy[len + 1] = '\0';
      assert_null(gs_strmap_get(m, copy));
    }
  }
  gs_strmap_free(m);
}

/* The slot index is the hash's low bits: keys sharing a long prefix (UIDs)
 * or a long suffix, differing in one byte, must still spread over them. */
static void test_low_bits_spread(void **state) {
  char key[40];
  (void)state;
  for (int where = 0; where < 2; where++) {
    static bool used[1024];
    int distinct = 0;
    memset(used, 0, sizeof used);
    for (int v = 0; v < 256; v++) {
      uint64_t h;
      snprintf(key, sizeof key, "8f0c1e2a-0000-4000-8000-00000000000x");
      key[where == 0 ? strlen(key) - 1 : 0] = (char)(v == 0 ? 1 : v);
      h = hash_of(key) & 1023;
      distinct += !used[h];
      used[h] = true;
    }
    /* 256 random values in 1,024 slots: about 226 distinct. */
    assert_true(distinct >= 200);
  }
}

/* The key compare against memcmp, the obvious way: every length 0..40,
 * equal and with one byte changed at every position, on buffers allocated
 * to exactly len bytes (no terminator: ASan catches a read past them). */
static void test_key_equal(void **state) {
  (void)state;
  for (size_t len = 0; len <= 40; len++) {
    char *a = malloc(len ? len : 1), *b = malloc(len ? len : 1);
    assert_non_null(a);
    assert_non_null(b);
    for (size_t i = 0; i < len; i++)
      a[i] = b[i] = (char)('A' + i % 23);
    assert_true(gs__strmap_key_equal(a, b, len));
    for (size_t pos = 0; pos < len; pos++) {
      b[pos] ^= 0x20;
      assert_int_equal(gs__strmap_key_equal(a, b, len), memcmp(a, b, len) == 0);
      assert_false(gs__strmap_key_equal(a, b, len));
      b[pos] ^= 0x20;
    }
    free(a);
    free(b);
  }
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_basic),
             cmocka_unit_test(test_many),
             cmocka_unit_test(test_hashed),
             cmocka_unit_test(test_lengths),
             cmocka_unit_test(test_low_bits_spread),
             cmocka_unit_test(test_key_equal))
