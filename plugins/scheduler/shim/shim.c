/* The C side of the plugin's cgo shim (shim.h): JSON in, the service's
 * answers out. Decoding is src/api's, feeding src/server/feed.c's — the same
 * code the extender runs — so both forms read the cluster alike. */
#include "shim.h"

#include "api.h"
#include "config.h"
#include "feed.h"

#include <gpushare/alloc.h>
#include <gpushare/ledger.h>
#include <gpushare/sched.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gs_shim {
  struct gs_sched *sched;
  unsigned ticks;
};

static json_t *load(const char *json, size_t len) {
  return json != NULL && len > 0 ? json_loadb(json, len, 0, NULL) : NULL;
}

struct gs_shim *gs_shim_new(const char *args_json, size_t len, char *err, size_t errlen) {
  struct gs_policy policy;
  struct gs_diag diag = {"", ""};
  struct gs_shim *s;
  json_t *args = load(args_json, len);
  gs_policy_init(&policy);
  if (args != NULL && gs_config_apply_data(&policy, args, &diag) != GS_EOK) {
    snprintf(err, errlen, "gpushare plugin args: %s: %s", diag.where, diag.text);
    json_decref(args);
    return NULL;
  }
  json_decref(args);
  s = gs_calloc(1, sizeof *s);
  if (s == NULL || (s->sched = gs_sched_new(&policy)) == NULL) {
    snprintf(err, errlen, "out of memory");
    gs_free(s);
    return NULL;
  }
  return s;
}

void gs_shim_free(struct gs_shim *s) {
  if (s == NULL)
    return;
  gs_sched_free(s->sched);
  gs_free(s);
}

void gs_shim_free_string(char *p) { free(p); }

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

void gs_shim_tick(struct gs_shim *s, int64_t now_ns) {
  gs_sched_tick(s->sched, now_ns);
  if (++s->ticks % 10 == 0)
    (void)gs_sched_retry_kept(s->sched);
  if (s->ticks % 50 == 0)
    (void)gs_sched_expire_assumed(s->sched, now_ns, INT64_C(300) * 1000000000);
}

/* The pod's request, or a code saying why not. */
static int decode_pod(const char *json, size_t len, struct gs_pod_request *req, char *reason) {
  struct gs_diag diag = {"", ""};
  json_t *pod = load(json, len);
  int code = GS_SHIM_OK;
  if (pod == NULL) {
    snprintf(reason, GS_SHIM_REASON, "invalid Pod: not JSON");
    return GS_SHIM_ERROR;
  }
  if (gs_api_pod_decode(pod, req, &diag) != GS_EOK) {
    snprintf(reason, GS_SHIM_REASON, "invalid Pod: %s: %s", diag.where, diag.text);
    code = GS_SHIM_ERROR;
  }
  json_decref(pod);
  return code;
}

static int code_of(enum gs_code c) {
  switch (c) {
  case GS_CODE_SUCCESS:
    return GS_SHIM_OK;
  case GS_CODE_UNSCHEDULABLE:
    return GS_SHIM_UNSCHEDULABLE;
  case GS_CODE_UNRESOLVABLE:
    return GS_SHIM_UNRESOLVABLE;
  case GS_CODE_SKIP:
    return GS_SHIM_SKIP;
  case GS_CODE_WAIT:
    return GS_SHIM_WAIT;
  default:
    return GS_SHIM_ERROR;
  }
}

int gs_shim_filter(struct gs_shim *s, const char *pod, size_t len, const char *const *nodes,
                   size_t n, int64_t now_ns, int *codes, char *reasons, int64_t *scores) {
  struct gs_pod_request *req = gs_malloc(sizeof *req);
  struct gs_node_result *res = gs_calloc(n ? n : 1, sizeof *res);
  struct gs_status st;
  int code = GS_SHIM_OK;
  if (req == NULL || res == NULL) {
    snprintf(reasons, GS_SHIM_REASON, "out of memory");
    code = GS_SHIM_ERROR;
    goto out;
  }
  if ((code = decode_pod(pod, len, req, reasons)) != GS_SHIM_OK)
    goto out;
  if (gs_place_check_pod(req, gs_sched_policy(s->sched), st.reason) == GS_CODE_SKIP &&
      !gs_pod_request_is_gang_member(req)) {
    code = GS_SHIM_SKIP; /* no GPU resource gpushare manages */
    goto out;
  }
  if ((scores != NULL ? gs_sched_prioritize(s->sched, req, nodes, n, now_ns, res)
                      : gs_sched_filter(s->sched, req, nodes, n, now_ns, res)) != GS_EOK) {
    snprintf(reasons, GS_SHIM_REASON, "invalid Pod");
    code = GS_SHIM_ERROR;
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    codes[i] = code_of(res[i].code);
    snprintf(reasons + i * GS_SHIM_REASON, GS_SHIM_REASON, "%s", res[i].reason);
    if (scores != NULL)
      scores[i] = res[i].score;
  }
out:
  gs_free(req);
  gs_free(res);
  return code;
}

