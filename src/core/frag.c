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

/* A node as the policy sees it under a table t. A GPU offers memory
 * requests its free memory (0 when unhealthy or owned: nobody shares it)
 * unless the cgpu cap closes it. */
struct frag_node {
  const struct gs_frag_table *t;
  uint64_t mib4[4];                  /* t's per-GPU memory when t->n <= 4, 0 past it */
  uint32_t n;
  uint64_t free[GS_MAX_GPUS];
  bool capped[GS_MAX_GPUS];
  uint8_t first[GS_MAX_GPUS];        /* classes_above(free), t->n when capped: t->n > 4 */
  uint64_t all;                      /* free memory of every GPU */
  double cpu_free, mem_free;         /* host room; HUGE_VAL when unknown */
};

static uint64_t sub0(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

/* The bits of GPUs 0..n-1. */
static uint64_t gpus_mask(uint32_t n) { return n >= 64 ? UINT64_MAX : (UINT64_C(1) << n) - 1; }

/* classes_above for at most four classes, m padded with 0 (never above). */
static inline uint32_t classes_above4(const uint64_t m[4], uint64_t f) {
  return (uint32_t)(m[0] > f) + (m[1] > f) + (m[2] > f) + (m[3] > f);
}

/* How many of the classes (largest per-GPU memory first) need more than
 * f: the index of the first class a GPU with f free can take. Without a
 * branch on f (free memory differs at random from GPU to GPU): four
 * compares for a few classes (the common case), else a binary search
 * whose steps depend on t->n alone. */
static uint32_t classes_above(const struct frag_node *fn, uint64_t f) {
  const struct gs_frag_entry *b = fn->t->c;
  uint32_t len = fn->t->n;
  if (len <= 4)
    return classes_above4(fn->mib4, f);
  while (len > 1) {
    uint32_t half = len / 2;
    b = b[half].mib > f ? b + half : b;
    len -= half;
  }
  return (uint32_t)(b - fn->t->c) + (b->mib > f);
}

/* One pass over the GPUs, without a branch on a GPU's state: GPUs pass or
 * fail at random (place.c). */
static void frag_node_init(const struct gs_node *node, const struct gs_policy *policy,
                           const struct gs_frag_table *t, struct frag_node *fn) {
  uint32_t cap = node->mode == GS_MODE_CGPU ? policy->cgpu_max_pods : 0;
  uint64_t all = 0;
  fn->t = t;
  for (uint32_t c = 0; c < 4; c++)
    fn->mib4[c] = c < t->n ? t->c[c].mib : 0;
  fn->n = node->ngpus < GS_MAX_GPUS ? node->ngpus : GS_MAX_GPUS;
  for (uint32_t g = 0; g < fn->n; g++) {
    const struct gs_gpu *gpu = &node->gpus[g];
    uint64_t shared = gpu->healthy & (gpu->owner == NULL);
    uint64_t f = gpu_free_mib(gpu) & (0 - shared);
    bool capped = (cap != 0) & (gpu->npods >= cap);
    fn->free[g] = f;
    fn->capped[g] = capped;
    all += f;
  }
  /* A few classes: frag_states counts class by class, and the chooser
   * finds a candidate's first class itself. */
  if (t->n > 4)
    for (uint32_t g = 0; g < fn->n; g++)
      fn->first[g] = (uint8_t)(fn->capped[g] ? t->n : classes_above(fn, fn->free[g]));
  fn->all = all;
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

/* floor(x) for x >= 0: one signed conversion each way below 2^62 (the
 * unsigned one is a dozen instructions, and floor() a libm call); x itself
 * above, where a double holds integers only. */
static double floor_count(double x) { return x < 0x1p62 ? (double)(int64_t)x : x; }

/* How many of a class's mean request the host has room for (HUGE_VAL when
 * nothing limits it). */
static double host_room(const struct frag_node *fn, const struct gs_frag_entry *e) {
  double room = HUGE_VAL;
  if (e->cpu_inv > 0 && fn->cpu_free != HUGE_VAL)
    room = floor_count(fn->cpu_free * e->cpu_inv);
  if (e->mem_inv > 0 && fn->mem_free != HUGE_VAL) {
    double m = floor_count(fn->mem_free * e->mem_inv);
    room = m < room ? m : room;
  }
  return room;
}

/* The share of a class's usable memory its pods cannot reach: all of it
 * (1) when the class has no slot or the host no room for one pod, none
 * when the host has room for every slot, else the slots it cannot fill.
 * (Branches: a division every time, branch-free, measured no faster.) */
static double stranded(double slots, double room) {
  if (slots < 1 || room < 1)
    return 1;
  if (room >= slots)
    return 0;
  return (slots - room) / slots;
}

/* A class's fragmentation (place.h) from the GPUs that can take its
 * per-GPU memory (fit), the free memory of those that cannot (unusable),
 * all free memory, and the host's room for its pods. */
static double class_frag(const struct gs_frag_entry *e, uint32_t fit, uint64_t unusable,
                         uint64_t all, double room) {
  double u = (double)unusable;
  return u + ((double)all - u) * stranded((double)(fit / e->k), room);
}

/* Per class, the GPUs that can take it and the memory of those that
 * cannot. The classes are largest first, so a GPU that can take class c
 * can take every later one: each GPU is counted once, at its first class
 * (a capped GPU at none: t->n), and the counts are summed along the
 * classes. */
static void frag_states(const struct frag_node *fn, uint32_t *fit, uint64_t *unusable) {
  uint32_t cnt[GS_FRAG_CLASSES + 1], n = fn->t->n;
  uint64_t sum[GS_FRAG_CLASSES + 1], usable = 0;
  if (n <= 4) {
    /* A few classes: each GPU against each class, in registers (the
     * counters in memory waited on one another). Classes past n have
     * per-GPU memory 0: counted, never read. */
    uint32_t c0 = 0, c1 = 0, c2 = 0, c3 = 0;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (uint32_t g = 0; g < fn->n; g++) {
      uint64_t f = fn->free[g], open = !fn->capped[g];
      uint64_t a0 = open & (f >= fn->mib4[0]), a1 = open & (f >= fn->mib4[1]);
      uint64_t a2 = open & (f >= fn->mib4[2]), a3 = open & (f >= fn->mib4[3]);
      c0 += (uint32_t)a0;
      c1 += (uint32_t)a1;
      c2 += (uint32_t)a2;
      c3 += (uint32_t)a3;
      s0 += f & (0 - a0);
      s1 += f & (0 - a1);
      s2 += f & (0 - a2);
      s3 += f & (0 - a3);
    }
    cnt[0] = c0, cnt[1] = c1, cnt[2] = c2, cnt[3] = c3;
    sum[0] = s0, sum[1] = s1, sum[2] = s2, sum[3] = s3;
    for (uint32_t c = 0; c < n; c++) {
      fit[c] = cnt[c];
      unusable[c] = fn->all - sum[c];
    }
    return;
  }
  for (uint32_t c = 0; c <= n; c++) { /* only the classes in use: this runs per node */
    cnt[c] = 0;
    sum[c] = 0;
  }
  for (uint32_t g = 0; g < fn->n; g++) {
    cnt[fn->first[g]]++;
    sum[fn->first[g]] += fn->free[g];
  }
  for (uint32_t c = 0, m = 0; c < n; c++) {
    m += cnt[c];
    usable += sum[c];
    fit[c] = m;
    unusable[c] = fn->all - usable;
  }
}

/* The weighted sum over the classes of their fragmentation (the average
 * times t->total). */
static double frag_sum(const struct frag_node *fn, const uint32_t *fit, const uint64_t *unusable) {
  const struct gs_frag_table *t = fn->t;
  double sum = 0;
  for (uint32_t c = 0; c < t->n; c++)
    sum += t->c[c].weight *
           class_frag(&t->c[c], fit[c], unusable[c], fn->all, host_room(fn, &t->c[c]));
  return sum;
}

/* x rounded half away from zero, as llround, for |x| < 2^62 (MiB of a
 * node): a libm call per node was measurable. x − trunc(x) is exact. */
static int64_t round_mib(double x) {
  int64_t r = (int64_t)x;
  double frac = x - (double)r;
  return r + (frac >= 0.5) - (frac <= -0.5);
}

int64_t gs_place_frag_delta(const struct gs_node *node, const struct gs_policy *policy,
                            const struct gs_frag_table *t, const uint32_t *gpus, uint32_t k,
                            uint64_t mib_per_gpu, uint64_t cpu_milli, uint64_t mem_mib) {
  struct frag_node fn;
  struct gs_frag_table self;
  uint32_t cap = node->mode == GS_MODE_CGPU ? policy->cgpu_max_pods : 0;
  uint32_t fit[GS_FRAG_CLASSES];
  uint64_t unusable[GS_FRAG_CLASSES], usable[GS_FRAG_CLASSES];
  double before, after;
  t = table_or_self(t, k, mib_per_gpu, cpu_milli, mem_mib, &self);
  if (t->total <= 0)
    return 0;
  frag_node_init(node, policy, t, &fn);
  frag_states(&fn, fit, unusable);
  before = frag_sum(&fn, fit, unusable);
  /* After: only the chosen GPUs change, class by class (the counts are
   * modulo 2^32 and 2^64 on the way, exact at the end). */
  for (uint32_t c = 0; c < t->n; c++)
    usable[c] = fn.all - unusable[c];
  for (uint32_t i = 0; i < k; i++) {
    uint32_t x = gpus[i];
    uint64_t f0, f1;
    bool cap0, cap1;
    if (x >= fn.n)
      continue;
    f0 = fn.free[x];
    f1 = sub0(f0, mib_per_gpu);
    cap0 = fn.capped[x];
    cap1 = cap0 || (cap != 0 && node->gpus[x].npods + 1 >= cap);
    for (uint32_t c = 0; c < t->n; c++) {
      bool ok0 = !cap0 && f0 >= t->c[c].mib, ok1 = !cap1 && f1 >= t->c[c].mib;
      fit[c] += (uint32_t)ok1 - (uint32_t)ok0;
      usable[c] += (ok1 ? f1 : 0) - (ok0 ? f0 : 0);
    }
    fn.all -= f0 - f1;
    fn.free[x] = f1;
    fn.capped[x] = cap1;
  }
  for (uint32_t c = 0; c < t->n; c++)
    unusable[c] = fn.all - usable[c];
  frag_node_take_host(&fn, cpu_milli, mem_mib);
  after = frag_sum(&fn, fit, unusable);
  return round_mib((after - before) / t->total);
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
  const struct frag_node *fn;
  double c[GS_FRAG_CLASSES + 1];     /* prefix sums of case C */
  double alpha[GS_FRAG_CLASSES + 1]; /* prefix sums of case B: alpha + beta × after */
  double beta[GS_FRAG_CLASSES + 1];
  double a[GS_FRAG_CLASSES + 1];     /* suffix sums of case A */
};

/* Also fills before[] and room1[] (the host's room per class once the pod
 * is placed: fn is the node before it). One loop over the classes. */
static void frag_terms_build(const struct frag_node *fn, const uint32_t *fit,
                             const uint64_t *unusable, uint64_t mib, uint64_t cpu, uint64_t mem,
                             double *before, double *room1, struct frag_terms *ft) {
  const struct gs_frag_table *t = fn->t;
  struct frag_node fn1;
  double all = (double)fn->all, all1 = all - (double)mib, m = (double)mib;
  fn1.cpu_free = fn->cpu_free;
  fn1.mem_free = fn->mem_free;
  frag_node_take_host(&fn1, cpu, mem);
  ft->fn = fn;
  ft->c[0] = ft->alpha[0] = ft->beta[0] = 0;
  /* class_frag for each case, sharing what they have in common: the
   * slots, and the host's room once the pod is placed. */
  for (uint32_t c = 0; c < t->n; c++) {
    const struct gs_frag_entry *e = &t->c[c];
    double w = e->weight, u = (double)unusable[c], r = host_room(&fn1, e);
    double slots = (double)(fit[c] / e->k), s1, sb;
    /* case B: fit − 1 GPUs (fit ≥ 1: the candidate takes m) */
    double slots_b = (double)((fit[c] > 0 ? fit[c] - 1 : 0) / e->k);
    double uc = u > m ? u - m : 0; /* case C (used when such a GPU exists) */
    room1[c] = r;
    before[c] = u + (all - u) * stranded(slots, host_room(fn, e));
    s1 = stranded(slots, r);
    sb = stranded(slots_b, r);
    ft->c[c + 1] = ft->c[c] + w * (uc + (all1 - uc) * s1 - before[c]);
    /* case B: unusable + after of all1: alpha + beta × after */
    ft->alpha[c + 1] = ft->alpha[c] + w * (u * (1 - sb) + all1 * sb - before[c]);
    ft->beta[c + 1] = ft->beta[c] + w * (1 - sb);
    /* case A, summed from the end below */
    ft->a[c] = w * (u + (all1 - u) * s1 - before[c]);
  }
  ft->a[t->n] = 0;
  for (uint32_t c = t->n; c-- > 0;)
    ft->a[c] += ft->a[c + 1];
}

/* The weighted growth for a candidate with f free losing mib (not capped
 * by it), whose first class is i1 (frag_states). */
static double frag_terms_delta(const struct frag_terms *ft, uint32_t i1, uint64_t f,
                               uint64_t mib) {
  uint64_t after = f - mib;
  uint32_t i2 = classes_above(ft->fn, after);
  return ft->c[i1] + (ft->alpha[i2] - ft->alpha[i1]) +
         (ft->beta[i2] - ft->beta[i1]) * (double)after + ft->a[i2];
}

/* The same, class by class, for a candidate with f free that the pod
 * caps (cgpu): before it, the GPU offers f; after, nothing. */
static double frag_capping_delta(const struct frag_node *fn, const uint32_t *fit,
                                 const uint64_t *unusable, const double *before,
                                 const double *room1, uint64_t f, uint64_t mib) {
  const struct gs_frag_table *t = fn->t;
  uint64_t after = f - mib, all1 = fn->all - mib;
  double delta = 0;
  for (uint32_t c = 0; c < t->n; c++) {
    bool ok0 = f >= t->c[c].mib;
    uint32_t fit1 = fit[c] - ok0;
    uint64_t unusable1 = unusable[c] - (ok0 ? 0 : f) + after;
    delta += t->c[c].weight * (class_frag(&t->c[c], fit1, unusable1, all1, room1[c]) - before[c]);
  }
  return delta;
}

enum gs_err gs_place_choose_frag(void *ctx, const struct gs_node *node,
                                 const struct gs_pod_request *req,
                                 const struct gs_policy *policy, uint64_t candidates, uint32_t k,
                                 uint64_t mib_per_gpu, uint32_t ret_gpus[GS_MAX_GPUS],
                                 struct gs_status *st) {
  struct gs_frag_pick *pick = ctx;
  const struct gs_frag_table *t;
  struct gs_frag_table self;
  struct frag_node fn;
  struct frag_terms ft;
  uint32_t fit[GS_FRAG_CLASSES], best;
  uint64_t unusable[GS_FRAG_CLASSES], best_key = UINT64_MAX;
  uint64_t flip = gs__place_spread_flip(node);
  uint32_t cap = node->mode == GS_MODE_CGPU ? policy->cgpu_max_pods : 0, nc = 0;
  uint8_t gpu[GS_MAX_GPUS]; /* the candidates */
  uint64_t cpu = req ? req->cpu_milli : 0, mem = req ? req->mem_mib : 0;
  double before[GS_FRAG_CLASSES], room1[GS_FRAG_CLASSES], least = HUGE_VAL, tie;
  double delta[GS_MAX_GPUS]; /* by GPU */
  if (pick != NULL)
    pick->has_delta = false;
  if (k != 1 || mib_per_gpu == 0)
    return gs_place_choose_default(NULL, node, req, policy, candidates, k, mib_per_gpu,
                                   ret_gpus, st);
  t = table_or_self(pick ? pick->table : NULL, 1, mib_per_gpu, cpu, mem, &self);
  frag_node_init(node, policy, t, &fn);
  frag_states(&fn, fit, unusable);
  frag_terms_build(&fn, fit, unusable, mib_per_gpu, cpu, mem, before, room1, &ft);
  /* Two passes: every candidate's delta (independent of one another), then
   * the least one and, among those as good, the placement order's first.
   * Compared only: the weighted sums, not the averages. One pass keeping
   * the best so far waited on each comparison before the next (a quarter
   * of the node's cost). */
  for (uint64_t left = candidates & gpus_mask(fn.n); left != 0; left &= left - 1) {
    uint32_t x = (uint32_t)__builtin_ctzll(left);
    uint64_t f = fn.free[x];
    /* Candidates are under the cgpu cap and have room (place.c). */
    if (fn.capped[x] | (f < mib_per_gpu))
      continue;
    if ((cap != 0) & (node->gpus[x].npods + 1 >= cap))
      delta[x] = frag_capping_delta(&fn, fit, unusable, before, room1, f, mib_per_gpu);
    else
      delta[x] = frag_terms_delta(&ft, t->n <= 4 ? classes_above4(fn.mib4, f) : fn.first[x], f,
                                  mib_per_gpu);
    least = delta[x] < least ? delta[x] : least;
    gpu[nc++] = (uint8_t)x;
  }
  if (nc == 0)
    return gs_status_set(st, GS_ENOFIT, GS_R_INSUFFICIENT_GPUS, "fewer than %u usable GPUs",
                         (unsigned)k);
  /* Sums of the same terms in another order may differ in the last bits:
   * deltas within 1e-9 (relative) of the least are a tie, which the
   * placement order breaks (the key of a GPU that is no tie: all ones). */
  tie = least + 1e-9 * (fabs(least) + 1);
  for (uint32_t j = 0; j < nc; j++) {
    uint64_t key = gs__place_mem_key_of(fn.free[gpu[j]], mib_per_gpu, policy->frag_aware, flip,
                                        gpu[j]) |
                   (0 - (uint64_t)(delta[gpu[j]] > tie));
    best_key = key < best_key ? key : best_key;
  }
  best = (uint32_t)(best_key & 63);
  if (pick != NULL && t->total > 0) {
    pick->delta = round_mib(delta[best] / t->total);
    pick->has_delta = true;
  }
  ret_gpus[0] = best;
  return GS_EOK;
}
