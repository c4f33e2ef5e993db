/* gpushare — the libmicrohttpd adapter (see http.h).
 *
 * Per request, MHD calls us several times: the URI log callback (raw
 * request-target, used for the raw query string), the access handler once
 * with the headers, once per piece of body, and once at the end; then the
 * completion callback. One struct req carries the state across these calls.
 *
 * libmicrohttpd 0.9.75 (Debian 12) lets a response be queued only right after
 * the headers or after the whole body; never in between. So an oversized
 * Content-Length is refused at the header call (MHD then closes the
 * connection without reading the body), while a chunked upload that passes
 * the cap is dropped unbuffered until it ends (then 413) or until it passes
 * GS_HTTP_DRAIN_MAX (then the connection is closed).
 *
 * An early 413 has one more problem: MHD closes the socket right after the
 * reply while the client is still sending, and closing a socket with unread
 * data makes the kernel send a reset, which can make a client (Go's, curl
 * without Expect: 100-continue) lose the 413 it has not read yet. So such a
 * connection is handed to a "linger" thread that keeps a duplicate of the
 * socket open and reads and drops what still arrives until the client
 * closes, for at most GS_HTTP_LINGER_MS and GS_HTTP_DRAIN_MAX bytes: the
 * lingering close of Apache and nginx, without blocking an MHD worker.
 *
 * One file of about 800 lines: the MHD callbacks, the body caps and the
 * linger thread share struct req and the reasoning above.
 */
#include "http.h"
#include <gpushare/alloc.h>

#include <microhttpd.h>

#include <gnutls/gnutls.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HOST_MAX 256          /* host part of the listen address */
#define ADDR_TEXT_MAX 64      /* "[v6addr]:port" */
#define BODY_INITIAL (16u * 1024u)
#define LOG_LINE_MAX 1024
#define LINGER_MAX 64 /* sockets lingering at once; more are closed at once */
#define LINGER_READ (64u * 1024u)

/* Sockets closed by MHD after an early 413, kept open and drained. */
struct lingering {
  pthread_t thread;
  pthread_mutex_t lock;
  int wake[2]; /* pipe: a byte wakes the thread up (new socket, stop) */
  bool stop;
  size_t n;
  int fd[LINGER_MAX];
  struct timespec deadline[LINGER_MAX];
  size_t drained[LINGER_MAX];
  char sink[LINGER_READ]; /* drained bytes land here, never read */
};

struct gs_http_server {
  struct MHD_Daemon *daemon;
  struct lingering *linger; /* NULL if it could not start: no lingering */
  gs_http_handler_fn fn;
  void *ctx;
  gs_http_log_fn log_fn;
  void *log_ctx;
  size_t body_max;
  uint16_t port;
  /* While gs_http_start() runs MHD_start_daemon(), MHD's first complaint
   * made on that thread is kept for the diag. Only that thread touches it. */
  pthread_t starter;
  bool capturing;
  char start_err[200];
  bool client_ca; /* tls_client_ca_file given: verify client certificates */
};

/* State of one request, from the URI callback to the completion callback. */
struct req {
  char *query;     /* raw query string, NULL if none */
  char *buf;       /* body so far, NUL-terminated when non-NULL */
  size_t len, cap; /* cap: bytes allocated in buf */
  size_t expect;   /* Content-Length, or SIZE_MAX when not given (chunked) */
  size_t dropped;  /* bytes discarded after the body passed body_max */
  bool started;    /* the header call happened */
  bool too_big;
  bool early_413;  /* refused at the headers: the body may still be coming */
};

/* ------------------------------------------------------------------ logging */

static void log_default(const char *level, const char *msg) {
  char ts[32], esc[2 * LOG_LINE_MAX + 1];
  struct timespec now;
  struct tm tm;
  size_t o = 0;

  clock_gettime(CLOCK_REALTIME, &now);
  gmtime_r(&now.tv_sec, &tm);
  strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
  for (const char *p = msg; *p != '\0' && o + 2 < sizeof esc; p++) {
    if (*p == '"' || *p == '\\')
      esc[o++] = '\\';
    esc[o++] = (*p == '\n' || *p == '\r') ? ' ' : *p;
  }
  esc[o] = '\0';
  fprintf(stderr, "ts=%s.%03ldZ level=%s msg=\"%s\" component=http\n", ts,
          now.tv_nsec / 1000000L, level, esc);
}

