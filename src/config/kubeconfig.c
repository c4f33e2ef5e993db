/* kubeconfig (clientcmd v1, docs/kube-protocol.md §D.2) resolved to its
 * current-context.
 *
 * The file is read with GS__YAML_PLAIN_TEXT: names such as `user: y` stay
 * strings, as kubectl reads them. Rules kept from client-go: a "*-data" value wins over the matching file
 * (the file field is then left empty); relative file paths are relative to
 * the kubeconfig's directory; the namespace defaults to "default";
 * insecure-skip-tls-verify together with a CA is refused, as kubectl does.
 * Credential plugins (exec, auth-provider) and basic auth are not
 * supported: they are refused with GS_EUNSUPPORTED rather than ignored, so
 * that the extender never talks to the apiserver as anonymous by mistake.
 */
#include "config_int.h"
#include <gpushare/alloc.h>

#include "base64.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ctx {
  const char *path;
  struct gs_diag *diag;
};

/* The inner object of the entry named name in the list doc[list], where
 * each entry is {name: ..., <inner>: {...}}. NULL if there is none. */
static const json_t *find_named(const json_t *doc, const char *list, const char *inner,
                                const char *name, bool *ret_found) {
  const json_t *arr = json_object_get(doc, list);
  size_t i;
  const json_t *e;
  *ret_found = false;
  if (!json_is_array(arr))
    return NULL;
  json_array_foreach(arr, i, e) {
    const json_t *n = json_object_get(e, "name");
    if (json_is_string(n) && strcmp(json_string_value(n), name) == 0) {
      *ret_found = true;
      return json_object_get(e, inner);
    }
  }
  return NULL;
}

/* The string at obj[key]: NULL if absent or null, an error if another
 * type. what names the owner for messages ("cluster \"dev\""). */
static enum gs_err get_str(const struct ctx *c, const json_t *obj, const char *key,
                           const char *what, const char **ret) {
  const json_t *v = json_object_get(obj, key);
  if (v == NULL || json_is_null(v)) {
    *ret = NULL;
    return GS_EOK;
  }
  if (!json_is_string(v)) {
    gs_diag_set(c->diag, c->path, "%s of %s in kubeconfig %s is not a string", key, what,
                c->path);
    return GS_EINVAL;
  }
  *ret = json_string_value(v);
  return GS_EOK;
}

static enum gs_err copy_str(const struct ctx *c, char *dst, size_t cap, const char *value,
                            const char *key, const char *what) {
  size_t n = strlen(value);
  if (n >= cap) {
    gs_diag_set(c->diag, c->path, "%s of %s in kubeconfig %s is longer than %zu bytes", key,
                what, c->path, cap - 1);
    return GS_ETOOBIG;
  }
  memcpy(dst, value, n + 1);
  return GS_EOK;
}

/* obj[key] as a path relative to the kubeconfig's directory. */
static enum gs_err get_path(const struct ctx *c, const json_t *obj, const char *key,
                            const char *what, char *dst, size_t cap) {
  const char *v;
  enum gs_err err = get_str(c, obj, key, what, &v);
  if (err != GS_EOK || v == NULL || v[0] == '\0')
    return err;
  if (!gs__config_resolve_path(c->path, v, dst, cap)) {
    gs_diag_set(c->diag, c->path, "%s of %s in kubeconfig %s is longer than %zu bytes", key,
                what, c->path, cap - 1);
    return GS_ETOOBIG;
  }
  return GS_EOK;
}

/* obj[key] decoded from base64 into a malloc'd, NUL-terminated buffer. */
static enum gs_err get_data(const struct ctx *c, const json_t *obj, const char *key,
                            const char *what, char **ret, size_t *ret_len) {
  const char *v;
  unsigned char *buf;
  size_t len, cap, n;
  enum gs_err err = get_str(c, obj, key, what, &v);
  if (err != GS_EOK || v == NULL || v[0] == '\0')
    return err;
  len = strlen(v);
  cap = gs_base64_decoded_max(len);
  buf = gs_malloc(cap + 1);
  if (buf == NULL) {
    gs_diag_set(c->diag, c->path, "out of memory");
    return GS_ENOMEM;
  }
  if (gs_base64_decode(v, len, buf, cap, &n) != GS_EOK) {
    gs_free(buf);
    gs_diag_set(c->diag, c->path, "%s of %s in kubeconfig %s is not valid base64", key, what,
                c->path);
    return GS_EPARSE;
  }
  buf[n] = '\0';
  *ret = (char *)buf;
  *ret_len = n;
  return GS_EOK;
}

/* A file named by key, or its content inline in key-data (base64), as
 * kubectl reads them: the data wins, and the file is then cleared. */
