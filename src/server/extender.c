/* The extender's HTTP routes (docs/contract.md §2) over the scheduler
 * service, and the server's lifecycle. The cluster sink is in sink.c. */
#include "server_int.h"
#include <gpushare/alloc.h>

#include "http.h"
#include "view.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ASSUME_MAX_AGE_NS (INT64_C(300) * 1000000000) /* bind never confirmed */

/* ---- routes ------------------------------------------------------------ */

static void respond(struct gs_http_response *resp, int status, const char *ctype, char *body) {
  resp->status = status;
  resp->content_type = ctype;
  resp->body = body;
  resp->body_len = body ? strlen(body) : 0;
}

static void respond_error(struct gs_http_response *resp, int status, const char *text) {
  respond(resp, status, "application/json", gs_api_error_dump(text));
}

static void count(struct gs_server *s, const char *verb, const char *result, double t0) {
  const char *vl[] = {"verb", verb, NULL};
  const char *rl[] = {"verb", verb, "result", result, NULL};
  gs_metrics_observe(s->metrics, "gpushare_request_duration_seconds",
                     "Latency of extender verbs.", vl, gs__mono_s() - t0);
  gs_metrics_counter_add(s->metrics, "gpushare_requests_total",
                         "Extender requests by verb and result.", rl, 1);
}

/* Decodes the args and the pod of a filter/prioritize body. On failure
 * returns what was invalid ("invalid Pod"), with diag saying why; NULL
 * when both decoded. */
static const char *decode_args(const struct gs_http_request *req, struct gs_api_args *args,
                               struct gs_pod_request *pod, struct gs_diag *diag) {
  if (gs_api_args_decode(req->body, req->body_len, args, diag) != GS_EOK)
    return "invalid ExtenderArgs";
  if (gs_api_pod_decode(args->pod, pod, diag) != GS_EOK) {
    gs_api_args_release(args);
    return "invalid Pod";
  }
  return NULL;
}

/* The demo takes a pod it does not hold as created (cluster.h). */
static void offer_pod(struct gs_server *s, const struct gs_api_args *args) {
  if (s->cluster.ops->pod_offered != NULL)
    s->cluster.ops->pod_offered(s->cluster.self, args->pod);
}

/* gpushare_filter_rejections_total by reason code: a run of nodes with the
 * same code is added at once (code NULL ends the last run), not one
 * registry update per node. Codes are gs__reason_code's static strings. */
static void count_rejection(struct gs_server *s, const char *code, const char **last,
                            size_t *run) {
  if (code != NULL && code == *last) {
    (*run)++;
    return;
  }
  if (*last != NULL && *run > 0) {
    const char *labels[] = {"reason", *last, NULL};
    gs_metrics_counter_add(s->metrics, "gpushare_filter_rejections_total",
                           "Nodes rejected by filter, by reason code (docs/operations.md).",
                           labels, (double)*run);
  }
  *last = code;
  *run = code != NULL ? 1 : 0;
}