static void log_event(const struct gs_http_server *s, const char *level, const char *msg) {
  if (s->log_fn != NULL)
    s->log_fn(s->log_ctx, level, msg);
  else
    log_default(level, msg);
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 0)))
#endif
static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
  struct gs_http_server *s = cls;
  char line[LOG_LINE_MAX];
  size_t n;

  vsnprintf(line, sizeof line, fmt, ap);
  n = strlen(line);
  while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' '))
    line[--n] = '\0';
  if (pthread_equal(pthread_self(), s->starter) && s->capturing && s->start_err[0] == '\0')
    /* cut to fit: the precision tells gcc the truncation is meant */
    snprintf(s->start_err, sizeof s->start_err, "%.*s", (int)sizeof s->start_err - 1, line);
  log_event(s, "warn", line);
}

/* ---------------------------------------------------------------- responses */

/* Queues status + body (taken; may be NULL) with Content-Type ctype. */
static enum MHD_Result queue(struct MHD_Connection *c, int status, const char *ctype,
                             char *body, size_t body_len, bool conn_close) {
  struct MHD_Response *r;
  enum MHD_Result ret;

  if (status < 200 || status > 599)
    status = 500; /* 1xx are not final answers; >599 does not exist */
  if (body == NULL || body_len == 0) {
    gs_free(body);
    r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  } else {
    r = MHD_create_response_from_buffer(body_len, body, MHD_RESPMEM_MUST_FREE);
    if (r == NULL)
      gs_free(body);
  }
  if (r == NULL)
    return MHD_NO; /* out of memory: MHD closes the connection */
  (void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                                ctype != NULL ? ctype : "application/json");
  if (conn_close)
    (void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
  ret = MHD_queue_response(c, (unsigned)status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result queue_too_big(const struct gs_http_server *s, struct MHD_Connection *c) {
  char *body = gs_malloc(96);

  if (body == NULL)
    return MHD_NO;
  snprintf(body, 96, "{\"Error\":\"request body exceeds %zu bytes\"}", s->body_max);
  return queue(c, MHD_HTTP_CONTENT_TOO_LARGE, "application/json", body, strlen(body), true);
}

/* ------------------------------------------------------------------ linger */

static long ms_until(const struct timespec *deadline, const struct timespec *now) {
  return (long)(deadline->tv_sec - now->tv_sec) * 1000L +
         (deadline->tv_nsec - now->tv_nsec) / 1000000L;
}

/* Drains every lingering socket; closes it at EOF, error, deadline or
 * GS_HTTP_DRAIN_MAX bytes. */
static void *linger_main(void *arg) {
  struct lingering *l = arg;

  for (;;) {
    struct pollfd p[LINGER_MAX + 1];
    struct timespec now;
    long timeout = -1;
    size_t n;
    bool stop;

    pthread_mutex_lock(&l->lock);
    stop = l->stop;
    clock_gettime(CLOCK_MONOTONIC, &now);
    for (size_t i = 0; i < l->n;) {
      long left = ms_until(&l->deadline[i], &now);
      if (stop || left <= 0 || l->drained[i] > GS_HTTP_DRAIN_MAX) {
        close(l->fd[i]);
        l->n--;
        l->fd[i] = l->fd[l->n];
        l->deadline[i] = l->deadline[l->n];
        l->drained[i] = l->drained[l->n];
        continue;
      }
      if (timeout < 0 || left < timeout)
        timeout = left;
      p[i].fd = l->fd[i];
      p[i].events = POLLIN;
      p[i].revents = 0;
      i++;
    }
    n = l->n;
    pthread_mutex_unlock(&l->lock);
    if (stop)
      return NULL;
    p[n].fd = l->wake[0];
    p[n].events = POLLIN;
    p[n].revents = 0;
    /* Interrupted or failed: revents say nothing, look again. */
    if (poll(p, n + 1, (int)timeout) < 0)
      continue;
    if (p[n].revents != 0) {
      while (read(l->wake[0], l->sink, sizeof l->sink) > 0) {
      }
    }
    /* Only this thread removes entries, so indices 0..n-1 are still ours. */
    for (size_t i = 0; i < n; i++) {
      ssize_t got = 0;
      if (p[i].revents == 0)
        continue;
      while ((got = recv(p[i].fd, l->sink, sizeof l->sink, MSG_DONTWAIT)) > 0)
        l->drained[i] += (size_t)got;
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        pthread_mutex_lock(&l->lock);
        l->deadline[i] = now; /* closed at the top of the loop */
        pthread_mutex_unlock(&l->lock);
      }
    }
  }
}

static void linger_wake(struct lingering *l) {
  char b = 1;
  ssize_t w = write(l->wake[1], &b, 1);
  (void)w; /* a full pipe already wakes the thread */
}

static struct lingering *linger_start(void) {
  struct lingering *l = gs_calloc(1, sizeof *l);

  if (l == NULL)
    return NULL;
  if (pipe(l->wake) != 0)
    goto free_linger;
  for (int i = 0; i < 2; i++) {
    (void)fcntl(l->wake[i], F_SETFL, O_NONBLOCK);
    (void)fcntl(l->wake[i], F_SETFD, FD_CLOEXEC);
  }
  if (pthread_mutex_init(&l->lock, NULL) != 0)
    goto close_pipe;
  if (pthread_create(&l->thread, NULL, linger_main, l) != 0)
    goto destroy_lock;
  return l;

destroy_lock:
  pthread_mutex_destroy(&l->lock);
close_pipe:
  close(l->wake[0]);
  close(l->wake[1]);
free_linger:
  gs_free(l);
  return NULL;
}

/* Closes every lingering socket and joins the thread. Accepts NULL. */
static void linger_stop(struct lingering *l) {
  if (l == NULL)
    return;
  pthread_mutex_lock(&l->lock);
  l->stop = true;
  pthread_mutex_unlock(&l->lock);
  linger_wake(l);
  pthread_join(l->thread, NULL);
  pthread_mutex_destroy(&l->lock);
  close(l->wake[0]);
  close(l->wake[1]);
  gs_free(l);
}

/* Keeps a duplicate of the connection's socket open after MHD closes it. */
static void linger_add(struct lingering *l, struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  int fd;

  if (l == NULL || ci == NULL)
    return;
  pthread_mutex_lock(&l->lock);
  if (l->stop || l->n == LINGER_MAX) {
    pthread_mutex_unlock(&l->lock);
    return;
  }
  fd = fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 0);
  if (fd >= 0) {
    clock_gettime(CLOCK_MONOTONIC, &l->deadline[l->n]);
    l->deadline[l->n].tv_sec += GS_HTTP_LINGER_MS / 1000;
    l->deadline[l->n].tv_nsec += (long)(GS_HTTP_LINGER_MS % 1000) * 1000000L;
    if (l->deadline[l->n].tv_nsec >= 1000000000L) {
      l->deadline[l->n].tv_sec++;
      l->deadline[l->n].tv_nsec -= 1000000000L;
    }
    l->drained[l->n] = 0;
    l->fd[l->n++] = fd;
  }
  pthread_mutex_unlock(&l->lock);
  if (fd >= 0)
    linger_wake(l);
}

/* ----------------------------------------------------------------- requests */

static struct req *req_new(void) {
  struct req *r = gs_calloc(1, sizeof *r);

  if (r != NULL)
    r->expect = SIZE_MAX;
  return r;
}

static void req_free(struct req *r) {
  if (r == NULL)
    return;
  gs_free(r->query);
  gs_free(r->buf);
  gs_free(r);
}

/* URI log callback: sees the raw request-target before MHD splits and
 * unescapes it. Its result becomes the request's context. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
  struct req *r = req_new();
  const char *q = uri != NULL ? strchr(uri, '?') : NULL;

  (void)cls;
  (void)c;
  if (r != NULL && q != NULL && q[1] != '\0') {
    r->query = gs_strdup(q + 1);
    if (r->query == NULL) {
      req_free(r);
      return NULL; /* the access handler retries the allocation and fails */
    }
  }
  return r;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  struct gs_http_server *s = cls;
  struct req *r = *con_cls;

  if (r != NULL && r->early_413 && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
    linger_add(s->linger, c);
  req_free(r);
  *con_cls = NULL;
}

