/* Extender v1 wire types (KUBE-PROTOCOL §A.3): ExtenderArgs,
 * ExtenderFilterResult, HostPriorityList, ExtenderBindingArgs/Result.
 *
 * Request bodies are parsed with JSON_REJECT_DUPLICATES. Go's decoder
 * would take the last of two equal keys, but kube-scheduler marshals
 * structs and maps and never sends duplicates; a body that has them was
 * not written by it, and guessing which "Pod" is meant is worse than
 * refusing. jansson also refuses invalid UTF-8, \u0000 inside strings
 * (our names are C strings) and trailing bytes after the value.
 *
 * Output is compact with keys in a fixed order. Integers are always
 * json_integer (Go refuses 7.0 for an int64).
 */
#include "api_internal.h"
#include "alloc.h"

#include <stdlib.h>
#include <string.h>

/* Parses a request body into an object. */
static enum gs_err body_load(const char *body, size_t len, const char *what, json_t **ret,
                             struct gs_diag *diag) {
  json_error_t jerr;
  json_t *root;
  enum gs_err err;
  if (body == NULL || len == 0) {
    gs_diag_set(diag, what, "empty request body");
    return GS_EPARSE;
  }
  if (len > GS_API_BODY_MAX) {
    gs_diag_set(diag, what, "request body of %zu bytes exceeds the limit of %u", len,
                GS_API_BODY_MAX);
    return GS_ETOOBIG;
  }
  root = gs__api_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr, &err);
  if (root == NULL) {
    if (err == GS_ENOMEM) {
      gs_diag_set(diag, what, "out of memory");
      return GS_ENOMEM;
    }
    gs_diag_set(diag, what, "malformed JSON at line %d column %d: %s", jerr.line, jerr.column,
                jerr.text);
    return GS_EPARSE;
  }
  if (!json_is_object(root)) {
    gs_diag_set(diag, what, "request body must be a JSON object");
    json_decref(root);
    return GS_EPARSE;
  }
  *ret = root;
  return GS_EOK;
}

/* metadata.name of an object at path: a non-empty string ≤ GS_NAME_MAX. */
static enum gs_err object_name(const json_t *obj, const char *path, const char *what,
                               const char **ret, struct gs_diag *diag) {
  char mpath[GS__API_PATH_MAX], where[GS__API_PATH_MAX];
  const json_t *meta;
  const char *name;
  enum gs_err err;

  if (!json_is_object(obj)) {
    gs_diag_set(diag, path, "must be an object");
    return GS_EPARSE;
  }
  gs__api_path(mpath, "%s.metadata", path);
  err = gs__api_get_object(obj, "metadata", path, &meta, diag);
  if (err == GS_EOK)
    err = gs__api_get_string(meta, "name", mpath, &name, diag);
  if (err != GS_EOK)
    return err;
  gs__api_path(where, "%s.metadata.name", path);
  if (name == NULL || name[0] == '\0') {
    gs_diag_set(diag, where, "missing %s name", what);
    return GS_EPARSE;
  }
  if (strlen(name) > GS_NAME_MAX) {
    gs_diag_set(diag, where, "%s name is longer than %d bytes", what, GS_NAME_MAX);
    return GS_ETOOBIG;
  }
  *ret = name;
  return GS_EOK;
}

/* The node list of either form, in a fresh block (names then nodes). */
static enum gs_err args_nodes(const json_t *root, struct gs_api_args *a, struct gs_diag *diag) {
  const json_t *names = gs__api_get(root, "NodeNames"), *list = gs__api_get(root, "Nodes");
  const json_t *items = NULL, *v;
  char where[GS__API_PATH_MAX];
  size_t n, i;
  enum gs_err err;

