/* gang: all-or-nothing scheduling of distributed jobs on topology nodes
 * (docs/gangs.md).
 *
 * Pods labelled gpu-topology=<job>, gpu-topology-replica=<R> that request
 * whole GPUs (aliyun.com/gpu) form a gang: one per namespace and job name,
 * kept while any member exists.
 *
 * - Quorum. Members are counted as they appear (the front end's watch
 *   reports every pod, pending or bound, through pod_seen; a filter counts
 *   its pod too). Until R members agreeing on the request exist, every
 *   member is refused on every node as unresolvable, "gang ns/job: P of R
 *   members present", and nothing is held.
 * - Plan. At the first filter with all R present, every slot not yet held
 *   by a member is planned on free whole GPUs of topology nodes (the job's
 *   own nodes first, then the fullest node that fits; inside a node the
 *   best-connected GPU set) and held in the ledger by a placeholder
 *   allocation (UID "gang/<ns>/<job>/<slot>"). A member passes filter only
 *   on its slot's node; reserve swaps the placeholder for the member's own
 *   allocation. If the plan cannot be made nothing is held.
 * - Disagreement. Members that ask different GPU counts or replica counts
 *   refuse the whole job, as unresolvable, naming both pods, before any
 *   member binds; planned slots are released.
 * - Running jobs. Bound members keep their slots; a member that leaves
 *   frees its slot, and its replacement is planned alone (the job's nodes
 *   first). After a restart the slots are rebuilt from the bound members'
 *   labels and allocations (pod_seen).
 * - Timeout. A plan whose slots are not all bound within gangTimeoutSeconds
 *   releases the slots of members not bound and reports a
 *   GS_NOTICE_GANG_TIMEOUT (the gang, then each member not bound).
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
