/* The server's sink: the cluster's nodes, pods and ConfigMaps, decoded and
 * handed to the scheduler service; and the service's notices, logged and
 * posted as Events. */
#include "server_int.h"
#include "feed.h"
#include "dra.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void sink_node_upsert(void *ctx, const json_t *node) {
  struct gs_server *s = ctx;
  gs__feed_node(s->sched, node);
  gs__hosts_node(s->hosts, node);
}

static void sink_node_delete(void *ctx, const char *name) {
  struct gs_server *s = ctx;
  gs__feed_node_delete(s->sched, name);
  gs__hosts_node_delete(s->hosts, name);
}

static void sink_pod_upsert(void *ctx, const json_t *pod) {
  struct gs_server *s = ctx;
  gs__feed_pod(s->sched, pod);
  gs__hosts_pod(s->hosts, pod);
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
  gs__hosts_pod_delete(s->hosts, pod);
}

static struct gs__feed_cm feed_cm(const struct gs_server *s) {
  return (struct gs__feed_cm){s->cfg.configmap_ns, s->cfg.configmap_name,
                              s->cfg.unit_override_mib};
}

static void sink_configmap_upsert(void *ctx, const json_t *cm) {
  struct gs_server *s = ctx;
  struct gs__feed_cm f = feed_cm(s);
  char text[GS_FEED_CONFIG_ERROR_MAX];
  json_t *obj;
  if (!gs__feed_configmap(s->sched, &f, cm, &s->config) ||
      !gs__feed_config_error(&s->config, text, sizeof text))
    return;
  /* a Warning Event on the ConfigMap, once per new error */
  obj = json_pack("{s:s,s:{s:s?,s:s?,s:s?}}", "kind", "ConfigMap", "metadata", "namespace",
                  gs__meta_str(cm, "namespace"), "name", gs__meta_str(cm, "name"), "uid",
                  gs__meta_str(cm, "uid"));
  if (obj != NULL && s->cluster.ops->event != NULL)
    s->cluster.ops->event(s->cluster.self, obj, "InvalidConfiguration", text);
  json_decref(obj);
}

static void sink_configmap_delete(void *ctx, const json_t *cm) {
  struct gs_server *s = ctx;
  struct gs__feed_cm f = feed_cm(s);
  gs__feed_configmap_delete(s->sched, &f, cm, &s->config);
}

static void sink_slice_upsert(void *ctx, const json_t *slice) {
  struct gs_server *s = ctx;
  gs__dra_slice(s->dra, s->sched, slice);
}

static void sink_slice_delete(void *ctx, const json_t *slice) {
  struct gs_server *s = ctx;
  gs__dra_slice_delete(s->dra, s->sched, slice);
}

static void sink_claim_upsert(void *ctx, const json_t *claim) {
  struct gs_server *s = ctx;
  gs__dra_claim(s->dra, s->sched, claim);
}

static void sink_claim_delete(void *ctx, const json_t *claim) {
  struct gs_server *s = ctx;
  gs__dra_claim_delete(s->dra, s->sched, claim);
}

static void sink_pdb_upsert(void *ctx, const json_t *pdb) {
  struct gs_server *s = ctx;
  gs__feed_pdb(s->sched, pdb);
}

static void sink_pdb_delete(void *ctx, const json_t *pdb) {
  struct gs_server *s = ctx;
  gs__feed_pdb_delete(s->sched, pdb);
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
      .slice_upsert = sink_slice_upsert,
      .slice_delete = sink_slice_delete,
      .claim_upsert = sink_claim_upsert,
      .claim_delete = sink_claim_delete,
      .synced = sink_synced,
      .leader = sink_leader,
      .pdb_upsert = sink_pdb_upsert,
      .pdb_delete = sink_pdb_delete,
  };
}
