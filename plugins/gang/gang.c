/* gang: see gang.h. All hooks run under the framework's lock; pre_filter
 * and reserve under the write lock (they change the plan), filter and score
 * under the read lock (they only read it). */
#include "gang.h"

#include <gpushare/alloc.h>
#include <gpushare/place.h>
#include <gpushare/topo.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GANG_MAX 4096 /* live plans; more is refused, not a crash */

struct slot {
  char node[GS_NAME_MAX + 1];
  uint64_t gpus;
  char member[GS_UID_MAX + 1]; /* "" = unassigned */
  bool placed;                 /* member holds the GPUs; else the placeholder does */
  char placeholder[GS_NS_MAX + GS_NAME_MAX + 32];
};

struct gang {
  char ns[GS_NS_MAX + 1];
  char job[GS_NAME_MAX + 1];
  uint32_t replicas;
  uint64_t k; /* whole GPUs per member */
  int64_t created_ns;
  struct slot *slots; /* replicas entries */
};

struct gang_state {
  uint32_t timeout_s;
  size_t n;
  struct gang *gangs[GANG_MAX];
};

static struct gang *find(struct gang_state *st, const char *ns, const char *job) {
  for (size_t i = 0; i < st->n; i++)
    if (strcmp(st->gangs[i]->ns, ns) == 0 && strcmp(st->gangs[i]->job, job) == 0)
      return st->gangs[i];
  return NULL;
}

static struct slot *slot_of(struct gang *g, const char *uid) {
  if (g == NULL || uid[0] == '\0')
    return NULL;
  for (uint32_t i = 0; i < g->replicas; i++)
    if (strcmp(g->slots[i].member, uid) == 0)
      return &g->slots[i];
  return NULL;
}

static void gang_free(struct gang *g) {
  if (g == NULL)
    return;
  gs_free(g->slots);
  gs_free(g);
}

/* GPUs of node that a new whole-GPU slot may take. */
static uint64_t free_gpus(const struct gs_node *n) {
  uint64_t mask = 0;
  for (uint32_t i = 0; i < n->ngpus && i < GS_MAX_GPUS; i++)
    if (n->gpus[i].healthy && n->gpus[i].owner == NULL && n->gpus[i].used_mib == 0)
      mask |= UINT64_C(1) << i;
  return mask;
}

static uint32_t popcount(uint64_t m) {
  uint32_t c = 0;
  for (; m; m &= m - 1)
    c++;
  return c;
}

/* A slot's placeholder UID: "gang/<ns>/<job>/<slot>" where that fits a
 * ledger UID (GS_UID_MAX), else "gang/#<64-bit FNV-1a of ns/job>/<slot>":
 * a namespace and a job name may each be 63 characters. */
static void placeholder_uid(const struct gang *g, uint32_t slot, char *out, size_t len) {
  int n = snprintf(out, len, GS_GANG_UID_PREFIX "%s/%s/%" PRIu32, g->ns, g->job, slot);
  if (n >= 0 && (size_t)n <= GS_UID_MAX)
    return;
  uint64_t h = UINT64_C(14695981039346656037);
  for (const char *p = g->ns; *p; p++)
    h = (h ^ (unsigned char)*p) * UINT64_C(1099511628211);
  h = (h ^ '/') * UINT64_C(1099511628211);
  for (const char *p = g->job; *p; p++)
    h = (h ^ (unsigned char)*p) * UINT64_C(1099511628211);
  snprintf(out, len, GS_GANG_UID_PREFIX "#%016" PRIx64 "/%" PRIu32, h, slot);
}

/* Holds (or re-holds) a slot's GPUs with its placeholder allocation. */
static enum gs_err hold(struct gs_ledger *ledger, const struct gang *g, const struct slot *s) {
  struct gs_alloc_part parts[GS_MAX_GPUS];
  struct gs_alloc a;
  uint32_t n = 0;
  char name[GS_NAME_MAX + 16];
  for (uint32_t i = 0; i < GS_MAX_GPUS; i++)
    if (s->gpus & (UINT64_C(1) << i))
      parts[n++] = (struct gs_alloc_part){0, i, 0};
  snprintf(name, sizeof name, "%s", g->job);
  a = (struct gs_alloc){
      .ns = g->ns,
      .name = name,
      .uid = s->placeholder,
      .node = s->node,
      .kind = GS_ALLOC_WHOLE,
      .state = GS_ALLOC_BOUND, /* a plan reservation: never expired as a stale bind */
      .unit_mib = gs_ledger_unit_mib(ledger),
      .assume_time_ns = g->created_ns,
      .nparts = n,
      .parts = parts,
  };
  return gs_ledger_reserve(ledger, &a, UINT32_MAX);
}

