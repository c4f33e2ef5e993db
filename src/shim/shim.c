/* The C side of the plugin's cgo shim (shim.h): JSON in, the service's
 * answers out. Decoding is src/api's, feeding src/observe/feed.c's — the same
 * code the extender runs — so both forms read the cluster alike. */
#include "shim.h"
#include "shim_int.h"

#include "api.h"
#include "config.h"
#include "dra.h"
#include "feed.h"
#include "log.h"
#include "metrics.h"
#include "view.h"

#include <gpushare/alloc.h>
#include <gpushare/sched.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gs_shim {
  struct gs_sched *sched;
  unsigned ticks;
  char cm_ns[GS_NS_MAX + 1], cm_name[GS_NAME_MAX + 1];
  struct gs__feed_cm cm;
  struct gs__feed_config config; /* pendingUnit, an invalid ConfigMap */
  struct gs__dra *dra;            /* ResourceSlices and ResourceClaims (docs/dra.md) */
  pthread_mutex_t mu; /* guards what follows */
  struct gs_metrics *metrics;
  uint64_t gang_timeouts; /* the service's count at the last scrape */
  json_t *notices;        /* not yet taken by gs_shim_notices */
  /* The last pod decoded: a scheduling cycle hands the same bytes to
   * PreFilter, Reserve and Permit, so those decode once (guarded by
   * last_mu: binding goroutines call Unreserve beside the cycle). */
  pthread_mutex_t last_mu;
  char *last_json;
  size_t last_len;
  struct gs_pod_request last_req;
  /* gs_shim_filter's per-node results, kept between calls: at 5,000 nodes
   * they are 1.4 MB, which a fresh allocation per pod had the kernel map
   * and zero every time (docs/benchmarks.md §9). Guarded by res_mu; a call
   * that finds it taken allocates its own. */
  pthread_mutex_t res_mu;
  struct gs_node_result *res;
  size_t res_cap;
  /* The node list the plugin keeps (gs_shim_set_list) and the memo of the
   * last prioritize over it: a pod signed as the last one is evaluated
   * again only where the ledger changed (gs_sched_prioritize_memo). Guarded
   * by res_mu. */
  const char *const *list;
  size_t list_n;
  struct gs_sched_memo *memo;
  /* The codes array the memo's last answers were written to (NULL: none):
   * the next memo call writes there only the entries that changed, with
   * their reasons and scores (gs_sched_memo_changed). Any other call
   * writing into that array, or a new list, clears it. Guarded by fill_mu. */
  pthread_mutex_t fill_mu;
  const int *filled;
};

struct gs_sched *gs__shim_sched(struct gs_shim *s) { return s->sched; }
struct gs__dra *gs__shim_dra(struct gs_shim *s) { return s->dra; }

static json_t *load(const char *json, size_t len) {
  return json != NULL && len > 0 ? json_loadb(json, len, 0, NULL) : NULL;
}

/* The ticking thread, with the ledger locked: queue only. */
static void on_notice(void *ctx, const struct gs_notice *n) {
  struct gs_shim *s = ctx;
  json_t *o;
  if (n->kind != GS_NOTICE_GANG_TIMEOUT)
    return;
  o = json_pack("{s:s,s:s,s:s,s:s,s:s}", "namespace", n->ns, "job", n->job, "pod",
                n->pod ? n->pod : "", "uid", n->pod_uid ? n->pod_uid : "", "message", n->message);
  pthread_mutex_lock(&s->mu);
  if (o != NULL && s->notices == NULL)
    s->notices = json_array();
  if (o != NULL && s->notices != NULL)
    json_array_append(s->notices, o);
  pthread_mutex_unlock(&s->mu);
  json_decref(o);
}

