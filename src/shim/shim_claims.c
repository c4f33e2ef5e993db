/* gpushare placing DRA claims through the shim (shim.h, docs/dra.md): the
 * claim decoded by the DRA feed's rules (gs__dra_request), the node and GPUs
 * the service's (gs_sched_claim_filter, gs_sched_claim_reserve), the devices
 * the feed's table of published slices. The Go plugin writes what this
 * answers into the claim's status.allocation. */
#include "shim_int.h"

#include "api.h"
#include "dra.h" /* and gpushare/claim.h: the request and choice types */

#include <gpushare/alloc.h>
#include <gpushare/sched.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *str_or(const json_t *v, const char *dflt) {
  return json_string_value(v) != NULL ? json_string_value(v) : dflt;
}

/* The claim's request, its name and uid: 1 gpushare's, 0 not, -1 refused
 * (why in reason). */
static int decode(const char *claim, size_t len, json_t **ret, struct gs_claim_request *req,
                  char *request, size_t rcap, char *reason) {
  json_t *obj = claim != NULL && len > 0 ? json_loadb(claim, len, 0, NULL) : NULL;
  int r;
  *ret = NULL;
  if (obj == NULL) {
    snprintf(reason, GS_SHIM_REASON, "the ResourceClaim is not JSON");
    return -1;
  }
  r = gs__dra_request(obj, req, request, rcap, reason, GS_SHIM_REASON);
  if (r < 0) {
    char why[GS_SHIM_REASON];
    snprintf(why, sizeof why, "%s", reason);
    snprintf(reason, GS_SHIM_REASON, "ResourceClaim %.60s: %.170s",
             str_or(json_object_get(json_object_get(obj, "metadata"), "name"), "?"), why);
  }
  *ret = obj;
  return r;
}

int gs_shim_claim_filter(struct gs_shim *s, const char *claim, size_t len,
                         const char *const *nodes, size_t n, int *codes, char *reasons,
                         int64_t *scores) {
  struct gs_claim_request req;
  char request[GS_NAME_MAX + 1];
  json_t *obj;
  struct gs_node_result *res;
  int r = decode(claim, len, &obj, &req, request, sizeof request, reasons);
  json_decref(obj);
  if (r <= 0) {
    if (r == 0)
      reasons[0] = '\0';
    return r == 0 ? GS_SHIM_SKIP : GS_SHIM_UNRESOLVABLE;
  }
  res = gs_calloc(n ? n : 1, sizeof *res);
  if (res == NULL || gs_sched_claim_filter(gs__shim_sched(s), nodes, n, &req, res) == GS_EINVAL) {
    gs_free(res);
    snprintf(reasons, GS_SHIM_REASON, "out of memory or no node list");
    return GS_SHIM_ERROR;
  }
  for (size_t i = 0; i < n; i++) {
    char *why = reasons + i * GS_SHIM_REASON;
    if (res[i].code == GS_EOK && !gs__dra_node_published(gs__shim_dra(s), nodes[i])) {
      res[i].code = GS_ENOFIT;
      snprintf(res[i].reason, sizeof res[i].reason,
               "no GPU of the node published as a device of " GS_DRA_DRIVER);
    }
    codes[i] = res[i].code == GS_EOK            ? GS_SHIM_OK
               : res[i].code == GS_EUNRESOLVABLE ? GS_SHIM_UNRESOLVABLE
                                                 : GS_SHIM_UNSCHEDULABLE;
    scores[i] = res[i].code == GS_EOK ? res[i].score100 : 0;
    if (codes[i] != GS_SHIM_OK)
      snprintf(why, GS_SHIM_REASON, "%s", res[i].reason);
  }
  gs_free(res);
  return GS_SHIM_OK;
}

int gs_shim_filter_claim(struct gs_shim *s, const char *pod, size_t len, const char *claim,
                         size_t claim_len, const char *const *nodes, size_t n,
                         const int64_t *host, int64_t now_ns, int *codes, char *reasons,
                         int64_t *scores, int *ret_shaped) {
  struct gs_claim_request req;
  char request[GS_NAME_MAX + 1];
  json_t *obj;
  int r = decode(claim, claim_len, &obj, &req, request, sizeof request, reasons);
  json_decref(obj);
  reasons[0] = '\0';
  /* whole devices: no gpu-mem pod means them (gs_claim_shape_pod) */
  *ret_shaped = r > 0 && req.mib_per_gpu > 0;
  return gs__shim_filter(s, pod, len, *ret_shaped ? &req : NULL, nodes, n, host, now_ns, codes,
                         reasons, scores);
}

/* MiB as a quantity: "4Gi" when whole GiB, else "1500Mi". */
static void quantity(uint64_t mib, char *out, size_t cap) {
  if (mib % 1024 == 0)
    snprintf(out, cap, "%lluGi", (unsigned long long)(mib / 1024));
  else
    snprintf(out, cap, "%lluMi", (unsigned long long)mib);
}