static void route_filter(struct gs_server *s, const struct gs_http_request *req,
                         struct gs_http_response *resp) {
  double t0 = gs__mono_s();
  struct gs_api_args args;
  struct gs_pod_request *pod = gs_malloc(sizeof *pod);
  struct gs_node_result *res = NULL;
  struct gs_api_filter_result *out = NULL;
  struct gs_diag diag = {"", ""};
  char err[512];
  const char *what, *result = "error";
  size_t passed = 0, run = 0;
  const char *last_code = NULL;

  if (pod == NULL) {
    respond(resp, 200, "application/json", gs_api_filter_error_dump("out of memory"));
    goto done;
  }
  if (!atomic_load(&s->leader)) {
    respond(resp, 200, "application/json", gs_api_filter_error_dump("not leader"));
    goto done;
  }
  if ((what = decode_args(req, &args, pod, &diag)) != NULL) {
    gs__diag_text(&diag, what, err, sizeof err);
    result = "invalid";
    respond(resp, 200, "application/json", gs_api_filter_error_dump(err));
    goto done;
  }
  offer_pod(s, &args);
  /* gs_sched_filter writes every entry; zeroing 272 bytes a node was waste. */
  res = gs_malloc((args.nnodes ? args.nnodes : 1) * sizeof *res);
  out = gs_api_filter_result_new(args.by_names);
  if (res == NULL || out == NULL ||
      gs_sched_filter(s->sched, pod, args.names, args.nnodes, gs__now_ns(), res) != GS_EOK) {
    respond(resp, 200, "application/json", gs_api_filter_error_dump("internal error"));
    goto release;
  }
  for (size_t i = 0; i < args.nnodes; i++) {
    enum gs_err e;
    if (res[i].code == GS_EOK) {
      e = gs_api_filter_result_pass(out, args.names[i], args.nodes[i]);
      passed++;
    } else {
      e = gs_api_filter_result_fail(out, args.names[i], res[i].reason,
                                    res[i].code == GS_EUNRESOLVABLE);
      count_rejection(s, gs__reason_code(res[i].reason), &last_code, &run);
    }
    if (e != GS_EOK) {
      respond(resp, 200, "application/json", gs_api_filter_error_dump("out of memory"));
      goto release;
    }
  }
  count_rejection(s, NULL, &last_code, &run);
  result = passed > 0 ? "fit" : "nofit";
  respond(resp, 200, "application/json", gs_api_filter_result_dump(out));
  gs_log(GS_LVL_DEBUG, "filter", "pod=%s/%s nodes=%zu passed=%zu", pod->ns, pod->name,
         args.nnodes, passed);
release:
  gs_api_args_release(&args);
done:
  gs_api_filter_result_free(out);
  gs_free(res);
  gs_free(pod);
  count(s, "filter", result, t0);
}

static void route_prioritize(struct gs_server *s, const struct gs_http_request *req,
                             struct gs_http_response *resp) {
  double t0 = gs__mono_s();
  struct gs_api_args args;
  struct gs_pod_request *pod = gs_malloc(sizeof *pod);
  struct gs_node_result *res = NULL;
  int64_t *scores = NULL;
  struct gs_diag diag = {"", ""};
  char err[512];
  const char *what, *result = "error";

  if (pod == NULL) {
    respond_error(resp, 500, "out of memory");
    goto done;
  }
  if (!atomic_load(&s->leader)) {
    respond_error(resp, 503, "not leader");
    goto done;
  }
  if ((what = decode_args(req, &args, pod, &diag)) != NULL) {
    gs__diag_text(&diag, what, err, sizeof err);
    result = "invalid";
    respond_error(resp, 400, err);
    goto done;
  }
  offer_pod(s, &args);
  res = gs_malloc((args.nnodes ? args.nnodes : 1) * sizeof *res); /* all written */
  scores = gs_calloc(args.nnodes ? args.nnodes : 1, sizeof *scores);
  if (res == NULL || scores == NULL ||
      gs_sched_prioritize(s->sched, pod, args.names, args.nnodes, gs__now_ns(), res) != GS_EOK) {
    respond_error(resp, 500, "internal error");
    goto release;
  }
  for (size_t i = 0; i < args.nnodes; i++)
    scores[i] = res[i].code == GS_EOK ? res[i].score : 0;
  result = "ok";
  respond(resp, 200, "application/json",
          gs_api_priorities_dump(args.names, scores, args.nnodes));
release:
  gs_api_args_release(&args);
done:
  gs_free(scores);
  gs_free(res);
  gs_free(pod);
  count(s, "prioritize", result, t0);
}

/* The cluster's side of a bind: the backend's Binding. */
static enum gs_err cluster_bind(void *ctx, const struct gs_pod_request *pod, const char *node,
                                const struct gs_annotations *annots, struct gs_diag *diag) {
  struct gs_server *s = ctx;
  return s->cluster.ops->bind(s->cluster.self, pod->ns, pod->name, pod->uid, node, annots, diag);
}