/* The ConfigMap's data, then the args over it (key by key). */
static bool configure(struct gs_policy *policy, const json_t *cm, const json_t *args,
                      const struct gs_shim *s, bool ignore_invalid, struct gs_diag *ret_diag) {
  struct gs_diag diag = {"", ""};
  char source[GS_NS_MAX + GS_NAME_MAX + 2];
  if (cm != NULL && gs_config_apply_data(policy, cm, &diag) != GS_EOK) {
    if (!ignore_invalid) {
      gs_diag_set(ret_diag, "", "gpushare: ConfigMap %s/%s: %s", s->cm_ns, s->cm_name, diag.text);
      return false;
    }
    snprintf(source, sizeof source, "%s/%s", s->cm_ns, s->cm_name);
    gs_config_apply_each_key(policy, cm, source);
  }
  if (args != NULL && gs_config_apply_data(policy, args, &diag) != GS_EOK) {
    gs_diag_set(ret_diag, "", "gpushare plugin args: %s: %s", diag.where, diag.text);
    return false;
  }
  return true;
}

struct gs_shim *gs_shim_new(const char *args_json, size_t len, const char *cm_json,
                            size_t cm_len, const char *cm_ns, const char *cm_name,
                            int ignore_invalid, struct gs_diag *diag) {
  struct gs_policy policy;
  json_t *args = load(args_json, len), *cm = load(cm_json, cm_len);
  struct gs_shim *s = gs_calloc(1, sizeof *s);
  bool ok = s != NULL;
  gs_policy_init(&policy);
  gs_log_set_style(GS_LOG_KLOG); /* inside kube-scheduler: its log's format */
  if (s == NULL) {
    gs_diag_set(diag, "", "out of memory");
  } else {
    snprintf(s->cm_ns, sizeof s->cm_ns, "%s", cm_ns ? cm_ns : "");
    snprintf(s->cm_name, sizeof s->cm_name, "%s", cm_name ? cm_name : "");
    ok = configure(&policy, cm, args, s, ignore_invalid != 0, diag);
  }
  if (ok) {
    s->cm = (struct gs__feed_cm){s->cm_ns, s->cm_name,
                                 json_object_get(args, "gpuMemoryUnit") ? policy.unit_mib : 0};
    gs__feed_config_init(&s->config);
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->last_mu, NULL);
    pthread_mutex_init(&s->res_mu, NULL);
    pthread_mutex_init(&s->fill_mu, NULL);
    s->sched = gs_sched_new(&policy);
    s->metrics = gs_metrics_new();
    s->memo = gs_sched_memo_new();
    s->dra = gs__dra_new();
    if (s->sched == NULL || s->metrics == NULL || s->memo == NULL || s->dra == NULL) {
      gs_diag_set(diag, "", "out of memory");
      gs_sched_free(s->sched);
      gs_metrics_free(s->metrics);
      gs_sched_memo_free(s->memo);
      gs__feed_config_destroy(&s->config);
      pthread_mutex_destroy(&s->mu);
      pthread_mutex_destroy(&s->last_mu);
      pthread_mutex_destroy(&s->res_mu);
      pthread_mutex_destroy(&s->fill_mu);
      ok = false;
    } else {
      struct gs_notify notify = {on_notice, s};
      gs_sched_set_notify(s->sched, &notify);
    }
  }
  json_decref(args);
  json_decref(cm);
  if (!ok) {
    gs_free(s);
    return NULL;
  }
  return s;
}

void gs_shim_free(struct gs_shim *s) {
  if (s == NULL)
    return;
  gs_sched_free(s->sched);
  gs_metrics_free(s->metrics);
  gs__dra_free(s->dra);
  json_decref(s->notices);
  gs__feed_config_destroy(&s->config);
  pthread_mutex_destroy(&s->mu);
  pthread_mutex_destroy(&s->last_mu);
  pthread_mutex_destroy(&s->res_mu);
  pthread_mutex_destroy(&s->fill_mu);
  gs_free(s->last_json);
  gs_free(s->res);
  gs_sched_memo_free(s->memo);
  gs_free(s);
}

