/* gang: see gang.h and docs/gangs.md. All hooks run under the framework's
 * lock: pre_filter, reserve, unreserve, tick, pod_gone and pod_seen under
 * the write lock (they change the gangs); filter, score and describe under
 * the read lock (they only read them). */
#include "gang_int.h"
#include "plugins.h"

#include <gpushare/alloc.h>
#include <gpushare/place.h>
#include <gpushare/topo.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What pre_filter leaves the per-node hooks of its cycle
 * (struct gs_cycle.state): the node of the member's slot, as plain data. */
struct gang_cycle {
  bool member;                /* a gang member with a slot */
  char node[GS_NAME_MAX + 1]; /* its slot's node */
};
_Static_assert(sizeof(struct gang_cycle) <= GS_CYCLE_STATE_MAX, "gang cycle state too large");

struct gang_state {
  uint32_t timeout_s;
  size_t n, cap;
  struct gang **gangs;
};

/* ---- lookups ------------------------------------------------------------- */

static struct gang *find(const struct gang_state *st, const char *ns, const char *job,
                         size_t *ret_idx) {
  for (size_t i = 0; i < st->n; i++)
    if (strcmp(st->gangs[i]->job, job) == 0 && strcmp(st->gangs[i]->ns, ns) == 0) {
      if (ret_idx != NULL)
        *ret_idx = i;
      return st->gangs[i];
    }
  return NULL;
}

static struct slot *slot_of(const struct gang *g, const char *uid) {
  if (g == NULL || uid[0] == '\0')
    return NULL;
  for (uint32_t i = 0; i < g->replicas; i++)
    if (g->slots[i].state != SLOT_EMPTY && strcmp(g->slots[i].member, uid) == 0)
      return &g->slots[i];
  return NULL;
}

static struct member *member_of(const struct gang *g, const char *uid) {
  for (uint32_t i = 0; g != NULL && i < g->nmembers; i++)
    if (strcmp(g->members[i].uid, uid) == 0)
      return &g->members[i];
  return NULL;
}

static struct shape shape_of(const struct gs_pod_request *pod) {
  return (struct shape){gs_pod_request_whole_effective(pod),
                        gs_pod_request_is_whole(pod) ? 0 : gs_pod_request_mem_effective(pod),
                        gs_pod_request_is_whole(pod) ? 0 : pod->gpu_count, pod->gang_replicas};
}

static bool agrees(const struct gang *g, const struct shape *m) {
  return m->k == g->shape.k && m->mem == g->shape.mem && m->count == g->shape.count &&
         m->replicas == g->shape.replicas;
}

static uint32_t present(const struct gang *g) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < g->nmembers; i++)
    n += agrees(g, &g->members[i].shape);
  return n;
}

static uint32_t count_slots(const struct gang *g, enum slot_state state) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < g->replicas; i++)
    n += g->slots[i].state == state;
  return n;
}

