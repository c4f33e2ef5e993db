/* gpushare-node: which pod an Allocate call is for, and what its container
 * receives (agent.h, docs/node-agent.md). The kubelet names N fake devices
 * and no pod. The pod is the one the kubelet is admitting: its
 * pod-resources List holds that pod (added before admission) with no
 * device of the resource recorded for the container yet. Among such pods,
 * or among all pending pods when the kubelet's view cannot be had, the way
 * Aliyun's device plugin finds it (pending pods of this node with an
 * allocation not yet assigned, oldest assume time first), with a total
 * order so the answer never depends on the order the pods were listed in. */
#include "agent.h"
#include "agent_internal.h"

#include "api.h"

#include <gpushare/annot.h>

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PODS_MAX 4096 /* pods one Allocate looks at (a node runs ~110) */

struct cand {
  const json_t *pod;
  int64_t assume_ns;
  const char *ns, *name, *uid;
  uint32_t container; /* the pod's next container asking the resource */
  bool init;          /* ... an init container (spec.initContainers[container]) */
};

/* What a pod's containers ask of the resource, in the kubelet's order of
 * Allocate calls: init containers, then app containers. */
struct asks {
  const struct gs_pod_request *req;
  bool whole;
  uint32_t ninit;
  uint64_t init[GS_MAX_CONTAINERS];
};

static int cand_cmp(const void *pa, const void *pb) {
  const struct cand *a = pa, *b = pb;
  int c;
  if (a->assume_ns != b->assume_ns)
    return a->assume_ns < b->assume_ns ? -1 : 1;
  if ((c = strcmp(a->ns, b->ns)) != 0)
    return c;
  if ((c = strcmp(a->name, b->name)) != 0)
    return c;
  return strcmp(a->uid, b->uid);
}

static const json_t *pod_annotations(const json_t *pod) {
  return json_object_get(json_object_get(pod, "metadata"), "annotations");
}

