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

/* The claim's consumer pod, when given (pod NULL or len 0: none): 1 and
 * *ret, 0 none, -1 not a Pod (why in reason). */
static int consumer(const char *pod, size_t len, struct gs_pod_request *ret, char *reason) {
  struct gs_diag diag = {"", ""};
  json_t *obj;
  enum gs_err e;
  if (pod == NULL || len == 0)
    return 0;
  obj = json_loadb(pod, len, 0, NULL);
  e = obj != NULL ? gs_api_pod_decode(obj, ret, &diag) : GS_EPARSE;
  json_decref(obj);
  if (e != GS_EOK) {
    snprintf(reason, GS_SHIM_REASON, "invalid Pod: %.100s: %.130s", diag.where, diag.text);
    return -1;
  }
  return 1;
}

int gs_shim_claim_filter(struct gs_shim *s, const char *pod, size_t plen, const char *claim,
                         size_t len, const char *const *nodes, size_t n, int *codes,
                         char *reasons, int64_t *scores) {
  struct gs_claim_request req;
  struct gs_pod_request preq;
  char request[GS_NAME_MAX + 1];
  json_t *obj;
  struct gs_node_result *res;
  int r = decode(claim, len, &obj, &req, request, sizeof request, reasons), who;
  json_decref(obj);
  if (r <= 0) {
    if (r == 0)
      reasons[0] = '\0';
    return r == 0 ? GS_SHIM_SKIP : GS_SHIM_UNRESOLVABLE;
  }
  if ((who = consumer(pod, plen, &preq, reasons)) < 0)
    return GS_SHIM_ERROR;
  res = gs_calloc(n ? n : 1, sizeof *res);
  if (res == NULL || gs_sched_claim_filter(gs__shim_sched(s), who ? &preq : NULL, nodes, n, &req,
                                           res) == GS_EINVAL) {
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

int gs_shim_claim_reserve(struct gs_shim *s, const char *pod, size_t plen, const char *claim,
                          size_t len, const char *node, int64_t now_ns, char **ret_json,
                          char *reason) {
  struct gs_claim_request req;
  struct gs_pod_request preq;
  struct gs_claim_choice c;
  struct gs_status st = {GS_EOK, GS_R_OTHER, ""};
  char request[GS_NAME_MAX + 1];
  const char *const nodes[1] = {node};
  json_t *obj, *results = NULL, *out = NULL;
  const json_t *md;
  const char *uid;
  int r = decode(claim, len, &obj, &req, request, sizeof request, reason), code = GS_SHIM_OK, who = 0;
  *ret_json = NULL;
  if (r > 0 && (who = consumer(pod, plen, &preq, reason)) < 0) {
    json_decref(obj);
    return GS_SHIM_ERROR;
  }
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
  switch (gs_sched_claim_reserve(gs__shim_sched(s), who ? &preq : NULL, nodes, 1, &req,
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

/* Consumers listed at most per call: a cluster's claims of gpushare's class. */
#define CONSUMERS_MAX 100000

/* consumers' JSON as the service's structs (borrowing the strings of doc):
 * NULL with reason when malformed. */
static struct gs_claim_consumer *consumers_decode(const json_t *doc, size_t *ret_n,
                                                  char *reason) {
  struct gs_claim_consumer *out;
  const json_t *c;
  size_t i;
  if (!json_is_array(doc) || json_array_size(doc) > CONSUMERS_MAX) {
    snprintf(reason, GS_SHIM_REASON, "consumers: not a list of at most %d", CONSUMERS_MAX);
    return NULL;
  }
  out = gs_calloc(json_array_size(doc) + 1, sizeof *out);
  if (out == NULL) {
    snprintf(reason, GS_SHIM_REASON, "out of memory");
    return NULL;
  }
  json_array_foreach(doc, i, c) {
    const json_t *prio = json_object_get(c, "priority");
    out[i] = (struct gs_claim_consumer){
        json_string_value(json_object_get(c, "claim")),
        json_string_value(json_object_get(c, "namespace")),
        json_string_value(json_object_get(c, "name")), json_string_value(json_object_get(c, "uid")),
        (int32_t)json_integer_value(prio)};
    if (out[i].claim_uid == NULL || out[i].ns == NULL || out[i].name == NULL ||
        out[i].uid == NULL || !out[i].claim_uid[0] || !out[i].ns[0] || !out[i].name[0] ||
        !out[i].uid[0] || !json_is_integer(prio) || json_integer_value(prio) < INT32_MIN ||
        json_integer_value(prio) > INT32_MAX) {
      snprintf(reason, GS_SHIM_REASON,
               "consumers[%zu]: claim, namespace, name, uid (non-empty strings) and priority (int32)", i);
      gs_free(out);
      return NULL;
    }
  }
  *ret_n = json_array_size(doc);
  return out;
}

/* The preemptor's unallocated claims: a ResourceClaim's JSON or a list of
 * them, each gpushare's. The count, or -1 with reason. */
static int claims_decode(const char *claims, size_t len, struct gs_claim_request *reqs,
                         char *reason) {
  char request[GS_NAME_MAX + 1];
  json_t *doc = claims != NULL && len > 0 ? json_loadb(claims, len, 0, NULL) : NULL;
  size_t n = json_is_array(doc) ? json_array_size(doc) : 1, i;
  int ret = (int)n;
  if (doc == NULL) {
    snprintf(reason, GS_SHIM_REASON, "the ResourceClaim is not JSON");
    return -1;
  }
  if (n == 0 || n > GS_CLAIM_PREEMPT_MAX) {
    snprintf(reason, GS_SHIM_REASON, "preemption for 1..%d unallocated claims per pod",
             GS_CLAIM_PREEMPT_MAX);
    json_decref(doc);
    return -1;
  }
  for (i = 0; i < n && ret > 0; i++) {
    const json_t *obj = json_is_array(doc) ? json_array_get(doc, i) : doc;
    int r = gs__dra_request(obj, &reqs[i], request, sizeof request, reason, GS_SHIM_REASON);
    if (r <= 0) {
      char why[GS_SHIM_REASON];
      snprintf(why, sizeof why, "%s", r == 0 ? "not gpushare's" : reason);
      snprintf(reason, GS_SHIM_REASON, "ResourceClaim %.60s: %.170s",
               str_or(json_object_get(json_object_get(obj, "metadata"), "name"), "?"), why);
      ret = -1;
    }
  }
  json_decref(doc);
  return ret;
}

char *gs_shim_claim_preempt(struct gs_shim *s, const char *claims, size_t clen, const char *pod,
                            size_t plen, const char *const *nodes, size_t n,
                            const int64_t *host, const char *consumers, size_t conslen,
                            char *reason) {
  struct gs_claim_request reqs[GS_CLAIM_PREEMPT_MAX];
  struct gs_pod_request preq;
  struct gs_diag diag = {"", ""};
  struct gs_status st = {GS_EOK, GS_R_OTHER, ""};
  struct gs_claim_consumer *cons = NULL;
  struct gs_victim *victims = NULL;
  size_t ncons = 0, best = 0, nvictims = 0;
  uint32_t violations = 0;
  json_t *pobj = NULL, *consdoc = NULL;
  char *out = NULL;
  int nreqs = claims_decode(claims, clen, reqs, reason);
  if (nreqs <= 0)
    goto done;
  pobj = pod != NULL && plen > 0 ? json_loadb(pod, plen, 0, NULL) : NULL;
  if (pobj == NULL || gs_api_pod_decode(pobj, &preq, &diag) != GS_EOK) {
    snprintf(reason, GS_SHIM_REASON, "invalid Pod: %.100s: %.130s", diag.where, diag.text);
    goto done;
  }
  consdoc = consumers != NULL && conslen > 0 ? json_loadb(consumers, conslen, 0, NULL)
                                             : json_array();
  if (consdoc == NULL) {
    snprintf(reason, GS_SHIM_REASON, "consumers: not JSON");
    goto done;
  }
  if ((cons = consumers_decode(consdoc, &ncons, reason)) == NULL)
    goto done;
  if (host != NULL && gs__shim_set_hosts(s, nodes, n, host) != GS_EOK) {
    snprintf(reason, GS_SHIM_REASON, "out of memory");
    goto done;
  }
  switch (gs_sched_claim_preempt(gs__shim_sched(s), reqs, (size_t)nreqs, &preq, nodes, n, cons,
                                 ncons, &best, &victims, &nvictims, &violations, &st)) {
  case GS_EOK:
    break;
  case GS_ENOMEM:
    snprintf(reason, GS_SHIM_REASON, "out of memory");
    goto done;
  default:
    snprintf(reason, GS_SHIM_REASON, "%s", st.reason[0] ? st.reason : "no victims on any node");
    goto done;
  }
  /* the framework nominates the pod to the node after PostFilter; its
   * GPUs are held from now, before the victims go (a shape that cannot be
   * held, or past the cap: nominated, not held — docs/dra.md) */
  if (gs_sched_claim_nominate(gs__shim_sched(s), reqs, (size_t)nreqs, &preq, nodes[best]) !=
      GS_EOK) {
    /* several claims, past the cap: not held */
  }
  if ((out = gs__shim_victims_answer(nodes[best], victims, nvictims, &violations)) == NULL)
    snprintf(reason, GS_SHIM_REASON, "out of memory");
done:
  json_decref(consdoc);
  json_decref(pobj);
  gs_free(cons);
  gs_free(victims);
  return out;
}
