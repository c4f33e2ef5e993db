/* GPU-aware preemption for a whole gang (include/gpushare/gang_preempt.h,
 * docs/gangs.md "Preemption").
 *
 * Greedy over the slots, each on the node where k GPUs cost least. A GPU is
 * usable when it is healthy and everything on it is a candidate; its cost
 * is the candidates on it not already chosen (a victim chosen for one slot
 * frees all of its GPUs, which then cost nothing to the next slot). The
 * choice is made on a scratch copy and written out only when every slot
 * found a node: all or nothing. */
#include <gpushare/alloc.h>
#include <gpushare/gang_preempt.h>

#include "preempt_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The candidates of each node: ix->order[ix->lo[i] .. ix->hi[i]) are the
 * indices in cands of those on nodes[i]. Built once per call, by sorting on
 * the node's name, so that the per-node loops below touch only the node's
 * own candidates (a cluster has thousands of nodes and pods). */
struct node_index {
  size_t *order, *lo, *hi;
};
struct by_node {
  const char *node;
  size_t i;
};

static int by_node_cmp(const void *a, const void *b) {
  const struct by_node *x = a, *y = b;
  int c = strcmp(x->node, y->node);
  return c != 0 ? c : (x->i > y->i) - (x->i < y->i);
}

static void index_free(struct node_index *ix) {
  gs_free(ix->order);
  gs_free(ix->lo);
  gs_free(ix->hi);
  *ix = (struct node_index){0};
}

