/* gpushare — internals of the k8s layer shared by its files (gs__kube_*).
 * The pure parts (buffers, NDJSON splitting, Status decoding, URL escaping,
 * Retry-After, MicroTime, backoff, the lease decision) are here so unit
 * tests reach them without a network. */
#ifndef GPUSHARE_KUBE_INT_H
#define GPUSHARE_KUBE_INT_H

#include "k8s.h"
#include "api.h" /* gs_api_dump: the one way a jansson document is written */
#include "buf.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

/* Named caps. */
#define GS_KUBE_LIST_MAX (256u * 1024u * 1024u) /* one list page */
#define GS_KUBE_EVENT_MAX (64u * 1024u * 1024u) /* one watch event line */
#define GS_KUBE_BODY_MAX (16u * 1024u * 1024u)  /* any other reply */
#define GS_KUBE_TOKEN_MAX (64u * 1024u)         /* bearer token file */
#define GS_KUBE_RV_MAX 128                      /* resourceVersion text */
#define GS_KUBE_PAGE_LIMIT 500                  /* list page size (client-go) */
#define GS_KUBE_BIND_BUDGET_MS 3500             /* bind's total time (< 5 s extender timeout) */
#define GS_KUBE_POD_GET_MS 2000 /* bind reading a pod the cache lacks or keeps compact */
#define GS_KUBE_EVENT_QUEUE 128                 /* pending events; more are dropped */
#define GS_KUBE_MSG_MAX 1024                    /* event message */

/* ---- logging ---------------------------------------------------------- */

/* One line on stderr: ts=... level=... msg="msg" <fields>. fields is a
 * printf format for the key=value part (may be NULL). */