  if (names == NULL && list == NULL) {
    gs_diag_set(diag, "ExtenderArgs", "neither NodeNames nor Nodes given");
    return GS_EPARSE;
  }
  if (names != NULL && list != NULL) {
    gs_diag_set(diag, "ExtenderArgs", "both NodeNames and Nodes given");
    return GS_EPARSE;
  }
  if (names != NULL) {
    if (!json_is_array(names)) {
      gs_diag_set(diag, "NodeNames", "must be an array of strings");
      return GS_EPARSE;
    }
    n = json_array_size(names);
  } else {
    if (!json_is_object(list)) {
      gs_diag_set(diag, "Nodes", "must be a NodeList object");
      return GS_EPARSE;
    }
    err = gs__api_get_array(list, "items", "Nodes", &items, diag);
    if (err != GS_EOK)
      return err;
    n = json_array_size(items); /* null/absent items: an empty list */
  }
  if (n > GS_API_NODES_MAX) {
    gs_diag_set(diag, names != NULL ? "NodeNames" : "Nodes.items",
                "%zu nodes, more than the limit of %u", n, GS_API_NODES_MAX);
    return GS_ETOOBIG;
  }
  a->by_names = names != NULL;
  a->nnodes = n;
  if (n == 0)
    return GS_EOK;
  /* One block: n names, then n node pointers (both pointer-sized). */
  a->names = gs_calloc(2 * n, sizeof(void *));
  if (a->names == NULL)
    return GS_ENOMEM;
  a->nodes = (const json_t **)(void *)(a->names + n);
  for (i = 0; i < n; i++) {
    if (names != NULL) {
      v = json_array_get(names, i);
      gs__api_path(where, "NodeNames[%zu]", i);
      if (!json_is_string(v) || json_string_length(v) == 0) {
        gs_diag_set(diag, where, "must be a non-empty string");
        return GS_EPARSE;
      }
      if (json_string_length(v) > GS_NAME_MAX) {
        gs_diag_set(diag, where, "node name is longer than %d bytes", GS_NAME_MAX);
        return GS_ETOOBIG;
      }
      a->names[i] = json_string_value(v);
    } else {
      v = json_array_get(items, i);
      gs__api_path(where, "Nodes.items[%zu]", i);
      err = object_name(v, where, "node", &a->names[i], diag);
      if (err != GS_EOK)
        return err;
      a->nodes[i] = v;
    }
  }
  return GS_EOK;
}

enum gs_err gs_api_args_decode(const char *body, size_t len, struct gs_api_args *ret,
                               struct gs_diag *diag) {
  struct gs_api_args a;
  const char *name;
  enum gs_err err;

  memset(&a, 0, sizeof a);
  err = body_load(body, len, "ExtenderArgs", &a.root, diag);
  if (err != GS_EOK)
    return err;
  a.pod = gs__api_get(a.root, "Pod");
  if (a.pod == NULL) {
    gs_diag_set(diag, "Pod", "missing Pod");
    err = GS_EPARSE;
    goto out_args;
  }
  err = object_name(a.pod, "Pod", "pod", &name, diag);
  if (err == GS_EOK)
    err = args_nodes(a.root, &a, diag);
  if (err != GS_EOK)
    goto out_args;
  *ret = a;
  return GS_EOK;
out_args:
  gs_api_args_release(&a);
  return err;
}

void gs_api_args_release(struct gs_api_args *args) {
  if (args == NULL)
    return;
  gs_free((void *)args->names);
  json_decref(args->root);
  memset(args, 0, sizeof *args);
}

/* ---- results ------------------------------------------------------------ */

/* kube-scheduler has turned Error into an error with fmt.Errorf(Error) in
 * some versions and errors.New in others (KUBE-PROTOCOL §A.8), so no escape
 * reads right in both. '%' in an Error text (only ever echoed user input)
 * becomes U+FF05 FULLWIDTH PERCENT SIGN: it reads the same and is never a
 * verb. */
