/* gpushare — where the cluster comes from: the live apiserver or the
 * embedded demo file. Backends sit behind one const table of functions. */
#ifndef GPUSHARE_CLUSTER_H
#define GPUSHARE_CLUSTER_H

#include <gpushare/plugin.h>

#include <jansson.h>

/* What a backend reports. Called from the backend's own threads; objects
 * are borrowed for the duration of the call: a sink that keeps one copies
 * it (json_deep_copy), never takes a reference (json_incref), because a
 * list page's objects live in an arena freed after the page (arena.h). */
struct gs_cluster_sink {
  void *ctx;
  void (*node_upsert)(void *ctx, const json_t *node);
  void (*node_delete)(void *ctx, const char *name);
  void (*pod_upsert)(void *ctx, const json_t *pod);
  void (*pod_delete)(void *ctx, const json_t *pod);
  /* The gpushare ConfigMap and unhealthy-gpu-<node> ConfigMaps. */
  void (*configmap_upsert)(void *ctx, const json_t *cm);
  void (*configmap_delete)(void *ctx, const json_t *cm);
  /* resource.k8s.io/v1 ResourceSlices and ResourceClaims (docs/dra.md); a
   * cluster that does not serve the API has none. */
  void (*slice_upsert)(void *ctx, const json_t *slice);
  void (*slice_delete)(void *ctx, const json_t *slice);
  void (*claim_upsert)(void *ctx, const json_t *claim);
  void (*claim_delete)(void *ctx, const json_t *claim);
  /* A full list of everything has been delivered (first sync, relist). */
  void (*synced)(void *ctx);
  /* Leadership changed (always true without leader election). */
  void (*leader)(void *ctx, bool is_leader);
  /* policy/v1 PodDisruptionBudgets (preemption weighs them). */
  void (*pdb_upsert)(void *ctx, const json_t *pdb);
  void (*pdb_delete)(void *ctx, const json_t *pdb);
};

/* Counters for /metrics (monotonic since start). */
struct gs_cluster_stats {
  uint64_t api_errors;     /* apiserver requests failed: transport, 5xx, 429, 401/403 */
  uint64_t watch_restarts; /* watches re-established after an error or expiry */
  uint64_t relists;        /* full lists after the first */
};

struct gs_cluster_ops {
  const char *name;
  enum gs_err (*start)(void *self, const struct gs_cluster_sink *sink);
  void (*stop)(void *self);
  void (*destroy)(void *self);
  /* The pod as the backend knows it: new reference, or NULL. */
  json_t *(*pod_get)(void *self, const char *ns, const char *name);
  /* Binds ns/name (UID precondition) to node, writing annots in the
   * Binding's metadata.annotations. On failure diag->text says why (diag
   * arrives empty). */
  enum gs_err (*bind)(void *self, const char *ns, const char *name, const char *uid,
                      const char *node, const struct gs_annotations *annots,
                      struct gs_diag *diag);
  /* Posts a Warning event about the pod (best effort); about another object
   * when it carries "kind" (a ConfigMap). */
  void (*event)(void *self, const json_t *pod, const char *reason, const char *message);
  /* Fills the counters; NULL when the backend has none (demo). */
  void (*stats)(void *self, struct gs_cluster_stats *ret);
  /* A pod the verbs were asked about (filter, prioritize). A backend that
   * holds its own pods (the demo) takes one it does not know as created and
   * Pending, so that bind finds it, as a driver playing kube-scheduler
   * expects (docs/decisions.md); NULL for a live cluster, which has it. */
  void (*pod_offered)(void *self, const json_t *pod);
};

struct gs_cluster {
  const struct gs_cluster_ops *ops;
  void *self;
};

#endif
