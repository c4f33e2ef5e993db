/* The live backend's ops table: construction, threads, pod_get from the
 * informer cache, bind (one Binding POST within a time budget) and queued
 * best-effort Warning events. */
#include "kube_int.h"
#include "jw.h"
#include <gpushare/alloc.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define POOL_MAX 4

/* ---- waiting ------------------------------------------------------------ */

bool gs__kube_stopping(struct gs__kube *k) {
  return atomic_load(&k->stop);
}

static void deadline_ts(int64_t ms, struct timespec *ts) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  ts->tv_sec += ms / 1000;
  ts->tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

static bool wait_impl(struct gs__kube *k, int64_t ms, bool any_signal) {
  struct timespec ts;
  if (ms < 0)
    ms = 0;
  deadline_ts(ms, &ts);
  pthread_mutex_lock(&k->mu);
  while (!atomic_load(&k->stop)) {
    int rc = pthread_cond_timedwait(&k->cond, &k->mu, &ts);
    if (rc == ETIMEDOUT || any_signal)
      break;
  }
  pthread_mutex_unlock(&k->mu);
  return !atomic_load(&k->stop);
}

bool gs__kube_sleep(struct gs__kube *k, int64_t ms) {
  return wait_impl(k, ms, false);
}

bool gs__kube_wait(struct gs__kube *k, int64_t ms) {
  return wait_impl(k, ms, true);
}

static bool kube_abort(void *ctx) {
  return gs__kube_stopping(ctx);
}

/* ---- handle pool for callers' threads ---------------------------------- */

static bool pool_take(struct gs__kube *k, struct gs__kube_handle *ret) {
  pthread_mutex_lock(&k->pool_mu);
  if (k->npool > 0) {
    *ret = k->pool[--k->npool];
    pthread_mutex_unlock(&k->pool_mu);
    return true;
  }
  pthread_mutex_unlock(&k->pool_mu);
  if (gs__kube_handle_init(ret, false) != GS_EOK)
    return false;
  ret->abort = kube_abort;
  ret->abort_ctx = k;
  return true;
}

static void pool_put(struct gs__kube *k, struct gs__kube_handle *h) {
  pthread_mutex_lock(&k->pool_mu);
  if (k->npool < POOL_MAX) {
    k->pool[k->npool++] = *h;
    pthread_mutex_unlock(&k->pool_mu);
    return;
  }
  pthread_mutex_unlock(&k->pool_mu);
  gs__kube_handle_release(h);
}

/* ---- ops: bind ------------------------------------------------------------ */

/* The last attempt's error wins. kube-scheduler uses the error as a format
 * string: no '%'. */
