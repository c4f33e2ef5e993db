/* Placing a DRA claim (gpushare/claim.h, docs/dra.md): a memory claim is
 * placed as the gpu-mem pod of the same shape would be (gs_place_pick), a
 * whole-device claim on GPUs nothing touches — on a topology node as the
 * whole-GPU pod of the same count would be (gs_place_pick: its NVLink set,
 * verdict and score), elsewhere by free-GPU count with the set chosen as
 * that pod's chooser chooses it (gs_place_choose_default). */
#include <gpushare/claim.h>

#include "caps.h"

#include <gpushare/plugin.h> /* GS_SCORE_MAX */

#include <stdio.h>
#include <string.h>

/* The gpu-mem pod a memory claim is placed as. */
/* pod asking no GPU, on one container at least. */
static void no_gpu(struct gs_pod_request *pod) {
  if (pod->ncontainers == 0)
    pod->ncontainers = 1;
  memset(pod->mem_units, 0, sizeof pod->mem_units);
  memset(pod->whole_gpus, 0, sizeof pod->whole_gpus);
  pod->init_mem_units = pod->init_whole_gpus = 0;
  pod->gpu_count = 0;
  pod->gpu_count_text[0] = '\0';
}

bool gs_claim_shape_pod(const struct gs_claim_request *req, uint32_t unit_mib,
                        struct gs_pod_request *pod) {
  if (req->mib_per_gpu == 0 || unit_mib == 0 || req->count == 0 || req->count > GS_MAX_GPUS)
    return false;
  uint64_t units = (req->mib_per_gpu + unit_mib - 1) / unit_mib;
  no_gpu(pod);
  pod->mem_units[0] = units * req->count;
  pod->gpu_count = req->count;
  return true;
}

bool gs_claim_shape_whole_pod(const struct gs_claim_request *req, struct gs_pod_request *pod) {
  if (req->count == 0 || req->count > GS_MAX_GPUS)
    return false;
  no_gpu(pod);
  pod->whole_gpus[0] = req->count;
  return true;
}

/* The pod a claim is weighed as: the gpu-mem pod of its shape, or for
 * whole devices the whole-GPU pod (aliyun.com/gpu: count). */
static void as_pod(const struct gs_claim_request *req, uint32_t unit_mib,
                   struct gs_pod_request *pod) {
  memset(pod, 0, sizeof *pod);
  snprintf(pod->ns, sizeof pod->ns, "dra");
  snprintf(pod->name, sizeof pod->name, "claim");
  pod->ncontainers = 1;
  if (req->mib_per_gpu == 0)
    pod->whole_gpus[0] = req->count; /* check() bounds it to 1..GS_MAX_GPUS */
  else
    (void)gs_claim_shape_pod(req, unit_mib, pod);
}

/* Free whole GPUs of node as a mask. */
static uint64_t free_gpus(const struct gs_node *node) {
  uint64_t mask = 0;
  for (uint32_t g = 0; g < node->ngpus; g++) {
    const struct gs_gpu *gpu = &node->gpus[g];
    if (gpu->healthy && gpu->owner == NULL && gpu->npods == 0 && gpu->used_mib == 0)
      mask |= UINT64_C(1) << g;
  }
  return mask;
}

static bool better(int64_t score, const char *name, int64_t best, const char *best_name) {
  if (best_name == NULL)
    return true;
  if (score != best)
    return score > best;
  return strcmp(name, best_name) < 0;
}

/* Node's choice for req and its score (0..GS_SCORE_MAX, higher better for
 * the policy), or GS_ENOFIT with *why. */
static enum gs_err fit_one(const struct gs_node *node, const struct gs_policy *policy,
                           const struct gs_claim_request *req, const struct gs_pod_request *pod,
                           struct gs_choice *c, int64_t *score, struct gs_status *why) {
  if (req->mib_per_gpu == 0 && node->mode == GS_MODE_TOPOLOGY) {
    /* the whole-GPU pod's decision, whole: the NVLink set that keeps the
     * best sets free (docs/topology.md), its refusals and its score, as
     * the gpumem plugin takes them for that pod (score × 10) */
    if (gs_place_pick(node, pod, policy, c, why) != GS_EOK)
      return GS_ENOFIT;
    c->mib_per_gpu = 0;
    *score = c->score * (GS_SCORE_MAX / 10);
    return GS_EOK;
  }
  if (req->mib_per_gpu == 0) {
    uint64_t mask = free_gpus(node);
    uint32_t nfree = (uint32_t)__builtin_popcountll(mask);
    if (node->mode == GS_MODE_NONE || nfree < req->count)
      return gs_status_set(why, GS_ENOFIT, GS_R_INSUFFICIENT_WHOLE_GPUS,
                           "fewer than %u free whole GPUs", (unsigned)req->count);
    memset(c, 0, sizeof *c);
    /* the set as the whole-GPU pod's chooser takes it: the NVLink choice
     * on a node with a topology, else the lowest indices */
    if (gs_place_choose_default(NULL, node, pod, policy, mask, req->count, 0, c->gpus, why) !=
        GS_EOK)
      return GS_ENOFIT;
    c->ngpus = req->count; /* ascending, as the chooser answers them */
    /* binpack: the node left with the fewest free GPUs; spread: the most */
    *score = policy->node_policy == GS_PLACE_SPREAD
                 ? (int64_t)nfree * GS_SCORE_MAX / GS_MAX_GPUS
                 : (int64_t)(GS_MAX_GPUS - nfree) * GS_SCORE_MAX / GS_MAX_GPUS;
    return GS_EOK;
  }
  if (gs_place_pick(node, pod, policy, c, why) != GS_EOK)
    return GS_ENOFIT;
  c->mib_per_gpu = req->mib_per_gpu;
  *score = c->score * (GS_SCORE_MAX / 10);
  return GS_EOK;
}

