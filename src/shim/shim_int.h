/* gpushare — what the shim's files share (not part of shim.h's API). */
#ifndef GPUSHARE_PLUGIN_SHIM_INT_H
#define GPUSHARE_PLUGIN_SHIM_INT_H

#include "shim.h"

struct gs__dra;
struct gs_sched;

/* The shim's service and DRA feed (shim.c owns them). */
struct gs_sched *gs__shim_sched(struct gs_shim *s);
struct gs__dra *gs__shim_dra(struct gs_shim *s);
/* The n nodes' host resources (4 per node, as gs_shim_filter's host). */
enum gs_err gs__shim_set_hosts(struct gs_shim *s, const char *const *nodes, size_t n,
                               const int64_t *host);

#endif