/* Parses a decimal Content-Length; values that do not fit give SIZE_MAX. */
static size_t parse_length(const char *text) {
  size_t v = 0;

  for (; *text >= '0' && *text <= '9'; text++) {
    size_t d = (size_t)(*text - '0');
    if (v > (SIZE_MAX - d) / 10)
      return SIZE_MAX;
    v = v * 10 + d;
  }
  return v;
}

/* The header call: refuses an announced body over the cap before reading it. */
static enum MHD_Result on_headers(struct gs_http_server *s, struct MHD_Connection *c,
                                  struct req *r) {
  const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                               MHD_HTTP_HEADER_TRANSFER_ENCODING);
  const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                               MHD_HTTP_HEADER_CONTENT_LENGTH);

  r->started = true;
  if (te == NULL && cl != NULL) {
    r->expect = parse_length(cl);
    if (r->expect > s->body_max) {
      r->too_big = true;
      r->early_413 = true;
      return queue_too_big(s, c);
    }
  }
  return MHD_YES;
}

/* One piece of body. Memory is bounded by body_max + 1 per request, and it
 * grows with the data received, not with what the client announced. */
static enum MHD_Result on_body(struct gs_http_server *s, struct req *r, const char *data,
                               size_t n) {
  if (!r->too_big && n > s->body_max - r->len) {
    r->too_big = true;
    gs_free(r->buf);
    r->buf = NULL;
    r->len = r->cap = 0;
  }
  if (r->too_big) {
    r->dropped += n;
    return r->dropped > GS_HTTP_DRAIN_MAX ? MHD_NO : MHD_YES;
  }
  if (r->len + n + 1 > r->cap) {
    size_t need = r->len + n + 1;
    size_t limit = (r->expect != SIZE_MAX ? r->expect : s->body_max) + 1;
    size_t ncap = r->cap != 0 ? r->cap : BODY_INITIAL;
    char *nbuf;

    while (ncap < need && ncap < limit)
      ncap = ncap > SIZE_MAX / 2 ? SIZE_MAX : ncap * 2;
    if (ncap > limit)
      ncap = limit;
    if (ncap < need)
      ncap = need;
    nbuf = gs_realloc(r->buf, ncap);
    if (nbuf == NULL)
      return MHD_NO;
    r->buf = nbuf;
    r->cap = ncap;
  }
  memcpy(r->buf + r->len, data, n);
  r->len += n;
  r->buf[r->len] = '\0';
  return MHD_YES;
}

