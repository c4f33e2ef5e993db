/* gpushare — the scheduler service (include/gpushare/sched.h), the half of
 * struct gs_sched (src/framework/framework.h) that is not the framework's:
 * the pods kept for later, the unhealthy GPUs, and the steps made of
 * several framework calls (node upsert, bind, preemption over offers).
 * The steps that are one extension point are implemented once, in
 * framework.c, under their sched.h names. No I/O, no logging: results and
 * reasons go back to the front end, which logs. */
#include <gpushare/sched.h>
#include <gpushare/version.h>

#include "alloc.h"
#include "budget.h"
#include "settle.h"
#include "framework.h"
#include "plugins.h"
#include "strmap.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A pod whose allocation could not enter the ledger yet (its node unknown,
 * or memory ran out): a deep copy, restored when its node comes. */
struct kept {
  char ns[GS_NS_MAX + 1], name[GS_NAME_MAX + 1], uid[GS_UID_MAX + 1], node[GS_NAME_MAX + 1];
  struct gs_alloc alloc; /* strings point into this record */
  struct gs_alloc_part *parts;
};

/* The kept pods of one node: a node's arrival retries only its own pods
 * (at start-up every pod may arrive before every node). */
struct node_kept {
  char node[GS_NAME_MAX + 1];
  struct gs_strmap *uids; /* uid → struct kept */
};

struct unhealthy {
  char node[GS_NAME_MAX + 1];
  uint64_t mask;
};

struct gs_sched *gs__sched_new_with(const struct gs_policy *policy,
                                    const struct gs_plugin_ops *const *plugins, size_t nplugins,
                                    struct gs_diag *diag) {
  struct gs_sched *s = gs_calloc(1, sizeof *s);
  if (s == NULL)
    return NULL;
  pthread_mutex_init(&s->mu, NULL);
  s->kept = gs_strmap_new();
  s->claim_gangs = gs_strmap_new();
  s->by_node = gs_strmap_new();
  s->unhealthy = gs_strmap_new();
  s->budgets = gs__budgets_new();
  s->settle = gs__settle_new();
  if (s->kept == NULL || s->claim_gangs == NULL || s->by_node == NULL || s->unhealthy == NULL ||
      s->budgets == NULL || s->settle == NULL ||
      gs__fw_init(s, policy, plugins, nplugins, diag) != GS_EOK) {
    gs_sched_free(s);
    return NULL;
  }
  return s;
}

struct gs_sched *gs_sched_new(const struct gs_policy *policy) {
  size_t n;
  const struct gs_plugin_ops *const *plugins = gs_plugins_default(&n);
  return gs__sched_new_with(policy, plugins, n, NULL);
}

static void kept_free(struct kept *k) {
  if (k == NULL)
    return;
  gs_free(k->parts);
  gs_free(k);
}

static void kept_free_value(void *k) { kept_free(k); }

static void node_kept_free(void *v) {
  gs_strmap_free(((struct node_kept *)v)->uids);
  gs_free(v);
}

void gs_sched_free(struct gs_sched *s) {
  if (s == NULL)
    return;
  gs_strmap_free_all(s->kept, kept_free_value);
  gs_strmap_free_all(s->by_node, node_kept_free);
  gs_strmap_free_all(s->unhealthy, gs_free);
  gs_strmap_free_all(s->claim_gangs, gs_free);
  gs__fw_fini(s);
  gs__budgets_free(s->budgets);
  gs__settle_free(s->settle);
  pthread_mutex_destroy(&s->mu);
  gs_free(s);
}

/* ---- pods kept for later ------------------------------------------------ */

