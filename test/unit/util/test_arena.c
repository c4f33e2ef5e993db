/* The bump allocator and its hook pair (arena.h). Under AddressSanitizer
 * (tools/dev.sh test) a block used after reset, or freed with free(), is a
 * reported error, which is half of what these tests check. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "alloc.h"
#include "arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void test_blocks_are_aligned_distinct_and_owned(void **state) {
  struct gs_arena *a = gs_arena_new(4096);
  unsigned char *p[200];
  (void)state;
  assert_non_null(a);
  for (size_t i = 0; i < 200; i++) {
    size_t n = 1 + i * 7 % 97;
    p[i] = gs_arena_alloc(a, n);
    assert_non_null(p[i]);
    assert_int_equal((uintptr_t)p[i] % alignof(max_align_t), 0);
    memset(p[i], (int)i, n);
    assert_true(gs_arena_owns(a, p[i]));
    assert_true(gs_arena_owns(a, p[i] + n - 1));
  }
  /* Nothing was overwritten by a later block (several chunks by now). */
  for (size_t i = 0; i < 200; i++)
    for (size_t j = 0; j < 1 + i * 7 % 97; j++)
      assert_int_equal(p[i][j], (unsigned char)i);
  assert_true(gs_arena_held(a) > 4096);
  {
    char *m = malloc(16);
    assert_false(gs_arena_owns(a, m));
    free(m);
  }
  gs_arena_free(a);
}

static void test_large_block_keeps_the_chunk_being_filled(void **state) {
  struct gs_arena *a = gs_arena_new(4096);
  unsigned char *small1, *big, *small2;
  (void)state;
  small1 = gs_arena_alloc(a, 16);
  big = gs_arena_alloc(a, 100000); /* > chunk/4: a chunk of its own */
  small2 = gs_arena_alloc(a, 16);
  assert_non_null(big);
  memset(big, 0xab, 100000);
  assert_true(gs_arena_owns(a, big + 99999));
  /* The small ones share the first chunk, one after the other. */
  assert_ptr_equal(small2, small1 + 16);
  assert_int_equal(gs_arena_held(a), 4096 + 100000 + (16 - 100000 % 16) % 16);
  gs_arena_free(a);
}

static void test_reset_forgets_and_merges(void **state) {
  struct gs_arena *a = gs_arena_new(4096);
  void *first;
  size_t held;
  (void)state;
  for (int i = 0; i < 100; i++)
    assert_non_null(gs_arena_alloc(a, 512));
  first = gs_arena_alloc(a, 8);
  held = gs_arena_held(a);
  assert_int_equal(gs_arena_used(a), 100 * 512 + 16);
  gs_arena_reset(a);
  assert_int_equal(gs_arena_used(a), 0);
  assert_false(gs_arena_owns(a, first));
  /* One chunk as large as all before: the same fill again adds none. */
  assert_true(gs_arena_held(a) >= held);
  held = gs_arena_held(a);
  for (int i = 0; i < 100; i++)
    assert_non_null(gs_arena_alloc(a, 512));
  assert_int_equal(gs_arena_held(a), held);
  gs_arena_reset(a);
  assert_int_equal(gs_arena_held(a), held);
  gs_arena_free(a);
}

static void test_hooks(void **state) {
  struct gs_arena *a = gs_arena_new(4096);
  void *outside, *in, *paused;
  (void)state;
  /* No arena entered: plain malloc and free (ASan checks the pairing). */
  outside = gs_arena_hook_malloc(32);
  assert_false(gs_arena_owns(a, outside));
  gs_arena_hook_free(outside);

  gs_arena_enter(a);
  in = gs_arena_hook_malloc(32);
  assert_true(gs_arena_owns(a, in));
  gs_arena_pause();
  paused = gs_arena_hook_malloc(32);
  assert_false(gs_arena_owns(a, paused));
  gs_arena_hook_free(in);     /* the arena's: nothing to do */
  gs_arena_hook_free(paused); /* malloc's: freed (else a leak under ASan) */
  gs_arena_hook_free(NULL);
  gs_arena_leave();
  assert_non_null(outside = gs_arena_hook_malloc(8)); /* malloc again */
  assert_false(gs_arena_owns(a, outside));
  gs_arena_hook_free(outside);
  gs_arena_reset(a);
  gs_arena_free(a);
}

/* Entering NULL (no arena: out of memory at the list's start) is plain
 * malloc. */
static void test_enter_null(void **state) {
  void *p;
  (void)state;
  gs_arena_enter(NULL);
  p = gs_arena_hook_malloc(24);
  assert_non_null(p);
  gs_arena_pause();
  gs_arena_hook_free(p);
  gs_arena_leave();
}

static void test_out_of_memory(void **state) {
  struct gs_arena *a;
  (void)state;
  gs_alloc_fail_after(1);
  assert_null(gs_arena_new(4096));
  a = gs_arena_new(4096);
  assert_non_null(a);
  gs_alloc_fail_after(1); /* the first chunk */
  assert_null(gs_arena_alloc(a, 10));
  assert_non_null(gs_arena_alloc(a, 10)); /* recovers */
  gs_alloc_fail_after(1); /* a large block's own chunk */
  assert_null(gs_arena_alloc(a, 1u << 20));
  assert_null(gs_arena_alloc(a, SIZE_MAX - 8));
  gs_alloc_fail_after(0);
  gs_arena_free(a);
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_blocks_are_aligned_distinct_and_owned),
             cmocka_unit_test(test_large_block_keeps_the_chunk_being_filled),
             cmocka_unit_test(test_reset_forgets_and_merges),
             cmocka_unit_test(test_hooks),
             cmocka_unit_test(test_enter_null),
             cmocka_unit_test(test_out_of_memory))
