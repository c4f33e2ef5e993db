/* gpushare — configuration: YAML documents (libyaml), extender flags and
 * config file, ConfigMap keys (docs/contract.md §1, §6), kubeconfig (docs/kube-protocol.md
 * §D.2). Errors carry file:line:col or the key and the accepted values. */
#ifndef GPUSHARE_CONFIG_H
#define GPUSHARE_CONFIG_H

#include "log.h" /* enum gs_log_lvl: the one level enum */

#include <gpushare/place.h>
#include <gpushare/types.h>

#include <jansson.h>

#define GS_PATH_MAX 4096
#define GS_CONFIG_FILE_MAX (64u * 1024u * 1024u) /* a demo/config file cap */
/* YAML bounds: nodes in all (aliases expanded; keys count), nodes copied
 * through aliases ("billion laughs" guard), nesting depth. */
#define GS_YAML_NODES_MAX 10000000u
#define GS_YAML_ALIAS_NODES_MAX 1000000u
#define GS_YAML_DEPTH_MAX 1000u

/* Parses YAML (or JSON, which is YAML) text into a json_t, first document
 * only. Plain scalars are typed as YAML 1.1/Kubernetes do (int, float,
 * true/false, null, ~); quoted scalars stay strings; anchors/aliases are
 * resolved. Errors: diag->where = "name:line:col". New reference. */
enum gs_err gs_yaml_parse(const char *text, size_t len, const char *name, json_t **ret,
                          struct gs_diag *diag) GS_WUR;
/* Reads a file (≤ GS_CONFIG_FILE_MAX) and parses it as above. A missing or
 * unreadable file → GS_EIO "cannot read PATH: <strerror>"; too big →
 * GS_ETOOBIG. The typing rules are in yaml.c and docs/configuration.md. */
enum gs_err gs_yaml_load_file(const char *path, json_t **ret, struct gs_diag *diag) GS_WUR;
/* The same, every document of the file: *ret is an array of the documents'
 * roots (empty documents left out), in order. */
enum gs_err gs_yaml_load_file_docs(const char *path, json_t **ret, struct gs_diag *diag) GS_WUR;

/* "error", "warn", "info", "debug" (as --log-level takes them). */
const char *gs_config_log_level_name(enum gs_log_lvl level);

/* Everything gpushare-extender is told at start-up. */
struct gs_config {
  char listen[256];                 /* "0.0.0.0:32766" */
  char kubeconfig[GS_PATH_MAX];     /* "" = in-cluster */
  char configmap_ns[GS_NS_MAX + 1]; /* "kube-system" */
  char configmap_name[GS_NAME_MAX + 1]; /* "gpushare-config" */
  uint32_t unit_override_mib;       /* --gpu-memory-unit, 0 = none */
  char demo[GS_PATH_MAX];           /* "" = off */
  bool leader_elect;
  char lease_ns[GS_NS_MAX + 1];     /* "kube-system" */
  char lease_name[GS_NAME_MAX + 1]; /* "gpushare-extender" */
  char tls_cert_file[GS_PATH_MAX];
  char tls_key_file[GS_PATH_MAX];
  char tls_client_ca_file[GS_PATH_MAX]; /* "" = no client certificates asked */
  enum gs_log_lvl log_level;      /* info */
  bool invalid_config_ignore;       /* --on-invalid-config ignore (default exit) */
  struct gs_policy policy;          /* docs/contract.md §6 keys (defaults applied) */
};

enum gs_config_action { GS_CONFIG_RUN = 0, GS_CONFIG_HELP, GS_CONFIG_VERSION };

void gs_config_defaults(struct gs_config *cfg);
/* Parses argv (flags of docs/contract.md §1; "--flag value" and "--flag=value").
 * --config FILE is read first and flags override it; the file holds the
 * same names without dashes (listen, kubeconfig, configmap, gpu-memory-unit,
 * demo, leader-elect, lease, tls-cert-file, tls-key-file, log-level) and
 * the §6 keys (gpuMemoryUnit, nodePolicy, cgpuMaxPodsPerGPU,
 * gangTimeoutSeconds). Unknown flag, missing value or file, invalid value →
 * error with one clear line in diag->text. */
enum gs_err gs_config_from_args(int argc, char **argv, struct gs_config *ret,
                                enum gs_config_action *ret_action,
                                struct gs_diag *diag) GS_WUR;
/* Applies ConfigMap data keys (§6) to policy; an invalid value → error
 * naming the key and its accepted values, policy unchanged. Unknown keys
 * are ignored. */
/* The same key by key (--on-invalid-config ignore): each valid key applies,
 * each invalid one is logged at error level, naming source ("NS/NAME"),
 * and keeps its value. */
void gs_config_apply_each_key(struct gs_policy *policy, const json_t *data, const char *source);
enum gs_err gs_config_apply_data(struct gs_policy *policy, const json_t *data,
                                 struct gs_diag *diag) GS_WUR;
/* The --help text (ends with a newline). */
const char *gs_config_usage(void);

/* A kubeconfig resolved to one context. *_data are decoded PEM (malloc'd,
 * NUL-terminated, length without the NUL; NULL if absent); when a *_data
 * is set its *_file is "" (client-go: data wins). token and token_file may
 * both be set: client-go prefers the file's (re-read) token. Paths are
 * already resolved against the kubeconfig's directory. ns is "default"
 * unless the context names one. */
struct gs_kubeconfig {
  char server[1024];
  char tls_server_name[256];
  bool insecure;
  char ca_file[GS_PATH_MAX];
  char *ca_data;
  size_t ca_data_len;
  char token[8192];
  char token_file[GS_PATH_MAX];
  char cert_file[GS_PATH_MAX];
  char *cert_data;
  size_t cert_data_len;
  char key_file[GS_PATH_MAX];
  char *key_data;
  size_t key_data_len;
  char ns[GS_NS_MAX + 1];
};
/* Loads path, resolves current-context; relative file paths are made
 * relative to the kubeconfig's directory. exec/auth-provider users and
 * basic auth → GS_EUNSUPPORTED. *ret is written only on success; release
 * it with gs_kubeconfig_release. */
enum gs_err gs_kubeconfig_load(const char *path, struct gs_kubeconfig *ret,
                               struct gs_diag *diag) GS_WUR;
/* Frees the *_data buffers (and NULLs them); accepts NULL, safe twice. */
void gs_kubeconfig_release(struct gs_kubeconfig *kc);

#endif
