/* GPU-aware preemption (include/gpushare/preempt.h, docs/preemption.md).
 *
 * For one GPU the question is a covering problem: free at least D MiB (and,
 * on cgpu nodes, at least r pod slots) with the cheapest set, where cheaper
 * means a lower highest priority, then fewer pods, then less memory. For a
 * priority threshold t the fewest pods come from taking the largest shares
 * first (the k largest items have the largest sum of any k); the least
 * memory among sets of that size is a search over combinations, pruned and
 * bounded (PREEMPT_BUDGET nodes of the search per GPU; past it the best set
 * found so far, at worst the greedy one, is kept). The lowest feasible t is
 * the lowest highest priority.
 *
 * M GPUs (multi-card memory pods) and k whole GPUs: each GPU's cheapest set
 * is found alone, the M (k) cheapest GPUs are taken, their sets joined, and
 * then every victim whose return still leaves the pod fitting is spared,
 * the most important first. */
#include <gpushare/alloc.h>
#include <gpushare/preempt.h>

#include "preempt_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREEMPT_BUDGET 20000

/* Does the pod fit on node once the candidates marked in out are gone? */
static bool fits_after(const struct gs_node *node, const struct gs_place_pod *pod, uint32_t cap,
                       const struct gs_preempt_candidate *cands, size_t n, const bool *out) {
  uint32_t ok = 0;
  for (uint32_t g = 0; g < node->ngpus && ok < pod->k; g++) {
    const struct gs_gpu *gpu = &node->gpus[g];
    uint64_t freed = 0;
    uint32_t gone = 0;
    bool owner_gone = false;
    if (!gpu->healthy)
      continue;
    for (size_t i = 0; i < n; i++) {
      bool touches;
      uint64_t mib;
      if (!out[i])
        continue;
      touches = gs__preempt_touches(cands[i].alloc, g, &mib);
      freed += mib;
      gone += touches;
      owner_gone = owner_gone || gpu->owner == cands[i].alloc;
    }
    if (pod->mem) {
      uint64_t used = gpu->used_mib > freed ? gpu->used_mib - freed : 0;
      uint64_t free_mib = gpu->total_mib > used ? gpu->total_mib - used : 0;
      uint32_t pods = gpu->npods > gone ? gpu->npods - gone : 0;
      if (gpu->owner == NULL && free_mib >= pod->mib_per_gpu && (cap == 0 || pods < cap))
        ok++;
    } else if ((gpu->owner == NULL || owner_gone) && gpu->npods <= gone) {
      ok++;
    }
  }
  return ok >= pod->k;
}

/* ---- one GPU ---------------------------------------------------------------- */

struct item {
  uint32_t cand;
  uint64_t mib;
  int32_t prio;
};

static int item_by_mib_desc(const void *a, const void *b) {
  const struct item *x = a, *y = b;
  if (x->mib != y->mib)
    return x->mib > y->mib ? -1 : 1;
  return x->cand < y->cand ? -1 : 1;
}

