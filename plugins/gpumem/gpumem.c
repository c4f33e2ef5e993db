/* gpumem: places aliyun.com/gpu-mem pods (share, cgpu, mps nodes) and
 * single whole-GPU pods (topology nodes) on one node, and writes the
 * Binding annotations. The decisions themselves live in the core
 * (gs_place_*); this plugin maps them onto the extension points. */
#include "plugins.h"

#include <gpushare/annot.h>
#include <gpushare/alloc.h>
#include <gpushare/place.h>

#include <stdlib.h>
#include <string.h>

#define RECENT_UIDS 8

/* Under nodePolicy frag: the request distribution the fragmentation score
 * weighs (place.h), learned from the pods seen, and its table, rebuilt when
 * it changes. pre_filter runs under the write lock (it records), the
 * per-node hooks under the read lock (they read). One pod passes
 * pre_filter for filter, prioritize and bind: the last few UIDs are
 * remembered so that it counts once. */
struct gpumem {
  struct gs_frag_dist dist;
  struct gs_frag_table table;
  char recent[RECENT_UIDS][GS_UID_MAX + 1];
  unsigned next;
};

static void *create(const struct gs_policy *policy) {
  struct gpumem *g = gs_calloc(1, sizeof *g);
  (void)policy;
  if (g != NULL) {
    gs_frag_dist_init(&g->dist);
    gs_frag_table_build(&g->table, &g->dist);
  }
  return g;
}

static void destroy(void *self) { gs_free(self); }

static void learn(struct gpumem *g, const struct gs_cycle *c) {
  const struct gs_pod_request *pod = c->pod;
  uint64_t mib;
  if (g == NULL || c->policy->node_policy != GS_PLACE_FRAG || !gs_pod_request_is_memory(pod) ||
      pod->gpu_count == 0)
    return;
  if (pod->uid[0] != '\0') {
    for (unsigned i = 0; i < RECENT_UIDS; i++)
      if (strcmp(g->recent[i], pod->uid) == 0)
        return;
    memcpy(g->recent[g->next], pod->uid, sizeof g->recent[0]);
    g->next = (g->next + 1) % RECENT_UIDS;
  }
  mib = gs_pod_request_mem_effective(pod) / pod->gpu_count * c->policy->unit_mib;
  gs_frag_dist_add_host(&g->dist, pod->gpu_count, mib, pod->cpu_milli, pod->mem_mib);
  gs_frag_table_build(&g->table, &g->dist);
}

static bool frag_policy(const struct gpumem *g, const struct gs_cycle *c) {
  return g != NULL && c->policy->node_policy == GS_PLACE_FRAG;
}

/* The GPUs and score for the pod on node, as the policy wants them. The
 * framework's prepared pod (c->place) spares checking the pod per node.
 * fit_only: the verdict alone is wanted (filter), which no policy changes:
 * no GPUs are chosen and nothing is scored (ret says none), the verdict
 * is gs_place_pick_prepared's (gs_place_fits_prepared). */
static enum gs_err pick(const struct gpumem *g, const struct gs_cycle *c,
                        const struct gs_node *node, bool fit_only, struct gs_choice *ret,
                        struct gs_status *st) {
  struct gs_place_pod own;
  const struct gs_place_pod *pod = c->place;
  struct gs_frag_pick fp;
  enum gs_err fit;
  if (pod == NULL) {
    fit = gs_place_prepare(c->pod, c->policy, &own, st);
    if (fit != GS_EOK)
      return fit;
    pod = &own;
  }
  if (fit_only) {
    /* the verdict without the choice (filter): the same code and reason */
    ret->ngpus = 0;
    ret->mib_per_gpu = 0;
    ret->score = 0;
    return gs_place_fits_prepared(node, pod, st);
  }
  if (!frag_policy(g, c) || !pod->mem) {
    fit = gs_place_pick_prepared(node, pod, NULL, NULL, ret, st);
    if (fit == GS_EOK)
      ret->score *= GS_SCORE_MAX / 10; /* placement's 0..10, exactly */
    return fit;
  }
  fp = (struct gs_frag_pick){.table = &g->table};
  fit = gs_place_pick_prepared(node, pod, gs_place_choose_frag, &fp, ret, st);
  if (fit == GS_EOK)
    ret->score = fp.has_delta
                     ? gs_place_frag_delta_score(fp.delta, (int64_t)(ret->mib_per_gpu * ret->ngpus),
                                                 GS_SCORE_MAX)
                     : gs_place_frag_score(node, c->policy, &g->table, c->pod, ret, GS_SCORE_MAX);
  return fit;
}

/* Under nodePolicy frag a pod asking no GPU is scored too: what its CPU and
 * memory take from the GPUs' pods (place.h). */
static bool host_only(const struct gpumem *g, const struct gs_cycle *c) {
  return g != NULL && gs_place_frag_scores_host(c->pod, c->policy);
}

/* A placement verdict as the hook returns it; st->code is set on refusals
 * (the reason was written by the core). */
static enum gs_err fit_code(enum gs_err fit, struct gs_status *st) {
  if (fit == GS_ENOFIT || fit == GS_EUNRESOLVABLE)
    st->code = fit;
  return fit;
}

static enum gs_err pre_filter(void *self, const struct gs_cycle *c, struct gs_status *st) {
  enum gs_err code;
  if (gs_pod_request_is_gang_member(c->pod))
    return GS_ESKIP;
  code = fit_code(gs_place_check_pod(c->pod, c->policy, st), st);
  if (code == GS_EOK)
    learn(self, c);
  if (code == GS_ESKIP && c->scoring && host_only(self, c))
    return GS_EOK; /* scored per node (filter and bind: not ours) */
  return code;
}

