/* Test harness for the live backend: the test apiserver as a subprocess
 * (test/lib/kube_apiserver.py), a small REST client to look at and
 * change its state, kubeconfig files, and a sink that records what the
 * backend delivers. Included by the test_kube_*.c programs (header-only:
 * each test binary is one translation unit). */
#ifndef GPUSHARE_KUBE_HARNESS_H
#define GPUSHARE_KUBE_HARNESS_H

#include "arena.h"
#include "kube_int.h"
#include "../testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define H_FAKE_PY GS_SOURCE_DIR "/test/lib/kube_apiserver.py"

/* ---- temp dirs and files ------------------------------------------------- */

static inline void h_mkdtemp(char *out, size_t cap) {
  snprintf(out, cap, "/tmp/gs-k8s-test-XXXXXX");
  if (mkdtemp(out) == NULL) {
    perror("mkdtemp");
    abort();
  }
}

static inline void h_write(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    perror(path);
    abort();
  }
  fputs(text, f);
  fclose(f);
}

static inline void h_rmrf(const char *dir) {
  pid_t pid;
  char *argv[] = {"rm", "-rf", (char *)dir, NULL};
  if (dir[0] == '\0' || posix_spawnp(&pid, "rm", NULL, NULL, argv, environ) != 0)
    return;
  waitpid(pid, NULL, 0);
}

static inline int h_run(char *const argv[]) {
  pid_t pid;
  int st = 0;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
    posix_spawn_file_actions_destroy(&fa);
    return -1;
  }
  posix_spawn_file_actions_destroy(&fa);
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A free TCP port on 127.0.0.1 (bound then released). */
static inline int h_free_port(void) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0), port;
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &len) != 0)
    abort();
  port = ntohs(a.sin_port);
  close(fd);
  return port;
}

static inline int64_t h_now_ms(void) {
  return gs__kube_now_ms();
}