void gs_shim_set_list(struct gs_shim *s, const char *const *nodes, size_t n) {
  pthread_mutex_lock(&s->res_mu);
  s->list = nodes;
  s->list_n = n;
  gs_sched_memo_forget(s->memo);
  pthread_mutex_unlock(&s->res_mu);
  pthread_mutex_lock(&s->fill_mu);
  s->filled = NULL; /* the caller's buffers may be new too */
  pthread_mutex_unlock(&s->fill_mu);
}

size_t gs_shim_evaluated(struct gs_shim *s) {
  size_t n;
  pthread_mutex_lock(&s->res_mu);
  n = gs_sched_memo_evaluated(s->memo);
  pthread_mutex_unlock(&s->res_mu);
  return n;
}

void gs_shim_free_string(char *p) { gs_free(p); }

unsigned gs_shim_gang_timeout_s(const struct gs_shim *s) {
  return gs_sched_policy(s->sched)->gang_timeout_s;
}

void gs_shim_node(struct gs_shim *s, const char *json, size_t len) {
  json_t *node = load(json, len);
  if (node != NULL)
    gs__feed_node(s->sched, node);
  json_decref(node);
}

void gs_shim_node_delete(struct gs_shim *s, const char *name) {
  gs__feed_node_delete(s->sched, name);
}

void gs_shim_pod(struct gs_shim *s, const char *json, size_t len) {
  json_t *pod = load(json, len);
  if (pod != NULL)
    gs__feed_pod(s->sched, pod);
  json_decref(pod);
}

void gs_shim_pod_delete(struct gs_shim *s, const char *uid) { gs_sched_pod_gone(s->sched, uid); }

void gs_shim_preempt_forget(struct gs_shim *s, const char *uid) {
  gs_sched_preempt_forget(s->sched, uid);
}

void gs_shim_dra(struct gs_shim *s, const char *json, size_t len, int claim, int deleted) {
  json_t *obj = load(json, len);
  if (obj == NULL)
    return;
  if (claim && deleted)
    gs__dra_claim_delete(s->dra, s->sched, obj);
  else if (claim)
    gs__dra_claim(s->dra, s->sched, obj);
  else if (deleted)
    gs__dra_slice_delete(s->dra, s->sched, obj);
  else
    gs__dra_slice(s->dra, s->sched, obj);
  json_decref(obj);
}

char *gs_shim_configmap(struct gs_shim *s, const char *json, size_t len, int deleted) {
  json_t *cm = load(json, len);
  char text[GS_FEED_CONFIG_ERROR_MAX];
  char *out = NULL;
  if (cm != NULL && deleted)
    gs__feed_configmap_delete(s->sched, &s->cm, cm, &s->config);
  else if (cm != NULL && gs__feed_configmap(s->sched, &s->cm, cm, &s->config) &&
           gs__feed_config_error(&s->config, text, sizeof text))
    out = gs_strdup(text);
  json_decref(cm);
  return out;
}

void gs_shim_tick(struct gs_shim *s, int64_t now_ns) {
  gs_sched_tick(s->sched, now_ns);
  if (++s->ticks % 10 == 0)
    (void)gs_sched_retry_kept(s->sched);
  if (s->ticks % 50 == 0)
    (void)gs_sched_expire_assumed(s->sched, now_ns, INT64_C(300) * 1000000000);
}

/* The pod's request, or a code saying why not. The same bytes as the last
 * pod decoded (the cycle's PreFilter, then its Reserve and Permit) are not
 * decoded again. */
