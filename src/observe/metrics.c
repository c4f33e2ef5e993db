/* gpushare — Prometheus registry (see metrics.h).
 *
 * A family keeps its series in creation order plus an open-addressing index
 * keyed by the series' rendered label text ({k="v",...} without braces), so
 * that a lookup on the request path costs one hash of a short string, also
 * for the per-GPU gauges of a large cluster.
 */
#include "metrics.h"
#include <gpushare/alloc.h>

#include "buf.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct series {
  char *labels;  /* rendered label pairs without braces; "" when none */
  double value;  /* counter or gauge */
  double sum;    /* histogram */
  uint64_t count;
  uint64_t buckets[]; /* histogram: per bound, not cumulative; last is +Inf */
};

struct family {
  char *name;
  char *help;
  enum gs_metric_type type;
  bool labels_known; /* label_names fixed by the first series */
  size_t n_labels;
  char *label_names[GS_METRICS_LABELS_MAX];
  double *bounds; /* histogram upper bounds, +Inf excluded */
  size_t n_bounds;
  struct series **series;
  size_t n_series, cap_series;
  size_t *index; /* slot → series position + 1; 0 = empty; size index_cap */
  size_t index_cap;
};

struct gs_metrics {
  pthread_mutex_t lock;
  struct family *fams[GS_METRICS_FAMILIES_MAX];
  size_t n_fams;
};

static const double default_bounds[] = {GS_METRICS_DEFAULT_BUCKETS};

/* ---------------------------------------------------------------- validation */

static bool is_metric_name(const char *s) {
  if (s == NULL || *s == '\0')
    return false;
  for (const char *p = s; *p != '\0'; p++) {
    char c = *p;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
              (p != s && c >= '0' && c <= '9');
    if (!ok)
      return false;
  }
  return true;
}

static bool is_label_name(const char *s) {
  if (s == NULL || *s == '\0' || (s[0] == '_' && s[1] == '_'))
    return false; /* "__" names are reserved for Prometheus itself */
  for (const char *p = s; *p != '\0'; p++) {
    char c = *p;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (p != s && c >= '0' && c <= '9');
    if (!ok)
      return false;
  }
  return true;
}

/* A series' identity, built before taking the lock. */
struct key {
  char text[GS_METRICS_LABEL_TEXT_MAX];
  const char *names[GS_METRICS_LABELS_MAX];
  size_t n_names;
};

/* Renders labels as k="v",k2="v2" with values escaped (\\, \", \n). */
static enum gs_err build_key(const char *const *labels, enum gs_metric_type type,
                             struct key *ret) {
  size_t o = 0;

  ret->n_names = 0;
  ret->text[0] = '\0';
  if (labels == NULL)
    return GS_EOK;
  for (size_t i = 0; labels[i] != NULL; i += 2) {
    const char *k = labels[i], *v = labels[i + 1];
    size_t klen;

    if (v == NULL || !is_label_name(k))
      return GS_EINVAL;
    if (type == GS_METRIC_HISTOGRAM && strcmp(k, "le") == 0)
      return GS_EINVAL; /* "le" is the bucket label */
    if (ret->n_names == GS_METRICS_LABELS_MAX)
      return GS_ETOOBIG;
    for (size_t j = 0; j < ret->n_names; j++)
      if (strcmp(ret->names[j], k) == 0)
        return GS_EINVAL;
    ret->names[ret->n_names++] = k;
    klen = strlen(k);
    /* name, =, ", and a closing " plus , and the NUL */
    if (o + klen + 5 > sizeof ret->text)
      return GS_ETOOBIG;
    if (o > 0)
      ret->text[o++] = ',';
    memcpy(ret->text + o, k, klen);
    o += klen;
    ret->text[o++] = '=';
    ret->text[o++] = '"';
    for (const char *p = v; *p != '\0'; p++) {
      const char *rep = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : *p == '\n' ? "\\n" : NULL;
      size_t rlen = rep != NULL ? 2 : 1;
      if (o + rlen + 3 > sizeof ret->text)
        return GS_ETOOBIG;
      if (rep != NULL)
        memcpy(ret->text + o, rep, 2);
      else
        ret->text[o] = *p;
      o += rlen;
    }
    ret->text[o++] = '"';
    ret->text[o] = '\0';
  }
  return GS_EOK;
}

/* ------------------------------------------------------------------ families */

static void family_clear_series(struct family *f) {
  for (size_t i = 0; i < f->n_series; i++) {
    gs_free(f->series[i]->labels);
    gs_free(f->series[i]);
  }
  f->n_series = 0;
  if (f->index != NULL)
    memset(f->index, 0, f->index_cap * sizeof *f->index);
}

