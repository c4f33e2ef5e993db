/* Preemption for a whole gang with its slots held (gpushare/sched.h
 * gs_sched_preempt_group, gs_sched_preempt_gang; docs/preemption.md "Pod
 * groups' slots are held", "A label gang's slots are held"): the core
 * chooses the victims and every slot (gs_fw_preempt_gang_slots), the
 * framework holds each slot for its member (a pod group:
 * gs_fw_hold_slots) or for the job (labels: gs_fw_hold_job_slots). */
#include "alloc.h"
#include "framework.h"

#include <gpushare/gang_preempt.h>
#include <gpushare/sched.h>

#include <stdint.h>
#include <stdio.h>

struct group_victims {
  char (*uids)[GS_UID_MAX + 1];
  size_t n;
  struct gs_victim *out; /* room for n */
  size_t nout;
};

/* The victims still in the ledger, as the front end evicts them. */
static void still_there(const struct gs_ledger *ledger, void *arg) {
  struct group_victims *c = arg;
  for (size_t i = 0; i < c->n; i++) {
    const struct gs_alloc *a = gs_ledger_alloc_get(ledger, c->uids[i]);
    if (a == NULL)
      continue; /* gone meanwhile */
    snprintf(c->out[c->nout].ns, sizeof c->out[c->nout].ns, "%s", a->ns);
    snprintf(c->out[c->nout].name, sizeof c->out[c->nout].name, "%s", a->name);
    snprintf(c->out[c->nout].uid, sizeof c->out[c->nout].uid, "%s", a->uid);
    c->nout++;
  }
}

/* The victims and slots gang preemption chooses for pod's job, the
 * victims still in the ledger in c->out (heap); GS_ENOTFOUND with st when
 * none is needed (fits: its text) or none is left; GS_ENOMEM. */
static enum gs_err choose(struct gs_sched *s, const struct gs_pod_request *pod,
                          const char *const *nodes, size_t n, const char *fits,
                          struct group_victims *c, struct gs_gang_slot **ret_slots,
                          uint32_t *ret_nslots, struct gs_status *st) {
  enum gs_err err = gs_fw_preempt_gang_slots(s, pod, nodes, n, &c->uids, &c->n, ret_slots,
                                             ret_nslots, st);
  if (err != GS_EOK)
    return err;
  if (st->code != GS_EOK || c->n == 0 || *ret_nslots == 0) {
    if (st->code == GS_EOK)
      gs_status_set(st, GS_ENOFIT, GS_R_OTHER, "%s", fits);
    return GS_ENOTFOUND;
  }
  if ((c->out = gs_calloc(c->n, sizeof *c->out)) == NULL)
    return GS_ENOMEM;
  gs_sched_read(s, still_there, NULL, c);
  if (c->nout == 0) {
    gs_status_set(st, GS_ENOFIT, GS_R_OTHER, "the victims are gone already");
    gs_free(c->out);
    c->out = NULL;
    return GS_ENOTFOUND;
  }
  return GS_EOK;
}

enum gs_err gs_sched_preempt_group(struct gs_sched *s, const struct gs_pod_request *pod,
                                   const struct gs_pod_request *members, size_t nmembers,
                                   const char *const *nodes, size_t n, int64_t now_ns,
                                   struct gs_victim **ret_victims, size_t *ret_n,
                                   size_t *ret_member_node, struct gs_status *st) {
  struct group_victims c = {0};
  struct gs_gang_slot *slots = NULL;
  uint32_t nslots = 0;
  enum gs_err err =
      choose(s, pod, nodes, n, "the pod group fits without preemption", &c, &slots, &nslots, st);
  if (err != GS_EOK)
    goto done;
  /* the slots held before the victims go: no pod arriving meanwhile takes
   * what they free */
  err = gs_fw_hold_slots(s, members, nmembers, nodes, slots, nslots, now_ns);
  if (err != GS_EOK) /* answered all the same: the members are nominated */
    gs_status_set(st, GS_EOK, GS_R_OTHER, "not every slot is held: %s", gs_strerror(err));
  err = GS_EOK;
  for (size_t i = 0; i < nmembers; i++)
    ret_member_node[i] = i < nslots ? slots[i].node : SIZE_MAX;
  *ret_victims = c.out;
  *ret_n = c.nout;
done:
  gs_free(slots);
  gs_free(c.uids);
  return err;
}

enum gs_err gs_sched_preempt_gang(struct gs_sched *s, const struct gs_pod_request *pod,
                                  const char *const *nodes, size_t n,
                                  struct gs_victim **ret_victims, size_t *ret_n, size_t *ret_node,
                                  struct gs_status *st) {
  struct group_victims c = {0};
  struct gs_gang_slot *slots = NULL;
  uint32_t nslots = 0;
  enum gs_err err =
      choose(s, pod, nodes, n, "the job fits without preemption", &c, &slots, &nslots, st);
  if (err != GS_EOK)
    goto done;
  /* the job's slots held before the victims go: no pod outside the job
   * takes what they free before its plan does (docs/preemption.md) */
  if (gs_fw_hold_job_slots(s, pod, nodes, slots, nslots) != GS_EOK) {
    /* past the cap: answered all the same, not every slot held */
  }
  *ret_victims = c.out;
  *ret_n = c.nout;
  *ret_node = slots[0].node;
done:
  gs_free(slots);
  gs_free(c.uids);
  return err;
}
