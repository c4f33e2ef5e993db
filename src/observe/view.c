/* The views both front ends serve (view.h): read under the service's read
 * lock, written by src/api. */
#include "view.h"

#include "api.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct view_call {
  const char *node;
  bool inspect;
  uint32_t pending_unit_mib;
  const char *config_error;
  enum gs_err err;
  json_t *out;
  json_t *gangs; /* the ledger view's "gangs" (not for inspect) */
};

/* docs/api.md "gangs": {"job":"ns/job","replicas":R,"placed":P,
 * "nodes":{"node":[gpu,...]}} for every plan still holding slots. */
static void gang_json(void *arg, const struct gs_plan_view *g) {
  struct view_call *v = arg;
  gs_api_plan_append(v->gangs, g);
}

static void view_fn(const struct gs_ledger *ledger, void *arg) {
  struct view_call *v = arg;
  struct gs_api_ledger_view view = {v->pending_unit_mib, v->gangs, v->config_error};
  if (v->inspect)
    v->err = gs_api_inspect_json(ledger, v->node, &v->out);
  else
    v->err = gs_api_ledger_json(ledger, v->node, &view, &v->out);
}

enum gs_err gs__view_json(struct gs_sched *sched, const char *node, bool inspect,
                          struct gs__feed_config *cfg, char **ret) {
  char error[GS_FEED_CONFIG_ERROR_MAX];
  struct view_call v = {node,    inspect, atomic_load(&cfg->pending_unit),
                        NULL,    GS_EOK,  NULL,
                        NULL};
  if (gs__feed_config_error(cfg, error, sizeof error))
    v.config_error = error;
  *ret = NULL;
  if (!inspect && (v.gangs = json_array()) == NULL)
    return GS_ENOMEM;
  gs_sched_read(sched, view_fn, inspect ? NULL : gang_json, &v);
  json_decref(v.gangs);
  if (v.err == GS_EOK && v.out == NULL)
    v.err = GS_ENOMEM;
  if (v.err == GS_EOK && (*ret = gs_api_dump(v.out)) == NULL)
    v.err = GS_ENOMEM;
  json_decref(v.out);
  return v.err;
}

/* MiB that DRA claims hold on each GPU of n (claimed[g]); the number of
 * claims on n. */
static size_t node_claims(const struct gs_ledger *ledger, const struct gs_node *n,
                          uint64_t claimed[GS_MAX_GPUS]) {
  size_t count = 0;
  memset(claimed, 0, GS_MAX_GPUS * sizeof *claimed);
  for (size_t i = 0; i < gs_ledger_node_alloc_count(ledger, n->name); i++) {
    const struct gs_alloc *a = gs_ledger_node_alloc_at(ledger, n->name, i);
    if (a == NULL || a->kind != GS_ALLOC_CLAIM)
      continue;
    count++;
    for (uint32_t p = 0; p < a->nparts; p++)
      if (a->parts[p].gpu < n->ngpus)
        claimed[a->parts[p].gpu] +=
            gs_ledger_part_charge_mib(&n->gpus[a->parts[p].gpu], a, &a->parts[p]);
  }
  return count;
}

static void gauges_fn(const struct gs_ledger *ledger, void *arg) {
  struct gs_metrics *mx = arg;
  const char *none[] = {NULL};
  size_t claims = 0;
  uint64_t claimed[GS_MAX_GPUS];
  gs_metrics_gauge_reset(mx, "gpushare_gpu_memory_claimed_mib");
  gs_metrics_gauge_reset(mx, "gpushare_gpu_memory_used_mib");
  gs_metrics_gauge_reset(mx, "gpushare_gpu_memory_total_mib");
  gs_metrics_gauge_reset(mx, "gpushare_gpu_pods");
  gs_metrics_gauge_reset(mx, "gpushare_gpu_owned");
  for (size_t i = 0; i < gs_ledger_node_count(ledger); i++) {
    const struct gs_node *n = gs_ledger_node_at(ledger, i);
    size_t c = node_claims(ledger, n, claimed);
    claims += c;
    for (uint32_t g = 0; g < n->ngpus; g++) {
      char idx[16];
      const char *labels[] = {"node", n->name, "gpu", idx, NULL};
      snprintf(idx, sizeof idx, "%" PRIu32, n->gpus[g].index);
      gs_metrics_gauge_set(mx, "gpushare_gpu_memory_used_mib", "GPU memory allocated, MiB.",
                           labels, (double)n->gpus[g].used_mib);
      gs_metrics_gauge_set(mx, "gpushare_gpu_memory_total_mib", "GPU memory capacity, MiB.",
                           labels, (double)n->gpus[g].total_mib);
      gs_metrics_gauge_set(mx, "gpushare_gpu_pods", "Pods holding a share of the GPU.", labels,
                           (double)n->gpus[g].npods);
      if (c > 0)
        gs_metrics_gauge_set(mx, "gpushare_gpu_memory_claimed_mib",
                             "GPU memory held by DRA ResourceClaims, MiB (docs/dra.md).", labels,
                             (double)claimed[g]);
      /* whole GPUs have no memory figures: who owns them is the gauge */
      if (n->mode == GS_MODE_TOPOLOGY)
        gs_metrics_gauge_set(mx, "gpushare_gpu_owned",
                             "1 while a whole-GPU (topology) pod owns the GPU.", labels,
                             n->gpus[g].owner != NULL ? 1 : 0);
    }
  }
  gs_metrics_gauge_set(mx, "gpushare_pods", "Pods holding GPU allocations (incl. assumed).", none,
                       (double)(gs_ledger_alloc_count(ledger) - claims));
}

void gs__view_gauges(struct gs_sched *sched, struct gs__feed_config *cfg, struct gs_metrics *m) {
  const char *none[] = {NULL};
  char error[GS_FEED_CONFIG_ERROR_MAX];
  gs_metrics_gauge_set(m, "gpushare_pending_unit_mib",
                       "gpuMemoryUnit waiting for a restart (0: none).", none,
                       (double)atomic_load(&cfg->pending_unit));
  gs_metrics_gauge_set(m, "gpushare_config_invalid",
                       "1 while the ConfigMap holds an invalid value (the running "
                       "configuration stays; /debug/ledger configError says which).",
                       none, gs__feed_config_error(cfg, error, sizeof error) ? 1 : 0);
  gs_metrics_gauge_set(m, "gpushare_gangs_waiting", "Gang plans holding slots not yet bound.",
                       none, (double)gs_sched_plans_waiting(sched));
  gs_sched_read(sched, gauges_fn, NULL, m);
}
