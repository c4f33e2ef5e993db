/* gpushare — feeding the scheduler service from Kubernetes objects (JSON
 * as the apiserver serves them): nodes, pods (bound with an allocation,
 * pending members of a distributed job, terminal), deletions. Shared by
 * the extender's sink and the scheduling-framework plugin's shim. */
#ifndef GPUSHARE_OBSERVE_FEED_H
#define GPUSHARE_OBSERVE_FEED_H

#include <gpushare/sched.h>

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

void gs__feed_node(struct gs_sched *sched, const json_t *node);
void gs__feed_node_delete(struct gs_sched *sched, const char *name);
/* A pod added or changed: Succeeded/Failed frees its GPUs; a bound pod's
 * allocation is restored; a member of a distributed job is counted. */
void gs__feed_pod(struct gs_sched *sched, const json_t *pod);

/* A pod's labels and host requests only (gs_sched_pod_meta): for a front
 * end that bound the pod itself and does not feed it again. */
void gs__feed_pod_meta(struct gs_sched *sched, const json_t *pod);
/* A policy/v1 PodDisruptionBudget added, changed or deleted: preemption
 * weighs it (docs/preemption.md). An undecodable one is logged and
 * forgotten (it protects nothing gpushare can read). */
void gs__feed_pdb(struct gs_sched *sched, const json_t *pdb);
void gs__feed_pdb_delete(struct gs_sched *sched, const json_t *pdb);

/* Which ConfigMap holds the configuration (docs/contract.md §6), and whether a
 * flag or the plugin's args fixed the unit (then a change is not pending). */
struct gs__feed_cm {
  const char *ns, *name;
  uint32_t unit_override_mib;
};
/* What the configuration's ConfigMap says beside the running configuration:
 * a gpuMemoryUnit waiting for a restart, and an invalid value (the running
 * configuration stays in force; docs/operations.md). */
#define GS_FEED_CONFIG_ERROR_MAX 320
struct gs__feed_config {
  atomic_uint pending_unit; /* MiB; 0: none */
  pthread_mutex_t mu;       /* guards error */
  char error[GS_FEED_CONFIG_ERROR_MAX]; /* "" while the ConfigMap is valid */
};
void gs__feed_config_init(struct gs__feed_config *c);
void gs__feed_config_destroy(struct gs__feed_config *c);
/* The current error into out (len bytes); false (out "") when valid. */
bool gs__feed_config_error(struct gs__feed_config *c, char *out, size_t len);

/* A ConfigMap added or changed. The configuration's: checked whole against
 * the running configuration — an invalid value is logged and kept in
 * c->error (true is returned when that error is new: the caller posts a
 * Warning Event), a gpuMemoryUnit that differs from the running one is
 * kept in c->pending_unit (logged when it changes). kube-system/
 * unhealthy-gpu-<node> sets the node's unhealthy GPUs ("gpus": "0,2").
 * Others are ignored. */
bool gs__feed_configmap(struct gs_sched *sched, const struct gs__feed_cm *f, const json_t *cm,
                        struct gs__feed_config *c);
void gs__feed_configmap_delete(struct gs_sched *sched, const struct gs__feed_cm *f,
                               const json_t *cm, struct gs__feed_config *c);

#endif
