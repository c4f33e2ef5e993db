/* gpushare — the views both front ends serve from the scheduler service:
 * /debug/ledger, /gpushare-scheduler/inspect and the ledger's gauges of
 * /metrics (docs/api.md). The extender's routes and the plugin's side
 * listener (plugins/scheduler) answer with the same bytes. */
#ifndef GPUSHARE_OBSERVE_VIEW_H
#define GPUSHARE_OBSERVE_VIEW_H

#include "feed.h"
#include "metrics.h"

#include <gpushare/sched.h>

#include <stdbool.h>
#include <stdint.h>

/* The ledger (inspect: the Aliyun-shaped table) of every node, or of node
 * (NULL: all) as a JSON document in *ret (free it); the ledger shows the
 * configuration's state (cfg: "pendingUnit", "configError"). GS_ENOTFOUND
 * for a node gpushare does not know, GS_ENOMEM. */
enum gs_err gs__view_json(struct gs_sched *sched, const char *node, bool inspect,
                          struct gs__feed_config *cfg, char **ret);

/* The service's gauges into m: gpushare_pods, gpushare_gangs_waiting, per
 * GPU gpushare_gpu_memory_{used,total}_mib and gpushare_gpu_pods; and the
 * configuration's: gpushare_pending_unit_mib, gpushare_config_invalid. */
void gs__view_gauges(struct gs_sched *sched, struct gs__feed_config *cfg, struct gs_metrics *m);

#endif
