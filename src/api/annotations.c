/* Bind annotations (docs/contract.md §4), read back from a pod when the ledger is
 * rebuilt. They are written by the core (gpushare/annot.h).
 *
 * Reading order: the V2 key scheduler.framework.gpushare.allocation, else
 * the legacy ALIYUN_COM_GPU_MEM_* keys, else the topology allocation.
 * Legacy keys describe a whole pod, not containers: ALIYUN_COM_GPU_MEM_POD
 * units are charged to container 0, split evenly over the GPUs of
 * ALIYUN_COM_GPU_MEM_IDX; a remainder goes to the first (lowest) GPU.
 */
#include "api_internal.h"
#include "alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ANN_PATH(key) "Pod.metadata.annotations[\"" key "\"]"

static int part_cmp(const void *a, const void *b) {
  const struct gs_alloc_part *x = a, *y = b;
  if (x->container != y->container)
    return x->container < y->container ? -1 : 1;
  if (x->gpu != y->gpu)
    return x->gpu < y->gpu ? -1 : 1;
  return 0;
}

/* A string annotation, or NULL when absent. Non-string → GS_EPARSE. */
static enum gs_err ann_string(const json_t *anns, const char *key, const char *where,
                              const char **ret, struct gs_diag *diag) {
  const json_t *v = gs__api_get(anns, key);
  if (v != NULL && !json_is_string(v)) {
    gs_diag_set(diag, where, "must be a string");
    return GS_EPARSE;
  }
  *ret = v != NULL ? json_string_value(v) : NULL;
  return GS_EOK;
}

/* An annotation value that holds JSON; new reference in *ret. */
static enum gs_err ann_json(const char *text, const char *where, json_t **ret,
                            struct gs_diag *diag) {
  json_t *doc;
  enum gs_err err = gs__api_ann_load(text, where, "", &doc, diag);
  if (err != GS_EOK)
    return err;
  if (!json_is_object(doc)) {
    gs_diag_set(diag, where, "must be a JSON object");
    json_decref(doc);
    return GS_EPARSE;
  }
  *ret = doc;
  return GS_EOK;
}

/* An index key ("0".."max"). */
static enum gs_err index_key(const char *key, uint64_t max, const char *where,
                             const char *what, uint32_t *ret, struct gs_diag *diag) {
  uint64_t v;
  if (!gs__api_parse_decimal(key, max, &v)) {
    gs_diag_set(diag, where, "%s \"%s\" must be a decimal number from 0 to %" PRIu64, what,
                key, max);
    return GS_EPARSE;
  }
  *ret = (uint32_t)v;
  return GS_EOK;
}

static enum gs_err add_part(struct gs_api_alloc *a, uint32_t container, uint32_t gpu,
                            uint64_t units, const char *where, struct gs_diag *diag) {
  if (a->nparts >= GS_MAX_PARTS) {
    gs_diag_set(diag, where, "more than %d (container, GPU) parts", GS_MAX_PARTS);
    return GS_ETOOBIG;
  }
  a->parts[a->nparts].container = container;
  a->parts[a->nparts].gpu = gpu;
  a->parts[a->nparts].units = units;
  a->nparts++;
  return GS_EOK;
}

/* A decimal annotation (unix ns), absent → 0. */
static enum gs_err ann_time(const json_t *anns, const char *key, const char *where,
                            int64_t *ret, struct gs_diag *diag) {
  const char *s;
  enum gs_err err = ann_string(anns, key, where, &s, diag);
  if (err != GS_EOK)
    return err;
  *ret = 0;
  if (s != NULL && !gs__api_parse_int64(s, ret)) {
    gs_diag_set(diag, where, "\"%s\" is not a decimal unix time in ns", s);
    return GS_EPARSE;
  }
  return GS_EOK;
}

static enum gs_err ann_bool(const json_t *anns, const char *key, const char *where,
                            bool *ret, struct gs_diag *diag) {
  const char *s;
  enum gs_err err = ann_string(anns, key, where, &s, diag);
  if (err == GS_EOK)
    *ret = s != NULL && strcmp(s, "true") == 0;
  return err;
}

