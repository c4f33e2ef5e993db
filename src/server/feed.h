/* gpushare — feeding the scheduler service from Kubernetes objects (JSON
 * as the apiserver serves them): nodes, pods (bound with an allocation,
 * pending members of a distributed job, terminal), deletions. Shared by
 * the extender's sink and the scheduling-framework plugin's shim. */
#ifndef GPUSHARE_SERVER_FEED_H
#define GPUSHARE_SERVER_FEED_H

#include <gpushare/sched.h>

#include <jansson.h>
#include <stdatomic.h>
#include <stdint.h>

void gs__feed_node(struct gs_sched *sched, const json_t *node);
void gs__feed_node_delete(struct gs_sched *sched, const char *name);
/* A pod added or changed: Succeeded/Failed frees its GPUs; a bound pod's
 * allocation is restored; a member of a distributed job is counted. */
void gs__feed_pod(struct gs_sched *sched, const json_t *pod);

/* Which ConfigMap holds the configuration (CONTRACT §6), and whether a
 * flag or the plugin's args fixed the unit (then a change is not pending). */
struct gs__feed_cm {
  const char *ns, *name;
  uint32_t unit_override_mib;
};
/* A ConfigMap added or changed: the configuration's gpuMemoryUnit, if it
 * differs from the running one, is stored in *pending_unit (MiB; 0: none;
 * logged when it changes); kube-system/unhealthy-gpu-<node> sets the node's
 * unhealthy GPUs ("gpus": "0,2"). Others are ignored. */
void gs__feed_configmap(struct gs_sched *sched, const struct gs__feed_cm *f, const json_t *cm,
                        atomic_uint *pending_unit);
void gs__feed_configmap_delete(struct gs_sched *sched, const struct gs__feed_cm *f,
                               const json_t *cm, atomic_uint *pending_unit);

#endif
