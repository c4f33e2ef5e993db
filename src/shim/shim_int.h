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

/* gs_shim_filter, the pod shaped first (shape non-NULL) as the gpu-mem pod
 * a memory claim of gpushare's is placed as (gs_claim_shape_pod): scored
 * so, GS_SHIM_SCORE_ONLY (the claim is what is reserved, not the pod). */
struct gs_claim_request;
int gs__shim_filter(struct gs_shim *s, const char *pod, size_t len,
                    const struct gs_claim_request *shape, const char *const *nodes, size_t n,
                    const int64_t *host, int64_t now_ns, int *codes, char *reasons,
                    int64_t *scores);

/* A preemption verb's answer: {"node","victims":[{"namespace","name",
 * "uid"}...]} and, when violations is not NULL, "pdbViolations"; NULL when
 * out of memory. Owned by the caller (gs_shim_free_string). */
struct gs_victim;
char *gs__shim_victims_answer(const char *node, const struct gs_victim *victims, size_t n,
                              const uint32_t *violations);

#endif