static struct kept *kept_dup(const struct gs_alloc *a) {
  struct kept *k = gs_calloc(1, sizeof *k);
  if (k == NULL)
    return NULL;
  k->parts = gs_calloc(a->nparts ? a->nparts : 1, sizeof *k->parts);
  if (k->parts == NULL) {
    gs_free(k);
    return NULL;
  }
  memcpy(k->parts, a->parts, a->nparts * sizeof *k->parts);
  snprintf(k->ns, sizeof k->ns, "%s", a->ns ? a->ns : "");
  snprintf(k->name, sizeof k->name, "%s", a->name ? a->name : "");
  snprintf(k->uid, sizeof k->uid, "%s", a->uid);
  snprintf(k->node, sizeof k->node, "%s", a->node);
  k->alloc = *a;
  k->alloc.ns = k->ns;
  k->alloc.name = k->name;
  k->alloc.uid = k->uid;
  k->alloc.node = k->node;
  k->alloc.parts = k->parts;
  return k;
}

/* Under s->mu. Forgets the kept copy of uid, if any. */
static void forget(struct gs_sched *s, const char *uid) {
  struct kept *k = gs_strmap_del(s->kept, uid);
  struct node_kept *nk;
  if (k == NULL)
    return;
  nk = gs_strmap_get(s->by_node, k->node);
  if (nk != NULL && gs_strmap_del(nk->uids, uid) != NULL && gs_strmap_count(nk->uids) == 0) {
    gs_strmap_del(s->by_node, nk->node);
    gs_strmap_free(nk->uids);
    gs_free(nk);
  }
  kept_free(k);
}

/* Under s->mu. Keeps (or replaces) the copy of a; GS_ENOMEM when it cannot
 * (nothing kept then). */
static enum gs_err keep(struct gs_sched *s, const struct gs_alloc *a) {
  struct kept *k = kept_dup(a);
  struct node_kept *nk;
  enum gs_err e;
  if (k == NULL)
    return GS_ENOMEM;
  forget(s, a->uid);
  nk = gs_strmap_get(s->by_node, k->node);
  if (nk == NULL) {
    nk = gs_calloc(1, sizeof *nk);
    if (nk == NULL || (nk->uids = gs_strmap_new()) == NULL) {
      gs_free(nk);
      kept_free(k);
      return GS_ENOMEM;
    }
    snprintf(nk->node, sizeof nk->node, "%s", k->node);
    if ((e = gs_strmap_put(s->by_node, nk->node, nk)) != GS_EOK) {
      gs_strmap_free(nk->uids);
      gs_free(nk);
      kept_free(k);
      return e;
    }
  }
  if ((e = gs_strmap_put(nk->uids, k->uid, k)) != GS_EOK ||
      (e = gs_strmap_put(s->kept, k->uid, k)) != GS_EOK) {
    gs_strmap_del(nk->uids, k->uid);
    if (gs_strmap_count(nk->uids) == 0) {
      gs_strmap_del(s->by_node, nk->node);
      gs_strmap_free(nk->uids);
      gs_free(nk);
    }
    kept_free(k);
  }
  return e;
}

/* Under s->mu: one restore try. GS_EAGAIN: try again later. */
static enum gs_err restore_once(struct gs_sched *s, const struct gs_alloc *a) {
  enum gs_err e = gs_fw_pod_restore(s, a);
  if (e == GS_ENOTFOUND || e == GS_ENOMEM)
    return GS_EAGAIN;
  return e;
}

enum gs_err gs_sched_pod_bound(struct gs_sched *s, const struct gs_alloc *alloc) {
  enum gs_err e;
  if (alloc == NULL || alloc->uid == NULL || alloc->uid[0] == '\0' || alloc->node == NULL ||
      alloc->node[0] == '\0' || (alloc->nparts > 0 && alloc->parts == NULL))
    return GS_EINVAL;
  pthread_mutex_lock(&s->mu);
  e = restore_once(s, alloc);
  if (e == GS_EAGAIN && keep(s, alloc) != GS_EOK)
    e = GS_ENOMEM;
  else if (e != GS_EAGAIN)
    forget(s, alloc->uid); /* restored (or refused): no copy needed */
  pthread_mutex_unlock(&s->mu);
  return e;
}

/* Under s->mu: retries the kept pods of one node. A delete takes s->mu
 * too, so it either removes the copy before the retry sees it or frees what
 * the retry restored. */
