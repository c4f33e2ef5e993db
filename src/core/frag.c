/* Fragmentation-aware placement (nodePolicy: frag): the request
 * distribution, a node's fragmentation under it, and what a placement does
 * to it (place.h). Pure, like the rest of placement. */
#include <gpushare/place.h>

#include "place_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void gs_frag_dist_init(struct gs_frag_dist *d) { memset(d, 0, sizeof *d); }

void gs_frag_dist_add(struct gs_frag_dist *d, uint32_t k, uint64_t mib_per_gpu) {
  gs_frag_dist_add_host(d, k, mib_per_gpu, 0, 0);
}

/* Sums stay far below 2^63: GS_FRAG_WINDOW requests of at most
 * GS_HOST_REQ_MAX each. */
#define GS_HOST_REQ_MAX (UINT64_C(1) << 40)

void gs_frag_dist_add_host(struct gs_frag_dist *d, uint32_t k, uint64_t mib_per_gpu,
                           uint64_t cpu_milli, uint64_t mem_mib) {
  uint32_t i, light = 0;
  if (k == 0 || mib_per_gpu == 0)
    return;
  for (i = 0; i < d->n; i++)
    if (d->c[i].k == k && d->c[i].mib == mib_per_gpu)
      break;
  if (i == d->n) {
    if (d->n < GS_FRAG_CLASSES) {
      d->n++;
    } else {
      for (uint32_t j = 1; j < d->n; j++)
        if (d->c[j].weight < d->c[light].weight)
          light = j;
      i = light;
      d->total -= d->c[i].weight;
    }
    d->c[i] = (struct gs_frag_class){.k = k, .mib = mib_per_gpu};
  }
  d->c[i].weight++;
  d->c[i].cpu_sum += cpu_milli < GS_HOST_REQ_MAX ? cpu_milli : GS_HOST_REQ_MAX;
  d->c[i].mem_sum += mem_mib < GS_HOST_REQ_MAX ? mem_mib : GS_HOST_REQ_MAX;
  d->total++;
  if (d->total > GS_FRAG_WINDOW) {
    uint32_t w = 0;
    d->total = 0;
    for (uint32_t j = 0; j < d->n; j++) {
      d->c[j].weight /= 2;
      d->c[j].cpu_sum /= 2;
      d->c[j].mem_sum /= 2;
      if (d->c[j].weight > 0) {
        d->c[w++] = d->c[j];
        d->total += d->c[j].weight;
      }
    }
    d->n = w;
  }
}

/* What one GPU offers memory requests: its free memory (0 when unhealthy
 * or owned: nobody shares it), and whether the cgpu cap closes it. */
struct frag_gpu {
  uint64_t free;
  bool capped;
};

/* A node as the policy sees it: its GPUs and the host room left. */
struct frag_node {
  struct frag_gpu g[GS_MAX_GPUS];
  uint32_t n;
  uint64_t all;              /* free memory of all GPUs */
  bool cpu_known, mem_known; /* host resources reported */
  uint64_t cpu_free, mem_free;
};

