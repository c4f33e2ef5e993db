/* Tests of the HTTP adapter over loopback, with libcurl as the client:
 * round trips, body caps (Content-Length and chunked), keep-alive under
 * concurrency, slow clients, bind errors, IPv6 and HTTPS. One file (over
 * 800 lines) because it is one module's test binary, as the test layout wants. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "http.h"

#include <curl/curl.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024u * 1024u)

/* ------------------------------------------------------------ the handler */

static atomic_int handler_calls;

/* /echo: the body back; /status/N: status N; /null: no body; else a
 * description of the request. */
static void echo_handler(void *ctx, const struct gs_http_request *req,
                         struct gs_http_response *resp) {
  (void)ctx;
  atomic_fetch_add(&handler_calls, 1);
  if (req->body == NULL || req->body[req->body_len] != '\0') {
    resp->status = 500;
    return;
  }
  if (strcmp(req->path, "/echo") == 0) {
    resp->content_type = "application/octet-stream";
    resp->body = malloc(req->body_len + 1);
    memcpy(resp->body, req->body, req->body_len);
    resp->body_len = req->body_len;
  } else if (strncmp(req->path, "/status/", 8) == 0) {
    resp->status = atoi(req->path + 8);
    resp->content_type = "text/plain";
    resp->body = strdup("status");
    resp->body_len = 6;
  } else if (strcmp(req->path, "/sleep") == 0) {
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
  } else if (strcmp(req->path, "/null") == 0) {
    /* defaults only */
  } else {
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "method=%s path=%s query=%s ctype=%s len=%zu remote=%s",
                     req->method, req->path, req->query,
                     req->content_type ? req->content_type : "(none)", req->body_len,
                     req->remote);
    resp->content_type = "text/plain";
    resp->body = strdup(buf);
    resp->body_len = (size_t)n;
  }
}

/* Collects the server's log lines instead of printing them. */
static atomic_int log_lines;
static void quiet_log(void *ctx, const char *level, const char *msg) {
  (void)ctx;
  atomic_fetch_add(&log_lines, 1);
  if (getenv("GS_TEST_VERBOSE") != NULL)
    fprintf(stderr, "server log: level=%s msg=%s\n", level, msg);
}

/* Tests run with the default thread per connection, and those given a
 * prestate (unsigned N) also with a pool of N threads. */
static unsigned threads_of(void **state) {
  return state != NULL && *state != NULL ? *(const unsigned *)*state : 0;
}

static struct gs_http_server *start_threads(const char *listen, size_t body_max,
                                            unsigned timeout_s, unsigned threads) {
  struct gs_http_opts o = {0};
  struct gs_diag d = {{0}, {0}};
  struct gs_http_server *s;

  o.listen = listen;
  o.body_max = body_max;
  o.conn_timeout_s = timeout_s;
  o.threads = threads;
  o.log_fn = quiet_log;
  s = gs_http_start(&o, echo_handler, NULL, &d);
  if (s == NULL)
    fprintf(stderr, "start %s: %s\n", listen, d.text);
  assert_non_null(s);
  assert_true(gs_http_port(s) != 0);
  return s;
}

static struct gs_http_server *start(const char *listen, size_t body_max, unsigned timeout_s) {
  return start_threads(listen, body_max, timeout_s, 0);
}

/* ------------------------------------------------------------- the client */

struct resp {
  CURLcode rc;
  long status;
  char *body;
  size_t len;
  char ctype[128];
};

static size_t on_write(char *p, size_t size, size_t n, void *ud) {
  struct resp *r = ud;
  size_t k = size * n;
  char *nb = realloc(r->body, r->len + k + 1);

  if (nb == NULL)
    return 0;
  r->body = nb;
  memcpy(r->body + r->len, p, k);
  r->len += k;
  r->body[r->len] = '\0';
  return k;
}

/* A generated upload of `total` bytes ('a'..'z'), counting what curl took. */
struct upload {
  size_t total, sent;
};

static size_t on_read(char *buf, size_t size, size_t n, void *ud) {
  struct upload *u = ud;
  size_t k = size * n;

  if (k > u->total - u->sent)
    k = u->total - u->sent;
  for (size_t i = 0; i < k; i++)
    buf[i] = (char)('a' + (u->sent + i) % 26);
  u->sent += k;
  return k;
}

