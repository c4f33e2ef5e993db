/* The framework: plugin runner and the one ledger lock.
 *
 * Lock discipline: pre_filter may change plugin state (a gang plan is made
 * at its first member's filter), so it runs under the write lock; the
 * per-node filter and score hooks run under the read lock, so filters of
 * different pods proceed in parallel. Reserve, bind bookkeeping and cluster
 * events take the write lock.
 *
 * A little over 800 lines: every entry point here takes the one lock
 * around the ledger and the plugins' state, so they stay beside the struct
 * they lock; what needs no lock of its own lives apart (memo.c, pool.c,
 * hold.c).
 */
#include "framework.h"
#include "hold.h"
#include "memo.h"
#include "pool.h"

#include <gpushare/alloc.h>
#include <gpushare/preempt.h>

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Filter and prioritize over at least this many nodes share the nodes
 * with the pool's workers (docs/benchmarks.md, core). */
#define PARALLEL_MIN_NODES 1024
#define WORKERS_MAX 7


/* One worker per CPU beside the caller's, at most WORKERS_MAX. */
static size_t default_workers(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus <= 1)
    return 0;
  return cpus - 1 < WORKERS_MAX ? (size_t)cpus - 1 : WORKERS_MAX;
}

enum gs_err gs__fw_init(struct gs_sched *fw, const struct gs_policy *policy,
                        const struct gs_plugin_ops *const *plugins, size_t nplugins,
                        struct gs_diag *diag) {
  if (nplugins > GS_FW_MAX_PLUGINS) {
    gs_diag_set(diag, "", "%zu plugins, at most %d", nplugins, GS_FW_MAX_PLUGINS);
    return GS_EINVAL;
  }
  for (size_t i = 0; i < nplugins; i++) {
    /* a plugin built against another plugin.h: its hooks may mean other
     * things (version 8: the annotation hook is pre_bind, was bind) */
    if (plugins[i]->api_version != GS_PLUGIN_API_VERSION) {
      gs_diag_set(diag, "", "plugin %s: built for GS_PLUGIN_API_VERSION %u, this gpushare "
                  "runs plugins of version %u (rebuild it against gpushare/plugin.h: docs/plugin.md)",
                  plugins[i]->name ? plugins[i]->name : "(unnamed)",
                  (unsigned)plugins[i]->api_version, (unsigned)GS_PLUGIN_API_VERSION);
      return GS_EINVAL;
    }
  }
  fw->policy = *policy;
  fw->ledger = gs_ledger_new(policy->unit_mib);
  if (fw->ledger == NULL)
    return GS_ENOMEM;
  if (pthread_rwlock_init(&fw->lock, NULL) != 0)
    goto free_ledger;
  fw->pool = gs_pool_new(default_workers()); /* threads start at the first large verb */
  if (fw->pool == NULL)
    goto free_lock;
  fw->parallel_min = PARALLEL_MIN_NODES;
  fw->holds = gs__holds_new();
  if (fw->holds == NULL)
    goto free_plugins;
  for (size_t i = 0; i < nplugins; i++) {
    fw->plugins[i] = plugins[i];
    fw->nplugins = i + 1;
    if (plugins[i]->create != NULL) {
      fw->state[i] = plugins[i]->create(&fw->policy);
      if (fw->state[i] == NULL) {
        gs_diag_set(diag, "", "plugin %s: create failed", plugins[i]->name);
        goto free_plugins;
      }
    }
  }
  return GS_EOK;

free_plugins:
  for (size_t i = 0; i < fw->nplugins; i++)
    if (fw->plugins[i]->destroy != NULL)
      fw->plugins[i]->destroy(fw->state[i]);
  fw->nplugins = 0;
  gs__holds_free(fw->holds);
  fw->holds = NULL;
  gs_pool_free(fw->pool);
  fw->pool = NULL;
free_lock:
  pthread_rwlock_destroy(&fw->lock);
free_ledger:
  gs_ledger_free(fw->ledger);
  fw->ledger = NULL;
  return GS_ENOMEM;
}

void gs__fw_fini(struct gs_sched *fw) {
  if (fw->ledger == NULL)
    return; /* gs__fw_init failed or never ran */
  for (size_t i = 0; i < fw->nplugins; i++)
    if (fw->plugins[i]->destroy != NULL)
      fw->plugins[i]->destroy(fw->state[i]);
  gs__holds_free(fw->holds);
  gs_pool_free(fw->pool);
  pthread_rwlock_destroy(&fw->lock);
  gs_ledger_free(fw->ledger);
  fw->ledger = NULL;
}

enum gs_err gs_fw_set_parallel(struct gs_sched *fw, size_t workers, size_t min_nodes) {
  struct gs_pool *pool = gs_pool_new(workers);
  if (pool == NULL)
    return GS_ENOMEM;
  gs_pool_free(fw->pool);
  fw->pool = pool;
  fw->parallel_min = min_nodes;
  return GS_EOK;
}

const struct gs_policy *gs_sched_policy(const struct gs_sched *fw) { return &fw->policy; }

/* A cycle and every plugin's state for it (struct gs_cycle.state). */
struct cycle {
  struct gs_cycle c;
  _Alignas(max_align_t) unsigned char state[GS_FW_MAX_PLUGINS][GS_CYCLE_STATE_MAX];
};