static void family_free(struct family *f) {
  if (f == NULL)
    return;
  family_clear_series(f);
  gs_free(f->series);
  gs_free(f->index);
  for (size_t i = 0; i < f->n_labels; i++)
    gs_free(f->label_names[i]);
  gs_free(f->bounds);
  gs_free(f->name);
  gs_free(f->help);
  gs_free(f);
}

static struct family *family_find(const struct gs_metrics *m, const char *name) {
  for (size_t i = 0; i < m->n_fams; i++)
    if (strcmp(m->fams[i]->name, name) == 0)
      return m->fams[i];
  return NULL;
}

/* Finds family name of the given type or creates it (bounds: histograms
 * only; NULL → the defaults). Under the lock. */
static enum gs_err family_get(struct gs_metrics *m, enum gs_metric_type type,
                              const char *name, const char *help, const double *bounds,
                              size_t n_bounds, struct family **ret) {
  struct family *f = family_find(m, name);

  if (f != NULL) {
    if (f->type != type)
      return GS_EINVAL;
    *ret = f;
    return GS_EOK;
  }
  if (m->n_fams == GS_METRICS_FAMILIES_MAX)
    return GS_ETOOBIG;
  f = gs_calloc(1, sizeof *f);
  if (f == NULL)
    return GS_ENOMEM;
  f->type = type;
  f->name = gs_strdup(name);
  f->help = gs_strdup(help != NULL ? help : "");
  if (f->name == NULL || f->help == NULL)
    goto free_family;
  if (type == GS_METRIC_HISTOGRAM) {
    if (bounds == NULL) {
      bounds = default_bounds;
      n_bounds = sizeof default_bounds / sizeof default_bounds[0];
    }
    f->bounds = gs_malloc(n_bounds * sizeof *f->bounds);
    if (f->bounds == NULL)
      goto free_family;
    memcpy(f->bounds, bounds, n_bounds * sizeof *f->bounds);
    f->n_bounds = n_bounds;
  }
  m->fams[m->n_fams++] = f;
  *ret = f;
  return GS_EOK;

free_family:
  family_free(f);
  return GS_ENOMEM;
}

/* Fixes the family's label names on first use, else checks them. */
static enum gs_err family_check_labels(struct family *f, const struct key *k) {
  if (f->labels_known) {
    if (k->n_names != f->n_labels)
      return GS_EINVAL;
    for (size_t i = 0; i < k->n_names; i++)
      if (strcmp(k->names[i], f->label_names[i]) != 0)
        return GS_EINVAL;
    return GS_EOK;
  }
  for (size_t i = 0; i < k->n_names; i++) {
    f->label_names[i] = gs_strdup(k->names[i]);
    if (f->label_names[i] == NULL) {
      while (i > 0)
        gs_free(f->label_names[--i]);
      return GS_ENOMEM;
    }
  }
  f->n_labels = k->n_names;
  f->labels_known = true;
  return GS_EOK;
}

static size_t hash_text(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s != '\0'; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ull;
  }
  return (size_t)h;
}

static size_t *index_slot(const struct family *f, const char *labels) {
  size_t mask = f->index_cap - 1;

  for (size_t i = hash_text(labels) & mask;; i = (i + 1) & mask) {
    size_t v = f->index[i];
    if (v == 0 || strcmp(f->series[v - 1]->labels, labels) == 0)
      return &f->index[i];
  }
}

/* Keeps the index at most half full. */
static enum gs_err index_grow(struct family *f) {
  size_t ncap = f->index_cap != 0 ? f->index_cap * 2 : 16;
  size_t *old = f->index;

  if ((f->n_series + 1) * 2 <= f->index_cap)
    return GS_EOK;
  f->index = gs_calloc(ncap, sizeof *f->index);
  if (f->index == NULL) {
    f->index = old;
    return GS_ENOMEM;
  }
  f->index_cap = ncap;
  for (size_t i = 0; i < f->n_series; i++)
    *index_slot(f, f->series[i]->labels) = i + 1;
  gs_free(old);
  return GS_EOK;
}

/* Finds or creates the series with label text k->text. Under the lock. */
static enum gs_err series_get(struct family *f, const struct key *k, struct series **ret) {
  size_t *slot;
  struct series *s;
  size_t nb;
  enum gs_err err;

  if (f->index_cap != 0) {
    slot = index_slot(f, k->text);
    if (*slot != 0) {
      *ret = f->series[*slot - 1];
      return GS_EOK;
    }
  }
  if (f->n_series >= GS_METRICS_SERIES_MAX)
    return GS_ETOOBIG;
  if ((err = family_check_labels(f, k)) != GS_EOK)
    return err;
  if ((err = index_grow(f)) != GS_EOK)
    return err;
  if (f->n_series == f->cap_series) {
    size_t ncap = f->cap_series != 0 ? f->cap_series * 2 : 8;
    struct series **ns = gs_realloc(f->series, ncap * sizeof *ns);
    if (ns == NULL)
      return GS_ENOMEM;
    f->series = ns;
    f->cap_series = ncap;
  }
  nb = f->type == GS_METRIC_HISTOGRAM ? f->n_bounds + 1 : 0;
  s = gs_calloc(1, sizeof *s + nb * sizeof s->buckets[0]);
  if (s == NULL)
    return GS_ENOMEM;
  s->labels = gs_strdup(k->text);
  if (s->labels == NULL) {
    gs_free(s);
    return GS_ENOMEM;
  }
  f->series[f->n_series++] = s;
  *index_slot(f, k->text) = f->n_series;
  *ret = s;
  return GS_EOK;
}