/* decode → one service call → encode. */
static void route_bind(struct gs_server *s, const struct gs_http_request *req,
                       struct gs_http_response *resp) {
  double t0 = gs__mono_s();
  struct gs_api_bind_args args;
  struct gs_pod_request *pod = gs_malloc(sizeof *pod);
  struct gs_sched_bind_result *r = gs_malloc(sizeof *r);
  struct gs_binder binder = {cluster_bind, s};
  struct gs_diag diag = {"", ""};
  json_t *obj = NULL;
  const char *uid, *result = "error";
  char err[GS_DIAG_TEXT_MAX] = "";

  if (pod == NULL || r == NULL) {
    snprintf(err, sizeof err, "out of memory");
    goto answer;
  }
  if (!atomic_load(&s->leader)) {
    snprintf(err, sizeof err, "not leader");
    goto answer;
  }
  if (gs_api_bind_args_decode(req->body, req->body_len, &args, &diag) != GS_EOK) {
    result = "invalid";
    gs__diag_text(&diag, "invalid ExtenderBindingArgs", err, sizeof err);
    goto answer;
  }
  obj = s->cluster.ops->pod_get(s->cluster.self, args.pod_ns, args.pod_name);
  if (obj == NULL) {
    snprintf(err, sizeof err, "pod %s/%s not found", args.pod_ns, args.pod_name);
    goto answer;
  }
  uid = gs_api_pod_uid(obj);
  if (args.pod_uid[0] != '\0' && uid != NULL && strcmp(uid, args.pod_uid) != 0) {
    snprintf(err, sizeof err, "pod %s/%s has UID %s, not %s", args.pod_ns, args.pod_name, uid,
             args.pod_uid);
    goto answer;
  }
  if (gs_api_pod_decode(obj, pod, &diag) != GS_EOK) {
    gs__diag_text(&diag, "invalid Pod", err, sizeof err);
    goto answer;
  }
  if (gs_sched_bind(s->sched, pod, gs_api_pod_node(obj), args.node, gs__now_ns(), &binder, r) !=
      GS_EOK) {
    snprintf(err, sizeof err, "%s", r->diag.text);
    if (r->no_fit)
      result = "nofit";
    if (r->cluster_failed)
      s->cluster.ops->event(s->cluster.self, obj, "FailedBinding", err);
    goto answer;
  }
  result = "ok";
  if (r->bound)
    gs_log(GS_LVL_INFO, "bound", "pod=%s/%s node=%s allocation=%s", pod->ns, pod->name,
           args.node, gs_annotations_get(&r->annots, GS_ANN_ALLOCATION)
                          ? gs_annotations_get(&r->annots, GS_ANN_ALLOCATION)
                          : gs_annotations_get(&r->annots, GS_ANN_TOPO_ALLOCATION));
  gs_annotations_clear(&r->annots);
answer:
  if (err[0] != '\0' && strcmp(result, "ok") != 0)
    gs_log(GS_LVL_WARN, "bind failed", "error=\"%s\"", err);
  respond(resp, 200, "application/json", gs_api_bind_result_dump(strcmp(result, "ok") == 0 ? "" : err));
  json_decref(obj);
  gs_free(r);
  gs_free(pod);
  count(s, "bind", result, t0);
}

/* One line per kept node: kube-scheduler's proposal and gpushare's answer
 * (UIDs), so an operator can see what changed. */
static void log_victims(const struct gs_pod_request *pod, const struct gs_api_preempt_node *offer,
                        const struct gs_api_preempt_node *answer) {
  char proposed[1024] = "", chosen[1024] = "";
  for (size_t j = 0; j < offer->nvictims; j++)
    snprintf(proposed + strlen(proposed), sizeof proposed - strlen(proposed), "%s%s",
             j ? "," : "", offer->uids[j]);
  for (size_t j = 0; j < answer->nvictims; j++)
    snprintf(chosen + strlen(chosen), sizeof chosen - strlen(chosen), "%s%s", j ? "," : "",
             answer->uids[j]);
  gs_log(GS_LVL_INFO, "preempt: victims", "pod=%s/%s node=%s proposed=%s victims=%s", pod->ns,
         pod->name, answer->node, proposed, chosen);
}

/* decode → one service call → encode. A malformed body is an HTTP 400
 * with {"Error":...}: ExtenderPreemptionResult has no Error field, and
 * kube-scheduler fails the preemption on any status but 200 (docs/api.md). */