/* ---- the ledger side ------------------------------------------------------ */

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
void gs__gang_placeholder_uid(const struct gang *g, uint32_t slot, char *out, size_t len) {
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

/* Holds (or re-holds) a slot's GPUs with its placeholder allocation: the
 * whole GPUs, or a memory slot's MiB on each of its GPUs (in the ledger's
 * unit: the placeholder is one part per GPU, whatever the members'
 * containers). */
enum gs_err gs__gang_hold(struct gs_ledger *ledger, const struct gang *g, const struct slot *s) {
  struct gs_alloc_part parts[GS_MAX_GPUS];
  struct gs_alloc a;
  uint32_t n = 0, unit = gs_ledger_unit_mib(ledger);
  for (uint32_t i = 0; i < GS_MAX_GPUS; i++)
    if (s->gpus & (UINT64_C(1) << i))
      parts[n++] = (struct gs_alloc_part){0, i, s->mib_per_gpu / unit};
  a = (struct gs_alloc){
      .ns = g->ns,
      .name = g->job,
      .uid = s->placeholder,
      .node = s->node,
      .kind = s->mib_per_gpu > 0 ? GS_ALLOC_MEM : GS_ALLOC_WHOLE,
      .state = GS_ALLOC_BOUND, /* a plan reservation: never expired as a stale bind */
      .unit_mib = gs_ledger_unit_mib(ledger),
      .assume_time_ns = g->plan_ns,
      .nparts = n,
      .parts = parts,
  };
  return gs_ledger_reserve(ledger, &a, UINT32_MAX);
}

/* A held slot goes back to empty; its GPUs are free again. */
void gs__gang_unhold(struct gs_ledger *ledger, struct slot *s) {
  if (gs_ledger_release(ledger, s->placeholder) != GS_EOK) {
    /* the node went away with its allocations */
  }
  s->state = SLOT_EMPTY;
  s->member[0] = '\0';
}

static void release_held(struct gs_ledger *ledger, struct gang *g) {
  for (uint32_t i = 0; i < g->replicas; i++)
    if (g->slots[i].state == SLOT_HELD)
      gs__gang_unhold(ledger, &g->slots[i]);
  if (count_slots(g, SLOT_PLACED) == 0)
    g->plan_ns = 0;
}

/* Plans every empty slot and holds it. Each goes to a topology node with
 * room for k: one the job already uses when there is one, else the one with
 * the fewest free GPUs (binpack: large free nodes stay whole); inside the
 * node the GPU set with the best interconnect that keeps good sets free
 * (gs_topo_choose). Returns how many slots are filled (held before or now);
 * nothing is held unless every slot is. */
static uint32_t plan(struct gs_ledger *ledger, struct gang *g, int64_t now) {
  size_t nn = gs_ledger_node_count(ledger);
  uint64_t *taken = gs_calloc(nn ? nn : 1, sizeof *taken);
  uint32_t filled = g->replicas - count_slots(g, SLOT_EMPTY), planned = 0;
  uint32_t *which = gs_calloc(g->replicas, sizeof *which);

  if (taken == NULL || which == NULL)
    goto done;
  for (uint32_t r = 0; r < g->replicas; r++) {
    struct slot *s = &g->slots[r];
    size_t best = nn;
    uint32_t best_free = UINT32_MAX;
    bool best_own = false;
    uint64_t set = 0;
    if (s->state != SLOT_EMPTY)
      continue;
    for (size_t i = 0; i < nn; i++) {
      const struct gs_node *n = gs_ledger_node_at(ledger, i);
      uint32_t f;
      bool own = false;
      if (n->mode != GS_MODE_TOPOLOGY)
        continue;
      f = popcount(free_gpus(n) & ~taken[i]);
      if (f < g->shape.k)
        continue;
      for (uint32_t j = 0; j < g->replicas && !own; j++)
        own = g->slots[j].state != SLOT_EMPTY && strcmp(g->slots[j].node, n->name) == 0;
      own = own || taken[i] != 0;
      if ((own && !best_own) || (own == best_own && f < best_free)) {
        best = i;
        best_free = f;
        best_own = own;
      }
    }
    if (best == nn)
      break;
    {
      const struct gs_node *n = gs_ledger_node_at(ledger, best);
      if (gs_topo_choose(n->topo, free_gpus(n) & ~taken[best], (uint32_t)g->shape.k, &set) != GS_EOK)
        break;
      taken[best] |= set;
      snprintf(s->node, sizeof s->node, "%s", n->name);
      s->gpus = set;
      s->mib_per_gpu = 0;
      gs__gang_placeholder_uid(g, r, s->placeholder, sizeof s->placeholder);
      which[planned++] = r;
    }
  }
  if (planned == 0)
    goto done; /* nothing was empty: no new plan */
  if (filled + planned < g->replicas) {
    filled += planned;
    planned = 0; /* not all: nothing is held */
    goto done;
  }
  g->plan_ns = now;
  for (uint32_t i = 0; i < planned; i++) {
    struct slot *s = &g->slots[which[i]];
    if (gs__gang_hold(ledger, g, s) != GS_EOK) {
      while (i-- > 0)
        gs__gang_unhold(ledger, &g->slots[which[i]]);
      filled = 0;
      goto done;
    }
    s->state = SLOT_HELD;
    s->member[0] = '\0';
  }
  filled = g->replicas;
done:
  gs_free(taken);
  gs_free(which);
  return filled;
}

/* ---- gangs ------------------------------------------------------------------ */

static void gang_free(struct gang *g) {
  if (g == NULL)
    return;
  gs_free(g->slots);
  gs_free(g->members);
  gs_free(g);
}

static struct gang *gang_new(struct gang_state *st, const struct gs_pod_request *pod) {
  struct gang *g;
  if (st->n >= GANG_MAX)
    return NULL;
  if (st->n == st->cap) {
    size_t cap = st->cap ? st->cap * 2 : 16;
    struct gang **p;
    p = gs_realloc(st->gangs, cap * sizeof *p);
    if (p == NULL)
      return NULL;
    st->gangs = p;
    st->cap = cap;
  }
  g = gs_calloc(1, sizeof *g);
  if (g == NULL)
    return NULL;
  g->shape = shape_of(pod);
  g->replicas = g->shape.replicas;
  g->cap = pod->gang_replicas + MEMBERS_EXTRA;
  g->slots = gs_calloc(g->replicas, sizeof *g->slots);
  g->members = gs_calloc(g->cap, sizeof *g->members);
  if (g->slots == NULL || g->members == NULL) {
    gang_free(g);
    return NULL;
  }
  snprintf(g->ns, sizeof g->ns, "%s", pod->ns);
  snprintf(g->job, sizeof g->job, "%s", pod->gang_job);
  st->gangs[st->n++] = g;
  return g;
}

static void gang_drop(struct gs_ledger *ledger, struct gang_state *st, size_t idx) {
  struct gang *g = st->gangs[idx];
  release_held(ledger, g);
  gang_free(g);
  st->gangs[idx] = st->gangs[--st->n];
}

/* Records pod as a member. false: no room (more pods than the job has
 * replicas, or too many disagreeing ones). */
static bool member_add(struct gang *g, const struct gs_pod_request *pod) {
  struct shape want = shape_of(pod);
  struct member *m;
  if (member_of(g, pod->uid) != NULL)
    return true;
  if (g->nmembers == g->cap || (agrees(g, &want) && present(g) >= g->replicas))
    return false;
  m = &g->members[g->nmembers++];
  snprintf(m->uid, sizeof m->uid, "%s", pod->uid);
  snprintf(m->name, sizeof m->name, "%s", pod->name);
  m->shape = want;
  return true;
}

/* When no member holds a slot and none agrees with the shape any more
 * (the pods that set it left), the first member left sets it anew. */
static bool reshape(struct gang *g) {
  struct slot *slots;
  if (g->nmembers == 0 || present(g) > 0 || count_slots(g, SLOT_EMPTY) != g->replicas)
    return true;
  slots = gs_calloc(g->members[0].shape.replicas, sizeof *slots);
  if (slots == NULL)
    return false;
  gs_free(g->slots);
  g->slots = slots;
  g->shape = g->members[0].shape;
  g->replicas = g->shape.replicas;
  g->plan_ns = 0;
  return true;
}

/* What a member asks, for people: "2 GPUs x 2 replicas" (whole GPUs, the
 * words of the first release), "4 units of GPU memory on 1 GPU x 4
 * replicas" (memory-shared). */
static void asks(const struct shape *m, char *out, size_t len) {
  if (m->mem == 0)
    snprintf(out, len, "%" PRIu64 " GPUs x %" PRIu32 " replicas", m->k, m->replicas);
  else
    snprintf(out, len, "%" PRIu64 " units of GPU memory on %" PRIu32 " GPU%s x %" PRIu32
             " replicas", m->mem, m->count, m->count == 1 ? "" : "s", m->replicas);
}

/* The reason a job whose members disagree is refused, or false. */
static bool disagreement(const struct gang *g, struct gs_status *st) {
  const struct member *ref = NULL, *odd = NULL;
  for (uint32_t i = 0; i < g->nmembers; i++) {
    const struct member *m = &g->members[i];
    if (agrees(g, &m->shape)) {
      if (ref == NULL)
        ref = m;
    } else if (odd == NULL) {
      odd = m;
    }
  }
  if (odd == NULL)
    return false;
  if (ref == NULL)
    ref = &g->members[0] == odd && g->nmembers > 1 ? &g->members[1] : &g->members[0];
  {
    char a[96], b[96];
    asks(&ref->shape, a, sizeof a);
    asks(&odd->shape, b, sizeof b);
    gs_status_set(st, GS_EUNRESOLVABLE, GS_R_GANG_DISAGREE,
                  "gang %s/%s: members disagree: pod %s asks %s, pod %s asks %s", g->ns, g->job,
                  ref->name, a, odd->name, b);
  }
  return true;
}

/* ---- hooks ---------------------------------------------------------------------- */

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
  gs_free(st->gangs);
  gs_free(st);
}