static int decode_pod(struct gs_shim *s, const char *json, size_t len, struct gs_pod_request *req,
                      char *reason) {
  struct gs_diag diag = {"", ""};
  json_t *pod;
  int code = GS_SHIM_OK;
  char *copy;
  pthread_mutex_lock(&s->last_mu);
  if (s->last_json != NULL && s->last_len == len && memcmp(s->last_json, json, len) == 0) {
    *req = s->last_req;
    pthread_mutex_unlock(&s->last_mu);
    return GS_SHIM_OK;
  }
  pthread_mutex_unlock(&s->last_mu);
  pod = load(json, len);
  if (pod == NULL) {
    snprintf(reason, GS_SHIM_REASON, "invalid Pod: not JSON");
    return GS_SHIM_ERROR;
  }
  if (gs_api_pod_decode(pod, req, &diag) != GS_EOK) {
    snprintf(reason, GS_SHIM_REASON, "invalid Pod: %.100s: %.130s", diag.where, diag.text);
    code = GS_SHIM_ERROR;
  }
  json_decref(pod);
  if (code == GS_SHIM_OK && (copy = gs_malloc(len)) != NULL) {
    memcpy(copy, json, len);
    pthread_mutex_lock(&s->last_mu);
    gs_free(s->last_json);
    s->last_json = copy;
    s->last_len = len;
    s->last_req = *req;
    pthread_mutex_unlock(&s->last_mu);
  }
  return code;
}

static int code_of(enum gs_err c) {
  switch (c) {
  case GS_EOK:
    return GS_SHIM_OK;
  case GS_ENOFIT:
    return GS_SHIM_UNSCHEDULABLE;
  case GS_EUNRESOLVABLE:
    return GS_SHIM_UNRESOLVABLE;
  case GS_ESKIP:
    return GS_SHIM_SKIP;
  case GS_EWAIT:
    return GS_SHIM_WAIT;
  default:
    return GS_SHIM_ERROR;
  }
}

int gs_shim_wants_host(const struct gs_shim *s) {
  return gs_sched_policy(s->sched)->node_policy == GS_PLACE_FRAG;
}

static uint64_t nonneg(int64_t v) { return v > 0 ? (uint64_t)v : 0; }

/* Records host[] (gs_shim_filter) for the n nodes. */
static enum gs_err set_hosts(struct gs_shim *s, const char *const *nodes, size_t n,
                             const int64_t *host) {
  struct gs_host *h = gs_calloc(n ? n : 1, sizeof *h);
  if (h == NULL)
    return GS_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    const int64_t *v = host + 4 * i;
    h[i] = (struct gs_host){.cpu_milli = nonneg(v[0]),
                            .cpu_used_milli = nonneg(v[1]),
                            .mem_mib = nonneg(v[2]) >> 20,
                            .mem_used_mib = (nonneg(v[3]) + (1u << 20) - 1) >> 20};
  }
  gs_sched_nodes_set_host(s->sched, nodes, h, n);
  gs_free(h);
  return GS_EOK;
}

enum gs_err gs__shim_set_hosts(struct gs_shim *s, const char *const *nodes, size_t n,
                               const int64_t *host) {
  return set_hosts(s, nodes, n, host);
}

/* Room for n results: the kept array when it is free (grown as needed),
 * else one of the call's own. Every result is written by the service
 * before it is read: nothing needs zeroing. */
static struct gs_node_result *results_take(struct gs_shim *s, size_t n, bool *kept) {
  size_t want = n ? n : 1;
  *kept = pthread_mutex_trylock(&s->res_mu) == 0;
  if (!*kept)
    return gs_malloc(want * sizeof(struct gs_node_result));
  if (want > s->res_cap) { /* res_cap is 0 while res is NULL */
    struct gs_node_result *grown = gs_malloc(want * sizeof *grown);
    if (grown == NULL) {
      pthread_mutex_unlock(&s->res_mu);
      *kept = false;
      return NULL;
    }
    gs_free(s->res);
    s->res = grown;
    s->res_cap = want;
  }
  return s->res;
}

static void results_give(struct gs_shim *s, struct gs_node_result *res, bool kept) {
  if (kept)
    pthread_mutex_unlock(&s->res_mu);
  else
    gs_free(res);
}