static inline void h_sleep_ms(long ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* ---- TLS material (openssl CLI) -------------------------------------------- */

/* Makes dir/ca.crt, dir/ca.key, dir/server.crt (SAN 127.0.0.1, localhost,
 * kubernetes.default.svc), dir/server.key, dir/client.crt, dir/client.key,
 * and a second unrelated CA dir/other-ca.crt. */
static inline void h_make_certs(const char *dir) {
  char ca[512], cakey[512], other[512], otherkey[512], srv[512], srvkey[512], csr[512], ext[512],
      cli[512], clikey[512], clicsr[512];
  snprintf(ca, sizeof ca, "%s/ca.crt", dir);
  snprintf(cakey, sizeof cakey, "%s/ca.key", dir);
  snprintf(other, sizeof other, "%s/other-ca.crt", dir);
  snprintf(otherkey, sizeof otherkey, "%s/other-ca.key", dir);
  snprintf(srv, sizeof srv, "%s/server.crt", dir);
  snprintf(srvkey, sizeof srvkey, "%s/server.key", dir);
  snprintf(csr, sizeof csr, "%s/server.csr", dir);
  snprintf(ext, sizeof ext, "%s/san.ext", dir);
  snprintf(cli, sizeof cli, "%s/client.crt", dir);
  snprintf(clikey, sizeof clikey, "%s/client.key", dir);
  snprintf(clicsr, sizeof clicsr, "%s/client.csr", dir);
  h_write(ext, "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n");
  {
    char *a[] = {"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", cakey,
                 "-out", ca, "-days", "2", "-subj", "/CN=gs-test-ca", NULL};
    if (h_run(a) != 0)
      abort();
  }
  {
    char *a[] = {"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", otherkey,
                 "-out", other, "-days", "2", "-subj", "/CN=gs-other-ca", NULL};
    if (h_run(a) != 0)
      abort();
  }
  {
    char *a[] = {"openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", srvkey,
                 "-out", csr, "-subj", "/CN=kube-apiserver", NULL};
    char *b[] = {"openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", cakey,
                 "-CAcreateserial", "-out", srv, "-days", "2", "-extfile", ext, NULL};
    if (h_run(a) != 0 || h_run(b) != 0)
      abort();
  }
  {
    char *a[] = {"openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", clikey,
                 "-out", clicsr, "-subj", "/CN=gpushare/O=system:masters", NULL};
    char *b[] = {"openssl", "x509", "-req", "-in", clicsr, "-CA", ca, "-CAkey", cakey,
                 "-CAcreateserial", "-out", cli, "-days", "2", NULL};
    if (h_run(a) != 0 || h_run(b) != 0)
      abort();
  }
}

/* base64 of a file's bytes (malloc'd). */
static inline char *h_base64_file(const char *path) {
  static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  FILE *f = fopen(path, "rb");
  unsigned char *in;
  char *out;
  long n;
  size_t o = 0;
  if (f == NULL)
    abort();
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  in = malloc((size_t)n + 3);
  out = malloc(((size_t)n + 2) / 3 * 4 + 1);
  if (in == NULL || out == NULL || fread(in, 1, (size_t)n, f) != (size_t)n)
    abort();
  fclose(f);
  for (long i = 0; i < n; i += 3) {
    unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
                 (i + 2 < n ? in[i + 2] : 0);
    out[o++] = tbl[v >> 18 & 63];
    out[o++] = tbl[v >> 12 & 63];
    out[o++] = i + 1 < n ? tbl[v >> 6 & 63] : '=';
    out[o++] = i + 2 < n ? tbl[v & 63] : '=';
  }
  out[o] = '\0';
  free(in);
  return out;
}

/* ---- the test apiserver ------------------------------------------------------ */

struct h_fake {
  pid_t pid;
  int port;
  int admin_port;
  char dir[128];
  char url[128];       /* base URL */
  char admin_url[128]; /* admin base URL ("" without) */
  char token[128];     /* "" = none */
  bool tls;
};

struct h_fake_opts {
  int port;          /* 0 = any */
  const char *token; /* NULL = no auth */
  bool tls;          /* needs certs in dir (h_make_certs) */
  const char *state; /* objects file, NULL = empty */
  bool client_ca;    /* verify client certificates against dir/ca.crt */
};

static inline int h_read_int_file(const char *path, int *ret2) {
  FILE *f = fopen(path, "r");
  int v = 0, v2 = 0;
  if (f == NULL)
    return 0;
  if (fscanf(f, "%d", &v) != 1)
    v = 0;
  if (ret2 != NULL && fscanf(f, "%d", &v2) == 1)
    *ret2 = v2;
  fclose(f);
  return v;
}

/* Starts the fake in dir (which holds the certs when tls). */
static inline void h_fake_start(struct h_fake *f, const char *dir, const struct h_fake_opts *o) {
  char portfile[256], adminfile[256], port[16], cert[256], key[256], ca[256];
  char *argv[24];
  int n = 0;
  memset(f, 0, sizeof *f);
  snprintf(f->dir, sizeof f->dir, "%s", dir);
  snprintf(portfile, sizeof portfile, "%s/port", dir);
  snprintf(adminfile, sizeof adminfile, "%s/admin-port", dir);
  unlink(portfile);
  unlink(adminfile);
  snprintf(port, sizeof port, "%d", o->port);
  argv[n++] = "python3";
  argv[n++] = H_FAKE_PY;
  argv[n++] = "--port";
  argv[n++] = port;
  argv[n++] = "--port-file";
  argv[n++] = portfile;
  argv[n++] = "--admin-port";
  argv[n++] = "0";
  argv[n++] = "--admin-port-file";
  argv[n++] = adminfile;
  if (o->tls) {
    snprintf(cert, sizeof cert, "%s/server.crt", dir);
    snprintf(key, sizeof key, "%s/server.key", dir);
    argv[n++] = "--tls-cert";
    argv[n++] = cert;
    argv[n++] = "--tls-key";
    argv[n++] = key;
    f->tls = true;
  }
  if (o->client_ca) {
    snprintf(ca, sizeof ca, "%s/ca.crt", dir);
    argv[n++] = "--client-ca";
    argv[n++] = ca;
  }
  if (o->token != NULL) {
    argv[n++] = "--token";
    argv[n++] = (char *)o->token;
    snprintf(f->token, sizeof f->token, "%s", o->token);
  }
  if (o->state != NULL) {
    argv[n++] = "--state";
    argv[n++] = (char *)o->state;
  }
  argv[n] = NULL;
  {
    /* Not our stdout/stderr: ctest waits for every holder of its pipe, and
     * the fake must not keep a failed test's output open. */
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    if (posix_spawnp(&f->pid, "python3", &fa, NULL, argv, environ) != 0) {
      perror("posix_spawnp python3");
      abort();
    }
    posix_spawn_file_actions_destroy(&fa);
  }
  for (int i = 0; i < 200 && f->port == 0; i++) {
    h_sleep_ms(50);
    f->port = h_read_int_file(portfile, NULL);
  }
  if (f->port == 0) {
    fprintf(stderr, "test apiserver did not start\n");
    abort();
  }
  for (int i = 0; i < 100 && f->admin_port == 0; i++) {
    f->admin_port = h_read_int_file(adminfile, NULL);
    if (f->admin_port == 0)
      h_sleep_ms(20);
  }
  snprintf(f->url, sizeof f->url, "%s://127.0.0.1:%d", o->tls ? "https" : "http", f->port);
  if (f->admin_port != 0)
    snprintf(f->admin_url, sizeof f->admin_url, "http://127.0.0.1:%d", f->admin_port);
}

static inline void h_fake_stop(struct h_fake *f) {
  if (f->pid > 0) {
    kill(f->pid, SIGTERM);
    waitpid(f->pid, NULL, 0);
    f->pid = 0;
  }
}

/* ---- REST against the fake ------------------------------------------------------ */

static inline size_t h_collect(char *d, size_t s, size_t n, void *u) {
  struct gs_buf *b = u;
  return gs_buf_add(b, d, s * n) == GS_EOK ? s * n : 0;
}

/* method url body → parsed reply (new ref, may be NULL); *ret_code the status. */
static inline json_t *h_http(const struct h_fake *f, const char *method, const char *url,
                      const json_t *body, long *ret_code) {
  CURL *c = curl_easy_init();
  struct curl_slist *hdr = NULL;
  struct gs_buf b = {.max = 64u << 20};
  char auth[256], *text = NULL;
  json_t *reply = NULL;
  long code = 0;
  hdr = curl_slist_append(hdr, "Content-Type: application/json");
  hdr = curl_slist_append(hdr, "Accept: application/json");
  if (f->token[0] && strncmp(url, f->url, strlen(f->url)) == 0) {
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", f->token);
    hdr = curl_slist_append(hdr, auth);
  }
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, h_collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  if (body != NULL) {
    text = json_dumps(body, JSON_COMPACT);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
  }
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  if (b.p != NULL)
    reply = json_loadb(b.p, b.len, 0, NULL);
  gs_buf_release(&b);
  free(text);
  curl_slist_free_all(hdr);
  curl_easy_cleanup(c);
  if (ret_code != NULL)
    *ret_code = code;
  return reply;
}

/* REST on the fake's API port: path from the root. */
static inline json_t *h_rest(const struct h_fake *f, const char *method, const char *path,
                      const json_t *body, long *ret_code) {
  char url[1024];
  snprintf(url, sizeof url, "%s%s", f->url, path);
  return h_http(f, method, url, body, ret_code);
}

static inline void h_rest_ok(const struct h_fake *f, const char *method, const char *path,
                      json_t *body_take) {
  long code = 0;
  json_t *r = h_rest(f, method, path, body_take, &code);
  json_decref(r);
  json_decref(body_take);
  if (code < 200 || code > 299) {
    fprintf(stderr, "%s %s → %ld\n", method, path, code);
    abort();
  }
}

static inline json_t *h_node(const char *name) {
  return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:{s:s, s:s}}}", "apiVersion", "v1", "kind",
                   "Node", "metadata", "name", name, "labels", "ack.node.gpu.schedule", "share",
                   "status", "capacity", "aliyun.com/gpu-mem", "32", "aliyun.com/gpu-count", "2");
}