static void drop(struct gs_ledger *ledger, struct gang_state *st, size_t idx) {
  struct gang *g = st->gangs[idx];
  for (uint32_t i = 0; i < g->replicas; i++)
    if (!g->slots[i].placed && gs_ledger_release(ledger, g->slots[i].placeholder) != GS_EOK) {
      /* the node went away with its allocations */
    }
  gang_free(g);
  st->gangs[idx] = st->gangs[--st->n];
}

/* Plans all replicas. Returns how many slots fit; on a full plan the
 * slots are held in the ledger and *ret is the new gang. */
static uint32_t plan(struct gang_state *st, struct gs_ledger *ledger,
                     const struct gs_pod_request *pod, int64_t now, struct gang **ret) {
  size_t nn = gs_ledger_node_count(ledger);
  uint64_t *taken = gs_calloc(nn ? nn : 1, sizeof *taken);
  struct gang *g = gs_calloc(1, sizeof *g);
  uint64_t k = gs_pod_request_whole_effective(pod);
  uint32_t placed = 0;

  if (taken == NULL || g == NULL)
    goto fail;
  g->slots = gs_calloc(pod->gang_replicas, sizeof *g->slots);
  if (g->slots == NULL)
    goto fail;
  snprintf(g->ns, sizeof g->ns, "%s", pod->ns);
  snprintf(g->job, sizeof g->job, "%s", pod->gang_job);
  g->replicas = pod->gang_replicas;
  g->k = k;
  g->created_ns = now;

  /* Greedy binpack over nodes: each slot goes to the topology node with the
   * fewest free GPUs that still holds k, so a job stays on few nodes and
   * large free nodes stay whole; inside the node the GPU set with the best
   * interconnect that keeps good sets free (gs_topo_choose). */
  for (uint32_t r = 0; r < g->replicas; r++) {
    size_t best = nn;
    uint32_t best_free = UINT32_MAX;
    uint64_t set = 0;
    for (size_t i = 0; i < nn; i++) {
      const struct gs_node *n = gs_ledger_node_at(ledger, i);
      uint32_t f;
      if (n->mode != GS_MODE_TOPOLOGY)
        continue;
      f = popcount(free_gpus(n) & ~taken[i]);
      if (f >= k && f < best_free) {
        best = i;
        best_free = f;
      }
    }
    if (best == nn)
      break;
    {
      const struct gs_node *n = gs_ledger_node_at(ledger, best);
      if (gs_topo_choose(n->topo, free_gpus(n) & ~taken[best], (uint32_t)k, &set) != GS_EOK)
        break;
      taken[best] |= set;
      snprintf(g->slots[r].node, sizeof g->slots[r].node, "%s", n->name);
      g->slots[r].gpus = set;
      placeholder_uid(g, r, g->slots[r].placeholder, sizeof g->slots[r].placeholder);
    }
    placed++;
  }
  if (placed < g->replicas)
    goto fail;
  for (uint32_t r = 0; r < g->replicas; r++) {
    if (hold(ledger, g, &g->slots[r]) != GS_EOK) {
      while (r-- > 0)
        if (gs_ledger_release(ledger, g->slots[r].placeholder) != GS_EOK) {
          /* just reserved above: cannot be missing */
        }
      placed = 0;
      goto fail;
    }
  }
  gs_free(taken);
  st->gangs[st->n++] = g;
  *ret = g;
  return placed;

fail:
  gs_free(taken);
  gang_free(g);
  return placed;
}

static void *create(const struct gs_policy *policy) {
  struct gang_state *st = gs_calloc(1, sizeof *st);
  if (st != NULL)
    st->timeout_s = policy->gang_timeout_s ? policy->gang_timeout_s : 60;
  return st;
}

static void destroy(void *self) {
  struct gang_state *st = self;
  if (st == NULL)
    return;
  for (size_t i = 0; i < st->n; i++)
    gang_free(st->gangs[i]);
  gs_free(st);
}

static enum gs_code pre_filter(void *self, const struct gs_cycle *c, struct gs_status *status) {
  struct gang_state *st = self;
  const struct gs_pod_request *pod = c->pod;
  struct gang *g;
  struct slot *s;

