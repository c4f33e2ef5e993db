/* Preempting for a claim pod on one node (docs/dra.md "Preempting for claim
 * pods", issue 33): the victims for a pod's unallocated claims — memory or
 * whole devices, one or several — among gpu-mem pods as
 * gs_fw_preempt_limited weighs them, and claims gpushare placed, each
 * standing for its one consumer pod at that pod's priority (the front end
 * names them: struct gs_claim_consumer). A claim nobody names stays what
 * the ledger makes every claim: never a victim. Each claim's choice is the
 * core's (gs_preempt_pick_limited) on a view of the node from which the
 * victims chosen for the claims before it are gone and those claims placed
 * (gs_claim_fit_node); this file only lays the candidates out and keeps the
 * view. The hold of a nominated claim preemptor (gs_sched_claim_nominate)
 * is at the end. */
#include "framework.h"
#include "hold.h"

#include <gpushare/alloc.h>
#include <gpushare/claim.h>
#include <gpushare/preempt.h>
#include <gpushare/sched.h>

#include <stdio.h>
#include <string.h>

/* The gpu-mem pod the claim's request is weighed as (claim.c's as_pod with
 * the consumer's identity, priority and host requests). */
static void as_pod(const struct gs_claim_request *req, const struct gs_pod_request *pod,
                   uint32_t unit_mib, struct gs_pod_request *ret) {
  uint64_t units = (req->mib_per_gpu + unit_mib - 1) / unit_mib;
  memset(ret, 0, sizeof *ret);
  memcpy(ret->ns, pod->ns, sizeof ret->ns);
  memcpy(ret->name, pod->name, sizeof ret->name);
  memcpy(ret->uid, pod->uid, sizeof ret->uid);
  ret->ncontainers = 1;
  ret->mem_units[0] = units * req->count;
  ret->gpu_count = req->count;
  ret->priority = pod->priority;
  ret->cpu_milli = pod->cpu_milli;
  ret->mem_mib = pod->mem_mib;
}

/* One candidate per consumer pod: its claims on the node merged (evicting
 * the pod frees all of them). */
struct merged {
  struct gs_alloc alloc; /* uid, ns, name: the pod's; parts: into parts */
  struct gs_alloc_part parts[GS_MAX_GPUS];
};

static const struct gs_claim_consumer *consumer_of(const struct gs_claim_consumer *cons,
                                                   size_t ncons, const char *claim_uid) {
  for (size_t i = 0; i < ncons; i++)
    if (cons[i].claim_uid != NULL && strcmp(cons[i].claim_uid, claim_uid) == 0)
      return &cons[i];
  return NULL;
}

/* Adds claim a (a charge on node n) to its consumer's merged candidate, a
 * whole device's part as the GPU's memory (what it charges there: the
 * core's search weighs MiB); false when it is no candidate (unnamed, not
 * lower, the preemptor's own, no parts, too many parts). */
static bool merge(struct merged *m, size_t *nm, const struct gs_node *n, const struct gs_alloc *a,
                  const struct gs_claim_consumer *c, const struct gs_pod_request *pod) {
  size_t i;
  if (c == NULL || c->uid == NULL || c->ns == NULL || c->name == NULL ||
      c->priority >= pod->priority || strcmp(c->uid, pod->uid) == 0 || a->nparts == 0)
    return false;
  for (i = 0; i < *nm && strcmp(m[i].alloc.uid, c->uid) != 0; i++)
    ;
  if (i == *nm) {
    m[i].alloc = *a;
    m[i].alloc.uid = c->uid;
    m[i].alloc.ns = c->ns;
    m[i].alloc.name = c->name;
    m[i].alloc.priority = c->priority;
    m[i].alloc.nparts = 0;
    m[i].alloc.parts = m[i].parts;
    (*nm)++;
  }
  if (m[i].alloc.nparts + a->nparts > GS_MAX_GPUS)
    return false; /* more parts than a node has GPUs: not one pod's claims */
  for (uint32_t p = 0; p < a->nparts; p++) {
    struct gs_alloc_part part = a->parts[p];
    if (part.units == GS_CLAIM_WHOLE)
      part.units = part.gpu < n->ngpus ? n->gpus[part.gpu].total_mib : 0;
    m[i].parts[m[i].alloc.nparts++] = part;
  }
  return true;
}

