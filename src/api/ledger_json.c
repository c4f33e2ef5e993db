/* Ledger views (docs/contract.md §5): the /debug/ledger object and the
 * Aliyun-compatible inspect object.
 *
 * Both read the ledger through its public views only. Ordering is fixed so
 * that equal ledgers give equal bytes: nodes by name (the ledger's order),
 * GPUs by index, pods by namespace, name (UID) and container.
 *
 * /debug/ledger shows MiB exactly as the ledger keeps them. Whole-GPU
 * (topology) allocations charge no memory, so their pod entries show
 * "usedMiB":0 and the GPU's "owner" names the pod.
 *
 * DRA claims charged to a GPU (docs/dra.md) are listed beside its pods, in
 * "claims" (present only on a GPU that has some, so a ledger without
 * claims reads as before): {"namespace","name","uid","usedMiB"} plus
 * "whole":true for a claim holding the whole device; inspect lists them
 * the same way ({"name","namespace","usedGPU"}).
 *
 * Inspect shows amounts in the ledger's active unit like Aliyun's
 * `kubectl inspect gpushare`: every GPU's and every pod's MiB are divided
 * by the unit and rounded down (128 MiB viewed in 1 GiB units is 0); a
 * node's totals are the sums of its GPUs' figures, so the table adds up.
 */
#include "api_internal.h"
#include "alloc.h"

#include <stdlib.h>
#include <string.h>

/* One (allocation, part) on a node. */
struct entry {
  const struct gs_alloc *alloc;
  const struct gs_alloc_part *part;
};

static int entry_cmp(const void *a, const void *b) {
  const struct entry *x = a, *y = b;
  int c;
  if (x->part->gpu != y->part->gpu)
    return x->part->gpu < y->part->gpu ? -1 : 1;
  if ((c = strcmp(x->alloc->ns, y->alloc->ns)) != 0)
    return c;
  if ((c = strcmp(x->alloc->name, y->alloc->name)) != 0)
    return c;
  /* UID before container: a pod recreated under the same name stays in
   * one run, which inspect relies on to add up a pod's parts */
  if ((c = strcmp(x->alloc->uid, y->alloc->uid)) != 0)
    return c;
  if (x->part->container != y->part->container)
    return x->part->container < y->part->container ? -1 : 1;
  return 0;
}

/* Every part of every allocation on node, sorted by GPU then pod. The
 * array is malloc'd (NULL with *ret_n 0 when there are none). */
static enum gs_err node_entries(const struct gs_ledger *ledger, const char *node,
                                struct entry **ret, size_t *ret_n) {
  size_t nallocs = gs_ledger_node_alloc_count(ledger, node), n = 0, cap = 0;
  struct entry *out = NULL;
  for (size_t i = 0; i < nallocs; i++) {
    const struct gs_alloc *a = gs_ledger_node_alloc_at(ledger, node, i);
    if (a != NULL)
      cap += a->nparts;
  }
  if (cap > 0) {
    out = gs_malloc(cap * sizeof *out);
    if (out == NULL)
      return GS_ENOMEM;
  }
  for (size_t i = 0; i < nallocs; i++) {
    const struct gs_alloc *a = gs_ledger_node_alloc_at(ledger, node, i);
    for (uint32_t p = 0; a != NULL && p < a->nparts && n < cap; p++) {
      out[n].alloc = a;
      out[n].part = &a->parts[p];
      n++;
    }
  }
  if (n > 1)
    qsort(out, n, sizeof *out, entry_cmp);
  *ret = out;
  *ret_n = n;
  return GS_EOK;
}

/* json_object_set_new that remembers a failure in *ok. */
static void put(json_t *obj, const char *key, json_t *value, bool *ok) {
  if (json_object_set_new(obj, key, value) != 0)
    *ok = false;
}

static void append(json_t *arr, json_t *value, bool *ok) {
  if (json_array_append_new(arr, value) != 0)
    *ok = false;
}

/* A new object and a new array, both or neither (false: out of memory). */
static bool object_and_array(json_t **ret_obj, json_t **ret_arr) {
  json_t *o = json_object(), *a = json_array();
  if (o == NULL || a == NULL) {
    json_decref(o);
    json_decref(a);
    return false;
  }
  *ret_obj = o;
  *ret_arr = a;
  return true;
}

/* A new object appended to arr and a new array for its pods in *ret_pods
 * (the caller puts it among its keys, for their order): NULL, and *ok
 * false, when either could not be made. */
static json_t *append_with_pods(json_t *arr, json_t **ret_pods, bool *ok) {
  json_t *o = json_object(), *pods = json_array();
  append(arr, o, ok);
  if (o == NULL || pods == NULL) {
    json_decref(pods);
    *ok = false;
    return NULL;
  }
  *ret_pods = pods;
  return o;
}

