/* gpushare-inspect — the ledger JSON as text (see format.h).
 *
 * Two steps: decode() validates the JSON into a borrowed view (strings stay
 * inside the json_t), then render_*() lay it out with the column-aligned
 * tables of text.c, whose sticky errors are checked once at the end.
 */
#include "format.h"
#include "text.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- amounts ---------------------------------------------------------------- */

void gs_inspect_amount(uint64_t mib, uint64_t unit_mib, bool round_up,
                       char out[GS_INSPECT_AMOUNT_MAX]) {
  uint64_t whole, rem, tenths;
  if (unit_mib == 0)
    unit_mib = 1;
  whole = mib / unit_mib;
  rem = mib % unit_mib;
  if (rem == 0) {
    snprintf(out, GS_INSPECT_AMOUNT_MAX, "%" PRIu64, whole);
    return;
  }
  /* rem < unit_mib <= 2^20 (checked by the decoder), so rem * 10 fits. */
  tenths = rem * 10 / unit_mib;
  if (round_up && (rem * 10) % unit_mib != 0)
    tenths++;
  if (tenths == 10) {
    whole++;
    tenths = 0;
  }
  snprintf(out, GS_INSPECT_AMOUNT_MAX, "%" PRIu64 ".%c", whole, (char)('0' + tenths));
}

const char *gs_inspect_unit_label(const char *unit) {
  if (unit[0] == '1' && ((unit[1] >= 'A' && unit[1] <= 'Z') || (unit[1] >= 'a' && unit[1] <= 'z')))
    return unit + 1;
  return unit;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* floor(used * 100 / total), 0 when total is 0. */
static unsigned percent(uint64_t used, uint64_t total) {
  if (total == 0)
    return 0;
  if (used <= UINT64_MAX / 100)
    return (unsigned)(used * 100 / total);
  return (unsigned)((long double)used * 100.0L / (long double)total);
}

/* ---- decoding: JSON → borrowed view ---------------------------------------- */

struct pod_view {
  const char *ns, *name;
  bool claim; /* a DRA claim's charge (docs/dra.md), listed after the pods */
  bool has_container;
  uint64_t container;
  uint64_t used_mib;
};

enum owner_state { OWNER_ABSENT = 0, OWNER_NULL, OWNER_SET };

struct gpu_view {
  uint64_t index, total_mib, used_mib;
  bool healthy;
  enum owner_state owner;
  const char *owner_ns, *owner_name;
  size_t npods, nclaims; /* pods[0..npods), then the claims */
  struct pod_view *pods;
};

struct node_view {
  const char *name, *mode, *placement;
  uint64_t used_mib, total_mib;
  bool whole; /* topology mode: whole GPUs (their memory figures may be unknown: 0) */
  uint64_t whole_used, whole_total; /* GPUs owned / GPUs (whole only) */
  size_t ngpus;
  struct gpu_view *gpus;
};

struct gang_view {
  const char *job;
  uint64_t replicas, placed;
  const json_t *nodes; /* object node → [GPU index...], or NULL */
};

struct ledger_view {
  const char *unit;
  char unit_buf[32];
  uint64_t unit_mib;
  const char *pending_unit; /* NULL when none */
  size_t nnodes;
  struct node_view *nodes;
  size_t ngangs;
  struct gang_view *gangs;
  bool any_gpu, any_unhealthy;
  uint64_t max_index;
  uint64_t used_mib, total_mib;       /* memory nodes */
  uint64_t whole_used, whole_total;   /* topology nodes' GPUs */
  size_t unmanaged;                   /* nodes gpushare does not manage: not shown */
};

static void view_free(struct ledger_view *v) {
  if (v->nodes != NULL)
    for (size_t i = 0; i < v->nnodes; i++) {
      if (v->nodes[i].gpus != NULL)
        for (size_t g = 0; g < v->nodes[i].ngpus; g++)
          free(v->nodes[i].gpus[g].pods);
      free(v->nodes[i].gpus);
    }
  free(v->nodes);
  free(v->gangs);
}

static const char *type_name(const json_t *j) {
  switch (json_typeof(j)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY:
    return "an array";
  case JSON_STRING:
    return "a string";
  case JSON_INTEGER:
    return json_integer_value(j) < 0 ? "a negative integer" : "an integer";
  case JSON_REAL:
    return "a number with a fraction";
  case JSON_TRUE:
  case JSON_FALSE:
    return "a boolean";
  case JSON_NULL:
    return "null";
  }
  return "something else";
}

/* Each getter: key absent → GS_ENOTFOUND without touching diag (the caller
 * decides whether that is an error); wrong type → GS_EPARSE with diag. */

static enum gs_err get_any(const json_t *obj, const char *key, const json_t **ret) {
  const json_t *j = json_object_get(obj, key);
  if (j == NULL)
    return GS_ENOTFOUND;
  *ret = j;
  return GS_EOK;
}

/* JSON paths longer than gs_diag.where are cut: that is fine for a message. */
static void pathf(char *out, size_t len, const char *fmt, ...) GS__PRINTF(3, 4);
static void pathf(char *out, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out, len, fmt, ap);
  va_end(ap);
}