/* The pod claim req is weighed as: memory as the gpu-mem pod of its shape
 * (gs_place_prepare), whole devices as count whole GPUs. */
static enum gs_err prepare(const struct gs_claim_request *req, const struct gs_pod_request *pod,
                           const struct gs_policy *policy, struct gs_pod_request *as,
                           struct gs_place_pod *ret, struct gs_status *st) {
  if (req->count == 0 || req->count > GS_MAX_GPUS)
    return gs_status_set(st, GS_EUNRESOLVABLE, GS_R_INVALID_POD,
                         "a claim of %u GPUs: 1..%u per claim", (unsigned)req->count,
                         (unsigned)GS_MAX_GPUS);
  as_pod(req, pod, policy->unit_mib, as);
  if (req->mib_per_gpu > 0)
    return gs_place_prepare(as, policy, ret, st);
  as->mem_units[0] = 0;
  *ret = (struct gs_place_pod){.req = as, .policy = policy, .mem = false, .k = req->count};
  return GS_EOK;
}

/* The view without the candidate's charges (its victims gone). */
static void view_free(struct gs_node *view, const struct gs_alloc *a) {
  uint64_t touched = 0;
  for (uint32_t p = 0; p < a->nparts; p++) {
    uint32_t g = a->parts[p].gpu;
    uint64_t mib;
    if (g >= view->ngpus)
      continue;
    mib = gs_alloc_part_mib(a, &a->parts[p]);
    view->gpus[g].used_mib -= mib < view->gpus[g].used_mib ? mib : view->gpus[g].used_mib;
    if (!(touched >> g & 1) && view->gpus[g].npods > 0)
      view->gpus[g].npods--;
    touched |= UINT64_C(1) << g;
    if (view->gpus[g].owner == a)
      view->gpus[g].owner = NULL;
  }
}

/* Claim req placed on the view as gs_claim_place would place it there. */
static enum gs_err view_place(struct gs_node *view, const struct gs_policy *policy,
                              const struct gs_claim_request *req, struct gs_status *st) {
  struct gs_claim_choice c;
  int64_t score;
  enum gs_err e = gs_claim_fit_node(view, policy, req, &c, &score, st);
  if (e != GS_EOK)
    return e;
  for (uint32_t k = 0; k < c.choice.ngpus; k++) {
    struct gs_gpu *g = &view->gpus[c.choice.gpus[k]];
    g->used_mib = req->mib_per_gpu > 0 ? g->used_mib + req->mib_per_gpu : g->total_mib;
    g->npods++;
  }
  return GS_EOK;
}

/* Victims for reqs[r] on the view among the candidates not chosen yet
 * (chosen: marks; sub, map: scratch for nc); marks them, takes them off the
 * view and places the claim there. GS_EOK, or st's code why not. */
static enum gs_err pick_one(struct gs_sched *fw, struct gs_node *view,
                            const struct gs_claim_request *req, const struct gs_pod_request *pod,
                            const struct gs_preempt_candidate *cands, size_t nc, bool *chosen,
                            struct gs_preempt_candidate *sub, uint32_t *map, uint32_t *idx,
                            struct gs_preempt_limits *lim, struct gs_status *st) {
  struct gs_pod_request as;
  struct gs_place_pod place;
  enum gs_mode mode = view->mode;
  size_t ns = 0, nv = 0;
  enum gs_err e = prepare(req, pod, &fw->policy, &as, &place, st);
  if (e != GS_EOK)
    return e;
  lim->freed_cpu_milli = lim->freed_mem_mib = 0;
  for (size_t i = 0; i < nc; i++) {
    if (chosen[i]) { /* gone with an earlier claim's victims: their host is free */
      lim->freed_cpu_milli += cands[i].cpu_milli;
      lim->freed_mem_mib += cands[i].mem_mib;
      continue;
    }
    map[ns] = (uint32_t)i;
    sub[ns++] = cands[i];
  }
  /* whole devices are claimed on any gpushare node: weighed as on a
   * topology node (every pod on the GPU must go) */
  if (req->mib_per_gpu == 0 && gs_mode_is_memory(mode))
    view->mode = GS_MODE_TOPOLOGY;
  e = gs_preempt_pick_limited(view, &place, fw->policy.cgpu_max_pods, sub, ns, lim, idx, &nv, NULL,
                              st);
  view->mode = mode;
  if (e != GS_EOK)
    return e;
  for (size_t i = 0; i < nv; i++) {
    chosen[map[idx[i]]] = true;
    view_free(view, sub[idx[i]].alloc);
  }
  if (view_place(view, &fw->policy, req, st) != GS_EOK)
    return gs_status_set(st, GS_ENOFIT, GS_R_OTHER, "%s", "no lower-priority pods free the node for the pod's claims");
  return GS_EOK;
}