static void retry_node(struct gs_sched *s, const char *node) {
  struct node_kept *nk = gs_strmap_get(s->by_node, node);
  size_t cur = 0;
  const char *key;
  void *val;
  while (nk != NULL && gs_strmap_next(nk->uids, &cur, &key, &val)) {
    struct kept *k = val;
    if (restore_once(s, &k->alloc) == GS_EAGAIN)
      continue;
    forget(s, key); /* may free nk: look it up again, from the start */
    nk = gs_strmap_get(s->by_node, node);
    cur = 0;
  }
}

/* Under s->mu: every node with kept pods (the names copied first: a retry
 * may drop a node's entry). */
static void retry_all(struct gs_sched *s) {
  size_t n = gs_strmap_count(s->by_node), i = 0, cur = 0;
  char (*names)[GS_NAME_MAX + 1] = n ? gs_calloc(n, sizeof *names) : NULL;
  const char *key;
  void *val;
  if (names == NULL)
    return; /* nothing kept, or no memory: the next tick tries again */
  while (i < n && gs_strmap_next(s->by_node, &cur, &key, &val))
    snprintf(names[i++], sizeof names[0], "%s", key);
  while (i-- > 0)
    retry_node(s, names[i]);
  gs_free(names);
}

size_t gs_sched_retry_kept(struct gs_sched *s) {
  size_t n;
  pthread_mutex_lock(&s->mu);
  retry_all(s);
  n = gs_strmap_count(s->kept);
  pthread_mutex_unlock(&s->mu);
  return n;
}

size_t gs_sched_kept_count(struct gs_sched *s) {
  size_t n;
  pthread_mutex_lock(&s->mu);
  n = gs_strmap_count(s->kept);
  pthread_mutex_unlock(&s->mu);
  return n;
}

void gs_sched_pod_gone(struct gs_sched *s, const char *uid) {
  if (uid == NULL || uid[0] == '\0')
    return;
  pthread_mutex_lock(&s->mu);
  forget(s, uid); /* first, then free (see retry_node) */
  pthread_mutex_unlock(&s->mu);
  gs_sched_claim_gang_leave(s, uid);
  gs_fw_pod_gone(s, uid);
  gs__budgets_pod_forget(s->budgets, uid);
  gs__settle_pod_gone(s->settle, uid);
}

/* ---- DRA claims ----------------------------------------------------------- */

enum gs_err gs_sched_claim_set(struct gs_sched *s, const struct gs_alloc *claim) {
  enum gs_err e;
  if (claim == NULL || claim->kind != GS_ALLOC_CLAIM || claim->uid == NULL ||
      claim->uid[0] == '\0' || claim->node == NULL || claim->node[0] == '\0' ||
      claim->nparts == 0 || claim->parts == NULL)
    return GS_EINVAL;
  pthread_mutex_lock(&s->mu);
  e = gs_fw_claim_set(s, claim);
  if (e == GS_ENOTFOUND || e == GS_ENOMEM) {
    /* its node later: an earlier charge elsewhere must not stay meanwhile */
    (void)gs_fw_claim_gone(s, claim->uid);
    e = keep(s, claim) == GS_EOK ? GS_EAGAIN : GS_ENOMEM;
  } else {
    forget(s, claim->uid);
  }
  pthread_mutex_unlock(&s->mu);
  return e;
}

enum gs_err gs_sched_claim_reserve(struct gs_sched *s, const struct gs_pod_request *pod,
                                   const char *const *nodes, size_t n,
                                   const struct gs_claim_request *req, const char *ns,
                                   const char *name, const char *uid, int64_t now_ns,
                                   struct gs_claim_choice *ret, struct gs_status *st) {
  if (req == NULL || ret == NULL || ns == NULL || name == NULL || uid == NULL || uid[0] == '\0' ||
      (n > 0 && nodes == NULL))
    return gs_status_set(st, GS_EINVAL, GS_R_OTHER, "invalid arguments");
  return gs_fw_claim_reserve(s, pod, nodes, n, req, ns, name, uid, now_ns, ret, st);
}

