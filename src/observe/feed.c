/* The cluster's objects, decoded (src/api) and handed to the scheduler
 * service: what the extender's sink does for its watch, and what the
 * scheduling-framework plugin does for kube-scheduler's informers
 * (plugins/scheduler). Logs what it ignores. */
#include "feed.h"

#include "api.h"
#include "config.h"
#include "log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *meta_str(const json_t *obj, const char *key) {
  return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

/* A bound pod's allocation as read from its annotations (a borrows). */
static struct gs_alloc bound_alloc(const json_t *pod, const struct gs_api_alloc *a,
                                   const char *uid, const char *node) {
  return (struct gs_alloc){
      .ns = gs_api_pod_ns(pod),
      .name = gs_api_pod_name(pod),
      .uid = uid,
      .node = node,
      .kind = a->kind,
      .state = GS_ALLOC_BOUND,
      /* not recorded on the pod (another scheduler bound it): inferred
       * against its node's GPUs (gs_ledger_restore) */
      .unit_mib = a->unit_recorded || a->kind == GS_ALLOC_WHOLE ? a->unit_mib : 0,
      .assume_time_ns = a->assume_time_ns,
      .nparts = a->nparts,
      .parts = a->parts,
      .dev_units = a->dev_units,
      .priority = gs_api_pod_priority(pod),
  };
}

/* A bound pod's allocation (read from its annotations once, by gs__feed_pod)
 * into the service. */
static void feed_pod_bound(struct gs_sched *sched, const struct gs_alloc *alloc) {
  enum gs_err err = gs_sched_pod_bound(sched, alloc);
  if (err == GS_EOK)
    gs_log(GS_LVL_DEBUG, "allocation restored", "pod=%s/%s node=%s", alloc->ns, alloc->name,
           alloc->node);
  else if (err == GS_EAGAIN)
    gs_log(GS_LVL_DEBUG, "allocation kept until its node comes", "pod=%s/%s node=%s",
           alloc->ns, alloc->name, alloc->node);
  else
    gs_log(GS_LVL_WARN, "cannot restore allocation", "pod=%s/%s node=%s error=\"%s\"",
           alloc->ns, alloc->name, alloc->node, gs_strerror(err));
}

void gs__feed_node(struct gs_sched *sched, const json_t *node) {
  struct gs_node_spec spec;
  static __thread struct gs_topo topo; /* 8 KiB: keep it off the stack */
  struct gs_diag diag = {"", ""};
  enum gs_err err;

  err = gs_api_node_decode(node, &spec, &topo, &diag);
  if (err != GS_EOK) {
    gs_log(GS_LVL_WARN, "ignoring node", "node=%s where=\"%s\" error=\"%s\"",
           meta_str(node, "name") ? meta_str(node, "name") : "?", diag.where, diag.text);
    return;
  }
  err = gs_sched_node_upsert(sched, &spec);
  if (err != GS_EOK)
    gs_log(GS_LVL_WARN, "cannot add node", "node=%s error=\"%s\"", spec.name, gs_strerror(err));
}

void gs__feed_node_delete(struct gs_sched *sched, const char *name) {
  if (gs_sched_node_remove(sched, name) == GS_EOK)
    gs_log(GS_LVL_INFO, "node removed", "node=%s", name);
}

/* A pod of a distributed job, pending (alloc NULL) or bound: the service
 * counts the job's members present and rebuilds a running job's slots from
 * it (docs/gangs.md). Only pods with the job label are decoded. */
static void feed_gang_member(struct gs_sched *sched, const json_t *pod,
                             const struct gs_alloc *alloc) {
  struct gs_pod_request req;
  const json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
  struct gs_diag diag = {"", ""};

  if (json_object_get(labels, GS_LABEL_GANG_JOB) == NULL ||
      gs_api_pod_decode(pod, &req, &diag) != GS_EOK)
    return;
  gs_sched_pod_seen(sched, &req, alloc);
}

/* A bound pod's labels and host requests, for preemption's budgets and
 * host check (gs_sched_pod_meta). */
static void feed_pod_meta(struct gs_sched *sched, const json_t *pod, const char *uid);

void gs__feed_pod_meta(struct gs_sched *sched, const json_t *pod) {
  const char *uid = gs_api_pod_uid(pod);
  if (uid != NULL && uid[0] != '\0')
    feed_pod_meta(sched, pod, uid);
}

static void feed_pod_meta(struct gs_sched *sched, const json_t *pod, const char *uid) {
  static __thread char labels[GS_API_LABELS_MAX]; /* 8 KiB: off the stack */
  struct gs_pod_request req;
  struct gs_diag diag = {"", ""};
  struct gs_pod_meta m = {uid, gs_api_pod_ns(pod), labels, 0, 0};
  if (gs_api_pod_labels_text(pod, labels, sizeof labels) != GS_EOK) {
    gs_log(GS_LVL_WARN, "pod labels unreadable: no disruption budget selects it",
           "pod=%s/%s", gs_api_pod_ns(pod), gs_api_pod_name(pod) ? gs_api_pod_name(pod) : "?");
    labels[0] = '\0';
  }
  if (gs_api_pod_decode(pod, &req, &diag) == GS_EOK) {
    m.cpu_milli = req.cpu_milli;
    m.mem_mib = req.mem_mib;
  }
  if (gs_sched_pod_meta(sched, &m) != GS_EOK)
    gs_log(GS_LVL_WARN, "cannot record pod for preemption", "pod=%s/%s", m.ns,
           gs_api_pod_name(pod) ? gs_api_pod_name(pod) : "?");
}