static void resp_free(struct resp *r) {
  free(r->body);
  memset(r, 0, sizeof *r);
}

static CURL *client(void) {
  CURL *h = curl_easy_init();

  assert_non_null(h);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
  return h;
}

static void finish(CURL *h, struct resp *r) {
  char *ct = NULL;

  curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
  r->rc = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
  curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct);
  snprintf(r->ctype, sizeof r->ctype, "%s", ct != NULL ? ct : "");
}

/* method "GET" or "POST"; body NULL for none. Reuses h (keep-alive). */
static void request(CURL *h, const char *method, const char *url, const char *ctype,
                    const char *body, size_t len, struct resp *r) {
  struct curl_slist *hdr = NULL;
  char line[160];

  memset(r, 0, sizeof *r);
  curl_easy_setopt(h, CURLOPT_URL, url);
  if (strcmp(method, "POST") == 0) {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  } else {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  }
  hdr = curl_slist_append(hdr, "Expect:"); /* as Go's client: no 100-continue */
  if (ctype != NULL) {
    snprintf(line, sizeof line, "Content-Type: %s", ctype);
    hdr = curl_slist_append(hdr, line);
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
  finish(h, r);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
  curl_slist_free_all(hdr);
}

/* Streams `total` generated bytes: with a Content-Length, or chunked. */
static void upload(const char *url, size_t total, bool chunked, bool expect100,
                   struct upload *u, struct resp *r) {
  CURL *h = client();
  struct curl_slist *hdr = NULL;

  memset(r, 0, sizeof *r);
  u->total = total;
  u->sent = 0;
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
  curl_easy_setopt(h, CURLOPT_READDATA, u);
  if (chunked)
    hdr = curl_slist_append(hdr, "Transfer-Encoding: chunked");
  else
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)total);
  hdr = curl_slist_append(hdr, expect100 ? "Expect: 100-continue" : "Expect:");
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
  finish(h, r);
  curl_slist_free_all(hdr);
  curl_easy_cleanup(h);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void url_of(const struct gs_http_server *s, const char *host, const char *path,
                   char *out, size_t out_size) {
  snprintf(out, out_size, "http://%s:%u%s", host, gs_http_port(s), path);
}

/* A server on a loopback port with body cap body_max (0: the default), and
 * in url (128 bytes) the address of its /echo. */
static struct gs_http_server *echo_server(size_t body_max, char *url) {
  struct gs_http_server *s = start("127.0.0.1:0", body_max, 0);
  url_of(s, "127.0.0.1", "/echo", url, 128);
  return s;
}

/* The server still answers a plain request. */
static void assert_alive(const struct gs_http_server *s) {
  CURL *h = client();
  struct resp r;
  char url[128];

  url_of(s, "127.0.0.1", "/info", url, sizeof url);
  request(h, "GET", url, NULL, NULL, 0, &r);
  assert_int_equal(r.rc, CURLE_OK);
  assert_int_equal(r.status, 200);
  resp_free(&r);
  curl_easy_cleanup(h);
}

/* ------------------------------------------------------------------ tests */

/* One request of test_round_trip and what must come back; NULL and -1:
 * not checked. */
struct trip {
  const char *path, *method, *ctype, *body;
  size_t len;
  long status;
  const char *want_ctype, *want_body, *want_in_body;
  long long want_len;
};

