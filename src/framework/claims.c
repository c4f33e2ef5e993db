/* DRA claims in the framework (docs/dra.md): their charges recorded,
 * replaced and freed, and gpushare's own decision for one (gs_claim_place)
 * reserved, each under the one ledger lock (gs__fw_write). */
#include "framework.h"
#include "hold.h"

#include <gpushare/claim.h>

#include <stdio.h>
#include <string.h>

struct set_call {
  const struct gs_alloc *claim;
  const char *uid;
  enum gs_err err;
};

static void set_fn(struct gs_ledger *ledger, const struct gs_policy *policy, void *arg) {
  struct set_call *c = arg;
  (void)policy;
  c->err = gs_ledger_claim_set(ledger, c->claim);
}

enum gs_err gs_fw_claim_set(struct gs_sched *fw, const struct gs_alloc *claim) {
  struct set_call c = {claim, NULL, GS_EOK};
  gs__fw_write(fw, set_fn, &c);
  return c.err;
}

static void gone_fn(struct gs_ledger *ledger, const struct gs_policy *policy, void *arg) {
  struct set_call *c = arg;
  const struct gs_alloc *a = gs_ledger_alloc_get(ledger, c->uid);
  (void)policy;
  c->err = a != NULL && a->kind == GS_ALLOC_CLAIM ? gs_ledger_release(ledger, c->uid)
                                                  : GS_ENOTFOUND;
}

enum gs_err gs_fw_claim_gone(struct gs_sched *fw, const char *uid) {
  struct set_call c = {NULL, uid, GS_ENOTFOUND};
  gs__fw_write(fw, gone_fn, &c);
  return c.err;
}

/* The charge of a claim as a choice (its node and GPUs). */
static void choice_of(const struct gs_alloc *a, struct gs_claim_choice *ret) {
  memset(ret, 0, sizeof *ret);
  snprintf(ret->node, sizeof ret->node, "%s", a->node);
  for (uint32_t i = 0; i < a->nparts && i < GS_MAX_GPUS; i++)
    ret->choice.gpus[ret->choice.ngpus++] = a->parts[i].gpu;
  ret->choice.mib_per_gpu =
      a->nparts > 0 && a->parts[0].units != GS_CLAIM_WHOLE ? a->parts[0].units : 0;
}

struct reserve_call {
  struct gs_sched *fw;
  const struct gs_pod_request *pod; /* the consumer (may be NULL) */
  const char *const *nodes;
  size_t n;
  const struct gs_claim_request *req;
  const char *ns, *name, *uid;
  int64_t now_ns;
  struct gs_claim_choice *ret;
  struct gs_status *st;
  enum gs_err err;
  struct gs_node held; /* the node with its holds (view points here) */
  struct gs_gpu held_gpus[GS_MAX_GPUS];
  const struct gs_node *view;
};

static void reserve_fn(struct gs_ledger *ledger, const struct gs_policy *policy, void *arg) {
  struct reserve_call *r = arg;
  struct gs_alloc_part parts[GS_MAX_GPUS];
  struct gs_claim_choice c;
  struct gs_alloc a;
  const struct gs_alloc *have = gs_ledger_alloc_get(ledger, r->uid);
  if (have != NULL) {
    /* reserved before (a retried cycle) or allocated: never re-picked */
    r->err = have->kind == GS_ALLOC_CLAIM ? GS_EOK : GS_EEXISTS;
    if (r->err == GS_EOK)
      choice_of(have, r->ret);
    gs_status_set(r->st, r->err, GS_R_OTHER, "%s", r->err == GS_EOK ? "" : "the UID is a pod's");
    return;
  }
  r->err = GS_ENOFIT;
  if (r->n == 1 && r->pod != NULL) {
    /* GPUs held for pods nominated to the node are not the consumer's
     * (hold.h): the node as it sees it, or no room at all */
    const struct gs_node *node = gs_ledger_node_get(ledger, r->nodes[0]);
    switch (node != NULL ? gs__holds_view(r->fw->holds, node, r->pod, &r->held, r->held_gpus,
                                          r->st)
                         : GS_ESKIP) {
    case GS_EOK:
      r->view = &r->held;
      break;
    case GS_ESKIP:
      break;
    default:
      return;
    }
  }
  if (r->n == 1 && r->req->mib_per_gpu > 0) {
    /* on the node chosen, the GPUs the plugins' Reserve gives the gpu-mem
     * pod of the claim's shape (nodePolicy frag: the least-delta GPU, as a
     * gpu-mem pod gets, and as the claim was scored) */
    const struct gs_node *node =
        r->view != NULL ? r->view : gs_ledger_node_get(ledger, r->nodes[0]);
    struct gs_pod_request pod;
    memset(&pod, 0, sizeof pod);
    snprintf(pod.ns, sizeof pod.ns, "%s", r->ns);
    snprintf(pod.name, sizeof pod.name, "%s", r->name);
    snprintf(pod.uid, sizeof pod.uid, "%s", r->uid);
    pod.priority = r->pod != NULL ? r->pod->priority : 0;
    if (node != NULL && gs_claim_shape_pod(r->req, policy->unit_mib, &pod) &&
        gs__fw_pick_locked(r->fw, &pod, node, r->now_ns, &c.choice, r->st) == GS_EOK &&
        c.choice.ngpus == r->req->count) {
      snprintf(c.node, sizeof c.node, "%s", node->name);
      c.choice.mib_per_gpu = r->req->mib_per_gpu;
      r->err = GS_EOK;
    }
  }
  if (r->err != GS_EOK && r->view != NULL) {
    int64_t score;
    r->err = gs_claim_fit_node(r->view, policy, r->req, &c, &score, r->st);
  } else if (r->err != GS_EOK) {
    r->err = gs_claim_place(ledger, r->nodes, r->n, policy, r->req, &c, r->st);
  }
  if (r->err != GS_EOK)
    return;
  gs_claim_charge(&c, r->ns, r->name, r->uid, r->req->mib_per_gpu, parts, &a);
  a.state = GS_ALLOC_ASSUMED;
  a.assume_time_ns = r->now_ns;
  r->err = gs_ledger_claim_set(ledger, &a);
  if (r->err == GS_EOK && r->pod != NULL)
    (void)gs__holds_drop(r->fw->holds, r->pod->uid); /* placed: its nomination is done */
  if (r->err == GS_EOK)
    *r->ret = c;
  else
    gs_status_set(r->st, r->err, GS_R_OTHER, "cannot record the claim: %s", gs_strerror(r->err));
}