static int prio_cmp(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

/* The search for the least memory among sets of exactly k items (sorted by
 * MiB, largest first) that free at least need. */
struct search {
  const struct item *items;
  size_t m;
  uint32_t k;
  uint64_t need;
  uint32_t pick[GS_MAX_PARTS], best[GS_MAX_PARTS];
  uint64_t best_sum;
  bool found;
  unsigned long budget;
};

static void dfs(struct search *s, size_t from, uint32_t depth, uint64_t sum) {
  if (s->budget == 0)
    return;
  s->budget--;
  if (depth == s->k) {
    if (sum >= s->need && (!s->found || sum < s->best_sum)) {
      s->found = true;
      s->best_sum = sum;
      memcpy(s->best, s->pick, depth * sizeof s->pick[0]);
    }
    return;
  }
  for (size_t i = from; i + (s->k - depth) <= s->m; i++) {
    uint64_t top = 0; /* the most the remaining picks can add: the next largest */
    for (uint32_t j = 0; j < s->k - depth; j++)
      top += s->items[i + j].mib;
    if (sum + top < s->need)
      return; /* sorted: later starts add even less */
    if (s->found && sum + s->items[i].mib >= s->best_sum)
      continue; /* cannot beat the best: try a smaller item */
    s->pick[depth] = (uint32_t)i;
    dfs(s, i + 1, depth + 1, sum + s->items[i].mib);
  }
}

/* The cheapest set on GPU g among the allowed candidates; marks it in out. */
static struct gs__preempt_cost best_on_gpu(const struct gs_node *node, uint32_t g,
                                           const struct gs_place_pod *pod, uint32_t cap,
                                           const struct gs_preempt_candidate *cands, size_t n,
                                           const bool *allowed, const bool *pre, bool *out) {
  const struct gs_gpu *gpu = &node->gpus[g];
  struct gs__preempt_cost c = {false, 0, 0, 0};
  struct item *items = NULL, *sub = NULL;
  int32_t *prios = NULL;
  struct search *s = NULL;
  size_t m = 0, np = 0;
  uint64_t deficit = 0;
  uint32_t r = 0;

  uint64_t used = gpu->used_mib;
  uint32_t npods = gpu->npods;

  if (!gpu->healthy || gpu->total_mib < pod->mib_per_gpu || gpu->owner != NULL)
    return c;
  for (size_t i = 0; i < n; i++) { /* already gone (pre): their room counts */
    bool touches;
    uint64_t mib;
    if (!pre[i])
      continue;
    touches = gs__preempt_touches(cands[i].alloc, g, &mib);
    used = used > mib ? used - mib : 0;
    npods -= touches && npods > 0;
  }
  if (used + pod->mib_per_gpu > gpu->total_mib)
    deficit = used + pod->mib_per_gpu - gpu->total_mib;
  if (cap != 0 && npods >= cap)
    r = npods - cap + 1;
  if (deficit == 0 && r == 0)
    return (struct gs__preempt_cost){true, INT32_MIN, 0, 0};
  items = gs_calloc(n ? n : 1, sizeof *items);
  sub = gs_calloc(n ? n : 1, sizeof *sub);
  prios = gs_calloc(n ? n : 1, sizeof *prios);
  s = gs_calloc(1, sizeof *s);
  if (items == NULL || sub == NULL || prios == NULL || s == NULL)
    goto done;
  for (size_t i = 0; i < n; i++) {
    bool touches;
    uint64_t mib;
    if (!allowed[i] || pre[i])
      continue;
    touches = gs__preempt_touches(cands[i].alloc, g, &mib);
    if (!touches)
      continue;
    items[m++] = (struct item){(uint32_t)i, mib, cands[i].alloc->priority};
    prios[np++] = cands[i].alloc->priority;
  }
  qsort(items, m, sizeof *items, item_by_mib_desc);
  qsort(prios, np, sizeof *prios, prio_cmp);
  for (size_t t = 0; t < np; t++) {
    size_t ms = 0;
    uint64_t sum = 0;
    uint32_t k = 0;
    if (t > 0 && prios[t] == prios[t - 1])
      continue;
    for (size_t i = 0; i < m; i++)
      if (items[i].prio <= prios[t])
        sub[ms++] = items[i];
    while (k < ms && (sum < deficit || k < r))
      sum += sub[k++].mib;
    if (sum < deficit || k < r)
      continue; /* not even all of them: a higher threshold */
    *s = (struct search){.items = sub, .m = ms, .k = k, .need = deficit,
                         .budget = PREEMPT_BUDGET};
    for (uint32_t i = 0; i < k; i++) /* the greedy set: a floor if the budget runs out */
      s->best[i] = i;
    s->best_sum = sum;
    s->found = true;
    dfs(s, 0, 0, 0);
    c = (struct gs__preempt_cost){true, prios[t], k, s->best_sum};
    for (uint32_t i = 0; i < k; i++)
      out[sub[s->best[i]].cand] = true;
    break;
  }
done:
  gs_free(items);
  gs_free(sub);
  gs_free(prios);
  gs_free(s);
  return c;
}

/* ---- whole GPUs --------------------------------------------------------------- */

/* Every pod on GPU g must go for a whole-GPU pod to take it. */
static struct gs__preempt_cost clear_gpu(const struct gs_node *node, uint32_t g,
                                         const struct gs_preempt_candidate *cands, size_t n,
                                         const bool *allowed, const bool *pre, bool *out) {
  const struct gs_gpu *gpu = &node->gpus[g];
  struct gs__preempt_cost c = {true, INT32_MIN, 0, 0};
  uint32_t gone = 0;
  if (!gpu->healthy)
    return (struct gs__preempt_cost){false, 0, 0, 0};
  for (size_t i = 0; i < n; i++) {
    bool touches;
    uint64_t mib;
    touches = gs__preempt_touches(cands[i].alloc, g, &mib);
    if (!touches || !(allowed[i] || pre[i]))
      continue;
    gone++;
    if (pre[i])
      continue; /* already gone: costs nothing more */
    out[i] = true;
    c.count++;
    c.mib += mib;
    if (cands[i].alloc->priority > c.maxprio)
      c.maxprio = cands[i].alloc->priority;
  }
  if (gone < gpu->npods) /* a pod that may not go holds it */
    return (struct gs__preempt_cost){false, 0, 0, 0};
  return c;
}

/* ---- the node ------------------------------------------------------------------- */

struct gpu_cost {
  uint32_t g;
  struct gs__preempt_cost c;
};

static int gpu_cost_cmp(const void *a, const void *b) {
  const struct gpu_cost *x = a, *y = b;
  int d = gs__preempt_cost_cmp(&x->c, &y->c);
  return d != 0 ? d : (x->g < y->g ? -1 : 1);
}

/* Does the host hold the pod once the victims in out (and lim's others)
 * are gone? Always when lim asks no host check or the host is unknown. */
static bool host_after(const struct gs_node *node, const struct gs_place_pod *pod,
                       const struct gs_preempt_limits *lim,
                       const struct gs_preempt_candidate *cands, size_t n, const bool *out) {
  const struct gs_host *h = &node->host;
  uint64_t cpu, mem;
  if (lim == NULL || !lim->host || h->cpu_milli == 0)
    return true;
  cpu = (h->cpu_milli > h->cpu_used_milli ? h->cpu_milli - h->cpu_used_milli : 0) +
        lim->freed_cpu_milli;
  mem = (h->mem_mib > h->mem_used_mib ? h->mem_mib - h->mem_used_mib : 0) + lim->freed_mem_mib;
  for (size_t i = 0; i < n; i++)
    if (out[i]) {
      cpu += cands[i].cpu_milli;
      mem += cands[i].mem_mib;
    }
  return cpu >= pod->req->cpu_milli && (h->mem_mib == 0 || mem >= pod->req->mem_mib);
}

/* Spares every victim whose return still leaves the pod fitting (on its
 * GPUs and, under lim, on the host), the most important (highest
 * priority, then most memory) first. */
static void spare(const struct gs_node *node, const struct gs_place_pod *pod, uint32_t cap,
                  const struct gs_preempt_limits *lim, const struct gs_preempt_candidate *cands,
                  size_t n, bool *out) {
  for (;;) {
    size_t best = n;
    for (size_t i = 0; i < n; i++) {
      if (!out[i])
        continue;
      out[i] = false;
      if (fits_after(node, pod, cap, cands, n, out) && host_after(node, pod, lim, cands, n, out) &&
          (best == n || cands[i].alloc->priority > cands[best].alloc->priority))
        best = i;
      out[i] = true;
    }
    if (best == n)
      return;
    out[best] = false;
  }
}

/* The cost of a whole set. */
static struct gs__preempt_cost set_cost(const struct gs_preempt_candidate *cands, size_t n,
                                        const bool *out) {
  struct gs__preempt_cost c = {true, INT32_MIN, 0, 0};
  for (size_t i = 0; i < n; i++) {
    if (!out[i])
      continue;
    c.count++;
    for (uint32_t p = 0; p < cands[i].alloc->nparts; p++)
      c.mib += gs_alloc_part_mib(cands[i].alloc, &cands[i].alloc->parts[p]);
    if (cands[i].alloc->priority > c.maxprio)
      c.maxprio = cands[i].alloc->priority;
  }
  return c;
}

/* With the pods in pre gone already: each GPU's cheapest set, the k
 * cheapest GPUs' sets joined (with pre), then the spares. out: the set. */
static enum gs_err solve(const struct gs_node *node, const struct gs_place_pod *pod,
                          uint32_t cap, const struct gs_preempt_candidate *cands, size_t n,
                          const bool *allowed, const bool *pre, struct gpu_cost *costs,
                          bool *scratch, bool *out) {
  uint32_t feasible = 0;
  for (uint32_t g = 0; g < node->ngpus; g++) {
    memset(scratch, 0, n * sizeof *scratch);
    costs[g].g = g;
    costs[g].c = pod->mem ? best_on_gpu(node, g, pod, cap, cands, n, allowed, pre, scratch)
                          : clear_gpu(node, g, cands, n, allowed, pre, scratch);
    feasible += costs[g].c.ok;
  }
  if (feasible < pod->k)
    return GS_ENOFIT;
  qsort(costs, node->ngpus, sizeof *costs, gpu_cost_cmp);
  memcpy(out, pre, n * sizeof *out);
  for (uint32_t j = 0; j < pod->k; j++) {
    memset(scratch, 0, n * sizeof *scratch);
    if (pod->mem)
      (void)best_on_gpu(node, costs[j].g, pod, cap, cands, n, allowed, pre, scratch);
    else
      (void)clear_gpu(node, costs[j].g, cands, n, allowed, pre, scratch);
    for (size_t i = 0; i < n; i++)
      out[i] = out[i] || scratch[i];
  }
  if (pod->k > 1)
    spare(node, pod, cap, NULL, cands, n, out);
  return fits_after(node, pod, cap, cands, n, out) ? GS_EOK : GS_ENOFIT;
}

/* Over several GPUs one pod may free more than one: besides the plain
 * solution, each allowed pod spanning two or more GPUs is tried as the
 * first victim, and the cheapest result wins. */
static enum gs_err pick_from(const struct gs_node *node, const struct gs_place_pod *pod,
                              uint32_t cap, const struct gs_preempt_candidate *cands, size_t n,
                              const bool *allowed, bool *out) {
  struct gpu_cost *costs = gs_calloc(node->ngpus ? node->ngpus : 1, sizeof *costs);
  bool *scratch = gs_calloc(n ? n : 1, sizeof *scratch);
  bool *pre = gs_calloc(n ? n : 1, sizeof *pre);
  bool *trial = gs_calloc(n ? n : 1, sizeof *trial);
  enum gs_err code = GS_ENOMEM;
  struct gs__preempt_cost best;

  if (costs == NULL || scratch == NULL || pre == NULL || trial == NULL)
    goto done;
  code = solve(node, pod, cap, cands, n, allowed, pre, costs, scratch, out);
  best = code == GS_EOK ? set_cost(cands, n, out)
                         : (struct gs__preempt_cost){false, 0, 0, 0};
  for (size_t i = 0; pod->k > 1 && i < n; i++) {
    uint64_t gpus = 0;
    struct gs__preempt_cost c;
    for (uint32_t p = 0; p < cands[i].alloc->nparts; p++)
      if (cands[i].alloc->parts[p].gpu < 64)
        gpus |= UINT64_C(1) << cands[i].alloc->parts[p].gpu;
    if (!allowed[i] || (gpus & (gpus - 1)) == 0)
      continue; /* one GPU: the plain solution covers it */
    memset(pre, 0, n * sizeof *pre);
    pre[i] = true;
    if (solve(node, pod, cap, cands, n, allowed, pre, costs, scratch, trial) != GS_EOK)
      continue;
    c = set_cost(cands, n, trial);
    if (gs__preempt_cost_cmp(&c, &best) < 0) {
      best = c;
      memcpy(out, trial, n * sizeof *out);
      code = GS_EOK;
    }
  }
done:
  gs_free(costs);
  gs_free(scratch);
  gs_free(pre);
  gs_free(trial);
  return code;
}

/* ---- budgets and the host ------------------------------------------------------- */

struct by_importance {
  const int32_t *prios;
};

static int importance_cmp(const void *a, const void *b, void *arg) {
  const int32_t *prios = ((const struct by_importance *)arg)->prios;
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  if (prios[x] != prios[y])
    return prios[x] > prios[y] ? -1 : 1;
  return x < y ? -1 : 1;
}

/* The victims (indices into budgets and prios) the most important first:
 * a plain insertion sort, n being a node's pods. */
static void order_by_importance(const int32_t *prios, size_t *order, size_t n) {
  struct by_importance arg = {prios};
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && importance_cmp(&order[j], &order[j - 1], &arg) < 0; j--) {
      size_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
}

/* Marks in ret_violating which of the n victims violate (kube-scheduler's
 * count); returns how many. order: scratch for n. */
static uint32_t mark_violations(const uint64_t *budgets, const int32_t *prios, size_t n,
                                const int32_t *allowed, uint32_t nbudgets, size_t *order,
                                bool *ret_violating) {
  int64_t left[GS_PREEMPT_BUDGETS_MAX];
  uint32_t count = 0;
  for (uint32_t b = 0; b < nbudgets && b < GS_PREEMPT_BUDGETS_MAX; b++)
    left[b] = allowed[b];
  for (size_t i = 0; i < n; i++)
    order[i] = i;
  order_by_importance(prios, order, n);
  for (size_t k = 0; k < n; k++) {
    size_t i = order[k];
    bool bad = false;
    for (uint32_t b = 0; b < nbudgets && b < GS_PREEMPT_BUDGETS_MAX; b++)
      if (budgets[i] & (UINT64_C(1) << b))
        bad = --left[b] < 0 || bad;
    if (ret_violating != NULL)
      ret_violating[i] = bad;
    count += bad;
  }
  return count;
}

uint32_t gs_preempt_violations(const uint64_t *budgets, const int32_t *prios, size_t n,
                               const int32_t *allowed, uint32_t nbudgets) {
  size_t *order = gs_calloc(n ? n : 1, sizeof *order);
  uint32_t count = 0;
  if (order == NULL) { /* no room to order them: the order given */
    int64_t left[GS_PREEMPT_BUDGETS_MAX];
    for (uint32_t b = 0; b < nbudgets && b < GS_PREEMPT_BUDGETS_MAX; b++)
      left[b] = allowed[b];
    for (size_t i = 0; i < n; i++) {
      bool bad = false;
      for (uint32_t b = 0; b < nbudgets && b < GS_PREEMPT_BUDGETS_MAX; b++)
        if (budgets[i] & (UINT64_C(1) << b))
          bad = --left[b] < 0 || bad;
      count += bad;
    }
    return count;
  }
  count = mark_violations(budgets, prios, n, allowed, nbudgets, order, NULL);
  gs_free(order);
  return count;
}

/* The victims of out as arrays for mark_violations (vb, vp, vi: room for n). */
static size_t victims_of(const struct gs_preempt_candidate *cands, size_t n, const bool *out,
                         uint64_t *vb, int32_t *vp, size_t *vi) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (out[i]) {
      vb[m] = cands[i].budgets;
      vp[m] = cands[i].alloc->priority;
      vi[m++] = i;
    }
  return m;
}