static void format_remote(struct MHD_Connection *c, char *out, size_t out_size) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  char host[INET6_ADDRSTRLEN], port[8];
  socklen_t len;

  out[0] = '\0';
  if (ci == NULL || ci->client_addr == NULL)
    return;
  len = ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                : sizeof(struct sockaddr_in);
  if (getnameinfo(ci->client_addr, len, host, sizeof host, port, sizeof port,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return;
  if (ci->client_addr->sa_family == AF_INET6)
    snprintf(out, out_size, "[%s]:%s", host, port);
  else
    snprintf(out, out_size, "%s:%s", host, port);
}

/* The client's certificate, verified against the trust list of the
 * daemon's credentials (tls_client_ca_file): present, signed by the CA,
 * in its validity period. */
static bool client_verified(struct gs_http_server *s, struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci;
  unsigned int status = 0, n = 0;
  gnutls_session_t session;
  if (!s->client_ca)
    return false;
  ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (ci == NULL || ci->tls_session == NULL)
    return false;
  session = (gnutls_session_t)ci->tls_session;
  if (gnutls_certificate_get_peers(session, &n) == NULL || n == 0)
    return false;
  return gnutls_certificate_verify_peers2(session, &status) == GNUTLS_E_SUCCESS && status == 0;
}

static enum MHD_Result dispatch(struct gs_http_server *s, struct MHD_Connection *c,
                                struct req *r, const char *url, const char *method) {
  char remote[ADDR_TEXT_MAX];
  struct gs_http_request req;
  struct gs_http_response resp = {200, "application/json", NULL, 0};

  format_remote(c, remote, sizeof remote);
  req.method = method;
  req.path = url;
  req.query = r->query != NULL ? r->query : "";
  req.body = r->buf != NULL ? r->buf : "";
  req.body_len = r->len;
  req.content_type =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
  req.remote = remote;
  req.client_verified = client_verified(s, c);
  s->fn(s->ctx, &req, &resp);
  /* The body is no longer needed: release it before the response is sent. */
  gs_free(r->buf);
  r->buf = NULL;
  r->len = r->cap = 0;
  return queue(c, resp.status, resp.content_type, resp.body, resp.body_len, false);
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version,
                                 const char *upload_data, size_t *upload_data_size,
                                 void **con_cls) {
  struct gs_http_server *s = cls;
  struct req *r = *con_cls;

  (void)version;
  if (r == NULL) {
    if ((r = req_new()) == NULL)
      return MHD_NO;
    *con_cls = r;
  }
  if (!r->started)
    return on_headers(s, c, r);
  if (*upload_data_size > 0) {
    size_t n = *upload_data_size;
    *upload_data_size = 0;
    return on_body(s, r, upload_data, n);
  }
  if (r->too_big)
    return queue_too_big(s, c);
  return dispatch(s, c, r, url, method);
}

/* ------------------------------------------------------------------ startup */

/* Splits "HOST:PORT", "[V6]:PORT" or ":PORT" into host ("" = any) and port. */
static bool split_listen(const char *listen, char *host, size_t host_size, char *port,
                         size_t port_size) {
  const char *colon, *hs, *he;
  size_t plen;

  if (listen[0] == '[') {
    hs = listen + 1;
    he = strchr(hs, ']');
    if (he == NULL || he[1] != ':')
      return false;
    colon = he + 1;
  } else {
    hs = listen;
    colon = strrchr(listen, ':');
    if (colon == NULL)
      return false;
    he = colon;
    if (memchr(hs, ':', (size_t)(he - hs)) != NULL)
      return false; /* a bare IPv6 address: brackets are required */
  }
  if ((size_t)(he - hs) >= host_size)
    return false;
  memcpy(host, hs, (size_t)(he - hs));
  host[he - hs] = '\0';
  plen = strlen(colon + 1);
  if (plen == 0 || plen >= port_size || plen > 5 ||
      strspn(colon + 1, "0123456789") != plen || atol(colon + 1) > 65535)
    return false;
  memcpy(port, colon + 1, plen + 1);
  return true;
}

/* Binds a throw-away socket like MHD will (SO_REUSEADDR, dual stack on
 * IPv6), so that a bind error can be reported with its errno. */
static int probe_bind(const struct addrinfo *ai) {
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
  int on = 1, off = 0, err = 0;

  if (fd < 0)
    return errno;
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (ai->ai_family == AF_INET6)
    (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
  if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0)
    err = errno;
  close(fd);
  return err;
}

/* Resolves the listen address to the first socket address that binds. */
static bool resolve_listen(const char *listen, struct sockaddr_storage *ret_addr,
                           struct gs_diag *diag) {
  char host[HOST_MAX], port[8];
  struct addrinfo hints, *res = NULL;
  int rc, err = 0;

  if (!split_listen(listen, host, sizeof host, port, sizeof port)) {
    gs_diag_set(diag, "listen",
                "invalid listen address \"%s\": expected HOST:PORT or [IPV6]:PORT "
                "with a port 0..65535",
                listen);
    return false;
  }
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  rc = getaddrinfo(host[0] != '\0' ? host : "0.0.0.0", port, &hints, &res);
  if (rc != 0) {
    gs_diag_set(diag, "listen", "cannot listen on %s: %s", listen,
                rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
    return false;
  }
  for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
      continue;
    err = probe_bind(ai);
    if (err == 0) {
      memset(ret_addr, 0, sizeof *ret_addr);
      memcpy(ret_addr, ai->ai_addr, ai->ai_addrlen);
      freeaddrinfo(res);
      return true;
    }
  }
  freeaddrinfo(res);
  gs_diag_set(diag, "listen", "cannot listen on %s: %s", listen,
              err != 0 ? strerror(err) : "no IPv4 or IPv6 address");
  return false;
}

/* Reads a whole PEM file (at most GS_HTTP_PEM_MAX bytes) into a new string. */
static char *read_pem(const char *path, const char *what, struct gs_diag *diag) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t n;

  if (f == NULL) {
    gs_diag_set(diag, path, "cannot read TLS %s file %s: %s", what, path, strerror(errno));
    return NULL;
  }
  buf = gs_malloc(GS_HTTP_PEM_MAX + 1);
  if (buf == NULL) {
    gs_diag_set(diag, path, "cannot read TLS %s file %s: out of memory", what, path);
    goto close_file;
  }
  n = fread(buf, 1, GS_HTTP_PEM_MAX + 1, f);
  if (ferror(f)) {
    gs_diag_set(diag, path, "cannot read TLS %s file %s: %s", what, path, strerror(errno));
    goto free_buf;
  }
  if (n > GS_HTTP_PEM_MAX) {
    gs_diag_set(diag, path, "TLS %s file %s is larger than %u bytes", what, path,
                GS_HTTP_PEM_MAX);
    goto free_buf;
  }
  buf[n] = '\0';
  if (strstr(buf, "-----BEGIN ") == NULL) {
    gs_diag_set(diag, path, "TLS %s file %s is not PEM (no -----BEGIN line)", what, path);
    goto free_buf;
  }
  fclose(f);
  return buf;

free_buf:
  gs_free(buf);
close_file:
  fclose(f);
  return NULL;
}

