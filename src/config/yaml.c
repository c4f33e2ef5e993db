/* YAML → json_t with libyaml's event API.
 *
 * One file (~800 lines) on purpose: the typing rules, the event builder
 * and its bounds share one builder state and are read together.
 *
 * Typing follows what Kubernetes does with YAML (sigs.k8s.io/yaml, a fork
 * of go-yaml v2, i.e. YAML 1.1), so that a demo or config file means here
 * what it means to kubectl:
 *   - plain (unquoted) scalars: null for "", "~", null/Null/NULL; booleans
 *     for true/false and the YAML 1.1 words y/yes/on, n/no/off (in their
 *     lower, Capitalised and UPPER forms) — so `value: no` is the boolean
 *     false, exactly as kubectl reads it; integers for decimal integers with
 *     an optional sign; reals for decimal floats ("1.5", "-2e3", ".5").
 *   - deliberate departures, all towards "string": hex/octal/binary forms,
 *     digits with underscores and integers with a leading zero ("0x1F",
 *     "0777", "1_000") stay strings rather than guess a base; an integer
 *     beyond int64 becomes a real; .inf/.nan have no JSON form and are
 *     refused with an error.
 *   - quoted and block (| >) scalars are strings. Explicit tags !!str,
 *     !!int, !!float, !!bool, !!null are honoured; other tags are ignored.
 *   - mapping keys are always strings: the key's text as written (go-yaml
 *     would turn a key `yes` into "true"; nobody means that). Complex keys
 *     (a list or mapping as key) are refused. Duplicate keys: the last wins,
 *     as in encoding/json.
 *   - anchors and aliases are resolved by copying (the result is a tree, so
 *     callers may modify it); merge keys (`<<: *base`) are supported, with
 *     the mapping's own keys winning. A recursive alias is refused.
 *   - only the first document of a stream is read; the rest is not parsed.
 *     An empty stream is null. With GS__YAML_ALL_DOCS (gs_yaml_load_file_docs)
 *     every document is read, into an array of their roots.
 * Settings files (--config, kubeconfig) are read with GS__YAML_PLAIN_TEXT:
 * plain scalars other than null keep their text, and the reader types each
 * field itself. That is what sigs.k8s.io/yaml does when it decodes into a
 * Go struct (a string field keeps the YAML text), so `user: y` or
 * `namespace: no` in a kubeconfig mean the names "y" and "no", as for
 * kubectl, and not booleans.
 * Bounds: at most GS_YAML_NODES_MAX nodes in all, GS_YAML_ALIAS_NODES_MAX of
 * them copied through aliases (a "billion laughs" document is refused
 * before anything is copied), and GS_YAML_DEPTH_MAX levels of nesting.
 */
#include "config_int.h"
#include <gpushare/alloc.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#define TAG_PREFIX "tag:yaml.org,2002:"

/* A collection being built. */
struct frame {
  json_t *node;     /* array or object */
  char *anchor;     /* owned, NULL if none */
  char *key;        /* mapping: key waiting for its value (owned) */
  size_t key_len;
  bool have_key;
  bool key_is_merge; /* the pending key is a plain "<<" */
  json_t *merges;   /* mapping: "<<" sources in order, NULL if none */
  size_t count;     /* nodes in this subtree, keys and aliases included */
  size_t height;    /* levels below this node */
};

struct anchor {
  char *name;
  json_t *value;
  size_t count;
  size_t height;
};

struct builder {
  const char *name;
  const char *text;
  size_t len;
  struct frame *stack;
  size_t depth, stack_cap;
  struct anchor *anchors;
  size_t nanchors, anchors_cap;
  json_t *anchor_index; /* name → index into anchors of its latest node */
  size_t nodes;       /* total, aliases expanded */
  size_t alias_nodes; /* copied through aliases */
  json_t *root;
  unsigned flags; /* GS__YAML_* */
  enum gs_err err;
  struct gs_diag *diag;
};

/* ---- diagnostics ------------------------------------------------------- */