static enum gs_err get_file_or_data(const struct ctx *c, const json_t *obj, const char *key,
                                    const char *data_key, const char *what, char *file,
                                    size_t cap, char **ret_data, size_t *ret_len) {
  enum gs_err err = get_path(c, obj, key, what, file, cap);
  if (err == GS_EOK)
    err = get_data(c, obj, data_key, what, ret_data, ret_len);
  if (err == GS_EOK && *ret_data != NULL)
    file[0] = '\0';
  return err;
}

static enum gs_err load_cluster(const struct ctx *c, const json_t *cl, const char *what,
                                struct gs_kubeconfig *kc) {
  const char *server, *sni;
  const json_t *ins = json_object_get(cl, "insecure-skip-tls-verify");
  enum gs_err err;

  if ((err = get_str(c, cl, "server", what, &server)) != GS_EOK)
    return err;
  if (server == NULL || server[0] == '\0') {
    gs_diag_set(c->diag, c->path, "%s in kubeconfig %s has no server", what, c->path);
    return GS_EINVAL;
  }
  if ((err = copy_str(c, kc->server, sizeof kc->server, server, "server", what)) != GS_EOK)
    return err;
  if ((err = get_str(c, cl, "tls-server-name", what, &sni)) != GS_EOK)
    return err;
  if (sni != NULL &&
      (err = copy_str(c, kc->tls_server_name, sizeof kc->tls_server_name, sni,
                      "tls-server-name", what)) != GS_EOK)
    return err;
  if (ins != NULL && !json_is_null(ins)) {
    const char *s = json_string_value(ins);
    if (json_is_boolean(ins))
      kc->insecure = json_is_true(ins);
    else if (s == NULL || !gs__config_yaml_bool(s, &kc->insecure)) {
      gs_diag_set(c->diag, c->path,
                  "insecure-skip-tls-verify of %s in kubeconfig %s is not true or false", what,
                  c->path);
      return GS_EINVAL;
    }
  }
  if ((err = get_file_or_data(c, cl, "certificate-authority", "certificate-authority-data", what,
                              kc->ca_file, sizeof kc->ca_file, &kc->ca_data,
                              &kc->ca_data_len)) != GS_EOK)
    return err;
  if (kc->insecure && (kc->ca_data != NULL || kc->ca_file[0] != '\0')) {
    gs_diag_set(c->diag, c->path,
                "%s in kubeconfig %s sets insecure-skip-tls-verify together with a "
                "certificate authority",
                what, c->path);
    return GS_EINVAL;
  }
  return GS_EOK;
}

static enum gs_err load_user(const struct ctx *c, const json_t *u, const char *what,
                             struct gs_kubeconfig *kc) {
  const char *token;
  enum gs_err err;

  /* credentials gpushare does not handle: said, not ignored */
  static const struct {
    const char *key, *or_key, *uses;
  } unsupported[] = {
      {"exec", NULL, "uses an exec credential plugin, which gpushare does not run"},
      {"auth-provider", NULL, "uses an auth-provider, which gpushare does not support"},
      {"username", "password",
       "uses basic auth (username/password), which gpushare does not support"},
  };
  for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++)
    if (json_object_get(u, unsupported[i].key) != NULL ||
        (unsupported[i].or_key != NULL && json_object_get(u, unsupported[i].or_key) != NULL)) {
      gs_diag_set(c->diag, c->path,
                  "%s in kubeconfig %s %s; use token, tokenFile or a client certificate", what,
                  c->path, unsupported[i].uses);
      return GS_EUNSUPPORTED;
    }
  if ((err = get_str(c, u, "token", what, &token)) != GS_EOK)
    return err;
  if (token != NULL &&
      (err = copy_str(c, kc->token, sizeof kc->token, token, "token", what)) != GS_EOK)
    return err;
  if ((err = get_path(c, u, "tokenFile", what, kc->token_file, sizeof kc->token_file)) != GS_EOK)
    return err;
  if ((err = get_file_or_data(c, u, "client-certificate", "client-certificate-data", what,
                              kc->cert_file, sizeof kc->cert_file, &kc->cert_data,
                              &kc->cert_data_len)) != GS_EOK)
    return err;
  return get_file_or_data(c, u, "client-key", "client-key-data", what, kc->key_file,
                          sizeof kc->key_file, &kc->key_data, &kc->key_data_len);
}

/* doc's entry of kind ("context", "cluster", "user": in the list kind + "s")
 * named name, in *ret, and its words in what; GS_ENOTFOUND, said in
 * c->diag, when there is none. of: the context that names it (NULL: the
 * file's current-context). */
