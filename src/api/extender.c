/* Extender v1 wire types (docs/kube-protocol.md §A.3): ExtenderArgs,
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

#include "strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum gs_err gs__api_body_load(const char *body, size_t len, const char *what, json_t **ret,
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

enum gs_err gs__api_body_pod(const char *body, size_t len, const char *what, json_t **ret_root,
                             const json_t **ret_pod, struct gs_diag *diag) {
  const char *name;
  json_t *root;
  enum gs_err err = gs__api_body_load(body, len, what, &root, diag);
  if (err != GS_EOK)
    return err;
  *ret_pod = gs__api_get(root, "Pod");
  if (*ret_pod == NULL) {
    gs_diag_set(diag, "Pod", "missing Pod");
    err = GS_EPARSE;
  } else {
    err = gs__api_object_name(*ret_pod, "Pod", "pod", &name, diag);
  }
  if (err != GS_EOK) {
    json_decref(root);
    return err;
  }
  *ret_root = root;
  return GS_EOK;
}

enum gs_err gs__api_object_name(const json_t *obj, const char *path, const char *what,
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
      /* The path is formatted only for an error: this runs per node. */
      v = json_array_get(names, i);
      if (!json_is_string(v) || json_string_length(v) == 0) {
        gs__api_path(where, "NodeNames[%zu]", i);
        gs_diag_set(diag, where, "must be a non-empty string");
        return GS_EPARSE;
      }
      if (json_string_length(v) > GS_NAME_MAX) {
        gs__api_path(where, "NodeNames[%zu]", i);
        gs_diag_set(diag, where, "node name is longer than %d bytes", GS_NAME_MAX);
        return GS_ETOOBIG;
      }
      a->names[i] = json_string_value(v);
    } else {
      v = json_array_get(items, i);
      gs__api_path(where, "Nodes.items[%zu]", i);
      err = gs__api_object_name(v, where, "node", &a->names[i], diag);
      if (err != GS_EOK)
        return err;
      a->nodes[i] = v;
    }
  }
  return GS_EOK;
}

/* ---- the common shape, without a value per node ------------------------------
 *
 * kube-scheduler (nodeCacheCapable) sends {"Pod":{...},"Nodes":null,
 * "NodeNames":["n1",...]}. Parsing the whole body with jansson made a
 * value per name: over 1,000 names that was most of a filter's cost
 * (docs/benchmarks.md, http). This scanner takes exactly that shape --
 * keys Pod, Nodes (null) and NodeNames, each at most once, names of
 * printable ASCII without escapes -- and hands only the Pod's bytes to
 * jansson. Anything else, including every error, returns GS_EAGAIN and
 * the general path below decides, so answers and messages are unchanged. */

#define FAST_DEPTH_MAX 512 /* deeper Pods go the general way (jansson's cap) */

static const char *fast_ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
    p++;
  return p;
}

/* The end of the object or array starting at p (a '{' or '['), strings
 * and nesting respected; NULL if it does not close. Validity is jansson's
 * to judge afterwards. */
static const char *fast_skip(const char *p, const char *end) {
  int depth = 0;
  for (; p < end; p++) {
    char c = *p;
    if (c == '"') {
      for (p++; p < end && *p != '"'; p++)
        if (*p == '\\')
          p++;
      if (p >= end)
        return NULL;
    } else if (c == '{' || c == '[') {
      if (++depth > FAST_DEPTH_MAX)
        return NULL;
    } else if (c == '}' || c == ']') {
      if (--depth == 0)
        return p + 1;
    }
  }
  return NULL;
}

/* The bytes a plain string may hold: printable ASCII but '"' and '\\'.
 * One load a byte instead of four compares: the names of a filter over
 * 1,000 nodes are 13 KB scanned per request (docs/benchmarks.md §10). */
