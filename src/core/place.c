/* Placement on one node: is the pod valid, which GPUs would take it, how
 * good is the node. Pure: reads the node view, never changes the ledger.
 *
 * Reasons are node-independent on purpose: kube-scheduler counts nodes per
 * reason text in its FailedScheduling event, so a reason may quote the
 * request but never the node's name or its per-node numbers.
 */
#include <gpushare/place.h>

#include "caps.h"
#include "place_int.h"

#include <gpushare/topo.h>

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define REASON_NOT_SHARING "node is not a GPU-sharing node"
#define REASON_TOPOLOGY_ONLY "node serves whole GPUs only (topology mode)"
#define REASON_SINGLE_CARD                                                                    \
  "node's device plugin runs one GPU per pod (label gpushare.io/multi-card=false)"
#define REASON_NO_WHOLE "node does not serve whole GPUs"
#define REASON_NO_HEALTHY "no healthy GPU"
#define REASON_CGPU_CAP "GPU pod limit reached (cgpu)"
#define REASON_NO_SINGLE "insufficient GPU memory on any single GPU"

void gs_policy_init(struct gs_policy *policy) {
  *policy = (struct gs_policy){
      .unit_mib = GS_UNIT_GIB,
      .cgpu_max_pods = 16,
      .node_policy = GS_PLACE_BINPACK,
      .frag_aware = false,
      .gang_timeout_s = 60,
      .frag_normalize = false,
  };
}

static void copy_reason(char reason[GS_REASON_MAX], const char *text) {
  size_t n = strnlen(text, GS_REASON_MAX - 1);
  memcpy(reason, text, n);
  reason[n] = '\0';
}

