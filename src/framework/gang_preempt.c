/* Preemption for a whole gang (framework.h gs_fw_preempt_gang,
 * docs/gangs.md "Preemption"): which slots the job still needs comes from
 * the plugins' plans (describe), the candidates from the ledger and the
 * plugins' may_evict, the choice from the core (gs_gang_preempt_pick). */
#include "framework.h"

#include <gpushare/alloc.h>
#include <gpushare/gang_preempt.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct gang_call {
  struct gs_sched *fw;
  const struct gs_pod_request *pod;
  const char *const *nodes;
  size_t n;
  struct gs_status *st;
  /* from the plans */
  bool listed, waiting;
  uint32_t held; /* slots the job holds (held, placed or bound) */
  /* results */
  enum gs_err err;
  char (*uids)[GS_UID_MAX + 1];
  size_t nuids, first;
};

static void plan_fn(void *ctx, const struct gs_plan_view *p) {
  struct gang_call *c = ctx;
  if (strcmp(p->ns, c->pod->ns) != 0 || strcmp(p->job, c->pod->gang_job) != 0)
    return;
  c->listed = true;
  c->waiting = p->waiting;
  c->held = p->nslots;
}

static void gang_fn(const struct gs_ledger *ledger, void *arg) {
  struct gang_call *c = arg;
  const struct gs_node **views = NULL;
  struct gs_preempt_candidate *cands = NULL;
  bool *out = NULL;
  size_t nc = 0, cap = 0, first = 0;
  uint32_t need, k = (uint32_t)gs_pod_request_whole_effective(c->pod);

  gs_fw_describe(c->fw, plan_fn, c);
  if (c->listed && c->waiting) {
    gs_status_set(c->st, GS_ENOFIT, GS_R_GANG_OTHER,
                  "gang %s/%s: its plan holds its slots already: nothing to preempt", c->pod->ns,
                  c->pod->gang_job);
    return;
  }
  need = c->pod->gang_replicas > c->held ? c->pod->gang_replicas - c->held : 0;
  if (need == 0) {
    gs_status_set(c->st, GS_ENOFIT, GS_R_GANG_FULL,
                  "gang %s/%s: all %" PRIu32 " replica slots are taken", c->pod->ns,
                  c->pod->gang_job, c->pod->gang_replicas);
    return;
  }
  views = gs_calloc(c->n ? c->n : 1, sizeof *views);
  if (views == NULL)
    goto nomem;
  for (size_t i = 0; i < c->n; i++) {
    views[i] = gs_ledger_node_get(ledger, c->nodes[i]);
    if (views[i] != NULL)
      cap += gs_ledger_node_alloc_count(ledger, c->nodes[i]);
  }
  cands = gs_calloc(cap ? cap : 1, sizeof *cands);
  out = gs_calloc(cap ? cap : 1, sizeof *out);
  if (cands == NULL || out == NULL)
    goto nomem;
  for (size_t i = 0; i < c->n; i++) {
    size_t count = views[i] != NULL ? gs_ledger_node_alloc_count(ledger, c->nodes[i]) : 0;
    for (size_t j = 0; j < count && nc < cap; j++) {
      const struct gs_alloc *a = gs_ledger_node_alloc_at(ledger, c->nodes[i], j);
      if (a->priority >= c->pod->priority || strcmp(a->uid, c->pod->uid) == 0 ||
          !gs_fw_may_evict(c->fw, a))
        continue;
      cands[nc++] = (struct gs_preempt_candidate){.alloc = a, .proposed = false};
    }
  }
  if (gs_pod_request_is_whole(c->pod)) {
    c->st->code = gs_gang_preempt_pick(views, c->n, need, k, cands, nc, out, &first, c->st);
  } else {
    const struct gs_policy *policy = gs_sched_policy(c->fw);
    struct gs_place_pod place;
    c->st->code = gs_place_prepare(c->pod, policy, &place, c->st);
    if (c->st->code == GS_EOK)
      c->st->code = gs_gang_preempt_pick_mem(views, c->n, need, &place, policy->cgpu_max_pods,
                                             cands, nc, out, &first, c->st);
  }
  if (c->st->code == GS_EOK) {
    c->uids = gs_calloc(nc ? nc : 1, sizeof *c->uids);
    if (c->uids == NULL)
      goto nomem;
    for (size_t i = 0; i < nc; i++)
      if (out[i])
        snprintf(c->uids[c->nuids++], GS_UID_MAX + 1, "%s", cands[i].alloc->uid);
    c->first = first;
  } else if (c->st->code == GS_ENOMEM) {
    c->err = GS_ENOMEM;
  }
  goto done;
nomem:
  c->err = GS_ENOMEM;
done:
  gs_free(views);
  gs_free(cands);
  gs_free(out);
}

enum gs_err gs_fw_preempt_gang(struct gs_sched *fw, const struct gs_pod_request *pod,
                               const char *const *nodes, size_t n,
                               char (**ret_uids)[GS_UID_MAX + 1], size_t *ret_n,
                               size_t *ret_first, struct gs_status *st) {
  struct gang_call c = {fw, pod, nodes, n, st, false, false, 0, GS_EOK, NULL, 0, 0};
  *ret_uids = NULL;
  *ret_n = 0;
  *ret_first = 0;
  if (!gs_pod_request_is_gang_member(pod)) {
    gs_status_set(st, GS_EUNRESOLVABLE, GS_R_OTHER, "gang preemption is for members of jobs");
    return GS_EOK;
  }
  gs_sched_read(fw, gang_fn, NULL, &c);
  if (c.err != GS_EOK) {
    gs_free(c.uids);
    return c.err;
  }
  *ret_uids = c.uids;
  *ret_n = c.nuids;
  *ret_first = c.first;
  return GS_EOK;
}
