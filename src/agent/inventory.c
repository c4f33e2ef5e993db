/* gpushare-node: the node's GPUs, what it advertises, its topology
 * annotation and unhealthy-GPU ConfigMap (agent.h). */
#include "agent.h"

#include "api.h"

#include <gpushare/topo.h>

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEM_MIB_MAX (UINT64_C(1) << 30) /* 1 PiB per GPU: beyond any real card */

static enum gs_err gpu_decode(const json_t *v, size_t i, struct gs_agent_gpu *g,
                              struct gs_diag *diag) {
  char where[64];
  const json_t *uuid, *mem, *minor, *healthy;
  const char *key;
  json_t *val;

  snprintf(where, sizeof where, "gpus[%zu]", i);
  if (!json_is_object(v)) {
    gs_diag_set(diag, where, "must be an object {\"uuid\",\"memoryMiB\",\"minor\",\"healthy\"}");
    return GS_EPARSE;
  }
  json_object_foreach((json_t *)v, key, val) {
    if (strcmp(key, "uuid") != 0 && strcmp(key, "memoryMiB") != 0 && strcmp(key, "minor") != 0 &&
        strcmp(key, "healthy") != 0) {
      gs_diag_set(diag, where, "unknown key \"%s\" (uuid, memoryMiB, minor, healthy)", key);
      return GS_EPARSE;
    }
  }
  uuid = json_object_get(v, "uuid");
  if (!json_is_string(uuid) || json_string_length(uuid) == 0 ||
      json_string_length(uuid) > GS_AGENT_UUID_MAX) {
    gs_diag_set(diag, where, "uuid must be a non-empty string of at most %d bytes",
                GS_AGENT_UUID_MAX);
    return GS_EPARSE;
  }
  if (strpbrk(json_string_value(uuid), ", =\t\n") != NULL) {
    gs_diag_set(diag, where, "uuid \"%s\" has a comma, '=' or a space", json_string_value(uuid));
    return GS_EPARSE;
  }
  mem = json_object_get(v, "memoryMiB");
  if (!json_is_integer(mem) || json_integer_value(mem) <= 0 ||
      (uint64_t)json_integer_value(mem) > MEM_MIB_MAX) {
    gs_diag_set(diag, where, "memoryMiB must be an integer from 1 to %" PRIu64, MEM_MIB_MAX);
    return GS_EPARSE;
  }
  minor = json_object_get(v, "minor");
  if (minor != NULL &&
      (!json_is_integer(minor) || json_integer_value(minor) < 0 ||
       json_integer_value(minor) > 255)) {
    gs_diag_set(diag, where, "minor must be an integer from 0 to 255");
    return GS_EPARSE;
  }
  healthy = json_object_get(v, "healthy");
  if (healthy != NULL && !json_is_boolean(healthy)) {
    gs_diag_set(diag, where, "healthy must be true or false");
    return GS_EPARSE;
  }
  snprintf(g->uuid, sizeof g->uuid, "%s", json_string_value(uuid));
  g->mem_mib = (uint64_t)json_integer_value(mem);
  g->minor = minor != NULL ? (uint32_t)json_integer_value(minor) : (uint32_t)i;
  g->healthy = healthy == NULL || json_is_true(healthy);
  return GS_EOK;
}

enum gs_err gs_agent_inventory_decode(const char *text, size_t len,
                                      struct gs_agent_inventory *ret, struct gs_diag *diag) {
  struct gs_agent_inventory *inv;
  json_error_t jerr;
  json_t *doc, *links;
  const json_t *gpus;
  enum gs_err err = GS_EPARSE;

  if (len > GS_AGENT_INVENTORY_MAX) {
    gs_diag_set(diag, "", "the inventory is %zu bytes, over the limit of %u", len,
                GS_AGENT_INVENTORY_MAX);
    return GS_ETOOBIG;
  }
  doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (doc == NULL) {
    gs_diag_set(diag, "", "not JSON: %s (line %d, column %d)", jerr.text, jerr.line,
                jerr.column);
    return GS_EPARSE;
  }
  inv = calloc(1, sizeof *inv); /* 16 KiB of matrix: off the stack */
  if (inv == NULL) {
    err = GS_ENOMEM;
    goto out_doc;
  }
  gpus = json_object_get(doc, "gpus");
  if (!json_is_object(doc) || !json_is_array(gpus) || json_array_size(gpus) == 0) {
    gs_diag_set(diag, "gpus", "must be a non-empty array of GPUs");
    goto out_inv;
  }
  if (json_array_size(gpus) > GS_MAX_GPUS) {
    gs_diag_set(diag, "gpus", "%zu GPUs, more than the limit of %d", json_array_size(gpus),
                GS_MAX_GPUS);
    err = GS_ETOOBIG;
    goto out_inv;
  }
  inv->n = (uint32_t)json_array_size(gpus);
  for (size_t i = 0; i < inv->n; i++) {
    err = gpu_decode(json_array_get(gpus, i), i, &inv->gpu[i], diag);
    if (err != GS_EOK)
      goto out_inv;
    for (size_t j = 0; j < i; j++) {
      if (strcmp(inv->gpu[i].uuid, inv->gpu[j].uuid) == 0) {
        gs_diag_set(diag, "gpus", "GPUs %zu and %zu have the same uuid \"%s\"", j, i,
                    inv->gpu[i].uuid);
        err = GS_EPARSE;
        goto out_inv;
      }
    }
  }
  links = json_object_get(doc, "links");
  if (links != NULL) {
    /* the annotation's own decoder: {"links":...} */
    json_t *wrap = json_pack("{sO}", "links", links);
    char *s = wrap != NULL ? json_dumps(wrap, JSON_COMPACT) : NULL;
    json_decref(wrap);
    if (s == NULL) {
      err = GS_ENOMEM;
      goto out_inv;
    }
    err = gs_api_topo_decode(s, &inv->topo, diag);
    free(s);
    if (err != GS_EOK)
      goto out_inv;
    if (inv->topo.n != inv->n) {
      gs_diag_set(diag, "links", "a %" PRIu32 "×%" PRIu32 " matrix for %" PRIu32 " GPUs",
                  inv->topo.n, inv->topo.n, inv->n);
      err = GS_EPARSE;
      goto out_inv;
    }
    inv->has_topo = true;
  }
  *ret = *inv;
  err = GS_EOK;
out_inv:
  free(inv);
out_doc:
  json_decref(doc);
  return err;
}

