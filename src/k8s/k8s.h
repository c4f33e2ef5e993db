/* gpushare — the live cluster backend: a kube-apiserver client (libcurl +
 * jansson) behind struct gs_cluster_ops (cluster.h).
 *
 * What it does (docs/kube-protocol.md §C, §D):
 *  - connects in-cluster (service account) or through a kubeconfig;
 *  - informers (list + watch, one thread each) for nodes, pods of all
 *    namespaces, the gpushare ConfigMap and kube-system/unhealthy-gpu-*
 *    ConfigMaps, delivered to the sink; synced() after every full list;
 *  - bind: one POST pods/NAME/binding carrying the annotations;
 *  - Warning events on pods (best effort, queued);
 *  - optional Lease leader election (client-go's LeaseLock algorithm). On
 *    taking the lease every informer relists and replays all its objects
 *    to the sink, then synced(), then leader(true). Without leader
 *    election leader(true) comes first, at start().
 * Docs: docs/k8s.md.
 */
#ifndef GPUSHARE_K8S_H
#define GPUSHARE_K8S_H

#include "cluster.h"

#include "config.h"

#include <signal.h>
#include <stdbool.h>

struct gs_kube_opts {
  const char *kubeconfig;                    /* NULL/"" → in-cluster service account */
  const char *configmap_ns, *configmap_name; /* gpushare ConfigMap to watch (NULL → kube-system/gpushare-config) */
  bool leader_elect;
  const char *lease_ns, *lease_name; /* NULL → kube-system/gpushare-extender */
  const char *identity;              /* NULL → <hostname>_<uuid> */
  /* This replica's Pod (the Deployment's downward API: POD_NAMESPACE,
   * POD_NAME). With leader_elect the leader labels it
   * gpushare.io/leader=true and the others not, so that a Service selecting
   * the label reaches the leader while every replica is Ready
   * (docs/operations.md). NULL: no labels. */
  const char *pod_ns, *pod_name;
  unsigned lease_duration_s, renew_deadline_s, retry_period_s; /* 0 → 15, 10, 2 */
  unsigned request_timeout_s;                                  /* 0 → 10 */
  const char *sa_dir; /* NULL → /var/run/secrets/kubernetes.io/serviceaccount */
  /* Retry backoff of informers and of the lease loop; 0 → 800 ms and 30 s
   * (client-go's reflector). Tests shorten them. */
  unsigned backoff_initial_ms, backoff_max_ms;
  /* Server-side watch timeout; 0 → random in 300..600 s (client-go). */
  unsigned watch_timeout_s;
};

/* Builds the live backend: reads the kubeconfig or the in-cluster
 * environment (KUBERNETES_SERVICE_HOST/PORT, sa_dir/token, sa_dir/ca.crt)
 * and checks it, but makes no network call; start() does that and never
 * fails because the apiserver is down (it retries with backoff).
 * opts strings are copied. On success *ret owns the backend: ret->ops->
 * destroy(ret->self) frees it (stopping it first if needed). Errors:
 * GS_EINVAL (bad options or environment), GS_EIO (unreadable file),
 * GS_EPARSE (kubeconfig), GS_ENOMEM; diag says why. */
enum gs_err gs_cluster_kube_new(const struct gs_kube_opts *opts, struct gs_cluster *ret,
                                struct gs_diag *diag) GS_WUR;

/* Reads ConfigMap ns/name once (before start), retrying with backoff while
 * the apiserver is unreachable or failing, until *stop. *ret: a new
 * reference to its data object, or NULL when the ConfigMap does not exist
 * or has no data. GS_EAGAIN when stopped. */
enum gs_err gs_kube_configmap_data(struct gs_cluster *cluster, const char *ns, const char *name,
                                   volatile sig_atomic_t *stop, json_t **ret) GS_WUR;

#endif