static enum gs_err check(const struct gs_claim_request *req, struct gs_status *st) {
  if (req->count == 0 || req->count > GS_MAX_GPUS)
    return gs_status_set(st, GS_EUNRESOLVABLE, GS_R_INVALID_POD,
                         "a claim of %u GPUs: 1..%u per claim", (unsigned)req->count,
                         (unsigned)GS_MAX_GPUS);
  if (req->mib_per_gpu > GS__PART_MIB_MAX)
    return gs_status_set(st, GS_EUNRESOLVABLE, GS_R_INVALID_POD,
                         "a claim of more memory per GPU than any GPU has");
  return GS_EOK;
}

enum gs_err gs_claim_place(const struct gs_ledger *ledger, const char *const *nodes, size_t n,
                           const struct gs_policy *policy, const struct gs_claim_request *req,
                           struct gs_claim_choice *ret, struct gs_status *st) {
  struct gs_pod_request pod;
  struct gs_choice best = {0}, c;
  struct gs_status why = {GS_ENOFIT, GS_R_NODE_UNKNOWN, "no node offered"};
  const char *best_name = NULL;
  int64_t best_score = 0;

  if (check(req, st) != GS_EOK)
    return GS_EUNRESOLVABLE;
  as_pod(req, policy->unit_mib, &pod);
  for (size_t i = 0; i < n; i++) {
    const struct gs_node *node = gs_ledger_node_get(ledger, nodes[i]);
    int64_t score;
    if (node == NULL || fit_one(node, policy, req, &pod, &c, &score, &why) != GS_EOK)
      continue;
    if (better(score, node->name, best_score, best_name)) {
      best = c;
      best_score = score;
      best_name = node->name;
    }
  }
  if (best_name == NULL) {
    if (st != NULL)
      *st = why;
    return GS_ENOFIT;
  }
  snprintf(ret->node, sizeof ret->node, "%s", best_name);
  ret->choice = best;
  return gs_status_set(st, GS_EOK, GS_R_OTHER, "%s", "");
}

enum gs_err gs_claim_fit_node(const struct gs_node *node, const struct gs_policy *policy,
                              const struct gs_claim_request *req, struct gs_claim_choice *ret,
                              int64_t *score, struct gs_status *st) {
  struct gs_pod_request pod;
  struct gs_choice c;
  *score = 0;
  if (check(req, st) != GS_EOK)
    return GS_EUNRESOLVABLE;
  if (node == NULL)
    return gs_status_set(st, GS_ENOFIT, GS_R_NODE_UNKNOWN, "node not managed by gpushare");
  as_pod(req, policy->unit_mib, &pod);
  if (fit_one(node, policy, req, &pod, &c, score, st) != GS_EOK)
    return GS_ENOFIT;
  if (ret != NULL) {
    snprintf(ret->node, sizeof ret->node, "%s", node->name);
    ret->choice = c;
  }
  return gs_status_set(st, GS_EOK, GS_R_OTHER, "%s", "");
}

enum gs_err gs_claim_fit(const struct gs_ledger *ledger, const char *node_name,
                         const struct gs_policy *policy, const struct gs_claim_request *req,
                         int64_t *score, struct gs_status *st) {
  return gs_claim_fit_node(gs_ledger_node_get(ledger, node_name), policy, req, NULL, score, st);
}

void gs_claim_charge(const struct gs_claim_choice *c, const char *ns, const char *name,
                     const char *uid, uint64_t mib_per_gpu, struct gs_alloc_part *parts,
                     struct gs_alloc *ret_alloc) {
  for (uint32_t i = 0; i < c->choice.ngpus; i++)
    parts[i] = (struct gs_alloc_part){.container = i, .gpu = c->choice.gpus[i],
                                      .units = mib_per_gpu ? mib_per_gpu : GS_CLAIM_WHOLE};
  *ret_alloc = (struct gs_alloc){.ns = ns, .name = name, .uid = uid, .node = c->node,
                                 .kind = GS_ALLOC_CLAIM, .state = GS_ALLOC_BOUND,
                                 .unit_mib = GS_CLAIM_UNIT_MIB, .nparts = c->choice.ngpus,
                                 .parts = parts, .priority = INT32_MAX};
}