static void route_preempt(struct gs_server *s, const struct gs_http_request *req,
                          struct gs_http_response *resp) {
  double t0 = gs__mono_s();
  struct gs_api_preempt_args args = {0};
  struct gs_pod_request *pod = gs_malloc(sizeof *pod);
  struct gs_preempt_offer *offers = NULL;
  struct gs_preempt_answer *answers = NULL;
  struct gs_api_preempt_node *kept = NULL;
  const char **uids = NULL;
  struct gs_diag diag = {"", ""};
  const char *result = "error";
  char err[GS_DIAG_TEXT_MAX] = "";
  size_t nkept = 0, nuids = 0, total = 0;
  int status = 500;

  if (pod == NULL) {
    snprintf(err, sizeof err, "out of memory");
    goto answer;
  }
  if (!atomic_load(&s->leader)) {
    status = 503;
    snprintf(err, sizeof err, "not leader");
    goto answer;
  }
  if (gs_api_preempt_args_decode(req->body, req->body_len, &args, &diag) != GS_EOK) {
    status = 400;
    result = "invalid";
    gs__diag_text(&diag, "invalid ExtenderPreemptionArgs", err, sizeof err);
    goto answer;
  }
  if (gs_api_pod_decode(args.pod, pod, &diag) != GS_EOK) {
    status = 400;
    result = "invalid";
    gs__diag_text(&diag, "invalid Pod", err, sizeof err);
    goto answer;
  }
  offers = gs_calloc(args.nnodes ? args.nnodes : 1, sizeof *offers);
  answers = gs_calloc(args.nnodes ? args.nnodes : 1, sizeof *answers);
  kept = gs_calloc(args.nnodes ? args.nnodes : 1, sizeof *kept);
  if (offers == NULL || answers == NULL || kept == NULL) {
    snprintf(err, sizeof err, "out of memory");
    goto answer;
  }
  for (size_t i = 0; i < args.nnodes; i++)
    offers[i] = (struct gs_preempt_offer){args.nodes[i].node, args.nodes[i].uids,
                                          args.nodes[i].nvictims};
  if (gs_sched_preempt(s->sched, pod, offers, args.nnodes, answers) == GS_ENOMEM) {
    snprintf(err, sizeof err, "out of memory");
    goto answer;
  }
  for (size_t i = 0; i < args.nnodes; i++)
    total += answers[i].nvictims;
  uids = gs_calloc(total ? total : 1, sizeof *uids);
  if (uids == NULL) {
    snprintf(err, sizeof err, "out of memory");
    goto answer;
  }
  for (size_t i = 0; i < args.nnodes; i++) {
    if (!answers[i].keep) {
      gs_log(GS_LVL_DEBUG, "preempt: node dropped", "pod=%s/%s node=%s reason=\"%s\"", pod->ns,
             pod->name, args.nodes[i].node, answers[i].reason);
      continue;
    }
    kept[nkept] = (struct gs_api_preempt_node){args.nodes[i].node, answers[i].nvictims,
                                               uids + nuids, args.nodes[i].pdb_violations};
    for (size_t j = 0; j < answers[i].nvictims; j++)
      uids[nuids++] = answers[i].victims[j];
    log_victims(pod, &args.nodes[i], &kept[nkept]);
    nkept++;
  }
  result = nkept > 0 ? "ok" : "nofit";
  gs_log(GS_LVL_INFO, "preempt", "pod=%s/%s offered=%zu kept=%zu victims=%zu", pod->ns,
         pod->name, args.nnodes, nkept, nuids);
answer:
  if (strcmp(result, "ok") == 0 || strcmp(result, "nofit") == 0) {
    char *body = gs_api_preempt_result_dump(kept, nkept);
    if (body != NULL)
      respond(resp, 200, "application/json", body);
    else
      respond_error(resp, 500, "out of memory");
  } else {
    gs_log(GS_LVL_WARN, "preempt failed", "error=\"%s\"", err);
    respond_error(resp, status, err);
  }
  gs_sched_preempt_free(answers, answers != NULL ? args.nnodes : 0);
  gs_free(answers);
  gs_free(offers);
  gs_free(kept);
  gs_free(uids);
  gs_api_preempt_args_release(&args);
  gs_free(pod);
  count(s, "preempt", result, t0);
}