static json_t *u64(uint64_t v) {
  return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* ---- /debug/ledger -------------------------------------------------------- */

static json_t *owner_json(const struct gs_alloc *owner, bool *ok) {
  json_t *o;
  if (owner == NULL)
    return json_null();
  o = json_object();
  if (o == NULL)
    return NULL;
  put(o, "namespace", gs__api_text(owner->ns), ok);
  put(o, "name", gs__api_text(owner->name), ok);
  put(o, "uid", gs__api_text(owner->uid), ok);
  return o;
}

/* The GPU's "claims" list, made on first use (a borrowed reference). */
static json_t *claims_of(json_t *gpu, bool *ok) {
  json_t *c = json_object_get(gpu, "claims");
  if (c == NULL) {
    c = json_array();
    put(gpu, "claims", c, ok);
    c = json_object_get(gpu, "claims");
    if (c == NULL)
      *ok = false;
  }
  return c;
}

/* The first of entries[e..n) on GPU gpu or after: entries are sorted by GPU,
 * and parts on GPUs before it (orphans of a node that shrank never match any
 * GPU) are passed over. */
static size_t entries_at(const struct entry *entries, size_t n, size_t e, uint32_t gpu) {
  while (e < n && entries[e].part->gpu < gpu)
    e++;
  return e;
}

/* A new row for a, appended to the GPU's list of its kind: pods, or gpu's
 * "claims" for a claim; NULL, and *ok false, when out of memory. */
static json_t *row_of(json_t *gpu, json_t *pods, const struct gs_alloc *a, bool *ok) {
  json_t *list = a->kind == GS_ALLOC_CLAIM ? claims_of(gpu, ok) : pods, *row;
  if (list == NULL)
    return NULL;
  row = json_object();
  append(list, row, ok);
  return row;
}

static json_t *ledger_node_json(const struct gs_ledger *ledger, const struct gs_node *node,
                                bool *ok) {
  json_t *o, *gpus;
  struct entry *entries = NULL;
  size_t n = 0, e = 0;

  if (!object_and_array(&o, &gpus))
    return NULL;
  put(o, "name", gs__api_text(node->name), ok);
  put(o, "mode", json_string(gs_mode_name(node->mode)), ok);
  put(o, "placement", json_string(gs_placement_name(node->placement)), ok);
  put(o, "gpus", gpus, ok);
  if (node_entries(ledger, node->name, &entries, &n) != GS_EOK) {
    *ok = false;
    return o;
  }
  for (uint32_t i = 0; i < node->ngpus; i++) {
    const struct gs_gpu *g = &node->gpus[i];
    json_t *pods, *gj = append_with_pods(gpus, &pods, ok);
    if (gj == NULL)
      break;
    put(gj, "index", json_integer(g->index), ok);
    put(gj, "totalMiB", u64(g->total_mib), ok);
    put(gj, "usedMiB", u64(g->used_mib), ok);
    put(gj, "healthy", json_boolean(g->healthy), ok);
    if (node->mode == GS_MODE_TOPOLOGY)
      put(gj, "owner", owner_json(g->owner, ok), ok);
    put(gj, "pods", pods, ok);
    for (e = entries_at(entries, n, e, g->index); e < n && entries[e].part->gpu == g->index; e++) {
      const struct gs_alloc *a = entries[e].alloc;
      bool claim = a->kind == GS_ALLOC_CLAIM;
      json_t *pj = row_of(gj, pods, a, ok);
      if (pj == NULL)
        break;
      put(pj, "namespace", gs__api_text(a->ns), ok);
      put(pj, "name", gs__api_text(a->name), ok);
      put(pj, "uid", gs__api_text(a->uid), ok);
      if (!claim)
        put(pj, "container", json_integer(entries[e].part->container), ok);
      put(pj, "usedMiB", u64(gs_ledger_part_charge_mib(g, a, entries[e].part)), ok);
      if (claim && entries[e].part->units == GS_CLAIM_WHOLE)
        put(pj, "whole", json_true(), ok);
    }
  }
  gs_free(entries);
  return o;
}

enum gs_err gs_api_ledger_json(const struct gs_ledger *ledger, const char *node,
                               const struct gs_api_ledger_view *view, json_t **ret) {
  json_t *root, *nodes;
  const struct gs_node *only = NULL;
  bool ok = true;
  uint32_t unit;

  if (ledger == NULL || ret == NULL)
    return GS_EINVAL;
  if (view != NULL && view->gangs != NULL && !json_is_array(view->gangs))
    return GS_EINVAL;
  if (node != NULL) {
    only = gs_ledger_node_get(ledger, node);
    if (only == NULL)
      return GS_ENOTFOUND;
  }
  unit = gs_ledger_unit_mib(ledger);
  if (!object_and_array(&root, &nodes))
    return GS_ENOMEM;
  put(root, "unit", json_string(gs_unit_name(unit)), &ok);
  put(root, "unitMiB", json_integer(unit), &ok);
  if (view != NULL && view->pending_unit_mib != 0)
    put(root, "pendingUnit", json_string(gs_unit_name(view->pending_unit_mib)), &ok);
  if (view != NULL && view->config_error != NULL)
    put(root, "configError", json_string(view->config_error), &ok);
  put(root, "nodes", nodes, &ok);
  if (only != NULL) {
    append(nodes, ledger_node_json(ledger, only, &ok), &ok);
  } else {
    for (size_t i = 0, n = gs_ledger_node_count(ledger); i < n && ok; i++)
      append(nodes, ledger_node_json(ledger, gs_ledger_node_at(ledger, i), &ok), &ok);
  }
  if (view != NULL && view->gangs != NULL) {
    if (json_object_set(root, "gangs", view->gangs) != 0)
      ok = false;
  } else {
    put(root, "gangs", json_array(), &ok);
  }
  if (!ok) {
    json_decref(root);
    return GS_ENOMEM;
  }
  *ret = root;
  return GS_EOK;
}

/* ---- inspect ---------------------------------------------------------------- */

static json_t *inspect_node_json(const struct gs_ledger *ledger, const struct gs_node *node,
                                 uint32_t unit, bool *ok) {
  json_t *o, *devs;
  struct entry *entries = NULL;
  uint64_t total = 0, used = 0;
  size_t n = 0, e = 0;

  if (!object_and_array(&o, &devs))
    return NULL;
  if (node_entries(ledger, node->name, &entries, &n) != GS_EOK) {
    *ok = false;
    json_decref(devs);
    return o;
  }
  for (uint32_t i = 0; i < node->ngpus; i++) {
    const struct gs_gpu *g = &node->gpus[i];
    json_t *pods, *dj = append_with_pods(devs, &pods, ok);
    if (dj == NULL)
      break;
    put(dj, "id", json_integer(g->index), ok);
    put(dj, "totalGPU", u64(g->total_mib / unit), ok);
    put(dj, "usedGPU", u64(g->used_mib / unit), ok);
    put(dj, "pods", pods, ok);
    total += g->total_mib / unit;
    used += g->used_mib / unit;
    /* One row per pod on this GPU: its containers' parts added up. */
    e = entries_at(entries, n, e, g->index);
    while (e < n && entries[e].part->gpu == g->index) {
      const struct gs_alloc *a = entries[e].alloc;
      uint64_t mib = 0;
      json_t *pj;
      for (; e < n && entries[e].part->gpu == g->index && entries[e].alloc == a; e++)
        mib += gs_ledger_part_charge_mib(g, a, entries[e].part);
      if ((pj = row_of(dj, pods, a, ok)) == NULL)
        break;
      put(pj, "name", gs__api_text(a->name), ok);
      put(pj, "namespace", gs__api_text(a->ns), ok);
      put(pj, "usedGPU", u64(mib / unit), ok);
    }
  }
  gs_free(entries);
  put(o, "name", gs__api_text(node->name), ok);
  put(o, "totalGPU", u64(total), ok);
  put(o, "usedGPU", u64(used), ok);
  put(o, "devs", devs, ok);
  return o;
}

enum gs_err gs_api_inspect_json(const struct gs_ledger *ledger, const char *node,
                                json_t **ret) {
  json_t *root, *nodes;
  const struct gs_node *only = NULL;
  bool ok = true;
  uint32_t unit;

  if (ledger == NULL || ret == NULL)
    return GS_EINVAL;
  if (node != NULL) {
    only = gs_ledger_node_get(ledger, node);
    if (only == NULL || only->mode == GS_MODE_NONE)
      return GS_ENOTFOUND;
  }
  unit = gs_ledger_unit_mib(ledger);
  if (unit == 0)
    return GS_EINVAL;
  if (!object_and_array(&root, &nodes))
    return GS_ENOMEM;
  put(root, "nodes", nodes, &ok);
  if (only != NULL) {
    append(nodes, inspect_node_json(ledger, only, unit, &ok), &ok);
  } else {
    for (size_t i = 0, n = gs_ledger_node_count(ledger); i < n && ok; i++) {
      const struct gs_node *nd = gs_ledger_node_at(ledger, i);
      if (nd->mode != GS_MODE_NONE)
        append(nodes, inspect_node_json(ledger, nd, unit, &ok), &ok);
    }
  }
  if (!ok) {
    json_decref(root);
    return GS_ENOMEM;
  }
  *ret = root;
  return GS_EOK;
}

void gs_api_plan_append(json_t *gangs, const struct gs_plan_view *g) {
  char job[GS_NS_MAX + GS_NAME_MAX + 2];
  json_t *nodes = json_object();
  if (gangs == NULL || nodes == NULL) {
    json_decref(nodes);
    return;
  }
  for (uint32_t r = 0; r < g->nslots; r++) {
    json_t *list = json_object_get(nodes, g->slot_nodes[r]);
    if (list == NULL) {
      list = json_array();
      json_object_set_new(nodes, g->slot_nodes[r], list);
    }
    for (uint32_t b = 0; b < GS_MAX_GPUS; b++)
      if (g->slot_gpus[r] & (UINT64_C(1) << b))
        json_array_append_new(list, json_integer(b));
  }
  snprintf(job, sizeof job, "%s/%s", g->ns, g->job);
  json_array_append_new(gangs, json_pack("{s:s,s:I,s:I,s:o}", "job", job, "replicas",
                                         (json_int_t)g->replicas, "placed",
                                         (json_int_t)g->placed, "nodes", nodes));
}