static json_t *error_text(const char *error) {
  static const char fw_percent[] = "\xEF\xBC\x85";
  size_t len, extra = 0, i, j;
  char *copy;
  json_t *out;
  if (error == NULL)
    error = "";
  len = strlen(error);
  for (i = 0; i < len; i++)
    extra += error[i] == '%' ? 2 : 0;
  if (extra == 0)
    return gs__api_text(error);
  copy = gs_malloc(len + extra + 1);
  if (copy == NULL)
    return NULL;
  for (i = 0, j = 0; i < len; i++) {
    if (error[i] == '%') {
      memcpy(copy + j, fw_percent, 3);
      j += 3;
    } else {
      copy[j++] = error[i];
    }
  }
  copy[j] = '\0';
  out = gs__api_text(copy);
  gs_free(copy);
  return out;
}

struct gs_api_filter_result {
  bool by_names;
  json_t *pass;         /* array of names, or of node objects */
  json_t *failed;       /* node → reason */
  json_t *unresolvable; /* node → reason */
  json_t *error;        /* string */
};

struct gs_api_filter_result *gs_api_filter_result_new(bool by_names) {
  struct gs_api_filter_result *r = gs_calloc(1, sizeof *r);
  if (r == NULL)
    return NULL;
  r->by_names = by_names;
  r->pass = json_array();
  r->failed = json_object();
  r->unresolvable = json_object();
  r->error = json_string("");
  if (r->pass == NULL || r->failed == NULL || r->unresolvable == NULL || r->error == NULL) {
    gs_api_filter_result_free(r);
    return NULL;
  }
  return r;
}

void gs_api_filter_result_free(struct gs_api_filter_result *r) {
  if (r == NULL)
    return;
  json_decref(r->pass);
  json_decref(r->failed);
  json_decref(r->unresolvable);
  json_decref(r->error);
  gs_free(r);
}

enum gs_err gs_api_filter_result_pass(struct gs_api_filter_result *r, const char *name,
                                      const json_t *node_obj) {
  json_t *v;
  if (r == NULL || name == NULL)
    return GS_EINVAL;
  if (r->by_names) {
    v = gs__api_text(name);
  } else {
    if (!json_is_object(node_obj))
      return GS_EINVAL;
    /* Returned unmodified (KUBE-PROTOCOL §A.3): a new reference to the
     * caller's object, which jansson never changes while dumping. */
    v = json_incref((json_t *)node_obj);
  }
  return json_array_append_new(r->pass, v) == 0 ? GS_EOK : GS_ENOMEM;
}

enum gs_err gs_api_filter_result_fail(struct gs_api_filter_result *r, const char *name,
                                      const char *reason, bool unresolvable) {
  if (r == NULL || name == NULL || reason == NULL)
    return GS_EINVAL;
  return json_object_set_new(unresolvable ? r->unresolvable : r->failed, name,
                             gs__api_text(reason)) == 0
             ? GS_EOK
             : GS_ENOMEM;
}

enum gs_err gs_api_filter_result_error(struct gs_api_filter_result *r, const char *error) {
  json_t *v;
  if (r == NULL)
    return GS_EINVAL;
  v = error_text(error);
  if (v == NULL)
    return GS_ENOMEM;
  json_decref(r->error);
  r->error = v;
  return GS_EOK;
}

/* Builds the ExtenderFilterResult object; pass/failed/... are borrowed. */
static char *filter_dump(bool by_names, json_t *pass, json_t *failed, json_t *unresolvable,
                         json_t *error) {
  json_t *root = json_object(), *list = NULL;
  char *out = NULL;
  if (root == NULL)
    return NULL;
  if (by_names) {
    if (json_object_set_new(root, "Nodes", json_null()) != 0 ||
        json_object_set(root, "NodeNames", pass) != 0)
      goto out_root;
  } else {
    list = json_object();
    if (list == NULL || json_object_set_new(list, "metadata", json_object()) != 0 ||
        json_object_set(list, "items", pass) != 0 ||
        json_object_set(root, "Nodes", list) != 0 ||
        json_object_set_new(root, "NodeNames", json_null()) != 0)
      goto out_root;
  }
  if (json_object_set(root, "FailedNodes", failed) != 0 ||
      json_object_set(root, "FailedAndUnresolvableNodes", unresolvable) != 0 ||
      json_object_set(root, "Error", error) != 0)
    goto out_root;
  out = gs__api_dump(root);
out_root:
  json_decref(list);
  json_decref(root);
  return out;
}