static void cycle_init(struct gs_sched *fw, struct cycle *cy, const struct gs_pod_request *pod,
                       int64_t now_ns) {
  cy->c.pod = pod;
  cy->c.policy = &fw->policy;
  cy->c.ledger = fw->ledger;
  cy->c.now_ns = now_ns;
  cy->c.place = NULL;
  cy->c.state = NULL;
  cy->c.scoring = false;
  memset(cy->state, 0, fw->nplugins * sizeof cy->state[0]);
}

/* The cycle as plugin i sees it: its own state. */
static inline struct gs_cycle *at(struct cycle *cy, size_t i) {
  cy->c.state = cy->state[i];
  return &cy->c;
}

/* The same for a per-node hook, as a copy: the hooks of one verb may run
 * on several threads (pool.h), each with its own view; they only read the
 * state (the plugin contract). */
static inline const struct gs_cycle *node_view(const struct cycle *cy, size_t i,
                                               struct gs_cycle *out) {
  *out = cy->c;
  out->state = (void *)cy->state[i];
  return out;
}

/* Runs pre_filter of every plugin. Returns SUCCESS, SKIP (no plugin cares:
 * every node passes), or the first failing code with st filled. */
static enum gs_err run_pre_filter(struct gs_sched *fw, struct cycle *cy, struct gs_status *st) {
  bool any = false;
  for (size_t i = 0; i < fw->nplugins; i++) {
    enum gs_err code;
    if (fw->plugins[i]->pre_filter == NULL)
      continue;
    st->code = GS_EOK;
    st->why = GS_R_OTHER;
    st->reason[0] = '\0';
    code = fw->plugins[i]->pre_filter(fw->state[i], at(cy, i), st);
    if (code == GS_ESKIP)
      continue;
    if (code != GS_EOK) {
      st->code = code;
      return code;
    }
    any = true;
  }
  return any ? GS_EOK : GS_ESKIP;
}

#define RESOLVE_BATCH 64
#define PREFETCH_AHEAD 4

/* Every cache line of a node's GPU array. */
static void prefetch_gpus(const struct gs_node *node) {
#if defined(__GNUC__)
  if (node == NULL)
    return;
  for (size_t off = 0; off < node->ngpus * sizeof *node->gpus; off += 64)
    __builtin_prefetch((const char *)node->gpus + off);
#else
  (void)node;
#endif
}

/* Filter and score of one node under the read lock. Plugins whose
 * pre_filter skipped the pod are consulted too: a plugin decides per hook.
 * For prioritize, a plugin's filter_score hook does both in one pass. */
static void run_node(struct gs_sched *fw, const struct cycle *cy, const struct gs_node *node,
                     bool score, struct gs_node_result *r) {
  struct gs_status *st = &r->status; /* plugins write the result's own */
  struct gs_cycle view;
  struct gs_node held;
  struct gs_gpu held_gpus[GS_MAX_GPUS];
  int64_t total = 0, early[GS_FW_MAX_PLUGINS];
  bool early_scored[GS_FW_MAX_PLUGINS];
  size_t scored = 0;

  r->score = r->score100 = 0;
  if (node == NULL) {
    r->code = GS_ENOFIT;
    r->why = GS_R_NODE_UNKNOWN;
    snprintf(r->reason, sizeof r->reason, "node unknown to gpushare");
    return;
  }
  /* GPUs held for pods nominated here (hold.h): the plugins see them taken */
  switch (gs__holds_view(fw->holds, node, cy->c.pod, &held, held_gpus, st)) {
  case GS_EOK:
    node = &held;
    break;
  case GS_ESKIP:
    break;
  default:
    r->code = GS_ENOFIT;
    return;
  }
  for (size_t i = 0; i < fw->nplugins; i++) {
    const struct gs_plugin_ops *p = fw->plugins[i];
    enum gs_err code;
    st->code = GS_EOK;
    st->why = GS_R_OTHER;
    st->reason[0] = '\0';
    early_scored[i] = false;
    if (score && p->filter_score != NULL)
      code = p->filter_score(fw->state[i], node_view(cy, i, &view), node, st, &early[i],
                             &early_scored[i]);
    else if (p->filter != NULL)
      code = p->filter(fw->state[i], node_view(cy, i, &view), node, st);
    else
      continue;
    if (code == GS_EOK || code == GS_ESKIP)
      continue;
    r->code = code == GS_EUNRESOLVABLE ? GS_EUNRESOLVABLE : GS_ENOFIT;
    r->reason[GS_REASON_MAX - 1] = '\0'; /* as the copy it replaces did */
    return;
  }
  /* A plugin may have left text and passed anyway. */
  r->code = GS_EOK;
  r->reason[0] = '\0';
  if (!score)
    return;
  for (size_t i = 0; i < fw->nplugins; i++) {
    int64_t s = 0;
    if (fw->plugins[i]->filter_score != NULL) {
      if (early_scored[i]) {
        total += early[i];
        scored++;
      }
      continue;
    }
    if (fw->plugins[i]->score == NULL)
      continue;
    if (fw->plugins[i]->score(fw->state[i], node_view(cy, i, &view), node, &s) != GS_EOK)
      continue;
    total += s;
    scored++;
  }
  if (scored > 0)
    total /= (int64_t)scored;
  r->score100 = total < 0 ? 0 : total > GS_SCORE_MAX ? GS_SCORE_MAX : total;
  r->score = (r->score100 + 5) / 10;
}

/* A verb's per-node work, for nodes [begin, end) (pool.h: chunks may run
 * on several threads at once; each writes only its own results). */