/* A pending pod's status.nominatedNodeName (kube-scheduler's preemption
 * set it): the GPUs it will take there are held (gs_sched_nominate); gone,
 * the hold ends. */
static void feed_nominated(struct gs_sched *sched, const json_t *pod) {
  const char *nominated =
      json_string_value(json_object_get(json_object_get(pod, "status"), "nominatedNodeName"));
  struct gs_pod_request req;
  struct gs_diag diag = {"", ""};
  enum gs_err err;
  if (gs_api_pod_decode(pod, &req, &diag) != GS_EOK)
    return;
  if (!(gs_pod_request_is_memory(&req) || gs_pod_request_is_whole(&req)) && nominated != NULL &&
      nominated[0] != '\0')
    return; /* a claim pod: held by its preemption (gs_sched_claim_nominate); cleared, it ends */
  err = gs_sched_nominate(sched, &req, nominated);
  if (err != GS_EOK)
    gs_log(GS_LVL_WARN, "nominated pod's GPUs not held", "pod=%s/%s node=%s error=\"%s\"",
           req.ns, req.name, nominated ? nominated : "", gs_strerror(err));
}

void gs__feed_pdb(struct gs_sched *sched, const json_t *pdb) {
  static __thread struct gs_api_pdb d; /* 4 KiB: off the stack */
  struct gs_diag diag = {"", ""};
  struct gs_pdb p;
  enum gs_err err = gs_api_pdb_decode(pdb, &d, &diag);
  if (err != GS_EOK) {
    const json_t *meta = json_object_get(pdb, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    gs_log(GS_LVL_WARN, "ignoring PodDisruptionBudget", "pdb=%s/%s where=\"%s\" error=\"%s\"",
           ns ? ns : "?", name ? name : "?", diag.where, diag.text);
    if (ns != NULL && name != NULL)
      gs_sched_pdb_remove(sched, ns, name);
    return;
  }
  p = (struct gs_pdb){d.ns, d.name, d.selector_null ? NULL : d.selector, d.allowed};
  if (gs_sched_pdb_upsert(sched, &p) != GS_EOK)
    gs_log(GS_LVL_WARN, "cannot record PodDisruptionBudget", "pdb=%s/%s", d.ns, d.name);
  else
    gs_log(GS_LVL_DEBUG, "PodDisruptionBudget", "pdb=%s/%s disruptionsAllowed=%d", d.ns, d.name,
           (int)d.allowed);
}

void gs__feed_pdb_delete(struct gs_sched *sched, const json_t *pdb) {
  const json_t *meta = json_object_get(pdb, "metadata");
  const char *ns = json_string_value(json_object_get(meta, "namespace"));
  const char *name = json_string_value(json_object_get(meta, "name"));
  if (name != NULL)
    gs_sched_pdb_remove(sched, ns != NULL && ns[0] ? ns : "default", name);
}

void gs__feed_pod(struct gs_sched *sched, const json_t *pod) {
  const char *uid = gs_api_pod_uid(pod), *node = gs_api_pod_node(pod);
  struct gs_diag diag = {"", ""};
  struct gs_api_alloc a;
  struct gs_alloc alloc;
  bool bound = false;
  enum gs_err err;

  if (uid == NULL || uid[0] == '\0')
    return;
  if (gs_api_pod_is_terminal(pod)) {
    /* Succeeded or Failed: its containers are gone, so are its GPUs. A pod
     * that is only terminating keeps them until it stops. */
    gs_sched_pod_gone(sched, uid);
    return;
  }
  if (node != NULL && node[0] != '\0') {
    feed_pod_meta(sched, pod, uid);
    err = gs_api_alloc_from_pod(pod, gs_sched_policy(sched)->unit_mib, &a, &diag);
    if (err == GS_EOK) {
      alloc = bound_alloc(pod, &a, uid, node);
      feed_pod_bound(sched, &alloc);
      bound = true;
    } else if (err != GS_ENOTFOUND) {
      gs_log(GS_LVL_WARN, "ignoring malformed allocation annotation",
             "pod=%s/%s where=\"%s\" error=\"%s\"", gs_api_pod_ns(pod), gs_api_pod_name(pod),
             diag.where, err == GS_ENOMEM ? "out of memory" : diag.text);
    }
  }
  if (node == NULL || node[0] == '\0')
    feed_nominated(sched, pod);
  feed_gang_member(sched, pod, bound ? &alloc : NULL);
}

/* ---- ConfigMaps ---------------------------------------------------------- */

#define UNHEALTHY_PREFIX "unhealthy-gpu-"
#define UNHEALTHY_NS "kube-system"

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

static bool is_config_cm(const struct gs__feed_cm *f, const json_t *cm) {
  const char *ns = meta_str(cm, "namespace"), *name = meta_str(cm, "name");
  return ns && name && f->ns && f->name && strcmp(ns, f->ns) == 0 && strcmp(name, f->name) == 0;
}

static const char *unhealthy_node(const json_t *cm) {
  const char *ns = meta_str(cm, "namespace"), *name = meta_str(cm, "name");
  if (ns == NULL || name == NULL || strcmp(ns, UNHEALTHY_NS) != 0 ||
      strncmp(name, UNHEALTHY_PREFIX, strlen(UNHEALTHY_PREFIX)) != 0)
    return NULL;
  return name + strlen(UNHEALTHY_PREFIX);
}

static void set_unhealthy(struct gs_sched *sched, const char *node, uint64_t mask) {
  enum gs_err err = gs_sched_set_unhealthy(sched, node, mask);
  if (err == GS_EOK)
    gs_log(GS_LVL_INFO, "unhealthy GPUs updated", "node=%s mask=0x%" PRIx64, node, mask);
  else
    gs_log(GS_LVL_WARN, "cannot record unhealthy GPUs", "node=%s error=\"%s\"", node,
           gs_strerror(err));
}

void gs__feed_config_init(struct gs__feed_config *c) {
  atomic_init(&c->pending_unit, 0);
  pthread_mutex_init(&c->mu, NULL);
  c->error[0] = '\0';
}

void gs__feed_config_destroy(struct gs__feed_config *c) { pthread_mutex_destroy(&c->mu); }

bool gs__feed_config_error(struct gs__feed_config *c, char *out, size_t len) {
  pthread_mutex_lock(&c->mu);
  snprintf(out, len, "%s", c->error);
  pthread_mutex_unlock(&c->mu);
  return out[0] != '\0';
}

/* Stores text; true when it differs from what was there. */
static bool set_error(struct gs__feed_config *c, const char *text) {
  bool changed;
  pthread_mutex_lock(&c->mu);
  changed = strcmp(c->error, text) != 0;
  snprintf(c->error, sizeof c->error, "%s", text);
  pthread_mutex_unlock(&c->mu);
  return changed;
}

bool gs__feed_configmap(struct gs_sched *sched, const struct gs__feed_cm *f, const json_t *cm,
                        struct gs__feed_config *c) {
  const json_t *data = json_object_get(cm, "data");
  const char *node;

  if (is_config_cm(f, cm)) {
    const struct gs_policy *running = gs_sched_policy(sched);
    struct gs_policy p = *running;
    struct gs_diag diag = {"", ""};
    const char *u = json_string_value(json_object_get(data, "gpuMemoryUnit"));
    uint32_t unit = 0;
    unsigned pending = 0;
    bool fresh = false;
    if (json_is_object(data) && gs_config_apply_data(&p, data, &diag) != GS_EOK) {
      char text[GS_FEED_CONFIG_ERROR_MAX];
      /* A text longer than text is cut (the result looked at so the compiler knows). */
      if (snprintf(text, sizeof text, "ConfigMap %s/%s: %s", f->ns, f->name, diag.text) < 0)
        text[0] = '\0';
      fresh = set_error(c, text);
      if (fresh)
        gs_log(GS_LVL_ERROR, "invalid configuration; the running configuration stays",
               "configmap=%s/%s error=\"%s\"", f->ns, f->name, diag.text);
      p = *running; /* the unit is then read on its own */
      if (u != NULL && gs_unit_parse(u, &unit) == GS_EOK)
        p.unit_mib = unit;
    } else if (set_error(c, "")) {
      gs_log(GS_LVL_INFO, "configuration valid again", "configmap=%s/%s", f->ns, f->name);
    }
    if (f->unit_override_mib == 0 && p.unit_mib != running->unit_mib)
      pending = p.unit_mib;
    if (atomic_exchange(&c->pending_unit, pending) != pending && pending != 0)
      gs_log(GS_LVL_WARN, "gpuMemoryUnit changed; it applies at restart", "pendingUnit=%s",
             gs_unit_name(pending));
    return fresh;
  }
  node = unhealthy_node(cm);
  if (node != NULL)
    set_unhealthy(sched, node, parse_gpu_list(json_string_value(json_object_get(data, "gpus"))));
  return false;
}

void gs__feed_configmap_delete(struct gs_sched *sched, const struct gs__feed_cm *f,
                               const json_t *cm, struct gs__feed_config *c) {
  const char *node = unhealthy_node(cm);
  if (node != NULL) {
    set_unhealthy(sched, node, 0);
  } else if (is_config_cm(f, cm)) {
    atomic_store(&c->pending_unit, 0);
    (void)set_error(c, "");
  }
}
