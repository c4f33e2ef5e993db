/* gpushare — feeding the scheduler service from Kubernetes objects (JSON
 * as the apiserver serves them): nodes, pods (bound with an allocation,
 * pending members of a distributed job, terminal), deletions. Shared by
 * the extender's sink and the scheduling-framework plugin's shim. */
#ifndef GPUSHARE_SERVER_FEED_H
#define GPUSHARE_SERVER_FEED_H

#include <gpushare/sched.h>

#include <jansson.h>

void gs__feed_node(struct gs_sched *sched, const json_t *node);
void gs__feed_node_delete(struct gs_sched *sched, const char *name);
/* A pod added or changed: Succeeded/Failed frees its GPUs; a bound pod's
 * allocation is restored; a member of a distributed job is counted. */
void gs__feed_pod(struct gs_sched *sched, const json_t *pod);

#endif