struct verb_job {
  struct gs_sched *fw;
  struct cycle *cy;
  const char *const *nodes;
  bool score;
  struct gs_node_result *ret;
  const struct gs_node **resolved; /* NULL, or where each name's node goes (a memo) */
};

/* Names are resolved a batch at a time, then each node's GPUs are
 * prefetched a few nodes ahead: over thousands of nodes the lookups and
 * first touches are cache misses, and a tight lookup loop lets them
 * overlap instead of queueing behind each node's plugin work
 * (docs/benchmarks.md, core). */
static void verb_chunk(void *ctx, size_t begin, size_t end) {
  struct verb_job *job = ctx;
  for (size_t base = begin; base < end; base += RESOLVE_BATCH) {
    const struct gs_node *batch[RESOLVE_BATCH];
    size_t m = end - base < RESOLVE_BATCH ? end - base : RESOLVE_BATCH;
    gs_ledger_nodes_get(job->cy->c.ledger, job->nodes + base, m, batch);
    if (job->resolved != NULL)
      memcpy(job->resolved + base, batch, m * sizeof batch[0]);
    for (size_t j = 0; j < m && j < PREFETCH_AHEAD; j++)
      prefetch_gpus(batch[j]);
    for (size_t j = 0; j < m; j++) {
      if (j + PREFETCH_AHEAD < m)
        prefetch_gpus(batch[j + PREFETCH_AHEAD]);
      run_node(job->fw, job->cy, batch[j], job->score, &job->ret[base + j]);
    }
  }
}

/* At most this many changed nodes are looked for in a memo's list, in one
 * pass over it; more are evaluated as every node is. */
#define MEMO_CHANGES_MAX 16

/* Reuses the memo's results for a pod signed as its last one: only the
 * nodes the ledger changed since are evaluated again. Under the read
 * lock. false: the memo cannot answer (every node is to be evaluated). */
static bool memo_update(struct gs_sched *fw, struct cycle *cy, struct gs_sched_memo *memo) {
  const struct gs_node *changed[MEMO_CHANGES_MAX];
  size_t k = gs_ledger_changed_since(fw->ledger, memo->gen, changed, MEMO_CHANGES_MAX);
  if (k == SIZE_MAX || memo->holds_gen != gs__holds_gen(fw->holds))
    return false; /* a nomination began or ended: every node again */
  if (memo->held || gs__holds_has(fw->holds, cy->c.pod->uid))
    return false; /* a pod's own hold is not held against it: its answers are its own */
  memo->evaluated = 0;
  for (size_t i = 0; k > 0 && i < memo->n; i++) {
    for (size_t j = 0; j < k; j++) {
      if (memo->resolved[i] == changed[j]) {
        run_node(fw, cy, changed[j], true, &memo->res[i]);
        if (memo->evaluated < GS__MEMO_INDEX_MAX)
          memo->changed[memo->evaluated] = i;
        memo->evaluated++;
        break;
      }
    }
  }
  memo->all = memo->evaluated > GS__MEMO_INDEX_MAX;
  memo->nchanged = memo->evaluated;
  return true;
}

/* Filter or prioritize; with memo (prioritize only), into memo->res. */
static enum gs_err run_verb(struct gs_sched *fw, const struct gs_pod_request *pod,
                            const char *const *nodes, size_t n, int64_t now_ns, bool score,
                            struct gs_node_result *ret, struct gs_sched_memo *memo) {
  struct cycle cy;
  struct gs_place_pod place;
  struct gs_status st = {GS_EOK, GS_R_OTHER, ""};
  char sig[GS_REASON_MAX] = "";
  enum gs_err pre;
  bool normalize;

  if (memo != NULL) {
    bool same = memo->fw == fw && memo->nodes == nodes && memo->n == n && memo->sig[0] != '\0';
    if (gs_place_signature(pod, &fw->policy, sig) != GS_EOK)
      sig[0] = '\0';
    if (!same || strcmp(sig, memo->sig) != 0) {
      if (gs__fw_memo_reserve(memo, n) != GS_EOK)
        return GS_ENOMEM;
      memo->fw = fw;
      memo->nodes = nodes;
      memo->n = n;
    }
    ret = memo->res;
  }
  pthread_rwlock_wrlock(&fw->lock);
  cycle_init(fw, &cy, pod, now_ns);
  cy.c.scoring = score;
  pre = run_pre_filter(fw, &cy, &st);
  pthread_rwlock_unlock(&fw->lock);

  if (pre != GS_EOK && memo != NULL) {
    memo->sig[0] = '\0';
    memo->evaluated = 0;
    memo->all = true;
  }
  if (pre == GS_ESKIP) {
    for (size_t i = 0; i < n; i++)
      ret[i] = (struct gs_node_result){.score = 0, .code = GS_EOK, .reason = ""};
    return GS_EOK;
  }
  if (gs_status_is_error(pre))
    return GS_EINVAL;
  if (pre != GS_EOK) {
    enum gs_err code = pre == GS_EUNRESOLVABLE ? GS_EUNRESOLVABLE : GS_ENOFIT;
    for (size_t i = 0; i < n; i++) {
      ret[i].code = code;
      ret[i].why = st.why;
      ret[i].score = ret[i].score100 = 0;
      snprintf(ret[i].reason, sizeof ret[i].reason, "%s", st.reason);
    }
    return GS_EOK;
  }
  /* The pod is checked once here rather than by a plugin for every node
   * (docs/benchmarks.md, core). */
  if (gs_place_prepare(pod, &fw->policy, &place, NULL) == GS_EOK)
    cy.c.place = &place;
  pthread_rwlock_rdlock(&fw->lock);
  /* the extender's 0..10 spread over this call's nodes (place.h) */
  normalize = score && fw->policy.node_policy == GS_PLACE_FRAG && fw->policy.frag_normalize;
  if (memo == NULL || memo->sig[0] == '\0' || !memo_update(fw, &cy, memo)) {
    struct verb_job job = {fw, &cy, nodes, score, ret, memo ? memo->resolved : NULL};
    /* Over many nodes the pool's workers take chunks beside this thread,
     * under the read lock this thread holds for them. */
    if (n >= fw->parallel_min)
      gs_pool_run(fw->pool, n, RESOLVE_BATCH, verb_chunk, &job);
    else
      verb_chunk(&job, 0, n);
    if (memo != NULL) {
      memo->evaluated = n;
      memo->all = true;
    }
  }
  if (memo != NULL) {
    /* Read under the same lock as the results: a change after it is
     * logged past this generation. */
    memo->gen = gs_ledger_gen(fw->ledger);
    memo->holds_gen = gs__holds_gen(fw->holds);
    memo->held = gs__holds_has(fw->holds, pod->uid);
    memcpy(memo->sig, sig, sizeof sig);
  }
  pthread_rwlock_unlock(&fw->lock);
  if (normalize)
    gs_place_scores_normalize(ret, n, 10);
  return GS_EOK;
}