enum gs_err gs_sched_claim_filter(struct gs_sched *s, const struct gs_pod_request *pod,
                                  const char *const *nodes, size_t n,
                                  const struct gs_claim_request *req,
                                  struct gs_node_result *ret) {
  if (s == NULL || req == NULL || (n > 0 && (nodes == NULL || ret == NULL)))
    return GS_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (nodes[i] == NULL)
      return GS_EINVAL;
  return gs_fw_claim_filter(s, pod, nodes, n, req, ret);
}

void gs_sched_claim_gone(struct gs_sched *s, const char *uid) {
  struct kept *k;
  if (uid == NULL || uid[0] == '\0')
    return;
  pthread_mutex_lock(&s->mu);
  k = gs_strmap_get(s->kept, uid);
  if (k != NULL && k->alloc.kind == GS_ALLOC_CLAIM)
    forget(s, uid);
  (void)gs_fw_claim_gone(s, uid);
  pthread_mutex_unlock(&s->mu);
}

/* ---- nodes -------------------------------------------------------------- */

enum gs_err gs_sched_node_upsert(struct gs_sched *s, const struct gs_node_spec *spec) {
  enum gs_err e = gs_fw_node_upsert(s, spec);
  struct unhealthy *u;
  if (e != GS_EOK)
    return e;
  pthread_mutex_lock(&s->mu);
  u = gs_strmap_get(s->unhealthy, spec->name);
  if (u != NULL)
    e = gs_fw_node_set_unhealthy(s, spec->name, u->mask);
  retry_node(s, spec->name); /* pods whose allocation arrived before their node */
  pthread_mutex_unlock(&s->mu);
  return e;
}

enum gs_err gs_sched_set_unhealthy(struct gs_sched *s, const char *node, uint64_t mask) {
  struct unhealthy *u;
  enum gs_err e = GS_EOK;
  if (node == NULL || strlen(node) > GS_NAME_MAX)
    return GS_EINVAL;
  pthread_mutex_lock(&s->mu);
  u = gs_strmap_get(s->unhealthy, node);
  if (u == NULL && mask != 0) {
    u = gs_calloc(1, sizeof *u);
    if (u == NULL) {
      e = GS_ENOMEM;
    } else {
      snprintf(u->node, sizeof u->node, "%s", node);
      e = gs_strmap_put(s->unhealthy, u->node, u);
      if (e != GS_EOK) {
        gs_free(u);
        u = NULL;
      }
    }
  }
  if (u != NULL && mask == 0) {
    gs_strmap_del(s->unhealthy, node);
    gs_free(u);
  } else if (u != NULL) {
    u->mask = mask;
  }
  pthread_mutex_unlock(&s->mu);
  if (e != GS_EOK)
    return e;
  e = gs_fw_node_set_unhealthy(s, node, mask);
  return e == GS_ENOTFOUND ? GS_EOK : e; /* applied when the node comes */
}

/* ---- verbs ---------------------------------------------------------------- */

enum gs_err gs_sched_pre_filter(struct gs_sched *s, const struct gs_pod_request *pod,
                                bool scoring, bool *ret_score_only) {
  const struct gs_policy *policy = &s->policy;
  bool host = gs_place_frag_scores_host(pod, policy);
  *ret_score_only = host;
  if (gs_place_check_pod(pod, policy, NULL) == GS_ESKIP && !gs_pod_request_is_gang_member(pod) &&
      !(scoring && host))
    return GS_ESKIP;
  return GS_EOK;
}

enum gs_err gs_sched_signature(struct gs_sched *s, const struct gs_pod_request *pod,
                               char ret_sig[GS_REASON_MAX]) {
  return gs_place_signature(pod, &s->policy, ret_sig);
}