/* ------------------------------------------------------------------ updates */

enum op { OP_ADD, OP_SET, OP_OBSERVE };

static enum gs_err update(struct gs_metrics *m, enum gs_metric_type type, const char *name,
                          const char *help, const char *const *labels, enum op op,
                          double value) {
  struct key k;
  struct family *f;
  struct series *s;
  enum gs_err err;

  if (m == NULL || !is_metric_name(name))
    return GS_EINVAL;
  if (isnan(value) || (type == GS_METRIC_COUNTER && value < 0))
    return GS_ERANGE;
  if ((err = build_key(labels, type, &k)) != GS_EOK)
    return err;
  pthread_mutex_lock(&m->lock);
  err = family_get(m, type, name, help, NULL, 0, &f);
  if (err == GS_EOK)
    err = series_get(f, &k, &s);
  if (err == GS_EOK) {
    switch (op) {
    case OP_ADD:
      s->value += value;
      break;
    case OP_SET:
      s->value = value;
      break;
    case OP_OBSERVE: {
      size_t i = 0;
      while (i < f->n_bounds && value > f->bounds[i])
        i++;
      s->buckets[i]++;
      s->sum += value;
      s->count++;
      break;
    }
    }
  }
  pthread_mutex_unlock(&m->lock);
  return err;
}

enum gs_err gs_metrics_counter_add(struct gs_metrics *m, const char *name, const char *help,
                                   const char *const *labels, double value) {
  return update(m, GS_METRIC_COUNTER, name, help, labels, OP_ADD, value);
}

enum gs_err gs_metrics_gauge_set(struct gs_metrics *m, const char *name, const char *help,
                                 const char *const *labels, double value) {
  return update(m, GS_METRIC_GAUGE, name, help, labels, OP_SET, value);
}

enum gs_err gs_metrics_gauge_add(struct gs_metrics *m, const char *name, const char *help,
                                 const char *const *labels, double delta) {
  return update(m, GS_METRIC_GAUGE, name, help, labels, OP_ADD, delta);
}

enum gs_err gs_metrics_observe(struct gs_metrics *m, const char *name, const char *help,
                               const char *const *labels, double value) {
  return update(m, GS_METRIC_HISTOGRAM, name, help, labels, OP_OBSERVE, value);
}

void gs_metrics_gauge_reset(struct gs_metrics *m, const char *name) {
  struct family *f;

  if (m == NULL || name == NULL)
    return;
  pthread_mutex_lock(&m->lock);
  f = family_find(m, name);
  if (f != NULL && f->type == GS_METRIC_GAUGE)
    family_clear_series(f);
  pthread_mutex_unlock(&m->lock);
}

enum gs_err gs_metrics_declare(struct gs_metrics *m, enum gs_metric_type type,
                               const char *name, const char *help) {
  struct family *f;
  enum gs_err err;

  if (m == NULL || !is_metric_name(name) ||
      (type != GS_METRIC_COUNTER && type != GS_METRIC_GAUGE && type != GS_METRIC_HISTOGRAM))
    return GS_EINVAL;
  pthread_mutex_lock(&m->lock);
  err = family_get(m, type, name, help, NULL, 0, &f);
  pthread_mutex_unlock(&m->lock);
  return err;
}

enum gs_err gs_metrics_histogram_define(struct gs_metrics *m, const char *name,
                                        const char *help, const double *bounds,
                                        size_t n_bounds) {
  struct family *f;
  enum gs_err err;

  if (m == NULL || !is_metric_name(name) || bounds == NULL || n_bounds == 0)
    return GS_EINVAL;
  if (n_bounds > GS_METRICS_BUCKETS_MAX)
    return GS_ETOOBIG;
  for (size_t i = 0; i < n_bounds; i++)
    if (!isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1])))
      return GS_EINVAL;
  pthread_mutex_lock(&m->lock);
  f = family_find(m, name);
  if (f != NULL) {
    err = f->type == GS_METRIC_HISTOGRAM && f->n_bounds == n_bounds &&
                  memcmp(f->bounds, bounds, n_bounds * sizeof *bounds) == 0
              ? GS_EOK
              : GS_EINVAL;
  } else {
    err = family_get(m, GS_METRIC_HISTOGRAM, name, help, bounds, n_bounds, &f);
  }
  pthread_mutex_unlock(&m->lock);
  return err;
}

