/* gpushare — what the server's files share: the server object and small
 * helpers. Internal to src/server. */
#ifndef GPUSHARE_SERVER_INT_H
#define GPUSHARE_SERVER_INT_H

#include "server.h"
#include "dra.h"
#include "feed.h"
#include "host.h"
#include "http.h"

#include "api.h"
#include "log.h"
#include "metrics.h"

#include <gpushare/sched.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

struct gs_server {
  struct gs_config cfg;
  struct gs_cluster cluster;
  struct gs_sched *sched;    /* set once by gs_server_start, before configured */
  atomic_bool configured;    /* sched exists: the routes may use it */
  struct gs_metrics *metrics;
  struct gs_http_server *http;
  atomic_bool synced;
  atomic_bool leader;
  struct gs__feed_config config; /* pendingUnit, an invalid ConfigMap */
  struct gs__dra *dra;           /* ResourceSlices and ResourceClaims (docs/dra.md) */
  struct gs__hosts *hosts; /* the hosts from the watch (host.h): frag and preemption */
  pthread_mutex_t mu; /* guards stats */
  struct gs_cluster_stats stats; /* backend counters at the last scrape (under mu) */
  uint64_t gang_timeouts;        /* the service's count at the last scrape (under mu) */
};

static inline int64_t gs__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline double gs__mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline const char *gs__meta_str(const json_t *obj, const char *key) {
  return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

static inline void gs__diag_text(const struct gs_diag *diag, const char *what, char *out,
                                 size_t len) {
  int n; /* a text longer than out is cut: the result is looked at so the compiler knows */
  if (diag->where[0] != '\0')
    n = snprintf(out, len, "%s: %s: %s", what, diag->where, diag->text);
  else
    n = snprintf(out, len, "%s: %s", what, diag->text[0] ? diag->text : "malformed input");
  if (n < 0 && len > 0)
    out[0] = '\0';
}

/* The cluster sink (sink.c): the cluster's objects decoded and handed to
 * the service. */
struct gs_cluster_sink gs__server_sink(struct gs_server *s);
/* The route table (extender.c): what the HTTP adapter calls for every
 * request; tests call it directly (the server torture test). */
void gs__server_handle(void *ctx, const struct gs_http_request *req,
                       struct gs_http_response *resp);
/* Where the service's notices go (sink.c): log lines and Warning Events. */
void gs__server_on_notice(void *ctx, const struct gs_notice *n);
/* A preemptor asked to filter on nodes where the victims gpushare answered
 * for it are not gone yet in its view: waits (bounded) for the deletions
 * its watch has still to bring (filter_wait.c; docs/preemption.md "Victims gone
 * before the watch says so"). obj: the filter's Pod object. */
void gs__server_settle(struct gs_server *s, const struct gs_pod_request *pod, const json_t *obj,
                       const char *const *nodes, size_t n);

#endif