static void at(char *where, size_t len, const char *path, const char *key) {
  pathf(where, len, "%s%s%s", path, path[0] && key[0] ? "." : "", key);
}

static enum gs_err wrong(struct gs_diag *diag, const char *path, const char *key,
                         const char *expected, const json_t *got) {
  char where[sizeof diag->where];
  at(where, sizeof where, path, key);
  gs_diag_set(diag, where, "expected %s, got %s", expected, type_name(got));
  return GS_EPARSE;
}

static enum gs_err missing(struct gs_diag *diag, const char *path, const char *key) {
  char where[sizeof diag->where];
  at(where, sizeof where, path, key);
  gs_diag_set(diag, where, "required key is missing");
  return GS_EPARSE;
}

static enum gs_err get_string(const json_t *obj, const char *path, const char *key,
                              bool required, const char **ret, struct gs_diag *diag) {
  const json_t *j;
  if (get_any(obj, key, &j) != GS_EOK)
    return required ? missing(diag, path, key) : GS_ENOTFOUND;
  if (!json_is_string(j))
    return wrong(diag, path, key, "a string", j);
  *ret = json_string_value(j);
  return GS_EOK;
}

static enum gs_err check_count(const json_t *j, const char *path, const char *key, uint64_t max,
                               uint64_t *ret, struct gs_diag *diag) {
  char where[sizeof diag->where];
  if (!json_is_integer(j) || json_integer_value(j) < 0)
    return wrong(diag, path, key, "a non-negative integer", j);
  if ((uint64_t)json_integer_value(j) > max) {
    at(where, sizeof where, path, key);
    gs_diag_set(diag, where, "%" JSON_INTEGER_FORMAT " is beyond the limit %" PRIu64,
                json_integer_value(j), max);
    return GS_ERANGE;
  }
  *ret = (uint64_t)json_integer_value(j);
  return GS_EOK;
}

static enum gs_err get_count(const json_t *obj, const char *path, const char *key, bool required,
                             uint64_t max, uint64_t *ret, struct gs_diag *diag) {
  const json_t *j;
  if (get_any(obj, key, &j) != GS_EOK)
    return required ? missing(diag, path, key) : GS_ENOTFOUND;
  return check_count(j, path, key, max, ret, diag);
}

static enum gs_err get_array(const json_t *obj, const char *path, const char *key, bool required,
                             const json_t **ret, struct gs_diag *diag) {
  const json_t *j;
  if (get_any(obj, key, &j) != GS_EOK || (!required && json_is_null(j)))
    return required ? missing(diag, path, key) : GS_ENOTFOUND; /* null: Go's empty slice */
  if (!json_is_array(j))
    return wrong(diag, path, key, "an array", j);
  *ret = j;
  return GS_EOK;
}

/* ok(e): the key was present and valid, or optional and absent. */
#define OPTIONAL_OK(e) ((e) == GS_EOK || (e) == GS_ENOTFOUND)

