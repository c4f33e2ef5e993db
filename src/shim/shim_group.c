/* gs_shim_preempt_group (shim.h): a pod group's preemption, the members'
 * slots held (gs_sched_preempt_group; docs/gangs.md "Preemption",
 * docs/preemption.md "Pod groups' slots are held"). JSON in and out; the
 * core decides. */
#include "shim_int.h"

#include "api.h"

#include <gpushare/alloc.h>
#include <gpushare/sched.h>

#include <stdint.h>
#include <stdio.h>

#define GROUP_MEMBERS_MAX 1024 /* as gpu-topology-replica allows */

/* members: a JSON array of Pods into *ret (heap, gs_free), *ret_n. */
static bool decode_members(const char *json, size_t len, struct gs_pod_request **ret,
                           size_t *ret_n, char *reason) {
  struct gs_diag diag = {"", ""};
  json_t *arr = json != NULL && len > 0 ? json_loadb(json, len, 0, NULL) : NULL;
  struct gs_pod_request *m = NULL;
  size_t n = json_is_array(arr) ? json_array_size(arr) : 0;
  bool ok = false;
  if (n == 0 || n > GROUP_MEMBERS_MAX) {
    snprintf(reason, GS_SHIM_REASON, "invalid members: a JSON array of 1 to %d Pods",
             GROUP_MEMBERS_MAX);
    goto free_arr;
  }
  m = gs_calloc(n, sizeof *m);
  if (m == NULL) {
    snprintf(reason, GS_SHIM_REASON, "out of memory");
    goto free_arr;
  }
  for (size_t i = 0; i < n; i++)
    if (gs_api_pod_decode(json_array_get(arr, i), &m[i], &diag) != GS_EOK) {
      snprintf(reason, GS_SHIM_REASON, "invalid member %zu: %.100s: %.120s", i, diag.where,
               diag.text);
      goto free_arr;
    }
  *ret = m;
  *ret_n = n;
  m = NULL;
  ok = true;
free_arr:
  gs_free(m);
  json_decref(arr);
  return ok;
}

char *gs_shim_preempt_group(struct gs_shim *s, const char *pod, size_t len, const char *members,
                            size_t mlen, const char *const *nodes, size_t n, int64_t now_ns,
                            char *reason) {
  struct gs_diag diag = {"", ""};
  struct gs_status st = {GS_EOK, GS_R_OTHER, ""};
  struct gs_pod_request req, *m = NULL;
  struct gs_victim *victims = NULL;
  size_t nm = 0, nvictims = 0, *at = NULL;
  json_t *obj = pod != NULL && len > 0 ? json_loadb(pod, len, 0, NULL) : NULL;
  json_t *doc = NULL, *vlist = NULL, *mlist = NULL;
  char *out = NULL;
  enum gs_err e = obj != NULL ? gs_api_pod_decode(obj, &req, &diag) : GS_EPARSE;
  json_decref(obj);
  reason[0] = '\0';
  if (e != GS_EOK) {
    if (diag.text[0] == '\0')
      snprintf(reason, GS_SHIM_REASON, "invalid Pod: not JSON");
    else
      snprintf(reason, GS_SHIM_REASON, "invalid Pod: %.100s: %.130s", diag.where, diag.text);
    return NULL;
  }
  if (!decode_members(members, mlen, &m, &nm, reason))
    return NULL;
  at = gs_calloc(nm, sizeof *at);
  if (at == NULL) {
    snprintf(reason, GS_SHIM_REASON, "out of memory");
    goto done;
  }
  e = gs_sched_preempt_group(gs__shim_sched(s), &req, m, nm, nodes, n, now_ns, &victims,
                             &nvictims, at, &st);
  if (e != GS_EOK) {
    snprintf(reason, GS_SHIM_REASON, "%s", e == GS_ENOMEM ? "out of memory" : st.reason);
    goto done;
  }
  vlist = json_array();
  mlist = json_array();
  if (vlist == NULL || mlist == NULL)
    goto done;
  for (size_t v = 0; v < nvictims; v++)
    json_array_append_new(vlist, json_pack("{s:s,s:s,s:s}", "namespace", victims[v].ns, "name",
                                           victims[v].name, "uid", victims[v].uid));
  for (size_t i = 0; i < nm; i++)
    json_array_append_new(mlist, json_pack("{s:s,s:s,s:s}", "namespace", m[i].ns, "name",
                                           m[i].name, "node", at[i] < n ? nodes[at[i]] : ""));
  doc = json_pack("{s:O,s:O,s:s}", "victims", vlist, "members", mlist, "held", st.reason);
  out = doc != NULL ? gs_api_dump(doc) : NULL;
  if (out == NULL)
    snprintf(reason, GS_SHIM_REASON, "out of memory");
done:
  json_decref(doc);
  json_decref(vlist);
  json_decref(mlist);
  gs_free(victims);
  gs_free(at);
  gs_free(m);
  return out;
}
