/* gpushare-extender flags (docs/contract.md §1) and the --config file.
 *
 * Precedence: defaults < --config file < flags, whatever the order on the
 * command line (argv is read twice: once for syntax, --config, --help and
 * --version; once to apply). Inside the file, the §6 keys are applied
 * first and the flag names after them, so "gpu-memory-unit" (an override)
 * wins over "gpuMemoryUnit" (the ConfigMap's key). Relative paths in the
 * file are taken relative to the file's directory, as in a kubeconfig.
 * The file is read with GS__YAML_PLAIN_TEXT (values keep their text, as a
 * Go struct field would), so booleans take YAML's words (yes/on/true...).
 * Boolean flags take their value only as --flag=VALUE (pflag's rule), so
 * "--leader-elect false" is an error rather than a silent true.
 */
#include "config_int.h"
#include <gpushare/alloc.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum opt_id {
  O_LISTEN,
  O_KUBECONFIG,
  O_CONFIGMAP,
  O_UNIT,
  O_DEMO,
  O_LEADER,
  O_LEASE,
  O_TLS_CERT,
  O_TLS_KEY,
  O_TLS_CLIENT_CA,
  O_LOG_LEVEL,
  O_ON_INVALID,
  O_CONFIG,
  O_VERSION,
  O_HELP,
};

enum opt_kind { O_VALUE, O_BOOL, O_ACTION };

struct opt {
  const char *name;
  enum opt_id id;
  enum opt_kind kind;
  bool in_file; /* also a --config file key */
};

static const struct opt opts[] = {
    {"listen", O_LISTEN, O_VALUE, true},
    {"kubeconfig", O_KUBECONFIG, O_VALUE, true},
    {"configmap", O_CONFIGMAP, O_VALUE, true},
    {"gpu-memory-unit", O_UNIT, O_VALUE, true},
    {"demo", O_DEMO, O_VALUE, true},
    {"leader-elect", O_LEADER, O_BOOL, true},
    {"lease", O_LEASE, O_VALUE, true},
    {"tls-cert-file", O_TLS_CERT, O_VALUE, true},
    {"tls-key-file", O_TLS_KEY, O_VALUE, true},
    {"tls-client-ca-file", O_TLS_CLIENT_CA, O_VALUE, true},
    {"log-level", O_LOG_LEVEL, O_VALUE, true},
    {"on-invalid-config", O_ON_INVALID, O_VALUE, true},
    {"config", O_CONFIG, O_VALUE, false},
    {"version", O_VERSION, O_ACTION, false},
    {"help", O_HELP, O_ACTION, false},
};

static const struct opt *opt_find(const char *name, size_t len) {
  for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
    if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0)
      return &opts[i];
  return NULL;
}

static const char *const level_names[] = {
    [GS_LVL_ERROR] = "error", [GS_LVL_WARN] = "warn", [GS_LVL_INFO] = "info",
    [GS_LVL_DEBUG] = "debug"};

const char *gs_config_log_level_name(enum gs_log_lvl level) {
  if ((unsigned)level >= sizeof level_names / sizeof level_names[0])
    return "info";
  return level_names[level];
}

void gs_config_defaults(struct gs_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  snprintf(cfg->listen, sizeof cfg->listen, "0.0.0.0:32766");
  snprintf(cfg->configmap_ns, sizeof cfg->configmap_ns, "kube-system");
  snprintf(cfg->configmap_name, sizeof cfg->configmap_name, "gpushare-config");
  snprintf(cfg->lease_ns, sizeof cfg->lease_ns, "kube-system");
  snprintf(cfg->lease_name, sizeof cfg->lease_name, "gpushare-extender");
  cfg->log_level = GS_LVL_INFO;
  gs_policy_init(&cfg->policy); /* docs/contract.md §6 */
}

/* ---- value checks ------------------------------------------------------ */