/* Filter and score share one pick: prioritize calls this once per node
 * (filter_score) rather than picking twice. *ret_scored is false when the
 * pod is not ours (SKIP) or does not fit. */
static enum gs_err pick_node(const struct gpumem *g, const struct gs_cycle *c,
                              const struct gs_node *node, bool fit_only, struct gs_status *st,
                              int64_t *ret_score, bool *ret_scored) {
  struct gs_choice choice;
  enum gs_err code;
  *ret_scored = false;
  if (gs_pod_request_is_gang_member(c->pod))
    return GS_ESKIP;
  /* pick checks the pod first (or the framework did, once for the
   * request): SKIP means it asks for nothing gpushare manages. */
  code = fit_code(pick(g, c, node, fit_only, &choice, st), st);
  if (code == GS_ESKIP && !fit_only && host_only(g, c)) {
    *ret_score = gs_place_frag_score(node, c->policy, &g->table, c->pod, NULL, GS_SCORE_MAX);
    *ret_scored = true;
    return GS_EOK;
  }
  if (code == GS_EOK) {
    *ret_score = choice.score;
    *ret_scored = true;
  }
  return code;
}

static enum gs_err filter(void *self, const struct gs_cycle *c, const struct gs_node *node,
                           struct gs_status *st) {
  int64_t unused;
  bool scored;
  return pick_node(self, c, node, true, st, &unused, &scored);
}

static enum gs_err filter_score(void *self, const struct gs_cycle *c, const struct gs_node *node,
                                 struct gs_status *st, int64_t *ret_score, bool *ret_scored) {
  return pick_node(self, c, node, false, st, ret_score, ret_scored);
}

static enum gs_err score(void *self, const struct gs_cycle *c, const struct gs_node *node,
                          int64_t *ret_score) {
  struct gs_status st;
  bool scored;
  /* Not ours, invalid or not fitting: no opinion (filter says why). */
  if (pick_node(self, c, node, false, &st, ret_score, &scored) != GS_EOK || !scored)
    return GS_ESKIP;
  return GS_EOK;
}

static enum gs_err reserve(void *self, struct gs_cycle *c, const struct gs_node *node,
                            struct gs_status *st) {
  struct gs_alloc_part parts[GS_MAX_PARTS];
  struct gs_choice choice;
  struct gs_alloc alloc;
  enum gs_err code;
  enum gs_err err;

  if (gs_pod_request_is_gang_member(c->pod) || gs_ledger_alloc_get(c->ledger, c->pod->uid) != NULL)
    return GS_ESKIP; /* the gang plugin reserves its members' slots */
  /* pick checks the pod first (SKIP: nothing gpushare manages). */
  code = fit_code(pick(self, c, node, false, &choice, st), st);
  if (code != GS_EOK)
    return code;
  alloc = gs__plugin_assumed(c, node->name,
                             gs_pod_request_is_whole(c->pod) ? GS_ALLOC_WHOLE : GS_ALLOC_MEM,
                             &choice, parts, GS_MAX_PARTS);
  if (alloc.nparts == 0)
    return gs_status_set(st, GS_EUNRESOLVABLE, GS_R_INVALID_POD, "pod needs more than %d GPU shares",
                         GS_MAX_PARTS);
  err = gs_ledger_reserve(c->ledger, &alloc, c->policy->cgpu_max_pods);
  switch (err) {
  case GS_EOK:
    return GS_EOK;
  case GS_ENOFIT:
    return gs_status_set(st, GS_ENOFIT, GS_R_OTHER, "no room left on the chosen GPUs");
  default:
    return gs_status_set(st, err, GS_R_OTHER, "cannot reserve GPUs: %s", gs_strerror(err));
  }
}

static void unreserve(void *self, struct gs_cycle *c, const char *node) {
  const struct gs_alloc *a = gs_ledger_alloc_get(c->ledger, c->pod->uid);
  (void)self;
  if (a != NULL && a->state == GS_ALLOC_ASSUMED && a->node != NULL && node != NULL)
    if (gs_ledger_release(c->ledger, c->pod->uid) != GS_EOK)
      return; /* already gone: nothing to undo */
}

static enum gs_err pre_bind(void *self, const struct gs_cycle *c, const struct gs_alloc *alloc,
                         struct gs_annotations *ret, struct gs_status *st) {
  const struct gs_node *node = gs_ledger_node_get(c->ledger, alloc->node);
  enum gs_err err;
  (void)self;
  if (node == NULL)
    return gs_status_set(st, GS_ENOTFOUND, GS_R_NODE_UNKNOWN, "node unknown to gpushare");
  err = alloc->kind == GS_ALLOC_WHOLE ? gs_annot_whole(alloc, ret) : gs_annot_mem(alloc, node, ret);
  if (err != GS_EOK)
    return gs_status_set(st, err, GS_R_OTHER, "cannot write annotations: %s", gs_strerror(err));
  return GS_EOK;
}

const struct gs_plugin_ops gs_plugin_gpumem = {
    .name = "gpumem",
    .api_version = GS_PLUGIN_API_VERSION,
    .create = create,
    .destroy = destroy,
    .pre_filter = pre_filter,
    .filter = filter,
    .score = score,
    .reserve = reserve,
    .unreserve = unreserve,
    .pre_bind = pre_bind,
    .filter_score = filter_score,
};
