/* gpushare-bench: clocks, statistics, tables, options, the synthetic cluster. */
#include "bench.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

bool bench_json;
const char *bench_topo_path = NULL; /* NULL: bench_shared_path("data/topologies/...") */

const char *bench_shared_path(const char *rel) {
  static char paths[4][4096];
  static unsigned next;
  const char *dir = getenv("GS_SHARED_DIR");
  char *out = paths[next++ % 4];
  snprintf(out, sizeof paths[0], "%s/%s", dir != NULL && *dir ? dir : GS_SHARED_DIR, rel);
  return out;
}

/* ---- clocks and statistics ------------------------------------------------ */

int64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t bench_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t bench_wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void bench_samples_add(struct bench_samples *s, int64_t ns) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 1024;
    int64_t *v = realloc(s->v, cap * sizeof *v);
    if (v == NULL) {
      fprintf(stderr, "gpushare-bench: out of memory\n");
      exit(1);
    }
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = ns;
}

void bench_samples_free(struct bench_samples *s) {
  free(s->v);
  memset(s, 0, sizeof *s);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

void bench_samples_sort(struct bench_samples *s) {
  if (s->n > 1)
    qsort(s->v, s->n, sizeof *s->v, cmp_i64);
}

int64_t bench_pct(const struct bench_samples *s, double q) {
  size_t rank;
  if (s->n == 0)
    return 0;
  /* Nearest rank: the smallest sample with at least q of them <= it. */
  rank = (size_t)(q * (double)s->n + 0.999999);
  if (rank < 1)
    rank = 1;
  if (rank > s->n)
    rank = s->n;
  return s->v[rank - 1];
}

double bench_mean(const struct bench_samples *s) {
  double sum = 0;
  for (size_t i = 0; i < s->n; i++)
    sum += (double)s->v[i];
  return s->n ? sum / (double)s->n : 0;
}

/* ---- tables ------------------------------------------------------------------ */

void bench_table_init(struct bench_table *t, const char *title, const char *const *cols) {
  memset(t, 0, sizeof *t);
  snprintf(t->title, sizeof t->title, "%s", title);
  for (; cols[t->ncols] != NULL && t->ncols < BENCH_TABLE_COLS; t->ncols++)
    snprintf(t->cols[t->ncols], BENCH_CELL_MAX, "%s", cols[t->ncols]);
}

static size_t fill_col[BENCH_TABLE_ROWS];

void bench_table_row(struct bench_table *t) {
  if (t->nrows < BENCH_TABLE_ROWS) {
    fill_col[t->nrows] = 0;
    t->nrows++;
  }
}

static char *next_cell(struct bench_table *t, bool numeric) {
  size_t r, c;
  if (t->nrows == 0)
    bench_table_row(t);
  r = t->nrows - 1;
  c = fill_col[r];
  if (c >= t->ncols)
    return NULL;
  fill_col[r] = c + 1;
  t->numeric[r][c] = numeric;
  return t->cells[r][c];
}

void bench_table_str(struct bench_table *t, const char *fmt, ...) {
  char *cell = next_cell(t, false);
  va_list ap;
  if (cell == NULL)
    return;
  va_start(ap, fmt);
  vsnprintf(cell, BENCH_CELL_MAX, fmt, ap);
  va_end(ap);
}

void bench_table_num(struct bench_table *t, const char *fmt, double v) {
  char *cell = next_cell(t, true);
  if (cell == NULL)
    return;
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#endif
  snprintf(cell, BENCH_CELL_MAX, fmt, v);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
}

static void json_string_out(const char *s) {
  putchar('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      printf("\\u%04x", (unsigned)*s);
    else
      putchar(*s);
  }
  putchar('"');
}

void bench_table_print(const struct bench_table *t) {
  size_t width[BENCH_TABLE_COLS];
  if (bench_json) {
    printf("{\"table\":");
    json_string_out(t->title);
    printf(",\"rows\":[");
    for (size_t r = 0; r < t->nrows; r++) {
      printf("%s{", r ? "," : "");
      for (size_t c = 0; c < t->ncols; c++) {
        if (c)
          putchar(',');
        json_string_out(t->cols[c]);
        putchar(':');
        if (t->numeric[r][c] && t->cells[r][c][0] != '\0')
          fputs(t->cells[r][c], stdout);
        else
          json_string_out(t->cells[r][c]);
      }
      putchar('}');
    }
    printf("]}\n");
    fflush(stdout);
    return;
  }
  for (size_t c = 0; c < t->ncols; c++) {
    width[c] = strlen(t->cols[c]);
    for (size_t r = 0; r < t->nrows; r++)
      if (strlen(t->cells[r][c]) > width[c])
        width[c] = strlen(t->cells[r][c]);
  }
  printf("\n%s\n", t->title);
  for (size_t c = 0; c < t->ncols; c++)
    printf("%s%*s", c ? "  " : "", (int)width[c], t->cols[c]);
  putchar('\n');
  for (size_t c = 0; c < t->ncols; c++) {
    printf("%s", c ? "  " : "");
    for (size_t i = 0; i < width[c]; i++)
      putchar('-');
  }
  putchar('\n');
  for (size_t r = 0; r < t->nrows; r++) {
    for (size_t c = 0; c < t->ncols; c++)
      printf("%s%*s", c ? "  " : "", (int)width[c], t->cells[r][c]);
    putchar('\n');
  }
  fflush(stdout);
}

void bench_note(const char *fmt, ...) {
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (bench_json) {
    printf("{\"note\":");
    json_string_out(text);
    printf("}\n");
  } else {
    printf("%s\n", text);
  }
  fflush(stdout);
}

double bench_load1(void) {
  double l[3];
  if (getloadavg(l, 3) < 1)
    return -1;
  return l[0];
}

static void cpu_model(char *out, size_t len) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  snprintf(out, len, "?");
  if (f == NULL)
    return;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "model name", 10) == 0) {
      char *v = strchr(line, ':');
      if (v != NULL) {
        v++;
        while (*v == ' ' || *v == '\t')
          v++;
        v[strcspn(v, "\n")] = '\0';
        snprintf(out, len, "%s", v);
      }
      break;
    }
  }
  fclose(f);
}