static enum gs_err clear_reason(enum gs_err fit, struct gs_status *st) {
  if (st != NULL) {
    st->code = fit;
    st->why = GS_R_OTHER;
    st->reason[0] = '\0';
  }
  return fit;
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static enum gs_err verdict(enum gs_err fit, struct gs_status *st, enum gs_reason why,
                           const char *fmt, ...) {
  va_list ap;
  char *reason;
  if (st == NULL)
    return fit;
  st->code = fit;
  st->why = why;
  reason = st->reason;
  va_start(ap, fmt);
  /* Most verdicts are a fixed text or "%s": skip the formatter, which ran
   * for every node of every request (docs/benchmarks.md, core). */
  if (strchr(fmt, '%') == NULL)
    copy_reason(reason, fmt);
  else if (strcmp(fmt, "%s") == 0)
    copy_reason(reason, va_arg(ap, const char *));
  else
    vsnprintf(reason, GS_REASON_MAX, fmt, ap);
  va_end(ap);
  return fit;
}

/* A fixed verdict text, copied with its length known at compile time: the
 * refusals below are written for most nodes of most requests, and finding
 * the length at run time (verdict's strchr and strnlen) cost more than the
 * copy (docs/benchmarks.md, core). The array size checks the length. */
#define FIXED(fit, st, why, text)                                                             \
  fixed_verdict((fit), (st), (why), (text),                                                   \
                sizeof(char[sizeof(text) <= GS_REASON_MAX ? sizeof(text) : -1]))
static enum gs_err fixed_verdict(enum gs_err fit, struct gs_status *st, enum gs_reason why,
                                 const char *text, size_t size) {
  if (st != NULL) {
    st->code = fit;
    st->why = why;
    memcpy(st->reason, text, size);
  }
  return fit;
}

/* Containers that get memory parts: those asking for gpu-mem, or container 0
 * alone when only an init container asks (its excess needs a home). */
static uint32_t first_mem_container(const struct gs_pod_request *req) {
  for (uint32_t c = 0; c < req->ncontainers; c++)
    if (req->mem_units[c] > 0)
      return c;
  return 0;
}

static uint32_t first_whole_container(const struct gs_pod_request *req) {
  for (uint32_t c = 0; c < req->ncontainers; c++)
    if (req->whole_gpus[c] > 0)
      return c;
  return 0;
}

static uint32_t mem_part_containers(const struct gs_pod_request *req) {
  uint32_t n = 0;
  for (uint32_t c = 0; c < req->ncontainers; c++)
    if (req->mem_units[c] > 0)
      n++;
  /* Init-only request: the excess goes to container 0. */
  return n > 0 ? n : 1;
}

/* ---- the pod on its own ----------------------------------------------------- */

/* What placement needs to know about a pod, gathered in one pass over its
 * containers. */
struct pod_info {
  bool mem, whole;
  uint64_t mem_eff;   /* gs_pod_request_mem_effective */
  uint64_t whole_eff; /* gs_pod_request_whole_effective */
};

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static enum gs_err check(const struct gs_pod_request *req, const struct gs_policy *policy,
                         struct gs_status *st, struct pod_info *info) {
  uint64_t sum = 0, wsum = 0;
  uint32_t m, nmem = 0;
  assert(policy->unit_mib == GS_UNIT_GIB || policy->unit_mib == GS_UNIT_128MIB);
  if (req->ncontainers > GS_MAX_CONTAINERS)
    return verdict(GS_EUNRESOLVABLE, st, GS_R_INVALID_POD,
                   "pod has more than %u containers",
                   (unsigned)GS_MAX_CONTAINERS);
  for (uint32_t c = 0; c < req->ncontainers; c++) {
    sum = sat_add(sum, req->mem_units[c]);
    wsum = sat_add(wsum, req->whole_gpus[c]);
    nmem += req->mem_units[c] > 0;
  }
  info->mem_eff = req->init_mem_units > sum ? req->init_mem_units : sum;
  info->whole_eff = req->init_whole_gpus > wsum ? req->init_whole_gpus : wsum;
  info->mem = info->mem_eff > 0;
  info->whole = info->whole_eff > 0;
  if (!info->mem && !info->whole)
    return clear_reason(GS_ESKIP, st);
  if (info->mem && info->whole)
    return verdict(GS_EUNRESOLVABLE, st, GS_R_INVALID_POD,
                   "pod requests both aliyun.com/gpu-mem and aliyun.com/gpu; "
                   "a pod gets either shared GPU memory or whole GPUs");
  if (info->whole) {
    if (info->whole_eff > GS_MAX_GPUS)
      return verdict(GS_EUNRESOLVABLE, st, GS_R_INVALID_POD,
                   "aliyun.com/gpu %llu exceeds %u GPUs per node",
                     (unsigned long long)info->whole_eff, (unsigned)GS_MAX_GPUS);
    return clear_reason(GS_EOK, st);
  }
  m = req->gpu_count;
  if (m == 0 && req->gpu_count_text[0] != '\0')
    return verdict(GS_EUNRESOLVABLE, st, GS_R_INVALID_POD,
                   "aliyun.com/gpu-count \"%s\" is not a number from 1 to %u",
                   req->gpu_count_text, (unsigned)GS_MAX_GPUS);
  if (m < 1 || m > GS_MAX_GPUS)
    return verdict(GS_EUNRESOLVABLE, st, GS_R_INVALID_POD,
                   "aliyun.com/gpu-count %u is out of range 1..%u",
                   (unsigned)m, (unsigned)GS_MAX_GPUS);
  if (m > 1) {
    for (uint32_t c = 0; c < req->ncontainers; c++) {
      if (req->mem_units[c] % m != 0)
        return verdict(GS_EUNRESOLVABLE, st, GS_R_INVALID_POD,
                       "aliyun.com/gpu-mem %llu is not divisible by aliyun.com/gpu-count %u",
                       (unsigned long long)req->mem_units[c], (unsigned)m);
    }
    if (req->init_mem_units % m != 0)
      return verdict(GS_EUNRESOLVABLE, st, GS_R_INVALID_POD,
                     "aliyun.com/gpu-mem %llu (init container) is not divisible by "
                     "aliyun.com/gpu-count %u",
                     (unsigned long long)req->init_mem_units, (unsigned)m);
  }
  if (info->mem_eff / m > GS__PART_MIB_MAX / policy->unit_mib)
    return verdict(GS_EUNRESOLVABLE, st, GS_R_INVALID_POD,
                   "aliyun.com/gpu-mem %llu is too large",
                   (unsigned long long)info->mem_eff);
  /* Init-only request: the excess goes to container 0 (one part set). */
  if ((nmem > 0 ? nmem : 1) * m > GS_MAX_PARTS)
    return verdict(GS_EUNRESOLVABLE, st, GS_R_INVALID_POD,
                   "pod needs more than %u (container, GPU) shares", (unsigned)GS_MAX_PARTS);
  return clear_reason(GS_EOK, st);
}

enum gs_err gs_place_check_pod(const struct gs_pod_request *req, const struct gs_policy *policy,
                               struct gs_status *st) {
  struct pod_info info;
  return check(req, policy, st, &info);
}

enum gs_err gs_place_prepare(const struct gs_pod_request *req, const struct gs_policy *policy,
                             struct gs_place_pod *ret_pod, struct gs_status *st) {
  struct pod_info info;
  enum gs_err fit = check(req, policy, st, &info);
  if (fit != GS_EOK)
    return fit;
  ret_pod->req = req;
  ret_pod->policy = policy;
  ret_pod->mem = info.mem;
  /* check() bounds both: 1..GS_MAX_GPUS GPUs, parts far below 2^64. */
  ret_pod->k = info.mem ? req->gpu_count : (uint32_t)info.whole_eff;
  ret_pod->mib_per_gpu = info.mem ? info.mem_eff / req->gpu_count * policy->unit_mib : 0;
  return GS_EOK;
}

/* A pod gs_place_signature cannot sign: why, in sig. */
static enum gs_err unsigned_pod(char sig[GS_REASON_MAX], const char *why) {
  copy_reason(sig, why);
  return GS_EUNRESOLVABLE;
}

enum gs_err gs_place_signature(const struct gs_pod_request *req, const struct gs_policy *policy,
                               char sig[GS_REASON_MAX]) {
  struct gs_place_pod pod;
  struct gs_status why;
  size_t at;
  int n;
  enum gs_err fit = gs_place_prepare(req, policy, &pod, &why);
  bool frag_host = gs_place_frag_scores_host(req, policy);
  if (gs_pod_request_is_gang_member(req))
    return unsigned_pod(sig, "a member of a distributed job is placed by its plan");
  if (fit == GS_ESKIP && !frag_host) {
    sig[0] = '\0';
    return GS_ESKIP;
  }
  if (policy->node_policy == GS_PLACE_FRAG)
    return unsigned_pod(sig, "nodePolicy frag weighs the whole cluster's shares");
  if (fit != GS_EOK)
    return unsigned_pod(sig, why.reason);
  n = snprintf(sig, GS_REASON_MAX, "%s k=%u mib=%llu prio=%d init=%llu/%llu c=",
               pod.mem ? "mem" : "whole", (unsigned)pod.k, (unsigned long long)pod.mib_per_gpu,
               (int)req->priority, (unsigned long long)req->init_mem_units,
               (unsigned long long)req->init_whole_gpus);
  at = n > 0 ? (size_t)n : 0;
  for (uint32_t c = 0; c < req->ncontainers && at < GS_REASON_MAX; c++) {
    n = snprintf(sig + at, GS_REASON_MAX - at, "%llu/%llu,",
                 (unsigned long long)req->mem_units[c], (unsigned long long)req->whole_gpus[c]);
    at += n > 0 ? (size_t)n : 0;
  }
  if (at >= GS_REASON_MAX)
    return unsigned_pod(sig, "too many containers to sign");
  return GS_EOK;
}

/* ---- choosing GPUs ------------------------------------------------------------ */

uint64_t gs__place_mem_key(const struct gs_node *node, const struct gs_policy *policy,
                           uint64_t need_mib, uint32_t g) {
  return gs__place_mem_key_of(gpu_free_mib(&node->gpus[g]), need_mib, policy->frag_aware,
                              gs__place_spread_flip(node), g);
}

/* Keeps best[0..k) the k smallest keys seen, ascending: the new key sinks
 * through the array, each place keeping the smaller value. No branch
 * depends on the keys (an insertion sort of the candidates mispredicted
 * most of its compares: the two-card pod cost twice the one-card pod). */
static void keep_smallest(uint64_t *best, uint32_t k, uint64_t key) {
  for (uint32_t j = 0; j < k; j++) {
    uint64_t lo = key < best[j] ? key : best[j];
    key = key < best[j] ? best[j] : key;
    best[j] = lo;
  }
}

enum gs_err gs_place_choose_default(void *ctx, const struct gs_node *node,
                                    const struct gs_pod_request *req,
                                    const struct gs_policy *policy, uint64_t candidates,
                                    uint32_t k, uint64_t mib_per_gpu,
                                    uint32_t ret_gpus[GS_MAX_GPUS], struct gs_status *st) {
  uint32_t order[GS_MAX_GPUS];
  uint32_t n = 0;
  bool mem = gs_pod_request_is_memory(req);
  (void)ctx;
  for (uint32_t g = 0; g < node->ngpus && g < GS_MAX_GPUS; g++)
    if (candidates >> g & 1)
      order[n++] = g;
  if (n < k)
    return verdict(GS_ENOFIT, st, GS_R_INSUFFICIENT_GPUS, "fewer than %u usable GPUs",
                   (unsigned)k);
  /* Several GPUs (or a whole GPU) on a node with a known interconnect: the
   * set that is best connected while keeping good sets free for later
   * (docs/topology.md). A single memory share keeps binpack/spread. */
  if (node->topo != NULL && node->topo->n == node->ngpus && (k > 1 || !mem)) {
    uint64_t set = 0;
    /* The ledger's table holds the same answers for small matrices. */
    if (node->topo_choice != NULL && node->ngpus <= GS_TOPO_TABLE_GPUS && k >= 1 &&
        k <= node->ngpus)
      set = node->topo_choice[(k - 1) * 256 + (candidates & 0xff)];
    if (set != 0 || gs_topo_choose(node->topo, candidates, k, &set) == GS_EOK) {
      uint32_t i = 0;
      for (uint32_t g = 0; g < node->ngpus && i < k; g++)
        if (set >> g & 1)
          ret_gpus[i++] = g;
      if (i == k)
        return GS_EOK;
    }
  }
  /* Whole GPUs: lowest indices (order is already ascending). */
  if (mem) {
    uint64_t best[GS_MAX_GPUS];
    for (uint32_t i = 0; i < k; i++)
      best[i] = UINT64_MAX;
    for (uint32_t i = 0; i < n; i++)
      keep_smallest(best, k, gs__place_mem_key(node, policy, mib_per_gpu, order[i]));
    for (uint32_t i = 0; i < k; i++)
      order[i] = (uint32_t)(best[i] & 63);
  }
  for (uint32_t i = 0; i < k; i++)
    ret_gpus[i] = order[i];
  return GS_EOK;
}

/* ---- one node ------------------------------------------------------------------ */

/* round(10 × used / total) in integers, half up; 0 when total is 0. */
static int64_t score_fill(uint64_t used, uint64_t total, enum gs_placement node_policy) {
  int64_t s = total ? (int64_t)((20 * used + total) / (2 * total)) : 0;
  if (s > 10)
    s = 10;
  return node_policy == GS_PLACE_SPREAD ? 10 - s : s;
}

/* One pass over a node's GPUs for a memory pod (see mem_candidates). */
struct mem_scan {
  uint64_t roomy;      /* healthy, not owned, enough free memory */
  uint64_t candidates; /* roomy and under the cgpu cap */
  uint64_t total;      /* total memory, every GPU */
  uint32_t healthy;
};

/* No branch on a GPU's state: GPUs of a half-full cluster pass or fail at
 * random, and the mispredicted branches cost more than computing every
 * GPU's key (docs/benchmarks.md, core). With best (room for m keys), keeps
 * the m smallest keys of the candidates. Inlined with m and best constant
 * (mem_candidates), so each caller gets a loop without their tests. */
static inline void mem_scan(const struct gs_node *node, const struct gs_policy *policy,
                            uint64_t need_mib, uint32_t m, uint64_t *best,
                            struct mem_scan *out) {
  uint64_t roomy = 0, candidates = 0, total = 0, best1 = UINT64_MAX;
  uint64_t flip = gs__place_spread_flip(node);
  uint32_t healthy = 0;
  uint32_t cap = node->mode == GS_MODE_CGPU && policy->cgpu_max_pods != 0
                     ? policy->cgpu_max_pods
                     : 0;
  bool frag_aware = policy->frag_aware;
  if (best != NULL && m > 1)
    for (uint32_t j = 0; j < m; j++)
      best[j] = UINT64_MAX;
  for (uint32_t g = 0; g < node->ngpus; g++) {
    const struct gs_gpu *gpu = &node->gpus[g];
    uint64_t free_mib = gpu_free_mib(gpu), key;
    uint64_t room = gpu->healthy & (gpu->owner == NULL) & (free_mib >= need_mib);
    uint64_t capped = (cap != 0) & (gpu->npods >= cap);
    uint64_t ok = room & ~capped;
    total += gpu->total_mib;
    healthy += gpu->healthy;
    roomy |= room << g;
    candidates |= ok << g;
    if (best == NULL)
      continue;
    /* A GPU that cannot take the pod gets the largest key: ok − 1 is all
     * ones then, 0 otherwise. */
    key = gs__place_mem_key_of(free_mib, need_mib, frag_aware, flip, g) | (ok - 1);
    if (m == 1)
      best1 = key < best1 ? key : best1;
    else
      keep_smallest(best, m, key);
  }
  if (best != NULL && m == 1)
    best[0] = best1;
  *out = (struct mem_scan){roomy, candidates, total, healthy};
}

/* Whether x has at least m (≥ 1) bits set: clears the lowest m − 1. */
static bool has_bits(uint64_t x, uint32_t m) {
  for (uint32_t i = 1; i < m && x != 0; i++)
    x &= x - 1;
  return x != 0;
}

/* Candidates for a memory pod, or a reason why there are too few. With
 * ret_best (room for m keys), also the m smallest mem_keys among them,
 * ascending: the default choice of GPUs without an interconnect to weigh,
 * found in the same pass. */
static enum gs_err mem_candidates(const struct gs_node *node, const struct gs_policy *policy,
                                  uint32_t m, uint64_t need_mib, uint64_t *ret_candidates,
                                  uint64_t *ret_best, struct gs_status *st) {
  struct mem_scan sc;
  uint64_t candidates, roomy, total;
  uint32_t healthy;
  if (ret_best == NULL)
    mem_scan(node, policy, need_mib, m, NULL, &sc);
  else if (m == 1)
    mem_scan(node, policy, need_mib, 1, ret_best, &sc);
  else if (m == 2)
    mem_scan(node, policy, need_mib, 2, ret_best, &sc);
  else
    mem_scan(node, policy, need_mib, m, ret_best, &sc);
  candidates = sc.candidates;
  roomy = sc.roomy;
  total = sc.total;
  healthy = sc.healthy;
  if (total == 0)
    return FIXED(GS_ENOFIT, st, GS_R_NODE_NOT_MANAGED, REASON_NOT_SHARING);
  if (healthy == 0)
    return FIXED(GS_ENOFIT, st, GS_R_NO_HEALTHY_GPU, REASON_NO_HEALTHY);
  if (has_bits(candidates, m)) {
    *ret_candidates = candidates;
    return GS_EOK;
  }
  /* Memory would do; only the pod cap stands in the way. */
  if (has_bits(roomy, m))
    return FIXED(GS_ENOFIT, st, GS_R_CGPU_POD_LIMIT, REASON_CGPU_CAP);
  if (m == 1)
    return FIXED(GS_ENOFIT, st, GS_R_INSUFFICIENT_GPU_MEMORY, REASON_NO_SINGLE);
  return verdict(GS_ENOFIT, st, GS_R_INSUFFICIENT_GPU_MEMORY,
                 "fewer than %u GPUs with %llu MiB free", (unsigned)m,
                 (unsigned long long)need_mib);
}

static enum gs_err whole_candidates(const struct gs_node *node, uint32_t k,
                                    uint64_t *ret_candidates, struct gs_status *st) {
  uint64_t candidates = 0;
  uint32_t healthy = 0;
  for (uint32_t g = 0; g < node->ngpus; g++) {
    const struct gs_gpu *gpu = &node->gpus[g];
    if (!gpu->healthy)
      continue;
    healthy++;
    if (gpu->owner == NULL && gpu->npods == 0 && gpu->used_mib == 0)
      candidates |= UINT64_C(1) << g;
  }
  if (healthy == 0)
    return FIXED(GS_ENOFIT, st, GS_R_NO_HEALTHY_GPU, REASON_NO_HEALTHY);
  if (!has_bits(candidates, k))
    return verdict(GS_ENOFIT, st, GS_R_INSUFFICIENT_WHOLE_GPUS, "fewer than %u free whole GPUs",
                   (unsigned)k);
  *ret_candidates = candidates;
  return GS_EOK;
}

enum gs_err gs_place_pick_prepared(const struct gs_node *node, const struct gs_place_pod *pod,
                                   gs_place_choose_fn choose, void *choose_ctx,
                                   struct gs_choice *ret_choice, struct gs_status *st) {
  struct gs_choice choice; /* gpus[] past ngpus stays unset: 300 bytes a node */
  const struct gs_policy *policy = pod->policy;
  uint32_t picked[GS_MAX_GPUS];
  uint64_t candidates = 0, seen = 0, total = 0, used = 0, best[GS_MAX_GPUS];
  uint32_t k = pod->k;
  bool mem = pod->mem, fast;
  enum gs_err fit;
  choice.ngpus = 0;
  choice.mib_per_gpu = pod->mib_per_gpu;
  choice.score = 0;
  if (node->mode == GS_MODE_NONE)
    return FIXED(GS_ENOFIT, st, GS_R_NODE_NOT_MANAGED, REASON_NOT_SHARING);
  if (mem && node->mode == GS_MODE_TOPOLOGY)
    return FIXED(GS_ENOFIT, st, GS_R_NODE_WHOLE_GPUS_ONLY, REASON_TOPOLOGY_ONLY);
  if (!mem && gs_mode_is_memory(node->mode))
    return FIXED(GS_ENOFIT, st, GS_R_NODE_MEMORY_ONLY, REASON_NO_WHOLE);
  if (node->ngpus == 0)
    return FIXED(GS_ENOFIT, st, GS_R_NODE_NOT_MANAGED, REASON_NOT_SHARING);
  if (mem && k > 1 && node->single_card)
    return FIXED(GS_ENOFIT, st, GS_R_NODE_SINGLE_CARD, REASON_SINGLE_CARD);
  if (mem) {
    /* The default chooser without an interconnect to weigh (one GPU, or a
     * node without a topology): its choice is the k best keys, found while
     * collecting candidates (the same answer, one pass). */
    fast = choose == NULL &&
           (k == 1 || node->topo == NULL || node->topo->n != node->ngpus);
    fit = mem_candidates(node, policy, k, choice.mib_per_gpu, &candidates,
                         fast ? best : NULL, st);
  } else {
    fast = false;
    fit = whole_candidates(node, k, &candidates, st);
  }
  if (fit != GS_EOK)
    return fit;
  if (fast) {
    for (uint32_t i = 0; i < k; i++)
      seen |= UINT64_C(1) << (best[i] & 63);
    for (; seen != 0; seen &= seen - 1)
      choice.gpus[choice.ngpus++] = (uint32_t)__builtin_ctzll(seen);
    goto score;
  }