enum gs_err gs_fw_claim_preempt(struct gs_sched *fw, const struct gs_claim_request *reqs,
                                size_t nreqs, const struct gs_pod_request *pod, const char *node,
                                const struct gs_claim_consumer *cons, size_t ncons,
                                const struct gs_fw_preempt_info *info,
                                struct gs_fw_claim_victims *ret, struct gs_status *st) {
  struct gs_preempt_limits lim = {NULL, 0, true, 0, 0};
  struct gs_preempt_candidate *cands = NULL, *sub = NULL;
  struct merged *m = NULL;
  struct gs_gpu gpus[GS_MAX_GPUS];
  struct gs_node view;
  const struct gs_node *n;
  uint32_t *idx = NULL, *map = NULL;
  uint64_t *budgets = NULL;
  int32_t *prios = NULL;
  bool *chosen = NULL;
  size_t count, nc = 0, nm = 0;
  enum gs_err err = GS_EOK;

  memset(ret, 0, sizeof *ret);
  if (nreqs == 0 || nreqs > GS_CLAIM_PREEMPT_MAX) {
    gs_status_set(st, GS_EUNRESOLVABLE, GS_R_OTHER,
                  "preemption for 1..%u unallocated claims per pod",
                  (unsigned)GS_CLAIM_PREEMPT_MAX);
    return GS_EOK;
  }
  pthread_rwlock_rdlock(&fw->lock);
  if ((err = gs_fw_preempt_room(fw, node, &n, &count, &cands, &idx)) != GS_EOK)
    goto unlock;
  sub = gs_calloc(count ? count : 1, sizeof *sub);
  map = gs_calloc(count ? count : 1, sizeof *map);
  m = gs_calloc(count ? count : 1, sizeof *m);
  chosen = gs_calloc(count ? count : 1, sizeof *chosen);
  budgets = gs_calloc(count ? count : 1, sizeof *budgets);
  prios = gs_calloc(count ? count : 1, sizeof *prios);
  if (sub == NULL || map == NULL || m == NULL || chosen == NULL || budgets == NULL ||
      prios == NULL) {
    err = GS_ENOMEM;
    goto unlock;
  }
  /* the claims first, merged by pod (m does not move: counted above) */
  for (size_t i = 0; i < count; i++) {
    const struct gs_alloc *a = gs_ledger_node_alloc_at(fw->ledger, node, i);
    if (a->kind == GS_ALLOC_CLAIM)
      (void)merge(m, &nm, n, a, consumer_of(cons, ncons, a->uid), pod);
  }
  for (size_t i = 0; i < nm; i++) {
    cands[nc] = (struct gs_preempt_candidate){.alloc = &m[i].alloc};
    if (info == NULL || info->describe(info->ctx, m[i].alloc.uid, &cands[nc]))
      nc++;
  }
  /* then gpu-mem pods, as gs_fw_preempt_limited takes them */
  for (size_t i = 0; i < count; i++) {
    const struct gs_alloc *a = gs_ledger_node_alloc_at(fw->ledger, node, i);
    bool dup = false;
    if (!gs_fw_evicts_for(fw, a, pod))
      continue;
    for (size_t j = 0; j < nm && !dup; j++)
      dup = strcmp(m[j].alloc.uid, a->uid) == 0;
    if (dup)
      continue; /* a pod with claims and gpu-mem: its claims' candidate stands for it */
    cands[nc] = (struct gs_preempt_candidate){.alloc = a};
    if (info == NULL || info->describe(info->ctx, a->uid, &cands[nc]))
      nc++;
  }
  if (info != NULL)
    lim.allowed = info->allowed(info->ctx, &lim.nbudgets);
  view = *n;
  memcpy(gpus, n->gpus, n->ngpus * sizeof *gpus);
  view.gpus = gpus;
  /* each claim in turn, on the node its predecessors' victims left */
  for (size_t r = 0; r < nreqs; r++) {
    st->code = pick_one(fw, &view, &reqs[r], pod, cands, nc, chosen, sub, map, idx, &lim, st);
    if (st->code != GS_EOK) {
      if (gs_status_is_error(st->code))
        err = st->code;
      goto unlock;
    }
  }
  ret->victims = gs_calloc(nc ? nc : 1, sizeof *ret->victims);
  if (ret->victims == NULL) {
    err = GS_ENOMEM;
    goto unlock;
  }
  ret->maxprio = INT32_MIN;
  for (size_t i = 0; i < nc; i++) {
    const struct gs_alloc *a = cands[i].alloc;
    struct gs_victim *v;
    if (!chosen[i])
      continue;
    budgets[ret->n] = cands[i].budgets;
    prios[ret->n] = a->priority;
    v = &ret->victims[ret->n++];
    snprintf(v->ns, sizeof v->ns, "%s", a->ns);
    snprintf(v->name, sizeof v->name, "%s", a->name);
    snprintf(v->uid, sizeof v->uid, "%s", a->uid);
    if (a->priority > ret->maxprio)
      ret->maxprio = a->priority;
    for (uint32_t p = 0; p < a->nparts; p++)
      ret->mib += gs_alloc_part_mib(a, &a->parts[p]);
  }
  ret->violations = gs_preempt_violations(budgets, prios, ret->n, lim.allowed, lim.nbudgets);
unlock:
  pthread_rwlock_unlock(&fw->lock);
  gs_free(cands);
  gs_free(sub);
  gs_free(idx);
  gs_free(map);
  gs_free(m);
  gs_free(chosen);
  gs_free(budgets);
  gs_free(prios);
  return err;
}