static uint64_t sub0(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

static bool cgpu_capped(const struct gs_node *node, const struct gs_policy *policy,
                        uint32_t npods) {
  return node->mode == GS_MODE_CGPU && policy->cgpu_max_pods != 0 &&
         npods >= policy->cgpu_max_pods;
}

static void frag_node_init(const struct gs_node *node, const struct gs_policy *policy,
                           struct frag_node *fn) {
  fn->n = node->ngpus < GS_MAX_GPUS ? node->ngpus : GS_MAX_GPUS;
  fn->all = 0;
  for (uint32_t g = 0; g < fn->n; g++) {
    const struct gs_gpu *gpu = &node->gpus[g];
    bool shared = gpu->healthy && gpu->owner == NULL;
    fn->g[g].free = shared ? gpu_free_mib(gpu) : 0;
    fn->g[g].capped = cgpu_capped(node, policy, gpu->npods);
    fn->all += fn->g[g].free;
  }
  fn->cpu_known = node->host.cpu_milli > 0;
  fn->mem_known = node->host.mem_mib > 0;
  fn->cpu_free = sub0(node->host.cpu_milli, node->host.cpu_used_milli);
  fn->mem_free = sub0(node->host.mem_mib, node->host.mem_used_mib);
}

/* Takes a host request out of the node's room (nothing when unknown). */
static void frag_node_take_host(struct frag_node *fn, uint64_t cpu_milli, uint64_t mem_mib) {
  fn->cpu_free = sub0(fn->cpu_free, cpu_milli);
  fn->mem_free = sub0(fn->mem_free, mem_mib);
}

/* Whether the node's host has room for a class's mean request. */
static bool host_fits(const struct frag_node *fn, const struct gs_frag_class *c) {
  uint64_t w = c->weight ? c->weight : 1;
  return (!fn->cpu_known || c->cpu_sum / w <= fn->cpu_free) &&
         (!fn->mem_known || c->mem_sum / w <= fn->mem_free);
}

/* Fragmentation of the node for one class: the free memory it cannot use. */
static uint64_t frag_of_class(const struct frag_node *fn, const struct gs_frag_class *c) {
  uint64_t unusable = 0;
  uint32_t fit = 0;
  if (!host_fits(fn, c))
    return fn->all;
  for (uint32_t i = 0; i < fn->n; i++) {
    if (fn->g[i].free >= c->mib && !fn->g[i].capped)
      fit++;
    else
      unusable += fn->g[i].free;
  }
  return fit >= c->k ? unusable : fn->all;
}

/* A class's weight: its requests times the memory each asks (k × mib).
 * Counting requests alone let the rare 8-GPU jobs, which need a whole
 * empty node, weigh almost nothing, and they were the first to fail in
 * the trace replay (docs/benchmarks.md, pack): weighting by the memory
 * asked measures fragmentation in the resource it wastes. Doubles: the
 * product outgrows 64 bits for absurd requests. */
static double class_weight(const struct gs_frag_class *c) {
  return (double)c->weight * (double)c->k * (double)c->mib;
}

/* Weighted average over the classes. */
static double frag_avg(const struct frag_node *fn, const struct gs_frag_dist *d) {
  double sum = 0, total = 0;
  for (uint32_t c = 0; c < d->n; c++) {
    double w = class_weight(&d->c[c]);
    sum += w * (double)frag_of_class(fn, &d->c[c]);
    total += w;
  }
  return total > 0 ? sum / total : 0;
}

/* d, or when nothing is learnt yet the request itself as the workload. */
static const struct gs_frag_dist *dist_or_self(const struct gs_frag_dist *d, uint32_t k,
                                               uint64_t mib, uint64_t cpu_milli,
                                               uint64_t mem_mib, struct gs_frag_dist *self) {
  if (d != NULL && d->total > 0)
    return d;
  gs_frag_dist_init(self);
  gs_frag_dist_add_host(self, k, mib, cpu_milli, mem_mib);
  return self;
}

int64_t gs_place_frag_delta(const struct gs_node *node, const struct gs_policy *policy,
                            const struct gs_frag_dist *d, const uint32_t *gpus, uint32_t k,
                            uint64_t mib_per_gpu, uint64_t cpu_milli, uint64_t mem_mib) {
  struct frag_node fn;
  struct gs_frag_dist self;
  double before, after;
  d = dist_or_self(d, k, mib_per_gpu, cpu_milli, mem_mib, &self);
  frag_node_init(node, policy, &fn);
  before = frag_avg(&fn, d);
  for (uint32_t i = 0; i < k; i++) {
    uint32_t x = gpus[i];
    uint64_t left;
    if (x >= fn.n)
      continue;
    left = sub0(fn.g[x].free, mib_per_gpu);
    fn.all -= fn.g[x].free - left;
    fn.g[x].free = left;
    if (cgpu_capped(node, policy, node->gpus[x].npods + 1))
      fn.g[x].capped = true;
  }
  frag_node_take_host(&fn, cpu_milli, mem_mib);
  after = frag_avg(&fn, d);
  return (int64_t)llround(after - before);
}

int64_t gs_place_frag_delta_score(int64_t delta, int64_t scale_mib) {
  int64_t s;
  if (scale_mib <= 0)
    return delta > 0 ? 0 : delta < 0 ? 10 : 5;
  /* delta -scale → 10, 0 → 5, +scale → 0; rounded half up. */
  if (delta <= -scale_mib)
    return 10;
  if (delta >= scale_mib)
    return 0;
  s = (10 * (scale_mib - delta) + scale_mib) / (2 * scale_mib);
  return s < 0 ? 0 : s > 10 ? 10 : s;
}

int64_t gs_place_frag_score(const struct gs_node *node, const struct gs_policy *policy,
                            const struct gs_frag_dist *d, const struct gs_pod_request *req,
                            const struct gs_choice *choice) {
  int64_t placed = (int64_t)(choice->mib_per_gpu * choice->ngpus), delta;
  if (placed <= 0)
    return choice->score; /* whole GPUs: the fill score */
  delta = gs_place_frag_delta(node, policy, d, choice->gpus, choice->ngpus, choice->mib_per_gpu,
                              req ? req->cpu_milli : 0, req ? req->mem_mib : 0);
  return gs_place_frag_delta_score(delta, placed);
}

/* Per class, what one GPU changing free memory does to the node's
 * fragmentation, without a pass over the node per candidate: the counts of
 * GPUs that fit and the memory that does not are kept per class, and
 * whether the host has room before and after the pod's host request. */
struct frag_class_state {
  uint32_t fit;      /* GPUs that can take the class */
  uint64_t unusable; /* free memory of the GPUs that cannot */
  bool host0, host1; /* the host has room for the class, before / after */
};

enum gs_code gs_place_choose_frag(void *ctx, const struct gs_node *node,
                                 const struct gs_pod_request *req,
                                 const struct gs_policy *policy, uint64_t candidates, uint32_t k,
                                 uint64_t mib_per_gpu, uint32_t ret_gpus[GS_MAX_GPUS],
                                 char reason[GS_REASON_MAX]) {
  const struct gs_frag_dist *d;
  struct gs_frag_dist self;
  struct frag_node fn, after_host;
  struct frag_class_state cs[GS_FRAG_CLASSES];
  uint64_t best_key = UINT64_MAX, cpu = req ? req->cpu_milli : 0, mem = req ? req->mem_mib : 0;
  double best_delta = HUGE_VAL;
  uint32_t best = GS_MAX_GPUS;
  if (k != 1 || mib_per_gpu == 0)
    return gs_place_choose_default(NULL, node, req, policy, candidates, k, mib_per_gpu,
                                   ret_gpus, reason);
  d = dist_or_self(ctx, 1, mib_per_gpu, cpu, mem, &self);
  frag_node_init(node, policy, &fn);
  after_host = fn;
  frag_node_take_host(&after_host, cpu, mem);
  for (uint32_t c = 0; c < d->n; c++) {
    cs[c].fit = 0;
    cs[c].unusable = 0;
    cs[c].host0 = host_fits(&fn, &d->c[c]);
    cs[c].host1 = host_fits(&after_host, &d->c[c]);
    for (uint32_t i = 0; i < fn.n; i++) {
      if (fn.g[i].free >= d->c[c].mib && !fn.g[i].capped)
        cs[c].fit++;
      else
        cs[c].unusable += fn.g[i].free;
    }
  }
  for (uint32_t x = 0; x < fn.n; x++) {
    uint64_t after, key;
    double delta = 0; /* compared only: the weighted sum, not the average */
    bool capped;
    if (!(candidates >> x & 1))
      continue;
    after = sub0(fn.g[x].free, mib_per_gpu);
    capped = fn.g[x].capped || cgpu_capped(node, policy, node->gpus[x].npods + 1);
    for (uint32_t c = 0; c < d->n; c++) {
      uint64_t m = d->c[c].mib;
      bool ok0 = fn.g[x].free >= m && !fn.g[x].capped, ok1 = after >= m && !capped;
      uint32_t fit = cs[c].fit - ok0 + ok1;
      uint64_t unusable = cs[c].unusable - (ok0 ? 0 : fn.g[x].free) + (ok1 ? 0 : after);
      uint64_t all1 = fn.all - (fn.g[x].free - after);
      uint64_t before_c = cs[c].host0 && cs[c].fit >= d->c[c].k ? cs[c].unusable : fn.all;
      uint64_t after_c = cs[c].host1 && fit >= d->c[c].k ? unusable : all1;
      delta += class_weight(&d->c[c]) * ((double)after_c - (double)before_c);
    }
    key = gs__place_mem_key(node, policy, mib_per_gpu, x);
    if (delta < best_delta || (delta == best_delta && key < best_key)) {
      best_delta = delta;
      best_key = key;
      best = x;
    }
  }
  if (best == GS_MAX_GPUS) {
    if (reason != NULL)
      snprintf(reason, GS_REASON_MAX, "fewer than %u usable GPUs", (unsigned)k);
    return GS_CODE_UNSCHEDULABLE;
  }
  ret_gpus[0] = best;
  return GS_CODE_SUCCESS;
}
