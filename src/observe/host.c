/* The hosts' CPU and memory from the extender's watch (host.h): per node
 * the allocatable and the sum of its bound pods' requests, kept per pod so
 * that a change or a deletion takes back exactly what was added. */
#include "host.h"

#include "alloc.h"
#include "api.h"
#include "strmap.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct host_node {
  char name[GS_NAME_MAX + 1];
  struct gs_host host; /* cpu_milli 0 until the Node is seen */
  size_t pods;         /* pods counted here */
};

struct host_pod {
  char uid[GS_UID_MAX + 1];
  struct host_node *node;
  uint64_t cpu_milli, mem_mib;
};

struct gs__hosts {
  struct gs_sched *sched;
  pthread_mutex_t mu;
  struct gs_strmap *nodes; /* name → struct host_node */
  struct gs_strmap *pods;  /* uid → struct host_pod */
};

void gs__hosts_free(struct gs__hosts *h) {
  if (h == NULL)
    return;
  gs_strmap_free_all(h->pods, gs_free);
  gs_strmap_free_all(h->nodes, gs_free);
  pthread_mutex_destroy(&h->mu);
  gs_free(h);
}

struct gs__hosts *gs__hosts_new(struct gs_sched *sched) {
  struct gs__hosts *h = gs_calloc(1, sizeof *h);
  if (h == NULL)
    return NULL;
  h->sched = sched;
  pthread_mutex_init(&h->mu, NULL);
  h->nodes = gs_strmap_new();
  h->pods = gs_strmap_new();
  if (h->nodes == NULL || h->pods == NULL) {
    gs__hosts_free(h);
    return NULL;
  }
  return h;
}

/* A record of size bytes whose first member is a key of cap bytes, kept in
 * map under key; NULL when memory runs out or the key is longer than any
 * the service keeps. */
static void *rec_new(struct gs_strmap *map, const char *key, size_t cap, size_t size) {
  char *rec;
  if (strlen(key) >= cap || (rec = gs_calloc(1, size)) == NULL)
    return NULL;
  memcpy(rec, key, strlen(key) + 1);
  if (gs_strmap_put(map, rec, rec) != GS_EOK) {
    gs_free(rec);
    return NULL;
  }
  return rec;
}

/* The node's record, made when absent; NULL when memory runs out. */
static struct host_node *node_get(struct gs__hosts *h, const char *name) {
  struct host_node *n = gs_strmap_get(h->nodes, name);
  return n != NULL ? n : rec_new(h->nodes, name, sizeof n->name, sizeof *n);
}

/* Drops a record nothing refers to any more (no Node, no pod). */
static void node_maybe_drop(struct gs__hosts *h, struct host_node *n) {
  if (n->pods != 0 || n->host.cpu_milli != 0 || n->host.mem_mib != 0)
    return;
  gs_strmap_del(h->nodes, n->name);
  gs_free(n);
}

static void push(struct gs__hosts *h, const struct host_node *n) {
  const char *name = n->name;
  gs_sched_nodes_set_host(h->sched, &name, &n->host, 1);
}

