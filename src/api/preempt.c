/* The preempt verb's wire format (docs/kube-protocol.md, "Preemption
 * types"): ExtenderPreemptionArgs in, ExtenderPreemptionResult out. */
#include "api_internal.h"

#include <gpushare/alloc.h>

#include <stdio.h>
#include <string.h>

/* A victim's UID: Meta form {"UID":"..."}, full form a Pod's metadata.uid. */
static enum gs_err victim_uid(const json_t *v, bool meta, const char *path, const char **ret,
                              struct gs_diag *diag) {
  char where[GS__API_PATH_MAX];
  const json_t *holder = v;
  const char *uid;
  enum gs_err err;
  if (!json_is_object(v)) {
    gs_diag_set(diag, path, "must be an object");
    return GS_EPARSE;
  }
  if (!meta) {
    gs__api_path(where, "%s.metadata", path);
    err = gs__api_get_object(v, "metadata", path, &holder, diag);
    if (err != GS_EOK)
      return err;
    if (holder == NULL) {
      gs_diag_set(diag, where, "missing pod metadata");
      return GS_EPARSE;
    }
  } else {
    gs__api_path(where, "%s", path);
  }
  err = gs__api_get_string(holder, meta ? "UID" : "uid", where, &uid, diag);
  if (err != GS_EOK)
    return err;
  gs__api_path(where, meta ? "%s.UID" : "%s.metadata.uid", path);
  if (uid == NULL || uid[0] == '\0') {
    gs_diag_set(diag, where, "missing victim UID");
    return GS_EPARSE;
  }
  if (strlen(uid) > GS_UID_MAX) {
    gs_diag_set(diag, where, "UID is longer than %d bytes", GS_UID_MAX);
    return GS_ETOOBIG;
  }
  *ret = uid;
  return GS_EOK;
}

/* One node's {"Pods":[...],"NumPDBViolations":n}. */
static enum gs_err victims_decode(const json_t *v, bool meta, const char *path,
                                  struct gs_api_preempt_node *n, const char **store,
                                  size_t *used, struct gs_diag *diag) {
  char where[GS__API_PATH_MAX];
  const json_t *pods, *pdb, *p;
  size_t i;
  enum gs_err err;
  if (!json_is_object(v)) {
    gs_diag_set(diag, path, "must be an object {\"Pods\":[...],\"NumPDBViolations\":n}");
    return GS_EPARSE;
  }
  err = gs__api_get_array(v, "Pods", path, &pods, diag);
  if (err != GS_EOK)
    return err;
  pdb = gs__api_get(v, "NumPDBViolations");
  gs__api_path(where, "%s.NumPDBViolations", path);
  if (pdb != NULL && !json_is_null(pdb) && (!json_is_integer(pdb) || json_integer_value(pdb) < 0)) {
    gs_diag_set(diag, where, "must be a non-negative integer");
    return GS_EPARSE;
  }
  n->pdb_violations = json_is_integer(pdb) ? (int64_t)json_integer_value(pdb) : 0;
  n->uids = store + *used;
  n->nvictims = 0;
  json_array_foreach(pods, i, p) {
    gs__api_path(where, "%s.Pods[%zu]", path, i);
    err = victim_uid(p, meta, where, &store[*used], diag);
    if (err != GS_EOK)
      return err;
    (*used)++;
    n->nvictims++;
  }
  return GS_EOK;
}

