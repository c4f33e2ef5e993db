/* gpushare-node as a DRA kubelet plugin (agent.h, docs/node-agent.md "DRA"):
 * which of the node's GPUs it publishes as devices of driver
 * gpu.gpushare.io, and what a container receives for one allocated
 * ResourceClaim (the env of its CDI device). The Go side
 * (plugins/node/nodeagent/dra.go) converts the ResourceSlice and the CDI
 * spec; every choice is here. */
#include "agent.h"
#include "agent_internal.h"

#include "api.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (UINT64_C(1) << 20)

/* One entry of a per-GPU list: GPU i of the inventory, named name; NULL
 * when out of memory. */
typedef json_t *(*dra_entry_fn)(const struct gs_agent_gpu *g, const char *name, uint32_t i);

/* The JSON array of entry's objects for the inventory's GPUs (the healthy
 * ones only when healthy_only), dumped compact; NULL when out of memory. */
static char *dra_list(const struct gs_agent_inventory *inv, bool healthy_only, dra_entry_fn entry) {
  json_t *out = json_array();
  char name[32];
  char *s = NULL;

  if (out == NULL)
    return NULL;
  for (uint32_t i = 0; i < inv->n; i++) {
    if (healthy_only && !inv->gpu[i].healthy)
      continue;
    snprintf(name, sizeof name, GS_AGENT_DRA_DEVICE_PREFIX "%" PRIu32, i);
    if (json_array_append_new(out, entry(&inv->gpu[i], name, i)) != 0)
      goto out;
  }
  s = json_dumps(out, JSON_COMPACT);
out:
  json_decref(out);
  return s;
}

static json_t *device_entry(const struct gs_agent_gpu *g, const char *name, uint32_t i) {
  return json_pack("{sssIsssI}", "name", name, "index", (json_int_t)i, "uuid", g->uuid,
                   "memoryBytes", (json_int_t)(g->mem_mib * MIB));
}

static json_t *health_entry(const struct gs_agent_gpu *g, const char *name, uint32_t i) {
  (void)i;
  return json_pack("{ssss}", "device", name, "health", g->healthy ? "Healthy" : "Unhealthy");
}

char *gs_agent_dra_devices(const struct gs_agent_inventory *inv) {
  /* an unhealthy GPU is no longer offered (as ListAndWatch) */
  return dra_list(inv, true, device_entry);
}

char *gs_agent_dra_health(const struct gs_agent_inventory *inv) {
  return dra_list(inv, false, health_entry);
}

static bool device_index(const struct gs_agent_inventory *inv, const char *name, uint32_t *ret) {
  size_t plen = strlen(GS_AGENT_DRA_DEVICE_PREFIX);
  const char *p = name + plen;
  char *end;
  unsigned long v;

  if (strncmp(name, GS_AGENT_DRA_DEVICE_PREFIX, plen) != 0 || *p < '0' || *p > '9' ||
      (p[0] == '0' && p[1] != '\0'))
    return false;
  v = strtoul(p, &end, 10);
  if (*end != '\0' || v >= inv->n)
    return false;
  *ret = (uint32_t)v;
  return true;
}