/* The member's slot for the rest of its cycle. */
static enum gs_err remember(const struct gs_cycle *c, const struct slot *s) {
  struct gang_cycle *gc = c->state;
  gc->member = true;
  snprintf(gc->node, sizeof gc->node, "%s", s->node);
  return GS_EOK;
}

static enum gs_err pre_filter(void *self, const struct gs_cycle *c, struct gs_status *status) {
  struct gang_state *st = self;
  const struct gs_pod_request *pod = c->pod;
  struct gang *g;
  struct slot *s = NULL;
  uint32_t have;

  if (!gs_pod_request_is_gang_member(pod))
    return GS_ESKIP;
  if (pod->gang_replicas == 0 || pod->gang_replicas > GS_GANG_REPLICAS_MAX)
    return gs_status_set(status, GS_EUNRESOLVABLE, GS_R_GANG_OTHER,
                         "gang %s/%s: label gpu-topology-replica must be 1..%d", pod->ns,
                         pod->gang_job, GS_GANG_REPLICAS_MAX);
  if (!gs_pod_request_is_whole(pod)) {
    /* a memory-shared member: checked as gpumem checks any memory pod */
    enum gs_err e = gs_place_check_pod(pod, c->policy, status);
    if (e != GS_EOK) {
      status->code = e;
      return e;
    }
  }
  g = find(st, pod->ns, pod->gang_job, NULL);
  if (g == NULL && (g = gang_new(st, pod)) == NULL)
    return gs_status_set(status, GS_ENOFIT, GS_R_GANG_LIMIT, "too many gangs waiting");
  if (!member_add(g, pod))
    return gs_status_set(status, GS_ENOFIT, GS_R_GANG_FULL,
                         "gang %s/%s: all %" PRIu32 " replica slots are taken", g->ns, g->job,
                         g->replicas);
  if (disagreement(g, status)) {
    release_held(c->ledger, g); /* nothing stays held for a job that cannot run */
    return GS_EUNRESOLVABLE;
  }
  if ((s = slot_of(g, pod->uid)) != NULL)
    return remember(c, s);
  have = present(g);
  if (have < g->replicas)
    return gs_status_set(status, GS_EUNRESOLVABLE, GS_R_GANG_QUORUM,
                         "gang %s/%s: %" PRIu32 " of %" PRIu32 " members present", g->ns,
                         g->job, have, g->replicas);
  for (uint32_t i = 0; i < g->replicas && s == NULL; i++)
    if (g->slots[i].state == SLOT_HELD && g->slots[i].member[0] == '\0')
      s = &g->slots[i];
  if (s == NULL) {
    uint32_t fit = gs__gang_is_mem(g) ? gs__gang_plan_mem(c->ledger, g, c->policy, c->now_ns)
                                      : plan(c->ledger, g, c->now_ns);
    if (fit < g->replicas && gs__gang_is_mem(g))
      return gs_status_set(status, GS_ENOFIT, GS_R_GANG_NO_FIT,
                           "gang %s/%s: only %" PRIu32 " of %" PRIu32
                           " replicas fit (%" PRIu64 " units of GPU memory on %" PRIu32
                           " GPU%s each)",
                           g->ns, g->job, fit, g->replicas, g->shape.mem, g->shape.count,
                           g->shape.count == 1 ? "" : "s");
    if (fit < g->replicas)
      return gs_status_set(status, GS_ENOFIT, GS_R_GANG_NO_FIT,
                           "gang %s/%s: only %" PRIu32 " of %" PRIu32
                           " replicas fit (%" PRIu64 " whole GPUs each)",
                           g->ns, g->job, fit, g->replicas, g->shape.k);
    for (uint32_t i = 0; i < g->replicas && s == NULL; i++)
      if (g->slots[i].state == SLOT_HELD && g->slots[i].member[0] == '\0')
        s = &g->slots[i];
  }
  if (s == NULL)
    return gs_status_set(status, GS_ENOFIT, GS_R_GANG_FULL,
                         "gang %s/%s: all %" PRIu32 " replica slots are taken", g->ns, g->job,
                         g->replicas);
  snprintf(s->member, sizeof s->member, "%s", pod->uid);
  return remember(c, s);
}

