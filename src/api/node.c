/* v1.Node → struct gs_node_spec.
 *
 * Labels pick the mode and placement; status.capacity (else allocatable)
 * gives the counts; annotations give per-GPU capacity and topology. A bad
 * annotation is not fatal: the node is still usable without it, so it is
 * ignored and the reason is left in diag as a warning (GS_EOK returned).
 */
#include "api_internal.h"

#include <string.h>

enum gs_err gs__api_device_resource_decode(const char *text, uint64_t per_gpu[GS_MAX_GPUS],
                                           const char *where, struct gs_diag *diag) {
  json_t *doc;
  const char *key;
  const json_t *val;
  char path[GS__API_PATH_MAX];
  uint64_t idx, units, out[GS_MAX_GPUS] = {0}, seen = 0;
  enum gs_err err = GS_EOK;

  if ((err = gs__api_ann_load(text, where, "annotation is ", &doc, diag)) != GS_EOK)
    return err;
  if (!json_is_object(doc) || json_object_size(doc) == 0) {
    gs_diag_set(diag, where, "must be a non-empty JSON object {\"<gpuIndex>\":<units>}");
    err = GS_EPARSE;
    goto out_doc;
  }
  json_object_foreach((json_t *)doc, key, val) {
    if (!gs__api_parse_decimal(key, GS_MAX_GPUS - 1, &idx)) {
      gs_diag_set(diag, where, "GPU index \"%s\" must be a decimal number from 0 to %d", key,
                  GS_MAX_GPUS - 1);
      err = GS_EPARSE;
      goto out_doc;
    }
    if (seen >> idx & 1) { /* "1" and "01": which capacity is meant? */
      gs_diag_set(diag, where, "GPU index %u is given twice", (unsigned)idx);
      err = GS_EPARSE;
      goto out_doc;
    }
    seen |= UINT64_C(1) << idx;
    gs__api_path(path, "%s[\"%s\"]", where, key);
    err = gs_api_quantity_whole_diag(val, path, &units, diag);
    if (err != GS_EOK)
      goto out_doc;
    out[idx] = units;
  }
  memcpy(per_gpu, out, sizeof out);
out_doc:
  json_decref(doc);
  return err;
}

/* Capacity (else allocatable) of res; absent in both → 0. */
static enum gs_err capacity(const json_t *status, const char *res, uint64_t *ret,
                            struct gs_diag *diag) {
  static const char *const maps[] = {"capacity", "allocatable"};
  const json_t *map, *q;
  char where[GS__API_PATH_MAX];
  enum gs_err err;
  for (size_t i = 0; i < 2; i++) {
    err = gs__api_get_object(status, maps[i], "Node.status", &map, diag);
    if (err != GS_EOK)
      return err;
    q = gs__api_get(map, res);
    if (q != NULL) {
      gs__api_path(where, "Node.status.%s[\"%s\"]", maps[i], res);
      return gs_api_quantity_whole_diag(q, where, ret, diag);
    }
  }
  *ret = 0;
  return GS_EOK;
}

static enum gs_err status_decode(const json_t *node, struct gs_node_spec *spec,
                                 struct gs_diag *diag) {
  const json_t *status;
  uint64_t count = 0, whole = 0, mem = 0;
  bool have_count;
  enum gs_err err;

  err = gs__api_get_object(node, "status", "Node", &status, diag);
  if (err == GS_EOK)
    err = capacity(status, GS_RES_GPU_MEM, &mem, diag);
  if (err == GS_EOK)
    err = capacity(status, GS_RES_GPU_COUNT, &count, diag);
  if (err == GS_EOK)
    err = capacity(status, GS_RES_GPU, &whole, diag);
  if (err != GS_EOK)
    return err;
  have_count = count != 0;
  if (!have_count)
    count = whole; /* topology nodes advertise only aliyun.com/gpu */
  if (count > GS_MAX_GPUS || whole > GS_MAX_GPUS) {
    gs_diag_set(diag, have_count ? "Node.status.capacity[\"" GS_RES_GPU_COUNT "\"]"
                                 : "Node.status.capacity[\"" GS_RES_GPU "\"]",
                "%llu GPUs, more than the limit of %d",
                (unsigned long long)(count > GS_MAX_GPUS ? count : whole), GS_MAX_GPUS);
    return GS_ETOOBIG;
  }
  spec->gpu_count = (uint32_t)count;
  spec->whole_gpus = whole;
  spec->gpu_mem_units = mem;
  return GS_EOK;
}