enum gs_err gs_sched_filter(struct gs_sched *fw, const struct gs_pod_request *pod,
                         const char *const *nodes, size_t n, int64_t now_ns,
                         struct gs_node_result *ret) {
  return run_verb(fw, pod, nodes, n, now_ns, false, ret, NULL);
}

enum gs_err gs_sched_prioritize(struct gs_sched *fw, const struct gs_pod_request *pod,
                             const char *const *nodes, size_t n, int64_t now_ns,
                             struct gs_node_result *ret) {
  return run_verb(fw, pod, nodes, n, now_ns, true, ret, NULL);
}

enum gs_err gs_sched_prioritize_memo(struct gs_sched *fw, struct gs_sched_memo *memo,
                                  const struct gs_pod_request *pod, const char *const *nodes,
                                  size_t n, int64_t now_ns, const struct gs_node_result **ret) {
  /* on failure the memo is already forgotten (gs__fw_memo_reserve, or
   * the pre-filter's error) */
  enum gs_err e = run_verb(fw, pod, nodes, n, now_ns, true, NULL, memo);
  if (e == GS_EOK)
    *ret = memo->res;
  return e;
}

/* Runs unreserve of plugins [0, upto) in reverse order. */
static void run_unreserve(struct gs_sched *fw, struct cycle *cy, const char *node, size_t upto) {
  while (upto-- > 0)
    if (fw->plugins[upto]->unreserve != NULL)
      fw->plugins[upto]->unreserve(fw->state[upto], at(cy, upto), node);
}

/* Reserve of every plugin; on failure everything is undone. Permit is not
 * part of it: a front end that can hold a pod asks gs_sched_permit. */
static enum gs_err run_reserve(struct gs_sched *fw, struct cycle *cy, const struct gs_node *node,
                                struct gs_status *st) {
  for (size_t i = 0; i < fw->nplugins; i++) {
    enum gs_err code;
    if (fw->plugins[i]->reserve == NULL)
      continue;
    code = fw->plugins[i]->reserve(fw->state[i], at(cy, i), node, st);
    if (code != GS_EOK && code != GS_ESKIP) {
      run_unreserve(fw, cy, node->name, i);
      return code;
    }
  }
  return GS_EOK;
}

static enum gs_err run_pre_bind(struct gs_sched *fw, struct cycle *cy, const struct gs_alloc *alloc,
                             struct gs_annotations *ret, struct gs_status *st) {
  for (size_t i = 0; i < fw->nplugins; i++) {
    enum gs_err code;
    if (fw->plugins[i]->pre_bind == NULL)
      continue;
    code = fw->plugins[i]->pre_bind(fw->state[i], at(cy, i), alloc, ret, st);
    if (code != GS_EOK && code != GS_ESKIP)
      return code;
  }
  return GS_EOK;
}

