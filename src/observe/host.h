/* gpushare — the hosts' CPU and memory as the extender's own watch sees
 * them: each node's allocatable, and the requests of the non-terminal pods
 * bound to it (the data kube-scheduler's NodeResourcesFit uses), handed to
 * the service with gs_sched_nodes_set_host as the in-process plugin hands
 * kube-scheduler's NodeInfo. nodePolicy frag weighs it, and preemption's
 * host check counts it (docs/preemption.md): one view for both. */
#ifndef GPUSHARE_OBSERVE_HOST_H
#define GPUSHARE_OBSERVE_HOST_H

#include <gpushare/sched.h>

#include <jansson.h>

struct gs__hosts;

/* A view feeding sched (borrowed; it must outlive the view). NULL when
 * memory runs out. Owned by the caller; thread-safe. */
struct gs__hosts *gs__hosts_new(struct gs_sched *sched);
void gs__hosts_free(struct gs__hosts *h); /* accepts NULL */

/* A node added or changed (status.allocatable cpu and memory), or gone. */
void gs__hosts_node(struct gs__hosts *h, const json_t *node);
void gs__hosts_node_delete(struct gs__hosts *h, const char *name);
/* A pod added or changed: counted on its node while bound and not
 * Succeeded/Failed, with its effective CPU and memory requests (overhead
 * included); a change of node or of requests moves it. */
void gs__hosts_pod(struct gs__hosts *h, const json_t *pod);
void gs__hosts_pod_delete(struct gs__hosts *h, const json_t *pod);

/* The host the view holds for node (tests); false when unknown. */
bool gs__hosts_get(struct gs__hosts *h, const char *node, struct gs_host *ret);

#endif
