/* gpushare-bench http: the real gpushare-extender over loopback HTTP.
 *
 * For each cluster size a demo file is generated (the synthetic mix of
 * bench.h, half full, plus pending pods for bind), `gpushare-extender
 * --demo FILE` is started, and C client threads, each with its own
 * keep-alive libcurl handle, post kube-scheduler's bodies for a fixed time:
 * filter and prioritize with NodeNames of every node, then bind (each bind
 * takes the next pending pod; 1 GiB onto the memory nodes in turn).
 * With --apiserver the extender runs against the test kube-apiserver
 * (test/lib/kube_apiserver.py) instead of the demo file.
 */
#include "spawn.h"

#include <curl/curl.h>

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BODY_KINDS 4

struct buf {
  char *p;
  size_t len, cap;
};

static void buf_add(struct buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    char *p;
    while (cap < b->len + n + 1)
      cap *= 2;
    p = realloc(b->p, cap);
    if (p == NULL) {
      fprintf(stderr, "gpushare-bench: out of memory\n");
      exit(1);
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void buf_str(struct buf *b, const char *s) { buf_add(b, s, strlen(s)); }

static size_t collect(char *p, size_t size, size_t n, void *ctx) {
  buf_add(ctx, p, size * n);
  return size * n;
}

/* ExtenderArgs bodies (NodeNames form) for the pod mix of the core bench. */
static void make_args(struct buf *b, size_t nodes, uint32_t gpus, int kind) {
  static const char *const res[BODY_KINDS] = {
      "\"aliyun.com/gpu-mem\":\"2\"", "\"aliyun.com/gpu-mem\":\"12\"",
      "\"aliyun.com/gpu-mem\":\"8\"", "\"aliyun.com/gpu\":\"2\""};
  char tmp[512];
  b->len = 0;
  snprintf(tmp, sizeof tmp,
           "{\"Pod\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"probe-%d\","
           "\"namespace\":\"bench\",\"uid\":\"uid-probe-%d\"%s},\"spec\":{\"containers\":"
           "[{\"name\":\"main\",\"image\":\"registry.example/cuda-sample:12\",\"resources\":"
           "{\"limits\":{%s}}}]},\"status\":{\"phase\":\"Pending\"}},\"Nodes\":null,"
           "\"NodeNames\":[",
           kind, kind, kind == 2 ? ",\"labels\":{\"aliyun.com/gpu-count\":\"2\"}" : "",
           res[kind]);
  buf_str(b, tmp);
  for (size_t i = 0; i < nodes; i++) {
    struct bench_node n;
    bench_node_make(i, gpus, &n);
    snprintf(tmp, sizeof tmp, "%s\"%s\"", i ? "," : "", n.name);
    buf_str(b, tmp);
  }
  buf_str(b, "]}");
}

enum verb { V_FILTER, V_PRIORITIZE, V_BIND, V_VERSION };
static const char *const verb_names[BENCH_HTTP_VERBS] = {"filter", "prioritize", "bind",
                                                         "version"};

struct run {
  enum verb verb;
  pid_t server; /* the extender, for its CPU time */
  const char *base;
  const struct buf *bodies; /* BODY_KINDS filter/prioritize bodies */
  size_t nodes;
  uint32_t gpus;
  int64_t start_ns, stop_ns;
  atomic_size_t *next_pod; /* bind: next pending pod */
  size_t pending;          /* bind: this run's pods end here */
  const size_t *mem_nodes; /* indices of memory nodes */
  size_t nmem;
};

struct client {
  pthread_t thread;
  const struct run *run;
  unsigned id;
  struct bench_samples lat;
  size_t errors, refused;
  size_t done; /* requests answered, warm-up included */
  char first_error[256];
};

static void note_error(struct client *c, const char *what) {
  if (c->errors++ == 0)
    snprintf(c->first_error, sizeof c->first_error, "%.250s", what);
}

static void *client_main(void *arg) {
  struct client *c = arg;
  const struct run *r = c->run;
  CURL *h = curl_easy_init();
  struct curl_slist *hdr = NULL;
  struct buf resp = {0}, bind_body = {0};
  char url[160];
  unsigned k = c->id;

  if (h == NULL) {
    note_error(c, "curl_easy_init failed");
    return NULL;
  }
  hdr = curl_slist_append(hdr, "Content-Type: application/json");
  hdr = curl_slist_append(hdr, "Expect:"); /* no 100-continue round trip */
  if (r->verb == V_VERSION) /* the floor: a GET the server answers without work */
    snprintf(url, sizeof url, "%s/version", r->base);
  else
    snprintf(url, sizeof url, "%s/gpushare-scheduler/%s", r->base, verb_names[r->verb]);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 30000L);

  while (bench_now_ns() < r->stop_ns) {
    int64_t t0, t1;
    long code = 0;
    CURLcode cc;
    if (r->verb == V_BIND) {
      size_t i = atomic_fetch_add(r->next_pod, 1);
      char tmp[256];
      struct bench_node n;
      if (i >= r->pending)
        break;
      bench_node_make(r->mem_nodes[i % r->nmem], r->gpus, &n);
      snprintf(tmp, sizeof tmp,
               "{\"PodName\":\"bind-%06zu\",\"PodNamespace\":\"bench\",\"PodUID\":"
               "\"uid-bind-%06zu\",\"Node\":\"%s\"}",
               i, i, n.name);
      bind_body.len = 0;
      buf_str(&bind_body, tmp);
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, bind_body.p);
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)bind_body.len);
    } else if (r->verb != V_VERSION) {
      const struct buf *b = &r->bodies[k++ % BODY_KINDS];
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, b->p);
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)b->len);
    }
    resp.len = 0;
    t0 = bench_now_ns();
    cc = curl_easy_perform(h);
    t1 = bench_now_ns();
    c->done++;
    if (cc != CURLE_OK) {
      note_error(c, curl_easy_strerror(cc));
      continue;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (code != 200) {
      char what[300];
      snprintf(what, sizeof what, "HTTP %ld: %.200s", code, resp.p ? resp.p : "");
      note_error(c, what);
      continue;
    }
    if ((r->verb == V_FILTER || r->verb == V_BIND) && (resp.p == NULL || strstr(resp.p, "\"Error\":\"\"") == NULL)) {
      /* A node that has no room left is an answer, not a failure. */
      if (r->verb == V_BIND && resp.p != NULL &&
          (strstr(resp.p, "insufficient GPU memory") != NULL ||
           strstr(resp.p, "pod limit reached") != NULL))
        c->refused++;
      else
        note_error(c, resp.p ? resp.p : "empty answer");
      continue;
    }
    if (t0 >= r->start_ns)
      bench_samples_add(&c->lat, t1 - t0);
  }
  free(resp.p);
  free(bind_body.p);
  curl_slist_free_all(hdr);
  curl_easy_cleanup(h);
  return NULL;
}

