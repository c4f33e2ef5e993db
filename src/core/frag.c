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
     * every class in one merge (frag_states). */
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
  uint32_t u;                        /* GPUs not capped */
  uint64_t sorted[GS_MAX_GPUS];      /* their free memory, largest first */
  uint64_t prefix[GS_MAX_GPUS + 1];  /* prefix[j] = sorted[0] + ... + sorted[j - 1] */
  uint64_t all;                      /* free memory of every GPU */
  double cpu_free, mem_free;         /* host room; HUGE_VAL when unknown */
};

static uint64_t sub0(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

static bool cgpu_capped(const struct gs_node *node, const struct gs_policy *policy,
                        uint32_t npods) {
  return node->mode == GS_MODE_CGPU && policy->cgpu_max_pods != 0 &&
         npods >= policy->cgpu_max_pods;
}

/* Sorts the uncapped GPUs' free memory and sums it (after free[] or
 * capped[] change). */
static void frag_node_sort(struct frag_node *fn) {
  fn->u = 0;
  fn->all = 0;
  for (uint32_t g = 0; g < fn->n; g++) {
    uint32_t j;
    fn->all += fn->free[g];
    if (fn->capped[g])
      continue;
    for (j = fn->u; j > 0 && fn->sorted[j - 1] < fn->free[g]; j--)
      fn->sorted[j] = fn->sorted[j - 1];
    fn->sorted[j] = fn->free[g];
    fn->u++;
  }
  fn->prefix[0] = 0;
  for (uint32_t j = 0; j < fn->u; j++)
    fn->prefix[j + 1] = fn->prefix[j] + fn->sorted[j];
}

static void frag_node_init(const struct gs_node *node, const struct gs_policy *policy,
                           struct frag_node *fn) {
  fn->n = node->ngpus < GS_MAX_GPUS ? node->ngpus : GS_MAX_GPUS;
  for (uint32_t g = 0; g < fn->n; g++) {
    const struct gs_gpu *gpu = &node->gpus[g];
    fn->free[g] = gpu->healthy && gpu->owner == NULL ? gpu_free_mib(gpu) : 0;
    fn->capped[g] = cgpu_capped(node, policy, gpu->npods);
  }
  frag_node_sort(fn);
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
    room = floor(fn->cpu_free * e->cpu_inv);
  if (e->mem_inv > 0 && fn->mem_free != HUGE_VAL) {
    double m = floor(fn->mem_free * e->mem_inv);
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
 * cannot: one merge of the sorted GPUs with the classes (largest first). */
static void frag_states(const struct frag_node *fn, const struct gs_frag_table *t, uint32_t *fit,
                        uint64_t *unusable) {
  uint32_t j = 0;
  for (uint32_t c = 0; c < t->n; c++) {
    while (j < fn->u && fn->sorted[j] >= t->c[c].mib)
      j++;
    fit[c] = j;
    unusable[c] = fn->all - fn->prefix[j];
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
  frag_node_sort(&fn);
  frag_node_take_host(&fn, cpu_milli, mem_mib);
  after = frag_avg(&fn, t);
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
                            const struct gs_frag_table *t, const struct gs_pod_request *req,
                            const struct gs_choice *choice) {
  uint64_t cpu = req ? req->cpu_milli : 0, mem = req ? req->mem_mib : 0, largest = 0;
  int64_t placed;
  if (choice == NULL) {
    for (uint32_t g = 0; g < node->ngpus; g++)
      largest = node->gpus[g].total_mib > largest ? node->gpus[g].total_mib : largest;
    return gs_place_frag_delta_score(gs_place_frag_delta(node, policy, t, NULL, 0, 0, cpu, mem),
                                     (int64_t)largest);
  }
  placed = (int64_t)(choice->mib_per_gpu * choice->ngpus);
  if (placed <= 0)
    return choice->score; /* whole GPUs: the fill score */
  return gs_place_frag_delta_score(gs_place_frag_delta(node, policy, t, choice->gpus,
                                                       choice->ngpus, choice->mib_per_gpu, cpu,
                                                       mem),
                                   placed);
}

bool gs_place_frag_scores_host(const struct gs_pod_request *req, const struct gs_policy *policy) {
  return policy->node_policy == GS_PLACE_FRAG && !gs_pod_request_is_memory(req) &&
         !gs_pod_request_is_whole(req) && (req->cpu_milli > 0 || req->mem_mib > 0);
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
  uint32_t fit[GS_FRAG_CLASSES], best = GS_MAX_GPUS, ntried = 0;
  uint64_t unusable[GS_FRAG_CLASSES], tried[GS_MAX_GPUS], best_key = UINT64_MAX;
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
  for (uint32_t x = 0; x < fn.n; x++) {
    uint64_t f = fn.free[x], after = sub0(f, mib_per_gpu), all1 = fn.all - (f - after), key;
    bool cap0 = fn.capped[x], cap1 = cap0 || cgpu_capped(node, policy, node->gpus[x].npods + 1);
    uint64_t same = f << 2 | (uint64_t)cap0 << 1 | cap1;
    double delta = 0; /* compared only: the weighted sum, not the average */
    uint32_t i;
    if (!(candidates >> x & 1))
      continue;
    /* GPUs alike give the same delta; the first (lowest index) also comes
     * first in the placement order among them. */
    for (i = 0; i < ntried && tried[i] != same; i++)
      ;
    if (i < ntried)
      continue;
    tried[ntried++] = same;
    for (uint32_t c = 0; c < t->n; c++) {
      uint64_t m = t->c[c].mib;
      bool ok0 = !cap0 && f >= m, ok1 = !cap1 && after >= m;
      uint32_t fit1 = fit[c] - ok0 + ok1;
      uint64_t unusable1 = unusable[c] - (ok0 ? 0 : f) + (ok1 ? 0 : after);
      delta += t->c[c].weight * (class_frag(&t->c[c], fit1, unusable1, all1, room1[c]) - before[c]);
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
  if (pick != NULL && t->total > 0) {
    pick->delta = (int64_t)llround(best_delta / t->total);
    pick->has_delta = true;
  }
  ret_gpus[0] = best;
  return GS_CODE_SUCCESS;
}
