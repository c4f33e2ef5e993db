/* Preemption for a pod group with its members' slots held
 * (gpushare/sched.h gs_sched_preempt_group; docs/preemption.md "Pod
 * groups' slots are held"): the core chooses the victims and every slot
 * (gs_fw_preempt_gang_slots), the framework holds each slot for its member
 * (gs_fw_hold_slots). */
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

enum gs_err gs_sched_preempt_group(struct gs_sched *s, const struct gs_pod_request *pod,
                                   const struct gs_pod_request *members, size_t nmembers,
                                   const char *const *nodes, size_t n, int64_t now_ns,
                                   struct gs_victim **ret_victims, size_t *ret_n,
                                   size_t *ret_member_node, struct gs_status *st) {
  struct group_victims c = {0};
  struct gs_gang_slot *slots = NULL;
  uint32_t nslots = 0;
  enum gs_err err = gs_fw_preempt_gang_slots(s, pod, nodes, n, &c.uids, &c.n, &slots, &nslots, st);
  if (err != GS_EOK)
    return err;
  if (st->code != GS_EOK || c.n == 0) {
    if (st->code == GS_EOK)
      gs_status_set(st, GS_ENOFIT, GS_R_OTHER, "the pod group fits without preemption");
    err = GS_ENOTFOUND;
    goto free_slots;
  }
  c.out = gs_calloc(c.n, sizeof *c.out);
  if (c.out == NULL) {
    err = GS_ENOMEM;
    goto free_slots;
  }
  gs_sched_read(s, still_there, NULL, &c);
  if (c.nout == 0) {
    gs_status_set(st, GS_ENOFIT, GS_R_OTHER, "the victims are gone already");
    gs_free(c.out);
    err = GS_ENOTFOUND;
    goto free_slots;
  }
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
free_slots:
  gs_free(slots);
  gs_free(c.uids);
  return err;
}
