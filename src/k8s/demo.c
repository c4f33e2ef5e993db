/* The demo backend. Objects live in JSON arrays guarded by a mutex; the
 * sink is called without the mutex held, so a sink may call back.
 *
 * Once start has told the sink everything, the backend forgets what it no
 * longer needs, as the live informer's cache does: nodes go, and a bound
 * pod is kept as a compact entry (kube_entry.h) in the pod index, expanded
 * on demand to what the live backend's pod_get gives. A 50,000-pod file
 * costs ≈ 850 MiB as JSON objects; after start the extender holds about
 * what the live backend holds (docs/benchmarks.md, memory). */
#include "demo.h"
#include <gpushare/alloc.h>
#include "kube_entry.h"

#include "config.h"
#include "api.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

struct demo {
  pthread_mutex_t mu;
  json_t *nodes;      /* array of Node objects */
  json_t *pods;       /* array of Pod objects (until start) */
  json_t *pod_index;  /* "ns/name" → the same Pod objects, or a bound pod's
                         compact string after start: bind looks pods up by
                         name, a scan of 50,000 was 85% of a bind */
  json_t *configmaps; /* array of ConfigMap objects */
  struct gs_cluster_sink sink;
  bool started;
};

static const char *kind_of(const json_t *obj) {
  return json_string_value(json_object_get(obj, "kind"));
}

