/* gpushare — the HTTP server adapter.
 *
 * The only file that includes <microhttpd.h> is http.c; everything else in
 * the project serves HTTP through this header. One handler is called once
 * per complete request, with the whole body, concurrently from the worker
 * threads: it must be thread-safe.
 *
 * Request bodies are capped (body_max): a Content-Length over the cap is
 * answered 413 before the body is read; a chunked upload that grows past it
 * is answered 413 after the rest is discarded unbuffered, or the connection
 * is closed if the client keeps sending (GS_HTTP_DRAIN_MAX). The handler is
 * never called for such a request.
 *
 * Threads: by default every connection has its own thread, so a slow
 * handler call (a bind waiting for the apiserver) delays only its own
 * connection, never a filter arriving on another one; idle keep-alive and
 * silent connections cost a sleeping thread each until conn_timeout_s.
 * With threads = N, N event-loop threads share the connections: fewer
 * threads, but a handler call blocks every other connection of its thread.
 */
#ifndef GPUSHARE_SERVER_HTTP_H
#define GPUSHARE_SERVER_HTTP_H

#include <gpushare/err.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_HTTP_BODY_MAX_DEFAULT (16u * 1024u * 1024u) /* request body cap */
#define GS_HTTP_CONN_LIMIT_DEFAULT 1024u
#define GS_HTTP_TIMEOUT_DEFAULT 30u     /* seconds idle before close */
#define GS_HTTP_PER_IP_DEFAULT 256u     /* connections per client address */
#define GS_HTTP_PEM_MAX (1024u * 1024u) /* TLS certificate / key file cap */
/* After a chunked upload passes body_max, up to this many more bytes are
 * read and dropped so the client can still get its 413; past it the
 * connection is closed. Bandwidth only: nothing of it is kept. */
#define GS_HTTP_DRAIN_MAX (64u * 1024u * 1024u)
/* After an early 413, the socket is kept open this long (or until the client
 * closes) so that the client can read the 413 (see http.c). */
#define GS_HTTP_LINGER_MS 2000u

/* One request. Every pointer is borrowed and valid only during the handler
 * call. */
struct gs_http_request {
  const char *method;       /* "GET", "POST", ... */
  const char *path;         /* URL path without query (MHD unescapes %XX) */
  const char *query;        /* raw query string after '?', "" if none */
  const char *body;         /* NUL-terminated copy of the body ("" if none) */
  size_t body_len;
  const char *content_type; /* Content-Type header or NULL */
  const char *remote;       /* client "ADDR:PORT" ("[ADDR]:PORT" for IPv6) */
  /* With tls_client_ca_file: the client presented a certificate that the
   * CA signed and that verifies (time, chain). Always false otherwise. */
  bool client_verified;
};

/* The handler's answer. The adapter pre-fills status 200, content_type
 * "application/json", body NULL. */
struct gs_http_response {
  int status;               /* 200..599; anything else is sent as 500 */
  const char *content_type; /* static string; NULL → "application/json" */
  char *body;               /* malloc'd, taken by the adapter (may be NULL) */
  size_t body_len;
};

typedef void (*gs_http_handler_fn)(void *ctx, const struct gs_http_request *req,
                                   struct gs_http_response *resp);

/* Receives the server's own log events (libmicrohttpd errors). level is
 * "error" or "warn"; msg is one line. Called from any thread. */
typedef void (*gs_http_log_fn)(void *ctx, const char *level, const char *msg);

struct gs_http_opts {
  const char *listen;        /* required: "HOST:PORT", "[::1]:PORT", ":PORT" (all
                                IPv4 addresses); HOST may be a name; port 0 = any */
  const char *tls_cert_file; /* both set → HTTPS (PEM files), neither → HTTP; */
  const char *tls_key_file;  /* only one of them set is an error */
  const char *tls_client_ca_file; /* HTTPS only: ask clients for a certificate and
                                     verify it against this CA (PEM); the
                                     handler sees req.client_verified */
  size_t body_max;           /* 0 → 16 MiB. Larger bodies → 413, handler not called */
  unsigned conn_limit;       /* 0 → 1024 */
  unsigned conn_timeout_s;   /* idle/slow-client timeout, 0 → 30 */
  unsigned threads;          /* 0 → one thread per connection (default, see below);
                                N → a pool of N event-loop threads (≤ conn_limit) */
  /* Additions to the base API: */
  unsigned per_ip_limit;     /* 0 → 256 (never above conn_limit) */
  gs_http_log_fn log_fn;     /* NULL → one key=value line on stderr */
  void *log_ctx;
};

struct gs_http_server;

/* Starts listening and serving; returns the new server, or NULL with diag
 * filled (where: "listen", "tls" or the PEM file's path), e.g. "cannot
 * listen on 0.0.0.0:32766: Address already in use". opts is borrowed (the
 * strings are not kept); fn and ctx are kept until gs_http_stop(). */
struct gs_http_server *gs_http_start(const struct gs_http_opts *opts, gs_http_handler_fn fn,
                                     void *ctx, struct gs_diag *diag);

/* The bound port (useful with port 0). */
uint16_t gs_http_port(const struct gs_http_server *s);

/* Stops accepting, closes every connection, joins the worker threads and
 * frees s. Accepts NULL. No handler call runs after it returns. */
void gs_http_stop(struct gs_http_server *s);

#endif