static bool is_lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c) {
  return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* RFC 1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63. */
static bool dns_label(const char *s, size_t n) {
  if (n == 0 || n > 63 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
    return false;
  for (size_t i = 0; i < n; i++)
    if (!is_lower_alnum(s[i]) && s[i] != '-')
      return false;
  return true;
}

/* RFC 1123 subdomain: labels (no length limit each) joined by '.', ≤ 253. */
static bool dns_subdomain(const char *s, size_t n) {
  size_t start = 0;
  if (n == 0 || n > 253)
    return false;
  for (size_t i = 0; i <= n; i++) {
    if (i == n || s[i] == '.') {
      size_t len = i - start;
      if (len == 0 || !is_lower_alnum(s[start]) || !is_lower_alnum(s[i - 1]))
        return false;
      for (size_t j = start; j < i; j++)
        if (!is_lower_alnum(s[j]) && s[j] != '-')
          return false;
      start = i + 1;
    }
  }
  return true;
}

/* NAMESPACE/NAME into the two buffers. */
static bool ns_name(const char *v, char *ns, size_t ns_cap, char *name, size_t name_cap) {
  const char *slash = strchr(v, '/');
  if (slash == NULL)
    return false;
  size_t nl = (size_t)(slash - v), ml = strlen(slash + 1);
  if (!dns_label(v, nl) || !dns_subdomain(slash + 1, ml) || nl >= ns_cap || ml >= name_cap)
    return false;
  memcpy(ns, v, nl);
  ns[nl] = '\0';
  memcpy(name, slash + 1, ml + 1);
  return true;
}

/* A host name (RFC 1123, any case) or a dotted IPv4 address. */
static bool host_ok(const char *s, size_t n) {
  char buf[256];
  bool numeric = true;
  size_t start = 0;
  if (n == 0 || n > 253)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!(s[i] >= '0' && s[i] <= '9') && s[i] != '.')
      numeric = false;
  if (numeric) {
    struct in_addr a;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return inet_pton(AF_INET, buf, &a) == 1;
  }
  for (size_t i = 0; i <= n; i++) {
    if (i == n || s[i] == '.') {
      size_t len = i - start;
      if (len == 0 || len > 63 || !is_alnum(s[start]) || !is_alnum(s[i - 1]))
        return false;
      for (size_t j = start; j < i; j++)
        if (!is_alnum(s[j]) && s[j] != '-')
          return false;
      start = i + 1;
    }
  }
  return true;
}

/* HOST:PORT with HOST an IPv4 address, a host name or [IPv6]. */
static bool listen_ok(const char *v) {
  const char *colon = strrchr(v, ':');
  const char *port;
  unsigned long p = 0;
  if (colon == NULL)
    return false;
  port = colon + 1;
  if (*port == '\0' || strlen(port) > 5)
    return false;
  for (const char *c = port; *c; c++) {
    if (*c < '0' || *c > '9')
      return false;
    p = p * 10 + (unsigned long)(*c - '0');
  }
  if (p > 65535)
    return false;
  if (v[0] == '[') {
    char buf[64];
    struct in6_addr a;
    size_t n = (size_t)(colon - v);
    if (n < 3 || v[n - 1] != ']' || n - 2 >= sizeof buf)
      return false;
    memcpy(buf, v + 1, n - 2);
    buf[n - 2] = '\0';
    return inet_pton(AF_INET6, buf, &a) == 1;
  }
  return host_ok(v, (size_t)(colon - v));
}

/* pflag's strconv.ParseBool forms. */
static bool parse_bool(const char *v, bool *out) {
  static const char *const t[] = {"1", "t", "T", "true", "TRUE", "True", NULL};
  static const char *const f[] = {"0", "f", "F", "false", "FALSE", "False", NULL};
  for (size_t i = 0; t[i] != NULL; i++) {
    if (strcmp(v, t[i]) == 0) {
      *out = true;
      return true;
    }
    if (strcmp(v, f[i]) == 0) {
      *out = false;
      return true;
    }
  }
  return false;
}

/* ---- setting ----------------------------------------------------------- */

/* How a setting is named in messages: "--listen" for a flag, "listen" plus
 * " in FILE" for a key of the --config file. */
struct source {
  const char *file; /* NULL for the command line */
  char label[64];
  char in[GS_PATH_MAX + 8];
};

static void source_for(struct source *src, const struct opt *o, const char *file) {
  src->file = file;
  snprintf(src->label, sizeof src->label, "%s%s", file ? "" : "--", o->name);
  if (file)
    snprintf(src->in, sizeof src->in, " in %s", file);
  else
    src->in[0] = '\0';
}

static enum gs_err set_path(char *dst, size_t cap, const char *value, const struct source *src,
                            struct gs_diag *diag) {
  char path[GS_PATH_MAX];
  struct stat st;
  int fd;
  if (value[0] == '\0') { /* "--demo=" : back to the default (off) */
    dst[0] = '\0';
    return GS_EOK;
  }
  if (src->file ? !gs__config_resolve_path(src->file, value, path, sizeof path)
                : snprintf(path, sizeof path, "%s", value) >= (int)sizeof path) {
    gs_diag_set(diag, src->label, "%s path is longer than %u bytes%s", src->label,
                GS_PATH_MAX - 1, src->in);
    return GS_ETOOBIG;
  }
  /* O_NONBLOCK: a FIFO without a writer would block the open forever; this
   * only checks that the file can be opened. */
  fd = open(path, O_RDONLY | O_NONBLOCK);
  if (fd < 0) {
    gs_diag_set(diag, src->label, "cannot read %s file \"%s\"%s: %s", src->label, path, src->in,
                strerror(errno));
    return GS_EIO;
  }
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    gs_diag_set(diag, src->label, "cannot read %s file \"%s\"%s: %s", src->label, path, src->in,
                strerror(EISDIR));
    return GS_EIO;
  }
  close(fd);
  if (strlen(path) >= cap) {
    gs_diag_set(diag, src->label, "%s path is longer than %zu bytes%s", src->label, cap - 1,
                src->in);
    return GS_ETOOBIG;
  }
  memcpy(dst, path, strlen(path) + 1);
  return GS_EOK;
}

