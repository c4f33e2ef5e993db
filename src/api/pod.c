/* v1.Pod → struct gs_pod_request, and pod metadata helpers.
 *
 * Only the fields gpushare reads are checked; unknown fields are ignored
 * and kind/apiVersion are not required (informer objects lack them).
 * Diagnostics name the JSON path from "Pod", e.g.
 * Pod.spec.containers[1].resources.limits["aliyun.com/gpu-mem"].
 */
#include "api_internal.h"

#include <stdio.h>
#include <string.h>

#define GANG_REPLICAS_MAX 10000u /* gpu-topology-replica cap */

/* One container's amount of resource res: limits win; requests are used
 * when limits lack it (Kubernetes defaults requests from limits for
 * extended resources and requires them equal). */
static enum gs_err container_amount(const json_t *c, const char *cpath, const char *res,
                                    uint64_t *ret, struct gs_diag *diag) {
  static const char *const maps[] = {"limits", "requests"};
  char path[GS__API_PATH_MAX], where[GS__API_PATH_MAX];
  const json_t *resources, *map, *q;
  enum gs_err err;

  gs__api_path(path, "%s.resources", cpath);
  err = gs__api_get_object(c, "resources", cpath, &resources, diag);
  if (err != GS_EOK)
    return err;
  for (size_t i = 0; i < 2; i++) {
    err = gs__api_get_object(resources, maps[i], path, &map, diag);
    if (err != GS_EOK)
      return err;
    q = gs__api_get(map, res);
    if (q != NULL) {
      gs__api_path(where, "%s.%s[\"%s\"]", path, maps[i], res);
      return gs_api_quantity_whole_diag(q, where, ret, diag);
    }
  }
  *ret = 0;
  return GS_EOK;
}

/* gpu-mem and gpu of one container. */
static enum gs_err container_decode(const json_t *c, const char *cpath, uint64_t *ret_mem,
                                    uint64_t *ret_whole, struct gs_diag *diag) {
  enum gs_err err;
  if (!json_is_object(c)) {
    gs_diag_set(diag, cpath, "must be an object");
    return GS_EPARSE;
  }
  err = container_amount(c, cpath, GS_RES_GPU_MEM, ret_mem, diag);
  if (err == GS_EOK)
    err = container_amount(c, cpath, GS_RES_GPU, ret_whole, diag);
  return err;
}

static uint64_t sat_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static enum gs_err containers_decode(const json_t *spec, struct gs_pod_request *req,
                                     struct gs_diag *diag) {
  const json_t *arr, *c;
  char path[GS__API_PATH_MAX];
  size_t i;
  enum gs_err err;

  err = gs__api_get_array(spec, "containers", "Pod.spec", &arr, diag);
  if (err != GS_EOK)
    return err;
  if (json_array_size(arr) > GS_MAX_CONTAINERS) {
    gs_diag_set(diag, "Pod.spec.containers", "%zu containers, more than the limit of %d",
                json_array_size(arr), GS_MAX_CONTAINERS);
    return GS_ETOOBIG;
  }
  json_array_foreach(arr, i, c) {
    gs__api_path(path, "Pod.spec.containers[%zu]", i);
    err = container_decode(c, path, &req->mem_units[i], &req->whole_gpus[i], diag);
    if (err != GS_EOK)
      return err;
  }
  req->ncontainers = (uint32_t)json_array_size(arr);
  return GS_EOK;
}

/* Init containers, with Kubernetes' effective-request rule including
 * sidecars (restartPolicy: Always): a regular init container i needs its
 * own request plus the sidecars started before it; the app containers run
 * beside every sidecar. The struct keeps only "app sum" and "init max",
 * so the sidecars' total is folded into init_mem_units as
 * max(init max, app sum + sidecars): the effective request
 * max(app sum, init_mem_units) then equals Kubernetes' value. */
