/* gs_base64_decode: RFC 4648 §10 vectors, the leniencies (whitespace,
 * missing padding) and what is refused. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "base64.h"

#include <string.h>

static void check(const char *in, const char *want) {
  unsigned char out[256];
  size_t n = 12345;
  enum gs_err err = gs_base64_decode(in, strlen(in), out, sizeof out, &n);
  if (err != GS_EOK)
    fail_msg("\"%s\": %s", in, gs_err_name(err));
  assert_int_equal(n, strlen(want));
  assert_memory_equal(out, want, n);
  assert_true(n <= gs_base64_decoded_max(strlen(in)));
}

static void check_bad(const char *in) {
  unsigned char out[256];
  size_t n = 12345;
  if (gs_base64_decode(in, strlen(in), out, sizeof out, &n) != GS_EPARSE)
    fail_msg("\"%s\" was accepted", in);
  assert_int_equal(n, 12345); /* not written on error */
}

static void test_rfc4648_vectors(void **state) {
  (void)state;
  check("", "");
  check("Zg==", "f");
  check("Zm8=", "fo");
  check("Zm9v", "foo");
  check("Zm9vYg==", "foob");
  check("Zm9vYmE=", "fooba");
  check("Zm9vYmFy", "foobar");
}

static void test_lenient(void **state) {
  (void)state;
  check("Zg", "f");
  check("Zm8", "fo");
  check("Zm9vYmE", "fooba");
  check("Zm9v\nYmFy\n", "foobar");
  check("  Zm9v YmFy\r\n\t", "foobar");
  check("Zm9vYg=\n=", "foob");
  check("\n", "");
}

static void test_refused(void **state) {
  (void)state;
  check_bad("Z");
  check_bad("Zm9vY");
  check_bad("Zg=");
  check_bad("Zg===");
  check_bad("=Zg=");
  check_bad("====");
  check_bad("Zm9v=");
  check_bad("Zg==Zg==");
  check_bad("Zg==x");
  check_bad("Zm9-");
  check_bad("Zm9_");
  check_bad("Zm!v");
  check_bad("Zm9v\x80");
  unsigned char out[8];
  size_t n;
  assert_int_equal(gs_base64_decode("Zm\0v", 4, out, sizeof out, &n), GS_EPARSE);
}

static void test_all_bytes(void **state) {
  (void)state;
  static const char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  unsigned char raw[256], out[300];
  char enc[400];
  size_t k = 0, n;
  for (int i = 0; i < 256; i++)
    raw[i] = (unsigned char)i;
  /* A plain encoder for the round trip. */
  for (size_t i = 0; i < 256; i += 3) {
    uint32_t v = (uint32_t)raw[i] << 16;
    size_t left = 256 - i;
    if (left > 1)
      v |= (uint32_t)raw[i + 1] << 8;
    if (left > 2)
      v |= raw[i + 2];
    enc[k++] = alphabet[v >> 18 & 63];
    enc[k++] = alphabet[v >> 12 & 63];
    enc[k++] = left > 1 ? alphabet[v >> 6 & 63] : '=';
    enc[k++] = left > 2 ? alphabet[v & 63] : '=';
  }
  assert_int_equal(gs_base64_decode(enc, k, out, sizeof out, &n), GS_EOK);
  assert_int_equal(n, 256);
  assert_memory_equal(out, raw, 256);
}

static void test_output_cap(void **state) {
  (void)state;
  unsigned char out[8];
  size_t n = 99;
  assert_int_equal(gs_base64_decode("Zm9vYmFy", 8, out, 5, &n), GS_ETOOBIG);
  assert_int_equal(gs_base64_decode("Zm9vYg==", 8, out, 3, &n), GS_ETOOBIG);
  assert_int_equal(gs_base64_decode("Zm9vYmE", 7, out, 4, &n), GS_ETOOBIG);
  assert_int_equal(n, 99);
  assert_int_equal(gs_base64_decode("Zm9vYmFy", 8, out, 6, &n), GS_EOK);
  assert_int_equal(n, 6);
  assert_int_equal(gs_base64_decoded_max(0), 3);
  assert_int_equal(gs_base64_decoded_max(8), 9);
}

GS_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_rfc4648_vectors), cmocka_unit_test(test_lenient),
             cmocka_unit_test(test_refused), cmocka_unit_test(test_all_bytes),
             cmocka_unit_test(test_output_cap))