/* Filter and score read the slot pre_filter found (cycle state): no lookup
 * per node. A member whose pre_filter failed never reaches them. */
static enum gs_err filter(void *self, const struct gs_cycle *c, const struct gs_node *node,
                           struct gs_status *status) {
  const struct gang_cycle *gc = c->state;
  (void)self;
  if (!gs_pod_request_is_gang_member(c->pod))
    return GS_ESKIP;
  if (!gc->member)
    return gs_status_set(status, GS_ENOFIT, GS_R_GANG_OTHER, "gang member has no replica slot");
  if (strcmp(gc->node, node->name) != 0)
    return gs_status_set(status, GS_ENOFIT, GS_R_GANG_OTHER_NODE,
                         "gang %s/%s: this replica's slot is on another node", c->pod->ns,
                         c->pod->gang_job);
  return GS_EOK;
}

static enum gs_err score(void *self, const struct gs_cycle *c, const struct gs_node *node,
                          int64_t *ret_score) {
  const struct gang_cycle *gc = c->state;
  (void)self;
  if (!gs_pod_request_is_gang_member(c->pod))
    return GS_ESKIP;
  *ret_score = gc->member && strcmp(gc->node, node->name) == 0 ? GS_SCORE_MAX : 0;
  return GS_EOK;
}