static enum gs_err init_containers_decode(const json_t *spec, struct gs_pod_request *req,
                                          struct gs_diag *diag) {
  const json_t *arr, *c;
  char path[GS__API_PATH_MAX];
  uint64_t mem, whole, side_mem = 0, side_whole = 0, max_mem = 0, max_whole = 0;
  const char *policy;
  size_t i;
  enum gs_err err;

  err = gs__api_get_array(spec, "initContainers", "Pod.spec", &arr, diag);
  if (err != GS_EOK)
    return err;
  if (json_array_size(arr) > GS_MAX_CONTAINERS) {
    gs_diag_set(diag, "Pod.spec.initContainers",
                "%zu init containers, more than the limit of %d", json_array_size(arr),
                GS_MAX_CONTAINERS);
    return GS_ETOOBIG;
  }
  json_array_foreach(arr, i, c) {
    gs__api_path(path, "Pod.spec.initContainers[%zu]", i);
    err = container_decode(c, path, &mem, &whole, diag);
    if (err == GS_EOK)
      err = gs__api_get_string(c, "restartPolicy", path, &policy, diag);
    if (err != GS_EOK)
      return err;
    if (policy != NULL && strcmp(policy, "Always") == 0) {
      side_mem = sat_add(side_mem, mem);
      side_whole = sat_add(side_whole, whole);
      mem = side_mem;
      whole = side_whole;
    } else {
      mem = sat_add(mem, side_mem);
      whole = sat_add(whole, side_whole);
    }
    if (mem > max_mem)
      max_mem = mem;
    if (whole > max_whole)
      max_whole = whole;
  }
  if (side_mem > 0) {
    mem = sat_add(gs_pod_request_mem_sum(req), side_mem);
    if (mem > max_mem)
      max_mem = mem;
  }
  if (side_whole > 0) {
    whole = side_whole;
    for (uint32_t k = 0; k < req->ncontainers; k++)
      whole = sat_add(whole, req->whole_gpus[k]);
    if (whole > max_whole)
      max_whole = whole;
  }
  req->init_mem_units = max_mem;
  req->init_whole_gpus = max_whole;
  return GS_EOK;
}

/* Labels: gpu-count and the gang pair. */
static enum gs_err labels_decode(const json_t *meta, struct gs_pod_request *req,
                                 struct gs_diag *diag) {
  const json_t *labels;
  const char *count, *job, *replicas;
  uint64_t v;
  enum gs_err err;

  err = gs__api_get_object(meta, "labels", "Pod.metadata", &labels, diag);
  if (err == GS_EOK)
    err = gs__api_get_string(labels, GS_LABEL_POD_GPU_COUNT, "Pod.metadata.labels", &count,
                             diag);
  if (err == GS_EOK)
    err = gs__api_get_string(labels, GS_LABEL_GANG_JOB, "Pod.metadata.labels", &job, diag);
  if (err != GS_EOK)
    return err;

  req->gpu_count = 1;
  if (count != NULL) {
    /* A bad value refuses this pod, not the request: the core says why on
     * every node (docs/operations.md, "aliyun.com/gpu-count"). */
    if (gs__api_parse_decimal(count, UINT32_MAX, &v)) {
      req->gpu_count = (uint32_t)v;
    } else {
      req->gpu_count = 0;
      snprintf(req->gpu_count_text, sizeof req->gpu_count_text, "%s", count);
    }
  }

  /* The replica label only means something beside a job label; on its own
   * it is some other tool's label and is ignored. */
  if (job != NULL && job[0] != '\0') {
    err = gs__api_copy(req->gang_job, sizeof req->gang_job, job,
                       "Pod.metadata.labels[\"" GS_LABEL_GANG_JOB "\"]", "gang job name", diag);
    if (err == GS_EOK)
      err = gs__api_get_string(labels, GS_LABEL_GANG_REPLICAS, "Pod.metadata.labels",
                               &replicas, diag);
    if (err != GS_EOK)
      return err;
    req->gang_replicas = 1; /* absent: a gang of one */
    if (replicas != NULL) {
      if (!gs__api_parse_decimal(replicas, GANG_REPLICAS_MAX, &v) || v == 0) {
        gs_diag_set(diag, "Pod.metadata.labels[\"" GS_LABEL_GANG_REPLICAS "\"]",
                    "replica count \"%s\" must be a decimal number from 1 to %u", replicas,
                    GANG_REPLICAS_MAX);
        return GS_EPARSE;
      }
      req->gang_replicas = (uint32_t)v;
    }
  }
  return GS_EOK;
}

