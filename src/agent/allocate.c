/* gpushare-node: which pod an Allocate call is for, and what its container
 * receives (agent.h, docs/node-agent.md). The kubelet names N fake devices
 * and no pod; the pod is found the way Aliyun's device plugin finds it
 * (pending pods of this node with an allocation not yet assigned, oldest
 * assume time first), with a total order so the answer never depends on
 * the order the pods were listed in. */
#include "agent.h"

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

/* gpushare.io/allocated-containers "0,2" → mask; malformed → all unset
 * (the agent wrote it: a hand edit only makes a container eligible again). */
static uint64_t served_containers(const json_t *pod) {
  const char *s = annotation(pod, GS_AGENT_ANN_CONTAINERS);
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

static uint64_t asks(const struct gs_pod_request *req, bool whole, uint32_t c) {
  return whole ? req->whole_gpus[c] : req->mem_units[c];
}

/* The first container asking the resource not yet served, or false. */
static bool next_container(const struct gs_pod_request *req, bool whole, uint64_t served,
                           uint32_t *ret) {
  for (uint32_t c = 0; c < req->ncontainers; c++) {
    if (asks(req, whole, c) > 0 && !(served >> c & 1)) {
      *ret = c;
      return true;
    }
  }
  return false;
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

static const char *container_name(const json_t *pod, uint32_t c) {
  const json_t *v = json_object_get(
      json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), c), "name");
  return json_is_string(v) ? json_string_value(v) : "";
}