static const char *annotation(const json_t *pod, const char *key) {
  const json_t *v = json_object_get(pod_annotations(pod), key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

/* gpushare.io/allocated-containers (or -init-containers) "0,2" → mask;
 * malformed → all unset (the agent wrote it: a hand edit only makes a
 * container eligible again). */
static uint64_t served_containers(const json_t *pod, const char *key) {
  const char *s = annotation(pod, key);
  uint64_t mask = 0;
  char *end;
  while (s != NULL && *s != '\0') {
    unsigned long c = strtoul(s, &end, 10);
    if (end == s || c >= GS_MAX_CONTAINERS || (*end != ',' && *end != '\0'))
      return 0;
    mask |= UINT64_C(1) << c;
    s = *end == ',' ? end + 1 : end;
  }
  return mask;
}

static uint64_t asks(const struct asks *k, bool init, uint32_t c) {
  if (init)
    return k->init[c];
  return k->whole ? k->req->whole_gpus[c] : k->req->mem_units[c];
}

/* The first container asking the resource not yet served: init containers
 * first (the kubelet admits them first), then app containers; or false. */
static bool next_container(const struct asks *k, uint64_t served, uint64_t served_init,
                           uint32_t *ret, bool *ret_init) {
  for (uint32_t c = 0; c < k->ninit; c++) {
    if (asks(k, true, c) > 0 && !(served_init >> c & 1)) {
      *ret = c;
      *ret_init = true;
      return true;
    }
  }
  for (uint32_t c = 0; c < k->req->ncontainers; c++) {
    if (asks(k, false, c) > 0 && !(served >> c & 1)) {
      *ret = c;
      *ret_init = false;
      return true;
    }
  }
  return false;
}

/* True when app container c is the one the scheduler charges the init
 * containers' excess to: the first asking the resource, else container 0. */
static bool is_charged(const struct asks *k, uint32_t c) {
  for (uint32_t i = 0; i < k->req->ncontainers; i++) {
    if (asks(k, false, i) > 0)
      return i == c;
  }
  return c == 0;
}

static uint64_t whole_sum(const struct gs_pod_request *req) {
  uint64_t sum = 0;
  for (uint32_t i = 0; i < req->ncontainers && i < GS_MAX_CONTAINERS; i++)
    sum += req->whole_gpus[i];
  return sum;
}

static enum gs_err asks_decode(const json_t *pod, const char *resource,
                               const struct gs_pod_request *req, bool whole, struct asks *ret) {
  ret->req = req;
  ret->whole = whole;
  return gs_api_pod_init_asks(pod, resource, ret->init, &ret->ninit, NULL);
}

static bool is_waiting(const json_t *pod, const char *node) {
  const char *on = gs_api_pod_node(pod), *phase = gs_api_pod_phase(pod);
  if (on == NULL || strcmp(on, node) != 0)
    return false;
  if (phase != NULL && phase[0] != '\0' && strcmp(phase, "Pending") != 0)
    return false;
  return json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") == NULL &&
         gs_api_pod_name(pod) != NULL && gs_api_pod_uid(pod) != NULL;
}

static const char *container_name(const json_t *pod, bool init, uint32_t c) {
  const json_t *v = json_object_get(
      json_array_get(json_object_get(json_object_get(pod, "spec"),
                                     init ? "initContainers" : "containers"),
                     c),
      "name");
  return json_is_string(v) ? json_string_value(v) : "";
}

void gs__agent_list_add(char *buf, size_t cap, const char *fmt, ...) {
  size_t off = strlen(buf);
  va_list ap;
  if (off > 0 && off + 1 < cap)
    buf[off++] = ',', buf[off] = '\0';
  va_start(ap, fmt);
  vsnprintf(buf + off, cap - off, fmt, ap);
  va_end(ap);
}

int gs__agent_set_str(json_t *o, const char *key, const char *value) {
  return json_object_set_new(o, key, json_string(value));
}

int gs__agent_set_u64(json_t *o, const char *key, uint64_t v) {
  char s[24];
  snprintf(s, sizeof s, "%" PRIu64, v);
  return gs__agent_set_str(o, key, s);
}

/* The patch once the last container is served: the pod is assigned. */
static enum gs_err assigned_patch(const json_t *pod, bool whole, int64_t now_ns, json_t *anns) {
  char t[24];
  snprintf(t, sizeof t, "%" PRId64, now_ns);
  if (!whole) {
    return gs__agent_set_str(anns, GS_ANN_LEGACY_ASSIGNED, "true") != 0 ||
                   gs__agent_set_str(anns, GS_ANN_ASSIGNED, "true") != 0 ||
                   gs__agent_set_str(anns, GS_AGENT_ANN_ASSIGN_TIME, t) != 0
               ? GS_ENOMEM
               : GS_EOK;
  }
  /* gputopology.alibabacloud.com/allocation carries "assigned" inside */
  json_t *doc = json_loads(annotation(pod, GS_ANN_TOPO_ALLOCATION), 0, NULL);
  char *s;
  if (doc == NULL || json_object_set_new(doc, "assigned", json_true()) != 0) {
    json_decref(doc);
    return GS_ENOMEM;
  }
  s = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  if (s == NULL)
    return GS_ENOMEM;
  int rc = gs__agent_set_str(anns, GS_ANN_TOPO_ALLOCATION, s);
  free(s);
  return rc != 0 ? GS_ENOMEM : GS_EOK;
}

/* One GPU of the served container and the memory it may use there. */
struct share {
  uint32_t gpu;
  uint64_t mib;
};

/* The GPUs and memory of the chosen container: an app container's from its
 * parts of the allocation; an init container's own request over the pod's
 * GPUs (the union of the parts, ascending): n/M MiB-units on each of the M
 * for memory, the first n for whole GPUs. Checked against the node. */
static enum gs_err shares_of(const struct gs_agent_inventory *inv, const char *node,
                             const struct cand *w, const struct gs_api_alloc *a, bool whole,
                             uint64_t n, uint64_t excess, struct share ret[GS_MAX_GPUS],
                             uint32_t *ret_n, struct gs_diag *diag) {
  bool on[GS_MAX_GPUS] = {false};
  uint32_t k = 0, m = 0, ngpus = 0;
  uint64_t mine = 0;

  for (uint32_t i = 0; i < a->nparts; i++) {
    const struct gs_alloc_part *p = &a->parts[i];
    if (p->gpu >= inv->n) {
      gs_diag_set(diag, "", "pod %s/%s: its allocation names GPU %" PRIu32 ", but node %s has %" PRIu32 " GPUs (0-%" PRIu32 ")",
                  w->ns, w->name, p->gpu, node, inv->n, inv->n - 1);
      return GS_ERANGE;
    }
    if (!w->init && p->container == w->container && k < GS_MAX_GPUS) {
      ret[k++] = (struct share){p->gpu, p->units * a->unit_mib};
      mine += whole ? 1 : p->units;
    }
    if (!on[p->gpu])
      ngpus++;
    on[p->gpu] = true;
  }
  if (w->init) {
    if (!whole && (ngpus == 0 || n % ngpus != 0)) {
      gs_diag_set(diag, "",
                  "pod %s/%s: its init container %s asks %" PRIu64
                  " units, which do not divide over the pod's %" PRIu32 " GPUs",
                  w->ns, w->name, container_name(w->pod, true, w->container), n, ngpus);
      return GS_ERANGE;
    }
    for (uint32_t g = 0; g < GS_MAX_GPUS && (whole ? m < n : true); g++) {
      if (on[g]) {
        ret[m++] = (struct share){g, whole ? 0 : n / ngpus * a->unit_mib};
        mine += whole ? 1 : n / ngpus;
      }
    }
    k = m;
  } else if (excess > 0 && mine == n + excess && k > 0) {
    /* the scheduler charged an init container's excess to this container:
     * it runs after the init containers, with its own request */
    if (!whole && n % k != 0) {
      gs_diag_set(diag, "",
                  "pod %s/%s: container %s asks %" PRIu64
                  " units, which do not divide over its %" PRIu32 " GPUs",
                  w->ns, w->name, container_name(w->pod, false, w->container), n, k);
      return GS_ERANGE;
    }
    for (uint32_t i = 0; i < k; i++)
      ret[i].mib = whole ? 0 : n / k * a->unit_mib;
    k = whole ? (uint32_t)n : k;
    mine = n;
  }
  for (uint32_t i = 0; i < k; i++) {
    if (!whole && ret[i].mib > inv->gpu[ret[i].gpu].mem_mib) {
      gs_diag_set(diag, "",
                  "pod %s/%s: its allocation gives GPU %" PRIu32 " %" PRIu64 " units of %" PRIu32
                  " MiB (%" PRIu64 " MiB), more than the GPU's %" PRIu64 " MiB",
                  w->ns, w->name, ret[i].gpu, ret[i].mib / a->unit_mib, a->unit_mib, ret[i].mib,
                  inv->gpu[ret[i].gpu].mem_mib);
      return GS_ERANGE;
    }
  }
  if (mine != n) {
    gs_diag_set(diag, "",
                "pod %s/%s: its allocation gives %scontainer %s %" PRIu64 " %s, but it asks %" PRIu64,
                w->ns, w->name, w->init ? "init " : "", container_name(w->pod, w->init, w->container),
                mine, whole ? "GPUs" : "units", n);
    return mine == 0 ? GS_EPARSE : GS_ERANGE;
  }
  *ret_n = k;
  return GS_EOK;
}

/* cgpu nodes: Aliyun's cGPU module caps each GPU at ALIYUN_COM_GPU_MEM_CONTAINER
 * GiB (of ALIYUN_COM_GPU_MEM_DEV), integers: every amount of the pod must be
 * whole GiB, and the container's GPUs must get the same. */
static enum gs_err cgpu_check(const char *node, const struct cand *w, const struct gs_api_alloc *a,
                              const struct share *sh, uint32_t k, struct gs_diag *diag) {
  for (uint32_t i = 0; i < a->nparts; i++) {
    uint64_t mib = a->parts[i].units * a->unit_mib;
    if (mib % 1024 != 0) {
      gs_diag_set(diag, "",
                  "pod %s/%s: its allocation gives GPU %" PRIu32 " %" PRIu64
                  " MiB on cgpu node %s, but the cGPU module takes whole GiB "
                  "(ALIYUN_COM_GPU_MEM_CONTAINER): ask multiples of %" PRIu32 " units",
                  w->ns, w->name, a->parts[i].gpu, mib, node, 1024 / a->unit_mib);
      return GS_ERANGE;
    }
  }
  for (uint32_t i = 0; i < k; i++) {
    if (sh[i].mib % 1024 != 0 || sh[i].mib != sh[0].mib) {
      gs_diag_set(diag, "",
                  "pod %s/%s: container %s gets %" PRIu64 " MiB of GPU %" PRIu32 " and %" PRIu64
                  " MiB of GPU %" PRIu32 " on cgpu node %s: the cGPU module takes one limit "
                  "per container, in whole GiB",
                  w->ns, w->name, container_name(w->pod, w->init, w->container), sh[0].mib,
                  sh[0].gpu, sh[i].mib, sh[i].gpu, node);
      return GS_ERANGE;
    }
  }
  return GS_EOK;
}

/* What the chosen container receives. */
static enum gs_err answer(const struct gs_agent_config *cfg, const struct gs_agent_inventory *inv,
                          const char *node, const struct cand *w, const struct asks *k,
                          const struct gs_api_alloc *a, uint64_t n, int64_t now_ns,
                          bool by_kubelet, char **ret_json, struct gs_diag *diag) {
  char visible[GS_MAX_GPUS * (GS_AGENT_UUID_MAX + 1)] = "", idx[GS_MAX_GPUS * 4] = "";
  char limit[GS_MAX_GPUS * 24] = "", mps[GS_MAX_GPUS * 32] = "", served[GS_MAX_CONTAINERS * 4] = "";
  bool whole = k->whole, cgpu = cfg->mode == GS_MODE_CGPU && !whole, ignored_init;
  uint64_t pod_mib = 0, mine_mib = 0;
  uint64_t done = served_containers(w->pod, GS_AGENT_ANN_CONTAINERS);
  uint64_t done_init = served_containers(w->pod, GS_AGENT_ANN_INIT_CONTAINERS);
  /* the unit the Aliyun amount keys count in: cGPU reads GiB */
  uint32_t key_mib = cgpu ? 1024 : a->unit_mib;
  struct share sh[GS_MAX_GPUS];
  json_t *out = NULL, *envs, *mounts, *anns;
  uint32_t nsh = 0, ignored;
  enum gs_err err;

  /* the init containers' excess over the app containers, which the
   * scheduler charges to the first container asking the resource
   * (docs/placement.md) */
  uint64_t excess = 0;
  if (!w->init && is_charged(k, w->container)) {
    excess = whole ? gs_pod_request_whole_effective(k->req) - whole_sum(k->req)
                   : gs_pod_request_mem_effective(k->req) - gs_pod_request_mem_sum(k->req);
  }
  err = shares_of(inv, node, w, a, whole, n, excess, sh, &nsh, diag);
  if (err == GS_EOK && cgpu)
    err = cgpu_check(node, w, a, sh, nsh, diag);
  if (err != GS_EOK)
    return err;
  for (uint32_t i = 0; i < a->nparts; i++)
    pod_mib += a->parts[i].units * a->unit_mib;
  for (uint32_t i = 0; i < nsh; i++) {
    mine_mib += sh[i].mib;
    gs__agent_list_add(visible, sizeof visible, "%s", inv->gpu[sh[i].gpu].uuid);
    gs__agent_list_add(idx, sizeof idx, "%" PRIu32, sh[i].gpu);
    gs__agent_list_add(limit, sizeof limit, "%" PRIu64, sh[i].mib);
    /* the container's own CUDA ordinals: its GPUs in NVIDIA_VISIBLE_DEVICES order */
    gs__agent_list_add(mps, sizeof mps, "%" PRIu32 "=%" PRIu64 "M", i, sh[i].mib);
  }
  if (w->init)
    done_init |= UINT64_C(1) << w->container;
  else
    done |= UINT64_C(1) << w->container;
  err = GS_ENOMEM;
  out = json_object();
  envs = json_object();
  mounts = json_array();
  anns = json_object();
  if (out == NULL || json_object_set_new(out, "envs", envs) != 0 ||
      json_object_set_new(out, "mounts", mounts) != 0 ||
      json_object_set_new(out, "annotations", anns) != 0)
    goto out_json;
  if (json_object_set_new(out, "pod",
                          json_pack("{ssssss}", "namespace", w->ns, "name", w->name, "uid",
                                    w->uid)) != 0 ||
      gs__agent_set_str(out, "container", container_name(w->pod, w->init, w->container)) != 0 ||
      json_object_set_new(out, "containerIndex", json_integer(w->container)) != 0 ||
      json_object_set_new(out, "init", json_boolean(w->init)) != 0 ||
      gs__agent_set_str(out, "by", by_kubelet ? "kubelet" : "assume") != 0 ||
      gs__agent_set_str(envs, GS_AGENT_ENV_VISIBLE, visible) != 0)
    goto out_json;
  if (!whole) {
    /* on cgpu nodes the cap is per GPU (every GPU of the container gets it) */
    if (gs__agent_set_str(envs, GS_AGENT_ENV_IDX, idx) != 0 ||
        gs__agent_set_u64(envs, GS_AGENT_ENV_POD, pod_mib / key_mib) != 0 ||
        gs__agent_set_u64(envs, GS_AGENT_ENV_CONTAINER,
                          (cgpu ? sh[0].mib : mine_mib) / key_mib) != 0 ||
        gs__agent_set_u64(envs, GS_AGENT_ENV_DEV, inv->gpu[sh[0].gpu].mem_mib / key_mib) != 0 ||
        gs__agent_set_str(envs, GS_AGENT_ENV_LIMIT, limit) != 0 ||
        gs__agent_set_u64(envs, GS_AGENT_ENV_UNIT, key_mib) != 0)
      goto out_json;
    if (cgpu && gs__agent_set_str(envs, GS_AGENT_ENV_CGPU_VISIBLE, visible) != 0)
      goto out_json;
    if (cfg->mode == GS_MODE_MPS &&
        (gs__agent_set_str(envs, GS_AGENT_ENV_MPS_LIMIT, mps) != 0 ||
         gs__agent_set_str(envs, GS_AGENT_ENV_MPS_PIPE, cfg->mps_pipe_dir) != 0 ||
         json_array_append_new(mounts, json_pack("{sssssb}", "hostPath", cfg->mps_pipe_dir,
                                                 "containerPath", cfg->mps_pipe_dir,
                                                 "readOnly", 0)) != 0))
      goto out_json;
  }
  for (uint32_t c = 0; c < GS_MAX_CONTAINERS; c++) {
    if ((w->init ? done_init : done) >> c & 1)
      gs__agent_list_add(served, sizeof served, "%" PRIu32, c);
  }
  if (gs__agent_set_str(anns, w->init ? GS_AGENT_ANN_INIT_CONTAINERS : GS_AGENT_ANN_CONTAINERS,
                        served) != 0)
    goto out_json;
  if (!next_container(k, done, done_init, &ignored, &ignored_init)) {
    err = assigned_patch(w->pod, whole, now_ns, anns);
    if (err != GS_EOK)
      goto out_json;
  }
  *ret_json = json_dumps(out, JSON_COMPACT);
  err = *ret_json != NULL ? GS_EOK : GS_ENOMEM;
out_json:
  json_decref(out);
  return err;
}

/* The kubelet's pod-resources List (agent.h, struct gs_agent_call): checks
 * its shape; false with diag when malformed. Its pods are "podResources"
 * (absent: protobuf's JSON leaves an empty list out; the loops see none). */
static bool kubelet_check(const json_t *view, struct gs_diag *diag) {
  const json_t *pods = json_object_get(view, "podResources"), *p, *c;
  size_t i, j;
  if (!json_is_object(view) || (pods != NULL && !json_is_array(pods))) {
    gs_diag_set(diag, "", "the kubelet's pod-resources list must be an object whose "
                          "\"podResources\" is an array");
    return false;
  }
  json_array_foreach(pods, i, p) {
    const json_t *cs = json_object_get(p, "containers");
    if (!json_is_string(json_object_get(p, "name")) ||
        !json_is_string(json_object_get(p, "namespace")) || (cs != NULL && !json_is_array(cs))) {
      gs_diag_set(diag, "", "the kubelet's pod-resources list: podResources[%zu] has no "
                            "name, namespace or containers array", i);
      return false;
    }
    json_array_foreach(cs, j, c) {
      const json_t *ds = json_object_get(c, "devices");
      if (!json_is_string(json_object_get(c, "name")) || (ds != NULL && !json_is_array(ds))) {
        gs_diag_set(diag, "", "the kubelet's pod-resources list: podResources[%zu]."
                              "containers[%zu] has no name or devices array", i, j);
        return false;
      }
    }
  }
  if (json_array_size(pods) > PODS_MAX) {
    gs_diag_set(diag, "", "%zu pods in the kubelet's pod-resources list, over the limit of %d",
                json_array_size(pods), PODS_MAX);
    return false;
  }
  return true;
}

/* True when container cname of one listed pod holds a device of resource. */
static bool kubelet_holds(const json_t *p, const char *cname, const char *resource) {
  const json_t *c, *d;
  size_t j, k;
  json_array_foreach(json_object_get(p, "containers"), j, c) {
    if (strcmp(json_string_value(json_object_get(c, "name")), cname) != 0)
      continue;
    json_array_foreach(json_object_get(c, "devices"), k, d) {
      const json_t *rn = json_object_get(d, "resourceName");
      if (json_is_string(rn) && strcmp(json_string_value(rn), resource) == 0 &&
          json_array_size(json_object_get(d, "deviceIds")) > 0)
        return true;
    }
  }
  return false;
}

/* True when the kubelet (its checked view) is admitting pod ns/name for
 * container cname: it lists the pod, and the container (absent: an init
 * container the list leaves out, or none yet) holds no device of
 * resource. The list names pods, not UIDs, and may hold two of one name
 * (a StatefulSet's pod recreated while the old one still terminates, its
 * devices held): any entry without the devices is the one admitted. */
static bool kubelet_admitting(const json_t *view, const char *ns, const char *name,
                              const char *cname, const char *resource) {
  const json_t *p;
  size_t i;
  json_array_foreach(json_object_get(view, "podResources"), i, p) {
    if (strcmp(json_string_value(json_object_get(p, "namespace")), ns) == 0 &&
        strcmp(json_string_value(json_object_get(p, "name")), name) == 0 &&
        !kubelet_holds(p, cname, resource))
      return true;
  }
  return false;
}

static const char *what_annotation(bool whole) {
  return whole ? GS_ANN_TOPO_ALLOCATION : GS_ANN_ALLOCATION;
}

enum gs_err gs_agent_allocate(const struct gs_agent_config *cfg,
                              const struct gs_agent_inventory *inv,
                              const struct gs_agent_call *call, char **ret_json,
                              struct gs_diag *diag) {
  const char *node = call->node, *resource = call->resource;
  uint64_t n = call->n;
  bool whole = strcmp(resource, GS_AGENT_RES_WHOLE) == 0;
  struct cand *cands = NULL, bare = {0}, bad = {0};
  struct gs_diag bad_diag = {0};
  struct gs_pod_request *req = NULL;
  struct asks *k = NULL;
  struct gs_api_alloc *a = NULL;
  const json_t *items;
  json_t *doc, *view = NULL;
  size_t ncand = 0, passed = 0; /* matches the kubelet is not admitting */
  enum gs_err err;

  if (strcmp(resource, GS_AGENT_RES_COUNT) == 0) {
    /* gpu-count is capacity for the scheduler; a container asking it gets nothing */
    *ret_json = strdup("{\"envs\":{}}");
    return *ret_json != NULL ? GS_EOK : GS_ENOMEM;
  }
  if (!whole && strcmp(resource, GS_AGENT_RES_MEM) != 0) {
    gs_diag_set(diag, "", "unknown resource \"%s\"", resource);
    return GS_EINVAL;
  }
  if (n == 0) {
    gs_diag_set(diag, "", "Allocate of no %s devices", resource);
    return GS_EINVAL;
  }
  doc = json_loadb(call->pods, call->pods_len, 0, NULL);
  items = json_is_object(doc) ? json_object_get(doc, "items") : doc;
  if (!json_is_array(items)) {
    gs_diag_set(diag, "", "the node's pods must be a JSON array or a PodList");
    json_decref(doc);
    return GS_EPARSE;
  }
  if (json_array_size(items) > PODS_MAX) {
    gs_diag_set(diag, "", "%zu pods on the node, over the limit of %d", json_array_size(items),
                PODS_MAX);
    json_decref(doc);
    return GS_ETOOBIG;
  }
  if (call->kubelet != NULL) {
    json_error_t je;
    view = json_loadb(call->kubelet, call->kubelet_len, 0, &je);
    if (view == NULL) {
      gs_diag_set(diag, "", "the kubelet's pod-resources list is not JSON: %s", je.text);
      json_decref(doc);
      return GS_EPARSE;
    }
    if (!kubelet_check(view, diag)) {
      json_decref(view);
      json_decref(doc);
      return GS_EPARSE;
    }
  }
  err = GS_ENOMEM;
  cands = calloc(json_array_size(items) + 1, sizeof *cands);
  req = malloc(sizeof *req);
  k = malloc(sizeof *k);
  a = malloc(sizeof *a);
  if (cands == NULL || req == NULL || k == NULL || a == NULL)
    goto out;
  for (size_t i = 0; i < json_array_size(items); i++) {
    const json_t *pod = json_array_get(items, i);
    struct gs_diag d = {0};
    struct cand c = {pod, 0, NULL, NULL, NULL, 0, false};
    if (!is_waiting(pod, node) || gs_api_pod_decode(pod, req, NULL) != GS_EOK ||
        asks_decode(pod, resource, req, whole, k) != GS_EOK)
      continue;
    if (!next_container(k, served_containers(pod, GS_AGENT_ANN_CONTAINERS),
                        served_containers(pod, GS_AGENT_ANN_INIT_CONTAINERS), &c.container,
                        &c.init) ||
        asks(k, c.init, c.container) != n)
      continue;
    c.ns = gs_api_pod_ns(pod);
    c.name = gs_api_pod_name(pod);
    c.uid = gs_api_pod_uid(pod);
    if (view != NULL && !kubelet_admitting(view, c.ns, c.name,
                                                container_name(pod, c.init, c.container),
                                                resource)) {
      passed++; /* not the pod the kubelet is admitting */
      continue;
    }
    err = gs_api_alloc_from_pod(pod, cfg->unit_mib, a, &d);
    if (err == GS_ENOMEM)
      goto out;
    if (err == GS_ENOTFOUND || (err == GS_EOK && (a->kind == GS_ALLOC_WHOLE) != whole)) {
      if (bare.pod == NULL || cand_cmp(&c, &bare) < 0)
        bare = c; /* asks for it, but gpushare's scheduler did not place it */
      continue;
    }
    if (err != GS_EOK) {
      if (bad.pod == NULL || cand_cmp(&c, &bad) < 0) {
        bad = c;
        bad_diag = d;
      }
      continue;
    }
    /* assigned by either key: a pod Aliyun's plugin marked is never re-served */
    if (a->assigned || (!whole && annotation(pod, GS_ANN_LEGACY_ASSIGNED) != NULL &&
                        strcmp(annotation(pod, GS_ANN_LEGACY_ASSIGNED), "true") == 0))
      continue;
    c.assume_ns = a->assume_time_ns;
    cands[ncand++] = c;
  }
  if (ncand == 0) {
    if (bare.pod != NULL) {
      gs_diag_set(diag, "",
                  "pod %s/%s asks %s: %" PRIu64 " but carries no gpushare allocation "
                  "(annotation %s): it was not placed by gpushare's scheduler",
                  bare.ns, bare.name, resource, n, what_annotation(whole));
      err = GS_ENOTFOUND;
    } else if (bad.pod != NULL) {
      gs_diag_set(diag, "", "pod %s/%s: its allocation cannot be read: %s: %s", bad.ns, bad.name,
                  bad_diag.where, bad_diag.text);
      err = GS_EPARSE;
    } else if (passed > 0) {
      gs_diag_set(diag, "",
                  "no pending pod on node %s that the kubelet is admitting has a container "
                  "asking %s: %" PRIu64 " with a gpushare allocation not yet assigned (%zu "
                  "other pod%s match%s: the kubelet's pod-resources list shows %s not yet "
                  "admitted or already holding the devices)",
                  node, resource, n, passed, passed == 1 ? "" : "s", passed == 1 ? "es" : "",
                  passed == 1 ? "it" : "them");
      err = GS_ENOTFOUND;
    } else {
      gs_diag_set(diag, "",
                  "no pending pod on node %s has a container asking %s: %" PRIu64
                  " with a gpushare allocation not yet assigned",
                  node, resource, n);
      err = GS_ENOTFOUND;
    }
    goto out;
  }
  qsort(cands, ncand, sizeof *cands, cand_cmp);
  err = gs_api_pod_decode(cands[0].pod, req, NULL);
  if (err == GS_EOK)
    err = asks_decode(cands[0].pod, resource, req, whole, k);
  if (err == GS_EOK)
    err = gs_api_alloc_from_pod(cands[0].pod, cfg->unit_mib, a, NULL);
  if (err == GS_EOK)
    err = answer(cfg, inv, node, &cands[0], k, a, n, call->now_ns, view != NULL, ret_json, diag);
out:
  free(a);
  free(k);
  free(req);
  free(cands);
  json_decref(view);
  json_decref(doc);
  return err;
}
