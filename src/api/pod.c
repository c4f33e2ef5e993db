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

/* What a container asks, as gpushare reads it: gpu-mem and gpu from limits
 * (requests when limits lack them: Kubernetes defaults requests from
 * limits for extended resources and requires them equal); CPU (milli) and
 * memory (MiB, rounded up) from requests (limits when requests lack them,
 * as the apiserver's defaulting does), which only the fragmentation
 * policy weighs. */
enum { R_GPU_MEM, R_GPU, R_CPU, R_MEMORY, R_N };
static const struct resource {
  const char *name;
  bool host;   /* requests first, scaled and rounded up */
  int e10, b2; /* scale: × 10^e10 × 2^b2 */
} resources[R_N] = {
    [R_GPU_MEM] = {GS_RES_GPU_MEM, false, 0, 0},
    [R_GPU] = {GS_RES_GPU, false, 0, 0},
    [R_CPU] = {"cpu", true, 3, 0},
    [R_MEMORY] = {"memory", true, 0, -20},
};

static enum gs_err container_amount(const json_t *c, const char *cpath,
                                    const struct resource *res, uint64_t *ret,
                                    struct gs_diag *diag) {
  static const char *const maps[] = {"limits", "requests"};
  char path[GS__API_PATH_MAX], where[GS__API_PATH_MAX];
  const json_t *resources_obj, *map, *q;
  enum gs_err err;

  gs__api_path(path, "%s.resources", cpath);
  err = gs__api_get_object(c, "resources", cpath, &resources_obj, diag);
  if (err != GS_EOK)
    return err;
  for (size_t i = 0; i < 2; i++) {
    const char *m = maps[res->host ? 1 - i : i];
    err = gs__api_get_object(resources_obj, m, path, &map, diag);
    if (err != GS_EOK)
      return err;
    q = gs__api_get(map, res->name);
    if (q != NULL) {
      gs__api_path(where, "%s.%s[\"%s\"]", path, m, res->name);
      return res->host ? gs_api_quantity_scaled_diag(q, res->e10, res->b2, where, ret, diag)
                       : gs_api_quantity_whole_diag(q, where, ret, diag);
    }
  }
  *ret = 0;
  return GS_EOK;
}

static enum gs_err container_decode(const json_t *c, const char *cpath, uint64_t ret[R_N],
                                    struct gs_diag *diag) {
  enum gs_err err = GS_EOK;
  if (!json_is_object(c)) {
    gs_diag_set(diag, cpath, "must be an object");
    return GS_EPARSE;
  }
  for (int r = 0; r < R_N && err == GS_EOK; r++)
    err = container_amount(c, cpath, &resources[r], &ret[r], diag);
  return err;
}

static uint64_t sat_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* App containers: per-container gpu-mem and gpu, the sums of all four into
 * app[]. */
/* Pod.spec.<key>, an array of at most GS_MAX_CONTAINERS (noun: what the
 * error calls them). */
static enum gs_err containers_array(const json_t *spec, const char *key, const char *noun,
                                    const json_t **ret, struct gs_diag *diag) {
  char path[GS__API_PATH_MAX];
  enum gs_err err = gs__api_get_array(spec, key, "Pod.spec", ret, diag);
  if (err != GS_EOK)
    return err;
  if (json_array_size(*ret) > GS_MAX_CONTAINERS) {
    gs__api_path(path, "Pod.spec.%s", key);
    gs_diag_set(diag, path, "%zu %s, more than the limit of %d", json_array_size(*ret), noun,
                GS_MAX_CONTAINERS);
    return GS_ETOOBIG;
  }
  return GS_EOK;
}

static enum gs_err containers_decode(const json_t *spec, struct gs_pod_request *req,
                                     uint64_t app[R_N], struct gs_diag *diag) {
  const json_t *arr, *c;
  char path[GS__API_PATH_MAX];
  uint64_t amt[R_N];
  size_t i;
  enum gs_err err;

  err = containers_array(spec, "containers", "containers", &arr, diag);
  if (err != GS_EOK)
    return err;
  json_array_foreach(arr, i, c) {
    gs__api_path(path, "Pod.spec.containers[%zu]", i);
    err = container_decode(c, path, amt, diag);
    if (err != GS_EOK)
      return err;
    req->mem_units[i] = amt[R_GPU_MEM];
    req->whole_gpus[i] = amt[R_GPU];
    for (int r = 0; r < R_N; r++)
      app[r] = sat_add(app[r], amt[r]);
  }
  req->ncontainers = (uint32_t)json_array_size(arr);
  return GS_EOK;
}

/* Init containers, with Kubernetes' effective-request rule including
 * sidecars (restartPolicy: Always): a regular init container i needs its
 * own request plus the sidecars started before it; the app containers run
 * beside every sidecar. The struct keeps only "app sum" and "init max",
 * so the sidecars' total is folded into the init max as
 * max(init max, app sum + sidecars): the effective request
 * max(app sum, init max) then equals Kubernetes' value. Into ret[]: the
 * init max of each resource. */