/* Whether codes holds the memo's last answers (a memo call may then write
 * only what changed); then, with done, who holds them now: after a memo
 * call that wrote them, codes; after any other write to codes, nobody. */
static bool filled_by_memo(struct gs_shim *s, const int *codes) {
  bool yes;
  pthread_mutex_lock(&s->fill_mu);
  yes = s->filled == codes;
  pthread_mutex_unlock(&s->fill_mu);
  return yes;
}

static void fill_done(struct gs_shim *s, const int *codes, bool by_memo) {
  pthread_mutex_lock(&s->fill_mu);
  if (by_memo)
    s->filled = codes;
  else if (s->filled == codes)
    s->filled = NULL;
  pthread_mutex_unlock(&s->fill_mu);
}

/* Node i's answer into the caller's arrays. A copy, not a formatter; a
 * node that passes has no reason, and its slot is neither written nor
 * read (5,000 cache lines a pod). */
static void answer_out(const struct gs_node_result *r, size_t i, int *codes, char *reasons,
                       int64_t *scores) {
  codes[i] = code_of(r->code);
  if (codes[i] != GS_SHIM_OK) {
    size_t rlen = strnlen(r->reason, GS_SHIM_REASON - 1);
    memcpy(reasons + i * GS_SHIM_REASON, r->reason, rlen);
    reasons[i * GS_SHIM_REASON + rlen] = '\0';
  }
  if (scores != NULL)
    scores[i] = r->score100;
}

int gs__shim_filter(struct gs_shim *s, const char *pod, size_t len,
                    const struct gs_claim_request *shape, const char *const *nodes, size_t n,
                    const int64_t *host, int64_t now_ns, int *codes, char *reasons,
                    int64_t *scores) {
  struct gs_pod_request *req = gs_malloc(sizeof *req);
  bool kept = false, memo = false;
  struct gs_node_result *res;
  const struct gs_node_result *out;
  const size_t *idx;
  size_t nidx;
  bool score_only = false, shaped = false;
  int code = GS_SHIM_OK;
  /* The kept list, scored, without host figures (nodePolicy frag signs no
   * pod): through the memo, when no other call holds it. */
  if (scores != NULL && host == NULL && n > 0 && pthread_mutex_trylock(&s->res_mu) == 0) {
    if (nodes == s->list && n == s->list_n)
      memo = true;
    else
      pthread_mutex_unlock(&s->res_mu);
  }
  res = memo ? NULL : results_take(s, n, &kept);
  if (req == NULL || (res == NULL && !memo)) {
    snprintf(reasons, GS_SHIM_REASON, "out of memory");
    code = GS_SHIM_ERROR;
    goto out;
  }
  if ((code = decode_pod(s, pod, len, req, reasons)) != GS_SHIM_OK)
    goto out;
  /* a pod using a claim gpushare places: scored as the gpu-mem pod the
   * claim is placed as, nothing to reserve for the pod itself */
  shaped = shape != NULL && gs_sched_claim_shape(s->sched, shape, req);
  if (gs_sched_pre_filter(s->sched, req, scores != NULL, &score_only) == GS_ESKIP) {
    code = GS_SHIM_SKIP; /* no GPU resource gpushare manages */
    goto out;
  }
  if (host != NULL && set_hosts(s, nodes, n, host) != GS_EOK) {
    snprintf(reasons, GS_SHIM_REASON, "out of memory");
    code = GS_SHIM_ERROR;
    goto out;
  }
  if ((memo ? gs_sched_prioritize_memo(s->sched, s->memo, req, nodes, n, now_ns, &out)
       : scores != NULL ? gs_sched_prioritize(s->sched, req, nodes, n, now_ns, res)
                        : gs_sched_filter(s->sched, req, nodes, n, now_ns, res)) != GS_EOK) {
    snprintf(reasons, GS_SHIM_REASON, "invalid Pod");
    code = GS_SHIM_ERROR;
    goto out;
  }
  if (!memo)
    out = res;
  if (memo && filled_by_memo(s, codes) && gs_sched_memo_changed(s->memo, &idx, &nidx)) {
    /* the arrays hold the memo's last answers: only what changed */
    for (size_t j = 0; j < nidx; j++)
      answer_out(&out[idx[j]], idx[j], codes, reasons, scores);
  } else {
    for (size_t i = 0; i < n; i++)
      answer_out(&out[i], i, codes, reasons, scores);
  }
  if (score_only || shaped)
    code = GS_SHIM_SCORE_ONLY;
out:
  gs_free(req);
  if (memo)
    pthread_mutex_unlock(&s->res_mu);
  else if (res != NULL)
    results_give(s, res, kept);
  if (code == GS_SHIM_SKIP)
    reasons[0] = '\0';
  /* code OK: the answers were written, whole or by change; else an
   * error's or a skip's reason went to reasons[0] */
  fill_done(s, codes, memo && code == GS_SHIM_OK);
  return code;
}

