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
/* A pod group's slot is held at most this long (docs/preemption.md, "Pod
 * groups' slots are held"): kube-scheduler retries an unschedulable pod at
 * least every 5 minutes (podMaxInUnschedulablePodsDuration), and each
 * retry's PodGroupPostFilter holds the slots again while victims remain. */
#define GS__SLOT_HOLD_MAX_NS (INT64_C(300) * 1000000000)

struct gs__holds;

struct gs__holds *gs__holds_new(void);
void gs__holds_free(struct gs__holds *h);
/* pod is nominated to node (NULL or "": no longer nominated). GS_EOK (true
 * in *ret_changed when the record changed), GS_ETOOBIG past GS__HOLDS_MAX,
 * GS_ENOMEM; a pod gpushare does not place is not held. */
enum gs_err gs__holds_set(struct gs__holds *h, const struct gs_pod_request *pod,
                          const struct gs_policy *policy, const char *node, bool *ret_changed);
/* pod (a pod group's member) is to take the GPUs gpus (bit i: GPU i) of
 * node, mib_per_gpu on each (0: whole GPUs), as gang preemption chose its
 * slot at now_ns: held exactly, replacing any hold it had, until it is
 * bound or gone, nominated elsewhere or no longer (gs__holds_set), or
 * GS__SLOT_HOLD_MAX_NS passed (gs__holds_expire). While it is reserved
 * (gs__holds_placed) its allocation stands for the slot. GS_EOK,
 * GS_ETOOBIG past GS__HOLDS_MAX, GS_EINVAL (no uid, no GPUs, a pod
 * gpushare does not place), GS_ENOMEM. policy must outlive h. */
enum gs_err gs__holds_set_slot(struct gs__holds *h, const struct gs_pod_request *pod,
                               const struct gs_policy *policy, const char *node, uint64_t gpus,
                               uint64_t mib_per_gpu, int64_t now_ns);
/* A slot gang preemption freed for a job of gpushare's gang labels
 * (gpu-topology, gpu-topology-replica): held, under key (a uid of the
 * slot's own), for every member of pod's job alike (same namespace and
 * gpu-topology) — the members are not known one by one — until a member
 * of the job is reserved (gs__holds_job_end: its plan holds the slots
 * from then), its next preemption, or GS__SLOT_HOLD_MAX_NS after the
 * next gs__holds_expire. Errors as gs__holds_set_slot. */
enum gs_err gs__holds_set_job_slot(struct gs__holds *h, const struct gs_pod_request *pod,
                                   const char *key, const struct gs_policy *policy,
                                   const char *node, uint64_t gpus, uint64_t mib_per_gpu);
/* The slots held for pod's job (gs__holds_set_job_slot) end; none when pod
 * is no member of a job. true when some did. */
bool gs__holds_job_end(struct gs__holds *h, const struct gs_pod_request *pod);
/* pod uid was reserved (placed true) or its reservation undone (false): a
 * pod nominated alone is done at its reservation (its hold dropped); a
 * slot's hold rests while the reservation stands and applies again when it
 * is undone (a pod-group cycle reserves every member, then undoes them all
 * when the group does not fit). true when the record changed. */
bool gs__holds_placed(struct gs__holds *h, const char *uid, bool placed);
/* Slots held longer than GS__SLOT_HOLD_MAX_NS at now_ns end; how many. */
size_t gs__holds_expire(struct gs__holds *h, int64_t now_ns);
/* pod uid bound or gone: its hold ends. true when it had one. */
bool gs__holds_drop(struct gs__holds *h, const char *uid);
/* Whether pod uid is held. */
bool gs__holds_has(const struct gs__holds *h, const char *uid);
/* Changes so far (a memo's answers are stale past a change). */
uint64_t gs__holds_gen(const struct gs__holds *h);
/* node as pod sees it (gs_preempt_hold_slots with the slots, then
 * gs_preempt_hold_view with the other holds, of other pods of equal or
 * higher priority nominated to node and not reserved): GS_ESKIP when none
 * applies (use node), GS_EOK with the view, GS_ENOFIT with st. */
enum gs_err gs__holds_view(const struct gs__holds *h, const struct gs_node *node,
                           const struct gs_pod_request *pod, struct gs_node *ret_view,
                           struct gs_gpu *gpus, struct gs_status *st);

#endif