static inline json_t *h_pod(const char *ns, const char *name) {
  return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:[{s:s, s:s, s:{s:{s:s}}}]}}", "apiVersion",
                   "v1", "kind", "Pod", "metadata", "name", name, "namespace", ns, "spec",
                   "containers", "name", "main", "image", "busybox", "resources", "limits",
                   "aliyun.com/gpu-mem", "4");
}

static inline json_t *h_configmap(const char *ns, const char *name, const char *key, const char *value) {
  return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                   "metadata", "name", name, "namespace", ns, "data", key, value);
}

static inline void h_create_node(const struct h_fake *f, const char *name) {
  h_rest_ok(f, "POST", "/api/v1/nodes", h_node(name));
}

static inline void h_create_pod(const struct h_fake *f, const char *ns, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
  h_rest_ok(f, "POST", path, h_pod(ns, name));
}

static inline void h_delete_pod(const struct h_fake *f, const char *ns, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
  h_rest_ok(f, "DELETE", path, NULL);
}

static inline void h_create_configmap(const struct h_fake *f, const char *ns, const char *name,
                               const char *key, const char *value) {
  char path[512];
  snprintf(path, sizeof path, "/api/v1/namespaces/%s/configmaps", ns);
  h_rest_ok(f, "POST", path, h_configmap(ns, name, key, value));
}

