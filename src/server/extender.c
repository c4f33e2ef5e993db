/* The extender's HTTP routes (docs/contract.md §2) over the scheduler
 * service, and the server's lifecycle. The cluster sink is in sink.c. */
#include "server_int.h"
#include <gpushare/alloc.h>

#include "feed.h"
#include "http.h"
#include "view.h"

#include <inttypes.h>
#include <stdarg.h>
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

/* How a verb answers a failure (docs/contract.md §2): filter and bind in
 * their result's Error with HTTP 200 (where kube-scheduler reads it);
 * prioritize and preempt with the HTTP status and {"Error":...}. */
enum answer { ANSWER_FILTER, ANSWER_BIND, ANSWER_STATUS };

static void refuse(struct gs_http_response *resp, enum answer how, int status, const char *text) {
  if (how == ANSWER_FILTER)
    respond(resp, 200, "application/json", gs_api_filter_error_dump(text));
  else if (how == ANSWER_BIND)
    respond(resp, 200, "application/json", gs_api_bind_result_dump(text));
  else
    respond_error(resp, status, text);
}

static void count(struct gs_server *s, const char *verb, const char *result, double t0) {
  const char *vl[] = {"verb", verb, NULL};
  const char *rl[] = {"verb", verb, "result", result, NULL};
  gs_metrics_observe(s->metrics, "gpushare_request_duration_seconds",
                     "Latency of extender verbs.", vl, gs__mono_s() - t0);
  gs_metrics_counter_add(s->metrics, "gpushare_requests_total",
                         "Extender requests by verb and result.", rl, 1);
}

/* One verb request, on the stack: what the preamble decoded for the
 * handler, and how the handler failed. */
struct call {
  struct gs_server *s;
  const struct gs_http_request *req;
  struct gs_http_response *resp;
  struct gs_pod_request *pod; /* the preamble's (bind's handler decodes it) */
  union {
    struct gs_api_args args;            /* filter, prioritize */
    struct gs_api_bind_args bind;       /* bind */
    struct gs_api_preempt_args preempt; /* preempt */
  } in;
  const char *result; /* the metrics' result label; "error" until said */
  bool failed;        /* the preamble answers: status and err */
  int status;
  char err[GS_DIAG_TEXT_MAX];
};

/* A verb fails: the preamble answers with the text the verb's way. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void fail(struct call *c, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, sizeof c->err, fmt, ap);
  va_end(ap);
  c->failed = true;
  c->status = status;
}

/* A verb: its metrics label, how it answers a failure, the decoding of its
 * body (false: c->err says what was invalid) and its handler. */
struct verb {
  const char *name;
  enum answer answer;
  const char *failed_log; /* the warning a failure logs; NULL: none */
  bool (*decode)(struct call *c);
  void (*release)(struct call *c); /* after a decode that succeeded; NULL: nothing */
  void (*serve)(struct call *c);
};

/* The one preamble of the verbs: timer, pod, leader check, decode,
 * handler, release, failure answer, count. Per request: the pod is the
 * only allocation (as the handlers' own are). */
static void serve_verb(struct gs_server *s, const struct verb *v, const struct gs_http_request *req,
                       struct gs_http_response *resp) {
  double t0 = gs__mono_s();
  struct call c;

  c.s = s;
  c.req = req;
  c.resp = resp;
  c.result = "error";
  c.failed = false;
  c.pod = gs_malloc(sizeof *c.pod);
  if (c.pod == NULL) {
    fail(&c, 500, "out of memory");
  } else if (!atomic_load(&s->leader)) {
    fail(&c, 503, "not leader");
  } else if (!v->decode(&c)) {
    c.result = "invalid";
    c.failed = true;
    c.status = 400;
  } else {
    v->serve(&c);
    if (v->release != NULL)
      v->release(&c);
  }
  if (c.failed) {
    if (v->failed_log != NULL)
      gs_log(GS_LVL_WARN, v->failed_log, "error=\"%s\"", c.err);
    refuse(resp, v->answer, c.status, c.err);
  }
  gs_free(c.pod);
  count(s, v->name, c.result, t0);
}