static enum gs_err labels_decode(const json_t *meta, struct gs_node_spec *spec,
                                 struct gs_diag *diag) {
  const json_t *labels;
  const char *mode, *placement, *multi;
  enum gs_err err;

  err = gs__api_get_object(meta, "labels", "Node.metadata", &labels, diag);
  if (err == GS_EOK)
    err = gs__api_get_string(labels, GS_LABEL_MODE, "Node.metadata.labels", &mode, diag);
  if (err == GS_EOK)
    err = gs__api_get_string(labels, GS_LABEL_PLACEMENT, "Node.metadata.labels", &placement,
                             diag);
  if (err == GS_EOK)
    err = gs__api_get_string(labels, GS_LABEL_MULTI_CARD, "Node.metadata.labels", &multi, diag);
  if (err != GS_EOK)
    return err;
  spec->mode = gs_mode_parse(mode);
  spec->placement = gs_placement_parse(placement);
  spec->single_card = multi != NULL && strcmp(multi, "false") == 0;
  return GS_EOK;
}

/* Annotations; problems land in warn, never fail the node. Running out of
 * memory does (GS_ENOMEM): a node silently without its per-GPU capacities
 * or topology would be scheduled wrong. */
static enum gs_err annotations_decode(const json_t *meta, struct gs_node_spec *spec,
                                      struct gs_topo *topo_buf, struct gs_diag *warn) {
  const json_t *anns, *v;
  enum gs_err err;

  anns = gs__api_get(meta, "annotations");
  if (anns != NULL && !json_is_object(anns)) {
    gs_diag_set(warn, "Node.metadata.annotations", "must be an object; annotations ignored");
    return GS_EOK;
  }
  v = gs__api_get(anns, GS_ANN_DEVICE_RESOURCE);
  if (v != NULL) {
    static const char where[] = "Node.metadata.annotations[\"" GS_ANN_DEVICE_RESOURCE "\"]";
    if (!json_is_string(v)) {
      gs_diag_set(warn, where, "must be a string; annotation ignored");
    } else {
      struct gs_diag ddiag = {{0}, {0}};
      err = gs__api_device_resource_decode(json_string_value(v), spec->per_gpu_units, where,
                                           &ddiag);
      if (err == GS_ENOMEM)
        return err;
      if (err == GS_EOK)
        spec->has_per_gpu = true;
      else
        gs_diag_set(warn, ddiag.where, "%s", ddiag.text);
    }
  }
  v = gs__api_get(anns, GS_ANN_TOPOLOGY);
  if (v != NULL && topo_buf != NULL) {
    static const char where[] = "Node.metadata.annotations[\"" GS_ANN_TOPOLOGY "\"]";
    struct gs_diag tdiag = {{0}, {0}};
    if (!json_is_string(v)) {
      gs_diag_set(warn, where, "must be a string; annotation ignored");
    } else if ((err = gs_api_topo_decode(json_string_value(v), topo_buf, &tdiag)) == GS_EOK) {
      spec->has_topo = true;
      spec->topo = topo_buf;
    } else if (err == GS_ENOMEM) {
      return err;
    } else {
      gs_diag_set(warn, where, "%s%s%s; annotation ignored", tdiag.where,
                  tdiag.where[0] ? ": " : "", tdiag.text);
    }
  }
  return GS_EOK;
}

enum gs_err gs_api_node_decode(const json_t *node, struct gs_node_spec *ret,
                               struct gs_topo *topo_buf, struct gs_diag *diag) {
  struct gs_node_spec spec;
  struct gs_diag warn = {{0}, {0}};
  const json_t *meta;
  const char *name;
  enum gs_err err;

  if (!json_is_object(node)) {
    gs_diag_set(diag, "Node", "must be an object");
    return GS_EPARSE;
  }
  memset(&spec, 0, sizeof spec);
  err = gs__api_get_object(node, "metadata", "Node", &meta, diag);
  if (err == GS_EOK)
    err = gs__api_get_string(meta, "name", "Node.metadata", &name, diag);
  if (err != GS_EOK)
    return err;
  if (name == NULL || name[0] == '\0') {
    gs_diag_set(diag, "Node.metadata.name", "missing node name");
    return GS_EPARSE;
  }
  err = gs__api_copy(spec.name, sizeof spec.name, name, "Node.metadata.name", "node name",
                     diag);
  if (err == GS_EOK)
    err = labels_decode(meta, &spec, diag);
  if (err == GS_EOK)
    err = status_decode(node, &spec, diag);
  if (err != GS_EOK)
    return err;
  err = annotations_decode(meta, &spec, topo_buf, &warn);
  if (err != GS_EOK) {
    gs_diag_set(diag, "Node.metadata.annotations", "out of memory");
    return err;
  }
  if (warn.text[0] != '\0')
    gs_diag_set(diag, warn.where, "%s", warn.text);
  *ret = spec;
  return GS_EOK;
}