void gs__kube_log(enum gs_log_lvl level, const char *msg, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- time and randomness ---------------------------------------------- */

int64_t gs__kube_now_ms(void); /* CLOCK_MONOTONIC */
/* Next value of a per-thread xorshift generator; seeds itself if *state is 0. */
uint64_t gs__kube_rand(uint64_t *state);
/* Writes a random RFC 4122 v4 UUID (36 chars + NUL). */
void gs__kube_uuid(char out[37]);

/* MicroTime: RFC 3339 UTC with exactly six fractional digits
 * ("2025-03-04T05:06:07.123456Z"). out needs 28 bytes. */
void gs__kube_microtime(const struct timespec *ts, char out[32]);
/* RFC 3339 seconds ("2025-03-04T05:06:07Z"). */
void gs__kube_rfc3339(const struct timespec *ts, char out[32]);

/* ---- growable bounded buffer: util's struct gs_buf (buf.h) ----------- */

/* metadata.continue of a list reply (malloc'd), read without parsing its
 * items, so the next page can be asked for while this one is parsed. The
 * apiserver writes kind, apiVersion and metadata before items (a List's
 * field order in Go); a reply laid out otherwise, or without a token,
 * gives NULL, and the caller learns the token from the parsed page. */
char *gs__kube_list_peek_continue(const char *body, size_t len);

/* ---- URLs -------------------------------------------------------------- */

/* Percent-encodes s (RFC 3986 unreserved characters pass) onto b. */
enum gs_err gs__kube_escape(struct gs_buf *b, const char *s) GS_WUR;
/* Appends "?key=value" or "&key=value" (value escaped) to b. */
enum gs_err gs__kube_query(struct gs_buf *b, const char *key, const char *value) GS_WUR;
/* "https://host:port", IPv6 hosts bracketed. GS_EINVAL when empty. */
enum gs_err gs__kube_incluster_url(const char *host, const char *port, char *out,
                                   size_t cap) GS_WUR;

/* ---- NDJSON (watch streams) -------------------------------------------- */

/* Splits a byte stream into '\n'-terminated lines, whatever the chunking.
 * A line (without '\n'; a trailing '\r' removed; blank lines skipped) is
 * passed to fn; fn returns false to stop. */
typedef bool (*gs__ndjson_fn)(void *ctx, const char *line, size_t len);
struct gs__ndjson {
  struct gs_buf pending; /* the unfinished line; its max is the line cap */
};
void gs__ndjson_init(struct gs__ndjson *s, size_t line_max);
/* GS_EOK; GS_EAGAIN when fn asked to stop (the rest of data is dropped);
 * GS_ETOOBIG when a line exceeds line_max; GS_ENOMEM. */
enum gs_err gs__ndjson_feed(struct gs__ndjson *s, const char *data, size_t n, gs__ndjson_fn fn,
                            void *ctx) GS_WUR;
/* Bytes of an unfinished line (a stream should end with none). */
size_t gs__ndjson_pending(const struct gs__ndjson *s);
void gs__ndjson_reset(struct gs__ndjson *s);
void gs__ndjson_release(struct gs__ndjson *s);

/* ---- Status (error bodies, watch ERROR events) -------------------------- */

struct gs__kube_status {
  long code;         /* Status.code, else the HTTP code */
  char reason[64];   /* "NotFound", "" when unknown */
  char message[512]; /* Status.message, else a short description */
};
/* Decodes an error reply. Never fails: a body that is not a Status gives
 * message "HTTP <code>" (plus the body's start when it is text). */
void gs__kube_status_decode(const char *body, size_t len, long http_code,
                            struct gs__kube_status *ret);
void gs__kube_status_from_json(const json_t *obj, long http_code, struct gs__kube_status *ret);
/* 410 Expired/Gone (a too-old resourceVersion or continue token). */
bool gs__kube_status_is_expired(const struct gs__kube_status *st);

/* Retry-After header value → seconds (0..3600), -1 when absent/invalid
 * (HTTP-dates are not honoured: the apiserver sends seconds). */
long gs__kube_retry_after_parse(const char *value);
/* True for statuses worth retrying: 429, 5xx (except 501), and 0 (no reply). */
bool gs__kube_http_is_retryable(long code);

/* ---- backoff (client-go's reflector: 800 ms, ×2, jitter 1.0, cap 30 s,
 *      reset after 2 min without trouble) -------------------------------- */

struct gs__backoff {
  uint32_t initial_ms, max_ms;
  uint32_t cur_ms;      /* next base delay, 0 = initial */
  int64_t last_fail_ms; /* monotonic time of the last failure */
  uint64_t rng;
};
void gs__backoff_init(struct gs__backoff *b, uint32_t initial_ms, uint32_t max_ms);
/* Delay before the next attempt: base × (1 + U[0,1)), base doubling up to
 * max_ms; a failure 2 min after the previous one starts over. */
uint32_t gs__backoff_next(struct gs__backoff *b, int64_t now_ms);
void gs__backoff_reset(struct gs__backoff *b);

/* ---- lease decision (docs/kube-protocol.md §C.10, client-go LeaseLock) --------- */

#define GS_KUBE_IDENTITY_MAX 255
struct gs__lease_spec {
  char holder[GS_KUBE_IDENTITY_MAX + 1];
  long duration_s;
  char acquire[32]; /* MicroTime, "" = null */
  char renew[32];
  long transitions;
};
/* Reads spec from a Lease object (missing fields → zero values). */
void gs__lease_spec_from_json(const json_t *lease, struct gs__lease_spec *ret);
/* {"holderIdentity":..,"leaseDurationSeconds":..,...}; new reference. */
json_t *gs__lease_spec_to_json(const struct gs__lease_spec *spec);
bool gs__lease_spec_equal(const struct gs__lease_spec *a, const struct gs__lease_spec *b);

enum gs__lease_action {
  GS__LEASE_WAIT = 0, /* someone else holds a live lease */
  GS__LEASE_RENEW,    /* it is mine: renew, keep acquireTime/transitions */
  GS__LEASE_TAKEOVER, /* free or expired: take it, transitions + 1 */
};
/* Decides from the fetched record cur, observed (as a change) locally at
 * observed_ms, at now_ms. Fills *ret_desired for RENEW/TAKEOVER with
 * holder me, duration my_duration_s, renewTime now_micro (and acquireTime
 * now_micro on takeover). Pure. */
enum gs__lease_action gs__lease_decide(const struct gs__lease_spec *cur, const char *me,
                                       int64_t observed_ms, int64_t now_ms,
                                       const char *now_micro, long my_duration_s,
                                       struct gs__lease_spec *ret_desired);

/* ---- connection and requests ------------------------------------------ */

struct gs__kube_conn {
  char *base;                   /* scheme://host:port[/prefix], no trailing '/' */
  struct curl_slist *connect_to; /* tls-server-name: URL names it, connect elsewhere */
  bool insecure;
  char *ca_file;
  char *ca_blob;
  size_t ca_blob_len;
  char *cert_file, *key_file;
  char *cert_blob, *key_blob;
  size_t cert_blob_len, key_blob_len;
  char *token_static; /* kubeconfig token */
  char *token_file;   /* re-read every minute and after a 401 */
  pthread_mutex_t token_mu;
  char *token_cached;
  int64_t token_read_ms;
  bool token_mu_init;
  long request_timeout_s;
  char user_agent[64];
  atomic_ulong errors; /* failed requests, for /metrics */
};
/* In-cluster: env KUBERNETES_SERVICE_HOST/PORT, sa_dir/token, sa_dir/ca.crt. */
enum gs_err gs__kube_conn_incluster(struct gs__kube_conn *c, const char *sa_dir,
                                    struct gs_diag *diag) GS_WUR;
/* Kubeconfig (gs_kubeconfig_load). */
enum gs_err gs__kube_conn_kubeconfig(struct gs__kube_conn *c, const char *path,
                                     struct gs_diag *diag) GS_WUR;
void gs__kube_conn_release(struct gs__kube_conn *c);

/* A curl easy handle and how to run it. A thread owns it; with multi set
 * it is driven through that multi handle so gs__kube_handle_wake() (from
 * any thread) ends a wait at once; abort() is polled and stops a transfer. */
struct gs__kube_handle {
  CURL *easy;
  CURLM *multi; /* NULL → curl_easy_perform */
  bool (*abort)(void *ctx);
  void *abort_ctx;
};
enum gs_err gs__kube_handle_init(struct gs__kube_handle *h, bool with_multi) GS_WUR;
void gs__kube_handle_release(struct gs__kube_handle *h);
void gs__kube_handle_wake(struct gs__kube_handle *h);

/* Streaming sink for a 200 reply (watch); NULL → body buffered. */
typedef bool (*gs__kube_stream_fn)(void *ctx, const char *data, size_t n);

struct gs__kube_req {
  const char *method; /* "GET", "POST", "PUT", "PATCH" */
  const char *content_type; /* of body; NULL → application/json */
  const char *path;   /* from the root, with the query: "/api/v1/pods?limit=500" */
  const char *body;   /* JSON, NULL for none */
  size_t body_max;    /* reply cap (0 → GS_KUBE_BODY_MAX) */
  long timeout_ms;    /* whole transfer; 0 → none (watch) */
  long low_speed_s;   /* watch: abort when idle this long; 0 → off */
  gs__kube_stream_fn stream;
  void *stream_ctx;
};
struct gs__kube_resp {
  long code;         /* HTTP status, 0 when no reply */
  struct gs_buf body;
  long retry_after_s; /* -1 none */
  CURLcode cc;
  bool aborted;       /* stopped by abort() or the stream sink */
  char error[CURL_ERROR_SIZE + 64];
};
/* One request (plus one retry after a 401 when the token comes from a
 * file). GS_EOK whenever an HTTP reply arrived (any code: check ret->code);
 * GS_EIO on transport failure, GS_ETIMEOUT on timeout, GS_EAGAIN when
 * aborted, GS_ETOOBIG past body_max. resp must be released; a resp may be
 * passed again before that (its body buffer is reused). */
enum gs_err gs__kube_do(struct gs__kube_conn *c, struct gs__kube_handle *h,
                        const struct gs__kube_req *req, struct gs__kube_resp *ret) GS_WUR;
void gs__kube_resp_release(struct gs__kube_resp *r);

/* ---- the backend ----------------------------------------------------- */

enum gs__inf_kind {
  GS__INF_NODES = 0,
  GS__INF_PODS,
  GS__INF_CM_GPUSHARE,  /* the gpushare ConfigMap (fieldSelector metadata.name) */
  GS__INF_CM_UNHEALTHY, /* kube-system ConfigMaps named unhealthy-gpu-* */
  GS__INF_SLICES,       /* resource.k8s.io/v1 ResourceSlices (docs/dra.md) */
  GS__INF_CLAIMS,       /* resource.k8s.io/v1 ResourceClaims */
  GS__INF_PDBS,         /* policy/v1 PodDisruptionBudgets (preemption); the ones
                           before it gate the first sync, it does not: an
                           apiserver or RBAC without them leaves preemption
                           without budgets, not the extender unready */
  GS__INF_COUNT
};
#define GS_KUBE_UNHEALTHY_PREFIX "unhealthy-gpu-"

struct gs__kube;

/* One list+watch loop (docs/kube-protocol.md §C.3, §C.4) on its own thread. */
struct gs__informer {
  struct gs__kube *k;
  enum gs__inf_kind kind;
  const char *resource;   /* for logs: "nodes", "pods", "configmaps" */
  const char *item_kind;  /* "Node", "Pod", "ConfigMap" (list items lack it) */
  char *path;             /* collection path */
  char *field_selector;   /* NULL = none */
  const char *name_prefix; /* client-side filter, NULL = none */
  pthread_mutex_t mu;     /* guards cache and rv */
  json_t *cache;          /* "ns/name" (nodes: "name") → object */
  char rv[GS_KUBE_RV_MAX + 1];
  struct gs__kube_handle h;
  struct gs__backoff bo;
  struct gs__ndjson nd;
  atomic_uint relist_req; /* generation the leader asks for */
  unsigned cur_gen;       /* generation the current cache was listed for (own thread) */
  unsigned list_gen;      /* same, published under k->mu */
  bool listed;            /* first list done (under k->mu) */
  /* per-watch outcome (own thread) */
  bool w_relist, w_error;
  unsigned w_events;
  pthread_t th;
  bool th_started;
};

struct gs__kube_event {
  char ns[GS_NS_MAX + 1];
  char *body; /* JSON */
};

struct gs__kube {
  struct gs__kube_conn conn;
  char *cm_ns, *cm_name, *lease_ns, *lease_name, *identity;
  char *pod_ns, *pod_name; /* this replica's Pod (leader label), NULL: none */
  bool leader_elect;
  unsigned lease_duration_s, renew_deadline_s, retry_period_s, watch_timeout_s;
  unsigned bo_initial_ms, bo_max_ms;
  struct gs_cluster_sink sink;
  pthread_mutex_t sink_mu; /* one sink call at a time, in order */
  pthread_mutex_t mu;      /* guards the fields below and waits on cond */
  pthread_cond_t cond;     /* CLOCK_MONOTONIC; broadcast on stop and list completion */
  atomic_bool stop;
  atomic_ulong watch_restarts, relists; /* for /metrics */
  bool started, stopped;
  unsigned nlisted;
  struct gs__informer inf[GS__INF_COUNT];
  /* leader election */
  struct gs__kube_handle lease_h;
  pthread_t lease_th;
  bool lease_started;
  atomic_uint resync_gen;
  /* handles for callers' threads (bind, pod GET) */
  pthread_mutex_t pool_mu;
  struct gs__kube_handle pool[4];
  unsigned npool;
  /* events */
  struct gs__kube_handle event_h;
  pthread_t event_th;
  bool event_started;
  struct gs__kube_event events[GS_KUBE_EVENT_QUEUE];
  unsigned ev_head, ev_len;
};

/* Waits up to ms (or until stop); false when stopping. */
bool gs__kube_sleep(struct gs__kube *k, int64_t ms);
/* Same, but also returns early on any broadcast of k->cond. */
bool gs__kube_wait(struct gs__kube *k, int64_t ms);
bool gs__kube_stopping(struct gs__kube *k);
/* Sets up inf (no thread yet). */
enum gs_err gs__informer_init(struct gs__informer *inf, struct gs__kube *k,
                              enum gs__inf_kind kind) GS_WUR;
void gs__informer_release(struct gs__informer *inf);
void *gs__informer_main(void *inf);
/* Object from inf's cache: new reference or NULL. */
json_t *gs__informer_get(struct gs__informer *inf, const char *key);
/* Asks every informer to relist for generation gen (leader take-over). */
void gs__kube_request_resync(struct gs__kube *k, unsigned gen);
/* True when every informer completed a list for generation ≥ gen. */
bool gs__kube_resynced(struct gs__kube *k, unsigned gen);
void *gs__lease_main(void *k);

#endif