static enum gs_err init_containers_decode(const json_t *spec, const uint64_t app[R_N],
                                          uint64_t ret[R_N], struct gs_diag *diag) {
  const json_t *arr, *c;
  char path[GS__API_PATH_MAX];
  uint64_t amt[R_N], side[R_N] = {0}, max[R_N] = {0};
  const char *policy;
  size_t i;
  enum gs_err err;

  err = containers_array(spec, "initContainers", "init containers", &arr, diag);
  if (err != GS_EOK)
    return err;
  json_array_foreach(arr, i, c) {
    bool sidecar;
    gs__api_path(path, "Pod.spec.initContainers[%zu]", i);
    err = container_decode(c, path, amt, diag);
    if (err == GS_EOK)
      err = gs__api_get_string(c, "restartPolicy", path, &policy, diag);
    if (err != GS_EOK)
      return err;
    sidecar = policy != NULL && strcmp(policy, "Always") == 0;
    for (int r = 0; r < R_N; r++) {
      if (sidecar) {
        side[r] = sat_add(side[r], amt[r]);
        amt[r] = side[r];
      } else {
        amt[r] = sat_add(amt[r], side[r]);
      }
      max[r] = max_u64(max[r], amt[r]);
    }
  }
  for (int r = 0; r < R_N; r++) {
    if (side[r] > 0)
      max[r] = max_u64(max[r], sat_add(app[r], side[r]));
    ret[r] = max[r];
  }
  return GS_EOK;
}

/* Pod overhead (RuntimeClass): kube-scheduler adds it to the requests. */
static enum gs_err overhead_decode(const json_t *spec, uint64_t ret[R_N], struct gs_diag *diag) {
  const json_t *map, *q;
  enum gs_err err = gs__api_get_object(spec, "overhead", "Pod.spec", &map, diag);
  for (int r = R_CPU; r <= R_MEMORY && err == GS_EOK; r++) {
    char where[GS__API_PATH_MAX];
    ret[r] = 0;
    if ((q = gs__api_get(map, resources[r].name)) == NULL)
      continue;
    gs__api_path(where, "Pod.spec.overhead[\"%s\"]", resources[r].name);
    err = gs_api_quantity_scaled_diag(q, resources[r].e10, resources[r].b2, where, &ret[r], diag);
  }
  return err;
}

/* Every resource of spec: containers, init containers, overhead. */
static enum gs_err spec_decode(const json_t *spec, struct gs_pod_request *req,
                               struct gs_diag *diag) {
  uint64_t app[R_N] = {0}, init[R_N], over[R_N];
  enum gs_err err = containers_decode(spec, req, app, diag);
  if (err == GS_EOK)
    err = init_containers_decode(spec, app, init, diag);
  if (err == GS_EOK)
    err = overhead_decode(spec, over, diag);
  if (err != GS_EOK)
    return err;
  req->init_mem_units = init[R_GPU_MEM];
  req->init_whole_gpus = init[R_GPU];
  req->cpu_milli = sat_add(max_u64(app[R_CPU], init[R_CPU]), over[R_CPU]);
  req->mem_mib = sat_add(max_u64(app[R_MEMORY], init[R_MEMORY]), over[R_MEMORY]);
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
    err = spec_decode(spec, &req, diag);
  if (err != GS_EOK)
    return err;
  req.priority = gs_api_pod_priority(pod);
  *ret = req;
  return GS_EOK;
}

enum gs_err gs_api_pod_init_asks(const json_t *pod, const char *resource,
                                 uint64_t ret[GS_MAX_CONTAINERS], uint32_t *ret_n,
                                 struct gs_diag *diag) {
  const struct resource *res = strcmp(resource, GS_RES_GPU) == 0       ? &resources[R_GPU]
                               : strcmp(resource, GS_RES_GPU_MEM) == 0 ? &resources[R_GPU_MEM]
                                                                       : NULL;
  uint64_t amt[GS_MAX_CONTAINERS];
  char path[GS__API_PATH_MAX];
  const json_t *spec, *arr, *c;
  size_t i;
  enum gs_err err;

  if (res == NULL) {
    gs_diag_set(diag, "", "unknown resource \"%s\"", resource);
    return GS_EINVAL;
  }
  err = gs__api_get_object(pod, "spec", "Pod", &spec, diag);
  if (err == GS_EOK)
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
    if (!json_is_object(c)) {
      gs_diag_set(diag, path, "must be an object");
      return GS_EPARSE;
    }
    err = container_amount(c, path, res, &amt[i], diag);
    if (err != GS_EOK)
      return err;
  }
  memcpy(ret, amt, json_array_size(arr) * sizeof amt[0]);
  *ret_n = (uint32_t)json_array_size(arr);
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
