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

void gs_frag_table_build(struct gs_frag_table *t, const struct gs_frag_dist *d) {
  t->n = 0;
  t->total = 0;
  for (uint32_t i = 0; d != NULL && i < d->n && i < GS_FRAG_CLASSES; i++) {
    const struct gs_frag_class *c = &d->c[i];
    struct gs_frag_entry e;
    uint32_t j;
    if (c->weight == 0 || c->k == 0 || c->mib == 0)
      continue;
    e = (struct gs_frag_entry){
        .k = c->k,
        .mib = c->mib,
        .weight = (double)c->weight,
        .cpu_inv = c->cpu_sum ? (double)c->weight / (double)c->cpu_sum : 0,
        .mem_inv = c->mem_sum ? (double)c->weight / (double)c->mem_sum : 0,
    };
    /* Largest per-GPU memory first: a node's GPUs are then counted for
     * every class in one pass (frag_states). */
    for (j = t->n; j > 0 && t->c[j - 1].mib < e.mib; j--)
      t->c[j] = t->c[j - 1];
    t->c[j] = e;
    t->n++;
    t->total += e.weight;
  }
}

/* The table of one class: the request itself, when nothing is learnt. */
static const struct gs_frag_table *table_or_self(const struct gs_frag_table *t, uint32_t k,
                                                 uint64_t mib, uint64_t cpu_milli,
                                                 uint64_t mem_mib, struct gs_frag_table *self) {
  struct gs_frag_dist d;
  if (t != NULL && t->n > 0)
    return t;
  gs_frag_dist_init(&d);
  gs_frag_dist_add_host(&d, k, mib, cpu_milli, mem_mib);
  gs_frag_table_build(self, &d);
  return self;
}

/* A node as the policy sees it. A GPU offers memory requests its free
 * memory (0 when unhealthy or owned: nobody shares it) unless the cgpu cap
 * closes it. */
struct frag_node {
  uint32_t n;
  uint64_t free[GS_MAX_GPUS];
  bool capped[GS_MAX_GPUS];
  uint64_t all;                      /* free memory of every GPU */
  double cpu_free, mem_free;         /* host room; HUGE_VAL when unknown */
};

