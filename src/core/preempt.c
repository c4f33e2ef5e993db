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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREEMPT_BUDGET 20000

struct cost {
  bool ok;
  int32_t maxprio;
  uint32_t count;
  uint64_t mib;
};

static int cost_cmp(const struct cost *a, const struct cost *b) {
  if (a->ok != b->ok)
    return a->ok ? -1 : 1;
  if (a->maxprio != b->maxprio)
    return a->maxprio < b->maxprio ? -1 : 1;
  if (a->count != b->count)
    return a->count < b->count ? -1 : 1;
  if (a->mib != b->mib)
    return a->mib < b->mib ? -1 : 1;
  return 0;
}

/* MiB of alloc on GPU g, and whether it touches g at all. */
static uint64_t share_on(const struct gs_alloc *a, uint32_t g, bool *touches) {
  uint64_t mib = 0;
  *touches = false;
  for (uint32_t i = 0; i < a->nparts; i++)
    if (a->parts[i].gpu == g) {
      mib += gs_alloc_part_mib(a, &a->parts[i]);
      *touches = true;
    }
  return mib;
}

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
      mib = share_on(cands[i].alloc, g, &touches);
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
static struct cost best_on_gpu(const struct gs_node *node, uint32_t g,
                               const struct gs_place_pod *pod, uint32_t cap,
                               const struct gs_preempt_candidate *cands, size_t n,
                               const bool *allowed, const bool *pre, bool *out) {
  const struct gs_gpu *gpu = &node->gpus[g];
  struct cost c = {false, 0, 0, 0};
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
    mib = share_on(cands[i].alloc, g, &touches);
    used = used > mib ? used - mib : 0;
    npods -= touches && npods > 0;
  }
  if (used + pod->mib_per_gpu > gpu->total_mib)
    deficit = used + pod->mib_per_gpu - gpu->total_mib;
  if (cap != 0 && npods >= cap)
    r = npods - cap + 1;
  if (deficit == 0 && r == 0)
    return (struct cost){true, INT32_MIN, 0, 0};
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
    mib = share_on(cands[i].alloc, g, &touches);
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
    c = (struct cost){true, prios[t], k, s->best_sum};
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
static struct cost clear_gpu(const struct gs_node *node, uint32_t g,
                             const struct gs_preempt_candidate *cands, size_t n,
                             const bool *allowed, const bool *pre, bool *out) {
  const struct gs_gpu *gpu = &node->gpus[g];
  struct cost c = {true, INT32_MIN, 0, 0};
  uint32_t gone = 0;
  if (!gpu->healthy)
    return (struct cost){false, 0, 0, 0};
  for (size_t i = 0; i < n; i++) {
    bool touches;
    uint64_t mib = share_on(cands[i].alloc, g, &touches);
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
    return (struct cost){false, 0, 0, 0};
  return c;
}

/* ---- the node ------------------------------------------------------------------- */

struct gpu_cost {
  uint32_t g;
  struct cost c;
};

static int gpu_cost_cmp(const void *a, const void *b) {
  const struct gpu_cost *x = a, *y = b;
  int d = cost_cmp(&x->c, &y->c);
  return d != 0 ? d : (x->g < y->g ? -1 : 1);
}

/* Spares every victim whose return still leaves the pod fitting, the most
 * important (highest priority, then most memory) first. */
static void spare(const struct gs_node *node, const struct gs_place_pod *pod, uint32_t cap,
                  const struct gs_preempt_candidate *cands, size_t n, bool *out) {
  for (;;) {
    size_t best = n;
    for (size_t i = 0; i < n; i++) {
      if (!out[i])
        continue;
      out[i] = false;
      if (fits_after(node, pod, cap, cands, n, out) &&
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
static struct cost set_cost(const struct gs_preempt_candidate *cands, size_t n, const bool *out) {
  struct cost c = {true, INT32_MIN, 0, 0};
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
    spare(node, pod, cap, cands, n, out);
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
  struct cost best;

  if (costs == NULL || scratch == NULL || pre == NULL || trial == NULL)
    goto done;
  code = solve(node, pod, cap, cands, n, allowed, pre, costs, scratch, out);
  best = code == GS_EOK ? set_cost(cands, n, out) : (struct cost){false, 0, 0, 0};
  for (size_t i = 0; pod->k > 1 && i < n; i++) {
    uint64_t gpus = 0;
    struct cost c;
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
    if (cost_cmp(&c, &best) < 0) {
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

enum gs_err gs_preempt_pick(const struct gs_node *node, const struct gs_place_pod *pod,
                             uint32_t cgpu_max_pods, const struct gs_preempt_candidate *cands,
                             size_t n, uint32_t *ret_idx, size_t *ret_n,
                             struct gs_status *st) {
  uint32_t cap = node->mode == GS_MODE_CGPU ? cgpu_max_pods : 0;
  bool *allowed = NULL, *out = NULL;
  enum gs_err code;

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
  allowed = gs_calloc(n ? n : 1, sizeof *allowed);
  out = gs_calloc(n ? n : 1, sizeof *out);
  if (allowed == NULL || out == NULL) {
    code = gs_status_set(st, GS_ENOMEM, GS_R_OTHER, "out of memory");
    goto done;
  }
  /* kube-scheduler's own victims first; the node's other candidates only
   * when those cannot make room. */
  for (size_t i = 0; i < n; i++)
    allowed[i] = cands[i].proposed;
  code = pick_from(node, pod, cap, cands, n, allowed, out);
  if (code == GS_ENOFIT) {
    for (size_t i = 0; i < n; i++)
      allowed[i] = true;
    code = pick_from(node, pod, cap, cands, n, allowed, out);
  }
  if (code == GS_EOK) {
    *ret_n = 0;
    for (size_t i = 0; i < n; i++)
      if (out[i])
        ret_idx[(*ret_n)++] = (uint32_t)i;
    gs_status_set(st, GS_EOK, GS_R_OTHER, "%s", "");
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
  return code;
}
