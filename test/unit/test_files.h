/* Whole-file reads and writes of the cmocka unit tests (header-only,
 * static): a file that cannot be read or written fails the test. */
#ifndef GS_TEST_FILES_H
#define GS_TEST_FILES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

/* Reads the open file f (opened from path; NULL fails the test naming path)
 * to its end and closes it: malloc'd, NUL-terminated; its length in
 * *ret_len unless ret_len is NULL. */
static inline char *gs_test_read(FILE *f, const char *path, size_t *ret_len) {
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

/* The whole file at path, as gs_test_read. */
static inline char *gs_test_slurp(const char *path, size_t *ret_len) {
  return gs_test_read(fopen(path, "rb"), path, ret_len);
}

/* Makes an empty file /tmp/<prefix>XXXXXX (mkstemp) and puts its name in
 * path (cap bytes). */
static inline void gs_test_temp_file(char *path, size_t cap, const char *prefix) {
  int fd;
  assert_true((size_t)snprintf(path, cap, "/tmp/%sXXXXXX", prefix) < cap);
  fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
}

/* Writes text to path, fopen mode "w" (replace) or "a" (append). */
static inline void gs_test_write(const char *path, const char *text, const char *mode) {
  FILE *f = fopen(path, mode);
  if (f == NULL)
    fail_msg("cannot open %s", path);
  assert_true(fputs(text, f) >= 0);
  assert_int_equal(fclose(f), 0);
}

#endif
