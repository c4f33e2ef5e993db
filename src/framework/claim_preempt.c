/* Preempting for a claim pod on one node (docs/dra.md "Preempting for claim
 * pods", issue 33): the victims for a claim's memory request — gpu-mem pods
 * as gs_fw_preempt_limited weighs them, and claims gpushare placed, each
 * standing for its one consumer pod at that pod's priority (the front end
 * names them: struct gs_claim_consumer). A claim nobody names stays what
 * the ledger makes every claim: never a victim. The choice is the core's
 * (gs_preempt_pick_limited); this file only lays the candidates out. */
#include "framework.h"

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

static bool claim_by_memory(const struct gs_alloc *a) {
  for (uint32_t p = 0; p < a->nparts; p++)
    if (a->parts[p].units == GS_CLAIM_WHOLE)
      return false;
  return a->nparts > 0;
}

static const struct gs_claim_consumer *consumer_of(const struct gs_claim_consumer *cons,
                                                   size_t ncons, const char *claim_uid) {
  for (size_t i = 0; i < ncons; i++)
    if (cons[i].claim_uid != NULL && strcmp(cons[i].claim_uid, claim_uid) == 0)
      return &cons[i];
  return NULL;
}

/* Adds claim a (a charge on node) to its consumer's merged candidate; false
 * when it is no candidate (unnamed, not lower, the preemptor's own, whole
 * devices, too many parts). */
static bool merge(struct merged *m, size_t *nm, const struct gs_alloc *a,
                  const struct gs_claim_consumer *c, const struct gs_pod_request *pod) {
  size_t i;
  if (c == NULL || c->uid == NULL || c->ns == NULL || c->name == NULL ||
      c->priority >= pod->priority || strcmp(c->uid, pod->uid) == 0 || !claim_by_memory(a))
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
  memcpy(&m[i].parts[m[i].alloc.nparts], a->parts, a->nparts * sizeof *a->parts);
  m[i].alloc.nparts += a->nparts;
  return true;
}

enum gs_err gs_fw_claim_preempt(struct gs_sched *fw, const struct gs_claim_request *req,
                                const struct gs_pod_request *pod, const char *node,
                                const struct gs_claim_consumer *cons, size_t ncons,
                                const struct gs_fw_preempt_info *info,
                                struct gs_fw_claim_victims *ret, struct gs_status *st) {
  struct gs_preempt_limits lim = {NULL, 0, true, 0, 0};
  struct gs_preempt_candidate *cands = NULL;
  struct merged *m = NULL;
  struct gs_pod_request as;
  struct gs_place_pod place;
  const struct gs_node *n;
  uint32_t *idx = NULL, violations = 0;
  size_t count, nc = 0, nm = 0, nv = 0;
  enum gs_err err = GS_EOK;

  memset(ret, 0, sizeof *ret);
  if (req->mib_per_gpu == 0) {
    gs_status_set(st, GS_EUNRESOLVABLE, GS_R_OTHER,
                  "preemption for a claim of whole devices is not supported");
    return GS_EOK;
  }
  as_pod(req, pod, fw->policy.unit_mib, &as);
  st->code = gs_place_prepare(&as, &fw->policy, &place, st);
  if (st->code != GS_EOK)
    return GS_EOK;
  pthread_rwlock_rdlock(&fw->lock);
  if ((err = gs_fw_preempt_room(fw, node, &n, &count, &cands, &idx)) != GS_EOK)
    goto unlock;
  if ((m = gs_calloc(count ? count : 1, sizeof *m)) == NULL) {
    err = GS_ENOMEM;
    goto unlock;
  }
  /* the claims first, merged by pod (m does not move: counted above) */
  for (size_t i = 0; i < count; i++) {
    const struct gs_alloc *a = gs_ledger_node_alloc_at(fw->ledger, node, i);
    if (a->kind == GS_ALLOC_CLAIM)
      (void)merge(m, &nm, a, consumer_of(cons, ncons, a->uid), pod);
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
  st->code = gs_preempt_pick_limited(n, &place, fw->policy.cgpu_max_pods, cands, nc, &lim, idx,
                                     &nv, &violations, st);
  if (st->code != GS_EOK) {
    if (gs_status_is_error(st->code))
      err = st->code;
    goto unlock;
  }
  ret->victims = gs_calloc(nv ? nv : 1, sizeof *ret->victims);
  if (ret->victims == NULL) {
    err = GS_ENOMEM;
    goto unlock;
  }
  ret->maxprio = INT32_MIN;
  for (size_t i = 0; i < nv; i++) {
    const struct gs_alloc *a = cands[idx[i]].alloc;
    struct gs_victim *v = &ret->victims[ret->n++];
    snprintf(v->ns, sizeof v->ns, "%s", a->ns);
    snprintf(v->name, sizeof v->name, "%s", a->name);
    snprintf(v->uid, sizeof v->uid, "%s", a->uid);
    if (a->priority > ret->maxprio)
      ret->maxprio = a->priority;
    for (uint32_t p = 0; p < a->nparts; p++)
      ret->mib += gs_alloc_part_mib(a, &a->parts[p]);
  }
  ret->violations = violations;
unlock:
  pthread_rwlock_unlock(&fw->lock);
  gs_free(cands);
  gs_free(idx);
  gs_free(m);
  return err;
}