enum gs_err gs_sched_bind(struct gs_sched *s, const struct gs_pod_request *pod,
                          const char *bound_node, const char *node, int64_t now_ns,
                          const struct gs_binder *binder, struct gs_sched_bind_result *ret) {
  struct gs_status st = {GS_EOK, GS_R_OTHER, ""};
  struct gs_diag cdiag = {"", ""};
  bool fresh = false, bound = bound_node != NULL && bound_node[0] != '\0';
  enum gs_err e;

  memset(ret, 0, sizeof *ret);
  if (bound && strcmp(bound_node, node) != 0) {
    gs_diag_set(&ret->diag, "", "pod %s/%s is already assigned to node %s", pod->ns, pod->name,
                bound_node);
    return GS_ECONFLICT;
  }
  e = gs_fw_reserve(s, pod, node, now_ns, &ret->annots, &fresh, &st);
  if (e != GS_EOK) {
    ret->no_fit = true;
    gs_diag_set(&ret->diag, "", "cannot bind pod %s/%s: %s", pod->ns, pod->name,
                st.reason[0] ? st.reason : gs_strerror(e));
    return e;
  }
  if (bound && !fresh) {
    ret->already = true; /* bound there with this allocation: idempotent */
    gs_annotations_clear(&ret->annots);
    return GS_EOK;
  }
  if (bound) {
    gs_sched_unreserve(s, pod, node);
    gs_annotations_clear(&ret->annots);
    gs_diag_set(&ret->diag, "", "pod %s/%s is already bound without a GPU allocation", pod->ns,
                pod->name);
    return GS_ECONFLICT;
  }
  e = binder->bind(binder->ctx, pod, node, &ret->annots, &cdiag);
  if (e != GS_EOK) {
    if (fresh)
      gs_sched_unreserve(s, pod, node);
    gs_annotations_clear(&ret->annots);
    ret->cluster_failed = true;
    gs_diag_set(&ret->diag, "", "binding to %.*s failed: %.*s", GS_NAME_MAX, node,
                (int)(sizeof ret->diag.text - GS_NAME_MAX - 32),
                cdiag.text[0] ? cdiag.text : gs_strerror(e));
    return e;
  }
  gs_sched_post_bind(s, pod->uid);
  ret->bound = true;
  return GS_EOK;
}

/* ---- preemption ------------------------------------------------------------ */

/* One offer's budgets (budget.h), for the framework. */
static bool view_describe(void *ctx, const char *uid, struct gs_preempt_candidate *c) {
  return gs__budgets_describe(ctx, uid, c);
}

static const int32_t *view_allowed(void *ctx, uint32_t *ret_n) {
  struct gs__budget_view *v = ctx;
  *ret_n = v->n;
  return v->allowed;
}





enum gs_err gs_sched_preempt(struct gs_sched *s, const struct gs_pod_request *pod,
                             const struct gs_preempt_offer *offers, size_t n,
                             struct gs_preempt_answer *ret) {
  enum gs_err worst = GS_EOK;
  for (size_t i = 0; i < n; i++) {
    struct gs_preempt_answer *a = &ret[i];
    struct gs_status st = {GS_EOK, GS_R_OTHER, ""};
    enum gs_err e;
    memset(a, 0, sizeof *a);
    struct gs__budget_view view = {.b = s->budgets, .n = 0};
    struct gs_fw_preempt_info info = {view_describe, view_allowed, &view};
    e = gs_fw_preempt_limited(s, pod, offers[i].node, offers[i].victims,
                              offers[i].nvictims, &info, &a->victims, &a->nvictims,
                              &a->pdb_violations, &st);
    if (e == GS_ENOTFOUND) {
      snprintf(a->reason, sizeof a->reason, "node unknown to gpushare");
    } else if (e != GS_EOK) {
      snprintf(a->reason, sizeof a->reason, "%s", gs_strerror(e));
      worst = e == GS_ENOMEM ? e : worst;
    } else if (st.code != GS_EOK) {
      snprintf(a->reason, sizeof a->reason, "%s", st.reason);
    } else if (a->nvictims == 0) {
      snprintf(a->reason, sizeof a->reason, "the pod fits here without evicting anything");
    } else {
      a->keep = true;
    }
    if (!a->keep) {
      gs_free(a->victims);
      a->victims = NULL;
      a->nvictims = 0;
    }
  }
  return worst;
}