/* Runs one verb with nclients for seconds; prints one table row. */
static int run_verb(struct run *r, unsigned nclients, double seconds, double warmup_s,
                    struct bench_table *t, struct http_figures *ret) {
  struct client *cs = calloc(nclients, sizeof *cs);
  struct bench_samples all = {0};
  size_t errors = 0, refused = 0, handled = 0;
  double elapsed;
  const char *first_error = NULL;
  int64_t began;
  double srv0, cli0, srv_cpu, cli_cpu;
  if (cs == NULL)
    return -1;
  began = bench_now_ns();
  srv0 = bench_proc_cpu(r->server);
  cli0 = bench_proc_cpu(0);
  r->start_ns = began + (int64_t)(warmup_s * 1e9);
  r->stop_ns = r->start_ns + (int64_t)(seconds * 1e9);
  for (unsigned i = 0; i < nclients; i++) {
    cs[i].run = r;
    cs[i].id = i;
    if (pthread_create(&cs[i].thread, NULL, client_main, &cs[i]) != 0) {
      fprintf(stderr, "gpushare-bench: cannot start client threads\n");
      exit(1);
    }
  }
  for (unsigned i = 0; i < nclients; i++)
    pthread_join(cs[i].thread, NULL);
  srv_cpu = bench_proc_cpu(r->server) - srv0;
  cli_cpu = bench_proc_cpu(0) - cli0;
  /* Bind may run out of pending pods before the time is up: the rate is
   * over the time actually spent. */
  elapsed = (double)(bench_now_ns() - r->start_ns) / 1e9;
  if (elapsed > seconds)
    elapsed = seconds;
  for (unsigned i = 0; i < nclients; i++) {
    for (size_t j = 0; j < cs[i].lat.n; j++)
      bench_samples_add(&all, cs[i].lat.v[j]);
    errors += cs[i].errors;
    refused += cs[i].refused;
    handled += cs[i].done;
    if (first_error == NULL && cs[i].errors > 0)
      first_error = cs[i].first_error;
  }
  bench_samples_sort(&all);
  bench_table_row(t);
  bench_table_num(t, "%.0f", (double)r->nodes);
  bench_table_str(t, "%s", verb_names[r->verb]);
  bench_table_num(t, "%.0f", (double)nclients);
  bench_table_num(t, "%.0f", (double)all.n);
  bench_table_num(t, "%.3f", (double)bench_pct(&all, 0.5) / 1e6);
  bench_table_num(t, "%.3f", (double)bench_pct(&all, 0.99) / 1e6);
  bench_table_num(t, "%.0f", elapsed > 0 ? (double)all.n / elapsed : 0);
  bench_table_num(t, "%.0f", (double)errors);
  bench_table_num(t, "%.0f", (double)refused);
  /* Per request handled, warm-up included: what the verb costs whatever
   * else runs on the machine. */
  bench_table_num(t, "%.3f", handled ? srv_cpu * 1e3 / (double)handled : 0);
  bench_table_num(t, "%.3f", handled ? cli_cpu * 1e3 / (double)handled : 0);
  bench_table_num(t, "%.2f", bench_load1());
  if (first_error != NULL)
    fprintf(stderr, "gpushare-bench: %s: %zu errors, first: %s\n", verb_names[r->verb], errors,
            first_error);
  if (ret != NULL) {
    ret->p50_ms = (double)bench_pct(&all, 0.5) / 1e6;
    ret->p99_ms = (double)bench_pct(&all, 0.99) / 1e6;
    ret->rps = elapsed > 0 ? (double)all.n / elapsed : 0;
  }
  for (unsigned i = 0; i < nclients; i++)
    bench_samples_free(&cs[i].lat);
  bench_samples_free(&all);
  free(cs);
  return 0;
}