/* One claim of whole devices held on node as a pod: on a topology node the
 * whole-GPU pod of its count (the hold owns the GPUs it picks), elsewhere
 * the gpu-mem pod of count GPUs × the node's smallest healthy GPU in whole
 * units (only GPUs nothing uses fit it). Under the lock. */
static bool whole_shape(const struct gs_claim_request *req, const struct gs_node *n,
                        uint32_t unit_mib, struct gs_pod_request *pod) {
  struct gs_claim_request mem = {0, req->count};
  if (n == NULL || req->count == 0 || req->count > GS_MAX_GPUS || unit_mib == 0)
    return false;
  if (n->mode == GS_MODE_TOPOLOGY)
    return gs_claim_shape_whole_pod(req, pod);
  for (uint32_t g = 0; g < n->ngpus; g++)
    if (n->gpus[g].healthy && (mem.mib_per_gpu == 0 || n->gpus[g].total_mib < mem.mib_per_gpu))
      mem.mib_per_gpu = n->gpus[g].total_mib;
  mem.mib_per_gpu = mem.mib_per_gpu / unit_mib * unit_mib;
  return mem.mib_per_gpu > 0 && gs_claim_shape_pod(&mem, unit_mib, pod);
}

enum gs_err gs_sched_claim_nominate(struct gs_sched *fw, const struct gs_claim_request *reqs,
                                    size_t nreqs, const struct gs_pod_request *pod,
                                    const char *node) {
  struct gs_pod_request shaped;
  bool one, changed;
  enum gs_err err;
  if (fw == NULL || pod == NULL || (nreqs > 0 && reqs == NULL))
    return GS_EINVAL;
  shaped = *pod;
  /* one claim of memory is held as the gpu-mem pod of its shape */
  one = nreqs == 1 && gs_claim_shape_pod(&reqs[0], fw->policy.unit_mib, &shaped);
  pthread_rwlock_wrlock(&fw->lock);
  /* one claim of whole devices as the pod that takes them whole there */
  if (!one && nreqs == 1 && reqs[0].mib_per_gpu == 0 && node != NULL && node[0] != '\0')
    one = whole_shape(&reqs[0], gs_ledger_node_get(fw->ledger, node), fw->policy.unit_mib,
                      &shaped);
  err = gs__holds_set(fw->holds, &shaped, &fw->policy, one ? node : NULL, &changed);
  pthread_rwlock_unlock(&fw->lock);
  if (err == GS_EOK && !one && node != NULL && node[0] != '\0')
    return GS_ESKIP;
  return err;
}