enum gs_err gs_agent_config_check(const struct gs_agent_config *cfg, struct gs_diag *diag) {
  if (cfg->unit_mib != GS_UNIT_GIB && cfg->unit_mib != GS_UNIT_128MIB) {
    gs_diag_set(diag, "unit", "%" PRIu32 " MiB: the unit must be 1GiB or 128MiB", cfg->unit_mib);
    return GS_EINVAL;
  }
  if (cfg->mode == GS_MODE_MPS && cfg->mps_pipe_dir[0] != '/') {
    gs_diag_set(diag, "mps-pipe-dir", "an mps node needs the MPS pipe directory as an absolute "
                                      "path (got \"%s\")",
                cfg->mps_pipe_dir);
    return GS_EINVAL;
  }
  return GS_EOK;
}

static char *dump(json_t *doc) {
  char *s = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL;
  json_decref(doc);
  return s;
}

char *gs_agent_resources(const struct gs_agent_config *cfg) {
  json_t *a = json_pack("[ss]", GS_AGENT_RES_MEM, GS_AGENT_RES_COUNT);
  if (a != NULL && cfg->mode == GS_MODE_TOPOLOGY &&
      json_array_append_new(a, json_string(GS_AGENT_RES_WHOLE)) != 0) {
    json_decref(a);
    return NULL;
  }
  return dump(a);
}

uint64_t gs_agent_mem_units(const struct gs_agent_config *cfg,
                            const struct gs_agent_inventory *inv) {
  uint64_t units = 0;
  for (uint32_t i = 0; i < inv->n; i++)
    units += inv->gpu[i].mem_mib / cfg->unit_mib;
  return units;
}

static int add_device(json_t *arr, const char *id, bool healthy) {
  return json_array_append_new(
      arr, json_pack("{ssss}", "id", id, "health", healthy ? "Healthy" : "Unhealthy"));
}

char *gs_agent_devices(const struct gs_agent_config *cfg, const struct gs_agent_inventory *inv,
                       const char *resource) {
  char id[GS_AGENT_UUID_MAX + 32];
  bool mem = strcmp(resource, GS_AGENT_RES_MEM) == 0;
  json_t *arr;

  if (!mem && strcmp(resource, GS_AGENT_RES_COUNT) != 0 &&
      strcmp(resource, GS_AGENT_RES_WHOLE) != 0)
    return NULL;
  arr = json_array();
  if (arr == NULL)
    return NULL;
  for (uint32_t i = 0; i < inv->n; i++) {
    const struct gs_agent_gpu *g = &inv->gpu[i];
    if (!mem) {
      if (add_device(arr, g->uuid, g->healthy) != 0)
        goto fail;
      continue;
    }
    for (uint64_t k = 0; k < g->mem_mib / cfg->unit_mib; k++) {
      snprintf(id, sizeof id, "%s-_-%" PRIu64, g->uuid, k);
      if (add_device(arr, id, g->healthy) != 0)
        goto fail;
    }
  }
  return dump(arr);
fail:
  json_decref(arr);
  return NULL;
}

char *gs_agent_unhealthy_data(const struct gs_agent_inventory *inv) {
  char list[GS_MAX_GPUS * 4] = "";
  size_t off = 0;
  for (uint32_t i = 0; i < inv->n; i++) {
    if (!inv->gpu[i].healthy)
      off += (size_t)snprintf(list + off, sizeof list - off, "%s%" PRIu32, off ? "," : "", i);
  }
  return dump(json_pack("{ss}", "gpus", list));
}

char *gs_agent_topology(const struct gs_agent_inventory *inv) {
  if (!inv->has_topo)
    return NULL;
  return gs_api_topo_encode(&inv->topo);
}