static enum gs_err reserve(void *self, struct gs_cycle *c, const struct gs_node *node,
                            struct gs_status *status) {
  struct gang_state *st = self;
  struct gang *g;
  struct slot *s;
  struct gs_alloc_part parts[GS_MAX_PARTS];
  struct gs_choice choice = {0};
  struct gs_alloc a;
  enum gs_err err;

  if (!gs_pod_request_is_gang_member(c->pod))
    return GS_ESKIP;
  g = find(st, c->pod->ns, c->pod->gang_job, NULL);
  s = slot_of(g, c->pod->uid);
  if (s == NULL)
    return gs_status_set(status, GS_ENOFIT, GS_R_GANG_OTHER,
                         "gang member has no replica slot (plan expired?)");
  if (strcmp(s->node, node->name) != 0)
    return gs_status_set(status, GS_ENOFIT, GS_R_GANG_OTHER_NODE,
                         "gang %s/%s: this replica's slot is on another node", g->ns, g->job);
  if (s->state != SLOT_HELD)
    return GS_EOK;
  for (uint32_t i = 0; i < GS_MAX_GPUS; i++)
    if (s->gpus & (UINT64_C(1) << i))
      choice.gpus[choice.ngpus++] = i;
  choice.mib_per_gpu = s->mib_per_gpu;
  a = gs__plugin_assumed(c, s->node, s->mib_per_gpu > 0 ? GS_ALLOC_MEM : GS_ALLOC_WHOLE, &choice,
                         parts, GS_MAX_PARTS);
  if (a.nparts == 0)
    return gs_status_set(status, GS_EUNRESOLVABLE, GS_R_GANG_OTHER,
                         "gang %s/%s: the member does not match its slot", g->ns, g->job);
  /* Swap placeholder for the member's own allocation, atomically under the
   * framework's write lock; on failure the placeholder comes back. */
  if (gs_ledger_release(c->ledger, s->placeholder) != GS_EOK)
    return gs_status_set(status, GS_ECONFLICT, GS_R_GANG_OTHER, "gang slot lost its reservation");
  err = gs_ledger_reserve(c->ledger, &a, c->policy->cgpu_max_pods);
  if (err != GS_EOK) {
    if (gs__gang_hold(c->ledger, g, s) != GS_EOK) {
      /* the GPUs were free a moment ago under the same lock */
    }
    return gs_status_set(status, GS_ECONFLICT, GS_R_GANG_OTHER, "cannot reserve the gang slot: %s",
                         gs_strerror(err));
  }
  s->state = SLOT_PLACED;
  return GS_EOK;
}

