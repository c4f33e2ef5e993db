/* Preemption for a claim pod (sched.h gs_sched_claim_preempt, docs/dra.md
 * "Preempting for claim pods"): each node's victims for every claim of the pod from the framework
 * (gs_fw_claim_preempt) with the pods' budgets (budget.h) and the nodes'
 * host view in the ledger (src/observe/host.c, or the plugin's), then the cheapest node as gs_sched_preempt_cheapest ranks
 * them. */
#include "budget.h"
#include "framework.h"

#include <gpushare/alloc.h>
#include <gpushare/sched.h>

#include <stdio.h>
#include <string.h>

static bool describe(void *ctx, const char *uid, struct gs_preempt_candidate *c) {
  return gs__budgets_describe(ctx, uid, c);
}

static const int32_t *allowed(void *ctx, uint32_t *ret_n) {
  struct gs__budget_view *v = ctx;
  *ret_n = v->n;
  return v->allowed;
}

/* Is a cheaper than b: fewer budget violations, then a lower highest
 * priority, then fewer victims, then less memory. */
static bool cheaper(const struct gs_fw_claim_victims *a, const struct gs_fw_claim_victims *b) {
  if (a->violations != b->violations)
    return a->violations < b->violations;
  if (a->maxprio != b->maxprio)
    return a->maxprio < b->maxprio;
  if (a->n != b->n)
    return a->n < b->n;
  return a->mib < b->mib;
}

enum gs_err gs_sched_claim_preempt(struct gs_sched *s, const struct gs_claim_request *reqs,
                                   size_t nreqs, const struct gs_pod_request *pod,
                                   const char *const *nodes,
                                   size_t n, const struct gs_claim_consumer *consumers,
                                   size_t nconsumers, size_t *ret_node,
                                   struct gs_victim **ret_victims, size_t *ret_n,
                                   uint32_t *ret_violations, struct gs_status *st) {
  struct gs_fw_claim_victims best = {NULL, 0, 0, 0, 0};
  size_t at = n;
  if (s == NULL || reqs == NULL || pod == NULL || (n > 0 && nodes == NULL))
    return gs_status_set(st, GS_EINVAL, GS_R_OTHER, "invalid arguments");
  gs_status_set(st, GS_ENOTFOUND, GS_R_OTHER, "no node offered");
  for (size_t i = 0; i < n; i++) {
    struct gs__budget_view view = {.b = s->budgets, .n = 0};
    struct gs_fw_preempt_info info = {describe, allowed, &view};
    struct gs_fw_claim_victims v;
    struct gs_status why = {GS_EOK, GS_R_OTHER, ""};
    enum gs_err e = gs_fw_claim_preempt(s, reqs, nreqs, pod, nodes[i], consumers, nconsumers, &info, &v,
                                        &why);
    if (e == GS_ENOMEM) {
      gs_free(best.victims);
      return e;
    }
    /* no victims: the claims fit there now (freed since the pod's Filter),
     * the cheapest answer of all — the front end retries there */
    if (e != GS_EOK || why.code != GS_EOK) {
      gs_free(v.victims);
      if (at == n && e == GS_EOK && why.code != GS_EOK)
        *st = why; /* the first node's reason, when none is kept */
      continue;
    }
    if (at == n || cheaper(&v, &best)) {
      gs_free(best.victims);
      best = v;
      at = i;
    } else {
      gs_free(v.victims);
    }
  }
  if (at == n)
    return GS_ENOTFOUND;
  *ret_node = at;
  *ret_victims = best.victims;
  *ret_n = best.n;
  *ret_violations = best.violations;
  return gs_status_set(st, GS_EOK, GS_R_OTHER, "%s", "");
}