/* GET one pod; new ref or NULL. */
static inline json_t *h_get_pod(const struct h_fake *f, const char *ns, const char *name) {
  char path[512];
  long code = 0;
  json_t *p;
  snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
  p = h_rest(f, "GET", path, NULL, &code);
  if (code != 200) {
    json_decref(p);
    return NULL;
  }
  return p;
}

static inline const char *h_meta(const json_t *obj, const char *key) {
  return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

/* ---- fault injection (the fake's admin API) ------------------------------------- */

static inline void h_admin(const struct h_fake *f, const char *path, json_t *body_take) {
  char url[512];
  long code = 0;
  json_t *r;
  if (body_take == NULL)
    body_take = json_object();
  snprintf(url, sizeof url, "%s%s", f->admin_url[0] ? f->admin_url : f->url, path);
  r = h_http(f, "POST", url, body_take, &code);
  json_decref(r);
  json_decref(body_take);
  if (code < 200 || code > 299) {
    fprintf(stderr, "admin %s → %ld\n", path, code);
    abort();
  }
}

/* Closes every open watch stream. */
static inline void h_admin_drop_watches(const struct h_fake *f) {
  h_admin(f, "/admin/watches/drop", NULL);
}

/* Compacts the history and closes the watches: they come back from an
 * older resourceVersion and get 410. */
static inline void h_admin_expire(const struct h_fake *f) {
  h_admin(f, "/admin/compact", NULL);
  h_admin(f, "/admin/watches/drop", NULL);
}

/* The next count (< 0: all) requests matching method and path (regex)
 * answer status, with Retry-After when retry_after ≥ 0. */
static inline void h_admin_fault(const struct h_fake *f, const char *method, const char *path,
                                 int status, int count, int retry_after) {
  json_t *b = json_pack("{s:s, s:s, s:i}", "method", method, "path", path, "status", status);
  json_object_set_new(b, "count", count < 0 ? json_null() : json_integer(count));
  if (retry_after >= 0)
    json_object_set_new(b, "retryAfter", json_integer(retry_after));
  h_admin(f, "/admin/faults", b);
}

static inline void h_admin_clear_faults(const struct h_fake *f) {
  char url[512];
  long code = 0;
  snprintf(url, sizeof url, "%s/admin/faults", f->admin_url[0] ? f->admin_url : f->url);
  json_decref(h_http(f, "DELETE", url, NULL, &code));
}

/* The apiserver accepts only this bearer token from now on. */
static inline void h_admin_token(const struct h_fake *f, const char *token) {
  h_admin(f, "/admin/tokens", json_pack("{s:s}", "token", token));
}

/* ---- kubeconfig ------------------------------------------------------------------ */

/* Writes dir/kubeconfig: server url, then cluster_extra and user_extra
 * lines (already indented by the caller: 4 spaces). */
static inline void h_kubeconfig(const char *path, const char *server, const char *cluster_extra,
                         const char *user_extra) {
  FILE *f = fopen(path, "w");
  if (f == NULL)
    abort();
  fprintf(f,
          "apiVersion: v1\nkind: Config\ncurrent-context: test\nclusters:\n- name: c\n"
          "  cluster:\n    server: %s\n%s"
          "users:\n- name: u\n  user:\n%s"
          "contexts:\n- name: test\n  context:\n    cluster: c\n    user: u\n",
          server, cluster_extra ? cluster_extra : "", user_extra ? user_extra : "    {}\n");
  fclose(f);
}

/* ---- recording sink -------------------------------------------------------------------- */

struct h_rec {
  pthread_mutex_t mu;
  json_t *nodes, *pods, *cms; /* key → object */
  int synced, node_deletes, pod_deletes, cm_deletes, upserts;
  int leader;                 /* -1 never told */
  int leader_changes;
};

static inline void h_rec_init(struct h_rec *r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->mu, NULL);
  r->nodes = json_object();
  r->pods = json_object();
  r->cms = json_object();
  r->leader = -1;
}

static inline void h_rec_free(struct h_rec *r) {
  json_decref(r->nodes);
  json_decref(r->pods);
  json_decref(r->cms);
  pthread_mutex_destroy(&r->mu);
}

static inline void h_key(const json_t *o, char *out, size_t cap) {
  const char *ns = h_meta(o, "namespace");
  snprintf(out, cap, "%s/%s", ns ? ns : "", h_meta(o, "name") ? h_meta(o, "name") : "");
}