enum gs_err gs_fw_reserve(struct gs_sched *fw, const struct gs_pod_request *pod, const char *node,
                          int64_t now_ns, struct gs_annotations *ret, bool *ret_fresh,
                          struct gs_status *st) {
  struct cycle cy;
  const struct gs_node *n;
  const struct gs_alloc *alloc;
  struct gs_node held;
  struct gs_gpu held_gpus[GS_MAX_GPUS];
  enum gs_err code;
  enum gs_err err = GS_EOK;
  bool fresh = false;

  pthread_rwlock_wrlock(&fw->lock);
  cycle_init(fw, &cy, pod, now_ns);
  n = gs_ledger_node_get(fw->ledger, node);
  if (n == NULL) {
    gs_status_set(st, GS_ENOFIT, GS_R_NODE_UNKNOWN, "node unknown to gpushare");
    err = GS_ENOTFOUND;
    goto unlock;
  }
  alloc = pod->uid[0] != '\0' ? gs_ledger_alloc_get(fw->ledger, pod->uid) : NULL;
  if (alloc != NULL && strcmp(alloc->node, node) != 0) {
    gs_status_set(st, GS_ECONFLICT, GS_R_OTHER, "pod already has GPUs reserved on another node");
    err = GS_ECONFLICT;
    goto unlock;
  }
  if (alloc == NULL) {
    struct gs_status pre = {GS_EOK, GS_R_OTHER, ""};
    code = run_pre_filter(fw, &cy, &pre);
    if (code == GS_ESKIP) {
      gs_status_set(st, GS_EINVAL, GS_R_OTHER, "pod requests no GPU resource managed by gpushare");
      err = GS_EINVAL;
      goto unlock;
    }
    if (code != GS_EOK) {
      *st = pre;
      err = GS_ENOFIT;
      goto unlock;
    }
    /* GPUs held for pods nominated here are not the pod's to take */
    code = gs__holds_view(fw->holds, n, pod, &held, held_gpus, st);
    if (code == GS_ENOFIT) {
      err = GS_ENOFIT;
      goto unlock;
    }
    code = run_reserve(fw, &cy, code == GS_EOK ? &held : n, st);
    if (code != GS_EOK) {
      err = GS_ENOFIT;
      goto unlock;
    }
    fresh = true;
    alloc = gs_ledger_alloc_get(fw->ledger, pod->uid);
    if (alloc == NULL) {
      gs_status_set(st, GS_EINVAL, GS_R_OTHER, "no plugin reserved GPUs for the pod");
      err = GS_EINVAL;
      goto unlock;
    }
  }
  code = run_pre_bind(fw, &cy, alloc, ret, st);
  if (code != GS_EOK) {
    gs_annotations_clear(ret);
    if (fresh)
      run_unreserve(fw, &cy, node, fw->nplugins);
    fresh = false;
    err = GS_EINVAL;
    goto unlock;
  }
  if (ret_fresh != NULL)
    *ret_fresh = fresh;
  /* placed: a pod nominated alone is done; a pod group's slot rests; a
   * label gang's slots end, its plan holds them (hold.h) */
  (void)gs__holds_placed(fw->holds, pod->uid, true);
  (void)gs__holds_job_end(fw->holds, pod);
unlock:
  pthread_rwlock_unlock(&fw->lock);
  return err;
}

enum gs_err gs__fw_pick_locked(struct gs_sched *fw, const struct gs_pod_request *pod,
                               const struct gs_node *node, int64_t now_ns,
                               struct gs_choice *ret, struct gs_status *st) {
  struct cycle cy;
  struct gs_status pre = {GS_EOK, GS_R_OTHER, ""};
  const struct gs_alloc *a;
  uint64_t mask = 0;
  cycle_init(fw, &cy, pod, now_ns); /* pod->uid holds nothing (the caller checked) */
  if (run_pre_filter(fw, &cy, &pre) != GS_EOK) {
    *st = pre;
    return GS_ENOFIT;
  }
  if (run_reserve(fw, &cy, node, st) != GS_EOK)
    return GS_ENOFIT;
  a = gs_ledger_alloc_get(fw->ledger, pod->uid);
  memset(ret, 0, sizeof *ret);
  for (uint32_t i = 0; a != NULL && i < a->nparts; i++)
    mask |= UINT64_C(1) << a->parts[i].gpu;
  for (uint32_t g = 0; g < GS_MAX_GPUS; g++)
    if (mask >> g & 1)
      ret->gpus[ret->ngpus++] = g;
  run_unreserve(fw, &cy, node->name, fw->nplugins);
  if (ret->ngpus == 0)
    return gs_status_set(st, GS_EINVAL, GS_R_OTHER, "no plugin reserved GPUs for the pod");
  return GS_EOK;
}

/* The one adapter left between the service's names and the framework's:
 * Reserve as front ends call it, without the freshness only gs_sched_bind
 * needs (gs_fw_reserve). */
enum gs_err gs_sched_reserve(struct gs_sched *s, const struct gs_pod_request *pod,
                             const char *node, int64_t now_ns, struct gs_annotations *ret_annots,
                             struct gs_status *st) {
  return gs_fw_reserve(s, pod, node, now_ns, ret_annots, NULL, st);
}

static bool may_evict(const struct gs_sched *fw, const struct gs_alloc *a) {
  if (a->kind == GS_ALLOC_CLAIM)
    return false; /* a DRA claim is no pod: nothing gpushare may evict (docs/dra.md) */
  for (size_t i = 0; i < fw->nplugins; i++)
    if (fw->plugins[i]->may_evict != NULL &&
        !fw->plugins[i]->may_evict(fw->state[i], fw->ledger, a))
      return false;
  return true;
}

bool gs_fw_evicts_for(struct gs_sched *fw, const struct gs_alloc *a,
                      const struct gs_pod_request *pod) {
  return a->priority < pod->priority && strcmp(a->uid, pod->uid) != 0 && may_evict(fw, a);
}

