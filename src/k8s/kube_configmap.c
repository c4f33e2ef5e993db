/* The start-up read of the gpushare ConfigMap: the allocation unit must be
 * known before the ledger exists, so main asks once, synchronously, and
 * retries with backoff while the apiserver is unreachable or failing. */
#include "k8s.h"

#include "kube_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sleep_ms(uint32_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

enum gs_err gs_kube_configmap_data(struct gs_cluster *cluster, const char *ns, const char *name,
                                   volatile sig_atomic_t *stop, json_t **ret) {
  struct gs__kube *k = cluster->self;
  struct gs__kube_handle h;
  struct gs_buf path = {.max = 64 * 1024}; /* a zero cap refused every byte */
  struct gs__backoff bo;
  enum gs_err err;

  if (gs_buf_str(&path, "/api/v1/namespaces/") != GS_EOK || gs__kube_escape(&path, ns) != GS_EOK ||
      gs_buf_str(&path, "/configmaps/") != GS_EOK || gs__kube_escape(&path, name) != GS_EOK) {
    gs_buf_release(&path);
    return GS_ENOMEM;
  }
  if ((err = gs__kube_handle_init(&h, false)) != GS_EOK) {
    gs_buf_release(&path);
    return err;
  }
  gs__backoff_init(&bo, k->bo_initial_ms ? k->bo_initial_ms : 800,
                   k->bo_max_ms ? k->bo_max_ms : 30000);
  for (;;) {
    struct gs__kube_resp resp = {0};
    struct gs__kube_req req = {.method = "GET", .path = path.p, .timeout_ms = 10000};
    struct gs__kube_status st;
    enum gs_err e = gs__kube_do(&k->conn, &h, &req, &resp);
    if (e == GS_EOK && (resp.code == 200 || resp.code == 404)) {
      json_t *data = NULL;
      if (resp.code == 200) {
        json_t *cm = json_loadb(resp.body.p, resp.body.len, 0, NULL);
        json_t *d = json_object_get(cm, "data");
        if (json_is_object(d))
          data = json_deep_copy(d);
        json_decref(cm);
      }
      gs__kube_log(GS_LVL_INFO, resp.code == 200 ? "configuration read" : "no ConfigMap: defaults",
                   "configmap=%s/%s", ns, name);
      gs__kube_resp_release(&resp);
      *ret = data;
      err = GS_EOK;
      break;
    }
    if (e == GS_EOK) {
      gs__kube_status_decode(resp.body.p, resp.body.len, resp.code, &st);
      gs__kube_log(GS_LVL_WARN, "cannot read the ConfigMap; retrying",
                   "configmap=%s/%s code=%ld message=\"%s\"", ns, name, resp.code, st.message);
    } else {
      gs__kube_log(GS_LVL_WARN, "apiserver unreachable; retrying", "configmap=%s/%s error=\"%s\"",
                   ns, name, resp.error[0] ? resp.error : gs_strerror(e));
    }
    gs__kube_resp_release(&resp);
    if (*stop) {
      err = GS_EAGAIN;
      break;
    }
    sleep_ms(gs__backoff_next(&bo, gs__kube_now_ms()));
    if (*stop) {
      err = GS_EAGAIN;
      break;
    }
  }
  gs__kube_handle_release(&h);
  gs_buf_release(&path);
  return err;
}