int gs_shim_claim_reserve(struct gs_shim *s, const char *claim, size_t len, const char *node,
                          int64_t now_ns, char **ret_json, char *reason) {
  struct gs_claim_request req;
  struct gs_claim_choice c;
  struct gs_status st = {GS_EOK, GS_R_OTHER, ""};
  char request[GS_NAME_MAX + 1];
  const char *const nodes[1] = {node};
  json_t *obj, *results = NULL, *out = NULL;
  const json_t *md;
  const char *uid;
  int r = decode(claim, len, &obj, &req, request, sizeof request, reason), code = GS_SHIM_OK;
  *ret_json = NULL;
  if (r <= 0) {
    if (r == 0)
      snprintf(reason, GS_SHIM_REASON, "the ResourceClaim is not gpushare's");
    json_decref(obj);
    return GS_SHIM_UNRESOLVABLE;
  }
  md = json_object_get(obj, "metadata");
  uid = json_string_value(json_object_get(md, "uid"));
  if (uid == NULL || node == NULL) {
    snprintf(reason, GS_SHIM_REASON, "the ResourceClaim has no uid");
    json_decref(obj);
    return GS_SHIM_UNRESOLVABLE;
  }
  switch (gs_sched_claim_reserve(gs__shim_sched(s), nodes, 1, &req,
                                 str_or(json_object_get(md, "namespace"), ""),
                                 str_or(json_object_get(md, "name"), ""), uid, now_ns,
                                 &c, &st)) {
  case GS_EOK:
    break;
  case GS_ENOFIT:
    code = GS_SHIM_UNSCHEDULABLE;
    break;
  default:
    code = GS_SHIM_UNRESOLVABLE;
    break;
  }
  if (code != GS_SHIM_OK) {
    snprintf(reason, GS_SHIM_REASON, "%s", st.reason[0] ? st.reason : "cannot reserve");
    json_decref(obj);
    return code;
  }
  results = json_array();
  for (uint32_t i = 0; results != NULL && i < c.choice.ngpus; i++) {
    char pool[GS_NAME_MAX + 1], dev[GS_NAME_MAX + 1], mem[32];
    bool multi = false;
    json_t *res;
    if (!gs__dra_device_at(gs__shim_dra(s), c.node, c.choice.gpus[i], pool, sizeof pool, dev,
                           sizeof dev, &multi) ||
        (req.mib_per_gpu > 0 && !multi)) {
      snprintf(reason, GS_SHIM_REASON, "GPU %u of node %.100s: no %sdevice of " GS_DRA_DRIVER
               " published", (unsigned)c.choice.gpus[i], c.node,
               req.mib_per_gpu > 0 ? "shared (allowMultipleAllocations) " : "");
      code = GS_SHIM_UNSCHEDULABLE;
      break;
    }
    quantity(req.mib_per_gpu, mem, sizeof mem);
    res = json_pack("{s:s,s:s,s:s,s:b}", "driver", GS_DRA_DRIVER, "pool", pool, "device", dev,
                    "shared", multi);
    if (res != NULL && req.mib_per_gpu > 0)
      json_object_set_new(res, "memory", json_string(mem));
    if (res == NULL || json_array_append_new(results, res) != 0)
      code = GS_SHIM_ERROR;
  }
  if (code == GS_SHIM_OK && results != NULL)
    out = json_pack("{s:s,s:s,s:O}", "node", c.node, "request", request, "results", results);
  if (code == GS_SHIM_OK && out != NULL)
    *ret_json = gs_api_dump(out);
  if (code == GS_SHIM_OK && *ret_json == NULL) {
    snprintf(reason, GS_SHIM_REASON, "out of memory");
    code = GS_SHIM_ERROR;
  }
  if (code != GS_SHIM_OK)
    gs_sched_claim_gone(gs__shim_sched(s), uid);
  json_decref(out);
  json_decref(results);
  json_decref(obj);
  return code;
}

void gs_shim_claim_unreserve(struct gs_shim *s, const char *uid) {
  gs_sched_claim_gone(gs__shim_sched(s), uid);
}

int gs_shim_claim_gang_permit(struct gs_shim *s, const char *pod, size_t len, char *reason) {
  struct gs_pod_request req;
  struct gs_diag diag = {"", ""};
  struct gs_status st = {GS_EOK, GS_R_OTHER, ""};
  json_t *obj = pod != NULL && len > 0 ? json_loadb(pod, len, 0, NULL) : NULL;
  enum gs_err e = obj != NULL ? gs_api_pod_decode(obj, &req, &diag) : GS_EPARSE;
  json_decref(obj);
  reason[0] = '\0';
  if (e != GS_EOK) {
    snprintf(reason, GS_SHIM_REASON, "invalid Pod: %.100s: %.130s", diag.where, diag.text);
    return GS_SHIM_ERROR;
  }
  if (req.gang_job[0] == '\0')
    return GS_SHIM_SKIP;
  e = gs_sched_claim_gang_permit(gs__shim_sched(s), req.ns, req.gang_job, req.gang_replicas,
                                 req.uid, &st);
  snprintf(reason, GS_SHIM_REASON, "%s", st.reason);
  return e == GS_EOK ? GS_SHIM_OK : e == GS_EWAIT ? GS_SHIM_WAIT : GS_SHIM_ERROR;
}

void gs_shim_claim_gang_leave(struct gs_shim *s, const char *uid) {
  gs_sched_claim_gang_leave(gs__shim_sched(s), uid);
}