static void test_round_trip(void **state) {
  static const struct trip trips[] = {
      {"/info?a=1&b=%20x&c", "GET", NULL, NULL, 0, 200, "text/plain", NULL,
       "method=GET path=/info query=a=1&b=%20x&c ctype=(none) len=0 remote=127.0.0.1:", -1},
      {"/info", "POST", "application/json", "{\"a\":1}", 7, 200, NULL, NULL,
       "method=POST path=/info query= ctype=application/json len=7 ", -1},
      /* MHD unescapes the path. */
      {"/a%20b/c", "GET", NULL, NULL, 0, 200, NULL, NULL, "path=/a b/c query= ", -1},
      {"/echo", "POST", "application/json", "{\"Pod\":null}", 12, 200, "application/octet-stream",
       "{\"Pod\":null}", NULL, 12},
      /* Empty POST body. */
      {"/echo", "POST", NULL, "", 0, 200, NULL, NULL, NULL, 0},
      {"/status/404", "GET", NULL, NULL, 0, 404, "text/plain", "status", NULL, -1},
      /* A nonsense status becomes 500. */
      {"/status/7", "GET", NULL, NULL, 0, 500, NULL, NULL, NULL, -1},
      {"/null", "POST", NULL, "x", 1, 200, "application/json", NULL, NULL, 0},
  };
  struct gs_http_server *s = start("127.0.0.1:0", 0, 0);
  CURL *h = client();
  struct resp r;
  char url[128];
  long conns = 0;

  (void)state;
  for (size_t i = 0; i < sizeof trips / sizeof trips[0]; i++) {
    const struct trip *t = &trips[i];
    url_of(s, "127.0.0.1", t->path, url, sizeof url);
    request(h, t->method, url, t->ctype, t->body, t->len, &r);
    assert_int_equal(r.rc, CURLE_OK);
    assert_int_equal(r.status, t->status);
    if (t->want_ctype != NULL)
      assert_string_equal(r.ctype, t->want_ctype);
    if (t->want_body != NULL)
      assert_string_equal(r.body, t->want_body);
    if (t->want_in_body != NULL)
      assert_non_null(strstr(r.body, t->want_in_body));
    if (t->want_len >= 0)
      assert_int_equal(r.len, t->want_len);
    resp_free(&r);
  }

  /* All of the above went over one kept-alive connection. */
  curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &conns);
  assert_int_equal(conns, 0); /* no new connection for the last request */
  curl_easy_cleanup(h);
  gs_http_stop(s);
  gs_http_stop(NULL);
}

static void test_large_body(void **state) {
  struct gs_http_server *s = start("127.0.0.1:0", 0, 0);
  CURL *h = client();
  size_t n = 2 * MIB + 17;
  char *body = malloc(n);
  struct resp r;
  char url[128];
  unsigned x = 12345;

  (void)state;
  for (size_t i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    body[i] = (char)(x >> 16); /* includes NUL bytes */
  }
  url_of(s, "127.0.0.1", "/echo", url, sizeof url);
  for (int round = 0; round < 3; round++) {
    request(h, "POST", url, "application/json", body, n, &r);
    assert_int_equal(r.rc, CURLE_OK);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.len, n);
    assert_memory_equal(r.body, body, n);
    resp_free(&r);
  }
  free(body);
  curl_easy_cleanup(h);
  gs_http_stop(s);
}

static void test_content_length_over_cap(void **state) {
  char url[128];
  struct gs_http_server *s = echo_server(0, url);
  struct upload u;
  struct resp r;
  int calls = atomic_load(&handler_calls);
  double t0;

  (void)state;
  /* With Expect: 100-continue (curl's default for big bodies): refused
   * before a byte of body is sent. */
  t0 = now_s();
  upload(url, 20 * MIB, false, true, &u, &r);
  assert_true(now_s() - t0 < 2.0);
  assert_int_equal(r.rc, CURLE_OK);
  assert_int_equal(r.status, 413);
  assert_string_equal(r.ctype, "application/json");
  assert_string_equal(r.body, "{\"Error\":\"request body exceeds 16777216 bytes\"}");
  assert_int_equal(u.sent, 0);
  resp_free(&r);

  /* Without Expect (Go's client): still refused at the headers; the body
   * is not read, so far less than 20 MiB leaves the client. */
  t0 = now_s();
  upload(url, 20 * MIB, false, false, &u, &r);
  if (getenv("GS_TEST_VERBOSE") != NULL)
    fprintf(stderr, "no-expect 413: rc=%d status=%ld sent=%zu %.3fs\n", (int)r.rc, r.status,
            u.sent, now_s() - t0);
  assert_true(now_s() - t0 < 2.0);
  assert_int_equal(r.status, 413);
  assert_true(u.sent < 20 * MIB);
  resp_free(&r);

  assert_int_equal(atomic_load(&handler_calls), calls);
  assert_alive(s);
  gs_http_stop(s);
}

