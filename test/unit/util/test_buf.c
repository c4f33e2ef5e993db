/* util's one growable buffer: bound, sticky failure, take, printf past the
 * small stack buffer, allocation failure through the hook. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "alloc.h"
#include "buf.h"

#include <stdlib.h>
#include <string.h>

static void test_appends_and_takes(void **state) {
  struct gs_buf b = {0};
  char *t;
  (void)state;
  assert_int_equal(gs_buf_str(&b, "ab"), GS_EOK);
  assert_int_equal(gs_buf_add(&b, "cdef", 2), GS_EOK);
  assert_int_equal(gs_buf_printf(&b, "-%d-", 42), GS_EOK);
  assert_string_equal(b.p, "abcd-42-");
  assert_int_equal(b.len, 8);
  t = gs_buf_take(&b);
  assert_string_equal(t, "abcd-42-");
  assert_null(b.p);
  free(t);
  t = gs_buf_take(&b); /* nothing written: "" */
  assert_string_equal(t, "");
  free(t);
}

static void test_bound_and_sticky_failure(void **state) {
  struct gs_buf b = {.max = 4};
  (void)state;
  assert_int_equal(gs_buf_str(&b, "abcd"), GS_EOK);
  assert_int_equal(gs_buf_str(&b, "e"), GS_ETOOBIG);
  assert_string_equal(b.p, "abcd"); /* unchanged by the refused append */
  assert_int_equal(gs_buf_str(&b, ""), GS_ETOOBIG); /* sticks */
  assert_null(gs_buf_take(&b));
  assert_int_equal(b.max, 4); /* kept */
  assert_int_equal(gs_buf_str(&b, "xy"), GS_EOK);
  gs_buf_clear(&b);
  assert_string_equal(b.p, "");
  assert_int_equal(gs_buf_str(&b, "wxyz"), GS_EOK);
  gs_buf_release(&b);
}

static void test_long_printf_and_growth(void **state) {
  struct gs_buf b = {0};
  char big[3000];
  (void)state;
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  for (int i = 0; i < 10; i++)
    assert_int_equal(gs_buf_printf(&b, "%s%d", big, i), GS_EOK);
  assert_int_equal(b.len, 10 * (sizeof big - 1 + 1));
  assert_int_equal(b.p[b.len], '\0');
  assert_int_equal(b.p[sizeof big - 1], '0');
  gs_buf_release(&b);
}

static void test_out_of_memory_sticks(void **state) {
  struct gs_buf b = {0};
  (void)state;
  gs_alloc_fail_after(1);
  assert_int_equal(gs_buf_str(&b, "a"), GS_ENOMEM);
  gs_alloc_fail_after(0);
  assert_int_equal(gs_buf_str(&b, "b"), GS_ENOMEM); /* sticks until cleared */
  assert_null(gs_buf_take(&b));
  assert_int_equal(gs_buf_str(&b, "c"), GS_EOK);
  assert_string_equal(b.p, "c");
  gs_buf_release(&b);
}

GS_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_appends_and_takes),
             cmocka_unit_test(test_bound_and_sticky_failure),
             cmocka_unit_test(test_long_printf_and_growth),
             cmocka_unit_test(test_out_of_memory_sticks))