  fit = (choose ? choose : gs_place_choose_default)(choose_ctx, node, pod->req, policy,
                                                    candidates, k, choice.mib_per_gpu, picked,
                                                    st);
  if (fit != GS_EOK) {
    fit = fit == GS_EUNRESOLVABLE ? GS_EUNRESOLVABLE : GS_ENOFIT;
    if (st != NULL)
      st->code = fit;
    return fit;
  }
  /* A chooser is plugin code: check its answer rather than trust it. */
  for (uint32_t i = 0; i < k; i++) {
    uint32_t g = picked[i];
    if (g >= node->ngpus || !(candidates >> g & 1) || (seen >> g & 1))
      return FIXED(GS_ENOFIT, st, GS_R_OTHER, "GPU chooser returned an invalid set");
    seen |= UINT64_C(1) << g;
  }
  for (uint32_t g = 0; g < node->ngpus; g++)
    if (seen >> g & 1)
      choice.gpus[choice.ngpus++] = g;

score:
  if (mem) {
    total = used = 0;
    for (uint32_t i = 0; i < choice.ngpus; i++) {
      total += node->gpus[choice.gpus[i]].total_mib;
      used += node->gpus[choice.gpus[i]].used_mib + choice.mib_per_gpu;
    }
    choice.score = score_fill(used, total, policy->node_policy);
  } else {
    uint32_t busy = k;
    for (uint32_t g = 0; g < node->ngpus; g++)
      if (node->gpus[g].owner != NULL || node->gpus[g].npods > 0)
        busy++;
    choice.score = score_fill(busy, node->ngpus, policy->node_policy);
  }
  /* Several GPUs: the interconnect of the chosen set counts as much as the
   * fill, so prioritize prefers the node offering the better-joined set. */
  if (k > 1 && node->topo != NULL) {
    uint64_t set = 0;
    for (uint32_t i = 0; i < choice.ngpus; i++)
      set |= UINT64_C(1) << choice.gpus[i];
    uint32_t q = node->topo_set_score != NULL && set < 256 ? node->topo_set_score[set]
                                                            : gs_topo_set_score(node->topo, set);
    choice.score = (choice.score + (int64_t)q + 1) / 2;
  }
  ret_choice->ngpus = choice.ngpus;
  /* A loop: one or two GPUs as a rule, less than a memcpy call costs. */
  for (uint32_t i = 0; i < choice.ngpus; i++)
    ret_choice->gpus[i] = choice.gpus[i];
  ret_choice->mib_per_gpu = choice.mib_per_gpu;
  ret_choice->score = choice.score;
  return clear_reason(GS_EOK, st);
}

enum gs_err gs_place_fits_prepared(const struct gs_node *node, const struct gs_place_pod *pod,
                                   struct gs_status *st) {
  struct gs_choice choice;
  uint64_t candidates = 0;
  uint32_t k = pod->k;
  enum gs_err fit;
  /* gs_place_pick_prepared's fast case: there the candidates decide (its
   * checks before them are these, in this order) */
  if (!pod->mem || node->mode == GS_MODE_NONE || node->mode == GS_MODE_TOPOLOGY ||
      node->ngpus == 0 || (k > 1 && (node->single_card || (node->topo != NULL &&
                                                            node->topo->n == node->ngpus))))
    return gs_place_pick_prepared(node, pod, NULL, NULL, &choice, st);
  fit = mem_candidates(node, pod->policy, k, pod->mib_per_gpu, &candidates, NULL, st);
  return fit != GS_EOK ? fit : clear_reason(GS_EOK, st);
}

enum gs_err gs_place_pick_with(const struct gs_node *node, const struct gs_pod_request *req,
                               const struct gs_policy *policy, gs_place_choose_fn choose,
                               void *choose_ctx, struct gs_choice *ret_choice,
                               struct gs_status *st) {
  struct gs_place_pod pod;
  enum gs_err fit = gs_place_prepare(req, policy, &pod, st);
  if (fit != GS_EOK)
    return fit;
  return gs_place_pick_prepared(node, &pod, choose, choose_ctx, ret_choice, st);
}

enum gs_err gs_place_pick(const struct gs_node *node, const struct gs_pod_request *req,
                          const struct gs_policy *policy, struct gs_choice *ret_choice,
                          struct gs_status *st) {
  return gs_place_pick_with(node, req, policy, NULL, NULL, ret_choice, st);
}

/* ---- parts --------------------------------------------------------------------- */

uint32_t gs_place_parts(const struct gs_pod_request *req, const struct gs_choice *choice,
                        struct gs_alloc_part *parts, uint32_t cap) {
  uint32_t n = 0, m = choice->ngpus, nc = req->ncontainers;
  if (m == 0 || nc > GS_MAX_CONTAINERS)
    return 0;
  if (gs_pod_request_is_memory(req)) {
    uint64_t sum = gs_pod_request_mem_sum(req);
    uint64_t excess = req->init_mem_units > sum ? req->init_mem_units - sum : 0;
    uint32_t first = first_mem_container(req);
    if (m != req->gpu_count || (uint64_t)mem_part_containers(req) * m > cap)
      return 0;
    /* c runs to at least 1 so an init-only request lands on container 0. */
    for (uint32_t c = 0; c < nc || c == 0; c++) {
      uint64_t units = c < nc ? req->mem_units[c] : 0;
      if (c == first)
        units += excess;
      if (units == 0)
        continue;
      for (uint32_t i = 0; i < m; i++)
        parts[n++] = (struct gs_alloc_part){.container = c, .gpu = choice->gpus[i],
                                            .units = units / m};
    }
    return n;
  }
  if (gs_pod_request_is_whole(req)) {
    uint64_t sum = 0, excess, k = gs_pod_request_whole_effective(req);
    uint32_t first = first_whole_container(req);
    if (k > m || k > cap)
      return 0;
    for (uint32_t c = 0; c < nc; c++)
      sum += req->whole_gpus[c]; /* each ≤ k ≤ 64: no overflow */
    excess = k - sum;
    /* Init-container excess GPUs are held by the first GPU container, like
     * memory: the ledger only knows GPUs that some part names. */
    for (uint32_t c = 0; c < nc || c == 0; c++) {
      uint64_t count = (c < nc ? req->whole_gpus[c] : 0) + (c == first ? excess : 0);
      for (uint64_t j = 0; j < count; j++, n++)
        parts[n] = (struct gs_alloc_part){.container = c, .gpu = choice->gpus[n], .units = 0};
    }
    return n;
  }
  return 0;
}