static void test_chunked_over_cap(void **state) {
  char url[128];
  struct gs_http_server *s = echo_server(0, url);
  struct upload u;
  struct resp r;
  int calls = atomic_load(&handler_calls);

  (void)state;
  upload(url, 20 * MIB, true, false, &u, &r);
  assert_int_equal(r.rc, CURLE_OK);
  assert_int_equal(r.status, 413);
  assert_string_equal(r.body, "{\"Error\":\"request body exceeds 16777216 bytes\"}");
  resp_free(&r);
  assert_int_equal(atomic_load(&handler_calls), calls);

  /* A chunked upload under the cap arrives whole. */
  upload(url, 3 * MIB + 5, true, false, &u, &r);
  assert_int_equal(r.rc, CURLE_OK);
  assert_int_equal(r.status, 200);
  assert_int_equal(r.len, 3 * MIB + 5);
  for (size_t i = 0; i < r.len; i += 4099)
    assert_int_equal(r.body[i], 'a' + (int)(i % 26));
  resp_free(&r);
  assert_alive(s);
  gs_http_stop(s);
}

/* The cap is exact, and it is the configured number that is reported. */
static void test_exact_cap(void **state) {
  static const struct {
    size_t size;
    bool chunked;
    long status;
  } cases[] = {{1000, false, 200}, {1000, true, 200}, {1001, false, 413}, {1001, true, 413}};
  char url[128];
  struct gs_http_server *s = echo_server(1000, url);
  struct upload u;
  struct resp r;

  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    upload(url, cases[i].size, cases[i].chunked, false, &u, &r);
    assert_int_equal(r.status, cases[i].status);
    if (cases[i].status == 200)
      assert_int_equal(r.len, cases[i].size);
    else
      assert_string_equal(r.body, "{\"Error\":\"request body exceeds 1000 bytes\"}");
    resp_free(&r);
  }
  assert_alive(s);
  gs_http_stop(s);
}

/* A chunked upload that never ends is cut off after GS_HTTP_DRAIN_MAX
 * dropped bytes, without buffering and without calling the handler. */
static void test_chunked_endless(void **state) {
  char url[128];
  struct gs_http_server *s = echo_server(4096, url);
  struct upload u;
  struct resp r;
  int calls = atomic_load(&handler_calls);

  (void)state;
  upload(url, 1024u * MIB, true, false, &u, &r);
  if (getenv("GS_TEST_VERBOSE") != NULL)
    fprintf(stderr, "endless: rc=%d status=%ld sent=%zu\n", (int)r.rc, r.status, u.sent);
  assert_true(r.rc != CURLE_OK || r.status == 413);
  assert_true(u.sent < GS_HTTP_DRAIN_MAX + 16 * MIB);
  resp_free(&r);
  assert_int_equal(atomic_load(&handler_calls), calls);
  assert_alive(s);
  gs_http_stop(s);
}

#define CLIENTS 8
#define PER_CLIENT 200

struct worker {
  const struct gs_http_server *s;
  int id;
  int ok;
  long conns;
};

static void *client_thread(void *arg) {
  struct worker *w = arg;
  CURL *h = client();
  char url[128], body[128];
  struct resp r;

  url_of(w->s, "127.0.0.1", "/echo", url, sizeof url);
  for (int i = 0; i < PER_CLIENT; i++) {
    long c = 0;
    int n = snprintf(body, sizeof body, "{\"client\":%d,\"i\":%d}", w->id, i);
    request(h, "POST", url, "application/json", body, (size_t)n, &r);
    if (r.rc == CURLE_OK && r.status == 200 && r.len == (size_t)n &&
        memcmp(r.body, body, (size_t)n) == 0)
      w->ok++;
    curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &c);
    w->conns += c;
    resp_free(&r);
  }
  curl_easy_cleanup(h);
  return NULL;
}