enum gs_err gs_fw_preempt_room(struct gs_sched *fw, const char *node,
                               const struct gs_node **ret_node, size_t *ret_count,
                               struct gs_preempt_candidate **ret_cands, uint32_t **ret_idx) {
  const struct gs_node *n = gs_ledger_node_get(fw->ledger, node);
  size_t count;
  struct gs_preempt_candidate *cands;
  uint32_t *idx;

  if (n == NULL)
    return GS_ENOTFOUND;
  count = gs_ledger_node_alloc_count(fw->ledger, node);
  cands = gs_calloc(count ? count : 1, sizeof *cands);
  idx = gs_calloc(count ? count : 1, sizeof *idx);
  if (cands == NULL || idx == NULL) {
    gs_free(cands);
    gs_free(idx);
    return GS_ENOMEM;
  }
  *ret_node = n;
  *ret_count = count;
  *ret_cands = cands;
  *ret_idx = idx;
  return GS_EOK;
}

enum gs_err gs_fw_preempt(struct gs_sched *fw, const struct gs_pod_request *pod, const char *node,
                          const char *const *proposed, size_t nproposed,
                          char (**ret_uids)[GS_UID_MAX + 1], size_t *ret_n,
                          struct gs_status *st) {
  uint32_t violations;
  return gs_fw_preempt_limited(fw, pod, node, proposed, nproposed, NULL, ret_uids, ret_n,
                               &violations, st);
}

enum gs_err gs_fw_preempt_limited(struct gs_sched *fw, const struct gs_pod_request *pod,
                                  const char *node, const char *const *proposed,
                                  size_t nproposed, const struct gs_fw_preempt_info *info,
                                  char (**ret_uids)[GS_UID_MAX + 1], size_t *ret_n,
                                  uint32_t *ret_violations, struct gs_status *st) {
  char(*uids)[GS_UID_MAX + 1] = NULL;
  struct gs_preempt_candidate *cands = NULL;
  struct gs_preempt_limits lim = {NULL, 0, true, 0, 0};
  uint32_t *idx = NULL;
  uint64_t *vb = NULL;
  int32_t *vp = NULL;
  struct gs_place_pod place;
  const struct gs_node *n;
  size_t count, nc = 0, nv = 0;
  enum gs_err err = GS_EOK;

  *ret_n = 0;
  *ret_uids = NULL;
  *ret_violations = 0;
  st->code = gs_place_prepare(pod, &fw->policy, &place, st);
  if (st->code != GS_EOK) {
    if (st->code == GS_ESKIP)
      gs_status_set(st, GS_EUNRESOLVABLE, GS_R_OTHER,
                    "pod requests no GPU resource managed by gpushare");
    return GS_EOK;
  }
  pthread_rwlock_rdlock(&fw->lock);
  if ((err = gs_fw_preempt_room(fw, node, &n, &count, &cands, &idx)) != GS_EOK)
    goto unlock;
  vb = gs_calloc(count + nproposed ? count + nproposed : 1, sizeof *vb);
  vp = gs_calloc(count + nproposed ? count + nproposed : 1, sizeof *vp);
  if (vb == NULL || vp == NULL) {
    err = GS_ENOMEM;
    goto unlock;
  }
  for (size_t i = 0; i < count; i++) {
    const struct gs_alloc *a = gs_ledger_node_alloc_at(fw->ledger, node, i);
    bool named = false;
    /* pods of lower priority no plugin keeps (a DRA claim is no pod: docs/dra.md) */
    if (!gs_fw_evicts_for(fw, a, pod))
      continue;
    for (size_t j = 0; j < nproposed && !named; j++)
      named = strcmp(proposed[j], a->uid) == 0;
    cands[nc] = (struct gs_preempt_candidate){.alloc = a, .proposed = named};
    if (info != NULL && !info->describe(info->ctx, a->uid, &cands[nc]))
      continue;
    nc++;
  }
  /* kube-scheduler's victims that hold no GPU here stay (below): what they
   * free counts for the host, their budgets for the count. */
  for (size_t j = 0; j < nproposed && info != NULL; j++) {
    const struct gs_alloc *a = gs_ledger_alloc_get(fw->ledger, proposed[j]);
    struct gs_preempt_candidate c = {.alloc = NULL};
    if (a != NULL && strcmp(a->node, node) == 0)
      continue;
    (void)info->describe(info->ctx, proposed[j], &c);
    lim.freed_cpu_milli += c.cpu_milli;
    lim.freed_mem_mib += c.mem_mib;
  }
  if (info != NULL)
    lim.allowed = info->allowed(info->ctx, &lim.nbudgets);
  st->code = gs_preempt_pick_limited(n, &place, fw->policy.cgpu_max_pods, cands, nc, &lim, idx,
                                     &nv, NULL, st);
  if (st->code == GS_EOK) {
    size_t m = 0;
    uids = gs_calloc(nv + nproposed ? nv + nproposed : 1, sizeof *uids);
    if (uids == NULL) {
      err = GS_ENOMEM;
      goto unlock;
    }
    for (size_t i = 0; i < nv; i++) {
      snprintf(uids[(*ret_n)++], GS_UID_MAX + 1, "%s", cands[idx[i]].alloc->uid);
      vb[m] = cands[idx[i]].budgets;
      vp[m++] = cands[idx[i]].alloc->priority;
    }
    /* kube-scheduler's victims that hold no GPU here stay: it chose them
     * for its own resources (CPU, memory, ports). */
    for (size_t j = 0; j < nproposed; j++) {
      const struct gs_alloc *a = gs_ledger_alloc_get(fw->ledger, proposed[j]);
      bool again = false; /* a UID named twice is answered once */
      struct gs_preempt_candidate c = {.alloc = NULL};
      for (size_t k = 0; k < j && !again; k++)
        again = strcmp(proposed[k], proposed[j]) == 0;
      if (again || (a != NULL && strcmp(a->node, node) == 0))
        continue;
      snprintf(uids[(*ret_n)++], GS_UID_MAX + 1, "%s", proposed[j]);
      if (info != NULL)
        (void)info->describe(info->ctx, proposed[j], &c);
      vb[m] = c.budgets;
      vp[m++] = a != NULL ? a->priority : INT32_MIN; /* unknown: the least important */
    }
    if (info != NULL)
      *ret_violations = gs_preempt_violations(vb, vp, m, lim.allowed, lim.nbudgets);
    *ret_uids = uids;
  } else if (gs_status_is_error(st->code)) {
    err = st->code;
  }
unlock:
  pthread_rwlock_unlock(&fw->lock);
  gs_free(cands);
  gs_free(idx);
  gs_free(vb);
  gs_free(vp);
  return err;
}