static enum gs_err set_opt(struct gs_config *cfg, const struct opt *o, const char *value,
                           const char *file, struct gs_diag *diag) {
  struct source src;
  source_for(&src, o, file);
  switch (o->id) {
  case O_LISTEN:
    if (!listen_ok(value) || strlen(value) >= sizeof cfg->listen) {
      gs_diag_set(diag, src.label,
                  "invalid %s \"%.100s\"%s: expected HOST:PORT with a port 0..65535 "
                  "(an IPv6 host in brackets: [::1]:32766)",
                  src.label, value, src.in);
      return GS_EINVAL;
    }
    snprintf(cfg->listen, sizeof cfg->listen, "%s", value);
    return GS_EOK;
  case O_KUBECONFIG:
    return set_path(cfg->kubeconfig, sizeof cfg->kubeconfig, value, &src, diag);
  case O_DEMO:
    return set_path(cfg->demo, sizeof cfg->demo, value, &src, diag);
  case O_TLS_CERT:
    return set_path(cfg->tls_cert_file, sizeof cfg->tls_cert_file, value, &src, diag);
  case O_TLS_KEY:
    return set_path(cfg->tls_key_file, sizeof cfg->tls_key_file, value, &src, diag);
  case O_TLS_CLIENT_CA:
    return set_path(cfg->tls_client_ca_file, sizeof cfg->tls_client_ca_file, value, &src, diag);
  case O_CONFIGMAP:
  case O_LEASE: {
    bool cm = o->id == O_CONFIGMAP;
    char ns[GS_NS_MAX + 1], name[GS_NAME_MAX + 1];
    if (!ns_name(value, ns, sizeof ns, name, sizeof name)) {
      gs_diag_set(diag, src.label,
                  "invalid %s \"%.100s\"%s: expected NAMESPACE/NAME (lowercase DNS names)",
                  src.label, value, src.in);
      return GS_EINVAL;
    }
    memcpy(cm ? cfg->configmap_ns : cfg->lease_ns, ns, sizeof ns);
    memcpy(cm ? cfg->configmap_name : cfg->lease_name, name, sizeof name);
    return GS_EOK;
  }
  case O_UNIT: {
    uint32_t mib;
    if (gs_unit_parse(value, &mib) != GS_EOK) {
      gs_diag_set(diag, src.label,
                  "invalid %s \"%.100s\"%s: accepted values are 1GiB, 128MiB (also 1Gi, 128Mi)",
                  src.label, value, src.in);
      return GS_EUNIT;
    }
    cfg->unit_override_mib = mib;
    cfg->policy.unit_mib = mib;
    return GS_EOK;
  }
  case O_LEADER:
    if (!parse_bool(value, &cfg->leader_elect)) {
      gs_diag_set(diag, src.label, "invalid %s \"%.100s\"%s: accepted values are true, false",
                  src.label, value, src.in);
      return GS_EINVAL;
    }
    return GS_EOK;
  case O_ON_INVALID:
    if (strcmp(value, "exit") != 0 && strcmp(value, "ignore") != 0) {
      gs_diag_set(diag, src.label, "invalid %s \"%.100s\"%s: accepted values are exit, ignore",
                  src.label, value, src.in);
      return GS_EINVAL;
    }
    cfg->invalid_config_ignore = strcmp(value, "ignore") == 0;
    return GS_EOK;
  case O_LOG_LEVEL:
    for (size_t i = 0; i < sizeof level_names / sizeof level_names[0]; i++) {
      if (strcmp(value, level_names[i]) == 0) {
        cfg->log_level = (enum gs_log_lvl)i;
        return GS_EOK;
      }
    }
    gs_diag_set(diag, src.label,
                "invalid %s \"%.100s\"%s: accepted values are error, warn, info, debug",
                src.label, value, src.in);
    return GS_EINVAL;
  default:
    break;
  }
  return GS_EINVAL; /* actions and --config are handled by the caller */
}