/* The cost of each kept answer, read from the ledger (its victims'
 * highest priority and GPU memory), and the cheapest one's victims. */
struct cheapest {
  const struct gs_preempt_answer *answers;
  size_t n, best;
  struct gs_victim *victims; /* the best answer's, as the ledger has them */
  size_t nvictims;
  enum gs_err err;
};

static void cheapest_fn(const struct gs_ledger *ledger, void *arg) {
  struct cheapest *c = arg;
  int32_t best_prio = INT32_MAX;
  uint32_t best_viol = UINT32_MAX;
  size_t best_count = SIZE_MAX;
  uint64_t best_mib = UINT64_MAX;
  c->best = c->n;
  for (size_t i = 0; i < c->n; i++) {
    const struct gs_preempt_answer *a = &c->answers[i];
    int32_t prio = INT32_MIN;
    uint64_t mib = 0;
    if (!a->keep)
      continue;
    for (size_t v = 0; v < a->nvictims; v++) {
      const struct gs_alloc *al = gs_ledger_alloc_get(ledger, a->victims[v]);
      if (al == NULL)
        continue;
      if (al->priority > prio)
        prio = al->priority;
      for (uint32_t k = 0; k < al->nparts; k++)
        mib += gs_alloc_part_mib(al, &al->parts[k]);
    }
    if (a->pdb_violations < best_viol ||
        (a->pdb_violations == best_viol &&
         (prio < best_prio ||
          (prio == best_prio &&
           (a->nvictims < best_count || (a->nvictims == best_count && mib < best_mib)))))) {
      c->best = i;
      best_viol = a->pdb_violations;
      best_prio = prio;
      best_count = a->nvictims;
      best_mib = mib;
    }
  }
  if (c->best == c->n)
    return;
  c->victims = gs_calloc(c->answers[c->best].nvictims + 1, sizeof *c->victims);
  if (c->victims == NULL) {
    c->err = GS_ENOMEM;
    return;
  }
  for (size_t v = 0; v < c->answers[c->best].nvictims; v++) {
    const struct gs_alloc *al = gs_ledger_alloc_get(ledger, c->answers[c->best].victims[v]);
    struct gs_victim *out = &c->victims[c->nvictims];
    if (al == NULL)
      continue;
    snprintf(out->ns, sizeof out->ns, "%s", al->ns);
    snprintf(out->name, sizeof out->name, "%s", al->name);
    snprintf(out->uid, sizeof out->uid, "%s", al->uid);
    c->nvictims++;
  }
}

enum gs_err gs_sched_preempt_cheapest(struct gs_sched *s, const struct gs_preempt_answer *answers,
                                      size_t n, size_t *ret_best, struct gs_victim **ret_victims,
                                      size_t *ret_n) {
  struct cheapest c = {answers, n, n, NULL, 0, GS_EOK};
  gs_sched_read(s, cheapest_fn, NULL, &c);
  if (c.err != GS_EOK)
    return c.err;
  if (c.best == n || c.nvictims == 0) {
    gs_free(c.victims);
    return GS_ENOTFOUND;
  }
  *ret_best = c.best;
  *ret_victims = c.victims;
  *ret_n = c.nvictims;
  return GS_EOK;
}

void gs_sched_preempt_free(struct gs_preempt_answer *answers, size_t n) {
  for (size_t i = 0; answers != NULL && i < n; i++) {
    gs_free(answers[i].victims);
    answers[i].victims = NULL;
    answers[i].nvictims = 0;
  }
}

/* ---- views ---------------------------------------------------------------- */

static void count_plan(void *arg, const struct gs_plan_view *p) {
  *(size_t *)arg += p->waiting;
}

size_t gs_sched_plans_waiting(struct gs_sched *s) {
  size_t n = 0;
  gs_sched_read(s, NULL, count_plan, &n);
  return n;
}

const char *gs_version(void) { return GS_VERSION_STRING; }

