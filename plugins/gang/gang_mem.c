/* gang: plans of memory-shared gangs (gang_int.h, docs/gangs.md). Each
 * empty slot is placed as gpumem would place one member (gs_place_pick on
 * the node's view) and held at once, so that the next slot sees it: the R
 * slots of a job may share a GPU exactly as R separate pods would. Runs in
 * pre_filter, under the framework's write lock. */
#include "gang_int.h"

#include <gpushare/alloc.h>

#include <stdio.h>
#include <string.h>

/* Does the job already hold a slot on node? */
static bool uses(const struct gang *g, const char *node) {
  for (uint32_t j = 0; j < g->replicas; j++)
    if (g->slots[j].state != SLOT_EMPTY && strcmp(g->slots[j].node, node) == 0)
      return true;
  return false;
}

/* The request of one member of the job's shape, for placement: its memory
 * on container 0, its GPU count, the job's labels. */
static void shape_request(const struct gang *g, struct gs_pod_request *ret) {
  memset(ret, 0, sizeof *ret);
  snprintf(ret->ns, sizeof ret->ns, "%s", g->ns);
  snprintf(ret->name, sizeof ret->name, "%s", g->job);
  ret->ncontainers = 1;
  ret->mem_units[0] = g->shape.mem;
  ret->gpu_count = g->shape.count;
}

uint32_t gs__gang_plan_mem(struct gs_ledger *ledger, struct gang *g, const struct gs_policy *policy,
                           int64_t now) {
  uint32_t filled = 0, planned = 0;
  uint32_t *which = gs_calloc(g->replicas, sizeof *which);
  int64_t old_plan = g->plan_ns;
  struct gs_pod_request req;
  size_t nn = gs_ledger_node_count(ledger);

  if (which == NULL)
    return 0;
  shape_request(g, &req);
  for (uint32_t r = 0; r < g->replicas; r++)
    filled += g->slots[r].state != SLOT_EMPTY;
  g->plan_ns = now; /* the placeholders' reservation time */
  for (uint32_t r = 0; r < g->replicas; r++) {
    struct slot *s = &g->slots[r];
    struct gs_choice best = {0}, choice;
    const struct gs_node *best_node = NULL;
    bool best_own = false;
    if (s->state != SLOT_EMPTY)
      continue;
    for (size_t i = 0; i < nn; i++) {
      const struct gs_node *n = gs_ledger_node_at(ledger, i);
      struct gs_status st;
      bool own;
      if (gs_place_pick(n, &req, policy, &choice, &st) != GS_EOK)
        continue;
      own = uses(g, n->name);
      /* the job's own nodes first, then the best score under the policy;
       * the first node on ties */
      if (best_node == NULL || (own && !best_own) ||
          (own == best_own && choice.score > best.score)) {
        best = choice;
        best_node = n;
        best_own = own;
      }
    }
    if (best_node == NULL)
      break;
    snprintf(s->node, sizeof s->node, "%s", best_node->name);
    s->gpus = 0;
    for (uint32_t i = 0; i < best.ngpus; i++)
      s->gpus |= UINT64_C(1) << best.gpus[i];
    s->mib_per_gpu = best.mib_per_gpu;
    s->member[0] = '\0';
    gs__gang_placeholder_uid(g, r, s->placeholder, sizeof s->placeholder);
    if (gs__gang_hold(ledger, g, s) != GS_EOK)
      break;
    s->state = SLOT_HELD;
    which[planned++] = r;
  }
  if (filled + planned < g->replicas) {
    /* not all: what this call held goes back */
    for (uint32_t i = 0; i < planned; i++)
      gs__gang_unhold(ledger, &g->slots[which[i]]);
    g->plan_ns = old_plan;
    filled += planned;
  } else if (planned == 0) {
    g->plan_ns = old_plan; /* nothing was empty: no new plan */
  } else {
    filled = g->replicas;
  }
  gs_free(which);
  return filled;
}