static enum gs_err v2_decode(const json_t *anns, const char *text, struct gs_api_alloc *a,
                             struct gs_diag *diag) {
  static const char where[] = ANN_PATH(GS_ANN_ALLOCATION);
  char path[GS__API_PATH_MAX];
  json_t *doc;
  const char *ckey, *gkey;
  const json_t *gpus, *units;
  uint64_t seen[GS_MAX_CONTAINERS] = {0}; /* GPUs given to each container */
  uint32_t c, g;
  uint64_t u;
  enum gs_err err;

  err = ann_json(text, where, &doc, diag);
  if (err != GS_EOK)
    return err;
  json_object_foreach(doc, ckey, gpus) {
    err = index_key(ckey, GS_MAX_CONTAINERS - 1, where, "container index", &c, diag);
    if (err != GS_EOK)
      goto out_doc;
    gs__api_path(path, "%s[\"%s\"]", where, ckey);
    if (!json_is_object(gpus)) {
      gs_diag_set(diag, path, "must be an object {\"<gpuIndex>\":<units>}");
      err = GS_EPARSE;
      goto out_doc;
    }
    json_object_foreach((json_t *)gpus, gkey, units) {
      err = index_key(gkey, GS_MAX_GPUS - 1, path, "GPU index", &g, diag);
      if (err == GS_EOK) {
        char upath[GS__API_PATH_MAX];
        gs__api_path(upath, "%s[\"%s\"]", path, gkey);
        /* a malformed annotation is GS_EPARSE whatever the reason */
        if (gs_api_quantity_whole_diag(units, upath, &u, diag) != GS_EOK)
          err = GS_EPARSE;
      }
      /* "1" and "01" (or containers "0" and "00") name the same pair: one
       * pair given twice would be charged twice. */
      if (err == GS_EOK && (seen[c] >> g & 1)) {
        gs_diag_set(diag, path, "GPU %" PRIu32 " of container %" PRIu32 " is given twice", g,
                    c);
        err = GS_EPARSE;
      }
      if (err == GS_EOK)
        err = add_part(a, c, g, u, where, diag);
      if (err != GS_EOK)
        goto out_doc;
      seen[c] |= UINT64_C(1) << g;
    }
  }
  a->kind = GS_ALLOC_MEM;
  err = ann_bool(anns, GS_ANN_ASSIGNED, ANN_PATH(GS_ANN_ASSIGNED), &a->assigned, diag);
  if (err == GS_EOK)
    err = ann_time(anns, GS_ANN_ASSUME_TIME, ANN_PATH(GS_ANN_ASSUME_TIME), &a->assume_time_ns,
                   diag);
out_doc:
  json_decref(doc);
  return err;
}

/* "0,2,3" → mask; any order, no repeats, no empty elements. */
static enum gs_err idx_list(const char *s, uint64_t *ret_mask, struct gs_diag *diag) {
  static const char where[] = ANN_PATH(GS_ANN_LEGACY_IDX);
  uint64_t mask = 0, v;
  char item[8];
  const char *p = s;
  for (;;) {
    size_t n = strcspn(p, ",");
    if (n == 0 || n >= sizeof item)
      goto bad;
    memcpy(item, p, n);
    item[n] = '\0';
    if (!gs__api_parse_decimal(item, GS_MAX_GPUS - 1, &v) || (mask & (UINT64_C(1) << v)))
      goto bad;
    mask |= UINT64_C(1) << v;
    if (p[n] == '\0')
      break;
    p += n + 1;
  }
  *ret_mask = mask;
  return GS_EOK;
bad:
  gs_diag_set(diag, where,
              "\"%s\" must be distinct GPU indices (0 to %d), comma-separated", s,
              GS_MAX_GPUS - 1);
  return GS_EPARSE;
}