static long mem_total_mib(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  char line[256];
  long kib = -1;
  if (f == NULL)
    return -1;
  while (fgets(line, sizeof line, f) != NULL)
    if (sscanf(line, "MemTotal: %ld kB", &kib) == 1)
      break;
  fclose(f);
  return kib < 0 ? -1 : kib / 1024;
}

void bench_print_machine(void) {
  char model[256], date[64];
  time_t now = time(NULL);
  struct tm tm;
  double l[3] = {-1, -1, -1};
  cpu_model(model, sizeof model);
  gmtime_r(&now, &tm);
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (getloadavg(l, 3) < 3)
    l[0] = l[1] = l[2] = -1;
  bench_note("machine: nproc=%ld cpu=\"%s\" ram=%ld MiB date=%s load=%.2f,%.2f,%.2f",
             sysconf(_SC_NPROCESSORS_ONLN), model, mem_total_mib(), date, l[0], l[1], l[2]);
}

/* ---- options ------------------------------------------------------------------- */

uint64_t bench_parse_u64(const char *text, const char *flag, uint64_t min, uint64_t max) {
  char *end;
  unsigned long long v;
  errno = 0;
  if (text == NULL || *text == '\0' || *text == '-') {
    fprintf(stderr, "gpushare-bench: %s needs a number\n", flag);
    exit(2);
  }
  v = strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max) {
    fprintf(stderr, "gpushare-bench: invalid %s \"%s\": accepted %llu..%llu\n", flag, text,
            (unsigned long long)min, (unsigned long long)max);
    exit(2);
  }
  return v;
}

size_t bench_parse_list(const char *text, const char *flag, uint64_t max, uint64_t *out) {
  size_t n = 0;
  char buf[256], *save = NULL, *tok;
  if (text == NULL || strlen(text) >= sizeof buf) {
    fprintf(stderr, "gpushare-bench: %s needs a list like 1000,5000\n", flag);
    return 0;
  }
  snprintf(buf, sizeof buf, "%s", text);
  for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
    if (n == BENCH_SIZES_MAX) {
      fprintf(stderr, "gpushare-bench: %s: at most %d values\n", flag, BENCH_SIZES_MAX);
      return 0;
    }
    out[n++] = bench_parse_u64(tok, flag, 1, max);
  }
  if (n == 0)
    fprintf(stderr, "gpushare-bench: %s needs a list like 1000,5000\n", flag);
  return n;
}

/* ---- the synthetic cluster ------------------------------------------------------- */