int gs_shim_filter(struct gs_shim *s, const char *pod, size_t len, const char *const *nodes,
                   size_t n, const int64_t *host, int64_t now_ns, int *codes, char *reasons,
                   int64_t *scores) {
  return gs__shim_filter(s, pod, len, NULL, nodes, n, host, now_ns, codes, reasons, scores);
}

int gs_shim_sign(struct gs_shim *s, const char *pod, size_t len, char *sig) {
  struct gs_pod_request req;
  int code = decode_pod(s, pod, len, &req, sig);
  if (code != GS_SHIM_OK)
    return code;
  switch (gs_sched_signature(s->sched, &req, sig)) {
  case GS_EOK:
    return GS_SHIM_OK;
  case GS_ESKIP:
    return GS_SHIM_SKIP;
  default:
    return GS_SHIM_UNSCHEDULABLE;
  }
}

/* The annotations as key NUL value NUL pairs ended by an empty key (no
 * JSON to write here and parse again in Go, every pod). NULL when out of
 * memory. */
static char *annotations_pairs(const struct gs_annotations *a) {
  size_t len = 1;
  char *out, *p;
  for (size_t i = 0; i < a->n; i++)
    len += strlen(a->kv[i].key) + strlen(a->kv[i].value) + 2;
  if ((out = p = gs_malloc(len)) == NULL)
    return NULL;
  for (size_t i = 0; i < a->n; i++) {
    size_t k = strlen(a->kv[i].key) + 1, v = strlen(a->kv[i].value) + 1;
    memcpy(p, a->kv[i].key, k);
    memcpy(p + k, a->kv[i].value, v);
    p += k + v;
  }
  *p = '\0';
  return out;
}

int gs_shim_reserve(struct gs_shim *s, const char *pod, size_t len, const char *node,
                    int64_t now_ns, char **ret_annots, char *reason) {
  struct gs_pod_request req;
  struct gs_annotations a = {0};
  struct gs_status st = {GS_EOK, GS_R_OTHER, ""};
  int code;
  *ret_annots = NULL;
  if ((code = decode_pod(s, pod, len, &req, reason)) != GS_SHIM_OK)
    return code;
  if (gs_sched_reserve(s->sched, &req, node, now_ns, &a, &st) != GS_EOK) {
    snprintf(reason, GS_SHIM_REASON, "%s", st.reason[0] ? st.reason : "cannot reserve");
    return st.code == GS_EUNRESOLVABLE ? GS_SHIM_UNRESOLVABLE : GS_SHIM_UNSCHEDULABLE;
  }
  *ret_annots = annotations_pairs(&a);
  gs_annotations_clear(&a);
  if (*ret_annots == NULL) {
    gs_sched_unreserve(s->sched, &req, node);
    snprintf(reason, GS_SHIM_REASON, "out of memory");
    return GS_SHIM_ERROR;
  }
  return GS_SHIM_OK;
}