/* Scratch for the limited pick, one allocation per array. */
struct lim_scratch {
  uint64_t *vb;
  int32_t *vp;
  size_t *vi, *order;
  bool *violating;
};

/* Spares violating victims where the pod still fits without their
 * eviction, the most important first, as DefaultPreemption reprieves them;
 * returns how many of what is left violate. */
static uint32_t reprieve(const struct gs_node *node, const struct gs_place_pod *pod, uint32_t cap,
                         const struct gs_preempt_limits *lim,
                         const struct gs_preempt_candidate *cands, size_t n, bool *out,
                         struct lim_scratch *x) {
  for (;;) {
    size_t m = victims_of(cands, n, out, x->vb, x->vp, x->vi);
    uint32_t bad = mark_violations(x->vb, x->vp, m, lim->allowed, lim->nbudgets, x->order,
                                   x->violating);
    bool spared = false;
    if (bad == 0)
      return 0;
    for (size_t k = 0; k < m && !spared; k++) { /* x->order: the most important first */
      size_t i = x->vi[x->order[k]];
      if (!x->violating[x->order[k]])
        continue;
      out[i] = false;
      if (fits_after(node, pod, cap, cands, n, out) && host_after(node, pod, lim, cands, n, out))
        spared = true;
      else
        out[i] = true;
    }
    if (!spared)
      return bad;
  }
}