#define PLAIN_RANGE(c) ((c) >= 0x20 && (c) <= 0x7E && (c) != '"' && (c) != '\\')
#define PLAIN_ROW(b)                                                                             \
  PLAIN_RANGE(b + 0), PLAIN_RANGE(b + 1), PLAIN_RANGE(b + 2), PLAIN_RANGE(b + 3),                \
      PLAIN_RANGE(b + 4), PLAIN_RANGE(b + 5), PLAIN_RANGE(b + 6), PLAIN_RANGE(b + 7),            \
      PLAIN_RANGE(b + 8), PLAIN_RANGE(b + 9), PLAIN_RANGE(b + 10), PLAIN_RANGE(b + 11),          \
      PLAIN_RANGE(b + 12), PLAIN_RANGE(b + 13), PLAIN_RANGE(b + 14), PLAIN_RANGE(b + 15)
static const bool plain_byte[256] = {PLAIN_ROW(0x00), PLAIN_ROW(0x10), PLAIN_ROW(0x20),
                                     PLAIN_ROW(0x30), PLAIN_ROW(0x40), PLAIN_ROW(0x50),
                                     PLAIN_ROW(0x60), PLAIN_ROW(0x70)}; /* 0x80..: false */

/* A plain string at p: printable ASCII, no escapes. Sets *ret_end past the
 * closing quote. */
static bool fast_plain(const char *p, const char *end, const char **ret_text, size_t *ret_len,
                       const char **ret_end) {
  const char *q;
  if (p >= end || *p != '"')
    return false;
  for (q = p + 1; q < end && plain_byte[(unsigned char)*q]; q++)
    ;
  if (q >= end || *q != '"')
    return false;
  *ret_text = p + 1;
  *ret_len = (size_t)(q - p - 1);
  *ret_end = q + 1;
  return true;
}

static enum gs_err args_fast(const char *body, size_t len, struct gs_api_args *ret) {
  const char *p = body, *end = body + len, *pod_at = NULL, *pod_end = NULL, *names_at = NULL;
  const char *key = NULL, *text = NULL;
  size_t klen = 0, tlen = 0, n = 0, bytes = 0;
  bool seen_nodes = false;
  struct gs_api_args a;
  struct gs_diag scratch = {"", ""};
  const char *name;
  char *dst;

  p = fast_ws(p, end);
  if (p >= end || *p++ != '{')
    return GS_EAGAIN;
  for (;;) {
    p = fast_ws(p, end);
    if (!fast_plain(p, end, &key, &klen, &p))
      return GS_EAGAIN;
    p = fast_ws(p, end);
    if (p >= end || *p++ != ':')
      return GS_EAGAIN;
    p = fast_ws(p, end);
    if (klen == 3 && memcmp(key, "Pod", 3) == 0 && pod_at == NULL) {
      if (p >= end || *p != '{' || (pod_end = fast_skip(p, end)) == NULL)
        return GS_EAGAIN;
      pod_at = p;
      p = pod_end;
    } else if (klen == 5 && memcmp(key, "Nodes", 5) == 0 && !seen_nodes) {
      if ((size_t)(end - p) < 4 || memcmp(p, "null", 4) != 0)
        return GS_EAGAIN;
      seen_nodes = true;
      p += 4;
    } else if (klen == 9 && memcmp(key, "NodeNames", 9) == 0 && names_at == NULL) {
      if (p >= end || *p != '[')
        return GS_EAGAIN;
      names_at = p++;
      p = fast_ws(p, end);
      if (p < end && *p == ']') {
        p++;
      } else {
        for (;;) {
          if (!fast_plain(p, end, &text, &tlen, &p) || tlen == 0 || tlen > GS_NAME_MAX ||
              ++n > GS_API_NODES_MAX)
            return GS_EAGAIN;
          bytes += tlen + 1;
          p = fast_ws(p, end);
          if (p < end && *p == ',') {
            p = fast_ws(p + 1, end);
            continue;
          }
          if (p < end && *p == ']') {
            p++;
            break;
          }
          return GS_EAGAIN;
        }
      }
    } else {
      return GS_EAGAIN;
    }
    p = fast_ws(p, end);
    if (p < end && *p == ',') {
      p++;
      continue;
    }
    if (p < end && *p == '}') {
      p++;
      break;
    }
    return GS_EAGAIN;
  }
  if (fast_ws(p, end) != end || pod_at == NULL || names_at == NULL)
    return GS_EAGAIN;

