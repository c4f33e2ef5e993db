/* gpushare — one line per event on stderr, key=value:
 *   ts=2026-11-22T10:00:00.123Z level=info msg="bound pod" pod=ns/name node=n1
 * Only the outer layers (server, k8s, main) log; the core returns reasons. */
#ifndef GPUSHARE_LOG_H
#define GPUSHARE_LOG_H

enum gs_log_lvl { GS_LVL_ERROR = 0, GS_LVL_WARN, GS_LVL_INFO, GS_LVL_DEBUG };

/* Sets the most verbose level printed (default info). */
void gs_log_set_level(enum gs_log_lvl level);
/* The line format: logfmt (above, the extender's), or klog's text header
 * inside kube-scheduler (gpushare-scheduler), so one process writes one
 * format:
 *   I1125 08:03:40.752123   12345 gpushare] "bound pod" pod=ns/name node=n1 */
enum gs_log_style { GS_LOG_LOGFMT = 0, GS_LOG_KLOG };
void gs_log_set_style(enum gs_log_style style);
/* True when level would be printed. */
int gs_log_enabled(enum gs_log_lvl level);
/* Logs msg with extra "key=value" text already formatted by the caller
 * (printf-style); values with spaces must be quoted by the caller. */
void gs_log(enum gs_log_lvl level, const char *msg, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