void gs_sched_post_bind(struct gs_sched *fw, const char *uid) {
  pthread_rwlock_wrlock(&fw->lock);
  if (gs_ledger_confirm(fw->ledger, uid) != GS_EOK) {
    /* deleted meanwhile: nothing to confirm */
  }
  (void)gs__holds_drop(fw->holds, uid); /* bound: a slot held for it is done */
  pthread_rwlock_unlock(&fw->lock);
}

void gs_sched_unreserve(struct gs_sched *fw, const struct gs_pod_request *pod, const char *node) {
  struct cycle cy;
  pthread_rwlock_wrlock(&fw->lock);
  cycle_init(fw, &cy, pod, 0); /* a later cycle: the plugins' state starts empty */
  run_unreserve(fw, &cy, node, fw->nplugins);
  (void)gs__holds_placed(fw->holds, pod->uid, false); /* a slot held applies again */
  pthread_rwlock_unlock(&fw->lock);
}

enum gs_err gs_sched_permit(struct gs_sched *fw, const struct gs_pod_request *pod, const char *node,
                          int64_t now_ns, struct gs_status *st) {
  struct cycle cy;
  enum gs_err code = GS_EOK;
  st->code = GS_EOK;
  st->why = GS_R_OTHER;
  st->reason[0] = '\0';
  pthread_rwlock_wrlock(&fw->lock);
  cycle_init(fw, &cy, pod, now_ns);
  for (size_t i = 0; i < fw->nplugins && code == GS_EOK; i++) {
    if (fw->plugins[i]->permit == NULL)
      continue;
    code = fw->plugins[i]->permit(fw->state[i], at(&cy, i), node, st);
    if (code == GS_ESKIP)
      code = GS_EOK;
  }
  pthread_rwlock_unlock(&fw->lock);
  st->code = code;
  return code;
}

enum gs_err gs_fw_node_upsert(struct gs_sched *fw, const struct gs_node_spec *spec) {
  enum gs_err err;
  pthread_rwlock_wrlock(&fw->lock);
  err = gs_ledger_node_upsert(fw->ledger, spec);
  pthread_rwlock_unlock(&fw->lock);
  return err;
}

enum gs_err gs_sched_node_remove(struct gs_sched *fw, const char *name) {
  enum gs_err err;
  pthread_rwlock_wrlock(&fw->lock);
  err = gs_ledger_node_remove(fw->ledger, name);
  pthread_rwlock_unlock(&fw->lock);
  return err;
}

enum gs_err gs_fw_node_set_unhealthy(struct gs_sched *fw, const char *name, uint64_t mask) {
  enum gs_err err;
  pthread_rwlock_wrlock(&fw->lock);
  err = gs_ledger_node_set_unhealthy(fw->ledger, name, mask);
  pthread_rwlock_unlock(&fw->lock);
  return err;
}

void gs_sched_nodes_set_host(struct gs_sched *fw, const char *const *names,
                          const struct gs_host *hosts, size_t n) {
  pthread_rwlock_wrlock(&fw->lock);
  for (size_t i = 0; i < n; i++)
    if (gs_ledger_node_set_host(fw->ledger, names[i], &hosts[i]) != GS_EOK)
      continue; /* unknown: nothing to record */
  pthread_rwlock_unlock(&fw->lock);
}

enum gs_err gs_fw_pod_restore(struct gs_sched *fw, const struct gs_alloc *alloc) {
  enum gs_err err = GS_EOK;
  const struct gs_alloc *have;
  pthread_rwlock_wrlock(&fw->lock);
  have = gs_ledger_alloc_get(fw->ledger, alloc->uid);
  if (have == NULL) {
    err = gs_ledger_restore(fw->ledger, alloc);
  } else if (alloc->state == GS_ALLOC_BOUND && have->state != GS_ALLOC_BOUND) {
    err = gs_ledger_confirm(fw->ledger, alloc->uid);
  }
  (void)gs__holds_drop(fw->holds, alloc->uid); /* bound: no longer nominated */
  pthread_rwlock_unlock(&fw->lock);
  return err;
}

enum gs_err gs_sched_nominate(struct gs_sched *fw, const struct gs_pod_request *pod, const char *node) {
  enum gs_err err;
  bool changed;
  if (node == NULL || node[0] == '\0') { /* every pending pod's event: read-locked first */
    bool held;
    pthread_rwlock_rdlock(&fw->lock);
    held = gs__holds_has(fw->holds, pod->uid);
    pthread_rwlock_unlock(&fw->lock);
    if (!held)
      return GS_EOK;
  }
  pthread_rwlock_wrlock(&fw->lock);
  err = gs__holds_set(fw->holds, pod, &fw->policy, node, &changed);
  pthread_rwlock_unlock(&fw->lock);
  return err;
}