static void test_concurrent_keepalive(void **state) {
  struct gs_http_server *s = start_threads("127.0.0.1:0", 0, 0, threads_of(state));
  pthread_t t[CLIENTS];
  struct worker w[CLIENTS];
  long conns = 0;

  for (int i = 0; i < CLIENTS; i++) {
    w[i] = (struct worker){s, i, 0, 0};
    assert_int_equal(pthread_create(&t[i], NULL, client_thread, &w[i]), 0);
  }
  for (int i = 0; i < CLIENTS; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(w[i].ok, PER_CLIENT);
    conns += w[i].conns;
  }
  /* Keep-alive: about one connection per client, not one per request. */
  assert_true(conns <= 2 * CLIENTS);
  gs_http_stop(s);
}

static void *sleep_client(void *arg) {
  const struct gs_http_server *s = arg;
  CURL *h = client();
  struct resp r;
  char url[128];

  url_of(s, "127.0.0.1", "/sleep", url, sizeof url);
  request(h, "POST", url, "application/json", "{}", 2, &r);
  assert_int_equal(r.status, 200);
  resp_free(&r);
  curl_easy_cleanup(h);
  return NULL;
}

/* Handler calls on different connections overlap: a slow one (a bind
 * waiting for the apiserver) does not hold up the others. */
static void test_slow_handler_does_not_block(void **state) {
  struct gs_http_server *s = start("127.0.0.1:0", 0, 0);
  pthread_t t[8];
  double t0;

  (void)state;
  t0 = now_s();
  for (int i = 0; i < 8; i++)
    assert_int_equal(pthread_create(&t[i], NULL, sleep_client, s), 0);
  for (int i = 0; i < 8; i++)
    pthread_join(t[i], NULL);
  /* 8 × 0.3 s one after another would take 2.4 s. */
  assert_true(now_s() - t0 < 1.5);
  gs_http_stop(s);
}

static int raw_connect(uint16_t port) {
  struct sockaddr_in a;
  int fd = socket(AF_INET, SOCK_STREAM, 0);

  assert_true(fd >= 0);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  return fd;
}

static void test_slow_clients(void **state) {
  struct gs_http_server *s = start_threads("127.0.0.1:0", 0, 1, threads_of(state));
  int silent[8], partial;
  const char *half = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"a\":";
  struct pollfd p;
  double t0;
  char c;

  /* Connections that send nothing, or half a request, on every worker. */
  for (int i = 0; i < 8; i++)
    silent[i] = raw_connect(gs_http_port(s));
  partial = raw_connect(gs_http_port(s));
  assert_int_equal(send(partial, half, strlen(half), 0), (ssize_t)strlen(half));

  t0 = now_s();
  for (int i = 0; i < 50; i++)
    assert_alive(s);
  assert_true(now_s() - t0 < 5.0);

  /* The idle timeout (1 s here) closes them. */
  p.fd = partial;
  p.events = POLLIN;
  assert_int_equal(poll(&p, 1, 5000), 1);
  assert_true(recv(partial, &c, 1, 0) <= 0);
  p.fd = silent[0];
  assert_int_equal(poll(&p, 1, 5000), 1);
  assert_true(recv(silent[0], &c, 1, 0) <= 0);
  for (int i = 0; i < 8; i++)
    close(silent[i]);
  close(partial);
  gs_http_stop(s);
}