static enum gs_err decode_pod(const json_t *j, const char *path, struct pod_view *p,
                              struct gs_diag *diag) {
  enum gs_err e;
  if (!json_is_object(j))
    return wrong(diag, path, "", "an object", j);
  if ((e = get_string(j, path, "namespace", true, &p->ns, diag)) != GS_EOK)
    return e;
  if ((e = get_string(j, path, "name", true, &p->name, diag)) != GS_EOK)
    return e;
  e = get_count(j, path, "container", false, UINT32_MAX, &p->container, diag);
  if (!OPTIONAL_OK(e))
    return e;
  p->has_container = e == GS_EOK;
  return get_count(j, path, "usedMiB", true, GS_INSPECT_MIB_MAX, &p->used_mib, diag);
}

static enum gs_err decode_owner(const json_t *gpu, const char *path, struct gpu_view *g,
                                struct gs_diag *diag) {
  char opath[sizeof diag->where];
  const json_t *j = json_object_get(gpu, "owner");
  enum gs_err e;
  if (j == NULL) {
    g->owner = OWNER_ABSENT;
    return GS_EOK;
  }
  if (json_is_null(j)) {
    g->owner = OWNER_NULL;
    return GS_EOK;
  }
  if (!json_is_object(j))
    return wrong(diag, path, "owner", "an object or null", j);
  at(opath, sizeof opath, path, "owner");
  if ((e = get_string(j, opath, "namespace", true, &g->owner_ns, diag)) != GS_EOK)
    return e;
  if ((e = get_string(j, opath, "name", true, &g->owner_name, diag)) != GS_EOK)
    return e;
  g->owner = OWNER_SET;
  return GS_EOK;
}

static enum gs_err decode_gpu(const json_t *j, const char *path, struct gpu_view *g,
                              struct gs_diag *diag) {
  char ppath[sizeof diag->where];
  const json_t *pods = NULL, *claims = NULL, *h;
  size_t np, nc;
  enum gs_err e;
  if (!json_is_object(j))
    return wrong(diag, path, "", "an object", j);
  if ((e = get_count(j, path, "index", true, GS_INSPECT_MAX_GPU_INDEX, &g->index, diag)) != GS_EOK)
    return e;
  if ((e = get_count(j, path, "totalMiB", true, GS_INSPECT_MIB_MAX, &g->total_mib, diag)) !=
      GS_EOK)
    return e;
  if ((e = get_count(j, path, "usedMiB", true, GS_INSPECT_MIB_MAX, &g->used_mib, diag)) != GS_EOK)
    return e;
  g->healthy = true;
  h = json_object_get(j, "healthy");
  if (h != NULL) {
    if (!json_is_boolean(h))
      return wrong(diag, path, "healthy", "a boolean", h);
    g->healthy = json_is_true(h);
  }
  if ((e = decode_owner(j, path, g, diag)) != GS_EOK)
    return e;
  e = get_array(j, path, "pods", false, &pods, diag);
  if (!OPTIONAL_OK(e))
    return e;
  e = get_array(j, path, "claims", false, &claims, diag);
  if (!OPTIONAL_OK(e))
    return e;
  np = pods ? json_array_size(pods) : 0;
  nc = claims ? json_array_size(claims) : 0;
  if (np + nc == 0)
    return GS_EOK;
  g->pods = calloc(np + nc, sizeof *g->pods);
  if (g->pods == NULL)
    return GS_ENOMEM;
  for (size_t i = 0; i < np; i++) {
    pathf(ppath, sizeof ppath, "%s.pods[%zu]", path, i);
    if ((e = decode_pod(json_array_get(pods, i), ppath, &g->pods[i], diag)) != GS_EOK)
      return e;
    g->npods++;
  }
  for (size_t i = 0; i < nc; i++) {
    pathf(ppath, sizeof ppath, "%s.claims[%zu]", path, i);
    if ((e = decode_pod(json_array_get(claims, i), ppath, &g->pods[np + i], diag)) != GS_EOK)
      return e;
    g->pods[np + i].claim = true;
    g->nclaims++;
  }
  return GS_EOK;
}