/* filter/prioritize: the ExtenderArgs and their pod. Their error text is
 * cut at ARGS_ERR_MAX, as it always was. */
#define ARGS_ERR_MAX 512
static bool decode_args(struct call *c) {
  struct gs_diag diag = {"", ""};
  if (gs_api_args_decode(c->req->body, c->req->body_len, &c->in.args, &diag) != GS_EOK) {
    gs__diag_text(&diag, "invalid ExtenderArgs", c->err, ARGS_ERR_MAX);
    return false;
  }
  if (gs_api_pod_decode(c->in.args.pod, c->pod, &diag) != GS_EOK) {
    gs_api_args_release(&c->in.args);
    gs__diag_text(&diag, "invalid Pod", c->err, ARGS_ERR_MAX);
    return false;
  }
  /* The demo takes a pod it does not hold as created (cluster.h). */
  if (c->s->cluster.ops->pod_offered != NULL)
    c->s->cluster.ops->pod_offered(c->s->cluster.self, c->in.args.pod);
  return true;
}

static void release_args(struct call *c) { gs_api_args_release(&c->in.args); }

/* gpushare_filter_rejections_total by reason code: a run of nodes with the
 * same code is added at once (code NULL ends the last run), not one
 * registry update per node. Codes are gs_reason_label's static strings. */
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

static void serve_filter(struct call *c) {
  const struct gs_api_args *args = &c->in.args;
  /* gs_sched_filter writes every entry; zeroing 272 bytes a node was waste. */
  struct gs_node_result *res = gs_malloc((args->nnodes ? args->nnodes : 1) * sizeof *res);
  struct gs_api_filter_result *out = gs_api_filter_result_new(args->by_names);
  size_t passed = 0, run = 0;
  const char *last_code = NULL;

  gs__server_settle(c->s, c->pod, args->pod, args->names, args->nnodes);
  if (res == NULL || out == NULL || gs_api_filter_result_expect(out, args->nnodes) != GS_EOK ||
      gs_sched_filter(c->s->sched, c->pod, args->names, args->nnodes, gs__now_ns(), res) !=
          GS_EOK) {
    fail(c, 500, "internal error");
    goto done;
  }
  for (size_t i = 0; i < args->nnodes; i++) {
    enum gs_err e;
    if (res[i].code == GS_EOK) {
      e = gs_api_filter_result_pass(out, args->names[i], args->nodes[i]);
      passed++;
    } else {
      e = gs_api_filter_result_fail(out, args->names[i], res[i].reason,
                                    res[i].code == GS_EUNRESOLVABLE);
      count_rejection(c->s, gs_reason_label(res[i].why), &last_code, &run);
    }
    if (e != GS_EOK) {
      fail(c, 500, "out of memory");
      goto done;
    }
  }
  count_rejection(c->s, NULL, &last_code, &run);
  c->result = passed > 0 ? "fit" : "nofit";
  respond(c->resp, 200, "application/json", gs_api_filter_result_dump(out));
  gs_log(GS_LVL_DEBUG, "filter", "pod=%s/%s nodes=%zu passed=%zu", c->pod->ns, c->pod->name,
         args->nnodes, passed);
done:
  gs_api_filter_result_free(out);
  gs_free(res);
}

static void serve_prioritize(struct call *c) {
  const struct gs_api_args *args = &c->in.args;
  struct gs_node_result *res = gs_malloc((args->nnodes ? args->nnodes : 1) * sizeof *res);
  int64_t *scores = gs_calloc(args->nnodes ? args->nnodes : 1, sizeof *scores);

  if (res == NULL || scores == NULL ||
      gs_sched_prioritize(c->s->sched, c->pod, args->names, args->nnodes, gs__now_ns(), res) !=
          GS_EOK) {
    fail(c, 500, "internal error");
    goto done;
  }
  for (size_t i = 0; i < args->nnodes; i++)
    scores[i] = res[i].code == GS_EOK ? res[i].score : 0;
  c->result = "ok";
  respond(c->resp, 200, "application/json",
          gs_api_priorities_dump(args->names, scores, args->nnodes));
done:
  gs_free(scores);
  gs_free(res);
}