void gs_shim_unreserve(struct gs_shim *s, const char *pod, size_t len, const char *node) {
  struct gs_pod_request req;
  char reason[GS_SHIM_REASON];
  if (decode_pod(s, pod, len, &req, reason) == GS_SHIM_OK)
    gs_sched_unreserve(s->sched, &req, node);
}

void gs_shim_post_bind(struct gs_shim *s, const char *uid) { gs_sched_post_bind(s->sched, uid); }

int gs_shim_permit(struct gs_shim *s, const char *pod, size_t len, const char *node,
                   int64_t now_ns, char *reason) {
  struct gs_pod_request req;
  struct gs_status st;
  int code;
  if ((code = decode_pod(s, pod, len, &req, reason)) != GS_SHIM_OK)
    return code;
  code = code_of(gs_sched_permit(s->sched, &req, node, now_ns, &st));
  snprintf(reason, GS_SHIM_REASON, "%s", st.reason);
  return code;
}

char *gs__shim_victims_answer(const char *node, const struct gs_victim *victims, size_t n,
                              const uint32_t *violations) {
  json_t *list = json_array(), *doc = NULL;
  char *out = NULL;

  if (list == NULL)
    return NULL;
  for (size_t v = 0; v < n; v++)
    json_array_append_new(list, json_pack("{s:s,s:s,s:s}", "namespace", victims[v].ns, "name",
                                          victims[v].name, "uid", victims[v].uid));
  if (violations != NULL)
    doc = json_pack("{s:s,s:O,s:I}", "node", node, "victims", list, "pdbViolations",
                    (json_int_t)*violations);
  else
    doc = json_pack("{s:s,s:O}", "node", node, "victims", list);
  out = doc != NULL ? gs_api_dump(doc) : NULL;
  json_decref(doc);
  json_decref(list);
  return out;
}

/* gs_shim_preempt for a member of a job (docs/gangs.md
 * "Preemption"): the same answer, its victims on any of the nodes. */
static char *preempt_gang(struct gs_shim *s, const struct gs_pod_request *req,
                          const char *const *nodes, size_t n) {
  struct gs_victim *victims = NULL;
  size_t first, nvictims = 0;
  struct gs_status st;
  char *out;
  if (gs_sched_preempt_gang(s->sched, req, nodes, n, &victims, &nvictims, &first, &st) != GS_EOK)
    return NULL;
  out = gs__shim_victims_answer(nodes[first], victims, nvictims, NULL);
  gs_free(victims);
  return out;
}

char *gs_shim_preempt(struct gs_shim *s, const char *pod, size_t len, const char *const *nodes,
                      size_t n) {
  struct gs_pod_request req;
  struct gs_preempt_offer *offers = gs_calloc(n ? n : 1, sizeof *offers);
  struct gs_preempt_answer *answers = gs_calloc(n ? n : 1, sizeof *answers);
  struct gs_victim *victims = NULL;
  size_t best, nvictims = 0;
  char reason[GS_SHIM_REASON];
  char *out = NULL;
  if (offers == NULL || answers == NULL || decode_pod(s, pod, len, &req, reason) != GS_SHIM_OK)
    goto done;
  if (gs_pod_request_is_gang_member(&req)) {
    out = preempt_gang(s, &req, nodes, n); /* victims for every member, or none */
    goto done;
  }
  if (gs_sched_preempt_unsettled(s->sched, req.uid, nodes, n)) {
    /* its last victims are not all gone from the ledger yet (a deletion
     * requeued it before the others were fed): no new victims, as
     * DefaultPreemption preempts no more while its victims terminate */
    json_t *doc = json_pack("{s:s}", "waiting",
                    "gpushare: the victims of its last preemption still hold their GPUs");
    out = doc != NULL ? gs_api_dump(doc) : NULL;
    json_decref(doc);
    goto done;
  }
  for (size_t i = 0; i < n; i++)
    offers[i] = (struct gs_preempt_offer){nodes[i], NULL, 0};
  if (gs_sched_preempt(s->sched, &req, offers, n, answers) != GS_EOK ||
      gs_sched_preempt_cheapest(s->sched, answers, n, &best, &victims, &nvictims) != GS_EOK)
    goto done;
  /* the framework nominates the pod to the node after PostFilter (its
   * status then reaches the feed): hold its GPUs from now, before the
   * victims go (gs_sched_nominate) */
  if (gs_sched_nominate(s->sched, &req, nodes[best]) != GS_EOK) {
    /* past the cap: the pod is nominated, its GPUs not held */
  }
  /* until they are gone, a retry of the pod waits for them */
  gs_sched_preempt_note(s->sched, req.uid, &offers[best], &answers[best], 1);
  out = gs__shim_victims_answer(nodes[best], victims, nvictims, &answers[best].pdb_violations);
done:
  gs_free(victims);
  gs_sched_preempt_free(answers, answers != NULL ? n : 0);
  gs_free(answers);
  gs_free(offers);
  return out;
}