static void set_err(struct gs_diag *diag, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void set_err(struct gs_diag *diag, const char *fmt, ...) {
  va_list ap;
  if (diag == NULL)
    return;
  diag->where[0] = '\0';
  va_start(ap, fmt);
  vsnprintf(diag->text, sizeof diag->text, fmt, ap);
  va_end(ap);
  for (char *p = diag->text; *p; p++)
    if (*p == '%')
      *p = ' ';
}

static const char *meta_str(const json_t *obj, const char *key) {
  const json_t *v = json_object_get(json_object_get(obj, "metadata"), key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

static enum gs_err pod_path(struct gs_buf *b, const char *ns, const char *name,
                            const char *sub) {
  enum gs_err e;
  if ((e = gs_buf_str(b, "/api/v1/namespaces/")) != GS_EOK ||
      (e = gs__kube_escape(b, ns)) != GS_EOK || (e = gs_buf_str(b, "/pods/")) != GS_EOK ||
      (e = gs__kube_escape(b, name)) != GS_EOK)
    return e;
  return sub ? gs_buf_str(b, sub) : GS_EOK;
}

/* The Binding, written with the one JSON writer: complete or NULL (a
 * jansson tree would drop an annotation whose string failed to allocate,
 * and the pod would be bound without its GPUs). */
static char *binding_body(const char *ns, const char *name, const char *uid, const char *node,
                          const struct gs_annotations *annots) {
  struct gs_buf b = {0};
  gs_jw_lit(&b, "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":");
  gs_jw_str(&b, name);
  gs_jw_lit(&b, ",\"namespace\":");
  gs_jw_str(&b, ns);
  if (uid != NULL && uid[0] != '\0') {
    gs_jw_lit(&b, ",\"uid\":");
    gs_jw_str(&b, uid);
  }
  gs_jw_lit(&b, ",\"annotations\":{");
  for (size_t i = 0; annots != NULL && i < annots->n; i++) {
    if (i)
      gs_jw_lit(&b, ",");
    gs_jw_str(&b, annots->kv[i].key);
    gs_jw_lit(&b, ":");
    gs_jw_str(&b, annots->kv[i].value);
  }
  gs_jw_lit(&b, "}},\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":");
  gs_jw_str(&b, node);
  gs_jw_lit(&b, "}}");
  return gs_buf_take(&b);
}

/* The pod as the apiserver has it now (GET; new reference), or NULL. */
static json_t *fetch_pod(struct gs__kube *k, struct gs__kube_handle *h, const char *ns,
                         const char *name, long timeout_ms) {
  struct gs_buf path = {.max = 4096};
  struct gs__kube_resp resp = {0};
  struct gs__kube_req req = {.method = "GET", .timeout_ms = timeout_ms};
  json_t *pod = NULL;
  if (pod_path(&path, ns, name, NULL) != GS_EOK)
    goto out;
  req.path = path.p;
  if (gs__kube_do(&k->conn, h, &req, &resp) != GS_EOK || resp.code != 200)
    goto out;
  pod = json_loadb(resp.body.p, resp.body.len, 0, NULL);
  if (!json_is_object(pod)) {
    json_decref(pod);
    pod = NULL;
  }
out:
  gs__kube_resp_release(&resp);
  gs_buf_release(&path);
  return pod;
}

/* 409 on a Binding: already bound to node with this uid → idempotent success. */
static bool already_bound(struct gs__kube *k, struct gs__kube_handle *h, const char *ns,
                          const char *name, const char *uid, const char *node, long timeout_ms) {
  json_t *pod = fetch_pod(k, h, ns, name, timeout_ms);
  bool ok = false;
  if (pod != NULL) {
    const json_t *nn = json_object_get(json_object_get(pod, "spec"), "nodeName");
    const char *puid = meta_str(pod, "uid");
    ok = json_is_string(nn) && strcmp(json_string_value(nn), node) == 0 &&
         (uid == NULL || uid[0] == '\0' || (puid != NULL && strcmp(puid, uid) == 0));
  }
  json_decref(pod);
  return ok;
}

/* ---- ops: pod_get -------------------------------------------------------- */

/* The informer's copy when it is whole; else the apiserver's. The cache
 * misses a pod created a moment before its bind (the watch event is still
 * on its way: kube-scheduler saw it first) and keeps a bound pod compact,
 * without its containers (kube_entry.h), which a repeated bind must read
 * again (docs/k8s.md, "bind"). */
static json_t *kube_pod_get(void *self, const char *ns, const char *name) {
  struct gs__kube *k = self;
  struct gs__kube_handle h;
  char key[GS_NS_MAX + GS_NAME_MAX + 4];
  json_t *obj, *live;
  int n = snprintf(key, sizeof key, "%s/%s", ns ? ns : "", name ? name : "");
  if (n < 0 || (size_t)n >= sizeof key || name == NULL || name[0] == '\0')
    return NULL;
  obj = gs__informer_get(&k->inf[GS__INF_PODS], key);
  if (obj != NULL && json_object_get(json_object_get(obj, "spec"), "containers") != NULL)
    return obj;
  if (!pool_take(k, &h))
    return obj;
  live = fetch_pod(k, &h, ns && ns[0] ? ns : "default", name, GS_KUBE_POD_GET_MS);
  pool_put(k, &h);
  if (live == NULL)
    return obj;
  json_decref(obj);
  return live;
}

static enum gs_err kube_bind(void *self, const char *ns, const char *name, const char *uid,
                             const char *node, const struct gs_annotations *annots,
                             struct gs_diag *diag) {
  struct gs__kube *k = self;
  struct gs_buf path = {.max = 4096};
  struct gs__kube_handle h;
  char *body = NULL;
  int64_t deadline = gs__kube_now_ms() + GS_KUBE_BIND_BUDGET_MS;
  uint32_t delay = 100;
  uint64_t rng = 0;
  enum gs_err ret = GS_EIO;
  if (ns == NULL || ns[0] == '\0')
    ns = "default";
  if (name == NULL || name[0] == '\0' || node == NULL || node[0] == '\0') {
    set_err(diag, "bind: pod name and node are required");
    return GS_EINVAL;
  }
  if (pod_path(&path, ns, name, "/binding") != GS_EOK ||
      (body = binding_body(ns, name, uid, node, annots)) == NULL) {
    gs_buf_release(&path);
    set_err(diag, "bind %s/%s: out of memory", ns, name);
    return GS_ENOMEM;
  }
  if (!pool_take(k, &h)) {
    gs_buf_release(&path);
    gs_free(body);
    set_err(diag, "bind %s/%s: out of memory", ns, name);
    return GS_ENOMEM;
  }
  for (;;) {
    struct gs__kube_resp resp = {0};
    struct gs__kube_req req = {.method = "POST", .path = path.p, .body = body};
    struct gs__kube_status st;
    int64_t left = deadline - gs__kube_now_ms();
    long wait_ms;
    enum gs_err e;
    if (left < 50) {
      set_err(diag, "binding pod %s/%s to node %s: timed out", ns, name, node);
      ret = GS_ETIMEOUT;
      break;
    }
    req.timeout_ms = (long)left;
    e = gs__kube_do(&k->conn, &h, &req, &resp);
    if (e == GS_EOK && (resp.code == 201 || resp.code == 200)) {
      gs__kube_resp_release(&resp);
      ret = GS_EOK;
      break;
    }
    if (e == GS_EAGAIN) {
      gs__kube_resp_release(&resp);
      set_err(diag, "binding pod %s/%s to node %s: extender is stopping", ns, name, node);
      ret = GS_EAGAIN;
      break;
    }
    if (e == GS_EOK)
      gs__kube_status_decode(resp.body.p, resp.body.len, resp.code, &st);
    if (e == GS_EOK && resp.code == 409) {
      /* Already assigned (a retry of ours, or kube-scheduler's retry). */
      left = deadline - gs__kube_now_ms();
      if (left > 50 && already_bound(k, &h, ns, name, uid, node, (long)left)) {
        gs__kube_resp_release(&resp);
        ret = GS_EOK;
        break;
      }
      set_err(diag, "binding pod %s/%s to node %s: %s", ns, name, node, st.message);
      gs__kube_resp_release(&resp);
      ret = GS_ECONFLICT;
      break;
    }
    if (e == GS_EOK && !gs__kube_http_is_retryable(resp.code)) {
      set_err(diag, "binding pod %s/%s to node %s: %s", ns, name, node, st.message);
      ret = resp.code == 404 ? GS_ENOTFOUND : GS_EHTTP;
      gs__kube_resp_release(&resp);
      break;
    }
    /* Transport error, 5xx or 429: retry while the budget lasts. */
    if (e == GS_EOK)
      set_err(diag, "binding pod %s/%s to node %s: %s", ns, name, node, st.message);
    else
      set_err(diag, "binding pod %s/%s to node %s: %s", ns, name, node,
              resp.error[0] ? resp.error : gs_strerror(e));
    ret = e == GS_ETIMEOUT ? GS_ETIMEOUT : (e == GS_EOK ? GS_EHTTP : GS_EIO);
    wait_ms = (long)delay + (long)(gs__kube_rand(&rng) % delay);
    if (resp.retry_after_s > 0 && resp.retry_after_s * 1000 > wait_ms)
      wait_ms = resp.retry_after_s * 1000;
    gs__kube_resp_release(&resp);
    delay *= 2;
    if (gs__kube_now_ms() + wait_ms + 50 >= deadline)
      break;
    gs__kube_log(GS_LVL_DEBUG, "bind retry", "pod=%s/%s node=%s wait_ms=%ld", ns, name, node,
                 wait_ms);
    if (!gs__kube_sleep(k, wait_ms))
      break;
  }
  pool_put(k, &h);
  gs_buf_release(&path);
  gs_free(body);
  /* The server logs the bind once, with its allocation or its error; here
   * only the apiserver's side, at debug. */
  if (ret == GS_EOK)
    gs__kube_log(GS_LVL_DEBUG, "binding posted", "pod=%s/%s node=%s", ns, name, node);
  else
    gs__kube_log(GS_LVL_DEBUG, "binding failed", "pod=%s/%s node=%s error=\"%s\"", ns, name, node,
                 diag ? diag->text : "");
  return ret;
}

/* ---- ops: event (queued, best effort) ---------------------------------- */

static void kube_event(void *self, const json_t *pod, const char *reason, const char *message) {
  struct gs__kube *k = self;
  const char *ns = meta_str(pod, "namespace"), *name = meta_str(pod, "name"),
             *uid = meta_str(pod, "uid"), *kind;
  char evname[GS_NAME_MAX + 1], ts[32], msg[GS_KUBE_MSG_MAX + 1];
  struct timespec now;
  json_t *body, *involved;
  char *text;
  if (name == NULL)
    return;
  if (ns == NULL || ns[0] == '\0')
    ns = "default";
  clock_gettime(CLOCK_REALTIME, &now);
  if (strlen(name) + 18 <= GS_NAME_MAX) {
    snprintf(evname, sizeof evname, "%s.%llx", name,
             (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec);
  } else {
    gs__kube_uuid(evname); /* client-go's fallback for names too long */
  }
  gs__kube_rfc3339(&now, ts);
  snprintf(msg, sizeof msg, "%s", message ? message : "");
  /* a Pod unless the object names its kind (a ConfigMap's invalid value) */
  kind = json_string_value(json_object_get(pod, "kind"));
  involved = json_pack("{s:s, s:s, s:s, s:s}", "apiVersion", "v1", "kind", kind ? kind : "Pod",
                       "namespace", ns, "name", name);
  if (involved == NULL)
    return;
  if (uid != NULL)
    json_object_set_new(involved, "uid", json_string(uid));
  body = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o, s:s, s:s, s:s, s:{s:s}, s:s, s:s, s:i, "
                   "s:s}",
                   "apiVersion", "v1", "kind", "Event", "metadata", "name", evname, "namespace",
                   ns, "involvedObject", involved, "reason", reason ? reason : "FailedBinding",
                   "message", msg, "type", "Warning", "source", "component", "gpushare-extender",
                   "firstTimestamp", ts, "lastTimestamp", ts, "count", 1, "reportingComponent",
                   "gpushare-extender");
  if (body == NULL)
    return;
  text = gs_api_dump(body);
  json_decref(body);
  if (text == NULL)
    return;
  pthread_mutex_lock(&k->mu);
  if (k->event_started && !k->stopped && k->ev_len < GS_KUBE_EVENT_QUEUE) {
    struct gs__kube_event *ev = &k->events[(k->ev_head + k->ev_len) % GS_KUBE_EVENT_QUEUE];
    snprintf(ev->ns, sizeof ev->ns, "%s", ns);
    ev->body = text;
    text = NULL;
    k->ev_len++;
    pthread_cond_broadcast(&k->cond);
  }
  pthread_mutex_unlock(&k->mu);
  if (text != NULL) {
    gs__kube_log(GS_LVL_WARN, "event dropped", "pod=%s/%s reason=%s", ns, name,
                 reason ? reason : "");
    gs_free(text);
  }
}

static void *event_main(void *arg) {
  struct gs__kube *k = arg;
  k->event_h.abort = kube_abort;
  k->event_h.abort_ctx = k;
  for (;;) {
    struct gs__kube_event ev;
    struct gs_buf path = {.max = 4096};
    struct gs__kube_resp resp = {0};
    struct gs__kube_req req = {.method = "POST", .timeout_ms = 5000};
    enum gs_err e;
    pthread_mutex_lock(&k->mu);
    while (k->ev_len == 0 && !atomic_load(&k->stop))
      pthread_cond_wait(&k->cond, &k->mu);
    if (atomic_load(&k->stop)) {
      pthread_mutex_unlock(&k->mu);
      break;
    }
    ev = k->events[k->ev_head];
    k->ev_head = (k->ev_head + 1) % GS_KUBE_EVENT_QUEUE;
    k->ev_len--;
    pthread_mutex_unlock(&k->mu);
    if (gs_buf_str(&path, "/api/v1/namespaces/") == GS_EOK &&
        gs__kube_escape(&path, ev.ns) == GS_EOK && gs_buf_str(&path, "/events") == GS_EOK) {
      req.path = path.p;
      req.body = ev.body;
      e = gs__kube_do(&k->conn, &k->event_h, &req, &resp);
      if (e != GS_EOK || (resp.code != 201 && resp.code != 200)) {
        struct gs__kube_status st;
        gs__kube_status_decode(resp.body.p, resp.body.len, resp.code, &st);
        gs__kube_log(GS_LVL_WARN, "event not posted", "ns=%s err=%s error=\"%s\"", ev.ns,
                     gs_strerror(e), e == GS_EOK ? st.message : resp.error);
      }
    }
    gs__kube_resp_release(&resp);
    gs_buf_release(&path);
    gs_free(ev.body);
  }
  return NULL;
}

/* ---- ops: lifecycle ------------------------------------------------------ */

static void kube_stop(void *self);

static enum gs_err kube_start(void *self, const struct gs_cluster_sink *sink) {
  struct gs__kube *k = self;
  if (sink == NULL)
    return GS_EINVAL;
  pthread_mutex_lock(&k->mu);
  if (k->started) {
    pthread_mutex_unlock(&k->mu);
    return GS_EINVAL;
  }
  k->started = true;
  k->sink = *sink;
  pthread_mutex_unlock(&k->mu);
  gs__kube_log(GS_LVL_INFO, "apiserver client starting", "server=%s leader_elect=%s",
               k->conn.base, k->leader_elect ? "true" : "false");
  if (!k->leader_elect) {
    if (k->sink.leader)
      k->sink.leader(k->sink.ctx, true);
  }
  /* The event thread first: the informers' first lists may already report
   * something (an invalid ConfigMap at start-up), and an event queued
   * before the thread ran was dropped. */
  if (pthread_create(&k->event_th, NULL, event_main, k) != 0)
    goto fail;
  pthread_mutex_lock(&k->mu);
  k->event_started = true;
  pthread_mutex_unlock(&k->mu);
  for (int i = 0; i < GS__INF_COUNT; i++) {
    if (pthread_create(&k->inf[i].th, NULL, gs__informer_main, &k->inf[i]) != 0)
      goto fail;
    k->inf[i].th_started = true;
  }
  if (k->leader_elect) {
    if (pthread_create(&k->lease_th, NULL, gs__lease_main, k) != 0)
      goto fail;
    k->lease_started = true;
  }
  return GS_EOK;
fail:
  kube_stop(k);
  return GS_ENOMEM;
}

static void kube_stop(void *self) {
  struct gs__kube *k = self;
  pthread_mutex_lock(&k->mu);
  if (k->stopped || !k->started) {
    pthread_mutex_unlock(&k->mu);
    return;
  }
  k->stopped = true;
  atomic_store(&k->stop, true);
  pthread_cond_broadcast(&k->cond);
  pthread_mutex_unlock(&k->mu);
  for (int i = 0; i < GS__INF_COUNT; i++)
    gs__kube_handle_wake(&k->inf[i].h);
  gs__kube_handle_wake(&k->lease_h);
  gs__kube_handle_wake(&k->event_h);
  for (int i = 0; i < GS__INF_COUNT; i++)
    if (k->inf[i].th_started) {
      pthread_join(k->inf[i].th, NULL);
      k->inf[i].th_started = false;
    }
  if (k->lease_started) {
    pthread_join(k->lease_th, NULL);
    k->lease_started = false;
  }
  if (k->event_started) {
    pthread_join(k->event_th, NULL);
    k->event_started = false;
  }
  gs__kube_log(GS_LVL_INFO, "apiserver client stopped", NULL);
}

static void kube_free(struct gs__kube *k) {
  if (k == NULL)
    return;
  for (int i = 0; i < GS__INF_COUNT; i++)
    gs__informer_release(&k->inf[i]);
  gs__kube_handle_release(&k->lease_h);
  gs__kube_handle_release(&k->event_h);
  for (unsigned i = 0; i < k->npool; i++)
    gs__kube_handle_release(&k->pool[i]);
  for (unsigned i = 0; i < k->ev_len; i++)
    gs_free(k->events[(k->ev_head + i) % GS_KUBE_EVENT_QUEUE].body);
  gs__kube_conn_release(&k->conn);
  gs_free(k->cm_ns);
  gs_free(k->cm_name);
  gs_free(k->lease_ns);
  gs_free(k->lease_name);
  gs_free(k->identity);
  gs_free(k->pod_ns);
  gs_free(k->pod_name);
  pthread_mutex_destroy(&k->sink_mu);
  pthread_mutex_destroy(&k->mu);
  pthread_mutex_destroy(&k->pool_mu);
  pthread_cond_destroy(&k->cond);
  gs_free(k);
}

static void kube_destroy(void *self) {
  struct gs__kube *k = self;
  if (k == NULL)
    return;
  kube_stop(k);
  kube_free(k);
}

static void kube_stats(void *self, struct gs_cluster_stats *ret) {
  struct gs__kube *k = self;
  ret->api_errors = atomic_load(&k->conn.errors);
  ret->watch_restarts = atomic_load(&k->watch_restarts);
  ret->relists = atomic_load(&k->relists);
}

static const struct gs_cluster_ops kube_ops = {
    .name = "kube",
    .start = kube_start,
    .stop = kube_stop,
    .destroy = kube_destroy,
    .pod_get = kube_pod_get,
    .bind = kube_bind,
    .event = kube_event,
    .stats = kube_stats,
};

/* ---- construction -------------------------------------------------------- */

static char *dup_or(const char *s, const char *def) {
  return gs_strdup(s != NULL && s[0] != '\0' ? s : def);
}

static bool dns_ok(const char *s, size_t max) {
  size_t n = strlen(s);
  if (n == 0 || n > max)
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
      return false;
  }
  return true;
}

static enum gs_err make_identity(const char *given, char **ret) {
  char host[256] = "", uuid[37], buf[GS_KUBE_IDENTITY_MAX + 1];
  if (given != NULL && given[0] != '\0') {
    if (strlen(given) > GS_KUBE_IDENTITY_MAX)
      return GS_EINVAL;
    *ret = gs_strdup(given);
    return *ret ? GS_EOK : GS_ENOMEM;
  }
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0')
    snprintf(host, sizeof host, "gpushare");
  host[sizeof host - 1] = '\0';
  gs__kube_uuid(uuid);
  snprintf(buf, sizeof buf, "%.200s_%s", host, uuid);
  *ret = gs_strdup(buf);
  return *ret ? GS_EOK : GS_ENOMEM;
}

enum gs_err gs_cluster_kube_new(const struct gs_kube_opts *opts, struct gs_cluster *ret,
                                struct gs_diag *diag) {
  struct gs__kube *k;
  pthread_condattr_t ca;
  enum gs_err e;
  if (opts == NULL || ret == NULL) {
    gs_diag_set(diag, "kube", "missing options");
    return GS_EINVAL;
  }
  if ((k = gs_calloc(1, sizeof *k)) == NULL)
    return GS_ENOMEM;
  pthread_mutex_init(&k->sink_mu, NULL);
  pthread_mutex_init(&k->mu, NULL);
  pthread_mutex_init(&k->pool_mu, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&k->cond, &ca);
  pthread_condattr_destroy(&ca);
  atomic_init(&k->stop, false);
  atomic_init(&k->resync_gen, 0);

  k->leader_elect = opts->leader_elect;
  k->lease_duration_s = opts->lease_duration_s ? opts->lease_duration_s : 15;
  k->renew_deadline_s = opts->renew_deadline_s ? opts->renew_deadline_s : 10;
  k->retry_period_s = opts->retry_period_s ? opts->retry_period_s : 2;
  k->watch_timeout_s = opts->watch_timeout_s;
  k->bo_initial_ms = opts->backoff_initial_ms;
  k->bo_max_ms = opts->backoff_max_ms;
  k->conn.request_timeout_s = opts->request_timeout_s ? (long)opts->request_timeout_s : 10;
  if (k->leader_elect &&
      !(k->lease_duration_s > k->renew_deadline_s &&
        (double)k->renew_deadline_s > 1.2 * (double)k->retry_period_s)) {
    gs_diag_set(diag, "leader-elect",
                "lease duration (%u s) must exceed renew deadline (%u s), which must exceed "
                "1.2 x retry period (%u s)",
                k->lease_duration_s, k->renew_deadline_s, k->retry_period_s);
    e = GS_EINVAL;
    goto fail;
  }
  k->cm_ns = dup_or(opts->configmap_ns, "kube-system");
  k->cm_name = dup_or(opts->configmap_name, "gpushare-config");
  k->lease_ns = dup_or(opts->lease_ns, "kube-system");
  k->lease_name = dup_or(opts->lease_name, "gpushare-extender");
  if (k->cm_ns == NULL || k->cm_name == NULL || k->lease_ns == NULL || k->lease_name == NULL) {
    e = GS_ENOMEM;
    goto fail;
  }
  if (!dns_ok(k->cm_ns, GS_NS_MAX) || !dns_ok(k->cm_name, GS_NAME_MAX)) {
    gs_diag_set(diag, "configmap", "invalid ConfigMap %s/%s", k->cm_ns, k->cm_name);
    e = GS_EINVAL;
    goto fail;
  }
  if (!dns_ok(k->lease_ns, GS_NS_MAX) || !dns_ok(k->lease_name, GS_NAME_MAX)) {
    gs_diag_set(diag, "lease", "invalid Lease %s/%s", k->lease_ns, k->lease_name);
    e = GS_EINVAL;
    goto fail;
  }
  if (opts->pod_ns != NULL && opts->pod_ns[0] != '\0' && opts->pod_name != NULL &&
      opts->pod_name[0] != '\0') {
    if (!dns_ok(opts->pod_ns, GS_NS_MAX) || !dns_ok(opts->pod_name, GS_NAME_MAX)) {
      gs_diag_set(diag, "pod", "invalid POD_NAMESPACE/POD_NAME %s/%s", opts->pod_ns,
                  opts->pod_name);
      e = GS_EINVAL;
      goto fail;
    }
    k->pod_ns = gs_strdup(opts->pod_ns);
    k->pod_name = gs_strdup(opts->pod_name);
    if (k->pod_ns == NULL || k->pod_name == NULL) {
      e = GS_ENOMEM;
      goto fail;
    }
  }
  if ((e = make_identity(opts->identity, &k->identity)) != GS_EOK) {
    gs_diag_set(diag, "identity", "invalid leader-election identity");
    goto fail;
  }
  if (opts->kubeconfig != NULL && opts->kubeconfig[0] != '\0')
    e = gs__kube_conn_kubeconfig(&k->conn, opts->kubeconfig, diag);
  else
    e = gs__kube_conn_incluster(&k->conn, opts->sa_dir, diag);
  if (e != GS_EOK)
    goto fail;
  for (int i = 0; i < GS__INF_COUNT; i++) {
    if ((e = gs__informer_init(&k->inf[i], k, (enum gs__inf_kind)i)) != GS_EOK ||
        (e = gs__kube_handle_init(&k->inf[i].h, true)) != GS_EOK)
      goto fail;
  }
  if ((e = gs__kube_handle_init(&k->lease_h, true)) != GS_EOK ||
      (e = gs__kube_handle_init(&k->event_h, true)) != GS_EOK)
    goto fail;
  ret->ops = &kube_ops;
  ret->self = k;
  return GS_EOK;
fail:
  if (e == GS_ENOMEM)
    gs_diag_set(diag, "kube", "out of memory");
  kube_free(k);
  return e;
}