enum gs_err gs_api_preempt_args_decode(const char *body, size_t len,
                                       struct gs_api_preempt_args *ret, struct gs_diag *diag) {
  struct gs_api_preempt_args a;
  const json_t *full, *meta, *map, *v;
  const char *key;
  size_t total = 0, used = 0, k = 0;
  enum gs_err err;

  memset(&a, 0, sizeof a);
  err = gs__api_body_pod(body, len, "ExtenderPreemptionArgs", &a.root, &a.pod, diag);
  if (err != GS_EOK)
    return err;
  full = gs__api_get(a.root, "NodeNameToVictims");
  meta = gs__api_get(a.root, "NodeNameToMetaVictims");
  if (full != NULL && json_is_null(full))
    full = NULL;
  if (meta != NULL && json_is_null(meta))
    meta = NULL;
  if (full != NULL && meta != NULL) {
    gs_diag_set(diag, "NodeNameToVictims",
                "only one of NodeNameToVictims and NodeNameToMetaVictims may be set");
    err = GS_EPARSE;
    goto fail;
  }
  a.meta = meta != NULL;
  map = meta != NULL ? meta : full;
  if (map != NULL && !json_is_object(map)) {
    gs_diag_set(diag, a.meta ? "NodeNameToMetaVictims" : "NodeNameToVictims",
                "must be an object {\"<node>\":{\"Pods\":[...]}}");
    err = GS_EPARSE;
    goto fail;
  }
  if (map != NULL) {
    json_object_foreach((json_t *)map, key, v) {
      const json_t *pods = json_is_object(v) ? gs__api_get(v, "Pods") : NULL;
      total += json_is_array(pods) ? json_array_size(pods) : 0;
    }
    a.nnodes = json_object_size(map);
  }
  a.nodes = gs_calloc(a.nnodes ? a.nnodes : 1, sizeof *a.nodes);
  a.store = gs_calloc(total ? total : 1, sizeof *a.store);
  if (a.nodes == NULL || a.store == NULL) {
    gs_diag_set(diag, "ExtenderPreemptionArgs", "out of memory");
    err = GS_ENOMEM;
    goto fail;
  }
  if (map != NULL) {
    json_object_foreach((json_t *)map, key, v) {
      char path[GS__API_PATH_MAX];
      gs__api_path(path, "%s[\"%s\"]", a.meta ? "NodeNameToMetaVictims" : "NodeNameToVictims",
                   key);
      if (key[0] == '\0' || strlen(key) > GS_NAME_MAX) {
        gs_diag_set(diag, path, "node name must be 1 to %d bytes", GS_NAME_MAX);
        err = GS_EPARSE;
        goto fail;
      }
      a.nodes[k].node = key;
      err = victims_decode(v, a.meta, path, &a.nodes[k], a.store, &used, diag);
      if (err != GS_EOK)
        goto fail;
      k++;
    }
  }
  *ret = a;
  return GS_EOK;
fail:
  gs_api_preempt_args_release(&a);
  return err;
}

void gs_api_preempt_args_release(struct gs_api_preempt_args *args) {
  if (args == NULL)
    return;
  gs_free(args->nodes);
  gs_free((void *)args->store);
  json_decref(args->root);
  memset(args, 0, sizeof *args);
}

char *gs_api_preempt_result_dump(const struct gs_api_preempt_node *nodes, size_t n) {
  json_t *root = json_object(), *map = json_object();
  char *out = NULL;
  bool ok = root != NULL && map != NULL && json_object_set(root, "NodeNameToMetaVictims", map) == 0;
  for (size_t i = 0; ok && i < n; i++) {
    json_t *mv = json_object(), *pods = json_array();
    ok = mv != NULL && pods != NULL && json_object_set(mv, "Pods", pods) == 0 &&
         json_object_set_new(mv, "NumPDBViolations", json_integer(nodes[i].pdb_violations)) == 0 &&
         json_object_set(map, nodes[i].node, mv) == 0;
    for (size_t j = 0; ok && j < nodes[i].nvictims; j++) {
      json_t *mp = json_pack("{s:s}", "UID", nodes[i].uids[j]);
      ok = mp != NULL && json_array_append_new(pods, mp) == 0;
    }
    json_decref(mv);
    json_decref(pods);
  }
  if (ok)
    out = gs__api_dump(root);
  json_decref(map);
  json_decref(root);
  return out;
}
