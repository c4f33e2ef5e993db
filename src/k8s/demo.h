/* gpushare — the embedded demo cluster: a file of Kubernetes objects
 * (a List of Nodes, Pods and ConfigMaps, as `kubectl get nodes,pods -o yaml`
 * prints) held in memory. Bind updates the in-memory pod only. */
#ifndef GPUSHARE_DEMO_H
#define GPUSHARE_DEMO_H

#include "cluster.h"

#include <gpushare/err.h>

/* Loads path (YAML or JSON). Items of other kinds are ignored; pods
 * without a UID get "demo-<namespace>-<name>". ret->self is owned: release
 * with ret->ops->destroy. */
enum gs_err gs_cluster_demo_new(const char *path, struct gs_cluster *ret,
                                struct gs_diag *diag) GS_WUR;
/* The data of ConfigMap ns/name in the demo file: borrowed, or NULL. */
const json_t *gs_cluster_demo_configmap(const struct gs_cluster *demo, const char *ns,
                                        const char *name);

#endif