static enum gs_err decode_node(const json_t *j, const char *path, struct node_view *n,
                               struct gs_diag *diag) {
  char gpath[sizeof diag->where], where[sizeof diag->where];
  unsigned char seen[GS_INSPECT_MAX_GPU_INDEX + 1];
  const json_t *gpus;
  enum gs_err e;
  if (!json_is_object(j))
    return wrong(diag, path, "", "an object", j);
  if ((e = get_string(j, path, "name", true, &n->name, diag)) != GS_EOK)
    return e;
  n->mode = n->placement = NULL;
  if (!OPTIONAL_OK(e = get_string(j, path, "mode", false, &n->mode, diag)))
    return e;
  if (!OPTIONAL_OK(e = get_string(j, path, "placement", false, &n->placement, diag)))
    return e;
  if ((e = get_array(j, path, "gpus", true, &gpus, diag)) != GS_EOK)
    return e;
  if (json_array_size(gpus) == 0)
    return GS_EOK;
  n->gpus = calloc(json_array_size(gpus), sizeof *n->gpus);
  if (n->gpus == NULL)
    return GS_ENOMEM;
  memset(seen, 0, sizeof seen);
  for (size_t i = 0; i < json_array_size(gpus); i++) {
    struct gpu_view *g = &n->gpus[i];
    pathf(gpath, sizeof gpath, "%s.gpus[%zu]", path, i);
    e = decode_gpu(json_array_get(gpus, i), gpath, g, diag);
    n->ngpus++; /* count it even on error so view_free frees its pods */
    if (e != GS_EOK)
      return e;
    if (seen[g->index]) {
      at(where, sizeof where, gpath, "index");
      gs_diag_set(diag, where, "GPU index %" PRIu64 " appears twice on the node", g->index);
      return GS_EPARSE;
    }
    seen[g->index] = 1;
    n->used_mib = sat_add(n->used_mib, g->used_mib);
    n->total_mib = sat_add(n->total_mib, g->total_mib);
    n->whole_total++;
    if (g->owner == OWNER_SET)
      n->whole_used++;
  }
  return GS_EOK;
}

/* A node in the views: its GPUs widen the table, its figures the totals. */
static void account(struct ledger_view *v, const struct node_view *n) {
  for (size_t k = 0; k < n->ngpus; k++) {
    if (!v->any_gpu || n->gpus[k].index > v->max_index)
      v->max_index = n->gpus[k].index;
    v->any_gpu = true;
    if (!n->gpus[k].healthy)
      v->any_unhealthy = true;
  }
  if (n->whole) {
    v->whole_used += n->whole_used;
    v->whole_total += n->whole_total;
  }
  v->used_mib = sat_add(v->used_mib, n->used_mib);
  v->total_mib = sat_add(v->total_mib, n->total_mib);
}

static void node_release(struct node_view *n) {
  for (size_t g = 0; n->gpus != NULL && g < n->ngpus; g++)
    free(n->gpus[g].pods);
  free(n->gpus);
  memset(n, 0, sizeof *n);
}

static enum gs_err decode_gang(const json_t *j, const char *path, struct gang_view *g,
                               struct gs_diag *diag) {
  char npath[sizeof diag->where], ipath[sizeof diag->where];
  const char *node;
  const json_t *gpus;
  enum gs_err e;
  if (!json_is_object(j))
    return wrong(diag, path, "", "an object", j);
  if ((e = get_string(j, path, "job", true, &g->job, diag)) != GS_EOK)
    return e;
  if ((e = get_count(j, path, "replicas", true, UINT32_MAX, &g->replicas, diag)) != GS_EOK)
    return e;
  if ((e = get_count(j, path, "placed", true, UINT32_MAX, &g->placed, diag)) != GS_EOK)
    return e;
  g->nodes = json_object_get(j, "nodes");
  if (g->nodes == NULL || json_is_null(g->nodes)) {
    g->nodes = NULL;
    return GS_EOK;
  }
  if (!json_is_object(g->nodes))
    return wrong(diag, path, "nodes", "an object", g->nodes);
  at(npath, sizeof npath, path, "nodes");
  json_object_foreach((json_t *)g->nodes, node, gpus) {
    uint64_t idx;
    if (!json_is_array(gpus))
      return wrong(diag, npath, node, "an array of GPU indices", gpus);
    for (size_t i = 0; i < json_array_size(gpus); i++) {
      pathf(ipath, sizeof ipath, "%s.%s[%zu]", npath, node, i);
      if ((e = check_count(json_array_get(gpus, i), ipath, "", GS_INSPECT_MAX_GPU_INDEX, &idx,
                           diag)) != GS_EOK)
        return e;
    }
  }
  return GS_EOK;
}