static uint64_t sub0(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

void gs__hosts_node(struct gs__hosts *h, const json_t *node) {
  const json_t *md = json_object_get(node, "metadata");
  const json_t *alloc = json_object_get(json_object_get(node, "status"), "allocatable");
  const char *name = json_string_value(json_object_get(md, "name"));
  struct gs_diag diag = {"", ""};
  uint64_t cpu = 0, mem = 0;
  struct host_node *n;

  if (name == NULL)
    return;
  /* an absent or bad value is unknown (0): frag then leaves the host out */
  if (gs_api_quantity_scaled_diag(json_object_get(alloc, "cpu"), 3, 0, "cpu", &cpu, &diag) !=
      GS_EOK)
    cpu = 0;
  if (gs_api_quantity_scaled_diag(json_object_get(alloc, "memory"), 0, 0, "memory", &mem,
                                  &diag) != GS_EOK)
    mem = 0;
  pthread_mutex_lock(&h->mu);
  n = node_get(h, name);
  if (n != NULL && (n->host.cpu_milli != cpu || n->host.mem_mib != mem >> 20)) {
    n->host.cpu_milli = cpu;
    n->host.mem_mib = mem >> 20; /* whole MiB, rounded down as the plugin's shim does */
    push(h, n);
  }
  pthread_mutex_unlock(&h->mu);
}

void gs__hosts_node_delete(struct gs__hosts *h, const char *name) {
  struct host_node *n;
  pthread_mutex_lock(&h->mu);
  n = gs_strmap_get(h->nodes, name);
  if (n != NULL) {
    n->host.cpu_milli = n->host.mem_mib = 0;
    node_maybe_drop(h, n);
  }
  pthread_mutex_unlock(&h->mu);
}

/* Takes the pod's requests off its node and forgets it (h->mu held). */
static void pod_forget(struct gs__hosts *h, struct host_pod *p) {
  struct host_node *n = p->node;
  n->host.cpu_used_milli = sub0(n->host.cpu_used_milli, p->cpu_milli);
  n->host.mem_used_mib = sub0(n->host.mem_used_mib, p->mem_mib);
  n->pods--;
  push(h, n);
  gs_strmap_del(h->pods, p->uid);
  gs_free(p);
  node_maybe_drop(h, n);
}

void gs__hosts_pod(struct gs__hosts *h, const json_t *pod) {
  const char *uid = gs_api_pod_uid(pod), *node = gs_api_pod_node(pod);
  struct gs_pod_request req;
  struct gs_diag diag = {"", ""};
  bool counted;
  struct host_pod *p;
  struct host_node *n;

  if (uid == NULL || uid[0] == '\0')
    return;
  /* Counted while bound and not terminal, as kube-scheduler's cache counts
   * it. A pod whose request does not decode (e.g. a bad gpu-count label)
   * is not counted: it cannot have been bound by gpushare either. */
  counted = node != NULL && node[0] != '\0' && !gs_api_pod_is_terminal(pod) &&
            gs_api_pod_decode(pod, &req, &diag) == GS_EOK;
  pthread_mutex_lock(&h->mu);
  p = gs_strmap_get(h->pods, uid);
  if (p != NULL && counted && strcmp(p->node->name, node) == 0 &&
      p->cpu_milli == req.cpu_milli && p->mem_mib == req.mem_mib)
    goto unlock; /* nothing the view keeps changed */
  if (p != NULL)
    pod_forget(h, p);
  if (!counted)
    goto unlock;
  if ((n = node_get(h, node)) == NULL)
    goto unlock;
  if ((p = rec_new(h->pods, uid, sizeof p->uid, sizeof *p)) == NULL) {
    node_maybe_drop(h, n);
    goto unlock;
  }
  p->node = n;
  p->cpu_milli = req.cpu_milli;
  p->mem_mib = req.mem_mib;
  n->pods++;
  n->host.cpu_used_milli += req.cpu_milli;
  n->host.mem_used_mib += req.mem_mib;
  push(h, n);
unlock:
  pthread_mutex_unlock(&h->mu);
}

void gs__hosts_pod_delete(struct gs__hosts *h, const json_t *pod) {
  const char *uid = gs_api_pod_uid(pod);
  struct host_pod *p;
  if (uid == NULL)
    return;
  pthread_mutex_lock(&h->mu);
  p = gs_strmap_get(h->pods, uid);
  if (p != NULL)
    pod_forget(h, p);
  pthread_mutex_unlock(&h->mu);
}

bool gs__hosts_get(struct gs__hosts *h, const char *node, struct gs_host *ret) {
  struct host_node *n;
  bool found;
  pthread_mutex_lock(&h->mu);
  n = gs_strmap_get(h->nodes, node);
  found = n != NULL;
  if (found)
    *ret = n->host;
  pthread_mutex_unlock(&h->mu);
  return found;
}