void gs__fw_write(struct gs_sched *fw,
                  void (*fn)(struct gs_ledger *ledger, const struct gs_policy *policy, void *arg),
                  void *arg) {
  pthread_rwlock_wrlock(&fw->lock);
  fn(fw->ledger, &fw->policy, arg);
  pthread_rwlock_unlock(&fw->lock);
}

void gs_fw_pod_gone(struct gs_sched *fw, const char *uid) {
  pthread_rwlock_wrlock(&fw->lock);
  if (gs_ledger_release(fw->ledger, uid) != GS_EOK) {
    /* a pod without GPUs has no allocation */
  }
  (void)gs__holds_drop(fw->holds, uid);
  for (size_t i = 0; i < fw->nplugins; i++)
    if (fw->plugins[i]->pod_gone != NULL)
      fw->plugins[i]->pod_gone(fw->state[i], fw->ledger, uid);
  pthread_rwlock_unlock(&fw->lock);
}

size_t gs_sched_expire_assumed(struct gs_sched *fw, int64_t now_ns, int64_t max_age_ns) {
  size_t expired = 0;
  pthread_rwlock_wrlock(&fw->lock);
  for (size_t i = 0; i < gs_ledger_node_count(fw->ledger); i++) {
    const struct gs_node *n = gs_ledger_node_at(fw->ledger, i);
    size_t j = 0;
    while (j < gs_ledger_node_alloc_count(fw->ledger, n->name)) {
      const struct gs_alloc *a = gs_ledger_node_alloc_at(fw->ledger, n->name, j);
      if (a->state == GS_ALLOC_ASSUMED && now_ns - a->assume_time_ns > max_age_ns &&
          gs_ledger_release(fw->ledger, a->uid) == GS_EOK) {
        expired++;
        continue; /* the list shrank: same index again */
      }
      j++;
    }
  }
  pthread_rwlock_unlock(&fw->lock);
  return expired;
}

void gs_sched_set_notify(struct gs_sched *fw, const struct gs_notify *notify) {
  fw->notify = notify != NULL ? *notify : (struct gs_notify){NULL, NULL};
}

/* Counts what the service reports about itself, then passes it on (under
 * the write lock: the front end's callback must not call back in). */
static void on_notice(void *ctx, const struct gs_notice *n) {
  struct gs_sched *fw = ctx;
  if (n->kind == GS_NOTICE_GANG_TIMEOUT && n->pod == NULL)
    atomic_fetch_add(&fw->gang_timeouts, 1);
  if (fw->notify.notice != NULL)
    fw->notify.notice(fw->notify.ctx, n);
}

void gs_sched_tick(struct gs_sched *fw, int64_t now_ns) {
  const struct gs_notify notify = {on_notice, fw};
  pthread_rwlock_wrlock(&fw->lock);
  for (size_t i = 0; i < fw->nplugins; i++)
    if (fw->plugins[i]->tick != NULL)
      fw->plugins[i]->tick(fw->state[i], fw->ledger, now_ns, &notify);
  (void)gs__holds_expire(fw->holds, now_ns); /* slots held past their bound */
  pthread_rwlock_unlock(&fw->lock);
}

uint64_t gs_sched_gang_timeouts(struct gs_sched *fw) { return atomic_load(&fw->gang_timeouts); }

void gs_sched_pod_seen(struct gs_sched *fw, const struct gs_pod_request *pod,
                       const struct gs_alloc *alloc) {
  bool any = false;
  if (pod == NULL || pod->uid[0] == '\0')
    return;
  for (size_t i = 0; i < fw->nplugins; i++)
    any = any || fw->plugins[i]->pod_seen != NULL;
  if (!any)
    return;
  pthread_rwlock_wrlock(&fw->lock);
  for (size_t i = 0; i < fw->nplugins; i++)
    if (fw->plugins[i]->pod_seen != NULL)
      fw->plugins[i]->pod_seen(fw->state[i], fw->ledger, pod, alloc);
  pthread_rwlock_unlock(&fw->lock);
}

void gs_sched_read(struct gs_sched *fw, void (*fn)(const struct gs_ledger *ledger, void *arg),
                   void (*plan)(void *arg, const struct gs_plan_view *p), void *arg) {
  pthread_rwlock_rdlock(&fw->lock);
  if (plan != NULL)
    gs_fw_describe(fw, plan, arg);
  if (fn != NULL)
    fn(fw->ledger, arg);
  pthread_rwlock_unlock(&fw->lock);
}

void gs_fw_describe(struct gs_sched *fw, void (*emit)(void *ctx, const struct gs_plan_view *plan),
                    void *ctx) {
  for (size_t i = 0; i < fw->nplugins; i++)
    if (fw->plugins[i]->describe != NULL)
      fw->plugins[i]->describe(fw->state[i], emit, ctx);
}

void *gs_fw_plugin_state_for_test(struct gs_sched *fw, const char *name) {
  for (size_t i = 0; i < fw->nplugins; i++)
    if (strcmp(fw->plugins[i]->name, name) == 0)
      return fw->state[i];
  return NULL;
}

bool gs_fw_may_evict(struct gs_sched *fw, const struct gs_alloc *alloc) { return may_evict(fw, alloc); }