static bool decode_bind(struct call *c) {
  struct gs_diag diag = {"", ""};
  if (gs_api_bind_args_decode(c->req->body, c->req->body_len, &c->in.bind, &diag) == GS_EOK)
    return true;
  gs__diag_text(&diag, "invalid ExtenderBindingArgs", c->err, sizeof c->err);
  return false;
}

/* The cluster's side of a bind: the backend's Binding. */
static enum gs_err cluster_bind(void *ctx, const struct gs_pod_request *pod, const char *node,
                                const struct gs_annotations *annots, struct gs_diag *diag) {
  struct gs_server *s = ctx;
  return s->cluster.ops->bind(s->cluster.self, pod->ns, pod->name, pod->uid, node, annots, diag);
}

/* The pod as the cluster holds it → one service call → the answer. */
static void serve_bind(struct call *c) {
  struct gs_server *s = c->s;
  const struct gs_api_bind_args *args = &c->in.bind;
  struct gs_sched_bind_result *r = gs_malloc(sizeof *r);
  struct gs_binder binder = {cluster_bind, s};
  struct gs_diag diag = {"", ""};
  json_t *obj = NULL;
  const char *uid;

  if (r == NULL) {
    fail(c, 500, "out of memory");
    goto done;
  }
  obj = s->cluster.ops->pod_get(s->cluster.self, args->pod_ns, args->pod_name);
  if (obj == NULL) {
    fail(c, 500, "pod %s/%s not found", args->pod_ns, args->pod_name);
    goto done;
  }
  uid = gs_api_pod_uid(obj);
  if (args->pod_uid[0] != '\0' && uid != NULL && strcmp(uid, args->pod_uid) != 0) {
    fail(c, 500, "pod %s/%s has UID %s, not %s", args->pod_ns, args->pod_name, uid,
         args->pod_uid);
    goto done;
  }
  if (gs_api_pod_decode(obj, c->pod, &diag) != GS_EOK) {
    c->failed = true;
    c->status = 500;
    gs__diag_text(&diag, "invalid Pod", c->err, sizeof c->err);
    goto done;
  }
  /* Its labels and requests before the Binding, not when the watch brings
   * it back bound: kube-scheduler may ask to preempt it (its cache assumed
   * it) before then, and a victim whose labels are unknown is under no
   * budget (docs/preemption.md "Bound before the watch"). A record of a
   * pod whose bind then fails is never read (victims are bound pods) and
   * goes with its deletion. */
  gs__feed_pod_meta(s->sched, obj);
  if (gs_sched_bind(s->sched, c->pod, gs_api_pod_node(obj), args->node, gs__now_ns(), &binder,
                    r) != GS_EOK) {
    fail(c, 500, "%s", r->diag.text);
    if (r->no_fit)
      c->result = "nofit";
    if (r->cluster_failed)
      s->cluster.ops->event(s->cluster.self, obj, "FailedBinding", c->err);
    goto done;
  }
  c->result = "ok";
  gs_sched_preempt_forget(s->sched, c->pod->uid);
  if (r->bound)
    gs_log(GS_LVL_INFO, "bound", "pod=%s/%s node=%s allocation=%s", c->pod->ns, c->pod->name,
           args->node, gs_annotations_get(&r->annots, GS_ANN_ALLOCATION)
                           ? gs_annotations_get(&r->annots, GS_ANN_ALLOCATION)
                           : gs_annotations_get(&r->annots, GS_ANN_TOPO_ALLOCATION));
  gs_annotations_clear(&r->annots);
  respond(c->resp, 200, "application/json", gs_api_bind_result_dump(""));
done:
  json_decref(obj);
  gs_free(r);
}

/* A malformed body is an HTTP 400 with {"Error":...}:
 * ExtenderPreemptionResult has no Error field, and kube-scheduler fails
 * the preemption on any status but 200 (docs/api.md). */