static void free_secret(char *p) {
  if (p == NULL)
    return;
  /* volatile so that the wipe of the private key is not optimized away */
  for (volatile char *v = p; *v != '\0'; v++)
    *v = '\0';
  gs_free(p);
}

struct gs_http_server *gs_http_start(const struct gs_http_opts *opts, gs_http_handler_fn fn,
                                     void *ctx, struct gs_diag *diag) {
  struct gs_http_server *s;
  struct sockaddr_storage addr;
  char *cert = NULL, *key = NULL, *trust = NULL;
  struct MHD_OptionItem items[13];
  unsigned conn_limit, threads, per_ip, timeout, flags, n = 0;
  const union MHD_DaemonInfo *info;
  bool tls;

  if (opts == NULL || fn == NULL || opts->listen == NULL) {
    gs_diag_set(diag, "listen", "no listen address or handler given");
    return NULL;
  }
  tls = opts->tls_cert_file != NULL || opts->tls_key_file != NULL;
  if (tls && (opts->tls_cert_file == NULL || opts->tls_key_file == NULL)) {
    gs_diag_set(diag, "tls", "a TLS certificate file and a key file must be given together");
    return NULL;
  }
  if (opts->tls_client_ca_file != NULL && !tls) {
    gs_diag_set(diag, "tls", "a client CA needs HTTPS: give the TLS certificate and key too");
    return NULL;
  }
  if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
    gs_diag_set(diag, "tls", "this libmicrohttpd was built without TLS support: "
                             "cannot serve HTTPS");
    return NULL;
  }
  s = gs_calloc(1, sizeof *s);
  if (s == NULL) {
    gs_diag_set(diag, "listen", "out of memory");
    return NULL;
  }
  s->fn = fn;
  s->ctx = ctx;
  s->log_fn = opts->log_fn;
  s->log_ctx = opts->log_ctx;
  s->body_max = opts->body_max != 0 ? opts->body_max : GS_HTTP_BODY_MAX_DEFAULT;
  if (s->body_max >= SIZE_MAX - 1)
    s->body_max = SIZE_MAX - 2; /* room for the NUL */
  conn_limit = opts->conn_limit != 0 ? opts->conn_limit : GS_HTTP_CONN_LIMIT_DEFAULT;
  threads = opts->threads; /* 0: a thread per connection */
  per_ip = opts->per_ip_limit != 0 ? opts->per_ip_limit : GS_HTTP_PER_IP_DEFAULT;
  timeout = opts->conn_timeout_s != 0 ? opts->conn_timeout_s : GS_HTTP_TIMEOUT_DEFAULT;
  if (threads > conn_limit)
    threads = conn_limit;
  if (per_ip > conn_limit)
    per_ip = conn_limit;

  if (tls) {
    if ((cert = read_pem(opts->tls_cert_file, "certificate", diag)) == NULL)
      goto free_server;
    if ((key = read_pem(opts->tls_key_file, "key", diag)) == NULL)
      goto free_pems;
    if (opts->tls_client_ca_file != NULL &&
        (trust = read_pem(opts->tls_client_ca_file, "client CA", diag)) == NULL)
      goto free_pems;
    s->client_ca = trust != NULL;
  }
  if (!resolve_listen(opts->listen, &addr, diag))
    goto free_pems;
  s->linger = linger_start(); /* optional: without it, early 413s just close */

  flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
  if (threads == 0)
    flags |= MHD_USE_THREAD_PER_CONNECTION;
  if (addr.ss_family == AF_INET6)
    flags |= MHD_USE_DUAL_STACK;
  if (tls)
    flags |= MHD_USE_TLS;
  items[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &addr};
  items[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, conn_limit, NULL};
  items[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip, NULL};
  items[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, timeout, NULL};
  if (threads > 1)
    items[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, threads, NULL};
  if (tls) {
    items[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, cert};
    items[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, key};
    /* clients are asked for a certificate; the handler is told whether it
     * verified (client_verified) */
    if (trust != NULL)
      items[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, trust};
  }
  items[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

  s->starter = pthread_self();
  s->capturing = true;
  s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_access, s,
                               MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
                               MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
                               MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                               MHD_OPTION_ARRAY, items, MHD_OPTION_END);
  s->capturing = false;
  if (s->daemon == NULL) {
    const char *why = s->start_err[0] != '\0' ? s->start_err : "libmicrohttpd refused";
    if (tls)
      gs_diag_set(diag, "listen", "cannot start HTTPS server on %s with %s and %s: %s",
                  opts->listen, opts->tls_cert_file, opts->tls_key_file, why);
    else
      gs_diag_set(diag, "listen", "cannot start HTTP server on %s: %s", opts->listen, why);
    goto stop_linger;
  }
  /* GnuTLS copied the credentials while the daemon started. */
  gs_free(cert);
  gs_free(trust);
  free_secret(key);
  info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
  s->port = info != NULL ? info->port : 0;
  return s;

stop_linger:
  linger_stop(s->linger);
free_pems:
  gs_free(cert);
  gs_free(trust);
  free_secret(key);
free_server:
  gs_free(s);
  return NULL;
}

uint16_t gs_http_port(const struct gs_http_server *s) {
  return s != NULL ? s->port : 0;
}

void gs_http_stop(struct gs_http_server *s) {
  if (s == NULL)
    return;
  if (s->daemon != NULL)
    MHD_stop_daemon(s->daemon);
  linger_stop(s->linger); /* after MHD: its last closes may still linger */
  gs_free(s);
}