static enum gs_err named(const struct ctx *c, const json_t *doc, const char *kind,
                         const char *name, const char *of, const json_t **ret, char *what,
                         size_t size) {
  char list[16];
  bool found;
  snprintf(list, sizeof list, "%ss", kind);
  *ret = find_named(doc, list, kind, name, &found);
  if (!found) {
    if (of == NULL)
      gs_diag_set(c->diag, c->path, "%s \"%.80s\" not found in kubeconfig %s", kind, name,
                  c->path);
    else
      gs_diag_set(c->diag, c->path,
                  "%s \"%.80s\" (of context \"%.80s\") not found in kubeconfig %s", kind, name,
                  of, c->path);
    return GS_ENOTFOUND;
  }
  snprintf(what, size, "%s \"%.80s\"", kind, name);
  return GS_EOK;
}

/* GS_EINVAL, said in c->diag: what (an entry's words) lacks something. */
static enum gs_err refuse(const struct ctx *c, const char *what, const char *lack) {
  gs_diag_set(c->diag, c->path, "%s in kubeconfig %s %s", what, c->path, lack);
  return GS_EINVAL;
}

static enum gs_err load(const struct ctx *c, const json_t *doc, struct gs_kubeconfig *kc) {
  const char *cur, *cluster_name, *user_name, *ns;
  const json_t *context, *cluster, *user;
  char what[GS_NAME_MAX + 32];
  enum gs_err err;

  if (!json_is_object(doc)) {
    gs_diag_set(c->diag, c->path, "kubeconfig %s is not a mapping", c->path);
    return GS_EINVAL;
  }
  if ((err = get_str(c, doc, "current-context", "the file", &cur)) != GS_EOK)
    return err;
  if (cur == NULL || cur[0] == '\0') {
    gs_diag_set(c->diag, c->path, "kubeconfig %s has no current-context", c->path);
    return GS_EINVAL;
  }
  if ((err = named(c, doc, "context", cur, NULL, &context, what, sizeof what)) != GS_EOK)
    return err;
  if (!json_is_object(context))
    return refuse(c, what, "has no cluster");
  if ((err = get_str(c, context, "cluster", what, &cluster_name)) != GS_EOK ||
      (err = get_str(c, context, "user", what, &user_name)) != GS_EOK ||
      (err = get_str(c, context, "namespace", what, &ns)) != GS_EOK)
    return err;
  if (cluster_name == NULL || cluster_name[0] == '\0')
    return refuse(c, what, "has no cluster");
  if ((err = copy_str(c, kc->ns, sizeof kc->ns, ns && ns[0] ? ns : "default", "namespace",
                      what)) != GS_EOK)
    return err;

  if ((err = named(c, doc, "cluster", cluster_name, cur, &cluster, what, sizeof what)) != GS_EOK)
    return err;
  if (!json_is_object(cluster))
    return refuse(c, what, "has no server");
  if ((err = load_cluster(c, cluster, what, kc)) != GS_EOK)
    return err;

  if (user_name == NULL || user_name[0] == '\0')
    return GS_EOK; /* no credentials: anonymous (or a CA-only setup) */
  if ((err = named(c, doc, "user", user_name, cur, &user, what, sizeof what)) != GS_EOK)
    return err;
  if (user == NULL || json_is_null(user))
    return GS_EOK;
  if (!json_is_object(user))
    return refuse(c, what, "is not a mapping");
  return load_user(c, user, what, kc);
}

enum gs_err gs_kubeconfig_load(const char *path, struct gs_kubeconfig *ret,
                               struct gs_diag *diag) {
  struct ctx c = {.path = path, .diag = diag};
  struct gs_kubeconfig *kc;
  json_t *doc = NULL;
  bool fresh = diag != NULL && diag->text[0] == '\0';
  enum gs_err err = gs__yaml_load_file(path, GS__YAML_PLAIN_TEXT, &doc, diag);
  if (err != GS_EOK) {
    if (fresh && strncmp(diag->where, path, sizeof diag->where - 1) != 0)
      gs__config_diag_prefix(diag, "invalid kubeconfig");
    return err;
  }
  kc = gs_calloc(1, sizeof *kc); /* ~30 KiB */
  if (kc == NULL) {
    gs_diag_set(diag, path, "out of memory");
    err = GS_ENOMEM;
    goto free_doc;
  }
  err = load(&c, doc, kc);
  if (err != GS_EOK) {
    gs_kubeconfig_release(kc);
    goto free_kc;
  }
  *ret = *kc;
free_kc:
  gs_free(kc);
free_doc:
  json_decref(doc);
  return err;
}

void gs_kubeconfig_release(struct gs_kubeconfig *kc) {
  if (kc == NULL)
    return;
  gs_free(kc->ca_data);
  gs_free(kc->cert_data);
  gs_free(kc->key_data);
  kc->ca_data = kc->cert_data = kc->key_data = NULL;
  kc->ca_data_len = kc->cert_data_len = kc->key_data_len = 0;
}