static bool decode_preempt(struct call *c) {
  struct gs_diag diag = {"", ""};
  memset(&c->in.preempt, 0, sizeof c->in.preempt);
  if (gs_api_preempt_args_decode(c->req->body, c->req->body_len, &c->in.preempt, &diag) !=
      GS_EOK) {
    gs_api_preempt_args_release(&c->in.preempt);
    gs__diag_text(&diag, "invalid ExtenderPreemptionArgs", c->err, sizeof c->err);
    return false;
  }
  if (gs_api_pod_decode(c->in.preempt.pod, c->pod, &diag) != GS_EOK) {
    gs_api_preempt_args_release(&c->in.preempt);
    gs__diag_text(&diag, "invalid Pod", c->err, sizeof c->err);
    return false;
  }
  return true;
}

static void release_preempt(struct call *c) { gs_api_preempt_args_release(&c->in.preempt); }

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
  gs_log(GS_LVL_INFO, "preempt: victims",
         "pod=%s/%s node=%s proposed=%s victims=%s pdb_violations=%" PRId64, pod->ns, pod->name,
         answer->node, proposed, chosen, answer->pdb_violations);
}

/* The offers → one service call → the nodes kept, with their victims. */
static void serve_preempt(struct call *c) {
  const struct gs_api_preempt_args *args = &c->in.preempt;
  const struct gs_pod_request *pod = c->pod;
  size_t slots = args->nnodes ? args->nnodes : 1;
  struct gs_preempt_offer *offers = gs_calloc(slots, sizeof *offers);
  struct gs_preempt_answer *answers = gs_calloc(slots, sizeof *answers);
  struct gs_api_preempt_node *kept = gs_calloc(slots, sizeof *kept);
  const char **uids = NULL;
  size_t nkept = 0, nuids = 0, total = 0;
  char *body;

  if (offers == NULL || answers == NULL || kept == NULL) {
    fail(c, 500, "out of memory");
    goto done;
  }
  if (gs_pod_request_is_gang_member(pod)) {
    /* kube-scheduler evicts on the one node it picks, for this member only:
     * a gang's preemption, all members or none, is gpushare-scheduler's
     * (docs/gangs.md "Preemption"). No node is kept: nothing is evicted. */
    gs_log(GS_LVL_INFO, "preempt", "pod=%s/%s offered=%zu kept=0 victims=0 reason=\"%s\"",
           pod->ns, pod->name, args->nnodes,
           "a gang member: gang preemption needs gpushare-scheduler");
    c->result = "nofit";
    body = gs_api_preempt_result_dump(kept, 0);
    if (body != NULL)
      respond(c->resp, 200, "application/json", body);
    else
      respond_error(c->resp, 500, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < args->nnodes; i++)
    offers[i] = (struct gs_preempt_offer){args->nodes[i].node, args->nodes[i].uids,
                                          args->nodes[i].nvictims};
  if (gs_sched_preempt(c->s->sched, pod, offers, args->nnodes, answers) == GS_ENOMEM) {
    fail(c, 500, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < args->nnodes; i++)
    total += answers[i].nvictims;
  uids = gs_calloc(total ? total : 1, sizeof *uids);
  if (uids == NULL) {
    fail(c, 500, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < args->nnodes; i++) {
    if (!answers[i].keep) {
      gs_log(GS_LVL_DEBUG, "preempt: node dropped", "pod=%s/%s node=%s reason=\"%s\"", pod->ns,
             pod->name, args->nodes[i].node, answers[i].reason);
      continue;
    }
    kept[nkept] = (struct gs_api_preempt_node){args->nodes[i].node, answers[i].nvictims,
                                               uids + nuids, answers[i].pdb_violations};
    for (size_t j = 0; j < answers[i].nvictims; j++)
      uids[nuids++] = answers[i].victims[j];
    log_victims(pod, &args->nodes[i], &kept[nkept]);
    nkept++;
  }
  c->result = nkept > 0 ? "ok" : "nofit";
  if (nkept > 0)
    gs_sched_preempt_note(c->s->sched, pod->uid, offers, answers, args->nnodes);
  gs_log(GS_LVL_INFO, "preempt", "pod=%s/%s offered=%zu kept=%zu victims=%zu", pod->ns,
         pod->name, args->nnodes, nkept, nuids);
  body = gs_api_preempt_result_dump(kept, nkept);
  if (body != NULL)
    respond(c->resp, 200, "application/json", body);
  else
    respond_error(c->resp, 500, "out of memory");
done:
  gs_sched_preempt_free(answers, answers != NULL ? args->nnodes : 0);
  gs_free(answers);
  gs_free(offers);
  gs_free(kept);
  gs_free(uids);
}

static const struct verb verb_filter = {"filter", ANSWER_FILTER, NULL,
                                        decode_args, release_args, serve_filter};
static const struct verb verb_prioritize = {"prioritize", ANSWER_STATUS, NULL,
                                            decode_args, release_args, serve_prioritize};
static const struct verb verb_bind = {"bind", ANSWER_BIND, "bind failed",
                                      decode_bind, NULL, serve_bind};
static const struct verb verb_preempt = {"preempt", ANSWER_STATUS, "preempt failed",
                                         decode_preempt, release_preempt, serve_preempt};

/* ---- the GET routes ------------------------------------------------------ */

static void text(struct gs_http_response *resp, int status, const char *body) {
  respond(resp, status, "text/plain; charset=utf-8", gs_strdup(body));
}

static void get_healthz(struct gs_server *s, const struct gs_http_request *req, const char *sub,
                        struct gs_http_response *resp) {
  (void)s, (void)req, (void)sub;
  text(resp, 200, "ok\n");
}

static void get_readyz(struct gs_server *s, const struct gs_http_request *req, const char *sub,
                       struct gs_http_response *resp) {
  (void)req, (void)sub;
  if (atomic_load(&s->configured) && atomic_load(&s->synced) && atomic_load(&s->leader))
    text(resp, 200, "ok\n");
  else
    text(resp, 503, atomic_load(&s->synced) ? "not leader\n" : "cache not synced\n");
}

/* /readyz/replica: a replica able to serve (leader or standby). */
static void get_replica(struct gs_server *s, const struct gs_http_request *req, const char *sub,
                        struct gs_http_response *resp) {
  (void)req, (void)sub;
  if (atomic_load(&s->configured) && atomic_load(&s->synced))
    text(resp, 200, "ok\n");
  else
    text(resp, 503, "cache not synced\n");
}

static void get_version(struct gs_server *s, const struct gs_http_request *req, const char *sub,
                        struct gs_http_response *resp) {
  (void)s, (void)req, (void)sub;
  text(resp, 200, "gpushare-extender " GS_VERSION "\n");
}

/* /debug/ledger and inspect (view.c): 404 for a node gpushare does not
 * know. */
static void respond_view(struct gs_server *s, const char *node, bool inspect,
                         struct gs_http_response *resp) {
  char *body_text = NULL;
  char msg[GS_NAME_MAX + 64];
  enum gs_err err = gs__view_json(s->sched, node, inspect, &s->config, &body_text);
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
  respond(resp, 200, "application/json", body_text);
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

static void get_ledger(struct gs_server *s, const struct gs_http_request *req, const char *sub,
                       struct gs_http_response *resp) {
  char node[GS_NAME_MAX + 1];
  (void)sub;
  respond_view(s, query_get(req->query, "node", node, sizeof node) ? node : NULL, false, resp);
}

/* sub: the node of /gpushare-scheduler/inspect/<node>, NULL for all. */
static void get_inspect(struct gs_server *s, const struct gs_http_request *req, const char *sub,
                        struct gs_http_response *resp) {
  (void)req;
  respond_view(s, sub, true, resp);
}

static void get_metrics(struct gs_server *s, const struct gs_http_request *req, const char *sub,
                        struct gs_http_response *resp) {
  const char *none[] = {NULL};
  (void)req, (void)sub;
  gs__view_gauges(s->sched, &s->config, s->metrics);
  gs__dra_gauges(s->dra, s->metrics);
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

/* ---- the route table ------------------------------------------------------- */

#define PREFIX "/gpushare-scheduler"

enum need {
  NEED_CERT = 1,       /* a verified client certificate when --tls-client-ca-file is set */
  NEED_CONFIGURED = 2, /* the service exists (the configuration was read): else 503 */
  NEED_SUBPATH = 4,    /* also answers path/<name> (the handler's sub) */
};

typedef void (*gs_get_fn)(struct gs_server *s, const struct gs_http_request *req,
                          const char *sub, struct gs_http_response *resp);

/* A route: method and path, what it needs, and a verb (through the
 * preamble) or a GET handler. GET also answers HEAD. */
struct route {
  const char *method;
  const char *path;
  unsigned needs;
  const struct verb *verb;
  gs_get_fn get;
};

static const struct route routes[] = {
    {"POST", PREFIX "/filter", NEED_CERT | NEED_CONFIGURED, &verb_filter, NULL},
    {"POST", PREFIX "/prioritize", NEED_CERT | NEED_CONFIGURED, &verb_prioritize, NULL},
    {"POST", PREFIX "/bind", NEED_CERT | NEED_CONFIGURED, &verb_bind, NULL},
    {"POST", PREFIX "/preempt", NEED_CERT | NEED_CONFIGURED, &verb_preempt, NULL},
    {"GET", "/healthz", 0, NULL, get_healthz},
    {"GET", "/readyz", 0, NULL, get_readyz},
    {"GET", "/version", 0, NULL, get_version},
    {"GET", "/metrics", NEED_CONFIGURED, NULL, get_metrics},
    {"GET", "/debug/ledger", NEED_CONFIGURED, NULL, get_ledger},
    {"GET", PREFIX "/inspect", NEED_CONFIGURED | NEED_SUBPATH, NULL, get_inspect},
    {"GET", "/readyz/replica", 0, NULL, get_replica},
};

/* The route of path, and the name after it for an NEED_SUBPATH route
 * (*ret_sub, NULL for the exact path); NULL when none. */
static const struct route *route_find(const char *path, const char **ret_sub) {
  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
    const struct route *r = &routes[i];
    if (strcmp(path, r->path) == 0) {
      *ret_sub = NULL;
      return r;
    }
    if (r->needs & NEED_SUBPATH) {
      size_t len = strlen(r->path);
      if (strncmp(path, r->path, len) == 0 && path[len] == '/' && path[len + 1] != '\0') {
        *ret_sub = path + len + 1;
        return r;
      }
    }
  }
  return NULL;
}

void gs__server_handle(void *ctx, const struct gs_http_request *req,
                       struct gs_http_response *resp) {
  struct gs_server *s = ctx;
  const char *sub = NULL;
  const struct route *r = route_find(req->path, &sub);

  if (r == NULL) {
    respond_error(resp, 404, "not found");
    return;
  }
  if (strcmp(req->method, r->method) != 0 &&
      !(r->get != NULL && strcmp(req->method, "HEAD") == 0)) {
    respond_error(resp, 405, r->verb != NULL ? "method not allowed: use POST"
                                             : "method not allowed: use GET");
    return;
  }
  if ((r->needs & NEED_CERT) && s->cfg.tls_client_ca_file[0] != '\0' && !req->client_verified) {
    /* docs/security.md: only kube-scheduler (its extender tlsConfig
     * certificate) may call the verbs */
    gs_log(GS_LVL_WARN, "verb refused: no verified client certificate", "path=%s remote=%s",
           req->path, req->remote);
    respond_error(resp, 403, "a client certificate signed by the --tls-client-ca-file CA "
                             "is required");
    return;
  }
  if ((r->needs & NEED_CONFIGURED) && !atomic_load(&s->configured)) {
    /* still reading the configuration from the apiserver */
    refuse(resp, r->verb != NULL ? r->verb->answer : ANSWER_STATUS, 503, "not ready");
    return;
  }
  if (r->verb != NULL)
    serve_verb(s, r->verb, req, resp);
  else
    r->get(s, req, sub, resp);
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
  s->dra = gs__dra_new();
  if (s->metrics == NULL || s->dra == NULL) {
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
  /* the nodes' host CPU and memory, which frag weighs and preemption's
   * host check counts: the extender's own watch gives them (host.h), as
   * kube-scheduler's NodeInfo gives the plugin */
  if ((s->hosts = gs__hosts_new(s->sched)) == NULL) {
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
  gs__hosts_free(s->hosts);
  gs_sched_free(s->sched);
  gs_metrics_free(s->metrics);
  gs__dra_free(s->dra);
  gs__feed_config_destroy(&s->config);
  pthread_mutex_destroy(&s->mu);
  gs_free(s);
}