static inline void h_on_node(void *ctx, const json_t *node) {
  struct h_rec *r = ctx;
  pthread_mutex_lock(&r->mu);
  json_object_set_new(r->nodes, h_meta(node, "name"), json_deep_copy(node)); /* borrowed */
  r->upserts++;
  pthread_mutex_unlock(&r->mu);
}

static inline void h_on_node_del(void *ctx, const char *name) {
  struct h_rec *r = ctx;
  pthread_mutex_lock(&r->mu);
  json_object_del(r->nodes, name);
  r->node_deletes++;
  pthread_mutex_unlock(&r->mu);
}

/* A watched object into map under its namespace/name (borrowed: copied),
 * or out of it (keep false), counting in *count; under r's lock. */
static inline void h_rec_keep(struct h_rec *r, json_t *map, const json_t *o, bool keep, int *count) {
  char key[600];
  h_key(o, key, sizeof key);
  pthread_mutex_lock(&r->mu);
  if (keep)
    json_object_set_new(map, key, json_deep_copy(o));
  else
    json_object_del(map, key);
  (*count)++;
  pthread_mutex_unlock(&r->mu);
}

/* The pod and ConfigMap callbacks: NAME keeps (KEEP) or drops the object in
 * r->MAP and counts it in r->COUNT. */
#define H_ON(name, map, keep, count)                                                          \
  static inline void name(void *ctx, const json_t *o) {                                       \
    struct h_rec *r = ctx;                                                                    \
    h_rec_keep(r, r->map, o, keep, &r->count);                                                \
  }
H_ON(h_on_pod, pods, true, upserts)
H_ON(h_on_pod_del, pods, false, pod_deletes)
H_ON(h_on_cm, cms, true, upserts)
H_ON(h_on_cm_del, cms, false, cm_deletes)

static inline void h_on_synced(void *ctx) {
  struct h_rec *r = ctx;
  pthread_mutex_lock(&r->mu);
  r->synced++;
  pthread_mutex_unlock(&r->mu);
}

static inline void h_on_leader(void *ctx, bool is_leader) {
  struct h_rec *r = ctx;
  pthread_mutex_lock(&r->mu);
  r->leader = is_leader;
  r->leader_changes++;
  pthread_mutex_unlock(&r->mu);
}

static inline struct gs_cluster_sink h_sink(struct h_rec *r) {
  struct gs_cluster_sink s = {.ctx = r,
                              .node_upsert = h_on_node,
                              .node_delete = h_on_node_del,
                              .pod_upsert = h_on_pod,
                              .pod_delete = h_on_pod_del,
                              .configmap_upsert = h_on_cm,
                              .configmap_delete = h_on_cm_del,
                              .synced = h_on_synced,
                              .leader = h_on_leader};
  return s;
}

/* Polls pred(r, arg) every 20 ms up to ms; true when it held. */
static inline bool h_wait(struct h_rec *r, bool (*pred)(struct h_rec *, const void *), const void *arg,
                   long ms) {
  int64_t end = h_now_ms() + ms;
  for (;;) {
    bool ok;
    pthread_mutex_lock(&r->mu);
    ok = pred(r, arg);
    pthread_mutex_unlock(&r->mu);
    if (ok)
      return true;
    if (h_now_ms() >= end)
      return false;
    h_sleep_ms(20);
  }
}

static inline bool h_is_synced(struct h_rec *r, const void *arg) {
  (void)arg;
  return r->synced > 0;
}

static inline bool h_has_pod(struct h_rec *r, const void *key) {
  return json_object_get(r->pods, key) != NULL;
}

static inline bool h_no_pod(struct h_rec *r, const void *key) {
  return json_object_get(r->pods, key) == NULL;
}

static inline bool h_has_node(struct h_rec *r, const void *name) {
  return json_object_get(r->nodes, name) != NULL;
}

static inline bool h_is_leader(struct h_rec *r, const void *arg) {
  (void)arg;
  return r->leader == 1;
}

/* Default options for tests: short backoff and watch timeouts. */
static inline struct gs_kube_opts h_opts(const char *kubeconfig) {
  struct gs_kube_opts o = {.kubeconfig = kubeconfig,
                           .backoff_initial_ms = 100,
                           .backoff_max_ms = 1000,
                           .watch_timeout_s = 30,
                           .request_timeout_s = 5};
  return o;
}

/* jansson allocates as in the extender (src/main.c): list pages from an
 * arena, so a sink or cache that kept a page's object past the page is
 * caught by AddressSanitizer (the arena poisons what it forgets). */
static inline void h_use_arena_hooks(void) {
  json_set_alloc_funcs(gs_arena_hook_malloc, gs_arena_hook_free);
}

#endif