static void unreserve(void *self, struct gs_cycle *c, const char *node) {
  struct gang_state *st = self;
  struct gang *g;
  struct slot *s;
  (void)node;
  if (!gs_pod_request_is_gang_member(c->pod))
    return;
  g = find(st, c->pod->ns, c->pod->gang_job, NULL);
  s = slot_of(g, c->pod->uid);
  if (s == NULL || s->state != SLOT_PLACED)
    return;
  /* Another plugin's unreserve may have released the member's allocation
   * already (unreserve runs in reverse order); either way the slot's GPUs
   * are free now and go back to the placeholder. */
  if (gs_ledger_release(c->ledger, c->pod->uid) != GS_EOK) {
    /* already gone */
  }
  if (gs__gang_hold(c->ledger, g, s) == GS_EOK)
    s->state = SLOT_HELD; /* else tick holds it again */
}

/* Permit, for front ends that can hold a reserved member (the in-process
 * plugin): it may bind once every slot of its job is reserved by its
 * member or bound; until then it waits. */
static enum gs_err permit(void *self, struct gs_cycle *c, const char *node,
                           struct gs_status *status) {
  struct gang_state *st = self;
  struct gang *g;
  uint32_t ready;
  (void)node;
  if (!gs_pod_request_is_gang_member(c->pod))
    return GS_ESKIP;
  g = find(st, c->pod->ns, c->pod->gang_job, NULL);
  if (slot_of(g, c->pod->uid) == NULL)
    return gs_status_set(status, GS_ENOFIT, GS_R_GANG_OTHER,
                         "gang member has no replica slot (plan expired?)");
  ready = count_slots(g, SLOT_PLACED) + count_slots(g, SLOT_BOUND);
  if (ready < g->replicas)
    return gs_status_set(status, GS_EWAIT, GS_R_GANG_WAITING,
                         "gang %s/%s: %" PRIu32 " of %" PRIu32 " members reserved", g->ns,
                         g->job, ready, g->replicas);
  return GS_EOK;
}