static enum gs_err decode(const json_t *root, struct ledger_view *v, struct gs_diag *diag) {
  char path[sizeof diag->where];
  const json_t *nodes, *gangs = NULL, *pending;
  enum gs_err e;
  if (!json_is_object(root))
    return wrong(diag, "", "(top level)", "an object", root);
  if ((e = get_count(root, "", "unitMiB", true, GS_INSPECT_UNIT_MIB_MAX, &v->unit_mib, diag)) !=
      GS_EOK)
    return e;
  if (v->unit_mib == 0) {
    gs_diag_set(diag, "unitMiB", "must be positive");
    return GS_ERANGE;
  }
  e = get_string(root, "", "unit", false, &v->unit, diag);
  if (!OPTIONAL_OK(e))
    return e;
  if (e == GS_ENOTFOUND) { /* an older extender: name the unit from its size */
    if (v->unit_mib % 1024 == 0)
      snprintf(v->unit_buf, sizeof v->unit_buf, "%" PRIu64 "GiB", v->unit_mib / 1024);
    else
      snprintf(v->unit_buf, sizeof v->unit_buf, "%" PRIu64 "MiB", v->unit_mib);
    v->unit = v->unit_buf;
  }
  pending = json_object_get(root, "pendingUnit");
  if (pending != NULL && !json_is_null(pending)) {
    if (!json_is_string(pending))
      return wrong(diag, "", "pendingUnit", "a string or null", pending);
    if (json_string_length(pending) > 0)
      v->pending_unit = json_string_value(pending);
  }
  if ((e = get_array(root, "", "nodes", true, &nodes, diag)) != GS_EOK)
    return e;
  if (json_array_size(nodes) > 0) {
    v->nodes = calloc(json_array_size(nodes), sizeof *v->nodes);
    if (v->nodes == NULL)
      return GS_ENOMEM;
  }
  for (size_t i = 0; i < json_array_size(nodes); i++) {
    struct node_view *n = &v->nodes[v->nnodes]; /* unmanaged ones are dropped */
    pathf(path, sizeof path, "nodes[%zu]", i);
    e = decode_node(json_array_get(nodes, i), path, n, diag);
    v->nnodes++; /* counted even on error so view_free frees its GPUs */
    if (e != GS_EOK)
      return e;
    if (n->mode != NULL && strcmp(n->mode, "default") == 0) {
      /* not managed by gpushare (no or a default ack.node.gpu.schedule):
       * neither a row nor in the totals, counted in a note */
      node_release(n);
      v->nnodes--;
      v->unmanaged++;
      continue;
    }
    n->whole = n->mode != NULL && strcmp(n->mode, "topology") == 0;
    account(v, n);
  }
  e = get_array(root, "", "gangs", false, &gangs, diag);
  if (!OPTIONAL_OK(e))
    return e;
  if (gangs == NULL || json_array_size(gangs) == 0)
    return GS_EOK;
  v->gangs = calloc(json_array_size(gangs), sizeof *v->gangs);
  if (v->gangs == NULL)
    return GS_ENOMEM;
  for (size_t i = 0; i < json_array_size(gangs); i++) {
    pathf(path, sizeof path, "gangs[%zu]", i);
    if ((e = decode_gang(json_array_get(gangs, i), path, &v->gangs[i], diag)) != GS_EOK)
      return e;
    v->ngangs++;
  }
  return GS_EOK;
}

/* ---- rendering --------------------------------------------------------------- */