/* Appends "<text>" to a comma list in buf. */
static void list_add(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void list_add(char *buf, size_t cap, const char *fmt, ...) {
  size_t off = strlen(buf);
  va_list ap;
  if (off > 0 && off + 1 < cap)
    buf[off++] = ',', buf[off] = '\0';
  va_start(ap, fmt);
  vsnprintf(buf + off, cap - off, fmt, ap);
  va_end(ap);
}

static int set_str(json_t *o, const char *key, const char *value) {
  return json_object_set_new(o, key, json_string(value));
}

static int set_u64(json_t *o, const char *key, uint64_t v) {
  char s[24];
  snprintf(s, sizeof s, "%" PRIu64, v);
  return set_str(o, key, s);
}

/* The patch once the last container is served: the pod is assigned. */
static enum gs_err assigned_patch(const json_t *pod, bool whole, int64_t now_ns, json_t *anns) {
  char t[24];
  snprintf(t, sizeof t, "%" PRId64, now_ns);
  if (!whole) {
    return set_str(anns, GS_ANN_LEGACY_ASSIGNED, "true") != 0 ||
                   set_str(anns, GS_ANN_ASSIGNED, "true") != 0 ||
                   set_str(anns, GS_AGENT_ANN_ASSIGN_TIME, t) != 0
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
  int rc = set_str(anns, GS_ANN_TOPO_ALLOCATION, s);
  free(s);
  return rc != 0 ? GS_ENOMEM : GS_EOK;
}

/* What the chosen container receives. */
static enum gs_err answer(const struct gs_agent_config *cfg, const struct gs_agent_inventory *inv,
                          const char *node, const struct cand *w, const struct gs_pod_request *req,
                          const struct gs_api_alloc *a, bool whole, uint64_t n, int64_t now_ns,
                          char **ret_json, struct gs_diag *diag) {
  char visible[GS_MAX_GPUS * (GS_AGENT_UUID_MAX + 1)] = "", idx[GS_MAX_GPUS * 4] = "";
  char limit[GS_MAX_GPUS * 24] = "", mps[GS_MAX_GPUS * 32] = "", served[GS_MAX_CONTAINERS * 4] = "";
  uint64_t pod_units = 0, mine = 0, first_gpu = UINT64_MAX, ordinal = 0;
  uint64_t done = served_containers(w->pod) | UINT64_C(1) << w->container;
  json_t *out = NULL, *envs, *mounts, *anns;
  uint32_t ignored;
  enum gs_err err = GS_ENOMEM;

  for (uint32_t i = 0; i < a->nparts; i++) {
    const struct gs_alloc_part *p = &a->parts[i];
    pod_units += p->units;
    if (p->container != w->container)
      continue;
    if (p->gpu >= inv->n) {
      gs_diag_set(diag, "", "pod %s/%s: its allocation names GPU %" PRIu32 ", but node %s has %" PRIu32 " GPUs (0-%" PRIu32 ")",
                  w->ns, w->name, p->gpu, node, inv->n, inv->n - 1);
      return GS_ERANGE;
    }
    if (!whole && p->units * a->unit_mib > inv->gpu[p->gpu].mem_mib) {
      gs_diag_set(diag, "",
                  "pod %s/%s: its allocation gives GPU %" PRIu32 " %" PRIu64 " units of %" PRIu32
                  " MiB (%" PRIu64 " MiB), more than the GPU's %" PRIu64 " MiB",
                  w->ns, w->name, p->gpu, p->units, a->unit_mib, p->units * a->unit_mib,
                  inv->gpu[p->gpu].mem_mib);
      return GS_ERANGE;
    }
    if (first_gpu == UINT64_MAX)
      first_gpu = p->gpu;
    mine += whole ? 1 : p->units;
    list_add(visible, sizeof visible, "%s", inv->gpu[p->gpu].uuid);
    list_add(idx, sizeof idx, "%" PRIu32, p->gpu);
    list_add(limit, sizeof limit, "%" PRIu64, p->units * a->unit_mib);
    /* the container's own CUDA ordinals: its GPUs in NVIDIA_VISIBLE_DEVICES order */
    list_add(mps, sizeof mps, "%" PRIu64 "=%" PRIu64 "M", ordinal++, p->units * a->unit_mib);
  }
  if (mine != n) {
    gs_diag_set(diag, "",
                "pod %s/%s: its allocation gives container %s %" PRIu64 " %s, but it asks %" PRIu64,
                w->ns, w->name, container_name(w->pod, w->container), mine,
                whole ? "GPUs" : "units", n);
    return mine == 0 ? GS_EPARSE : GS_ERANGE;
  }
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
      set_str(out, "container", container_name(w->pod, w->container)) != 0 ||
      json_object_set_new(out, "containerIndex", json_integer(w->container)) != 0 ||
      set_str(envs, GS_AGENT_ENV_VISIBLE, visible) != 0)
    goto out_json;
  if (!whole) {
    if (set_str(envs, GS_AGENT_ENV_IDX, idx) != 0 || set_u64(envs, GS_AGENT_ENV_POD, pod_units) != 0 ||
        set_u64(envs, GS_AGENT_ENV_CONTAINER, mine) != 0 ||
        set_u64(envs, GS_AGENT_ENV_DEV, inv->gpu[first_gpu].mem_mib / a->unit_mib) != 0 ||
        set_str(envs, GS_AGENT_ENV_LIMIT, limit) != 0 ||
        set_u64(envs, GS_AGENT_ENV_UNIT, a->unit_mib) != 0)
      goto out_json;
    if (cfg->mode == GS_MODE_MPS &&
        (set_str(envs, GS_AGENT_ENV_MPS_LIMIT, mps) != 0 ||
         set_str(envs, GS_AGENT_ENV_MPS_PIPE, cfg->mps_pipe_dir) != 0 ||
         json_array_append_new(mounts, json_pack("{sssssb}", "hostPath", cfg->mps_pipe_dir,
                                                 "containerPath", cfg->mps_pipe_dir,
                                                 "readOnly", 0)) != 0))
      goto out_json;
  }
  for (uint32_t c = 0; c < GS_MAX_CONTAINERS; c++) {
    if (done >> c & 1)
      list_add(served, sizeof served, "%" PRIu32, c);
  }
  if (set_str(anns, GS_AGENT_ANN_CONTAINERS, served) != 0)
    goto out_json;
  if (!next_container(req, whole, done, &ignored)) {
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

static const char *what_annotation(bool whole) {
  return whole ? GS_ANN_TOPO_ALLOCATION : GS_ANN_ALLOCATION;
}

enum gs_err gs_agent_allocate(const struct gs_agent_config *cfg,
                              const struct gs_agent_inventory *inv, const char *node,
                              const char *resource, uint64_t n, const char *pods_json,
                              size_t len, int64_t now_ns, char **ret_json,
                              struct gs_diag *diag) {
  bool whole = strcmp(resource, GS_AGENT_RES_WHOLE) == 0;
  struct cand *cands = NULL, bare = {0}, bad = {0};
  struct gs_diag bad_diag = {0};
  struct gs_pod_request *req = NULL;
  struct gs_api_alloc *a = NULL;
  const json_t *items;
  json_t *doc;
  size_t ncand = 0;
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
  doc = json_loadb(pods_json, len, 0, NULL);
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
  err = GS_ENOMEM;
  cands = calloc(json_array_size(items) + 1, sizeof *cands);
  req = malloc(sizeof *req);
  a = malloc(sizeof *a);
  if (cands == NULL || req == NULL || a == NULL)
    goto out;
  for (size_t i = 0; i < json_array_size(items); i++) {
    const json_t *pod = json_array_get(items, i);
    struct gs_diag d = {0};
    struct cand c = {pod, 0, NULL, NULL, NULL, 0};
    if (!is_waiting(pod, node) || gs_api_pod_decode(pod, req, NULL) != GS_EOK)
      continue;
    if (!next_container(req, whole, served_containers(pod), &c.container) ||
        asks(req, whole, c.container) != n)
      continue;
    c.ns = gs_api_pod_ns(pod);
    c.name = gs_api_pod_name(pod);
    c.uid = gs_api_pod_uid(pod);
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
    err = gs_api_alloc_from_pod(cands[0].pod, cfg->unit_mib, a, NULL);
  if (err == GS_EOK)
    err = answer(cfg, inv, node, &cands[0], req, a, whole, n, now_ns, ret_json, diag);
out:
  free(a);
  free(req);
  free(cands);
  json_decref(doc);
  return err;
}
