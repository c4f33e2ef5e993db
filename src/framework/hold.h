/* gpushare — pods nominated to a node by preemption, whose GPUs are held
 * against other pods until they bind or go (docs/preemption.md): the
 * framework's record, read under its read lock and changed under its
 * write lock. Internal to src/framework. */
#ifndef GPUSHARE_FRAMEWORK_HOLD_H
#define GPUSHARE_FRAMEWORK_HOLD_H

#include <gpushare/place.h>
#include <gpushare/preempt.h>

#include <stdbool.h>
#include <stdint.h>

#define GS__HOLDS_MAX 256 /* nominated pods held at once; more are not held */

struct gs__holds;

struct gs__holds *gs__holds_new(void);
void gs__holds_free(struct gs__holds *h);
/* pod is nominated to node (NULL or "": no longer nominated). GS_EOK (true
 * in *ret_changed when the record changed), GS_ETOOBIG past GS__HOLDS_MAX,
 * GS_ENOMEM; a pod gpushare does not place is not held. */
enum gs_err gs__holds_set(struct gs__holds *h, const struct gs_pod_request *pod,
                          const struct gs_policy *policy, const char *node, bool *ret_changed);
/* pod uid bound or gone: its hold ends. true when it had one. */
bool gs__holds_drop(struct gs__holds *h, const char *uid);
/* Whether pod uid is held. */
bool gs__holds_has(const struct gs__holds *h, const char *uid);
/* Changes so far (a memo's answers are stale past a change). */
uint64_t gs__holds_gen(const struct gs__holds *h);
/* node as pod sees it (gs_preempt_hold_view with the holds of other pods
 * of equal or higher priority nominated to node): GS_ESKIP when none
 * applies (use node), GS_EOK with the view, GS_ENOFIT with st. */
enum gs_err gs__holds_view(const struct gs__holds *h, const struct gs_node *node,
                           const struct gs_pod_request *pod, struct gs_node *ret_view,
                           struct gs_gpu *gpus, struct gs_status *st);

#endif
