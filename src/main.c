/* gpushare-extender: wiring only. Parse the configuration, pick the cluster
 * backend (demo file or live apiserver), run the server until a signal. */
#include "alloc.h"
#include "arena.h"
#include "config.h"
#include "demo.h"
#include "k8s.h"
#include "log.h"
#include "server.h"

#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig) {
  (void)sig;
  stop_flag = 1;
}

/* Start-up configuration from the ConfigMap (§6), unless a flag overrides
 * the unit. An invalid value is a start-up error naming the key
 * (docs/contract.md §6), or, with --on-invalid-config ignore, reported while the
 * valid keys apply and scheduling goes on. */
static int apply_configmap(struct gs_config *cfg, const json_t *data) {
  struct gs_diag diag = {"", ""};
  char source[GS_NS_MAX + GS_NAME_MAX + 2];
  uint32_t unit = cfg->policy.unit_mib;
  if (data == NULL)
    return 0;
  if (gs_config_apply_data(&cfg->policy, data, &diag) != GS_EOK) {
    if (!cfg->invalid_config_ignore) {
      fprintf(stderr, "gpushare-extender: ConfigMap %s/%s: %s\n", cfg->configmap_ns,
              cfg->configmap_name, diag.text);
      return -1;
    }
    snprintf(source, sizeof source, "%s/%s", cfg->configmap_ns, cfg->configmap_name);
    gs_config_apply_each_key(&cfg->policy, data, source);
  }
  if (cfg->unit_override_mib != 0)
    cfg->policy.unit_mib = unit;
  return 0;
}


int main(int argc, char **argv) {
  static struct gs_config cfg; /* large: keep it off the stack */
  struct gs_diag diag = {"", ""};
  enum gs_config_action action;
  struct gs_cluster cluster = {0};
  struct gs_server *server;
  struct sigaction sa;
  int rc;

  /* Before jansson allocates anything: through src/util/alloc.h, so the
   * decoders can tell running out of memory from malformed input, and
   * from a thread's arena while one is entered (list pages, arena.h). */
  json_set_alloc_funcs(gs_arena_hook_malloc, gs_arena_hook_free);
  if (gs_config_from_args(argc, argv, &cfg, &action, &diag) != GS_EOK) {
    fprintf(stderr, "gpushare-extender: %s\n", diag.text);
    return 2;
  }
  if (action == GS_CONFIG_HELP) {
    fputs(gs_config_usage(), stdout);
    return 0;
  }
  if (action == GS_CONFIG_VERSION) {
    printf("gpushare-extender %s\n", GS_VERSION);
    return 0;
  }
  gs_log_set_level(cfg.log_level);
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  if (cfg.demo[0] != '\0') {
    if (gs_cluster_demo_new(cfg.demo, &cluster, &diag) != GS_EOK) {
      fprintf(stderr, "gpushare-extender: %s%s%s\n", diag.where, diag.where[0] ? ": " : "",
              diag.text);
      return 2;
    }
    /* The demo file holds its ConfigMap: check it before serving anything. */
    if (apply_configmap(&cfg, gs_cluster_demo_configmap(&cluster, cfg.configmap_ns,
                                                        cfg.configmap_name)) != 0) {
      cluster.ops->destroy(cluster.self);
      return 2;
    }
  } else {
    struct gs_kube_opts kopts = {0};
    kopts.kubeconfig = cfg.kubeconfig;
    kopts.configmap_ns = cfg.configmap_ns;
    kopts.configmap_name = cfg.configmap_name;
    kopts.leader_elect = cfg.leader_elect;
    kopts.lease_ns = cfg.lease_ns;
    kopts.lease_name = cfg.lease_name;
    /* the Deployment's downward API: the leader labels its own Pod */
    kopts.pod_ns = getenv("POD_NAMESPACE");
    kopts.pod_name = getenv("POD_NAME");
    if (gs_cluster_kube_new(&kopts, &cluster, &diag) != GS_EOK) {
      fprintf(stderr, "gpushare-extender: %s\n", diag.text);
      return 2;
    }
  }

  /* HTTP first: /healthz answers while the configuration is being read. */
  server = gs_server_new(&cfg, cluster, &diag);
  if (server == NULL) {
    fprintf(stderr, "gpushare-extender: %s\n", diag.text);
    return 1;
  }
  if (gs_server_listen(server, &diag) != GS_EOK) {
    fprintf(stderr, "gpushare-extender: %s\n", diag.text);
    gs_server_free(server);
    return 1;
  }

  /* The unit must be known before the ledger exists: read the ConfigMap
   * once now (the live backend retries while the apiserver is down). */
  rc = 0;
  if (cfg.demo[0] == '\0') {
    json_t *data = NULL;
    enum gs_err err = gs_kube_configmap_data(&cluster, cfg.configmap_ns, cfg.configmap_name,
                                             &stop_flag, &data);
    if (err != GS_EOK) {
      if (!stop_flag)
        fprintf(stderr, "gpushare-extender: cannot read ConfigMap %s/%s: %s\n",
                cfg.configmap_ns, cfg.configmap_name, gs_strerror(err));
      gs_server_free(server);
      return stop_flag ? 0 : 1;
    }
    rc = apply_configmap(&cfg, data);
    json_decref(data);
  }
  if (rc != 0) {
    gs_server_free(server);
    return 2;
  }
  if (gs_server_start(server, &cfg.policy, &diag) != GS_EOK) {
    fprintf(stderr, "gpushare-extender: %s\n", diag.text);
    gs_server_free(server);
    return 1;
  }
  gs_server_run(server, &stop_flag);
  gs_log(GS_LVL_INFO, "shutting down", "%s", "");
  gs_server_free(server);
  return 0;
}