int bench_http_size(size_t nodes, const struct http_opts *o, struct bench_table *t,
                    struct http_figures ret[BENCH_HTTP_VERBS][BENCH_SIZES_MAX], double *ret_ready_s) {
  char dir[BENCH_PATH_MAX], file[BENCH_PATH_MAX + 32], log[BENCH_PATH_MAX + 32];
  char kubeconfig[BENCH_PATH_MAX + 32];
  struct demo_spec spec = {.nodes = nodes, .gpus = BENCH_GPUS_PER_NODE, .half_full = true};
  struct bench_proc proc;
  struct buf bodies[BODY_KINDS];
  size_t *mem_nodes = NULL, nmem = 0, bound = 0;
  atomic_size_t next_pod;
  void *apiserver = NULL;
  uint64_t maxc = 1;
  int rc = -1;

  memset(bodies, 0, sizeof bodies);
  for (size_t i = 0; i < o->nclients; i++)
    if (o->clients[i] > maxc)
      maxc = o->clients[i];
  /* Pending pods for every bind run at up to 5,000 binds/s (a run that
   * binds them all stops early and says so in its request count), but no
   * more than 24 per memory node: 1 GiB each always finds room on the
   * half-full nodes, so every bind measures a real bind. */
  spec.pending_pods = o->verbs[V_BIND] ? (size_t)(o->seconds * 5000 * (double)o->nclients) : 0;
  {
    size_t room = nodes / 10 * 8 * 24; /* 8 memory nodes in 10 (bench_node_make) */
    if (spec.pending_pods > room)
      spec.pending_pods = room;
  }
  /* The demo loader reads files up to 64 MiB: 20,000 pending pods beside
   * 50,000 bound ones fit. */
  if (spec.pending_pods > 20000)
    spec.pending_pods = 20000;
  if (bench_tmpdir(dir, sizeof dir) != 0)
    return -1;
  snprintf(file, sizeof file, "%s/cluster.json", dir);
  snprintf(log, sizeof log, "%s/extender.log", dir);
  mem_nodes = calloc(nodes, sizeof *mem_nodes);
  if (mem_nodes == NULL)
    goto out;
  for (size_t i = 0; i < nodes; i++) {
    struct bench_node n;
    bench_node_make(i, spec.gpus, &n);
    if (n.mode != GS_MODE_TOPOLOGY)
      mem_nodes[nmem++] = i;
  }
  if (o->apiserver) {
    if (bench_apiserver_start(dir, &spec, kubeconfig, sizeof kubeconfig, &apiserver) != 0)
      goto out;
    const char *args[] = {"--kubeconfig", kubeconfig, NULL};
    if (bench_proc_start(o->extender, args, log, 600, &proc) != 0)
      goto out;
  } else {
    if (bench_demo_write(file, &spec, &bound) != 0)
      goto out;
    const char *args[] = {"--demo", file, NULL};
    if (bench_proc_start(o->extender, args, log, 600, &proc) != 0)
      goto out;
  }
  if (ret_ready_s != NULL)
    *ret_ready_s = proc.ready_s;
  for (int k = 0; k < BODY_KINDS; k++)
    make_args(&bodies[k], nodes, spec.gpus, k);
  bench_note("http: %zu nodes, %s%zu bound pods, %zu pending; extender ready in %.3f s; "
             "filter body %zu bytes",
             nodes, o->apiserver ? "~" : "", o->apiserver ? nodes * 98 / 10 : bound,
             spec.pending_pods, proc.ready_s, bodies[0].len);
  atomic_init(&next_pod, 0);
  for (int v = 0; v < BENCH_HTTP_VERBS; v++) {
    if (!o->verbs[v])
      continue;
    for (size_t ci = 0; ci < o->nclients; ci++) {
      /* Each bind run gets its own share of the pending pods. */
      struct run r = {.verb = (enum verb)v, .server = proc.pid, .base = proc.base,
                      .bodies = bodies,
                      .nodes = nodes, .gpus = spec.gpus, .next_pod = &next_pod,
                      .pending = spec.pending_pods / o->nclients * (ci + 1),
                      .mem_nodes = mem_nodes, .nmem = nmem};
      if (v == V_BIND && nmem == 0)
        continue;
      atomic_store(&next_pod, spec.pending_pods / o->nclients * ci);
      run_verb(&r, (unsigned)o->clients[ci], o->seconds, v == V_BIND ? 0.0 : 0.3, t,
               ret != NULL ? &ret[v][ci] : NULL);
    }
  }
  rc = 0;
  bench_proc_stop(&proc);
out:
  bench_apiserver_stop(apiserver);
  for (int k = 0; k < BODY_KINDS; k++)
    free(bodies[k].p);
  free(mem_nodes);
  bench_tmpdir_rm(dir, o->keep);
  return rc;
}