  memset(&a, 0, sizeof a);
  a.root = json_loadb(pod_at, (size_t)(pod_end - pod_at), JSON_REJECT_DUPLICATES, NULL);
  if (a.root == NULL || gs__api_object_name(a.root, "Pod", "pod", &name, &scratch) != GS_EOK) {
    json_decref(a.root);
    return GS_EAGAIN;
  }
  a.pod = a.root;
  a.by_names = true;
  a.nnodes = n;
  if (n > 0) {
    /* One block: n names, n node pointers (NULL), then the name bytes. */
    a.names = gs_malloc(2 * n * sizeof(void *) + bytes);
    if (a.names == NULL) {
      json_decref(a.root);
      return GS_ENOMEM;
    }
    a.nodes = (const json_t **)(void *)(a.names + n);
    dst = (char *)(void *)(a.names + 2 * n);
    p = fast_ws(names_at + 1, end);
    for (size_t i = 0; i < n; i++) {
      /* scanned above: each name is '"', plain bytes, '"' */
      text = p + 1;
      tlen = (size_t)((const char *)memchr(text, '"', (size_t)(end - text)) - text);
      p = text + tlen + 1;
      memcpy(dst, text, tlen);
      dst[tlen] = '\0';
      a.names[i] = dst;
      a.nodes[i] = NULL;
      dst += tlen + 1;
      p = fast_ws(p, end);
      if (p < end && *p == ',')
        p = fast_ws(p + 1, end);
    }
  }
  *ret = a;
  return GS_EOK;
}