/* /debug/ledger and inspect (view.c): 404 for a node gpushare does not
 * know. */
static void respond_view(struct gs_server *s, const char *node, bool inspect,
                         struct gs_http_response *resp) {
  char *text = NULL;
  char msg[GS_NAME_MAX + 64];
  enum gs_err err = gs__view_json(s->sched, node, inspect, &s->config, &text);
  if (err == GS_ENOTFOUND) {
    snprintf(msg, sizeof msg, "node %s is unknown to gpushare", node);
    json_t *body = json_pack("{s:s}", "error", msg);
    respond(resp, 404, "application/json", body ? gs_api_dump(body) : NULL);
    json_decref(body);
    return;
  }
  if (err != GS_EOK) {
    respond_error(resp, 500, gs_strerror(err));
    return;
  }
  respond(resp, 200, "application/json", text);
}

/* Finds key=value in a raw query string; value percent-decoded into out. */
static bool query_get(const char *query, const char *key, char *out, size_t len) {
  size_t klen = strlen(key);
  const char *p = query;
  while (p != NULL && *p) {
    if (strncmp(p, key, klen) == 0 && p[klen] == '=') {
      size_t n = 0;
      for (p += klen + 1; *p && *p != '&' && n + 1 < len; p++) {
        if (*p == '%' && p[1] && p[2]) {
          char hex[3] = {p[1], p[2], 0};
          out[n++] = (char)strtol(hex, NULL, 16);
          p += 2;
        } else {
          out[n++] = *p == '+' ? ' ' : *p;
        }
      }
      out[n] = '\0';
      return true;
    }
    p = strchr(p, '&');
    if (p != NULL)
      p++;
  }
  return false;
}

static void route_metrics(struct gs_server *s, struct gs_http_response *resp) {
  const char *none[] = {NULL};
  gs__view_gauges(s->sched, &s->config, s->metrics);
  gs_metrics_gauge_set(s->metrics, "gpushare_leader", "1 when this replica serves the verbs.",
                       none, atomic_load(&s->leader) ? 1 : 0);
  gs_metrics_gauge_set(s->metrics, "gpushare_cache_synced", "1 once the first sync is done.",
                       none, atomic_load(&s->synced) ? 1 : 0);
  if (s->cluster.ops->stats != NULL) {
    /* The backend counts; the registry's counters advance by the delta. */
    struct gs_cluster_stats cs = {0};
    s->cluster.ops->stats(s->cluster.self, &cs);
    pthread_mutex_lock(&s->mu);
    gs_metrics_counter_add(s->metrics, "gpushare_apiserver_request_errors_total",
                           "Failed apiserver requests (transport, 5xx, 429, 401/403).", none,
                           (double)(cs.api_errors - s->stats.api_errors));
    gs_metrics_counter_add(s->metrics, "gpushare_watch_restarts_total",
                           "Watches re-established after an error or expiry.", none,
                           (double)(cs.watch_restarts - s->stats.watch_restarts));
    gs_metrics_counter_add(s->metrics, "gpushare_relists_total", "Full relists after the first.",
                           none, (double)(cs.relists - s->stats.relists));
    s->stats = cs;
    pthread_mutex_unlock(&s->mu);
  }
  {
    uint64_t t = gs_sched_gang_timeouts(s->sched);
    pthread_mutex_lock(&s->mu);
    gs_metrics_counter_add(s->metrics, "gpushare_gang_timeouts_total",
                           "Gang plans not all bound within gangTimeoutSeconds.", none,
                           (double)(t - s->gang_timeouts));
    s->gang_timeouts = t;
    pthread_mutex_unlock(&s->mu);
  }
  respond(resp, 200, "text/plain; version=0.0.4; charset=utf-8", gs_metrics_render(s->metrics));
}

#define PREFIX "/gpushare-scheduler"