static const char *str_of(const json_t *o, const char *key) {
  const json_t *v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

/* One result of ours: its GPU and the memory it holds (MiB, floored: the
 * container's limit never passes what was allocated). */
static enum gs_err result_share(const struct gs_agent_inventory *inv, const char *node,
                                const json_t *r, size_t k, uint32_t *gpu, uint64_t *mib,
                                struct gs_diag *diag) {
  char where[96];
  const char *pool = str_of(r, "pool"), *dev = str_of(r, "device");
  const json_t *mem = json_object_get(json_object_get(r, "consumedCapacity"), "memory");
  uint64_t bytes;

  snprintf(where, sizeof where, "status.allocation.devices.results[%zu]", k);
  if (pool == NULL || dev == NULL) {
    gs_diag_set(diag, where, "no pool or device");
    return GS_EPARSE;
  }
  if (strcmp(pool, node) != 0) {
    gs_diag_set(diag, where, "pool %s is not node %s's", pool, node);
    return GS_ERANGE;
  }
  if (!device_index(inv, dev, gpu)) {
    gs_diag_set(diag, where, "device %s: node %s has %" PRIu32 " GPUs (gpu-0…)", dev, node,
                inv->n);
    return GS_ERANGE;
  }
  if (mem == NULL) { /* an exclusive allocation: the whole GPU */
    *mib = inv->gpu[*gpu].mem_mib;
    return GS_EOK;
  }
  snprintf(where, sizeof where, "status.allocation.devices.results[%zu].consumedCapacity", k);
  if (gs_api_quantity_whole_diag(mem, where, &bytes, diag) != GS_EOK)
    return GS_EPARSE;
  if (bytes / MIB > inv->gpu[*gpu].mem_mib || bytes < MIB) {
    gs_diag_set(diag, where, "memory %" PRIu64 " bytes: GPU %s has %" PRIu64 " MiB", bytes, dev,
                inv->gpu[*gpu].mem_mib);
    return GS_ERANGE;
  }
  *mib = bytes / MIB;
  return GS_EOK;
}

/* The env of one claim's GPUs: the device-plugin path's keys (allocate.c)
 * for the same memory. */
static json_t *claim_envs(const struct gs_agent_config *cfg, const struct gs_agent_inventory *inv,
                          const uint32_t *gpus, const uint64_t *mibs, uint32_t n) {
  char visible[GS_MAX_GPUS * (GS_AGENT_UUID_MAX + 1)] = "", idx[GS_MAX_GPUS * 4] = "";
  char limit[GS_MAX_GPUS * 24] = "", mps[GS_MAX_GPUS * 32] = "";
  bool cgpu = cfg->mode == GS_MODE_CGPU;
  uint32_t key_mib = cgpu ? 1024 : cfg->unit_mib; /* cGPU reads GiB */
  uint64_t sum = 0;
  json_t *envs = json_object();

  for (uint32_t i = 0; i < n; i++) {
    sum += mibs[i];
    gs__agent_list_add(visible, sizeof visible, "%s", inv->gpu[gpus[i]].uuid);
    gs__agent_list_add(idx, sizeof idx, "%" PRIu32, gpus[i]);
    gs__agent_list_add(limit, sizeof limit, "%" PRIu64, mibs[i]);
    gs__agent_list_add(mps, sizeof mps, "%" PRIu32 "=%" PRIu64 "M", i, mibs[i]);
  }
  if (envs == NULL || gs__agent_set_str(envs, GS_AGENT_ENV_VISIBLE, visible) != 0 ||
      gs__agent_set_str(envs, GS_AGENT_ENV_IDX, idx) != 0 ||
      gs__agent_set_u64(envs, GS_AGENT_ENV_POD, sum / key_mib) != 0 ||
      gs__agent_set_u64(envs, GS_AGENT_ENV_CONTAINER, (cgpu ? mibs[0] : sum) / key_mib) != 0 ||
      gs__agent_set_u64(envs, GS_AGENT_ENV_DEV, inv->gpu[gpus[0]].mem_mib / key_mib) != 0 ||
      gs__agent_set_str(envs, GS_AGENT_ENV_LIMIT, limit) != 0 ||
      gs__agent_set_u64(envs, GS_AGENT_ENV_UNIT, key_mib) != 0 ||
      (cgpu && gs__agent_set_str(envs, GS_AGENT_ENV_CGPU_VISIBLE, visible) != 0) ||
      (cfg->mode == GS_MODE_MPS &&
       (gs__agent_set_str(envs, GS_AGENT_ENV_MPS_LIMIT, mps) != 0 ||
        gs__agent_set_str(envs, GS_AGENT_ENV_MPS_PIPE, cfg->mps_pipe_dir) != 0))) {
    json_decref(envs);
    return NULL;
  }
  return envs;
}

enum gs_err gs_agent_dra_prepare(const struct gs_agent_config *cfg,
                                 const struct gs_agent_inventory *inv, const char *node,
                                 const char *claim_json, size_t len, char **ret_json,
                                 struct gs_diag *diag) {
  uint32_t gpus[GS_MAX_GPUS], n = 0;
  uint64_t mibs[GS_MAX_GPUS];
  const json_t *results;
  json_t *claim, *out = NULL, *devices, *envs, *mounts;
  json_error_t jerr;
  const char *uid;
  enum gs_err err;

  if (cfg == NULL || inv == NULL || node == NULL || claim_json == NULL || ret_json == NULL) {
    gs_diag_set(diag, "dra", "bad arguments");
    return GS_EINVAL;
  }
  err = gs_agent_config_check(cfg, diag);
  if (err != GS_EOK)
    return err;
  claim = json_loadb(claim_json, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!json_is_object(claim)) {
    gs_diag_set(diag, "claim", "not a JSON object: %s", jerr.text);
    json_decref(claim);
    return GS_EPARSE;
  }
  uid = str_of(json_object_get(claim, "metadata"), "uid");
  results = json_object_get(
      json_object_get(json_object_get(json_object_get(claim, "status"), "allocation"), "devices"),
      "results");
  err = GS_EPARSE;
  if (uid == NULL || *uid == '\0') {
    gs_diag_set(diag, "metadata.uid", "missing");
    goto out;
  }
  if (!json_is_array(results)) {
    gs_diag_set(diag, "status.allocation", "claim %s is not allocated", uid);
    goto out;
  }
  err = GS_ENOMEM;
  out = json_object();
  devices = json_array();
  if (out == NULL || json_object_set_new(out, "devices", devices) != 0 ||
      gs__agent_set_str(out, "claim", uid) != 0)
    goto out;
  for (size_t k = 0; k < json_array_size(results); k++) {
    const json_t *r = json_array_get(results, k);
    const char *driver = str_of(r, "driver"), *req = str_of(r, "request");
    uint32_t gpu, j;
    uint64_t mib;
    json_t *d;

    if (driver == NULL || strcmp(driver, GS_AGENT_DRA_DRIVER) != 0)
      continue; /* another driver's device */
    err = result_share(inv, node, r, k, &gpu, &mib, diag);
    if (err != GS_EOK)
      goto out;
    for (j = 0; j < n && gpus[j] != gpu; j++)
      ;
    if (j == n)
      gpus[n] = gpu, mibs[n++] = 0;
    /* two requests on one GPU: the container sees it once, with both */
    mibs[j] += mib;
    if (mibs[j] > inv->gpu[gpu].mem_mib) {
      gs_diag_set(diag, "status.allocation", "claim %s: %" PRIu64 " MiB of GPU %" PRIu32
                  " which has %" PRIu64, uid, mibs[j], gpu, inv->gpu[gpu].mem_mib);
      err = GS_ERANGE;
      goto out;
    }
    err = GS_ENOMEM;
    d = json_pack("{ssssss}", "request", req != NULL ? req : "", "pool", node, "device",
                  str_of(r, "device"));
    if (d == NULL || json_array_append_new(devices, d) != 0)
      goto out;
    if (str_of(r, "shareID") != NULL && gs__agent_set_str(d, "shareID", str_of(r, "shareID")) != 0)
      goto out;
  }
  if (n == 0) {
    gs_diag_set(diag, "status.allocation", "claim %s has no device of driver %s", uid,
                GS_AGENT_DRA_DRIVER);
    err = GS_ENOTFOUND;
    goto out;
  }
  err = GS_ENOMEM;
  envs = claim_envs(cfg, inv, gpus, mibs, n);
  mounts = json_array();
  if (envs == NULL || json_object_set_new(out, "envs", envs) != 0 || mounts == NULL ||
      json_object_set_new(out, "mounts", mounts) != 0)
    goto out;
  if (cfg->mode == GS_MODE_MPS &&
      json_array_append_new(mounts, json_pack("{sssssb}", "hostPath", cfg->mps_pipe_dir,
                                              "containerPath", cfg->mps_pipe_dir, "readOnly",
                                              0)) != 0)
    goto out;
  *ret_json = json_dumps(out, JSON_COMPACT);
  err = *ret_json != NULL ? GS_EOK : GS_ENOMEM;
out:
  json_decref(out);
  json_decref(claim);
  return err;
}