enum gs_err gs_fw_claim_reserve(struct gs_sched *fw, const struct gs_pod_request *pod,
                                const char *const *nodes, size_t n,
                                const struct gs_claim_request *req, const char *ns,
                                const char *name, const char *uid, int64_t now_ns,
                                struct gs_claim_choice *ret, struct gs_status *st) {
  struct reserve_call r = {.fw = fw, .pod = pod, .nodes = nodes, .n = n, .req = req, .ns = ns,
                           .name = name, .uid = uid, .now_ns = now_ns, .ret = ret, .st = st,
                           .err = GS_EOK};
  gs__fw_write(fw, reserve_fn, &r);
  return r.err;
}

bool gs_sched_claim_shape(const struct gs_sched *s, const struct gs_claim_request *req,
                          struct gs_pod_request *pod) {
  if (!gs_claim_shape_pod(req, s->policy.unit_mib, pod))
    return false;
  /* a gang of claim pods waits in Permit on its claims (claim_gang.c):
   * its shape is no member of a gang the gang plugin would plan, whose
   * placeholders would charge the ledger beside the claims */
  pod->gang_job[0] = '\0';
  pod->gang_replicas = 0;
  return true;
}

enum gs_err gs_fw_claim_filter(struct gs_sched *fw, const struct gs_pod_request *pod,
                               const char *const *nodes, size_t n,
                               const struct gs_claim_request *req, struct gs_node_result *ret) {
  enum gs_err worst = GS_ENOFIT;
  pthread_rwlock_rdlock(&fw->lock);
  for (size_t i = 0; i < n; i++) {
    struct gs_status st = {GS_EOK, GS_R_OTHER, ""};
    struct gs_gpu held_gpus[GS_MAX_GPUS];
    struct gs_node held;
    const struct gs_node *node = gs_ledger_node_get(fw->ledger, nodes[i]);
    int64_t score = 0;
    enum gs_err e;
    /* GPUs held for pods nominated here are not the consumer's (hold.h) */
    switch (pod != NULL && node != NULL
                ? gs__holds_view(fw->holds, node, pod, &held, held_gpus, &st)
                : GS_ESKIP) {
    case GS_EOK:
      e = gs_claim_fit_node(&held, &fw->policy, req, NULL, &score, &st);
      break;
    case GS_ESKIP:
      e = gs_claim_fit_node(node, &fw->policy, req, NULL, &score, &st);
      break;
    default:
      e = GS_ENOFIT; /* st: the hold's reason */
      break;
    }
    ret[i].status = st;
    ret[i].code = e;
    ret[i].score100 = e == GS_EOK ? score : 0;
    ret[i].score = (ret[i].score100 + 5) / 10;
    if (e == GS_EOK)
      worst = GS_EOK;
  }
  pthread_rwlock_unlock(&fw->lock);
  return n == 0 ? GS_EOK : worst;
}
