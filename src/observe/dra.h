/* gpushare — DRA coexistence (docs/dra.md): ResourceSlices and
 * ResourceClaims (resource.k8s.io/v1, JSON as the apiserver serves them)
 * turned into claim charges in the scheduler service, so that a gpu-mem
 * pod is never given memory a claim holds.
 *
 * A device is gpushare's when its slice names a node (spec.nodeName) and
 * the device carries the attribute gpushare.io/index (an int: the GPU's
 * index on that node), or, for the driver gpu.nvidia.com, its own "index".
 * An allocated claim's result on such a device charges its
 * consumedCapacity "memory" (rounded up to MiB) to that GPU; a result
 * without it (an exclusive allocation) charges the whole GPU.
 *
 * Either object may come first: a claim whose device is in no slice yet is
 * "unresolved" and charged when the slice comes; a claim on a node the
 * ledger does not know yet is kept by the service until the node comes. A
 * device that vanishes from its slice while a claim holds it keeps its last
 * charge ("stale": never under-counted). Problems are logged once per
 * change and counted in gpushare_dra_problems{reason} (a count since start).
 *
 * Thread-safe: one mutex (taken before the service's). */
#ifndef GPUSHARE_OBSERVE_DRA_H
#define GPUSHARE_OBSERVE_DRA_H

#include "metrics.h"

#include <gpushare/claim.h>
#include <gpushare/sched.h>

#include <jansson.h>

#define GS_DRA_ATTR_INDEX "gpushare.io/index"
#define GS_DRA_DRIVER "gpu.gpushare.io" /* gpushare's own driver (deploy/dra/) */
#define GS_DRA_CLASS "gpushare.io"      /* its DeviceClass: claims gpushare places */
#define GS_DRA_NVIDIA_DRIVER "gpu.nvidia.com"
#define GS_DRA_CAPACITY "memory"
#define GS_DRA_RESULTS_MAX 64  /* results of one claim looked at */
#define GS_DRA_DEVICES_MAX 256 /* devices of one slice looked at (the API's own cap is 128) */

struct gs__dra;

/* NULL when out of memory. */
struct gs__dra *gs__dra_new(void);
void gs__dra_free(struct gs__dra *d);

/* A ResourceSlice added or changed / deleted. */
void gs__dra_slice(struct gs__dra *d, struct gs_sched *s, const json_t *slice);
void gs__dra_slice_delete(struct gs__dra *d, struct gs_sched *s, const json_t *slice);
/* A ResourceClaim added or changed (allocated: charged; not: freed) /
 * deleted (freed). */
void gs__dra_claim(struct gs__dra *d, struct gs_sched *s, const json_t *claim);
void gs__dra_claim_delete(struct gs__dra *d, struct gs_sched *s, const json_t *claim);

/* ---- gpushare placing claims (issue 33 item 2) ----------------------------
 * A claim is gpushare's when a request names the DeviceClass GS_DRA_CLASS.
 * gpushare places it when it is exactly one request "exactly" of that class,
 * allocationMode ExactCount (count K, 1 by default), no selectors, no
 * constraints, no config, no adminAccess, capacity.requests only "memory"
 * (M: M / K bytes per GPU, rounded up to MiB) or none (K whole devices).
 * 1: *req and the request's name; 0: not gpushare's (DynamicResources');
 * -1: gpushare's but not placeable, why says which field. */
int gs__dra_request(const json_t *claim, struct gs_claim_request *req, char *request, size_t rcap,
                    char *why, size_t wcap);
/* Whether the node has devices of GS_DRA_DRIVER published with GPU indexes. */
bool gs__dra_node_published(struct gs__dra *d, const char *node);
/* The device of GS_DRA_DRIVER for GPU gpu of node: its pool and name, and
 * whether it allows multiple allocations. false: none published. */
bool gs__dra_device_at(struct gs__dra *d, const char *node, uint32_t gpu, char *pool, size_t pcap,
                       char *dev, size_t dcap, bool *multi);

/* Counts for tests and gauges. */
struct gs__dra_counts {
  size_t slices, devices, claims, charged, unresolved;
};
struct gs__dra_counts gs__dra_counts(struct gs__dra *d);
/* gpushare_dra_devices, gpushare_dra_claims{state} and
 * gpushare_dra_problems{reason} into m. */
void gs__dra_gauges(struct gs__dra *d, struct gs_metrics *m);

#endif