uint64_t bench_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void bench_node_make(size_t i, uint32_t gpus, struct bench_node *ret) {
  static const enum gs_mode mix[10] = {GS_MODE_SHARE, GS_MODE_SHARE,    GS_MODE_CGPU,
                                       GS_MODE_MPS,   GS_MODE_TOPOLOGY, GS_MODE_SHARE,
                                       GS_MODE_SHARE, GS_MODE_CGPU,     GS_MODE_MPS,
                                       GS_MODE_TOPOLOGY};
  memset(ret, 0, sizeof *ret);
  snprintf(ret->name, sizeof ret->name, "node-%05zu", i);
  ret->mode = mix[i % 10];
  ret->gpus = gpus;
  ret->gib_per_gpu = ret->mode == GS_MODE_TOPOLOGY ? 0 : (i / 10) % 2 ? 32 : 16;
}

void bench_fill_node(const struct bench_node *node, size_t i, uint64_t seed,
                     void (*fn)(void *ctx, const struct bench_node *node,
                                const struct bench_fill *fill),
                     void *ctx) {
  uint64_t rng = seed ^ (0x51ed27f1u * (uint64_t)(i + 1));
  struct bench_fill f;
  unsigned k = 0;
  for (uint32_t g = 0; g < node->gpus; g++) {
    memset(&f, 0, sizeof f);
    f.gpu = g;
    if (node->mode == GS_MODE_TOPOLOGY) {
      if (bench_rand(&rng) % 2 == 0)
        continue;
      f.kind = GS_ALLOC_WHOLE;
      snprintf(f.name, sizeof f.name, "fill-%s-%u", node->name, k);
      snprintf(f.uid, sizeof f.uid, "uid-fill-%s-%u", node->name, k);
      k++;
      fn(ctx, node, &f);
      continue;
    }
    /* Target uniform in 0..capacity (mean: half full), in one or two
     * shares, so a GPU carries 1.5 pods on average (about 10 per node). */
    uint32_t target = (uint32_t)(bench_rand(&rng) % (node->gib_per_gpu + 1));
    uint32_t first = target;
    if (target >= 2 && bench_rand(&rng) % 2 == 0)
      first = 1 + (uint32_t)(bench_rand(&rng) % (target - 1));
    for (uint32_t u = first, used = 0; used < target; u = target - used) {
      f.kind = GS_ALLOC_MEM;
      f.units = u;
      snprintf(f.name, sizeof f.name, "fill-%s-%u", node->name, k);
      snprintf(f.uid, sizeof f.uid, "uid-fill-%s-%u", node->name, k);
      k++;
      used += u;
      fn(ctx, node, &f);
    }
  }
}

const struct gs_topo *bench_topo(const char *path) {
  static struct gs_topo topo;
  static char loaded[4096];
  struct gs_diag diag = {"", ""};
  char *text = NULL;
  size_t len = 0, cap = 0;
  FILE *f;
  if (path == NULL)
    path = bench_topo_path != NULL ? bench_topo_path
                                   : bench_shared_path("data/topologies/dgx1_v100_topo-m.txt");
  if (strcmp(loaded, path) == 0)
    return &topo;
  f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "gpushare-bench: cannot open topology %s: %s\n", path, strerror(errno));
    return NULL;
  }
  for (;;) {
    size_t got;
    if (len == cap) {
      char *more = realloc(text, cap ? cap * 2 : 4096);
      if (more == NULL)
        break;
      text = more;
      cap = cap ? cap * 2 : 4096;
    }
    got = fread(text + len, 1, cap - len, f);
    if (got == 0)
      break;
    len += got;
  }
  fclose(f);
  memset(&topo, 0, sizeof topo);
  if (text == NULL || gs_topo_parse_text(text, len, &topo, &diag) != GS_EOK) {
    fprintf(stderr, "gpushare-bench: %s: %s: %s\n", path, diag.where, diag.text);
    free(text);
    return NULL;
  }
  free(text);
  snprintf(loaded, sizeof loaded, "%s", path);
  return &topo;
}

/* ---- CSV ------------------------------------------------------------------------- */

size_t bench_csv_split(char *line, char **cols, size_t max) {
  size_t n = 0;
  char *p = line;
  line[strcspn(line, "\r\n")] = '\0';
  while (n < max) {
    cols[n++] = p;
    p = strchr(p, ',');
    if (p == NULL)
      break;
    *p++ = '\0';
  }
  return n;
}

int bench_csv_column(char **cols, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(cols[i], name) == 0)
      return (int)i;
  return -1;
}