/* "used/total" in the unit; used rounded up, total down (format.h). */
static void fraction(const struct ledger_view *v, uint64_t used, uint64_t total, char *out,
                     size_t len) {
  char a[GS_INSPECT_AMOUNT_MAX], b[GS_INSPECT_AMOUNT_MAX];
  gs_inspect_amount(used, v->unit_mib, true, a);
  gs_inspect_amount(total, v->unit_mib, false, b);
  snprintf(out, len, "%s/%s", a, b);
}

static const char *or_dash(const char *s) { return s != NULL && s[0] != '\0' ? s : "-"; }

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A gang's nodes as "gpu-b[0,3],gpu-c[1]" (node names sorted), "-" if none. */
static void gang_nodes(const json_t *nodes, struct gs__table *t, size_t col) {
  struct gs__sbuf b = {0};
  const char **names = NULL;
  const char *key;
  const json_t *val;
  size_t n = 0;
  if (nodes == NULL || json_object_size(nodes) == 0) {
    gs__table_set(t, col, "-");
    return;
  }
  names = calloc(json_object_size(nodes), sizeof *names);
  if (names == NULL) {
    if (t->err == GS_EOK)
      t->err = GS_ENOMEM;
    return;
  }
  json_object_foreach((json_t *)nodes, key, val) names[n++] = key;
  qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 0; i < n; i++) {
    const json_t *gpus = json_object_get(nodes, names[i]);
    gs__sbuf_printf(&b, "%s%s[", i ? "," : "", names[i]);
    for (size_t k = 0; k < json_array_size(gpus); k++)
      gs__sbuf_printf(&b, "%s%" JSON_INTEGER_FORMAT, k ? "," : "",
                json_integer_value(json_array_get(gpus, k)));
    gs__sbuf_puts(&b, "]");
  }
  if (b.err != GS_EOK) {
    if (t->err == GS_EOK)
      t->err = b.err;
  } else {
    gs__table_set(t, col, "%s", b.p);
  }
  free(b.p);
  free(names);
}

/* Cluster total, notes and gangs: the same after both views. */
static void render_trailer(const struct ledger_view *v, bool footnote, struct gs__sbuf *b) {
  char a[GS_INSPECT_AMOUNT_MAX], c[GS_INSPECT_AMOUNT_MAX];
  struct gs__table t;
  gs_inspect_amount(v->used_mib, v->unit_mib, true, a);
  gs_inspect_amount(v->total_mib, v->unit_mib, false, c);
  gs__sbuf_printf(b, "Allocated/Total GPU Memory In Cluster: %s/%s (%u%%)\n", a, c,
            percent(v->used_mib, v->total_mib));
  if (v->whole_total > 0)
    gs__sbuf_printf(b, "Allocated/Total Whole GPUs In Cluster: %" PRIu64 "/%" PRIu64 " (%u%%)\n",
                    v->whole_used, v->whole_total, percent(v->whole_used, v->whole_total));
  if (v->unmanaged > 0)
    gs__sbuf_printf(b, "note: %zu node%s not managed by gpushare (ack.node.gpu.schedule unset "
                       "or default) not shown\n",
                    v->unmanaged, v->unmanaged == 1 ? "" : "s");
  if (footnote && v->any_unhealthy)
    gs__sbuf_puts(b, "* unhealthy GPU: never chosen for new pods\n");
  if (v->pending_unit != NULL)
    gs__sbuf_printf(b, "note: gpuMemoryUnit changes to %s at the next restart\n", v->pending_unit);
  if (v->ngangs == 0)
    return;
  gs__table_init(&t, 4);
  gs__table_row(&t);
  gs__table_set(&t, 0, "GANG");
  gs__table_set(&t, 1, "REPLICAS");
  gs__table_set(&t, 2, "PLACED");
  gs__table_set(&t, 3, "NODES");
  for (size_t i = 0; i < v->ngangs; i++) {
    const struct gang_view *g = &v->gangs[i];
    gs__table_row(&t);
    gs__table_set(&t, 0, "%s", g->job);
    gs__table_set(&t, 1, "%" PRIu64, g->replicas);
    gs__table_set(&t, 2, "%" PRIu64, g->placed);
    gang_nodes(g->nodes, &t, 3);
  }
  gs__sbuf_puts(b, "\n");
  gs__table_render(&t, "", b);
  gs__table_free(&t);
}