/* ----------------------------------------------------------------- registry */

struct gs_metrics *gs_metrics_new(void) {
  struct gs_metrics *m = gs_calloc(1, sizeof *m);

  if (m == NULL)
    return NULL;
  if (pthread_mutex_init(&m->lock, NULL) != 0) {
    gs_free(m);
    return NULL;
  }
  return m;
}

void gs_metrics_free(struct gs_metrics *m) {
  if (m == NULL)
    return;
  for (size_t i = 0; i < m->n_fams; i++)
    family_free(m->fams[i]);
  pthread_mutex_destroy(&m->lock);
  gs_free(m);
}

/* ---------------------------------------------------------------- rendering */

/* Text goes into util's struct gs_buf: a failed append sticks, checked
 * once at the end. */
static void buf_put(struct gs_buf *b, const char *s) { gs_buf_str(b, s); }

/* Shortest of %.15g / %.17g that reads back exactly; Prometheus spellings
 * for the non-finite values. */
static void fmt_value(double v, char out[40]) {
  if (isnan(v)) {
    strcpy(out, "NaN");
  } else if (isinf(v)) {
    strcpy(out, v > 0 ? "+Inf" : "-Inf");
  } else {
    snprintf(out, 40, "%.15g", v);
    if (strtod(out, NULL) != v)
      snprintf(out, 40, "%.17g", v);
  }
}

/* HELP text escapes only backslash and newline. */
static void put_help(struct gs_buf *b, const char *help) {
  for (const char *p = help; *p != '\0'; p++) {
    char one[2] = {*p, '\0'};
    buf_put(b, *p == '\\' ? "\\\\" : *p == '\n' ? "\\n" : one);
  }
}

static void put_sample(struct gs_buf *b, const char *name, const char *suffix,
                       const char *labels, const char *le, const char *value) {
  buf_put(b, name);
  buf_put(b, suffix);
  if (labels[0] != '\0' || le != NULL) {
    buf_put(b, "{");
    buf_put(b, labels);
    if (le != NULL)
      gs_buf_printf(b, "%sle=\"%s\"", labels[0] != '\0' ? "," : "", le);
    buf_put(b, "}");
  }
  buf_put(b, " ");
  buf_put(b, value);
  buf_put(b, "\n");
}

static void render_family(struct gs_buf *b, const struct family *f) {
  static const char *const type_name[] = {"counter", "gauge", "histogram"};
  char v[40], le[40];

  gs_buf_printf(b, "# HELP %s ", f->name);
  put_help(b, f->help);
  gs_buf_printf(b, "\n# TYPE %s %s\n", f->name, type_name[f->type]);
  for (size_t i = 0; i < f->n_series; i++) {
    const struct series *s = f->series[i];
    uint64_t cum = 0;

    if (f->type != GS_METRIC_HISTOGRAM) {
      fmt_value(s->value, v);
      put_sample(b, f->name, "", s->labels, NULL, v);
      continue;
    }
    for (size_t j = 0; j <= f->n_bounds; j++) {
      cum += s->buckets[j];
      if (j < f->n_bounds)
        fmt_value(f->bounds[j], le);
      else
        strcpy(le, "+Inf");
      snprintf(v, sizeof v, "%" PRIu64, cum);
      put_sample(b, f->name, "_bucket", s->labels, le, v);
    }
    fmt_value(s->sum, v);
    put_sample(b, f->name, "_sum", s->labels, NULL, v);
    snprintf(v, sizeof v, "%" PRIu64, s->count);
    put_sample(b, f->name, "_count", s->labels, NULL, v);
  }
}

static int cmp_family(const void *a, const void *b) {
  const struct family *fa = *(const struct family *const *)a;
  const struct family *fb = *(const struct family *const *)b;
  return strcmp(fa->name, fb->name);
}

char *gs_metrics_render(const struct gs_metrics *m) {
  /* The registry is logically const; only its lock changes state. */
  struct gs_metrics *mm = (struct gs_metrics *)m;
  const struct family *sorted[GS_METRICS_FAMILIES_MAX];
  struct gs_buf b = {0};
  size_t n;

  if (m == NULL)
    return NULL;
  if (!gs_buf_room(&b, 0))
    return NULL;
  pthread_mutex_lock(&mm->lock);
  n = mm->n_fams;
  memcpy(sorted, mm->fams, n * sizeof sorted[0]);
  qsort(sorted, n, sizeof sorted[0], cmp_family);
  for (size_t i = 0; i < n && b.failed == GS_EOK; i++)
    render_family(&b, sorted[i]);
  pthread_mutex_unlock(&mm->lock);
  return gs_buf_take(&b);
}