static enum gs_err legacy_parts(const json_t *anns, const char *idx, struct gs_api_alloc *a,
                                struct gs_diag *diag) {
  static const char pod_where[] = ANN_PATH(GS_ANN_LEGACY_POD);
  const char *pod;
  uint64_t mask, units, share, rest;
  uint32_t m = 0;
  bool first = true;
  enum gs_err err;

  err = idx_list(idx, &mask, diag);
  if (err == GS_EOK)
    err = ann_string(anns, GS_ANN_LEGACY_POD, pod_where, &pod, diag);
  if (err != GS_EOK)
    return err;
  if (pod == NULL) {
    gs_diag_set(diag, pod_where, "missing beside " GS_ANN_LEGACY_IDX);
    return GS_EPARSE;
  }
  if (!gs__api_parse_decimal(pod, GS_API_QUANTITY_MAX, &units)) {
    gs_diag_set(diag, pod_where, "\"%s\" must be a decimal number of units", pod);
    return GS_EPARSE;
  }
  for (uint32_t g = 0; g < GS_MAX_GPUS; g++)
    m += (mask >> g) & 1u;
  share = units / m;
  rest = units % m;
  for (uint32_t g = 0; g < GS_MAX_GPUS; g++) {
    if (!(mask & (UINT64_C(1) << g)))
      continue;
    err = add_part(a, 0, g, first ? share + rest : share, pod_where, diag);
    if (err != GS_EOK)
      return err;
    first = false;
  }
  a->kind = GS_ALLOC_MEM;
  err = ann_bool(anns, GS_ANN_LEGACY_ASSIGNED, ANN_PATH(GS_ANN_LEGACY_ASSIGNED), &a->assigned,
                 diag);
  if (err == GS_EOK)
    err = ann_time(anns, GS_ANN_LEGACY_ASSUME_TIME, ANN_PATH(GS_ANN_LEGACY_ASSUME_TIME),
                   &a->assume_time_ns, diag);
  return err;
}

/* A GPU index in a topology allocation: "3" or 3. */
static bool topo_gpu(const json_t *v, uint32_t *ret) {
  uint64_t g;
  if (json_is_string(v)) {
    if (!gs__api_parse_decimal(json_string_value(v), GS_MAX_GPUS - 1, &g))
      return false;
  } else if (json_is_integer(v)) {
    if (json_integer_value(v) < 0 || json_integer_value(v) >= GS_MAX_GPUS)
      return false;
    g = (uint64_t)json_integer_value(v);
  } else {
    return false;
  }
  *ret = (uint32_t)g;
  return true;
}

static enum gs_err topo_decode(const char *text, struct gs_api_alloc *a, struct gs_diag *diag) {
  static const char where[] = ANN_PATH(GS_ANN_TOPO_ALLOCATION);
  char path[GS__API_PATH_MAX];
  json_t *doc;
  const json_t *by_container, *list, *v;
  const char *ckey;
  uint64_t seen = 0;
  uint32_t c, g;
  size_t i;
  enum gs_err err;

  err = ann_json(text, where, &doc, diag);
  if (err != GS_EOK)
    return err;
  by_container = gs__api_get(doc, "allocatedGPUs");
  if (!json_is_object(by_container)) {
    gs_diag_set(diag, where, "allocatedGPUs must be an object {\"<container>\":[\"<gpu>\"]}");
    err = GS_EPARSE;
    goto out_doc;
  }
  json_object_foreach((json_t *)by_container, ckey, list) {
    gs__api_path(path, "%s.allocatedGPUs[\"%s\"]", where, ckey);
    err = index_key(ckey, GS_MAX_CONTAINERS - 1, path, "container index", &c, diag);
    if (err != GS_EOK)
      goto out_doc;
    if (!json_is_array(list)) {
      gs_diag_set(diag, path, "must be an array of GPU indices");
      err = GS_EPARSE;
      goto out_doc;
    }
    json_array_foreach(list, i, v) {
      if (!topo_gpu(v, &g) || (seen & (UINT64_C(1) << g))) {
        gs_diag_set(diag, path, "element %zu must be a distinct GPU index (0 to %d)", i,
                    GS_MAX_GPUS - 1);
        err = GS_EPARSE;
        goto out_doc;
      }
      seen |= UINT64_C(1) << g;
      err = add_part(a, c, g, 0, where, diag);
      if (err != GS_EOK)
        goto out_doc;
    }
  }
  v = gs__api_get(doc, "assumeTime");
  if (v != NULL && !json_is_integer(v)) {
    gs_diag_set(diag, where, "assumeTime must be an integer (unix ns)");
    err = GS_EPARSE;
    goto out_doc;
  }
  a->assume_time_ns = v != NULL ? (int64_t)json_integer_value(v) : 0;
  v = gs__api_get(doc, "assigned");
  if (v != NULL && !json_is_boolean(v)) {
    gs_diag_set(diag, where, "assigned must be a boolean");
    err = GS_EPARSE;
    goto out_doc;
  }
  a->assigned = json_is_true(v);
  a->kind = GS_ALLOC_WHOLE;
out_doc:
  json_decref(doc);
  return err;
}