const char *const bench_http_cols[] = {"nodes",  "verb",    "clients",       "requests",
                                        "p50 ms", "p99 ms",  "req/s",         "errors",
                                        "no room", "server CPU ms/req", "client CPU ms/req",
                                        "load",   NULL};

static void usage(void) {
  fprintf(stderr,
          "usage: gpushare-bench http [--nodes 1000,5000] [--clients 1,8] [--seconds 5]\n"
          "       [--verbs filter,prioritize,bind,version] [--extender PATH] [--apiserver] "
          "[--keep-files] [--json]\n");
}

int bench_http(int argc, char **argv) {
  uint64_t sizes[BENCH_SIZES_MAX] = {1000, 5000};
  size_t nsizes = 2;
  struct http_opts o = {.clients = {1, 8}, .nclients = 2, .seconds = 5,
                        .verbs = {true, true, true}};
  static struct bench_table t;
  const char *ext = NULL;

  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--nodes") == 0) {
      if ((nsizes = bench_parse_list(v, "--nodes", 60000, sizes)) == 0)
        return 2;
      i++;
    } else if (strcmp(argv[i], "--clients") == 0) {
      if ((o.nclients = bench_parse_list(v, "--clients", 256, o.clients)) == 0)
        return 2;
      i++;
    } else if (strcmp(argv[i], "--seconds") == 0) {
      o.seconds = (double)bench_parse_u64(v, "--seconds", 1, 3600);
      i++;
    } else if (strcmp(argv[i], "--verbs") == 0 && v != NULL) {
      o.verbs[0] = strstr(v, "filter") != NULL;
      o.verbs[1] = strstr(v, "prioritize") != NULL;
      o.verbs[2] = strstr(v, "bind") != NULL;
      o.verbs[3] = strstr(v, "version") != NULL;
      i++;
    } else if (strcmp(argv[i], "--extender") == 0 && v != NULL) {
      ext = v;
      i++;
    } else if (strcmp(argv[i], "--apiserver") == 0) {
      o.apiserver = true;
    } else if (strcmp(argv[i], "--keep-files") == 0) {
      o.keep = true;
    } else {
      usage();
      return 2;
    }
  }
  o.extender = bench_extender_path(ext);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  bench_print_machine();
  bench_note("extender: %s (%s backend)", o.extender, o.apiserver ? "test apiserver" : "demo");
  bench_table_init(&t, "http: extender verbs over loopback, keep-alive libcurl clients",
                   bench_http_cols);
  for (size_t s = 0; s < nsizes; s++)
    if (bench_http_size((size_t)sizes[s], &o, &t, NULL, NULL) != 0)
      return 1;
  bench_table_print(&t);
  bench_note("budgets: filter 1,000 names 1 client p99 <= 2 ms; 8 clients >= 5,000 req/s; "
             "binds >= 500/s");
  curl_global_cleanup();
  return 0;
}