char *gs_shim_preempt_host(struct gs_shim *s, const char *pod, size_t len,
                           const char *const *nodes, size_t n, const int64_t *host) {
  if (host != NULL && set_hosts(s, nodes, n, host) != GS_EOK)
    return NULL;
  return gs_shim_preempt(s, pod, len, nodes, n);
}

void gs_shim_pod_meta(struct gs_shim *s, const char *json, size_t len) {
  json_t *pod = load(json, len);
  if (pod != NULL)
    gs__feed_pod_meta(s->sched, pod);
  json_decref(pod);
}

void gs_shim_pdb(struct gs_shim *s, const char *json, size_t len, int deleted) {
  json_t *pdb = load(json, len);
  if (pdb != NULL && deleted)
    gs__feed_pdb_delete(s->sched, pdb);
  else if (pdb != NULL)
    gs__feed_pdb(s->sched, pdb);
  json_decref(pdb);
}

char *gs_shim_view(struct gs_shim *s, const char *node, int inspect, int *status) {
  char *text = NULL;
  enum gs_err err = gs__view_json(s->sched, node, inspect != 0, &s->config, &text);
  if (err == GS_ENOTFOUND) {
    char msg[GS_NAME_MAX + 64];
    json_t *body;
    snprintf(msg, sizeof msg, "node %s is unknown to gpushare", node);
    body = json_pack("{s:s}", "error", msg);
    text = body != NULL ? gs_api_dump(body) : NULL;
    json_decref(body);
    *status = 404;
    return text;
  }
  *status = err == GS_EOK ? 200 : 500;
  return err == GS_EOK ? text : gs_api_error_dump(gs_strerror(err));
}

char *gs_shim_metrics(struct gs_shim *s) {
  const char *none[] = {NULL};
  uint64_t t = gs_sched_gang_timeouts(s->sched);
  char *text;
  pthread_mutex_lock(&s->mu);
  gs__view_gauges(s->sched, &s->config, s->metrics);
  gs__dra_gauges(s->dra, s->metrics);
  gs_metrics_counter_add(s->metrics, "gpushare_gang_timeouts_total",
                         "Gang plans not all bound within gangTimeoutSeconds.", none,
                         (double)(t - s->gang_timeouts));
  s->gang_timeouts = t;
  text = gs_metrics_render(s->metrics);
  pthread_mutex_unlock(&s->mu);
  return text;
}

char *gs_shim_notices(struct gs_shim *s) {
  json_t *n;
  char *text;
  pthread_mutex_lock(&s->mu);
  n = s->notices;
  s->notices = NULL;
  pthread_mutex_unlock(&s->mu);
  if (n == NULL)
    return NULL;
  text = gs_api_dump(n);
  json_decref(n);
  return text;
}