static const char *meta_str(const json_t *obj, const char *key) {
  return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

/* Gives a pod a namespace and UID when the file leaves them out. */
static enum gs_err normalize_pod(json_t *pod) {
  json_t *meta = json_object_get(pod, "metadata");
  char uid[GS_NS_MAX + GS_NAME_MAX + 16];
  if (!json_is_object(meta) || meta_str(pod, "name") == NULL)
    return GS_EPARSE;
  if (meta_str(pod, "namespace") == NULL &&
      json_object_set_new(meta, "namespace", json_string("default")) != 0)
    return GS_ENOMEM;
  if (meta_str(pod, "uid") == NULL) {
    snprintf(uid, sizeof uid, "demo-%s-%s", meta_str(pod, "namespace"), meta_str(pod, "name"));
    if (json_object_set_new(meta, "uid", json_string(uid)) != 0)
      return GS_ENOMEM;
  }
  return GS_EOK;
}

static enum gs_err add_item(struct demo *d, json_t *item, size_t i, struct gs_diag *diag) {
  const char *kind = kind_of(item);
  char where[64];
  snprintf(where, sizeof where, "items[%zu]", i);
  if (!json_is_object(item)) {
    gs_diag_set(diag, where, "item is not an object");
    return GS_EPARSE;
  }
  if (kind == NULL)
    return GS_EOK; /* kubectl always writes kind; without it we cannot tell */
  if (strcmp(kind, "Node") == 0) {
    if (meta_str(item, "name") == NULL) {
      gs_diag_set(diag, where, "Node without metadata.name");
      return GS_EPARSE;
    }
    return json_array_append(d->nodes, item) == 0 ? GS_EOK : GS_ENOMEM;
  }
  if (strcmp(kind, "Pod") == 0) {
    char key[GS_NS_MAX + GS_NAME_MAX + 2];
    if (normalize_pod(item) != GS_EOK) {
      gs_diag_set(diag, where, "Pod without metadata.name");
      return GS_EPARSE;
    }
    snprintf(key, sizeof key, "%s/%s", meta_str(item, "namespace"), meta_str(item, "name"));
    /* A second pod of the same name: the first stays the one found, as
     * the scan this index replaces found it. */
    if (json_object_get(d->pod_index, key) == NULL &&
        json_object_set(d->pod_index, key, item) != 0)
      return GS_ENOMEM;
    return json_array_append(d->pods, item) == 0 ? GS_EOK : GS_ENOMEM;
  }
  if (strcmp(kind, "ConfigMap") == 0)
    return json_array_append(d->configmaps, item) == 0 ? GS_EOK : GS_ENOMEM;
  return GS_EOK;
}

static void demo_destroy(void *self) {
  struct demo *d = self;
  if (d == NULL)
    return;
  json_decref(d->nodes);
  json_decref(d->pods);
  json_decref(d->pod_index);
  json_decref(d->configmaps);
  pthread_mutex_destroy(&d->mu);
  gs_free(d);
}

/* A bound pod's compact entry (new reference), or NULL: not bound, or not
 * splittable (kube_entry.h). */
static json_t *compact_pod(const json_t *pod) {
  const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
  if (node == NULL || node[0] == '\0')
    return NULL;
  return gs__entry_compact(pod, GS__ENTRY_FIELDS);
}

static enum gs_err demo_start(void *self, const struct gs_cluster_sink *sink) {
  struct demo *d = self;
  json_t *arrays[3] = {d->configmaps, d->nodes, d->pods};
  json_t *obj;

  pthread_mutex_lock(&d->mu);
  d->sink = *sink;
  d->started = true;
  pthread_mutex_unlock(&d->mu);
  /* One object at a time: a copy taken under the mutex (a bind may change
   * a pod meanwhile), told to the sink without it. */
  for (int a = 0; a < 3; a++) {
    for (size_t i = 0;; i++) {
      pthread_mutex_lock(&d->mu);
      obj = i < json_array_size(arrays[a]) ? json_deep_copy(json_array_get(arrays[a], i)) : NULL;
      pthread_mutex_unlock(&d->mu);
      if (obj == NULL) {
        if (i < json_array_size(arrays[a]))
          return GS_ENOMEM;
        break;
      }
      if (a == 0 && sink->configmap_upsert)
        sink->configmap_upsert(sink->ctx, obj);
      else if (a == 1 && sink->node_upsert)
        sink->node_upsert(sink->ctx, obj);
      else if (a == 2 && sink->pod_upsert)
        sink->pod_upsert(sink->ctx, obj);
      json_decref(obj);
    }
  }
  /* Told: keep only what bind and pod_get need. */
  pthread_mutex_lock(&d->mu);
  json_array_clear(d->nodes);
  for (size_t i = 0; i < json_array_size(d->pods); i++) {
    json_t *pod = json_array_get(d->pods, i), *small = compact_pod(pod);
    char key[GS_NS_MAX + GS_NAME_MAX + 2];
    if (small == NULL)
      continue; /* pending (bind decodes it whole), or not splittable */
    snprintf(key, sizeof key, "%s/%s", meta_str(pod, "namespace"), meta_str(pod, "name"));
    if (json_object_get(d->pod_index, key) == pod)
      json_object_set(d->pod_index, key, small); /* on failure the pod stays whole */
    json_decref(small);
  }
  json_array_clear(d->pods); /* the index holds what is left */
  pthread_mutex_unlock(&d->mu);
#if defined(__GLIBC__)
  malloc_trim(0); /* the file's objects are freed: give the memory back */
#endif
  if (sink->synced)
    sink->synced(sink->ctx);
  if (sink->leader)
    sink->leader(sink->ctx, true);
  return GS_EOK;
}

static void demo_stop(void *self) { (void)self; }

static json_t *find_pod(struct demo *d, const char *ns, const char *name) {
  char key[GS_NS_MAX + GS_NAME_MAX + 2];
  int n = snprintf(key, sizeof key, "%s/%s", ns, name);
  if (n < 0 || (size_t)n >= sizeof key)
    return NULL; /* longer than any pod's: no such pod */
  return json_object_get(d->pod_index, key);
}

static json_t *demo_pod_get(void *self, const char *ns, const char *name) {
  struct demo *d = self;
  json_t *pod, *copy = NULL;
  char key[GS_NS_MAX + GS_NAME_MAX + 2];
  pthread_mutex_lock(&d->mu);
  pod = find_pod(d, ns, name);
  if (json_is_string(pod)) {
    snprintf(key, sizeof key, "%s/%s", ns, name);
    copy = gs__entry_expand(key, pod, "Pod", true);
  } else if (pod != NULL) {
    copy = json_deep_copy(pod);
  }
  pthread_mutex_unlock(&d->mu);
  return copy;
}

/* A pod a filter or prioritize call named that the file does not hold:
 * taken as created, Pending (no node), so that bind finds it. */
static void demo_pod_offered(void *self, const json_t *pod) {
  struct demo *d = self;
  const char *ns = meta_str(pod, "namespace"), *name = meta_str(pod, "name");
  char key[GS_NS_MAX + GS_NAME_MAX + 2];
  json_t *copy;
  int n;
  if (name == NULL)
    return;
  if (ns == NULL || ns[0] == '\0')
    ns = "default";
  n = snprintf(key, sizeof key, "%s/%s", ns, name);
  if (n < 0 || (size_t)n >= sizeof key)
    return;
  pthread_mutex_lock(&d->mu);
  if (json_object_get(d->pod_index, key) == NULL && (copy = json_deep_copy(pod)) != NULL) {
    json_t *spec = json_object_get(copy, "spec"), *meta = json_object_get(copy, "metadata");
    if (json_is_object(spec))
      json_object_del(spec, "nodeName"); /* asked where to go: not bound */
    if (json_is_object(meta) && json_object_get(meta, "namespace") == NULL)
      json_object_set_new(meta, "namespace", json_string(ns));
    if (json_object_set(d->pod_index, key, copy) == 0)
      gs_log(GS_LVL_INFO, "demo: pod taken as created (Pending)", "pod=%s", key);
    json_decref(copy);
  }
  pthread_mutex_unlock(&d->mu);
}

/* obj's member key as an object, made when missing; NULL when out of memory. */
static json_t *child_object(json_t *obj, const char *key) {
  json_t *c = json_object_get(obj, key);
  if (json_is_object(c))
    return c;
  c = json_object();
  if (c == NULL || json_object_set_new(obj, key, c) != 0)
    return NULL;
  return c;
}

static enum gs_err demo_bind(void *self, const char *ns, const char *name, const char *uid,
                             const char *node, const struct gs_annotations *annots,
                             struct gs_diag *diag) {
  struct demo *d = self;
  json_t *pod, *spec, *ann, *updated = NULL;
  const char *have_uid, *have_node;
  enum gs_err rc = GS_EOK;

  pthread_mutex_lock(&d->mu);
  pod = find_pod(d, ns, name);
  if (pod == NULL) {
    gs_diag_set(diag, "", "pods \"%s\" not found", name);
    rc = GS_ENOTFOUND;
    goto unlock;
  }
  if (json_is_string(pod)) {
    /* Bound at start (compact): the same answers as for the whole pod. */
    struct gs__entry_ids ids;
    gs__entry_ids(pod, &ids);
    if (uid != NULL && uid[0] != '\0' && ids.f[0] != NULL &&
        (strlen(uid) != ids.len[0] || memcmp(uid, ids.f[0], ids.len[0]) != 0)) {
      gs_diag_set(diag, "",
               "Precondition failed: UID in precondition: %s, UID in object meta: %.*s", uid,
               (int)ids.len[0], ids.f[0]);
      rc = GS_ECONFLICT;
    } else if (ids.f[2] == NULL || strlen(node) != ids.len[2] ||
               memcmp(node, ids.f[2], ids.len[2]) != 0) {
      gs_diag_set(diag, "", "pod %s is already assigned to node \"%.*s\"", name,
               (int)ids.len[2], ids.f[2] ? ids.f[2] : "");
      rc = GS_ECONFLICT;
    }
    goto unlock; /* same node: already bound, idempotent */
  }
  have_uid = meta_str(pod, "uid");
  if (uid != NULL && uid[0] != '\0' && have_uid != NULL && strcmp(uid, have_uid) != 0) {
    gs_diag_set(diag, "", "Precondition failed: UID in precondition: %s, UID in object meta: %s",
             uid, have_uid);
    rc = GS_ECONFLICT;
    goto unlock;
  }
  if ((spec = child_object(pod, "spec")) == NULL) {
    rc = GS_ENOMEM;
    goto unlock;
  }
  have_node = json_string_value(json_object_get(spec, "nodeName"));
  if (have_node != NULL && have_node[0] != '\0') {
    if (strcmp(have_node, node) != 0) {
      gs_diag_set(diag, "", "pod %s is already assigned to node \"%s\"", name, have_node);
      rc = GS_ECONFLICT;
    }
    goto unlock; /* same node: already bound, idempotent */
  }
  if ((ann = child_object(json_object_get(pod, "metadata"), "annotations")) == NULL) {
    rc = GS_ENOMEM;
    goto unlock;
  }
  /* Annotations and nodeName change together, as the Binding does it. */
  for (size_t i = 0; i < annots->n; i++)
    if (json_object_set_new(ann, annots->kv[i].key, json_string(annots->kv[i].value)) != 0)
      rc = GS_ENOMEM;
  if (rc == GS_EOK && json_object_set_new(spec, "nodeName", json_string(node)) != 0)
    rc = GS_ENOMEM;
  if (rc == GS_EOK && d->started)
    updated = json_deep_copy(pod);
unlock:
  pthread_mutex_unlock(&d->mu);
  if (rc == GS_ENOMEM)
    gs_diag_set(diag, "", "out of memory");
  if (updated != NULL) {
    if (d->sink.pod_upsert)
      d->sink.pod_upsert(d->sink.ctx, updated);
    json_decref(updated);
  }
  return rc;
}

static void demo_event(void *self, const json_t *pod, const char *reason, const char *message) {
  (void)self;
  (void)pod;
  (void)reason;
  (void)message; /* the demo has no event store; the server logs the failure */
}

static const struct gs_cluster_ops demo_ops = {
    .name = "demo",
    .start = demo_start,
    .stop = demo_stop,
    .destroy = demo_destroy,
    .pod_get = demo_pod_get,
    .bind = demo_bind,
    .event = demo_event,
    .pod_offered = demo_pod_offered,
};

enum gs_err gs_cluster_demo_new(const char *path, struct gs_cluster *ret, struct gs_diag *diag) {
  struct demo *d;
  json_t *doc = NULL, *items, *one;
  enum gs_err err;
  size_t i, n, seq = 0;
  json_t *item;

  /* every document of the file: Lists and single objects alike */
  err = gs_yaml_load_file_docs(path, &doc, diag);
  if (err != GS_EOK)
    return err;
  d = gs_calloc(1, sizeof *d);
  if (d == NULL) {
    json_decref(doc);
    return GS_ENOMEM;
  }
  pthread_mutex_init(&d->mu, NULL);
  d->nodes = json_array();
  d->pods = json_array();
  d->pod_index = json_object();
  d->configmaps = json_array();
  if (d->nodes == NULL || d->pods == NULL || d->pod_index == NULL || d->configmaps == NULL) {
    err = GS_ENOMEM;
    goto free_demo;
  }
  if (json_array_size(doc) == 0) {
    gs_diag_set(diag, path, "expected a List of Kubernetes objects (kind: List, items: [...])");
    err = GS_EPARSE;
    goto free_demo;
  }
  json_array_foreach(doc, n, one) {
    items = json_object_get(one, "items");
    if (json_is_array(items)) {
      json_array_foreach(items, i, item) if ((err = add_item(d, item, seq++, diag)) != GS_EOK) goto free_demo;
    } else if (json_is_object(one) && kind_of(one) != NULL) {
      if ((err = add_item(d, one, seq++, diag)) != GS_EOK)
        goto free_demo;
    } else {
      gs_diag_set(diag, path,
                  "document %zu: expected a Kubernetes object or a List of them "
                  "(kind: List, items: [...])",
                  n + 1);
      err = GS_EPARSE;
      goto free_demo;
    }
  }
  json_decref(doc);
  ret->ops = &demo_ops;
  ret->self = d;
  return GS_EOK;

free_demo:
  json_decref(doc);
  demo_destroy(d);
  return err;
}

const json_t *gs_cluster_demo_configmap(const struct gs_cluster *demo, const char *ns,
                                        const char *name) {
  struct demo *d = demo->self;
  size_t i;
  json_t *cm;
  if (demo->ops != &demo_ops)
    return NULL;
  json_array_foreach(d->configmaps, i, cm) {
    const char *cns = meta_str(cm, "namespace"), *cname = meta_str(cm, "name");
    if (cname && strcmp(cname, name) == 0 && strcmp(cns ? cns : "default", ns) == 0)
      return json_object_get(cm, "data");
  }
  return NULL;
}