static enum gs_err meta_decode(const json_t *meta, struct gs_pod_request *req,
                               struct gs_diag *diag) {
  const char *name, *ns, *uid;
  enum gs_err err;

  err = gs__api_get_string(meta, "name", "Pod.metadata", &name, diag);
  if (err == GS_EOK)
    err = gs__api_get_string(meta, "namespace", "Pod.metadata", &ns, diag);
  if (err == GS_EOK)
    err = gs__api_get_string(meta, "uid", "Pod.metadata", &uid, diag);
  if (err != GS_EOK)
    return err;
  if (name == NULL || name[0] == '\0') {
    gs_diag_set(diag, "Pod.metadata.name", "missing pod name");
    return GS_EPARSE;
  }
  err = gs__api_copy(req->name, sizeof req->name, name, "Pod.metadata.name", "pod name", diag);
  if (err == GS_EOK)
    err = gs__api_copy(req->ns, sizeof req->ns, ns != NULL && ns[0] != '\0' ? ns : "default",
                       "Pod.metadata.namespace", "namespace", diag);
  if (err == GS_EOK)
    err = gs__api_copy(req->uid, sizeof req->uid, uid != NULL ? uid : "", "Pod.metadata.uid",
                       "pod UID", diag);
  return err;
}

enum gs_err gs_api_pod_decode(const json_t *pod, struct gs_pod_request *ret,
                              struct gs_diag *diag) {
  struct gs_pod_request req;
  const json_t *meta, *spec;
  enum gs_err err;

  if (!json_is_object(pod)) {
    gs_diag_set(diag, "Pod", "must be an object");
    return GS_EPARSE;
  }
  memset(&req, 0, sizeof req);
  err = gs__api_get_object(pod, "metadata", "Pod", &meta, diag);
  if (err == GS_EOK && meta == NULL) {
    gs_diag_set(diag, "Pod.metadata", "missing pod metadata");
    err = GS_EPARSE;
  }
  if (err == GS_EOK)
    err = meta_decode(meta, &req, diag);
  if (err == GS_EOK)
    err = labels_decode(meta, &req, diag);
  if (err == GS_EOK)
    err = gs__api_get_object(pod, "spec", "Pod", &spec, diag);
  if (err == GS_EOK)
    err = containers_decode(spec, &req, diag);
  if (err == GS_EOK)
    err = init_containers_decode(spec, &req, diag);
  if (err != GS_EOK)
    return err;
  req.priority = gs_api_pod_priority(pod);
  *ret = req;
  return GS_EOK;
}

/* metadata/spec/status string member, or NULL. */
static const char *member_string(const json_t *pod, const char *outer, const char *key) {
  const json_t *v = gs__api_get(gs__api_get(pod, outer), key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

const char *gs_api_pod_ns(const json_t *pod) {
  const char *ns = member_string(pod, "metadata", "namespace");
  return ns != NULL && ns[0] != '\0' ? ns : "default";
}

const char *gs_api_pod_name(const json_t *pod) {
  return member_string(pod, "metadata", "name");
}

const char *gs_api_pod_uid(const json_t *pod) {
  return member_string(pod, "metadata", "uid");
}

const char *gs_api_pod_node(const json_t *pod) {
  const char *node = member_string(pod, "spec", "nodeName");
  return node != NULL && node[0] != '\0' ? node : NULL; /* "" = not bound */
}

int32_t gs_api_pod_priority(const json_t *pod) {
  /* The admission plugin sets spec.priority from priorityClassName; an
   * absent or out-of-range value counts as 0, the default class. */
  const json_t *v = gs__api_get(gs__api_get(pod, "spec"), "priority");
  json_int_t p = json_is_integer(v) ? json_integer_value(v) : 0;
  return p < INT32_MIN || p > INT32_MAX ? 0 : (int32_t)p;
}

const char *gs_api_pod_phase(const json_t *pod) {
  return member_string(pod, "status", "phase");
}

bool gs_api_pod_is_terminal(const json_t *pod) {
  const char *phase = gs_api_pod_phase(pod);
  return phase != NULL && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
}