/* The host after the GPU set: more of the allowed candidates (lowest
 * priority first, then the most CPU, then the most memory) until the host
 * holds the pod, then the spares. False when all of them do not free it. */
static bool free_host(const struct gs_node *node, const struct gs_place_pod *pod, uint32_t cap,
                      const struct gs_preempt_limits *lim,
                      const struct gs_preempt_candidate *cands, size_t n, const bool *allowed,
                      bool *out) {
  bool added = false;
  while (!host_after(node, pod, lim, cands, n, out)) {
    size_t best = n;
    for (size_t i = 0; i < n; i++) {
      const struct gs_preempt_candidate *c = &cands[i], *b = &cands[best < n ? best : 0];
      if (!allowed[i] || out[i] || (c->cpu_milli == 0 && c->mem_mib == 0))
        continue;
      if (best == n || c->alloc->priority < b->alloc->priority ||
          (c->alloc->priority == b->alloc->priority &&
           (c->cpu_milli > b->cpu_milli ||
            (c->cpu_milli == b->cpu_milli && c->mem_mib > b->mem_mib))))
        best = i;
    }
    if (best == n)
      return false;
    out[best] = true;
    added = true;
  }
  if (added)
    spare(node, pod, cap, lim, cands, n, out);
  return true;
}

enum gs_err gs_preempt_pick_limited(const struct gs_node *node, const struct gs_place_pod *pod,
                                    uint32_t cgpu_max_pods,
                                    const struct gs_preempt_candidate *cands, size_t n,
                                    const struct gs_preempt_limits *lim, uint32_t *ret_idx,
                                    size_t *ret_n, uint32_t *ret_violations,
                                    struct gs_status *st) {
  uint32_t cap = node->mode == GS_MODE_CGPU ? cgpu_max_pods : 0;
  uint64_t exhausted = 0;
  bool *allowed = NULL, *out = NULL, *prev = NULL, host_short = false, any_protected = false;
  struct lim_scratch x = {NULL, NULL, NULL, NULL, NULL};
  uint32_t violations = 0;
  enum gs_err code = GS_ENOFIT;

  if (pod->mem ? !gs_mode_is_memory(node->mode) : node->mode != GS_MODE_TOPOLOGY) {
    if (node->mode == GS_MODE_NONE)
      return gs_status_set(st, GS_EUNRESOLVABLE, GS_R_NODE_NOT_MANAGED,
                           "node is not a GPU-sharing node");
    if (pod->mem)
      return gs_status_set(st, GS_EUNRESOLVABLE, GS_R_NODE_WHOLE_GPUS_ONLY,
                           "node serves whole GPUs only (topology mode)");
    return gs_status_set(st, GS_EUNRESOLVABLE, GS_R_NODE_MEMORY_ONLY,
                         "node does not serve whole GPUs");
  }
  if (lim != NULL && lim->nbudgets > GS_PREEMPT_BUDGETS_MAX)
    return gs_status_set(st, GS_EINVAL, GS_R_OTHER, "more than %u disruption budgets",
                         (unsigned)GS_PREEMPT_BUDGETS_MAX);
  for (uint32_t b = 0; lim != NULL && b < lim->nbudgets; b++)
    if (lim->allowed[b] <= 0)
      exhausted |= UINT64_C(1) << b;
  allowed = gs_calloc(n ? n : 1, sizeof *allowed);
  out = gs_calloc(n ? n : 1, sizeof *out);
  prev = gs_calloc(n ? n : 1, sizeof *prev);
  x.vb = gs_calloc(n ? n : 1, sizeof *x.vb);
  x.vp = gs_calloc(n ? n : 1, sizeof *x.vp);
  x.vi = gs_calloc(n ? n : 1, sizeof *x.vi);
  x.order = gs_calloc(n ? n : 1, sizeof *x.order);
  x.violating = gs_calloc(n ? n : 1, sizeof *x.violating);
  if (allowed == NULL || out == NULL || prev == NULL || x.vb == NULL || x.vp == NULL ||
      x.vi == NULL || x.order == NULL || x.violating == NULL) {
    code = gs_status_set(st, GS_ENOMEM, GS_R_OTHER, "out of memory");
    goto done;
  }
  /* kube-scheduler's own victims first, the node's other candidates only
   * when those cannot make room; and first without a pod whose budget
   * allows no disruption, then with them (the set then violates). A stage
   * allowing what the one before allowed is not run again. */
  for (size_t i = 0; i < n; i++)
    any_protected = any_protected || (cands[i].budgets & exhausted) != 0;
  for (int stage = 0; stage < (any_protected ? 4 : 2) && code == GS_ENOFIT; stage++) {
    bool same = stage > 0;
    for (size_t i = 0; i < n; i++) {
      allowed[i] = (stage % 2 == 1 || cands[i].proposed) &&
                   (stage >= 2 || (cands[i].budgets & exhausted) == 0);
      same = same && allowed[i] == prev[i];
      prev[i] = allowed[i];
    }
    if (same)
      continue;
    memset(out, 0, n * sizeof *out);
    code = pick_from(node, pod, cap, cands, n, allowed, out);
    if (code == GS_EOK && !free_host(node, pod, cap, lim, cands, n, allowed, out)) {
      host_short = true;
      code = GS_ENOFIT;
    }
  }
  if (code == GS_EOK && lim != NULL && lim->nbudgets > 0)
    violations = reprieve(node, pod, cap, lim, cands, n, out, &x);
  if (code == GS_EOK) {
    *ret_n = 0;
    for (size_t i = 0; i < n; i++)
      if (out[i])
        ret_idx[(*ret_n)++] = (uint32_t)i;
    if (ret_violations != NULL)
      *ret_violations = violations;
    gs_status_set(st, GS_EOK, GS_R_OTHER, "%s", "");
  } else if (code == GS_ENOFIT && host_short) {
    gs_status_set(st, code, GS_R_OTHER,
                  "lower-priority pods free GPUs for the pod but not its CPU and memory on "
                  "the node");
  } else if (code == GS_ENOFIT) {
    if (pod->k == 1)
      gs_status_set(st, code, GS_R_OTHER, "no lower-priority pods free one GPU for the pod");
    else
      gs_status_set(st, code, GS_R_OTHER, "no lower-priority pods free %u GPUs for the pod",
                    (unsigned)pod->k);
  } else {
    gs_status_set(st, code, GS_R_OTHER, "out of memory");
  }
done:
  gs_free(allowed);
  gs_free(out);
  gs_free(prev);
  gs_free(x.vb);
  gs_free(x.vp);
  gs_free(x.vi);
  gs_free(x.order);
  gs_free(x.violating);
  return code;
}

enum gs_err gs_preempt_pick(const struct gs_node *node, const struct gs_place_pod *pod,
                             uint32_t cgpu_max_pods, const struct gs_preempt_candidate *cands,
                             size_t n, uint32_t *ret_idx, size_t *ret_n,
                             struct gs_status *st) {
  return gs_preempt_pick_limited(node, pod, cgpu_max_pods, cands, n, NULL, ret_idx, ret_n, NULL,
                                 st);
}