  if (!gs_pod_request_is_gang_member(pod))
    return GS_CODE_SKIP;
  if (pod->gang_replicas == 0 || pod->gang_replicas > GS_GANG_REPLICAS_MAX)
    return gs_status_set(status, GS_CODE_UNRESOLVABLE,
                         "gang %s/%s: label gpu-topology-replica must be 1..%d", pod->ns,
                         pod->gang_job, GS_GANG_REPLICAS_MAX);
  g = find(st, pod->ns, pod->gang_job);
  if (g != NULL && slot_of(g, pod->uid) != NULL)
    return GS_CODE_SUCCESS;
  if (g == NULL) {
    uint32_t fit;
    if (st->n >= GANG_MAX)
      return gs_status_set(status, GS_CODE_UNSCHEDULABLE, "too many gangs waiting");
    fit = plan(st, c->ledger, pod, c->now_ns, &g);
    if (g == NULL)
      return gs_status_set(status, GS_CODE_UNSCHEDULABLE,
                           "gang %s/%s: only %" PRIu32 " of %" PRIu32
                           " replicas fit (%" PRIu64 " whole GPUs each)",
                           pod->ns, pod->gang_job, fit, pod->gang_replicas,
                           gs_pod_request_whole_effective(pod));
  }
  if (gs_pod_request_whole_effective(pod) != g->k)
    return gs_status_set(status, GS_CODE_UNRESOLVABLE,
                         "gang %s/%s: members must request the same number of GPUs", g->ns,
                         g->job);
  for (uint32_t i = 0; i < g->replicas; i++) {
    s = &g->slots[i];
    if (s->member[0] == '\0') {
      snprintf(s->member, sizeof s->member, "%s", pod->uid);
      return GS_CODE_SUCCESS;
    }
  }
  return gs_status_set(status, GS_CODE_UNSCHEDULABLE,
                       "gang %s/%s: all %" PRIu32 " replica slots are taken", g->ns, g->job,
                       g->replicas);
}

static enum gs_code filter(void *self, const struct gs_cycle *c, const struct gs_node *node,
                           struct gs_status *status) {
  struct gang_state *st = self;
  struct slot *s;
  if (!gs_pod_request_is_gang_member(c->pod))
    return GS_CODE_SKIP;
  s = slot_of(find(st, c->pod->ns, c->pod->gang_job), c->pod->uid);
  if (s == NULL)
    return gs_status_set(status, GS_CODE_UNSCHEDULABLE, "gang member has no replica slot");
  if (strcmp(s->node, node->name) != 0)
    return gs_status_set(status, GS_CODE_UNSCHEDULABLE,
                         "gang %s/%s: this replica's slot is on another node", c->pod->ns,
                         c->pod->gang_job);
  return GS_CODE_SUCCESS;
}

static enum gs_code score(void *self, const struct gs_cycle *c, const struct gs_node *node,
                          int64_t *ret_score) {
  struct gang_state *st = self;
  struct slot *s;
  if (!gs_pod_request_is_gang_member(c->pod))
    return GS_CODE_SKIP;
  s = slot_of(find(st, c->pod->ns, c->pod->gang_job), c->pod->uid);
  *ret_score = s != NULL && strcmp(s->node, node->name) == 0 ? 10 : 0;
  return GS_CODE_SUCCESS;
}

static enum gs_code reserve(void *self, struct gs_cycle *c, const struct gs_node *node,
                            struct gs_status *status) {
  struct gang_state *st = self;
  struct gang *g;
  struct slot *s;
  struct gs_alloc_part parts[GS_MAX_PARTS];
  struct gs_choice choice = {0};
  struct gs_alloc a;
  enum gs_err err;

  if (!gs_pod_request_is_gang_member(c->pod))
    return GS_CODE_SKIP;
  g = find(st, c->pod->ns, c->pod->gang_job);
  s = slot_of(g, c->pod->uid);
  if (s == NULL)
    return gs_status_set(status, GS_CODE_UNSCHEDULABLE,
                         "gang member has no replica slot (plan expired?)");
  if (strcmp(s->node, node->name) != 0)
    return gs_status_set(status, GS_CODE_UNSCHEDULABLE,
                         "gang %s/%s: this replica's slot is on another node", g->ns, g->job);
  if (s->placed)
    return GS_CODE_SUCCESS;
  for (uint32_t i = 0; i < GS_MAX_GPUS; i++)
    if (s->gpus & (UINT64_C(1) << i))
      choice.gpus[choice.ngpus++] = i;
  a = (struct gs_alloc){
      .ns = c->pod->ns,
      .name = c->pod->name,
      .uid = c->pod->uid,
      .node = s->node,
      .kind = GS_ALLOC_WHOLE,
      .state = GS_ALLOC_ASSUMED,
      .unit_mib = c->policy->unit_mib,
      .assume_time_ns = c->now_ns,
  };
  a.nparts = gs_place_parts(c->pod, &choice, parts, GS_MAX_PARTS);
  a.parts = parts;
  /* Swap placeholder for the member's own allocation, atomically under the
   * framework's write lock; on failure the placeholder comes back. */
  if (gs_ledger_release(c->ledger, s->placeholder) != GS_EOK)
    return gs_status_set(status, GS_CODE_ERROR, "gang slot lost its reservation");
  err = gs_ledger_reserve(c->ledger, &a, c->policy->cgpu_max_pods);
  if (err != GS_EOK) {
    if (hold(c->ledger, g, s) != GS_EOK) {
      /* the GPUs were free a moment ago under the same lock */
    }
    return gs_status_set(status, GS_CODE_ERROR, "cannot reserve the gang slot: %s",
                         gs_strerror(err));
  }
  s->placed = true;
  return GS_CODE_SUCCESS;
}

