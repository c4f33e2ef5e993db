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

#define GS_GANG_REPLICAS_MAX 1024

/* The plans are described through the plugin's describe hook
 * (struct gs_plan_view, plugin.h): no caller names this plugin. */

#endif