enum gs_err gs_api_alloc_from_pod(const json_t *pod, uint32_t default_unit_mib,
                                  struct gs_api_alloc *ret, struct gs_diag *diag) {
  struct gs_api_alloc *a;
  const json_t *anns;
  const char *v2, *idx, *topo, *unit, *dev;
  enum gs_err err;

  if (!json_is_object(pod)) {
    gs_diag_set(diag, "Pod", "must be an object");
    return GS_EPARSE;
  }
  err = gs__api_get_object(gs__api_get(pod, "metadata"), "annotations", "Pod.metadata", &anns,
                           diag);
  if (err != GS_EOK)
    return err;
  if (anns == NULL)
    return GS_ENOTFOUND;
  err = ann_string(anns, GS_ANN_ALLOCATION, ANN_PATH(GS_ANN_ALLOCATION), &v2, diag);
  if (err == GS_EOK)
    err = ann_string(anns, GS_ANN_LEGACY_IDX, ANN_PATH(GS_ANN_LEGACY_IDX), &idx, diag);
  if (err == GS_EOK)
    err = ann_string(anns, GS_ANN_TOPO_ALLOCATION, ANN_PATH(GS_ANN_TOPO_ALLOCATION), &topo,
                     diag);
  if (err == GS_EOK)
    err = ann_string(anns, GS_ANN_UNIT_MIB, ANN_PATH(GS_ANN_UNIT_MIB), &unit, diag);
  if (err == GS_EOK)
    err = ann_string(anns, GS_ANN_LEGACY_DEV, ANN_PATH(GS_ANN_LEGACY_DEV), &dev, diag);
  if (err != GS_EOK)
    return err;
  if (v2 == NULL && idx == NULL && topo == NULL)
    return GS_ENOTFOUND;

  a = gs_calloc(1, sizeof *a); /* 6 KiB of parts: keep it off the stack */
  if (a == NULL)
    return GS_ENOMEM;
  a->unit_mib = default_unit_mib;
  a->unit_recorded = unit != NULL;
  if (dev == NULL || !gs__api_parse_decimal(dev, GS_API_QUANTITY_MAX, &a->dev_units))
    a->dev_units = 0; /* unknown: the larger reading applies */
  if (unit != NULL) {
    if (strcmp(unit, "1024") == 0) {
      a->unit_mib = GS_UNIT_GIB;
    } else if (strcmp(unit, "128") == 0) {
      a->unit_mib = GS_UNIT_128MIB;
    } else {
      gs_diag_set(diag, ANN_PATH(GS_ANN_UNIT_MIB), "\"%s\" must be \"1024\" or \"128\"", unit);
      err = GS_EPARSE;
      goto out_alloc;
    }
  }
  if (v2 != NULL)
    err = v2_decode(anns, v2, a, diag);
  else if (idx != NULL)
    err = legacy_parts(anns, idx, a, diag);
  else
    err = topo_decode(topo, a, diag);
  if (err == GS_EOK && a->nparts == 0) {
    gs_diag_set(diag,
                v2 != NULL    ? ANN_PATH(GS_ANN_ALLOCATION)
                : idx != NULL ? ANN_PATH(GS_ANN_LEGACY_IDX)
                              : ANN_PATH(GS_ANN_TOPO_ALLOCATION),
                "the allocation is empty");
    err = GS_EPARSE;
  }
  if (err != GS_EOK)
    goto out_alloc;
  qsort(a->parts, a->nparts, sizeof a->parts[0], part_cmp);
  *ret = *a;
out_alloc:
  gs_free(a);
  return err;
}