/* ---- the --config file ------------------------------------------------- */

static bool is_policy_key(const char *key) {
  static const char *const keys[] = {"gpuMemoryUnit", "nodePolicy", "cgpuMaxPodsPerGPU",
                                     "gangTimeoutSeconds", "fragmentationAware",
                                     "fragScoreNormalize"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (strcmp(key, keys[i]) == 0)
      return true;
  return false;
}

static enum gs_err apply_file(struct gs_config *cfg, const char *file, struct gs_diag *diag) {
  json_t *doc = NULL;
  const char *key;
  json_t *v;
  bool fresh = diag != NULL && diag->text[0] == '\0';
  enum gs_err err = gs__yaml_load_file(file, GS__YAML_PLAIN_TEXT, &doc, diag);
  if (err != GS_EOK) {
    /* Make the one line self-contained: it names the place. */
    if (fresh && strncmp(diag->where, file, sizeof diag->where - 1) != 0)
      gs__config_diag_prefix(diag, "invalid config file");
    return err;
  }
  if (json_is_null(doc))
    goto free_doc; /* an empty file */
  if (!json_is_object(doc)) {
    gs_diag_set(diag, file, "config file %s is not a mapping of settings", file);
    err = GS_EINVAL;
    goto free_doc;
  }
  json_object_foreach(doc, key, v) {
    const struct opt *o = opt_find(key, strlen(key));
    if ((o == NULL || !o->in_file) && !is_policy_key(key)) {
      gs_diag_set(diag, file, "unknown key \"%.64s\" in config file %s", key, file);
      err = GS_EINVAL;
      goto free_doc;
    }
  }
  err = gs__config_apply(&cfg->policy, doc, file, diag);
  if (err != GS_EOK)
    goto free_doc;
  json_object_foreach(doc, key, v) {
    const struct opt *o = opt_find(key, strlen(key));
    const char *value;
    if (o == NULL || json_is_null(v))
      continue; /* a policy key, or "key:" left empty (keeps the default) */
    bool b;
    if (json_is_string(v) && o->kind == O_BOOL && gs__config_yaml_bool(json_string_value(v), &b))
      value = b ? "true" : "false"; /* "yes", "on", ...: YAML's words */
    else if (json_is_string(v))
      value = json_string_value(v);
    else {
      char shown[80];
      gs__config_render(v, shown, sizeof shown);
      gs_diag_set(diag, file, "invalid %s %s in %s: expected %s", key, shown, file,
                  o->kind == O_BOOL ? "true or false" : "a string");
      err = GS_EINVAL;
      goto free_doc;
    }
    err = set_opt(cfg, o, value, file, diag);
    if (err != GS_EOK)
      goto free_doc;
  }
free_doc:
  json_decref(doc);
  return err;
}

/* ---- argv -------------------------------------------------------------- */

/* Reads the flag at argv[*i] (and its value, which may be argv[*i + 1]);
 * advances *i past both. *ret_opt is NULL at the end of argv. */
static enum gs_err next_flag(int argc, char **argv, int *i, const struct opt **ret_opt,
                             const char **ret_value, struct gs_diag *diag) {
  const char *arg, *name, *eq;
  const struct opt *o;
  if (*i >= argc) {
    *ret_opt = NULL;
    return GS_EOK;
  }
  arg = argv[(*i)++];
  if (strcmp(arg, "--") == 0) {
    if (*i < argc) {
      gs_diag_set(diag, "", "unexpected argument: %s", argv[*i]);
      return GS_EINVAL;
    }
    *ret_opt = NULL;
    return GS_EOK;
  }
  if (strcmp(arg, "-h") == 0) {
    *ret_opt = opt_find("help", 4);
    *ret_value = NULL;
    return GS_EOK;
  }
  if (arg[0] != '-' || arg[1] == '\0') {
    gs_diag_set(diag, "", "unexpected argument: %s", arg);
    return GS_EINVAL;
  }
  if (arg[1] != '-') {
    gs_diag_set(diag, "", "unknown flag: %s", arg);
    return GS_EINVAL;
  }
  name = arg + 2;
  eq = strchr(name, '=');
  o = opt_find(name, eq ? (size_t)(eq - name) : strlen(name));
  if (o == NULL) {
    gs_diag_set(diag, "", "unknown flag: --%.*s", (int)(eq ? (size_t)(eq - name) : strlen(name)),
                name);
    return GS_EINVAL;
  }
  *ret_opt = o;
  *ret_value = eq ? eq + 1 : NULL;
  switch (o->kind) {
  case O_ACTION:
    if (eq != NULL) {
      gs_diag_set(diag, "", "flag --%s takes no value", o->name);
      return GS_EINVAL;
    }
    break;
  case O_BOOL:
    if (eq == NULL)
      *ret_value = "true";
    break;
  case O_VALUE:
    if (eq == NULL) {
      /* "--listen --demo x" means a forgotten value, not listen="--demo". */
      if (*i >= argc || strncmp(argv[*i], "--", 2) == 0) {
        gs_diag_set(diag, "", "flag --%s needs a value", o->name);
        return GS_EINVAL;
      }
      *ret_value = argv[(*i)++];
    }
    break;
  }
  return GS_EOK;
}

enum gs_err gs_config_from_args(int argc, char **argv, struct gs_config *ret,
                                enum gs_config_action *ret_action, struct gs_diag *diag) {
  struct gs_config *cfg;
  const struct opt *o;
  const char *value, *config_file = NULL;
  enum gs_config_action action = GS_CONFIG_RUN;
  enum gs_err err;
  int i;

  /* Pass 1: syntax, --config, --help and --version (the first of those two
   * wins over anything after it). argv[0] is the program. */
  for (i = 1;;) {
    err = next_flag(argc, argv, &i, &o, &value, diag);
    if (err != GS_EOK)
      return err;
    if (o == NULL)
      break;
    if (o->id == O_HELP || o->id == O_VERSION) {
      action = o->id == O_HELP ? GS_CONFIG_HELP : GS_CONFIG_VERSION;
      break;
    }
    if (o->id == O_CONFIG)
      config_file = value[0] ? value : NULL;
  }

  cfg = gs_malloc(sizeof *cfg); /* ~24 KiB: keep it off small thread stacks */
  if (cfg == NULL) {
    gs_diag_set(diag, "", "out of memory");
    return GS_ENOMEM;
  }
  gs_config_defaults(cfg);
  if (action != GS_CONFIG_RUN)
    goto done;

  if (config_file != NULL) {
    err = apply_file(cfg, config_file, diag);
    if (err != GS_EOK)
      goto free_cfg;
  }
  /* Pass 2: the flags, over the file. */
  for (i = 1;;) {
    err = next_flag(argc, argv, &i, &o, &value, diag);
    if (err != GS_EOK)
      goto free_cfg;
    if (o == NULL)
      break;
    if (o->id == O_CONFIG)
      continue;
    err = set_opt(cfg, o, value, NULL, diag);
    if (err != GS_EOK)
      goto free_cfg;
  }
  if ((cfg->tls_cert_file[0] == '\0') != (cfg->tls_key_file[0] == '\0')) {
    gs_diag_set(diag, "", "--tls-cert-file and --tls-key-file must be given together");
    err = GS_EINVAL;
    goto free_cfg;
  }
  if (cfg->tls_client_ca_file[0] != '\0' && cfg->tls_cert_file[0] == '\0') {
    gs_diag_set(diag, "", "--tls-client-ca-file needs HTTPS: give --tls-cert-file and "
                          "--tls-key-file too");
    err = GS_EINVAL;
    goto free_cfg;
  }
done:
  *ret = *cfg;
  *ret_action = action;
  err = GS_EOK;
free_cfg:
  gs_free(cfg);
  return err;
}

const char *gs_config_usage(void) {
  return "Usage: gpushare-extender [flags]\n"
         "\n"
         "GPU-sharing scheduler extender for Kubernetes (Aliyun gpushare compatible).\n"
         "Flags take \"--flag value\" or \"--flag=value\"; flags override --config.\n"
         "\n"
         "  --listen HOST:PORT       HTTP listen address (default 0.0.0.0:32766)\n"
         "  --kubeconfig FILE        talk to the apiserver named by this kubeconfig\n"
         "                           (default: in-cluster service account)\n"
         "  --configmap NS/NAME      ConfigMap with gpuMemoryUnit, nodePolicy,\n"
         "                           cgpuMaxPodsPerGPU, gangTimeoutSeconds\n"
         "                           (default kube-system/gpushare-config)\n"
         "  --gpu-memory-unit U      override the ConfigMap's unit: 1GiB or 128MiB\n"
         "                           (also 1Gi, 128Mi) (default: from the ConfigMap,\n"
         "                           else 1GiB)\n"
         "  --demo FILE              embedded mode, no apiserver: the cluster is this\n"
         "                           YAML/JSON List of Nodes and Pods (default off)\n"
         "  --leader-elect[=BOOL]    HA: serve only while holding the Lease\n"
         "                           (default false)\n"
         "  --lease NS/NAME          the Lease for --leader-elect\n"
         "                           (default kube-system/gpushare-extender)\n"
         "  --tls-cert-file FILE     serve HTTPS with this certificate (PEM); needs\n"
         "                           --tls-key-file (default: plain HTTP)\n"
         "  --tls-key-file FILE      the certificate's private key (PEM)\n"
         "  --tls-client-ca-file F   HTTPS: the verbs (POST) answer only clients\n"
         "                           presenting a certificate signed by this CA\n"
         "                           (PEM); GET routes stay open (default: none)\n"
         "  --log-level LEVEL        error, warn, info or debug (default info)\n"
         "  --on-invalid-config W    a ConfigMap value that is invalid at start-up:\n"
         "                           exit (status 2, naming the key) or ignore (its\n"
         "                           default stays, reported; the shipped Deployment)\n"
         "                           (default exit)\n"
         "  --config FILE            YAML file with the settings above (names without\n"
         "                           the dashes) and gpuMemoryUnit, nodePolicy,\n"
         "                           cgpuMaxPodsPerGPU, gangTimeoutSeconds,\n"
         "                           fragmentationAware (default none)\n"
         "  --version                print the version and exit\n"
         "  --help, -h               print this help and exit\n";
}
