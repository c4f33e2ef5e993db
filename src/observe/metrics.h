/* gpushare — a small thread-safe Prometheus registry (text format 0.0.4).
 *
 * A metric family is created by its first use (name, help, type); later
 * calls find it by name. A series is one set of label values; labels are
 * passed as a NULL-terminated list of "name", "value" pairs (NULL = none):
 *
 *   gs_metrics_counter_add(m, "gpushare_requests_total", "Requests by verb and result.",
 *                          (const char *[]){"verb", "filter", "result", "ok", NULL}, 1);
 *
 * Every series of a family must use the same label names in the same order.
 * One mutex guards the registry; every function may be called from any
 * thread. All string arguments are borrowed (copied when kept).
 *
 * Errors: GS_EINVAL (bad metric or label name, odd label list, the name is
 * already a family of another type, label names differ from the family's),
 * GS_ERANGE (negative counter increment, NaN), GS_ETOOBIG (a cap below),
 * GS_ENOMEM. On error nothing changes. The results are deliberately not
 * warn_unused_result: metrics are best effort and callers on hot paths
 * ignore failures (a broken metric must never fail a request); tests check
 * them.
 */
#ifndef GPUSHARE_OBSERVE_METRICS_H
#define GPUSHARE_OBSERVE_METRICS_H

#include <gpushare/err.h>

#include <stddef.h>

#define GS_METRICS_FAMILIES_MAX 256    /* metric families per registry */
#define GS_METRICS_SERIES_MAX 100000u  /* series per family */
#define GS_METRICS_LABELS_MAX 16       /* label pairs per series */
#define GS_METRICS_LABEL_TEXT_MAX 2048 /* rendered {k="v",...} of one series */
#define GS_METRICS_BUCKETS_MAX 64      /* histogram bucket bounds */

enum gs_metric_type {
  GS_METRIC_COUNTER,
  GS_METRIC_GAUGE,
  GS_METRIC_HISTOGRAM,
};

/* The default histogram bounds, in seconds (request latency). */
#define GS_METRICS_DEFAULT_BUCKETS                                                       \
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,  \
      2.5, 5

struct gs_metrics;

/* Returns a new empty registry (NULL when out of memory). */
struct gs_metrics *gs_metrics_new(void);
/* Frees m and everything in it. Accepts NULL. */
void gs_metrics_free(struct gs_metrics *m);

/* Creates a family without any series, so that its # HELP and # TYPE appear
 * before the first sample. Histograms get the default buckets. Declaring an
 * existing family of the same type is a no-op. */
enum gs_err gs_metrics_declare(struct gs_metrics *m, enum gs_metric_type type,
                               const char *name, const char *help);

/* Creates histogram family name with the given upper bounds (strictly
 * increasing, finite, 1..GS_METRICS_BUCKETS_MAX of them; +Inf is implicit).
 * Must come before the first observation; redefining an existing family with
 * other bounds is GS_EINVAL. */
enum gs_err gs_metrics_histogram_define(struct gs_metrics *m, const char *name,
                                        const char *help, const double *bounds,
                                        size_t n_bounds);

/* Adds value (>= 0) to a counter series, creating family and series at 0. */
enum gs_err gs_metrics_counter_add(struct gs_metrics *m, const char *name, const char *help,
                                   const char *const *labels, double value);

/* Sets a gauge series to value. */
enum gs_err gs_metrics_gauge_set(struct gs_metrics *m, const char *name, const char *help,
                                 const char *const *labels, double value);

/* Adds delta (may be negative) to a gauge series. */
enum gs_err gs_metrics_gauge_add(struct gs_metrics *m, const char *name, const char *help,
                                 const char *const *labels, double delta);

/* Removes every series of gauge family name (the family and its help stay),
 * so that per-object gauges can be rebuilt, e.g. at each scrape. A name that
 * is not a gauge family: no-op. */
void gs_metrics_gauge_reset(struct gs_metrics *m, const char *name);

/* Records one observation (seconds, or any unit the bounds use) in a
 * histogram series; the family gets the default buckets unless defined
 * before. */
enum gs_err gs_metrics_observe(struct gs_metrics *m, const char *name, const char *help,
                               const char *const *labels, double value);

/* Renders the registry in the Prometheus text exposition format 0.0.4
 * (Content-Type "text/plain; version=0.0.4; charset=utf-8"): families sorted
 * by name, series in creation order. Returns a new string the caller frees,
 * or NULL when out of memory. */
char *gs_metrics_render(const struct gs_metrics *m);

#define GS_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
