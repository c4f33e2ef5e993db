#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int log_level = GS_LVL_INFO;
static volatile int log_style = GS_LOG_LOGFMT;

void gs_log_set_level(enum gs_log_lvl level) { log_level = (int)level; }

void gs_log_set_style(enum gs_log_style style) { log_style = (int)style; }

int gs_log_enabled(enum gs_log_lvl level) { return (int)level <= log_level; }

void gs_log(enum gs_log_lvl level, const char *msg, const char *fmt, ...) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  char line[2048], extra[1536] = "";
  struct timeval tv;
  struct tm tm;
  va_list ap;

  if (!gs_log_enabled(level))
    return;
  gettimeofday(&tv, NULL);
  gmtime_r(&tv.tv_sec, &tm);
  if (fmt != NULL && fmt[0] != '\0') {
    va_start(ap, fmt);
    vsnprintf(extra, sizeof extra, fmt, ap);
    va_end(ap);
  }
  /* One write per line so lines from several threads never interleave. */
  if (log_style == GS_LOG_KLOG) /* klog's text header, as kube-scheduler's own lines */
    snprintf(line, sizeof line, "%c%02d%02d %02d:%02d:%02d.%06ld %7ld gpushare] \"%s\"%s%s\n",
             "EWII"[level], tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (long)tv.tv_usec, (long)getpid(), msg, extra[0] ? " " : "", extra);
  else
    snprintf(line, sizeof line, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s msg=\"%s\"%s%s\n",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (long)(tv.tv_usec / 1000), names[level], msg, extra[0] ? " " : "", extra);
  fputs(line, stderr);
}