static bool index_build(const struct gs_node *const *nodes, size_t nnodes,
                        const struct gs_preempt_candidate *cands, size_t ncands,
                        struct node_index *ix) {
  struct by_node *s = gs_calloc(ncands ? ncands : 1, sizeof *s);
  ix->order = gs_calloc(ncands ? ncands : 1, sizeof *ix->order);
  ix->lo = gs_calloc(nnodes ? nnodes : 1, sizeof *ix->lo);
  ix->hi = gs_calloc(nnodes ? nnodes : 1, sizeof *ix->hi);
  if (s == NULL || ix->order == NULL || ix->lo == NULL || ix->hi == NULL) {
    gs_free(s);
    index_free(ix);
    return false;
  }
  for (size_t i = 0; i < ncands; i++)
    s[i] = (struct by_node){cands[i].alloc->node, i};
  qsort(s, ncands, sizeof *s, by_node_cmp);
  for (size_t i = 0; i < ncands; i++)
    ix->order[i] = s[i].i;
  for (size_t n = 0; n < nnodes; n++) {
    size_t lo = 0, hi = ncands;
    if (nodes[n] == NULL)
      continue;
    while (lo < hi) { /* the first candidate on nodes[n] or after it */
      size_t mid = lo + (hi - lo) / 2;
      if (strcmp(s[mid].node, nodes[n]->name) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    ix->lo[n] = ix->hi[n] = lo;
    while (ix->hi[n] < ncands && strcmp(s[ix->hi[n]].node, nodes[n]->name) == 0)
      ix->hi[n]++;
  }
  gs_free(s);
  return true;
}

/* GPU g of node: usable (everything on it may go) and at what cost, given
 * the victims already chosen (out). */
static bool gpu_cost(const struct gs_node *node, uint32_t g, const struct gs_preempt_candidate *cands,
                     const size_t *own, size_t nown, const bool *out,
                     struct gs__preempt_cost *ret) {
  const struct gs_gpu *gpu = &node->gpus[g];
  uint64_t cand_mib = 0;
  bool owner_is_cand = gpu->owner == NULL;
  struct gs__preempt_cost c = {true, INT32_MIN, 0, 0};
  if (!gpu->healthy)
    return false;
  for (size_t j = 0; j < nown; j++) {
    size_t i = own[j];
    const struct gs_alloc *a = cands[i].alloc;
    uint64_t mib;
    if (!gs__preempt_touches(a, g, &mib))
      continue;
    cand_mib += mib;
    owner_is_cand = owner_is_cand || gpu->owner == a;
    if (out[i])
      continue;
    if (c.count == 0 || a->priority > c.maxprio)
      c.maxprio = a->priority;
    c.count++;
  }
  if (!owner_is_cand || gpu->used_mib > cand_mib)
    return false; /* something that may not go is there */
  *ret = c;
  return true;
}

/* The k cheapest usable GPUs of node not taken yet: their mask and the
 * cost of taking them (the highest priority, the victims). false: fewer
 * than k usable. */
static bool node_cost(const struct gs_node *node, uint64_t taken, uint32_t k,
                      const struct gs_preempt_candidate *cands, const size_t *own, size_t nown,
                      const bool *out, uint64_t *ret_set, struct gs__preempt_cost *ret_cost,
                      uint32_t *ret_usable) {
  struct gs__preempt_cost costs[GS_MAX_GPUS];
  uint32_t idx[GS_MAX_GPUS], n = 0;
  struct gs__preempt_cost total = {true, INT32_MIN, 0, 0};
  uint64_t set = 0;
  for (uint32_t g = 0; g < node->ngpus && g < GS_MAX_GPUS; g++) {
    if (taken & (UINT64_C(1) << g))
      continue;
    if (gpu_cost(node, g, cands, own, nown, out, &costs[g]))
      idx[n++] = g;
  }
  if (n < k)
    return false;
  /* insertion sort by cost, lowest index first on ties (n <= 64) */
  for (uint32_t i = 1; i < n; i++) {
    uint32_t v = idx[i], j = i;
    for (; j > 0 && gs__preempt_cost_cmp(&costs[v], &costs[idx[j - 1]]) < 0; j--)
      idx[j] = idx[j - 1];
    idx[j] = v;
  }
  for (uint32_t i = 0; i < k; i++) {
    const struct gs__preempt_cost *c = &costs[idx[i]];
    set |= UINT64_C(1) << idx[i];
    if (c->count > 0 && (total.count == 0 || c->maxprio > total.maxprio))
      total.maxprio = c->maxprio;
    total.count += c->count;
  }
  *ret_set = set;
  *ret_cost = total;
  *ret_usable = n;
  return true;
}

/* A pick's answer: every one of slots replicas freed (done == slots), the
 * victims out and the first node they free written; else GS_ENOFIT saying
 * how many could be (each: one replica's ask), nothing written. */
static enum gs_err answer(uint32_t done, uint32_t slots, const char *each, const bool *out,
                          size_t ncands, size_t first, bool *ret_out, size_t *ret_first,
                          struct gs_status *st) {
  if (done < slots)
    return gs_status_set(st, GS_ENOFIT, GS_R_GANG_NO_FIT,
                         "gang preemption: only %" PRIu32 " of %" PRIu32
                         " replicas (%s each) can be freed by evicting lower-priority pods; "
                         "none is evicted",
                         done, slots, each);
  memcpy(ret_out, out, ncands * sizeof *out);
  *ret_first = first;
  gs_status_set(st, GS_EOK, GS_R_OTHER, "%s", "");
  return GS_EOK;
}

/* gs_gang_preempt_pick, and each slot's node and GPUs in ret_slots (room
 * for slots; NULL: not asked) for gs_gang_preempt_slots. */
static enum gs_err pick_whole(const struct gs_node *const *nodes, size_t nnodes, uint32_t slots,
                              uint32_t k, const struct gs_preempt_candidate *cands, size_t ncands,
                              bool *ret_out, size_t *ret_first, struct gs_gang_slot *ret_slots,
                              struct gs_status *st) {
  struct gs_gang_slot *chosen = NULL;
  bool *out = NULL;
  uint64_t *taken = NULL;
  struct node_index ix = {0};
  size_t first = nnodes;
  uint32_t done = 0;
  enum gs_err err = GS_EOK;

  if (k == 0 || slots == 0 || k > GS_MAX_GPUS)
    return gs_status_set(st, GS_EINVAL, GS_R_OTHER, "a gang of %" PRIu32 " slots of %" PRIu32
                         " GPUs cannot be preempted for", slots, k);
  out = gs_calloc(ncands ? ncands : 1, sizeof *out);
  taken = gs_calloc(nnodes ? nnodes : 1, sizeof *taken);
  chosen = gs_calloc(slots, sizeof *chosen);
  if (out == NULL || taken == NULL || chosen == NULL ||
      !index_build(nodes, nnodes, cands, ncands, &ix)) {
    err = gs_status_set(st, GS_ENOMEM, GS_R_OTHER, "out of memory");
    goto done;
  }
  for (; done < slots; done++) {
    size_t best = nnodes;
    uint64_t best_set = 0;
    struct gs__preempt_cost best_cost = {true, 0, 0, 0};
    uint32_t best_usable = 0;
    for (size_t i = 0; i < nnodes; i++) {
      uint64_t set;
      struct gs__preempt_cost c;
      uint32_t usable;
      if (nodes[i] == NULL || nodes[i]->mode != GS_MODE_TOPOLOGY ||
          !node_cost(nodes[i], taken[i], k, cands, ix.order + ix.lo[i], ix.hi[i] - ix.lo[i], out,
                     &set, &c, &usable))
        continue;
      if (best == nnodes || gs__preempt_cost_cmp(&c, &best_cost) < 0 ||
          (gs__preempt_cost_cmp(&c, &best_cost) == 0 && usable < best_usable)) {
        best = i;
        best_set = set;
        best_cost = c;
        best_usable = usable;
      }
    }
    if (best == nnodes)
      break;
    if (first == nnodes)
      first = best;
    taken[best] |= best_set;
    chosen[done] = (struct gs_gang_slot){best, best_set, 0};
    for (size_t j = ix.lo[best]; j < ix.hi[best]; j++) {
      size_t c = ix.order[j];
      uint64_t mib;
      if (out[c])
        continue;
      for (uint32_t g = 0; g < GS_MAX_GPUS && !out[c]; g++)
        if ((best_set & (UINT64_C(1) << g)) && gs__preempt_touches(cands[c].alloc, g, &mib))
          out[c] = true;
    }
  }
  {
    char each[32];
    snprintf(each, sizeof each, "%" PRIu32 " whole GPUs", k);
    err = answer(done, slots, each, out, ncands, first, ret_out, ret_first, st);
  }
  if (err == GS_EOK && ret_slots != NULL)
    memcpy(ret_slots, chosen, slots * sizeof *chosen);
done:
  gs_free(out);
  gs_free(taken);
  gs_free(chosen);
  index_free(&ix);
  return err;
}

enum gs_err gs_gang_preempt_pick(const struct gs_node *const *nodes, size_t nnodes, uint32_t slots,
                                 uint32_t k, const struct gs_preempt_candidate *cands,
                                 size_t ncands, bool *ret_out, size_t *ret_first,
                                 struct gs_status *st) {
  return pick_whole(nodes, nnodes, slots, k, cands, ncands, ret_out, ret_first, NULL, st);
}

/* ---- memory-shared gangs ------------------------------------------------- */

/* node as the choices so far leave it, in view (its GPUs in gpus): the
 * victims out gone, the slots placed on it (placed[g] MiB and pods[g] on
 * GPU g) added. */
static void node_after(const struct gs_node *node, const struct gs_preempt_candidate *cands,
                       const size_t *own, size_t nown, const bool *out, const uint64_t *placed,
                       const uint32_t *pods, struct gs_node *view, struct gs_gpu *gpus) {
  uint32_t n = node->ngpus < GS_MAX_GPUS ? node->ngpus : GS_MAX_GPUS;
  *view = *node;
  view->ngpus = n;
  view->gpus = gpus;
  for (uint32_t g = 0; g < n; g++) {
    gpus[g] = node->gpus[g];
    for (size_t j = 0; j < nown; j++) {
      size_t i = own[j];
      uint64_t mib;
      if (!out[i] || !gs__preempt_touches(cands[i].alloc, g, &mib))
        continue;
      gpus[g].used_mib = gpus[g].used_mib > mib ? gpus[g].used_mib - mib : 0;
      gpus[g].npods -= gpus[g].npods > 0;
    }
    gpus[g].used_mib += placed[g];
    gpus[g].npods += pods[g];
  }
}

/* gs_gang_preempt_pick_mem, with the slots as pick_whole. */
static enum gs_err pick_mem(const struct gs_node *const *nodes, size_t nnodes, uint32_t slots,
                            const struct gs_place_pod *pod, uint32_t cgpu_max_pods,
                            const struct gs_preempt_candidate *cands, size_t ncands,
                            bool *ret_out, size_t *ret_first, struct gs_gang_slot *ret_slots,
                            struct gs_status *st) {
  struct gs_gang_slot *chosen = NULL;
  bool *out = NULL;
  uint64_t *placed = NULL; /* nnodes x GS_MAX_GPUS MiB the slots take */
  uint32_t *pods = NULL;
  struct gs_preempt_candidate *local = NULL;
  size_t *map = NULL;
  uint32_t *idx = NULL;
  struct node_index ix = {0};
  size_t first = nnodes;
  uint32_t done = 0;
  enum gs_err err = GS_EOK;

  if (slots == 0 || pod == NULL || !pod->mem)
    return gs_status_set(st, GS_EINVAL, GS_R_OTHER, "not a memory-shared gang");
  out = gs_calloc(ncands ? ncands : 1, sizeof *out);
  placed = gs_calloc(nnodes ? nnodes * GS_MAX_GPUS : 1, sizeof *placed);
  pods = gs_calloc(nnodes ? nnodes * GS_MAX_GPUS : 1, sizeof *pods);
  local = gs_calloc(ncands ? ncands : 1, sizeof *local);
  map = gs_calloc(ncands ? ncands : 1, sizeof *map);
  idx = gs_calloc(ncands ? ncands : 1, sizeof *idx);
  chosen = gs_calloc(slots, sizeof *chosen);
  if (out == NULL || placed == NULL || pods == NULL || local == NULL || map == NULL ||
      idx == NULL || chosen == NULL || !index_build(nodes, nnodes, cands, ncands, &ix)) {
    err = gs_status_set(st, GS_ENOMEM, GS_R_OTHER, "out of memory");
    goto done;
  }
  for (; done < slots; done++) {
    size_t best = nnodes;
    struct gs__preempt_cost best_cost = {true, 0, 0, 0};
    for (size_t i = 0; i < nnodes; i++) {
      struct gs_gpu gpus[GS_MAX_GPUS];
      struct gs_node view;
      struct gs_status nst;
      struct gs__preempt_cost c = {true, INT32_MIN, 0, 0};
      size_t nl = 0, nv = 0;
      if (nodes[i] == NULL || !gs_mode_is_memory(nodes[i]->mode))
        continue;
      node_after(nodes[i], cands, ix.order + ix.lo[i], ix.hi[i] - ix.lo[i], out,
                 placed + i * GS_MAX_GPUS, pods + i * GS_MAX_GPUS, &view, gpus);
      for (size_t o = ix.lo[i]; o < ix.hi[i]; o++)
        if (!out[ix.order[o]]) {
          local[nl] = cands[ix.order[o]];
          map[nl++] = ix.order[o];
        }
      if (gs_preempt_pick(&view, pod, cgpu_max_pods, local, nl, idx, &nv, &nst) != GS_EOK)
        continue;
      for (size_t v = 0; v < nv; v++) {
        const struct gs_alloc *a = local[idx[v]].alloc;
        if (c.count == 0 || a->priority > c.maxprio)
          c.maxprio = a->priority;
        c.count++;
        for (uint32_t p = 0; p < a->nparts; p++)
          c.mib += gs_alloc_part_mib(a, &a->parts[p]);
      }
      if (best == nnodes || gs__preempt_cost_cmp(&c, &best_cost) < 0) {
        best = i;
        best_cost = c;
      }
    }
    if (best == nnodes)
      break;
    /* the winner's set again (the scratch arrays served every node), then
     * the GPUs the slot takes once it is gone */
    {
      struct gs_gpu gpus[GS_MAX_GPUS];
      struct gs_node view;
      struct gs_status nst;
      struct gs_choice choice;
      size_t nl = 0, nv = 0;
      uint64_t *pl = placed + best * GS_MAX_GPUS;
      uint32_t *pp = pods + best * GS_MAX_GPUS;
      const size_t *own = ix.order + ix.lo[best];
      size_t nown = ix.hi[best] - ix.lo[best];
      node_after(nodes[best], cands, own, nown, out, pl, pp, &view, gpus);
      for (size_t o = 0; o < nown; o++)
        if (!out[own[o]]) {
          local[nl] = cands[own[o]];
          map[nl++] = own[o];
        }
      if (gs_preempt_pick(&view, pod, cgpu_max_pods, local, nl, idx, &nv, &nst) != GS_EOK)
        break; /* the same inputs: not reached */
      for (size_t v = 0; v < nv; v++)
        out[map[idx[v]]] = true;
      node_after(nodes[best], cands, own, nown, out, pl, pp, &view, gpus);
      if (gs_place_pick_prepared(&view, pod, NULL, NULL, &choice, &nst) != GS_EOK)
        break; /* gs_preempt_pick said it fits: not reached */
      chosen[done] = (struct gs_gang_slot){best, 0, choice.mib_per_gpu};
      for (uint32_t g = 0; g < choice.ngpus; g++) {
        pl[choice.gpus[g]] += choice.mib_per_gpu;
        pp[choice.gpus[g]]++;
        chosen[done].gpus |= UINT64_C(1) << choice.gpus[g];
      }
    }
    if (first == nnodes)
      first = best;
  }
  {
    char each[64];
    snprintf(each, sizeof each, "%" PRIu64 " MiB on %" PRIu32 " GPU%s", pod->mib_per_gpu, pod->k,
             pod->k == 1 ? "" : "s");
    err = answer(done, slots, each, out, ncands, first, ret_out, ret_first, st);
  }
  if (err == GS_EOK && ret_slots != NULL)
    memcpy(ret_slots, chosen, slots * sizeof *chosen);
done:
  gs_free(chosen);
  gs_free(out);
  gs_free(placed);
  gs_free(pods);
  gs_free(local);
  gs_free(map);
  gs_free(idx);
  index_free(&ix);
  return err;
}

enum gs_err gs_gang_preempt_pick_mem(const struct gs_node *const *nodes, size_t nnodes,
                                     uint32_t slots, const struct gs_place_pod *pod,
                                     uint32_t cgpu_max_pods,
                                     const struct gs_preempt_candidate *cands, size_t ncands,
                                     bool *ret_out, size_t *ret_first,
                                     struct gs_status *st) {
  return pick_mem(nodes, nnodes, slots, pod, cgpu_max_pods, cands, ncands, ret_out, ret_first,
                  NULL, st);
}

enum gs_err gs_gang_preempt_slots(const struct gs_node *const *nodes, size_t nnodes,
                                  uint32_t slots, const struct gs_place_pod *pod,
                                  uint32_t cgpu_max_pods,
                                  const struct gs_preempt_candidate *cands, size_t ncands,
                                  bool *ret_out, struct gs_gang_slot *ret_slots,
                                  struct gs_status *st) {
  size_t first;
  if (pod == NULL || slots == 0 || ret_slots == NULL)
    return gs_status_set(st, GS_EINVAL, GS_R_OTHER, "no slots to preempt for");
  if (pod->mem)
    return pick_mem(nodes, nnodes, slots, pod, cgpu_max_pods, cands, ncands, ret_out, &first,
                    ret_slots, st);
  return pick_whole(nodes, nnodes, slots, pod->k, cands, ncands, ret_out, &first, ret_slots, st);
}