static void test_bind_errors(void **state) {
  struct gs_http_server *a = start("127.0.0.1:0", 0, 0), *b;
  struct gs_http_opts o = {0};
  struct gs_diag d = {{0}, {0}};
  char addr[64], want[128];
  static const char *const bad[] = {"nope", "127.0.0.1", "127.0.0.1:", "127.0.0.1:99999",
                                    "127.0.0.1:8x", "::1:80", "[::1]80", "[::1", ""};

  (void)state;
  snprintf(addr, sizeof addr, "127.0.0.1:%u", gs_http_port(a));
  o.listen = addr;
  b = gs_http_start(&o, echo_handler, NULL, &d);
  assert_null(b);
  snprintf(want, sizeof want, "cannot listen on %s: Address already in use", addr);
  assert_string_equal(d.text, want);
  assert_string_equal(d.where, "listen");

  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memset(&d, 0, sizeof d);
    o.listen = bad[i];
    assert_null(gs_http_start(&o, echo_handler, NULL, &d));
    assert_non_null(strstr(d.text, "invalid listen address"));
  }
  /* An address this machine does not have. */
  memset(&d, 0, sizeof d);
  o.listen = "192.0.2.1:0";
  b = gs_http_start(&o, echo_handler, NULL, &d);
  if (b != NULL) /* net.ipv4.ip_nonlocal_bind=1 allows it */
    gs_http_stop(b);
  else
    assert_string_equal(d.text,
                        "cannot listen on 192.0.2.1:0: Cannot assign requested address");

  /* Names and the empty host (all IPv4 addresses) work. */
  o.log_fn = quiet_log;
  o.listen = "localhost:0";
  b = gs_http_start(&o, echo_handler, NULL, &d);
  assert_non_null(b);
  gs_http_stop(b);
  o.listen = ":0";
  b = gs_http_start(&o, echo_handler, NULL, &d);
  assert_non_null(b);
  assert_alive(b);
  gs_http_stop(b);

  memset(&d, 0, sizeof d);
  o.listen = NULL;
  assert_null(gs_http_start(&o, echo_handler, NULL, &d));
  assert_true(d.text[0] != '\0');
  assert_null(gs_http_start(NULL, echo_handler, NULL, NULL));
  o.listen = "127.0.0.1:0";
  assert_null(gs_http_start(&o, NULL, NULL, NULL));
  gs_http_stop(a);
}

static void test_ipv6(void **state) {
  struct gs_http_opts o = {0};
  struct gs_diag d = {{0}, {0}};
  struct gs_http_server *s;
  CURL *h;
  struct resp r;
  char url[128];

  (void)state;
  o.listen = "[::1]:0";
  o.log_fn = quiet_log;
  s = gs_http_start(&o, echo_handler, NULL, &d);
  if (s == NULL) {
    fprintf(stderr, "IPv6 loopback unavailable (%s): skipped\n", d.text);
    skip();
  }
  h = client();
  snprintf(url, sizeof url, "http://[::1]:%u/info", gs_http_port(s));
  request(h, "GET", url, NULL, NULL, 0, &r);
  assert_int_equal(r.rc, CURLE_OK);
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body, "remote=[::1]:"));
  resp_free(&r);
  curl_easy_cleanup(h);
  gs_http_stop(s);

  /* The IPv6 wildcard is dual-stack: IPv4 clients reach it too. */
  memset(&d, 0, sizeof d);
  o.listen = "[::]:0";
  s = gs_http_start(&o, echo_handler, NULL, &d);
  assert_non_null(s);
  assert_alive(s);
  gs_http_stop(s);
}

/* ------------------------------------------------------------------ HTTPS */

struct tls_dir {
  char dir[64], cert[96], key[96];
};

static bool make_cert(struct tls_dir *t) {
  char cmd[512];

  if (system("command -v openssl >/dev/null 2>&1") != 0)
    return false;
  snprintf(t->dir, sizeof t->dir, "/tmp/gs_http_tls_XXXXXX");
  if (mkdtemp(t->dir) == NULL)
    return false;
  snprintf(t->cert, sizeof t->cert, "%s/cert.pem", t->dir);
  snprintf(t->key, sizeof t->key, "%s/key.pem", t->dir);
  snprintf(cmd, sizeof cmd,
           "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
           "-addext subjectAltName=IP:127.0.0.1 -keyout %s -out %s >/dev/null 2>&1",
           t->key, t->cert);
  return system(cmd) == 0;
}

static void remove_cert(const struct tls_dir *t) {
  unlink(t->cert);
  unlink(t->key);
  rmdir(t->dir);
}