static uint64_t sub0(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

static bool cgpu_capped(const struct gs_node *node, const struct gs_policy *policy,
                        uint32_t npods) {
  return node->mode == GS_MODE_CGPU && policy->cgpu_max_pods != 0 &&
         npods >= policy->cgpu_max_pods;
}

/* Sums the free memory of every GPU (after free[] changes). */
static void frag_node_sum(struct frag_node *fn) {
  fn->all = 0;
  for (uint32_t g = 0; g < fn->n; g++)
    fn->all += fn->free[g];
}

static void frag_node_init(const struct gs_node *node, const struct gs_policy *policy,
                           struct frag_node *fn) {
  fn->n = node->ngpus < GS_MAX_GPUS ? node->ngpus : GS_MAX_GPUS;
  for (uint32_t g = 0; g < fn->n; g++) {
    const struct gs_gpu *gpu = &node->gpus[g];
    fn->free[g] = gpu->healthy && gpu->owner == NULL ? gpu_free_mib(gpu) : 0;
    fn->capped[g] = cgpu_capped(node, policy, gpu->npods);
  }
  frag_node_sum(fn);
  fn->cpu_free = node->host.cpu_milli > 0
                     ? (double)sub0(node->host.cpu_milli, node->host.cpu_used_milli)
                     : HUGE_VAL;
  fn->mem_free = node->host.mem_mib > 0
                     ? (double)sub0(node->host.mem_mib, node->host.mem_used_mib)
                     : HUGE_VAL;
}

/* Takes a host request out of the node's room. */
static void frag_node_take_host(struct frag_node *fn, uint64_t cpu_milli, uint64_t mem_mib) {
  if (fn->cpu_free != HUGE_VAL)
    fn->cpu_free = fn->cpu_free > (double)cpu_milli ? fn->cpu_free - (double)cpu_milli : 0;
  if (fn->mem_free != HUGE_VAL)
    fn->mem_free = fn->mem_free > (double)mem_mib ? fn->mem_free - (double)mem_mib : 0;
}

/* How many of a class's mean request the host has room for (HUGE_VAL when
 * nothing limits it). */
static double host_room(const struct frag_node *fn, const struct gs_frag_entry *e) {
  double room = HUGE_VAL;
  if (e->cpu_inv > 0 && fn->cpu_free != HUGE_VAL)
    room = (double)(uint64_t)(fn->cpu_free * e->cpu_inv); /* floor: non-negative */
  if (e->mem_inv > 0 && fn->mem_free != HUGE_VAL) {
    double m = (double)(uint64_t)(fn->mem_free * e->mem_inv);
    room = m < room ? m : room;
  }
  return room;
}

/* A class's fragmentation (place.h) from the GPUs that can take its
 * per-GPU memory (fit), the free memory of those that cannot (unusable),
 * all free memory, and the host's room for its pods. */
static double class_frag(const struct gs_frag_entry *e, uint32_t fit, uint64_t unusable,
                         uint64_t all, double room) {
  double slots;
  if (fit < e->k || room < 1)
    return (double)all;
  slots = (double)(fit / e->k);
  if (room >= slots)
    return (double)unusable;
  return (double)unusable + (double)(all - unusable) * (slots - room) / slots;
}

/* Per class, the GPUs that can take it and the memory of those that
 * cannot. The classes are largest first, so a GPU that can take class c
 * can take every later one: each GPU is counted once, at the first class
 * it can take, and the counts are summed along the classes. */
static void frag_states(const struct frag_node *fn, const struct gs_frag_table *t, uint32_t *fit,
                        uint64_t *unusable) {
  uint32_t cnt[GS_FRAG_CLASSES + 1];
  uint64_t sum[GS_FRAG_CLASSES + 1], usable = 0;
  for (uint32_t c = 0; c <= t->n; c++) { /* only the classes in use: this runs per node */
    cnt[c] = 0;
    sum[c] = 0;
  }
  for (uint32_t g = 0; g < fn->n; g++) {
    uint32_t c = 0;
    if (fn->capped[g])
      continue;
    while (c < t->n && t->c[c].mib > fn->free[g])
      c++;
    cnt[c]++;
    sum[c] += fn->free[g];
  }
  for (uint32_t c = 0, n = 0; c < t->n; c++) {
    n += cnt[c];
    usable += sum[c];
    fit[c] = n;
    unusable[c] = fn->all - usable;
  }
}

/* The node's fragmentation: the weighted average over the classes. */
static double frag_avg(const struct frag_node *fn, const struct gs_frag_table *t) {
  uint32_t fit[GS_FRAG_CLASSES];
  uint64_t unusable[GS_FRAG_CLASSES];
  double sum = 0;
  if (t->total <= 0)
    return 0;
  frag_states(fn, t, fit, unusable);
  for (uint32_t c = 0; c < t->n; c++)
    sum += t->c[c].weight *
           class_frag(&t->c[c], fit[c], unusable[c], fn->all, host_room(fn, &t->c[c]));
  return sum / t->total;
}

int64_t gs_place_frag_delta(const struct gs_node *node, const struct gs_policy *policy,
                            const struct gs_frag_table *t, const uint32_t *gpus, uint32_t k,
                            uint64_t mib_per_gpu, uint64_t cpu_milli, uint64_t mem_mib) {
  struct frag_node fn;
  struct gs_frag_table self;
  double before, after;
  t = table_or_self(t, k, mib_per_gpu, cpu_milli, mem_mib, &self);
  frag_node_init(node, policy, &fn);
  before = frag_avg(&fn, t);
  for (uint32_t i = 0; i < k; i++) {
    uint32_t x = gpus[i];
    if (x >= fn.n)
      continue;
    fn.free[x] = sub0(fn.free[x], mib_per_gpu);
    if (cgpu_capped(node, policy, node->gpus[x].npods + 1))
      fn.capped[x] = true;
  }
  frag_node_sum(&fn);
  frag_node_take_host(&fn, cpu_milli, mem_mib);
  after = frag_avg(&fn, t);
  return (int64_t)llround(after - before);
}

int64_t gs_place_frag_delta_score(int64_t delta, int64_t scale_mib, int64_t max) {
  int64_t s;
  if (scale_mib <= 0)
    return delta > 0 ? 0 : delta < 0 ? max : max / 2;
  /* delta -scale → max, 0 → max/2, +scale → 0; rounded half up. |delta| <
   * scale here, and scale is a node's GPU memory in MiB: no overflow. */
  if (delta <= -scale_mib)
    return max;
  if (delta >= scale_mib)
    return 0;
  s = (max * (scale_mib - delta) + scale_mib) / (2 * scale_mib);
  return s < 0 ? 0 : s > max ? max : s;
}

int64_t gs_place_frag_score(const struct gs_node *node, const struct gs_policy *policy,
                            const struct gs_frag_table *t, const struct gs_pod_request *req,
                            const struct gs_choice *choice, int64_t max) {
  uint64_t cpu = req ? req->cpu_milli : 0, mem = req ? req->mem_mib : 0, largest = 0;
  int64_t placed;
  if (choice == NULL) {
    for (uint32_t g = 0; g < node->ngpus; g++)
      largest = node->gpus[g].total_mib > largest ? node->gpus[g].total_mib : largest;
    return gs_place_frag_delta_score(gs_place_frag_delta(node, policy, t, NULL, 0, 0, cpu, mem),
                                     (int64_t)largest, max);
  }
  placed = (int64_t)(choice->mib_per_gpu * choice->ngpus);
  if (placed <= 0)
    return choice->score * max / 10; /* whole GPUs: the fill score */
  return gs_place_frag_delta_score(gs_place_frag_delta(node, policy, t, choice->gpus,
                                                       choice->ngpus, choice->mib_per_gpu, cpu,
                                                       mem),
                                   placed, max);
}

bool gs_place_frag_scores_host(const struct gs_pod_request *req, const struct gs_policy *policy) {
  return policy->node_policy == GS_PLACE_FRAG && !gs_pod_request_is_memory(req) &&
         !gs_pod_request_is_whole(req) && (req->cpu_milli > 0 || req->mem_mib > 0);
}

/* What one GPU pod of mib taken from a GPU with f free (f >= mib) does to
 * each class, the node's classes being fixed: a class with m > f could not
 * use the GPU and still cannot (its unusable memory shrinks by mib: case
 * C); one with after < m <= f loses the GPU (it joins the unusable memory
 * with what is left, "after": case B, linear in after); one with m <= after
 * keeps it (case A). Only the free memory of all GPUs changes for every
 * candidate alike. So the per-class terms are computed once per node and
 * summed per candidate over the class ranges its f and after select
 * (classes are largest m first): O(classes + GPUs) instead of their
 * product. Terms are weighted and minus the class's fragmentation before. */
struct frag_terms {
  uint32_t n;
  uint64_t mib[GS_FRAG_CLASSES];
  double c[GS_FRAG_CLASSES + 1];     /* prefix sums of case C */
  double alpha[GS_FRAG_CLASSES + 1]; /* prefix sums of case B: alpha + beta × after */
  double beta[GS_FRAG_CLASSES + 1];
  double a[GS_FRAG_CLASSES + 1];     /* suffix sums of case A */
};

static void frag_terms_build(const struct frag_node *fn, const struct gs_frag_table *t,
                             const uint32_t *fit, const uint64_t *unusable, const double *before,
                             const double *room1, uint64_t mib, struct frag_terms *ft) {
  double all1 = (double)fn->all - (double)mib;
  ft->n = t->n;
  ft->c[0] = ft->alpha[0] = ft->beta[0] = 0;
  for (uint32_t c = 0; c < t->n; c++) {
    const struct gs_frag_entry *e = &t->c[c];
    double w = e->weight, u = (double)unusable[c], r = room1[c], alpha, beta = 0;
    ft->mib[c] = e->mib;
    /* case C: unusable − mib (only used when such a GPU exists, so ≥ 0) */
    ft->c[c + 1] =
        ft->c[c] + w * (class_frag(e, fit[c], unusable[c] > mib ? unusable[c] - mib : 0,
                                   fn->all - mib, r) -
                        before[c]);
    /* case B: fit − 1 GPUs (fit ≥ 1: the candidate takes m), unusable + after */
    if (fit[c] <= e->k || r < 1) {
      alpha = all1;
    } else {
      double slots = (double)((fit[c] - 1) / e->k);
      if (r >= slots) {
        alpha = u;
        beta = 1;
      } else {
        alpha = u * r / slots + all1 * (slots - r) / slots;
        beta = r / slots;
      }
    }
    ft->alpha[c + 1] = ft->alpha[c] + w * (alpha - before[c]);
    ft->beta[c + 1] = ft->beta[c] + w * beta;
  }
  ft->a[t->n] = 0;
  for (uint32_t c = t->n; c-- > 0;)
    ft->a[c] = ft->a[c + 1] + t->c[c].weight * (class_frag(&t->c[c], fit[c], unusable[c],
                                                           fn->all - mib, room1[c]) -
                                                before[c]);
}

/* The weighted growth for a candidate with f free losing mib (not capped
 * by it). */
static double frag_terms_delta(const struct frag_terms *ft, uint64_t f, uint64_t mib) {
  uint64_t after = f - mib;
  uint32_t i1 = 0, i2;
  while (i1 < ft->n && ft->mib[i1] > f)
    i1++;
  i2 = i1;
  while (i2 < ft->n && ft->mib[i2] > after)
    i2++;
  return ft->c[i1] + (ft->alpha[i2] - ft->alpha[i1]) +
         (ft->beta[i2] - ft->beta[i1]) * (double)after + ft->a[i2];
}

/* The same for any candidate, class by class (a GPU the pod caps). */
static double frag_candidate_delta(const struct frag_node *fn, const struct gs_frag_table *t,
                                   const uint32_t *fit, const uint64_t *unusable,
                                   const double *before, const double *room1, uint64_t f,
                                   uint64_t after, bool cap0, bool cap1) {
  uint64_t all1 = fn->all - (f - after);
  double delta = 0;
  for (uint32_t c = 0; c < t->n; c++) {
    uint64_t m = t->c[c].mib;
    bool ok0 = !cap0 && f >= m, ok1 = !cap1 && after >= m;
    uint32_t fit1 = fit[c] - ok0 + ok1;
    uint64_t unusable1 = unusable[c] - (ok0 ? 0 : f) + (ok1 ? 0 : after);
    delta += t->c[c].weight * (class_frag(&t->c[c], fit1, unusable1, all1, room1[c]) - before[c]);
  }
  return delta;
}

enum gs_code gs_place_choose_frag(void *ctx, const struct gs_node *node,
                                 const struct gs_pod_request *req,
                                 const struct gs_policy *policy, uint64_t candidates, uint32_t k,
                                 uint64_t mib_per_gpu, uint32_t ret_gpus[GS_MAX_GPUS],
                                 char reason[GS_REASON_MAX]) {
  struct gs_frag_pick *pick = ctx;
  const struct gs_frag_table *t;
  struct gs_frag_table self;
  struct frag_node fn;
  struct frag_terms ft;
  uint32_t fit[GS_FRAG_CLASSES], best = GS_MAX_GPUS;
  uint64_t unusable[GS_FRAG_CLASSES], best_key = UINT64_MAX;
  bool cgpu = node->mode == GS_MODE_CGPU && policy->cgpu_max_pods != 0;
  uint64_t cpu = req ? req->cpu_milli : 0, mem = req ? req->mem_mib : 0;
  double before[GS_FRAG_CLASSES], room1[GS_FRAG_CLASSES], best_delta = HUGE_VAL;
  if (pick != NULL)
    pick->has_delta = false;
  if (k != 1 || mib_per_gpu == 0)
    return gs_place_choose_default(NULL, node, req, policy, candidates, k, mib_per_gpu,
                                   ret_gpus, reason);
  t = table_or_self(pick ? pick->table : NULL, 1, mib_per_gpu, cpu, mem, &self);
  frag_node_init(node, policy, &fn);
  frag_states(&fn, t, fit, unusable);
  for (uint32_t c = 0; c < t->n; c++)
    before[c] = class_frag(&t->c[c], fit[c], unusable[c], fn.all, host_room(&fn, &t->c[c]));
  frag_node_take_host(&fn, cpu, mem);
  for (uint32_t c = 0; c < t->n; c++)
    room1[c] = host_room(&fn, &t->c[c]);
  frag_terms_build(&fn, t, fit, unusable, before, room1, mib_per_gpu, &ft);
  for (uint32_t x = 0; x < fn.n; x++) {
    uint64_t f = fn.free[x];
    bool cap1 = cgpu && node->gpus[x].npods + 1 >= policy->cgpu_max_pods;
    double delta, eps; /* compared only: the weighted sum, not the average */
    /* Candidates are under the cgpu cap and have room (place.c). */
    if (!(candidates >> x & 1) || fn.capped[x] || f < mib_per_gpu)
      continue;
    delta = cap1 ? frag_candidate_delta(&fn, t, fit, unusable, before, room1, f,
                                        f - mib_per_gpu, false, true)
                 : frag_terms_delta(&ft, f, mib_per_gpu);
    /* Sums of the same terms in another order may differ in the last
     * bits: nearly equal deltas are a tie, which the placement order
     * breaks (its key is computed only then). */
    eps = 1e-9 * (fabs(best_delta) + 1);
    if (best == GS_MAX_GPUS || delta < best_delta - eps) {
      best_delta = delta;
      best_key = UINT64_MAX; /* not computed yet */
      best = x;
    } else if (delta <= best_delta + eps) {
      uint64_t key = gs__place_mem_key(node, policy, mib_per_gpu, x);
      if (best_key == UINT64_MAX)
        best_key = gs__place_mem_key(node, policy, mib_per_gpu, best);
      if (key < best_key) {
        best_delta = delta;
        best_key = key;
        best = x;
      }
    }
  }
  if (best == GS_MAX_GPUS) {
    if (reason != NULL)
      snprintf(reason, GS_REASON_MAX, "fewer than %u usable GPUs", (unsigned)k);
    return GS_CODE_UNSCHEDULABLE;
  }
  if (pick != NULL && t->total > 0) {
    pick->delta = (int64_t)llround(best_delta / t->total);
    pick->has_delta = true;
  }
  ret_gpus[0] = best;
  return GS_CODE_SUCCESS;
}