char *gs_api_filter_result_dump(const struct gs_api_filter_result *r) {
  if (r == NULL)
    return NULL;
  return filter_dump(r->by_names, r->pass, r->failed, r->unresolvable, r->error);
}

char *gs_api_filter_error_dump(const char *error) {
  json_t *failed = json_object(), *unres = json_object(), *err = error_text(error);
  char *out = NULL;
  /* Neither list: both null, which kube-scheduler reads as "none pass". */
  if (failed != NULL && unres != NULL && err != NULL) {
    json_t *root = json_object();
    if (root != NULL && json_object_set_new(root, "Nodes", json_null()) == 0 &&
        json_object_set_new(root, "NodeNames", json_null()) == 0 &&
        json_object_set(root, "FailedNodes", failed) == 0 &&
        json_object_set(root, "FailedAndUnresolvableNodes", unres) == 0 &&
        json_object_set(root, "Error", err) == 0)
      out = gs__api_dump(root);
    json_decref(root);
  }
  json_decref(failed);
  json_decref(unres);
  json_decref(err);
  return out;
}

char *gs_api_priorities_dump(const char *const *hosts, const int64_t *scores, size_t n) {
  json_t *list = json_array(), *item;
  char *out = NULL;
  if (list == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    if (hosts[i] == NULL)
      goto out_list;
    item = json_object();
    if (json_array_append_new(list, item) != 0 ||
        json_object_set_new(item, "Host", gs__api_text(hosts[i])) != 0 ||
        json_object_set_new(item, "Score", json_integer((json_int_t)scores[i])) != 0)
      goto out_list;
  }
  out = gs__api_dump(list);
out_list:
  json_decref(list);
  return out;
}

/* ---- bind --------------------------------------------------------------- */

static enum gs_err bind_field(const json_t *root, const char *key, char *dst, size_t cap,
                              bool allow_empty, struct gs_diag *diag) {
  const json_t *v = json_object_get(root, key);
  if (!json_is_string(v)) {
    gs_diag_set(diag, key, v == NULL ? "missing" : "must be a string");
    return GS_EPARSE;
  }
  if (!allow_empty && json_string_length(v) == 0) {
    gs_diag_set(diag, key, "must not be empty");
    return GS_EPARSE;
  }
  return gs__api_copy(dst, cap, json_string_value(v), key, key, diag);
}

enum gs_err gs_api_bind_args_decode(const char *body, size_t len, struct gs_api_bind_args *ret,
                                    struct gs_diag *diag) {
  struct gs_api_bind_args a;
  json_t *root;
  enum gs_err err;

  err = body_load(body, len, "ExtenderBindingArgs", &root, diag);
  if (err != GS_EOK)
    return err;
  memset(&a, 0, sizeof a);
  err = bind_field(root, "PodName", a.pod_name, sizeof a.pod_name, false, diag);
  if (err == GS_EOK)
    err = bind_field(root, "PodNamespace", a.pod_ns, sizeof a.pod_ns, false, diag);
  if (err == GS_EOK)
    err = bind_field(root, "PodUID", a.pod_uid, sizeof a.pod_uid, true, diag);
  if (err == GS_EOK)
    err = bind_field(root, "Node", a.node, sizeof a.node, false, diag);
  json_decref(root);
  if (err == GS_EOK)
    *ret = a;
  return err;
}

/* {"Error":text}; escape_percent for texts kube-scheduler formats. */
static char *error_object_dump(const char *error, bool escape_percent) {
  json_t *root = json_object();
  char *out = NULL;
  if (root != NULL &&
      json_object_set_new(root, "Error",
                          escape_percent ? error_text(error) : gs__api_text(error)) == 0)
    out = gs__api_dump(root);
  json_decref(root);
  return out;
}

char *gs_api_bind_result_dump(const char *error) {
  return error_object_dump(error, true);
}

char *gs_api_error_dump(const char *error) {
  return error_object_dump(error, false);
}