enum gs_err gs_api_args_decode(const char *body, size_t len, struct gs_api_args *ret,
                               struct gs_diag *diag) {
  struct gs_api_args a;
  enum gs_err err;

  if (body != NULL && len > 0 && len <= GS_API_BODY_MAX) {
    err = args_fast(body, len, ret);
    if (err != GS_EAGAIN)
      return err;
  }
  memset(&a, 0, sizeof a);
  err = gs__api_body_pod(body, len, "ExtenderArgs", &a.root, &a.pod, diag);
  if (err != GS_EOK)
    return err;
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
 * some versions and errors.New in others (docs/kube-protocol.md §A.8), so no escape
 * reads right in both. '%' in an Error text (only ever echoed user input)
 * becomes U+FF05 FULLWIDTH PERCENT SIGN: it reads the same and is never a
 * verb. */
static char *error_copy(const char *error) {
  static const char fw_percent[] = "\xEF\xBC\x85";
  size_t len, extra = 0, i, j;
  char *copy;
  if (error == NULL)
    error = "";
  len = strlen(error);
  for (i = 0; i < len; i++)
    extra += error[i] == '%' ? 2 : 0;
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
  return copy;
}

/* error_copy as a JSON string; no copy when there is no '%'. */
static json_t *error_text(const char *error) {
  char *copy;
  json_t *out;
  if (error == NULL || strchr(error, '%') == NULL)
    return gs__api_text(error != NULL ? error : "");
  if ((copy = error_copy(error)) == NULL)
    return NULL;
  out = gs__api_text(copy);
  gs_free(copy);
  return out;
}

/* A string literal, without counting its bytes by hand. */
#define JW_LIT(w, lit) gs_jw_raw((w), (lit), sizeof(lit) - 1)

/* The builder writes NodeNames and the failure maps straight into text
 * buffers: one jansson value per node was most of a filter's cost over
 * 1,000 names (docs/benchmarks.md, http). The bytes are those json_dumps
 * gave: a name failing twice keeps its first place and its last reason, as
 * json_object_set does; passing names are listed as often as given. */
struct fail_entry {
  const char *name, *reason; /* in the arena */
};
struct fail_map {
  struct fail_entry *v;
  size_t n, cap;
  struct gs_strmap *index; /* name → entry index + 1 */
};
struct arena_block {
  struct arena_block *next;
  size_t used, cap;
  char data[];
};

struct gs_api_filter_result {
  bool by_names;
  json_t *pass;           /* Nodes form: array of node objects */
  struct gs_buf names;    /* NodeNames form: "a","b",... */
  size_t npass;
  struct fail_map failed; /* FailedNodes */
  struct fail_map unresolvable;
  char *error;            /* Error text, '%' already replaced */
  struct arena_block *arena;
  bool oom;
};

/* A stable copy of s (blocks never move: the maps keep pointers). */
static const char *arena_copy(struct gs_api_filter_result *r, const char *s) {
  size_t len = strlen(s) + 1;
  struct arena_block *b = r->arena;
  if (b == NULL || b->cap - b->used < len) {
    size_t cap = len > 65536 ? len : 65536;
    b = gs_malloc(sizeof *b + cap);
    if (b == NULL)
      return NULL;
    b->next = r->arena;
    b->used = 0;
    b->cap = cap;
    r->arena = b;
  }
  memcpy(b->data + b->used, s, len);
  b->used += len;
  return b->data + b->used - len;
}

struct gs_api_filter_result *gs_api_filter_result_new(bool by_names) {
  struct gs_api_filter_result *r = gs_calloc(1, sizeof *r);
  if (r == NULL)
    return NULL;
  r->by_names = by_names;
  r->pass = by_names ? NULL : json_array();
  r->failed.index = gs_strmap_new();
  r->unresolvable.index = gs_strmap_new();
  r->error = gs_strdup("");
  if ((!by_names && r->pass == NULL) || r->failed.index == NULL ||
      r->unresolvable.index == NULL || r->error == NULL) {
    gs_api_filter_result_free(r);
    return NULL;
  }
  return r;
}

void gs_api_filter_result_free(struct gs_api_filter_result *r) {
  if (r == NULL)
    return;
  json_decref(r->pass);
  gs_buf_release(&r->names);
  gs_free(r->failed.v);
  gs_strmap_free(r->failed.index);
  gs_free(r->unresolvable.v);
  gs_strmap_free(r->unresolvable.index);
  gs_free(r->error);
  while (r->arena != NULL) {
    struct arena_block *next = r->arena->next;
    gs_free(r->arena);
    r->arena = next;
  }
  gs_free(r);
}

enum gs_err gs_api_filter_result_expect(struct gs_api_filter_result *r, size_t nnodes) {
  struct fail_entry *v;
  if (r == NULL)
    return GS_EINVAL;
  if (nnodes <= r->failed.cap)
    return GS_EOK;
  v = gs_realloc(r->failed.v, nnodes * sizeof *v);
  if (v == NULL)
    return GS_ENOMEM;
  r->failed.v = v;
  r->failed.cap = nnodes;
  return gs_strmap_reserve(r->failed.index, nnodes);
}

enum gs_err gs_api_filter_result_pass(struct gs_api_filter_result *r, const char *name,
                                      const json_t *node_obj) {
  if (r == NULL || name == NULL)
    return GS_EINVAL;
  if (r->by_names) {
    if (r->npass > 0)
      gs_jw_raw(&r->names, ",", 1);
    gs_jw_str(&r->names, name);
    r->npass++;
    return r->names.failed != GS_EOK ? GS_ENOMEM : GS_EOK;
  }
  if (!json_is_object(node_obj))
    return GS_EINVAL;
  /* Returned unmodified (docs/kube-protocol.md §A.3): a new reference to the
   * caller's object, which jansson never changes while dumping. */
  return json_array_append_new(r->pass, json_incref((json_t *)node_obj)) == 0 ? GS_EOK
                                                                             : GS_ENOMEM;
}

enum gs_err gs_api_filter_result_fail(struct gs_api_filter_result *r, const char *name,
                                      const char *reason, bool unresolvable) {
  struct fail_map *m;
  const char *rcopy;
  enum gs_err e;
  if (r == NULL || name == NULL || reason == NULL)
    return GS_EINVAL;
  m = unresolvable ? &r->unresolvable : &r->failed;
  rcopy = arena_copy(r, reason);
  if (rcopy == NULL)
    return GS_ENOMEM;
  if (m->n == m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct fail_entry *v = gs_realloc(m->v, cap * sizeof *v);
    if (v == NULL)
      return GS_ENOMEM;
    m->v = v;
    m->cap = cap;
  }
  /* Insert first: names are almost never repeated, so one hash and probe
   * per refused node instead of a lookup and then an insert (the repeat's
   * name copy stays unused in the arena). */
  m->v[m->n].name = arena_copy(r, name);
  m->v[m->n].reason = rcopy;
  if (m->v[m->n].name == NULL)
    return GS_ENOMEM;
  e = gs_strmap_put(m->index, m->v[m->n].name, (void *)(uintptr_t)(m->n + 1));
  if (e == GS_EEXISTS) {
    uintptr_t at = (uintptr_t)gs_strmap_get(m->index, name);
    m->v[at - 1].reason = rcopy; /* same key again: the last value wins */
    return GS_EOK;
  }
  if (e != GS_EOK)
    return GS_ENOMEM;
  m->n++;
  return GS_EOK;
}

enum gs_err gs_api_filter_result_error(struct gs_api_filter_result *r, const char *error) {
  char *copy;
  if (r == NULL)
    return GS_EINVAL;
  copy = error_copy(error);
  if (copy == NULL)
    return GS_ENOMEM;
  gs_free(r->error);
  r->error = copy;
  return GS_EOK;
}

static void write_fail_map(struct gs_buf *w, const struct fail_map *m) {
  gs_jw_raw(w, "{", 1);
  for (size_t i = 0; i < m->n; i++) {
    if (i > 0)
      gs_jw_raw(w, ",", 1);
    gs_jw_str(w, m->v[i].name);
    gs_jw_raw(w, ":", 1);
    gs_jw_str(w, m->v[i].reason);
  }
  gs_jw_raw(w, "}", 1);
}

char *gs_api_filter_result_dump(const struct gs_api_filter_result *r) {
  struct gs_buf w = {0};
  if (r == NULL)
    return NULL;
  /* one allocation for the usual answer (a name and a reason of ~64 bytes
   * per refused node) instead of growing through every power of two */
  if (!gs_buf_room(&w, r->names.len + 128 + (r->failed.n + r->unresolvable.n) * 96)) {
    gs_buf_release(&w);
    return NULL;
  }
  if (r->by_names) {
    JW_LIT(&w, "{\"Nodes\":null,\"NodeNames\":[");
    if (r->names.len > 0)
      gs_jw_raw(&w, r->names.p, r->names.len);
    JW_LIT(&w, "]");
  } else {
    json_t *list = json_object();
    char *text = NULL;
    if (list != NULL && json_object_set_new(list, "metadata", json_object()) == 0 &&
        json_object_set(list, "items", r->pass) == 0)
      text = gs__api_dump(list);
    json_decref(list);
    if (text == NULL) {
      gs_buf_release(&w);
      return NULL;
    }
    JW_LIT(&w, "{\"Nodes\":");
    gs_jw_raw(&w, text, strlen(text));
    JW_LIT(&w, ",\"NodeNames\":null");
    gs_free(text);
  }
  JW_LIT(&w, ",\"FailedNodes\":");
  write_fail_map(&w, &r->failed);
  JW_LIT(&w, ",\"FailedAndUnresolvableNodes\":");
  write_fail_map(&w, &r->unresolvable);
  JW_LIT(&w, ",\"Error\":");
  gs_jw_str(&w, r->error);
  JW_LIT(&w, "}");
  return gs_buf_take(&w);
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
  struct gs_buf w = {0};
  JW_LIT(&w, "[");
  for (size_t i = 0; i < n; i++) {
    if (hosts[i] == NULL) {
      gs_buf_release(&w);
      return NULL;
    }
    if (i > 0)
      JW_LIT(&w, ",");
    JW_LIT(&w, "{\"Host\":");
    gs_jw_str(&w, hosts[i]);
    JW_LIT(&w, ",\"Score\":");
    gs_jw_int(&w, scores[i]);
    JW_LIT(&w, "}");
  }
  JW_LIT(&w, "]");
  return gs_buf_take(&w);
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

  err = gs__api_body_load(body, len, "ExtenderBindingArgs", &root, diag);
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