static void test_https(void **state) {
  struct tls_dir t;
  struct gs_http_opts o = {0};
  struct gs_diag d = {{0}, {0}};
  struct gs_http_server *s;
  CURL *h;
  struct resp r;
  char url[128], bad[128];
  FILE *f;

  (void)state;
  if (!make_cert(&t)) {
    fprintf(stderr, "openssl CLI missing or failing: HTTPS test skipped\n");
    skip();
  }
  o.listen = "127.0.0.1:0";
  o.tls_cert_file = t.cert;
  o.tls_key_file = t.key;
  o.log_fn = quiet_log;
  s = gs_http_start(&o, echo_handler, NULL, &d);
  if (s == NULL)
    fprintf(stderr, "https start: %s\n", d.text);
  assert_non_null(s);

  h = client();
  curl_easy_setopt(h, CURLOPT_CAINFO, t.cert);
  snprintf(url, sizeof url, "https://127.0.0.1:%u/echo", gs_http_port(s));
  for (int i = 0; i < 3; i++) {
    request(h, "POST", url, "application/json", "{\"tls\":true}", 12, &r);
    assert_int_equal(r.rc, CURLE_OK);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"tls\":true}");
    resp_free(&r);
  }
  curl_easy_cleanup(h);

  /* Without the CA the certificate is not trusted. */
  h = client();
  request(h, "GET", url, NULL, NULL, 0, &r);
  assert_int_equal(r.rc, CURLE_PEER_FAILED_VERIFICATION);
  resp_free(&r);
  curl_easy_cleanup(h);
  /* Plain HTTP to the HTTPS port fails. */
  h = client();
  snprintf(url, sizeof url, "http://127.0.0.1:%u/info", gs_http_port(s));
  request(h, "GET", url, NULL, NULL, 0, &r);
  assert_true(r.rc != CURLE_OK || r.status != 200);
  resp_free(&r);
  curl_easy_cleanup(h);
  gs_http_stop(s);

  /* File errors. */
  memset(&d, 0, sizeof d);
  snprintf(bad, sizeof bad, "%s/missing.pem", t.dir);
  o.tls_key_file = bad;
  assert_null(gs_http_start(&o, echo_handler, NULL, &d));
  assert_non_null(strstr(d.text, "cannot read TLS key file"));
  assert_non_null(strstr(d.text, "No such file or directory"));
  assert_string_equal(d.where, bad);

  memset(&d, 0, sizeof d);
  o.tls_key_file = NULL;
  assert_null(gs_http_start(&o, echo_handler, NULL, &d));
  assert_non_null(strstr(d.text, "must be given together"));

  memset(&d, 0, sizeof d);
  f = fopen(bad, "w");
  fputs("not a pem\n", f);
  fclose(f);
  o.tls_key_file = bad;
  assert_null(gs_http_start(&o, echo_handler, NULL, &d));
  assert_non_null(strstr(d.text, "is not PEM"));

  /* PEM-looking garbage is rejected by GnuTLS at start-up. */
  memset(&d, 0, sizeof d);
  f = fopen(bad, "w");
  fputs("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", f);
  fclose(f);
  assert_null(gs_http_start(&o, echo_handler, NULL, &d));
  assert_non_null(strstr(d.text, "cannot start HTTPS server on 127.0.0.1:0 with "));
  assert_non_null(strstr(d.text, "GnuTLS")); /* MHD's own reason is kept */
  if (getenv("GS_TEST_VERBOSE") != NULL)
    fprintf(stderr, "diag: %s\n", d.text);
  unlink(bad);
  remove_cert(&t);
}

static int setup_curl(void **state) {
  (void)state;
  return curl_global_init(CURL_GLOBAL_ALL) == CURLE_OK ? 0 : -1;
}

static int teardown_curl(void **state) {
  (void)state;
  curl_global_cleanup();
  return 0;
}

int main(void) {
  static unsigned pool4 = 4;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_large_body),
      cmocka_unit_test(test_content_length_over_cap),
      cmocka_unit_test(test_chunked_over_cap),
      cmocka_unit_test(test_exact_cap),
      cmocka_unit_test(test_chunked_endless),
      cmocka_unit_test(test_concurrent_keepalive),
      {"test_concurrent_keepalive_pool4", test_concurrent_keepalive, NULL, NULL, &pool4},
      cmocka_unit_test(test_slow_handler_does_not_block),
      cmocka_unit_test(test_slow_clients),
      {"test_slow_clients_pool4", test_slow_clients, NULL, NULL, &pool4},
      cmocka_unit_test(test_bind_errors),
      cmocka_unit_test(test_ipv6),
      cmocka_unit_test(test_https),
  };
  return cmocka_run_group_tests(tests, setup_curl, teardown_curl);
}