static void render_table(const struct ledger_view *v, struct gs__sbuf *b) {
  size_t ngcols = v->any_gpu ? (size_t)v->max_index + 1 : 0;
  size_t mem_col = 2 + ngcols;
  char cell[2 * GS_INSPECT_AMOUNT_MAX + 2];
  struct gs__table t;
  size_t start = b->len;

  gs__table_init(&t, mem_col + 1);
  gs__table_row(&t);
  gs__table_set(&t, 0, "NAME");
  gs__table_set(&t, 1, "MODE");
  for (size_t i = 0; i < ngcols; i++)
    gs__table_set(&t, 2 + i, "GPU%zu(Allocated/Total)", i);
  gs__table_set(&t, mem_col, "GPU Memory(%s)", gs_inspect_unit_label(v->unit));
  for (size_t i = 0; i < v->nnodes; i++) {
    const struct node_view *n = &v->nodes[i];
    gs__table_row(&t);
    gs__table_set(&t, 0, "%s", n->name);
    gs__table_set(&t, 1, "%s", or_dash(n->mode));
    for (size_t k = 0; k < n->ngpus; k++) {
      const struct gpu_view *g = &n->gpus[k];
      if (n->whole && g->total_mib == 0) /* a whole GPU of unknown memory: owned or not */
        snprintf(cell, sizeof cell, "%d/1", g->owner == OWNER_SET ? 1 : 0);
      else
        fraction(v, g->used_mib, g->total_mib, cell, sizeof cell);
      gs__table_set(&t, 2 + (size_t)g->index, "%s%s", cell, g->healthy ? "" : "*");
    }
    if (n->whole && n->total_mib == 0)
      snprintf(cell, sizeof cell, "%" PRIu64 "/%" PRIu64 " GPUs", n->whole_used, n->whole_total);
    else
      fraction(v, n->used_mib, n->total_mib, cell, sizeof cell);
    gs__table_set(&t, mem_col, "%s", cell);
  }
  gs__table_render(&t, "", b);
  gs__table_free(&t);
  gs__sbuf_repeat(b, '-', gs__sbuf_widest(b, start));
  gs__sbuf_puts(b, "\n");
  render_trailer(v, true, b);
}

