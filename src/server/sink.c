/* The server's sink: the cluster's nodes, pods and ConfigMaps, decoded and
 * handed to the scheduler service; and the service's notices, logged and
 * posted as Events. */
#include "server_int.h"
#include "feed.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define UNHEALTHY_PREFIX "unhealthy-gpu-"
#define UNHEALTHY_NS "kube-system"

/* ---- the sink: cluster events ------------------------------------------ */

/* Parses "0,2" into a mask; junk entries are skipped. */
static uint64_t parse_gpu_list(const char *text) {
  uint64_t mask = 0;
  while (text != NULL && *text) {
    char *end;
    unsigned long v = strtoul(text, &end, 10);
    if (end != text && v < GS_MAX_GPUS)
      mask |= UINT64_C(1) << v;
    text = end == text ? text + 1 : end;
  }
  return mask;
}

static void sink_node_upsert(void *ctx, const json_t *node) {
  struct gs_server *s = ctx;
  gs__feed_node(s->sched, node);
}

static void sink_node_delete(void *ctx, const char *name) {
  struct gs_server *s = ctx;
  gs__feed_node_delete(s->sched, name);
}

static void sink_pod_upsert(void *ctx, const json_t *pod) {
  struct gs_server *s = ctx;
  gs__feed_pod(s->sched, pod);
}

/* What the service reports from its tick (a gang timed out): a log line
 * for the gang, a Warning Event on each member not bound. Runs with the
 * ledger locked: the event is only queued here. */
void gs__server_on_notice(void *ctx, const struct gs_notice *n) {
  struct gs_server *s = ctx;
  json_t *obj;
  if (n->kind != GS_NOTICE_GANG_TIMEOUT)
    return;
  if (n->pod == NULL) {
    gs_log(GS_LVL_WARN, "gang timed out", "job=%s/%s message=\"%s\"", n->ns, n->job,
           n->message);
    return;
  }
  obj = json_pack("{s:{s:s, s:s, s:s}}", "metadata", "namespace", n->ns, "name", n->pod, "uid",
                  n->pod_uid);
  if (obj != NULL && s->cluster.ops->event != NULL)
    s->cluster.ops->event(s->cluster.self, obj, "GangTimeout", n->message);
  json_decref(obj);
}

static void sink_pod_delete(void *ctx, const json_t *pod) {
  struct gs_server *s = ctx;
  gs_sched_pod_gone(s->sched, gs_api_pod_uid(pod));
}

static bool is_config_cm(const struct gs_server *s, const json_t *cm) {
  const char *ns = gs__meta_str(cm, "namespace"), *name = gs__meta_str(cm, "name");
  return ns && name && strcmp(ns, s->cfg.configmap_ns) == 0 &&
         strcmp(name, s->cfg.configmap_name) == 0;
}

static const char *unhealthy_node(const json_t *cm) {
  const char *ns = gs__meta_str(cm, "namespace"), *name = gs__meta_str(cm, "name");
  if (ns == NULL || name == NULL || strcmp(ns, UNHEALTHY_NS) != 0 ||
      strncmp(name, UNHEALTHY_PREFIX, strlen(UNHEALTHY_PREFIX)) != 0)
    return NULL;
  return name + strlen(UNHEALTHY_PREFIX);
}

static void set_unhealthy(struct gs_server *s, const char *node, uint64_t mask) {
  enum gs_err err = gs_sched_set_unhealthy(s->sched, node, mask);
  if (err == GS_EOK)
    gs_log(GS_LVL_INFO, "unhealthy GPUs updated", "node=%s mask=0x%" PRIx64, node, mask);
  else
    gs_log(GS_LVL_WARN, "cannot record unhealthy GPUs", "node=%s error=\"%s\"", node,
           gs_strerror(err));
}

static void sink_configmap_upsert(void *ctx, const json_t *cm) {
  struct gs_server *s = ctx;
  const json_t *data = json_object_get(cm, "data");
  const char *node;

  if (is_config_cm(s, cm)) {
    uint32_t unit = 0;
    const char *text = json_string_value(json_object_get(data, "gpuMemoryUnit"));
    unsigned pending = 0;
    if (text != NULL && gs_unit_parse(text, &unit) != GS_EOK)
      gs_log(GS_LVL_WARN, "invalid gpuMemoryUnit in ConfigMap", "value=\"%s\"", text);
    else if (s->cfg.unit_override_mib == 0 && unit != 0 && unit != gs_sched_policy(s->sched)->unit_mib)
      pending = unit;
    if (atomic_exchange(&s->pending_unit, pending) != pending && pending != 0)
      gs_log(GS_LVL_WARN, "gpuMemoryUnit changed; it applies at restart", "pendingUnit=%s",
             gs_unit_name(pending));
    return;
  }
  node = unhealthy_node(cm);
  if (node != NULL)
    set_unhealthy(s, node, parse_gpu_list(json_string_value(json_object_get(data, "gpus"))));
}

static void sink_configmap_delete(void *ctx, const json_t *cm) {
  struct gs_server *s = ctx;
  const char *node = unhealthy_node(cm);
  if (node != NULL)
    set_unhealthy(s, node, 0);
  else if (is_config_cm(s, cm))
    atomic_store(&s->pending_unit, 0);
}

static void sink_synced(void *ctx) {
  struct gs_server *s = ctx;
  if (!atomic_exchange(&s->synced, true))
    gs_log(GS_LVL_INFO, "cache synced", "nodes=%s", "ready");
}

static void sink_leader(void *ctx, bool is_leader) {
  struct gs_server *s = ctx;
  if (atomic_exchange(&s->leader, is_leader) != is_leader)
    gs_log(GS_LVL_INFO, is_leader ? "became leader" : "lost leadership", "%s", "");
}

struct gs_cluster_sink gs__server_sink(struct gs_server *s) {
  return (struct gs_cluster_sink){
      .ctx = s,
      .node_upsert = sink_node_upsert,
      .node_delete = sink_node_delete,
      .pod_upsert = sink_pod_upsert,
      .pod_delete = sink_pod_delete,
      .configmap_upsert = sink_configmap_upsert,
      .configmap_delete = sink_configmap_delete,
      .synced = sink_synced,
      .leader = sink_leader,
  };
}