static void pod_gone(void *self, struct gs_ledger *ledger, const char *uid) {
  struct gang_state *st = self;
  for (size_t i = 0; i < st->n; i++) {
    struct gang *g = st->gangs[i];
    struct member *m = member_of(g, uid);
    struct slot *s = slot_of(g, uid);
    if (m == NULL && s == NULL)
      continue;
    if (s != NULL && s->state == SLOT_HELD) {
      s->member[0] = '\0'; /* the slot waits for another member */
    } else if (s != NULL) {
      /* Its own allocation is already released by the framework. While the
       * plan is being bound the slot is held again for a replacement; in a
       * running job it is freed, and a replacement is planned anew. */
      s->state = SLOT_EMPTY;
      s->member[0] = '\0';
      if (g->plan_ns != 0 && gs__gang_hold(ledger, g, s) == GS_EOK)
        s->state = SLOT_HELD;
    }
    if (m != NULL) {
      size_t at = (size_t)(m - g->members);
      memmove(m, m + 1, (g->nmembers - at - 1) * sizeof *m);
      g->nmembers--;
    }
    if (g->nmembers == 0)
      release_held(ledger, g);
    if (g->nmembers == 0 || !reshape(g))
      gang_drop(ledger, st, i);
    return;
  }
}

static void pod_seen(void *self, struct gs_ledger *ledger, const struct gs_pod_request *pod,
                     const struct gs_alloc *alloc) {
  struct gang_state *st = self;
  struct gang *g;
  struct slot *s;
  if (!gs_pod_request_is_gang_member(pod) || pod->uid[0] == '\0' || pod->gang_replicas == 0 ||
      pod->gang_replicas > GS_GANG_REPLICAS_MAX)
    return;
  g = find(st, pod->ns, pod->gang_job, NULL);
  if (g == NULL && (g = gang_new(st, pod)) == NULL)
    return; /* counted at its filter instead */
  if (!member_add(g, pod) || alloc == NULL || alloc->state != GS_ALLOC_BOUND)
    return;
  s = slot_of(g, pod->uid);
  if (s != NULL) {
    s->state = SLOT_BOUND; /* our own bind, confirmed by the watch */
    return;
  }
  /* A member bound before we knew the gang (a restart): it takes a slot. */
  for (uint32_t i = 0; i < g->replicas && s == NULL; i++)
    if (g->slots[i].state == SLOT_EMPTY)
      s = &g->slots[i];
  for (uint32_t i = 0; i < g->replicas && s == NULL; i++)
    if (g->slots[i].state == SLOT_HELD && g->slots[i].member[0] == '\0') {
      s = &g->slots[i];
      gs__gang_unhold(ledger, s);
    }
  if (s == NULL)
    return; /* more bound members than replicas: not ours to fix */
  s->state = SLOT_BOUND;
  snprintf(s->node, sizeof s->node, "%s", alloc->node);
  snprintf(s->member, sizeof s->member, "%s", pod->uid);
  s->gpus = 0;
  s->mib_per_gpu = 0;
  for (uint32_t i = 0; i < alloc->nparts; i++)
    if (alloc->parts[i].gpu < GS_MAX_GPUS) {
      if (alloc->kind == GS_ALLOC_MEM && alloc->parts[i].gpu == alloc->parts[0].gpu)
        s->mib_per_gpu += gs_alloc_part_mib(alloc, &alloc->parts[i]);
      s->gpus |= UINT64_C(1) << alloc->parts[i].gpu;
    }
  gs__gang_placeholder_uid(g, (uint32_t)(s - g->slots), s->placeholder, sizeof s->placeholder);
}

/* A plan not all bound in time: the held slots go, and the gang and each
 * member not bound are reported. */
static void time_out(struct gs_ledger *ledger, struct gang *g, uint32_t timeout_s,
                     const struct gs_notify *notify) {
  char msg[GS_NS_MAX + GS_NAME_MAX + 256];
  uint32_t bound = count_slots(g, SLOT_BOUND);
  struct gs_notice n = {GS_NOTICE_GANG_TIMEOUT, g->ns, g->job, NULL, NULL, msg};
  release_held(ledger, g);
  g->plan_ns = 0;
  snprintf(msg, sizeof msg,
           "gang %s/%s: %" PRIu32 " of %" PRIu32 " members bound within gangTimeoutSeconds (%" PRIu32
           " s); the GPUs reserved for the others were released and are planned again when all "
           "members can be placed",
           g->ns, g->job, bound, g->replicas, timeout_s);
  if (notify->notice == NULL)
    return;
  notify->notice(notify->ctx, &n);
  for (uint32_t i = 0; i < g->nmembers; i++) {
    const struct slot *s = slot_of(g, g->members[i].uid);
    if (s != NULL && s->state == SLOT_BOUND)
      continue;
    n.pod = g->members[i].name;
    n.pod_uid = g->members[i].uid;
    notify->notice(notify->ctx, &n);
  }
}

