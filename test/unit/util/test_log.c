/* The log line formats (log.h): logfmt for the extender, klog's text header
 * inside kube-scheduler (gpushare-scheduler), one line each, whole. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Runs one gs_log with stderr sent to a file; returns what was written. */
static char *capture(enum gs_log_style style, enum gs_log_lvl level) {
  static char out[4096];
  FILE *f = tmpfile();
  int saved = dup(2);
  size_t n;
  assert_non_null(f);
  fflush(stderr);
  dup2(fileno(f), 2);
  gs_log_set_style(style);
  gs_log(level, "bound pod", "pod=%s node=%s", "ns/p", "n1");
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(f);
  n = fread(out, 1, sizeof out - 1, f);
  out[n] = '\0';
  fclose(f);
  gs_log_set_style(GS_LOG_LOGFMT);
  return out;
}

static void test_styles(void **state) {
  const char *line;
  char pid[32];
  (void)state;
  line = capture(GS_LOG_LOGFMT, GS_LVL_WARN);
  assert_int_equal(strncmp(line, "ts=", 3), 0);
  assert_non_null(strstr(line, "Z level=warn msg=\"bound pod\" pod=ns/p node=n1\n"));
  line = capture(GS_LOG_KLOG, GS_LVL_WARN);
  /* W1125 08:03:40.752123   12345 gpushare] "bound pod" pod=ns/p node=n1 */
  assert_int_equal(line[0], 'W');
  assert_int_equal(line[5], ' ');
  assert_int_equal(line[8], ':');
  assert_int_equal(line[14], '.');
  snprintf(pid, sizeof pid, " %ld gpushare] ", (long)getpid());
  assert_non_null(strstr(line, pid));
  assert_non_null(strstr(line, "gpushare] \"bound pod\" pod=ns/p node=n1\n"));
  assert_int_equal(capture(GS_LOG_KLOG, GS_LVL_ERROR)[0], 'E');
  assert_int_equal(capture(GS_LOG_KLOG, GS_LVL_INFO)[0], 'I');
  gs_log_set_level(GS_LVL_WARN);
  assert_string_equal(capture(GS_LOG_KLOG, GS_LVL_INFO), ""); /* below the level: nothing */
  gs_log_set_level(GS_LVL_INFO);
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_styles))
