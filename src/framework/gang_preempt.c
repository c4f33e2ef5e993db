/* Preemption for a whole gang (framework.h gs_fw_preempt_gang_slots,
 * docs/gangs.md "Preemption"): which slots the job still needs comes from
 * the plugins' plans (describe), the candidates from the ledger and the
 * plugins' may_evict, the choice from the core (gs_gang_preempt_slots);
 * a pod group's slots are held here too (gs_fw_hold_slots, hold.h). */
#include "framework.h"
#include "hold.h"

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
  struct gs_gang_slot *slots; /* heap, nslots: each slot's node and GPUs */
  uint32_t nslots;
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
  c->slots = gs_calloc(need, sizeof *c->slots);
  if (c->slots == NULL)
    goto nomem;
  {
    const struct gs_policy *policy = gs_sched_policy(c->fw);
    struct gs_place_pod place;
    c->st->code = gs_place_prepare(c->pod, policy, &place, c->st);
    if (c->st->code == GS_EOK && !place.mem)
      place.k = k; /* the job's whole GPUs per member (gs_gang_preempt_pick) */
    if (c->st->code == GS_EOK)
      c->st->code = gs_gang_preempt_slots(views, c->n, need, &place, policy->cgpu_max_pods, cands,
                                          nc, out, c->slots, c->st);
    if (c->st->code == GS_EOK && need > 0)
      first = c->slots[0].node;
    if (c->st->code == GS_EOK)
      c->nslots = need;
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

enum gs_err gs_fw_preempt_gang_slots(struct gs_sched *fw, const struct gs_pod_request *pod,
                                     const char *const *nodes, size_t n,
                                     char (**ret_uids)[GS_UID_MAX + 1], size_t *ret_n,
                                     struct gs_gang_slot **ret_slots, uint32_t *ret_nslots,
                                     struct gs_status *st) {
  struct gang_call c = {fw, pod, nodes, n, st, false, false, 0, GS_EOK, NULL, 0, 0, NULL, 0};
  *ret_uids = NULL;
  *ret_n = 0;
  *ret_slots = NULL;
  *ret_nslots = 0;
  if (!gs_pod_request_is_gang_member(pod)) {
    gs_status_set(st, GS_EUNRESOLVABLE, GS_R_OTHER, "gang preemption is for members of jobs");
    return GS_EOK;
  }
  gs_sched_read(fw, gang_fn, NULL, &c);
  if (c.err != GS_EOK) {
    gs_free(c.uids);
    gs_free(c.slots);
    return c.err;
  }
  if (c.nslots == 0) {
    gs_free(c.slots);
    c.slots = NULL;
  }
  *ret_uids = c.uids;
  *ret_n = c.nuids;
  *ret_slots = c.slots;
  *ret_nslots = c.nslots;
  return GS_EOK;
}

enum gs_err gs_fw_hold_job_slots(struct gs_sched *fw, const struct gs_pod_request *pod,
                                 const char *const *nodes, const struct gs_gang_slot *slots,
                                 size_t nslots) {
  enum gs_err err = GS_EOK;
  pthread_rwlock_wrlock(&fw->lock);
  (void)gs__holds_job_end(fw->holds, pod); /* an earlier preemption's */
  for (size_t i = 0; i < nslots; i++) {
    char key[GS_UID_MAX + 1];
    enum gs_err e;
    snprintf(key, sizeof key, "%.48s#%u", pod->uid, (unsigned)(i % 1000));
    e = gs__holds_set_job_slot(fw->holds, pod, key, &fw->policy, nodes[slots[i].node],
                               slots[i].gpus, slots[i].mib_per_gpu);
    if (e != GS_EOK && err == GS_EOK)
      err = e; /* the others are held still */
  }
  pthread_rwlock_unlock(&fw->lock);
  return err;
}

enum gs_err gs_fw_hold_slots(struct gs_sched *fw, const struct gs_pod_request *members,
                             size_t nmembers, const char *const *nodes,
                             const struct gs_gang_slot *slots, size_t nslots, int64_t now_ns) {
  enum gs_err err = GS_EOK;
  pthread_rwlock_wrlock(&fw->lock);
  for (size_t i = 0; i < nmembers; i++) {
    enum gs_err e;
    if (i >= nslots) {
      (void)gs__holds_drop(fw->holds, members[i].uid); /* no slot this time */
      continue;
    }
    e = gs__holds_set_slot(fw->holds, &members[i], &fw->policy, nodes[slots[i].node],
                           slots[i].gpus, slots[i].mib_per_gpu, now_ns);
    if (e != GS_EOK && err == GS_EOK)
      err = e; /* the others are held still */
  }
  pthread_rwlock_unlock(&fw->lock);
  return err;
}