void gs__server_handle(void *ctx, const struct gs_http_request *req,
                       struct gs_http_response *resp) {
  struct gs_server *s = ctx;
  const char *path = req->path;
  bool post = strcmp(req->method, "POST") == 0;
  bool get = strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0;
  static const char *const post_routes[] = {PREFIX "/filter", PREFIX "/prioritize",
                                            PREFIX "/bind", PREFIX "/preempt"};
  static const char *const get_routes[] = {"/healthz",       "/readyz",         "/version",
                                           "/metrics",       "/debug/ledger",   PREFIX "/inspect",
                                           "/readyz/replica"};
  char node[GS_NAME_MAX + 1];
  bool configured = atomic_load(&s->configured);

  for (size_t i = 0; i < sizeof post_routes / sizeof post_routes[0]; i++) {
    if (strcmp(path, post_routes[i]) != 0)
      continue;
    if (!post) {
      respond_error(resp, 405, "method not allowed: use POST");
      return;
    }
    if (s->cfg.tls_client_ca_file[0] != '\0' && !req->client_verified) {
      /* docs/security.md: only kube-scheduler (its extender tlsConfig
       * certificate) may call the verbs */
      gs_log(GS_LVL_WARN, "verb refused: no verified client certificate", "path=%s remote=%s",
             path, req->remote);
      respond_error(resp, 403, "a client certificate signed by the --tls-client-ca-file CA "
                               "is required");
      return;
    }
    if (!configured) { /* still reading the configuration from the apiserver */
      if (i == 1 || i == 3)
        respond_error(resp, 503, "not ready");
      else
        respond(resp, 200, "application/json",
                i == 0 ? gs_api_filter_error_dump("not ready") : gs_api_bind_result_dump("not ready"));
      return;
    }
    if (i == 0)
      route_filter(s, req, resp);
    else if (i == 1)
      route_prioritize(s, req, resp);
    else if (i == 2)
      route_bind(s, req, resp);
    else
      route_preempt(s, req, resp);
    return;
  }
  for (size_t i = 0; i < sizeof get_routes / sizeof get_routes[0]; i++) {
    size_t len = strlen(get_routes[i]);
    bool exact = strcmp(path, get_routes[i]) == 0;
    bool sub = i == 5 && strncmp(path, get_routes[i], len) == 0 && path[len] == '/' &&
               path[len + 1] != '\0';
    if (!exact && !sub)
      continue;
    if (!get) {
      respond_error(resp, 405, "method not allowed: use GET");
      return;
    }
    switch (i) {
    case 0:
      respond(resp, 200, "text/plain; charset=utf-8", gs_strdup("ok\n"));
      return;
    case 1:
      if (configured && atomic_load(&s->synced) && atomic_load(&s->leader))
        respond(resp, 200, "text/plain; charset=utf-8", gs_strdup("ok\n"));
      else
        respond(resp, 503, "text/plain; charset=utf-8",
                gs_strdup(atomic_load(&s->synced) ? "not leader\n" : "cache not synced\n"));
      return;
    case 2:
      respond(resp, 200, "text/plain; charset=utf-8", gs_strdup("gpushare-extender " GS_VERSION "\n"));
      return;
    case 3:
      if (!configured)
        break;
      route_metrics(s, resp);
      return;
    case 4:
      if (!configured)
        break;
      if (query_get(req->query, "node", node, sizeof node))
        respond_view(s, node, false, resp);
      else
        respond_view(s, NULL, false, resp);
      return;
    case 5:
      if (!configured)
        break;
      respond_view(s, exact ? NULL : path + len + 1, true, resp);
      return;
    default: /* /readyz/replica: a replica able to serve (leader or standby) */
      if (configured && atomic_load(&s->synced))
        respond(resp, 200, "text/plain; charset=utf-8", gs_strdup("ok\n"));
      else
        respond(resp, 503, "text/plain; charset=utf-8", gs_strdup("cache not synced\n"));
      return;
    }
    respond_error(resp, 503, "not ready");
    return;
  }
  respond_error(resp, 404, "not found");
}

/* ---- lifecycle --------------------------------------------------------- */