static void tick(void *self, struct gs_ledger *ledger, int64_t now,
                 const struct gs_notify *notify) {
  struct gang_state *st = self;
  for (size_t i = 0; i < st->n; i++) {
    struct gang *g = st->gangs[i];
    for (uint32_t r = 0; r < g->replicas; r++) {
      struct slot *s = &g->slots[r];
      const struct gs_alloc *a;
      if (s->state != SLOT_PLACED)
        continue;
      a = gs_ledger_alloc_get(ledger, s->member);
      if (a != NULL && a->state == GS_ALLOC_BOUND)
        s->state = SLOT_BOUND;
      else if (a == NULL && gs__gang_hold(ledger, g, s) == GS_EOK)
        s->state = SLOT_HELD; /* its reservation expired: held for it again */
    }
    if (g->plan_ns == 0)
      continue;
    if (count_slots(g, SLOT_HELD) + count_slots(g, SLOT_PLACED) == 0)
      g->plan_ns = 0; /* complete */
    else if (now - g->plan_ns > (int64_t)st->timeout_s * 1000000000)
      time_out(ledger, g, st->timeout_s, notify);
  }
}

/* Gang members are never victims: evicting one member would leave its
 * job broken while the others keep their GPUs (all or nothing applies to
 * eviction too). Placeholders are not pods at all. */
static bool may_evict(void *self, const struct gs_ledger *ledger, const struct gs_alloc *alloc) {
  const struct gang_state *st = self;
  (void)ledger;
  if (strncmp(alloc->uid, GS_GANG_UID_PREFIX, strlen(GS_GANG_UID_PREFIX)) == 0)
    return false;
  for (size_t i = 0; i < st->n; i++)
    if (member_of(st->gangs[i], alloc->uid) != NULL || slot_of(st->gangs[i], alloc->uid) != NULL)
      return false;
  return true;
}

/* The gangs, for /debug/ledger and the metrics: a plan holding slots not
 * bound yet (waiting), and a running job while any member holds its GPUs
 * (docs/gangs.md: a gang lives while any member exists). A job whose slots
 * are all empty (members pending, no plan) is not listed; the last member
 * gone drops the gang (pod_gone). */
static void describe(void *self, void (*emit)(void *ctx, const struct gs_plan_view *plan),
                     void *ctx) {
  static __thread const char *nodes[GS_GANG_REPLICAS_MAX];
  static __thread uint64_t gpus[GS_GANG_REPLICAS_MAX];
  const struct gang_state *st = self;
  for (size_t i = 0; st != NULL && i < st->n; i++) {
    const struct gang *g = st->gangs[i];
    struct gs_plan_view v = {g->ns, g->job, g->replicas, 0, 0, nodes, gpus, g->plan_ns != 0};
    if (g->replicas > GS_GANG_REPLICAS_MAX)
      continue;
    for (uint32_t r = 0; r < g->replicas; r++) {
      const struct slot *s = &g->slots[r];
      if (s->state == SLOT_EMPTY)
        continue;
      nodes[v.nslots] = s->node;
      gpus[v.nslots++] = s->gpus;
      v.placed += s->state == SLOT_PLACED || s->state == SLOT_BOUND;
    }
    if (v.waiting || v.nslots > 0)
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
    .permit = permit,
    .tick = tick,
    .pod_gone = pod_gone,
    .describe = describe,
    .pod_seen = pod_seen,
    .may_evict = may_evict,
};
