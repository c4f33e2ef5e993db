/* gang: all-or-nothing scheduling of distributed jobs on topology nodes.
 *
 * Pods labelled gpu-topology=<job>, gpu-topology-replica=<R> that request
 * whole GPUs (aliyun.com/gpu) form a gang. At the first member's filter the
 * plugin plans all R replicas across every topology node the ledger knows
 * and reserves the plan at once: each slot's GPUs are held in the ledger by
 * a placeholder allocation (UID "gang/<ns>/<job>/<slot>"). A member passes
 * filter only on the node of its slot; reserve swaps the placeholder for
 * the member's own allocation. If the plan cannot be made, every node fails
 * with a reason naming the job and how many of R fit, and nothing is held.
 * A plan whose members are not all bound within gangTimeoutSeconds releases
 * the slots not yet bound (bound members keep running).
 */
#ifndef GPUSHARE_PLUGIN_GANG_H
#define GPUSHARE_PLUGIN_GANG_H

#include <gpushare/plugin.h>

extern const struct gs_plugin_ops gs_plugin_gang;

#define GS_GANG_UID_PREFIX "gang/"

/* A read-only description of one gang, for the debug view. */
struct gs_gang_slot_info {
  const char *node;
  uint64_t gpus;      /* mask of the slot's GPUs */
  const char *member; /* UID of the member assigned to it, or NULL */
  bool placed;        /* the member holds the GPUs (reserved or bound) */
};
struct gs_gang_info {
  const char *ns, *job;
  uint32_t replicas;
  uint32_t nslots;
  const struct gs_gang_slot_info *slots;
};

#define GS_GANG_REPLICAS_MAX 1024

/* Number of gangs listed. */
size_t gs_gang_count(const void *state);
/* Describes the i-th gang into *ret, its slots into slots[cap] (cap ≥ its
 * replicas, at most GS_GANG_REPLICAS_MAX). Strings are borrowed from the
 * state: valid while the caller holds the framework's lock. */
bool gs_gang_at(const void *state, size_t i, struct gs_gang_info *ret,
                struct gs_gang_slot_info *slots, uint32_t cap);

#endif