int gs_shim_reserve(struct gs_shim *s, const char *pod, size_t len, const char *node,
                    int64_t now_ns, char **ret_annots, char *reason) {
  struct gs_pod_request req;
  struct gs_annotations a = {0};
  struct gs_status st = {GS_CODE_SUCCESS, ""};
  json_t *obj;
  int code;
  *ret_annots = NULL;
  if ((code = decode_pod(pod, len, &req, reason)) != GS_SHIM_OK)
    return code;
  if (gs_sched_reserve(s->sched, &req, node, now_ns, &a, &st) != GS_EOK) {
    snprintf(reason, GS_SHIM_REASON, "%s", st.reason[0] ? st.reason : "cannot reserve");
    return st.code == GS_CODE_UNRESOLVABLE ? GS_SHIM_UNRESOLVABLE : GS_SHIM_UNSCHEDULABLE;
  }
  obj = json_object();
  for (size_t i = 0; obj != NULL && i < a.n; i++)
    if (json_object_set_new(obj, a.kv[i].key, json_string(a.kv[i].value)) != 0)
      json_decref(obj), obj = NULL;
  gs_annotations_clear(&a);
  *ret_annots = obj != NULL ? gs_api_dump(obj) : NULL;
  json_decref(obj);
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
  if (decode_pod(pod, len, &req, reason) == GS_SHIM_OK)
    gs_sched_unreserve(s->sched, &req, node);
}

void gs_shim_confirm(struct gs_shim *s, const char *uid) { gs_sched_confirm(s->sched, uid); }

int gs_shim_permit(struct gs_shim *s, const char *pod, size_t len, const char *node,
                   int64_t now_ns, char *reason) {
  struct gs_pod_request req;
  struct gs_status st;
  int code;
  if ((code = decode_pod(pod, len, &req, reason)) != GS_SHIM_OK)
    return code;
  code = code_of(gs_sched_permit(s->sched, &req, node, now_ns, &st));
  snprintf(reason, GS_SHIM_REASON, "%s", st.reason);
  return code;
}

/* The cost of each kept answer, read from the ledger (victims' priority
 * and GPU memory), and the victims' names. */
struct pick {
  struct gs_preempt_answer *answers;
  size_t n, best;
  json_t *victims; /* the best node's, filled at the end */
};

static void pick_fn(const struct gs_ledger *ledger, void *arg) {
  struct pick *p = arg;
  int32_t best_prio = INT32_MAX;
  size_t best_count = SIZE_MAX;
  uint64_t best_mib = UINT64_MAX;
  p->best = p->n;
  for (size_t i = 0; i < p->n; i++) {
    int32_t prio = INT32_MIN;
    uint64_t mib = 0;
    if (!p->answers[i].keep)
      continue;
    for (size_t v = 0; v < p->answers[i].nvictims; v++) {
      const struct gs_alloc *a = gs_ledger_alloc_get(ledger, p->answers[i].victims[v]);
      if (a == NULL)
        continue;
      if (a->priority > prio)
        prio = a->priority;
      for (uint32_t k = 0; k < a->nparts; k++)
        mib += gs_alloc_part_mib(a, &a->parts[k]);
    }
    if (prio < best_prio || (prio == best_prio && (p->answers[i].nvictims < best_count ||
                                                   (p->answers[i].nvictims == best_count &&
                                                    mib < best_mib)))) {
      p->best = i;
      best_prio = prio;
      best_count = p->answers[i].nvictims;
      best_mib = mib;
    }
  }
  if (p->best == p->n || (p->victims = json_array()) == NULL)
    return;
  for (size_t v = 0; v < p->answers[p->best].nvictims; v++) {
    const struct gs_alloc *a = gs_ledger_alloc_get(ledger, p->answers[p->best].victims[v]);
    if (a != NULL)
      json_array_append_new(p->victims, json_pack("{s:s,s:s,s:s}", "namespace", a->ns, "name",
                                                  a->name, "uid", a->uid));
  }
}

char *gs_shim_preempt(struct gs_shim *s, const char *pod, size_t len, const char *const *nodes,
                      size_t n) {
  struct gs_pod_request req;
  struct gs_preempt_offer *offers = gs_calloc(n ? n : 1, sizeof *offers);
  struct gs_preempt_answer *answers = gs_calloc(n ? n : 1, sizeof *answers);
  struct pick p = {answers, n, 0, NULL};
  char reason[GS_SHIM_REASON];
  char *out = NULL;
  json_t *doc;
  if (offers == NULL || answers == NULL || decode_pod(pod, len, &req, reason) != GS_SHIM_OK)
    goto done;
  for (size_t i = 0; i < n; i++)
    offers[i] = (struct gs_preempt_offer){nodes[i], NULL, 0};
  if (gs_sched_preempt(s->sched, &req, offers, n, answers) != GS_EOK)
    goto done;
  gs_sched_read(s->sched, pick_fn, NULL, &p);
  if (p.best == n || p.victims == NULL || json_array_size(p.victims) == 0)
    goto done;
  doc = json_pack("{s:s,s:O}", "node", nodes[p.best], "victims", p.victims);
  out = doc != NULL ? gs_api_dump(doc) : NULL;
  json_decref(doc);
done:
  json_decref(p.victims);
  gs_sched_preempt_free(answers, answers != NULL ? n : 0);
  gs_free(answers);
  gs_free(offers);
  return out;
}

struct view {
  json_t *gangs, *out;
};

static void plan_fn(void *arg, const struct gs_plan_view *p) {
  gs_api_plan_append(((struct view *)arg)->gangs, p);
}

static void view_fn(const struct gs_ledger *ledger, void *arg) {
  struct view *v = arg;
  struct gs_api_ledger_view view = {0, v->gangs};
  if (gs_api_ledger_json(ledger, NULL, &view, &v->out) != GS_EOK)
    v->out = NULL;
}

char *gs_shim_ledger(struct gs_shim *s) {
  struct view v = {json_array(), NULL};
  char *text;
  gs_sched_read(s->sched, view_fn, plan_fn, &v);
  json_decref(v.gangs);
  text = v.out != NULL ? gs_api_dump(v.out) : NULL;
  json_decref(v.out);
  return text;
}