static void render_node_details(const struct ledger_view *v, const struct node_view *n,
                                struct gs__sbuf *b) {
  const char *label = gs_inspect_unit_label(v->unit);
  char cell[2 * GS_INSPECT_AMOUNT_MAX + 2], amount[GS_INSPECT_AMOUNT_MAX];
  bool owners = false;
  size_t npods = 0, start = b->len;
  struct gs__table t;

  gs__sbuf_printf(b, "NAME:       %s\n", n->name);
  gs__sbuf_printf(b, "MODE:       %s\n", or_dash(n->mode));
  gs__sbuf_printf(b, "PLACEMENT:  %s\n\n", or_dash(n->placement));

  for (size_t k = 0; k < n->ngpus; k++) {
    owners = owners || n->gpus[k].owner != OWNER_ABSENT;
    npods += n->gpus[k].npods + n->gpus[k].nclaims;
  }
  if (n->ngpus == 0) {
    gs__sbuf_puts(b, "no GPUs\n");
  } else {
    gs__table_init(&t, owners ? 6 : 5);
    gs__table_row(&t);
    gs__table_set(&t, 0, "GPU");
    gs__table_set(&t, 1, "ALLOCATED/TOTAL(%s)", label);
    gs__table_set(&t, 2, "ALLOCATED/TOTAL(MiB)");
    gs__table_set(&t, 3, "HEALTHY");
    gs__table_set(&t, 4, "PODS");
    if (owners)
      gs__table_set(&t, 5, "OWNER");
    for (size_t k = 0; k < n->ngpus; k++) {
      const struct gpu_view *g = &n->gpus[k];
      gs__table_row(&t);
      gs__table_set(&t, 0, "%" PRIu64, g->index);
      if (n->whole && g->total_mib == 0) { /* no memory figures: the OWNER column says */
        gs__table_set(&t, 1, "whole");
        gs__table_set(&t, 2, "whole");
      } else {
        fraction(v, g->used_mib, g->total_mib, cell, sizeof cell);
        gs__table_set(&t, 1, "%s", cell);
        gs__table_set(&t, 2, "%" PRIu64 "/%" PRIu64, g->used_mib, g->total_mib);
      }
      gs__table_set(&t, 3, "%s", g->healthy ? "yes" : "no");
      gs__table_set(&t, 4, "%zu", g->npods);
      if (g->owner == OWNER_SET)
        gs__table_set(&t, 5, "%s/%s", g->owner_ns, g->owner_name);
      else if (owners)
        gs__table_set(&t, 5, "-");
    }
    gs__table_render(&t, "", b);
    gs__table_free(&t);
  }

  gs__sbuf_puts(b, "\n");
  if (npods == 0) {
    gs__sbuf_puts(b, "no pods\n");
  } else {
    gs__table_init(&t, 6);
    gs__table_row(&t);
    gs__table_set(&t, 0, "NAMESPACE");
    gs__table_set(&t, 1, "NAME");
    gs__table_set(&t, 2, "GPU");
    gs__table_set(&t, 3, "CONTAINER");
    gs__table_set(&t, 4, "MEMORY(%s)", label);
    gs__table_set(&t, 5, "MEMORY(MiB)");
    for (size_t k = 0; k < n->ngpus; k++)
      for (size_t p = 0; p < n->gpus[k].npods + n->gpus[k].nclaims; p++) {
        const struct pod_view *pod = &n->gpus[k].pods[p];
        gs__table_row(&t);
        gs__table_set(&t, 0, "%s", pod->ns);
        gs__table_set(&t, 1, "%s%s", pod->name, pod->claim ? " (claim)" : "");
        gs__table_set(&t, 2, "%" PRIu64, n->gpus[k].index);
        if (pod->has_container)
          gs__table_set(&t, 3, "%" PRIu64, pod->container);
        else
          gs__table_set(&t, 3, "-");
        gs_inspect_amount(pod->used_mib, v->unit_mib, true, amount);
        gs__table_set(&t, 4, "%s", amount);
        gs__table_set(&t, 5, "%" PRIu64, pod->used_mib);
      }
    gs__table_render(&t, "", b);
    gs__table_free(&t);
  }

  gs__sbuf_puts(b, "\n");
  if (n->whole && n->total_mib == 0) {
    gs__sbuf_printf(b, "Allocated/Total:  %" PRIu64 "/%" PRIu64 " GPUs (%u%%)\n", n->whole_used,
                    n->whole_total, percent(n->whole_used, n->whole_total));
  } else {
    fraction(v, n->used_mib, n->total_mib, cell, sizeof cell);
    gs__sbuf_printf(b, "Allocated/Total:  %s (%u%%)\n", cell, percent(n->used_mib, n->total_mib));
  }
  gs__sbuf_repeat(b, '-', gs__sbuf_widest(b, start));
  gs__sbuf_puts(b, "\n");
}

static void render_details(const struct ledger_view *v, struct gs__sbuf *b) {
  if (v->nnodes == 0)
    gs__sbuf_puts(b, "no nodes\n");
  for (size_t i = 0; i < v->nnodes; i++)
    render_node_details(v, &v->nodes[i], b);
  render_trailer(v, false, b);
}

enum gs_err gs_inspect_render(const json_t *ledger, enum gs_inspect_view view, char **ret_text,
                              struct gs_diag *diag) {
  struct ledger_view v;
  struct gs__sbuf b = {0};
  enum gs_err e;

  memset(&v, 0, sizeof v);
  e = decode(ledger, &v, diag);
  if (e != GS_EOK)
    goto free_view;
  if (view == GS_INSPECT_DETAILS)
    render_details(&v, &b);
  else
    render_table(&v, &b);
  gs__sbuf_reserve(&b, 0); /* an empty result is still a string */
  e = b.err;
  if (e != GS_EOK)
    goto free_text;
  *ret_text = b.p;
  view_free(&v);
  return GS_EOK;

free_text:
  free(b.p);
free_view:
  view_free(&v);
  return e;
}