struct gs_server *gs_server_new(const struct gs_config *cfg, struct gs_cluster cluster,
                                struct gs_diag *diag) {
  struct gs_server *s = gs_calloc(1, sizeof *s);

  if (s == NULL) {
    gs_diag_set(diag, "", "out of memory");
    cluster.ops->destroy(cluster.self);
    return NULL;
  }
  s->cfg = *cfg;
  s->cluster = cluster;
  pthread_mutex_init(&s->mu, NULL);
  atomic_init(&s->synced, false);
  atomic_init(&s->leader, false);
  gs__feed_config_init(&s->config);
  atomic_init(&s->configured, false);
  s->metrics = gs_metrics_new();
  if (s->metrics == NULL) {
    gs_diag_set(diag, "", "out of memory");
    gs_server_free(s);
    return NULL;
  }
  return s;
}

enum gs_err gs_server_listen(struct gs_server *s, struct gs_diag *diag) {
  struct gs_http_opts opts = {0};
  opts.listen = s->cfg.listen;
  opts.tls_cert_file = s->cfg.tls_cert_file[0] ? s->cfg.tls_cert_file : NULL;
  opts.tls_key_file = s->cfg.tls_key_file[0] ? s->cfg.tls_key_file : NULL;
  opts.tls_client_ca_file = s->cfg.tls_client_ca_file[0] ? s->cfg.tls_client_ca_file : NULL;
  opts.body_max = GS_API_BODY_MAX;
  s->http = gs_http_start(&opts, gs__server_handle, s, diag);
  if (s->http == NULL)
    return GS_EIO;
  gs_log(GS_LVL_INFO, "listening", "addr=%s port=%u tls=%s", s->cfg.listen,
         (unsigned)gs_http_port(s->http), opts.tls_cert_file ? "on" : "off");
  return GS_EOK;
}

enum gs_err gs_server_start(struct gs_server *s, const struct gs_policy *policy,
                            struct gs_diag *diag) {
  struct gs_cluster_sink sink = gs__server_sink(s);
  enum gs_err err;

  s->cfg.policy = *policy;
  s->sched = gs_sched_new(policy);
  if (s->sched == NULL) {
    gs_diag_set(diag, "", "out of memory");
    return GS_ENOMEM;
  }
  {
    struct gs_notify notify = {gs__server_on_notice, s};
    gs_sched_set_notify(s->sched, &notify);
  }
  atomic_store(&s->configured, true);
  gs_log(GS_LVL_INFO, "configured", "unit=%s nodePolicy=%s cgpuMaxPodsPerGPU=%u gangTimeoutSeconds=%u",
         gs_unit_name(policy->unit_mib), gs_placement_name(policy->node_policy),
         (unsigned)policy->cgpu_max_pods, (unsigned)policy->gang_timeout_s);
  err = s->cluster.ops->start(s->cluster.self, &sink);
  if (err != GS_EOK) {
    gs_diag_set(diag, "", "cannot start the %s cluster: %s", s->cluster.ops->name,
                gs_strerror(err));
    return err;
  }
  return GS_EOK;
}

void gs_server_run(struct gs_server *s, volatile sig_atomic_t *stop) {
  unsigned ticks = 0;
  while (!*stop) {
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    if (!atomic_load(&s->configured))
      continue;
    gs_sched_tick(s->sched, gs__now_ns());
    if (++ticks % 10 == 0) /* every ~2 s: pods waiting for their node or for memory */
      (void)gs_sched_retry_kept(s->sched);
    if (ticks % 50 == 0) { /* every ~10 s */
      size_t n = gs_sched_expire_assumed(s->sched, gs__now_ns(), ASSUME_MAX_AGE_NS);
      if (n > 0)
        gs_log(GS_LVL_WARN, "released reservations whose bind never confirmed", "count=%zu", n);
    }
  }
}

uint16_t gs_server_port(const struct gs_server *s) { return gs_http_port(s->http); }

void gs_server_free(struct gs_server *s) {
  if (s == NULL)
    return;
  gs_http_stop(s->http);
  if (s->cluster.ops != NULL) {
    s->cluster.ops->stop(s->cluster.self);
    s->cluster.ops->destroy(s->cluster.self);
  }
  gs_sched_free(s->sched);
  gs_metrics_free(s->metrics);
  gs__feed_config_destroy(&s->config);
  pthread_mutex_destroy(&s->mu);
  gs_free(s);
}