static void fail_at(struct builder *b, enum gs_err err, size_t line, size_t col, const char *fmt,
                    ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static void fail_at(struct builder *b, enum gs_err err, size_t line, size_t col, const char *fmt,
                    ...) {
  char where[128], text[256];
  va_list ap;
  if (b->err != GS_EOK)
    return;
  b->err = err;
  snprintf(where, sizeof where, "%s:%zu:%zu", b->name, line + 1, col + 1);
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  gs_diag_set(b->diag, where, "%s", text);
}

#define FAIL_MARK(b, err, mark, ...) fail_at((b), (err), (mark).line, (mark).column, __VA_ARGS__)

/* Line and column (0-based, in characters) of a byte offset, for reader
 * errors, which carry only an offset. */
static void offset_position(const char *text, size_t len, size_t offset, size_t *line,
                            size_t *col) {
  *line = 0;
  *col = 0;
  for (size_t i = 0; i < offset && i < len; i++) {
    unsigned char c = (unsigned char)text[i];
    if (c == '\n') {
      (*line)++;
      *col = 0;
    } else if ((c & 0xC0) != 0x80) {
      (*col)++;
    }
  }
}

static void fail_parser(struct builder *b, const yaml_parser_t *p) {
  size_t line, col;
  if (p->error == YAML_MEMORY_ERROR) {
    fail_at(b, GS_ENOMEM, p->problem_mark.line, p->problem_mark.column, "out of memory");
    return;
  }
  const char *problem = p->problem ? p->problem : "malformed YAML";
  if (p->error == YAML_READER_ERROR) {
    offset_position(b->text, b->len, p->problem_offset, &line, &col);
    if (p->problem_value != -1)
      fail_at(b, GS_EPARSE, line, col, "%s (byte 0x%02x)", problem, (unsigned)p->problem_value);
    else
      fail_at(b, GS_EPARSE, line, col, "%s", problem);
    return;
  }
  if (p->context != NULL)
    fail_at(b, GS_EPARSE, p->problem_mark.line, p->problem_mark.column, "%s (%s at %zu:%zu)",
            problem, p->context, p->context_mark.line + 1, p->context_mark.column + 1);
  else
    fail_at(b, GS_EPARSE, p->problem_mark.line, p->problem_mark.column, "%s", problem);
}

/* ---- scalars ----------------------------------------------------------- */

static bool in_list(const char *s, const char *const *list) {
  for (; *list != NULL; list++)
    if (strcmp(s, *list) == 0)
      return true;
  return false;
}

static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const trues[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "y",
                                    "Y",    "on",   "On",   "ON",  NULL};
static const char *const falses[] = {"false", "False", "FALSE", "no", "No", "NO", "n",
                                     "N",     "off",   "Off",   "OFF", NULL};
static const char *const specials[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF",
                                       "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN",
                                       NULL};

bool gs__config_yaml_bool(const char *text, bool *ret) {
  if (in_list(text, trues)) {
    *ret = true;
    return true;
  }
  if (in_list(text, falses)) {
    *ret = false;
    return true;
  }
  return false;
}

static bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

/* [-+]?(0|[1-9][0-9]*) */
static bool looks_int(const char *s) {
  if (*s == '-' || *s == '+')
    s++;
  if (*s == '0')
    return s[1] == '\0';
  if (!is_digit(*s))
    return false;
  while (is_digit(*s))
    s++;
  return *s == '\0';
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? with a '.' or an
 * exponent (pure digits are looks_int's, or strings with a leading zero). */
static bool looks_float(const char *s) {
  bool digits = false, frac = false, exp = false;
  if (*s == '-' || *s == '+')
    s++;
  while (is_digit(*s)) {
    s++;
    digits = true;
  }
  if (*s == '.') {
    s++;
    frac = true;
    while (is_digit(*s)) {
      s++;
      digits = true;
    }
  }
  if (!digits)
    return false;
  if (*s == 'e' || *s == 'E') {
    s++;
    if (*s == '-' || *s == '+')
      s++;
    if (!is_digit(*s))
      return false;
    while (is_digit(*s))
      s++;
    exp = true;
  }
  return *s == '\0' && (frac || exp);
}

enum kind { K_ANY, K_STR, K_INT, K_FLOAT, K_BOOL, K_NULL };

/* Number, bool or null from a plain scalar; NULL with *bad set when the
 * text names a value JSON cannot hold; NULL otherwise (a string). */
static json_t *resolve_plain(const char *s, bool *bad) {
  *bad = false;
  if (in_list(s, nulls))
    return json_null();
  if (in_list(s, trues))
    return json_true();
  if (in_list(s, falses))
    return json_false();
  if (in_list(s, specials)) {
    *bad = true;
    return NULL;
  }
  if (looks_int(s)) {
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == 0)
      return json_integer(v);
    /* Beyond int64: a real, as encoding/json would read it. */
  } else if (!looks_float(s)) {
    return NULL;
  }
  errno = 0;
  double d = strtod(s, NULL);
  if (errno == ERANGE && (d > 1.0 || d < -1.0)) {
    *bad = true;
    return NULL;
  }
  return json_real(d);
}

static bool json_is_kind(const json_t *v, enum kind k) {
  switch (k) {
  case K_INT:
    return json_is_integer(v);
  case K_FLOAT:
    return json_is_number(v);
  case K_BOOL:
    return json_is_boolean(v);
  case K_NULL:
    return json_is_null(v);
  default:
    return true;
  }
}

static enum kind tag_kind(const char *tag) {
  static const struct {
    const char *name;
    enum kind kind;
  } tags[] = {{"str", K_STR},   {"binary", K_STR}, {"timestamp", K_STR}, {"int", K_INT},
              {"float", K_FLOAT}, {"bool", K_BOOL}, {"null", K_NULL}};
  if (tag == NULL)
    return K_ANY;
  if (strcmp(tag, "!") == 0) /* the non-specific tag: a string */
    return K_STR;
  if (strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) != 0)
    return K_ANY;
  tag += strlen(TAG_PREFIX);
  for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
    if (strcmp(tag, tags[i].name) == 0)
      return tags[i].kind;
  return K_ANY;
}

/* The json_t of a scalar event (new reference), or NULL after fail_at. */
static json_t *scalar_value(struct builder *b, const yaml_event_t *ev) {
  const char *s = (const char *)ev->data.scalar.value;
  size_t n = ev->data.scalar.length;
  enum kind k = tag_kind((const char *)ev->data.scalar.tag);
  bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
  json_t *v = NULL;
  bool bad = false;

  if (k == K_STR || (k == K_ANY && !plain)) {
    v = json_stringn(s, n);
  } else if (k == K_ANY && (b->flags & GS__YAML_PLAIN_TEXT)) {
    v = in_list(s, nulls) && strlen(s) == n ? json_null() : json_stringn(s, n);
  } else if (strlen(s) != n) {
    /* An embedded NUL ("\0" escape) cannot be a number; keep the text. */
    if (k != K_ANY) {
      FAIL_MARK(b, GS_EPARSE, ev->start_mark, "cannot read a string with NUL as a tagged value");
      return NULL;
    }
    v = json_stringn(s, n);
  } else {
    v = resolve_plain(s, &bad);
    if (bad) {
      FAIL_MARK(b, GS_EPARSE, ev->start_mark, "\"%.40s\" has no JSON form", s);
      return NULL;
    }
    if (v != NULL && !json_is_kind(v, k)) {
      json_decref(v);
      v = NULL;
    }
    if (v == NULL) {
      if (k != K_ANY) {
        FAIL_MARK(b, GS_EPARSE, ev->start_mark, "cannot read \"%.40s\" as %s", s,
                  (const char *)ev->data.scalar.tag + strlen(TAG_PREFIX));
        return NULL;
      }
      v = json_stringn(s, n);
    }
  }
  if (v == NULL)
    FAIL_MARK(b, GS_ENOMEM, ev->start_mark, "out of memory");
  return v;
}

/* ---- anchors ----------------------------------------------------------- */

static struct anchor *anchor_find(struct builder *b, const char *name) {
  json_t *i = json_object_get(b->anchor_index, name);
  return i != NULL ? &b->anchors[json_integer_value(i)] : NULL;
}

/* Registers name (taken) for value (borrowed, incref'd). A redefined
 * anchor refers to its latest node from then on. */
static bool anchor_add(struct builder *b, char *name, json_t *value, size_t count, size_t height,
                       yaml_mark_t mark) {
  if (b->anchor_index == NULL && (b->anchor_index = json_object()) == NULL)
    goto nomem;
  if (b->nanchors == b->anchors_cap) {
    size_t cap = b->anchors_cap ? b->anchors_cap * 2 : 16;
    struct anchor *a = gs_realloc(b->anchors, cap * sizeof *a);
    if (a == NULL)
      goto nomem;
    b->anchors = a;
    b->anchors_cap = cap;
  }
  if (json_object_set_new(b->anchor_index, name, json_integer((json_int_t)b->nanchors)) != 0)
    goto nomem;
  b->anchors[b->nanchors++] =
      (struct anchor){.name = name, .value = json_incref(value), .count = count, .height = height};
  return true;
nomem:
  gs_free(name);
  FAIL_MARK(b, GS_ENOMEM, mark, "out of memory");
  return false;
}

/* A copy of v whose collections are new and whose scalars are shared. The
 * depth is bounded by GS_YAML_DEPTH_MAX (checked before copying). */
static json_t *copy_tree(json_t *v) {
  if (json_is_array(v)) {
    json_t *a = json_array();
    size_t i;
    json_t *e;
    if (a == NULL)
      return NULL;
    json_array_foreach(v, i, e) {
      if (json_array_append_new(a, copy_tree(e)) != 0) {
        json_decref(a);
        return NULL;
      }
    }
    return a;
  }
  if (json_is_object(v)) {
    json_t *o = json_object();
    const char *k;
    size_t klen;
    json_t *e;
    if (o == NULL)
      return NULL;
    json_object_keylen_foreach(v, k, klen, e) {
      if (json_object_setn_new(o, k, klen, copy_tree(e)) != 0) {
        json_decref(o);
        return NULL;
      }
    }
    return o;
  }
  return json_incref(v);
}

/* ---- building ---------------------------------------------------------- */

static struct frame *top(struct builder *b) {
  return b->depth ? &b->stack[b->depth - 1] : NULL;
}

static bool count_nodes(struct builder *b, size_t n, yaml_mark_t mark) {
  if (n > GS_YAML_NODES_MAX - b->nodes) {
    FAIL_MARK(b, GS_ETOOBIG, mark, "document has more than %u nodes", GS_YAML_NODES_MAX);
    return false;
  }
  b->nodes += n;
  return true;
}

/* The parent is a mapping waiting for a key: take this scalar's text. */
static bool take_key(struct builder *b, struct frame *f, const yaml_event_t *ev) {
  const char *s = (const char *)ev->data.scalar.value;
  size_t n = ev->data.scalar.length;
  if (!count_nodes(b, 1, ev->start_mark))
    return false;
  f->count++;
  f->key = gs_malloc(n + 1);
  if (f->key == NULL) {
    FAIL_MARK(b, GS_ENOMEM, ev->start_mark, "out of memory");
    return false;
  }
  memcpy(f->key, s, n + 1);
  f->key_len = n;
  f->have_key = true;
  f->key_is_merge = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                    ev->data.scalar.tag == NULL && strcmp(s, "<<") == 0;
  if (ev->data.scalar.anchor != NULL) {
    json_t *k = json_stringn(s, n);
    char *name = gs_strdup((const char *)ev->data.scalar.anchor);
    bool ok = k != NULL && name != NULL;
    if (ok)
      ok = anchor_add(b, name, k, 1, 0, ev->start_mark);
    else {
      gs_free(name);
      FAIL_MARK(b, GS_ENOMEM, ev->start_mark, "out of memory");
    }
    json_decref(k);
    return ok;
  }
  return true;
}

/* Attaches a finished node v (taken) to its parent or makes it the root. */
static bool attach(struct builder *b, json_t *v, size_t count, size_t height, yaml_mark_t mark) {
  struct frame *f = top(b);
  if (f == NULL) {
    b->root = v;
    return true;
  }
  f->count += count;
  if (height + 1 > f->height)
    f->height = height + 1;
  if (json_is_array(f->node)) {
    if (json_array_append_new(f->node, v) != 0) {
      FAIL_MARK(b, GS_ENOMEM, mark, "out of memory");
      return false;
    }
    return true;
  }
  /* Mapping value. */
  char *key = f->key;
  size_t key_len = f->key_len;
  bool merge = f->key_is_merge;
  f->key = NULL;
  f->have_key = false;
  f->key_is_merge = false;
  if (merge) {
    bool ok = json_is_object(v);
    if (json_is_array(v)) {
      size_t i;
      json_t *e;
      ok = true;
      json_array_foreach(v, i, e) ok = ok && json_is_object(e);
    }
    if (!ok) {
      gs_free(key);
      json_decref(v);
      FAIL_MARK(b, GS_EPARSE, mark, "a merge key \"<<\" needs a mapping or a list of mappings");
      return false;
    }
    if (f->merges == NULL && (f->merges = json_array()) == NULL) {
      gs_free(key);
      json_decref(v);
      FAIL_MARK(b, GS_ENOMEM, mark, "out of memory");
      return false;
    }
    gs_free(key);
    if (json_is_array(v)) {
      int rc = json_array_extend(f->merges, v);
      json_decref(v);
      if (rc != 0) {
        FAIL_MARK(b, GS_ENOMEM, mark, "out of memory");
        return false;
      }
      return true;
    }
    if (json_array_append_new(f->merges, v) != 0) {
      FAIL_MARK(b, GS_ENOMEM, mark, "out of memory");
      return false;
    }
    return true;
  }
  int rc = json_object_setn_new(f->node, key, key_len, v);
  gs_free(key);
  if (rc != 0) {
    FAIL_MARK(b, GS_ENOMEM, mark, "out of memory");
    return false;
  }
  return true;
}

static bool on_scalar(struct builder *b, const yaml_event_t *ev) {
  struct frame *f = top(b);
  if (f != NULL && json_is_object(f->node) && !f->have_key)
    return take_key(b, f, ev);
  if (!count_nodes(b, 1, ev->start_mark))
    return false;
  json_t *v = scalar_value(b, ev);
  if (v == NULL)
    return false;
  if (ev->data.scalar.anchor != NULL) {
    char *name = gs_strdup((const char *)ev->data.scalar.anchor);
    if (name == NULL) {
      json_decref(v);
      FAIL_MARK(b, GS_ENOMEM, ev->start_mark, "out of memory");
      return false;
    }
    if (!anchor_add(b, name, v, 1, 0, ev->start_mark)) {
      json_decref(v);
      return false;
    }
  }
  return attach(b, v, 1, 0, ev->start_mark);
}

static bool on_start(struct builder *b, const yaml_event_t *ev, bool mapping) {
  struct frame *f = top(b);
  const yaml_char_t *anchor =
      mapping ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
  if (f != NULL && json_is_object(f->node) && !f->have_key) {
    FAIL_MARK(b, GS_EPARSE, ev->start_mark, "a mapping key must be a scalar, not a %s",
              mapping ? "mapping" : "list");
    return false;
  }
  if (b->depth >= GS_YAML_DEPTH_MAX) {
    FAIL_MARK(b, GS_ETOOBIG, ev->start_mark, "nested deeper than %u levels", GS_YAML_DEPTH_MAX);
    return false;
  }
  if (!count_nodes(b, 1, ev->start_mark))
    return false;
  if (b->depth == b->stack_cap) {
    size_t cap = b->stack_cap ? b->stack_cap * 2 : 32;
    struct frame *s = gs_realloc(b->stack, cap * sizeof *s);
    if (s == NULL) {
      FAIL_MARK(b, GS_ENOMEM, ev->start_mark, "out of memory");
      return false;
    }
    b->stack = s;
    b->stack_cap = cap;
  }
  struct frame nf = {.node = mapping ? json_object() : json_array(), .count = 1};
  if (anchor != NULL)
    nf.anchor = gs_strdup((const char *)anchor);
  if (nf.node == NULL || (anchor != NULL && nf.anchor == NULL)) {
    json_decref(nf.node);
    gs_free(nf.anchor);
    FAIL_MARK(b, GS_ENOMEM, ev->start_mark, "out of memory");
    return false;
  }
  b->stack[b->depth++] = nf;
  return true;
}

static bool on_end(struct builder *b, const yaml_event_t *ev) {
  struct frame f = b->stack[--b->depth];
  bool ok = true;
  /* libyaml never ends a mapping between key and value (it emits a null). */
  gs_free(f.key);
  if (f.merges != NULL) {
    /* Own keys win; among merged mappings the earlier wins (YAML merge). */
    size_t i;
    json_t *m;
    json_array_foreach(f.merges, i, m) {
      if (json_object_update_missing(f.node, m) != 0) {
        FAIL_MARK(b, GS_ENOMEM, ev->start_mark, "out of memory");
        ok = false;
        break;
      }
    }
    json_decref(f.merges);
  }
  if (ok && f.anchor != NULL) {
    ok = anchor_add(b, f.anchor, f.node, f.count, f.height, ev->start_mark);
    f.anchor = NULL;
  }
  gs_free(f.anchor);
  if (!ok) {
    json_decref(f.node);
    return false;
  }
  return attach(b, f.node, f.count, f.height, ev->start_mark);
}

static bool on_alias(struct builder *b, const yaml_event_t *ev) {
  const char *name = (const char *)ev->data.alias.anchor;
  struct anchor *a = anchor_find(b, name);
  struct frame *f = top(b);
  if (a == NULL) {
    /* Also the case of an alias inside its own anchor (a cycle): the
     * anchor is registered only once its node is complete. */
    FAIL_MARK(b, GS_EPARSE, ev->start_mark, "unknown anchor \"%.60s\" (or a recursive alias)",
              name);
    return false;
  }
  if (f != NULL && json_is_object(f->node) && !f->have_key) {
    if (!json_is_string(a->value)) {
      FAIL_MARK(b, GS_EPARSE, ev->start_mark, "alias *%.60s used as a key is not a string", name);
      return false;
    }
    if (!count_nodes(b, 1, ev->start_mark))
      return false;
    f->count++;
    f->key_len = json_string_length(a->value);
    f->key = gs_malloc(f->key_len + 1);
    if (f->key == NULL) {
      FAIL_MARK(b, GS_ENOMEM, ev->start_mark, "out of memory");
      return false;
    }
    memcpy(f->key, json_string_value(a->value), f->key_len + 1);
    f->have_key = true;
    f->key_is_merge = false;
    return true;
  }
  if (a->count > GS_YAML_ALIAS_NODES_MAX - b->alias_nodes) {
    FAIL_MARK(b, GS_ETOOBIG, ev->start_mark,
              "aliases expand to more than %u nodes (refusing a \"billion laughs\" document)",
              GS_YAML_ALIAS_NODES_MAX);
    return false;
  }
  if (b->depth + a->height > GS_YAML_DEPTH_MAX) {
    FAIL_MARK(b, GS_ETOOBIG, ev->start_mark, "alias *%.60s nests deeper than %u levels", name,
              GS_YAML_DEPTH_MAX);
    return false;
  }
  if (!count_nodes(b, a->count, ev->start_mark))
    return false;
  b->alias_nodes += a->count;
  json_t *v = copy_tree(a->value);
  if (v == NULL) {
    FAIL_MARK(b, GS_ENOMEM, ev->start_mark, "out of memory");
    return false;
  }
  return attach(b, v, a->count, a->height, ev->start_mark);
}

/* Anchors are per document: the next one starts without them. */
static void forget_anchors(struct builder *b) {
  for (size_t i = 0; i < b->nanchors; i++) {
    gs_free(b->anchors[i].name);
    json_decref(b->anchors[i].value);
  }
  b->nanchors = 0;
  json_object_clear(b->anchor_index);
}

static void builder_release(struct builder *b) {
  for (size_t i = 0; i < b->depth; i++) {
    json_decref(b->stack[i].node);
    json_decref(b->stack[i].merges);
    gs_free(b->stack[i].anchor);
    gs_free(b->stack[i].key);
  }
  gs_free(b->stack);
  for (size_t i = 0; i < b->nanchors; i++) {
    gs_free(b->anchors[i].name);
    json_decref(b->anchors[i].value);
  }
  gs_free(b->anchors);
  json_decref(b->anchor_index);
  json_decref(b->root);
}

enum gs_err gs__yaml_parse(const char *text, size_t len, const char *name, unsigned flags,
                           json_t **ret, struct gs_diag *diag) {
  struct builder b = {
      .name = name ? name : "<input>", .text = text, .len = len, .flags = flags, .diag = diag};
  yaml_parser_t parser;
  yaml_event_t ev;
  bool stop = false;
  json_t *docs = NULL;

  if ((flags & GS__YAML_ALL_DOCS) && (docs = json_array()) == NULL) {
    gs_diag_set(diag, b.name, "out of memory");
    return GS_ENOMEM;
  }
  if (!yaml_parser_initialize(&parser)) {
    json_decref(docs);
    gs_diag_set(diag, b.name, "out of memory");
    return GS_ENOMEM;
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  while (!stop && b.err == GS_EOK) {
    if (!yaml_parser_parse(&parser, &ev)) {
      fail_parser(&b, &parser);
      break;
    }
    switch (ev.type) {
    case YAML_SCALAR_EVENT:
      on_scalar(&b, &ev);
      break;
    case YAML_SEQUENCE_START_EVENT:
      on_start(&b, &ev, false);
      break;
    case YAML_MAPPING_START_EVENT:
      on_start(&b, &ev, true);
      break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
      on_end(&b, &ev);
      break;
    case YAML_ALIAS_EVENT:
      on_alias(&b, &ev);
      break;
    case YAML_DOCUMENT_END_EVENT: /* the first document only, unless all */
      if (docs == NULL) {
        stop = true;
        break;
      }
      if (b.root != NULL && !json_is_null(b.root) && json_array_append(docs, b.root) != 0)
        b.err = GS_ENOMEM;
      json_decref(b.root);
      b.root = NULL;
      forget_anchors(&b);
      break;
    case YAML_STREAM_END_EVENT:
      stop = true;
      break;
    default:
      break;
    }
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&parser);
  if (b.err != GS_EOK) {
    builder_release(&b);
    json_decref(docs);
    return b.err;
  }
  if (docs != NULL) {
    json_decref(b.root);
    b.root = docs;
  }
  if (b.root == NULL)
    b.root = json_null(); /* an empty stream or document */
  *ret = b.root;
  b.root = NULL;
  builder_release(&b);
  return GS_EOK;
}

enum gs_err gs_yaml_parse(const char *text, size_t len, const char *name, json_t **ret,
                          struct gs_diag *diag) {
  return gs__yaml_parse(text, len, name, 0, ret, diag);
}

enum gs_err gs__yaml_load_file(const char *path, unsigned flags, json_t **ret,
                               struct gs_diag *diag) {
  FILE *fp = fopen(path, "rb");
  struct stat st;
  char *buf = NULL;
  size_t len = 0, cap;
  enum gs_err err;

  if (fp == NULL) {
    gs_diag_set(diag, path, "cannot read %s: %s", path, strerror(errno));
    return GS_EIO;
  }
  /* Regular files are read in one allocation; pipes grow up to the cap. */
  cap = fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0
            ? (size_t)st.st_size + 1
            : 65536;
  if (cap > (size_t)GS_CONFIG_FILE_MAX + 1)
    cap = (size_t)GS_CONFIG_FILE_MAX + 1;
  buf = gs_malloc(cap);
  if (buf == NULL) {
    err = GS_ENOMEM;
    gs_diag_set(diag, path, "out of memory reading %s", path);
    goto close_file;
  }
  for (;;) {
    size_t n = fread(buf + len, 1, cap - len, fp);
    len += n;
    if (len > GS_CONFIG_FILE_MAX) {
      err = GS_ETOOBIG;
      gs_diag_set(diag, path, "%s is larger than %u MiB", path, GS_CONFIG_FILE_MAX >> 20);
      goto free_buf;
    }
    if (n == 0 || len < cap) {
      if (ferror(fp)) {
        err = GS_EIO;
        gs_diag_set(diag, path, "cannot read %s: %s", path, strerror(errno));
        goto free_buf;
      }
      if (feof(fp))
        break;
      continue;
    }
    size_t ncap = cap * 2 > (size_t)GS_CONFIG_FILE_MAX + 1 ? (size_t)GS_CONFIG_FILE_MAX + 1
                                                           : cap * 2;
    char *nbuf = gs_realloc(buf, ncap);
    if (nbuf == NULL) {
      err = GS_ENOMEM;
      gs_diag_set(diag, path, "out of memory reading %s", path);
      goto free_buf;
    }
    buf = nbuf;
    cap = ncap;
  }
  err = gs__yaml_parse(buf, len, path, flags, ret, diag);
free_buf:
  gs_free(buf);
close_file:
  fclose(fp);
  return err;
}

enum gs_err gs_yaml_load_file(const char *path, json_t **ret, struct gs_diag *diag) {
  return gs__yaml_load_file(path, 0, ret, diag);
}

enum gs_err gs_yaml_load_file_docs(const char *path, json_t **ret, struct gs_diag *diag) {
  return gs__yaml_load_file(path, GS__YAML_ALL_DOCS, ret, diag);
}