static void unreserve(void *self, struct gs_cycle *c, const char *node) {
  struct gang_state *st = self;
  struct gang *g;
  struct slot *s;
  (void)node;
  if (!gs_pod_request_is_gang_member(c->pod))
    return;
  g = find(st, c->pod->ns, c->pod->gang_job);
  s = slot_of(g, c->pod->uid);
  if (s == NULL || !s->placed)
    return;
  if (gs_ledger_release(c->ledger, c->pod->uid) == GS_EOK && hold(c->ledger, g, s) == GS_EOK)
    s->placed = false;
}

static void pod_gone(void *self, struct gs_ledger *ledger, const char *uid) {
  struct gang_state *st = self;
  for (size_t i = 0; i < st->n; i++) {
    struct gang *g = st->gangs[i];
    struct slot *s = slot_of(g, uid);
    if (s == NULL)
      continue;
    /* The member's own allocation is already released by the framework.
     * An unbound slot goes back to the plan for a replacement member. */
    s->member[0] = '\0';
    if (s->placed) {
      s->placed = false;
      if (hold(ledger, g, s) != GS_EOK) {
        /* someone else took the GPUs meanwhile; the slot is lost */
      }
    }
    return;
  }
}

static void tick(void *self, struct gs_ledger *ledger, int64_t now) {
  struct gang_state *st = self;
  size_t i = 0;
  while (i < st->n) {
    struct gang *g = st->gangs[i];
    uint32_t bound = 0;
    for (uint32_t r = 0; r < g->replicas; r++) {
      const struct gs_alloc *a =
          g->slots[r].placed ? gs_ledger_alloc_get(ledger, g->slots[r].member) : NULL;
      if (a != NULL && a->state == GS_ALLOC_BOUND)
        bound++;
    }
    if (bound == g->replicas ||
        now - g->created_ns > (int64_t)st->timeout_s * 1000000000) {
      drop(ledger, st, i); /* complete, or timed out: unbound slots released */
      continue;
    }
    i++;
  }
}

/* The plans still holding slots, for /debug/ledger and the metrics. */
static void describe(void *self, void (*emit)(void *ctx, const struct gs_plan_view *plan),
                     void *ctx) {
  static __thread const char *nodes[GS_GANG_REPLICAS_MAX];
  static __thread uint64_t gpus[GS_GANG_REPLICAS_MAX];
  const struct gang_state *st = self;
  for (size_t i = 0; st != NULL && i < st->n; i++) {
    const struct gang *g = st->gangs[i];
    struct gs_plan_view v = {g->ns, g->job, g->replicas, 0, 0, nodes, gpus};
    if (g->replicas > GS_GANG_REPLICAS_MAX)
      continue; /* refused at planning: cannot be held */
    for (uint32_t r = 0; r < g->replicas; r++) {
      nodes[r] = g->slots[r].node;
      gpus[r] = g->slots[r].gpus;
      v.placed += g->slots[r].placed;
    }
    v.nslots = g->replicas;
    emit(ctx, &v);
  }
}

const struct gs_plugin_ops gs_plugin_gang = {
    .name = "gang",
    .api_version = GS_PLUGIN_API_VERSION,
    .create = create,
    .destroy = destroy,
    .pre_filter = pre_filter,
    .filter = filter,
    .score = score,
    .reserve = reserve,
    .unreserve = unreserve,
    .tick = tick,
    .pod_gone = pod_gone,
    .describe = describe,
};
