/* gpushare-bench pack: replay the Alibaba GPU cluster trace (openb, the
 * data set of the FGD paper, USENIX ATC'23) through the framework and
 * measure how well each policy packs it.
 *
 * Nodes: openb_node_list_gpu_node.csv, every node a `share` node whose GPUs
 * have the memory of their model (MODEL_GIB below, --gpu-mem overrides).
 * Pods, in creation order (file order when the file has no creation_time):
 *   num_gpu == 1: aliyun.com/gpu-mem = ceil(gpu_milli / 1000 × R / unit),
 *   num_gpu == M > 1: gpu-mem = M × ceil(R / unit) with aliyun.com/gpu-count
 *                     M, so each of M cards gets a full R,
 *   num_gpu == 0: skipped (no GPU).
 * R, the memory a pod's share is counted against, is the memory of the
 * model in its gpu_spec when it names one, else --ref-gib (default: the
 * memory of the cluster's most common model, G2). docs/benchmarks.md
 * explains the choice.
 * Each pod: filter over every node, prioritize over the feasible ones
 * (kube-scheduler skips prioritize for a single node), the highest score
 * wins (ties: random with a fixed seed, as kube-scheduler picks at random,
 * or by name), then bind_prepare + commit. Nothing ever leaves.
 */
#include "bench.h"

#include "plugins.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PACK_LINE_MAX 4096
#define PACK_MODELS_MAX 32
#define PACK_POLICIES_MAX 8

/* GPU model → memory (GiB): public specifications, and an assumption for
 * Alibaba's undisclosed codes (docs/benchmarks.md). */
struct model_mem {
  char name[32];
  uint32_t gib;
};
static struct model_mem models[PACK_MODELS_MAX] = {
    {"V100M16", 16}, /* Tesla V100 16 GB */
    {"V100M32", 32}, /* Tesla V100 32 GB */
    {"P100", 16},    /* Tesla P100 16 GB (the 12 GB PCIe part is rarer) */
    {"T4", 16},      /* Tesla T4 16 GB */
    {"A10", 24},     /* A10 24 GB */
    {"G1", 32},      /* undisclosed: assumed 32 GB */
    {"G2", 32},      /* undisclosed: assumed 32 GB */
    {"G3", 32},      /* undisclosed: assumed 32 GB */
};
static size_t nmodels = 8;

static int model_gib(const char *name) {
  for (size_t i = 0; i < nmodels; i++)
    if (strcmp(models[i].name, name) == 0)
      return (int)models[i].gib;
  return -1;
}

struct trace_node {
  char name[64];
  char model[32];
  uint32_t gpus;
  uint32_t gib;
};

struct trace_pod {
  char name[64];
  uint32_t num_gpu;
  uint32_t milli;
  uint32_t ref_gib; /* R for this pod */
  int64_t created;
  size_t order;     /* file position, for a stable sort */
};

struct trace {
  struct trace_node *nodes;
  size_t nnodes;
  struct trace_pod *pods;
  size_t npods;      /* GPU pods kept */
  size_t skipped;    /* num_gpu == 0 */
  uint64_t gpus, total_gib;
};

static FILE *open_in(const char *dir, const char *file, char *path, size_t len) {
  FILE *f;
  if (strchr(file, '/') != NULL)
    snprintf(path, len, "%s", file);
  else
    snprintf(path, len, "%s/%s", dir, file);
  f = fopen(path, "r");
  if (f == NULL)
    fprintf(stderr, "gpushare-bench: cannot open %s: %s\n", path, strerror(errno));
  return f;
}

static int load_nodes(const char *dir, const char *file, struct trace *t) {
  char path[4096], line[PACK_LINE_MAX], *cols[16];
  int c_name, c_gpu, c_model;
  size_t cap = 0, n;
  FILE *f = open_in(dir, file, path, sizeof path);
  if (f == NULL)
    return -1;
  if (fgets(line, sizeof line, f) == NULL)
    goto bad;
  n = bench_csv_split(line, cols, 16);
  c_name = bench_csv_column(cols, n, "sn");
  c_gpu = bench_csv_column(cols, n, "gpu");
  c_model = bench_csv_column(cols, n, "model");
  if (c_name < 0 || c_gpu < 0 || c_model < 0)
    goto bad;
  while (fgets(line, sizeof line, f) != NULL) {
    struct trace_node *tn;
    int gib;
    n = bench_csv_split(line, cols, 16);
    if (n <= (size_t)c_model || n <= (size_t)c_gpu)
      continue;
    if (atoi(cols[c_gpu]) <= 0)
      continue; /* CPU-only node */
    gib = model_gib(cols[c_model]);
    if (gib < 0) {
      fprintf(stderr, "gpushare-bench: %s: GPU model %s has no memory size (use --gpu-mem)\n",
              path, cols[c_model]);
      fclose(f);
      return -1;
    }
    if (t->nnodes == cap) {
      cap = cap ? cap * 2 : 1024;
      t->nodes = realloc(t->nodes, cap * sizeof *t->nodes);
      if (t->nodes == NULL)
        exit(1);
    }
    tn = &t->nodes[t->nnodes++];
    memset(tn, 0, sizeof *tn);
    snprintf(tn->name, sizeof tn->name, "%s", cols[c_name]);
    snprintf(tn->model, sizeof tn->model, "%s", cols[c_model]);
    tn->gpus = (uint32_t)atoi(cols[c_gpu]);
    tn->gib = (uint32_t)gib;
    t->gpus += tn->gpus;
    t->total_gib += (uint64_t)tn->gpus * tn->gib;
  }
  fclose(f);
  return 0;
bad:
  fprintf(stderr, "gpushare-bench: %s: expected a header with sn, gpu, model\n", path);
  fclose(f);
  return -1;
}

static int cmp_pod(const void *a, const void *b) {
  const struct trace_pod *x = a, *y = b;
  if (x->created != y->created)
    return x->created < y->created ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

static int load_pods(const char *dir, const char *file, uint32_t ref_gib, struct trace *t) {
  char path[4096], line[PACK_LINE_MAX], *cols[32];
  int c_name, c_num, c_milli, c_spec, c_created;
  size_t cap = 0, n, order = 0;
  FILE *f = open_in(dir, file, path, sizeof path);
  if (f == NULL)
    return -1;
  if (fgets(line, sizeof line, f) == NULL)
    goto bad;
  n = bench_csv_split(line, cols, 32);
  c_name = bench_csv_column(cols, n, "name");
  c_num = bench_csv_column(cols, n, "num_gpu");
  c_milli = bench_csv_column(cols, n, "gpu_milli");
  c_spec = bench_csv_column(cols, n, "gpu_spec");
  c_created = bench_csv_column(cols, n, "creation_time");
  if (c_name < 0 || c_num < 0 || c_milli < 0)
    goto bad;
  while (fgets(line, sizeof line, f) != NULL) {
    struct trace_pod *p;
    uint32_t num;
    n = bench_csv_split(line, cols, 32);
    if (n <= (size_t)c_num || n <= (size_t)c_milli)
      continue;
    num = (uint32_t)atoi(cols[c_num]);
    order++;
    if (num == 0) {
      t->skipped++;
      continue;
    }
    if (t->npods == cap) {
      cap = cap ? cap * 2 : 4096;
      t->pods = realloc(t->pods, cap * sizeof *t->pods);
      if (t->pods == NULL)
        exit(1);
    }
    p = &t->pods[t->npods++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", cols[c_name]);
    for (char *c = p->name; *c; c++)
      *c = (char)tolower((unsigned char)*c);
    p->num_gpu = num;
    p->milli = (uint32_t)atoi(cols[c_milli]);
    if (num > 1 || p->milli == 0 || p->milli > 1000)
      p->milli = 1000;
    p->ref_gib = ref_gib;
    /* gpu_spec "V100M16|V100M32": the first model the table knows. */
    if (c_spec >= 0 && n > (size_t)c_spec && cols[c_spec][0] != '\0') {
      char spec[128], *save = NULL;
      snprintf(spec, sizeof spec, "%s", cols[c_spec]);
      for (char *m = strtok_r(spec, "|", &save); m != NULL; m = strtok_r(NULL, "|", &save)) {
        if (model_gib(m) > 0) {
          p->ref_gib = (uint32_t)model_gib(m);
          break;
        }
      }
    }
    p->created = c_created >= 0 && n > (size_t)c_created ? atoll(cols[c_created]) : 0;
    p->order = order;
  }
  fclose(f);
  qsort(t->pods, t->npods, sizeof *t->pods, cmp_pod);
  return 0;
bad:
  fprintf(stderr, "gpushare-bench: %s: expected a header with name, num_gpu, gpu_milli\n", path);
  fclose(f);
  return -1;
}

/* Units asked by a pod (total over its cards). */
static uint64_t pod_units(const struct trace_pod *p, uint32_t unit_mib) {
  uint64_t ref_mib = (uint64_t)p->ref_gib * 1024;
  if (p->num_gpu > 1)
    return (uint64_t)p->num_gpu * ((ref_mib + unit_mib - 1) / unit_mib);
  /* ceil(milli × ref / 1000 / unit) in integers */
  return ((uint64_t)p->milli * ref_mib + (uint64_t)1000 * unit_mib - 1) /
         ((uint64_t)1000 * unit_mib);
}

/* ---- one replay ----------------------------------------------------------------- */

struct policy_def {
  char name[16];
  enum gs_placement node_policy; /* prioritize */
  enum gs_placement placement;   /* GPU inside the node (node label) */
  bool frag_aware;
};

struct snapshot {
  size_t pods_done;  /* pods tried */
  size_t placed;     /* pods placed */
  size_t failed;
  uint64_t used_mib, total_mib;
  size_t gpus, partial, full, empty;
  uint64_t stranded_mib; /* free memory on partly used GPUs */
  uint64_t free_mib;
};

struct snap_call {
  struct snapshot *s;
};

static void snap_fn(const struct gs_ledger *l, void *arg) {
  struct snapshot *s = ((struct snap_call *)arg)->s;
  s->used_mib = s->total_mib = s->stranded_mib = s->free_mib = 0;
  s->gpus = s->partial = s->full = s->empty = 0;
  for (size_t i = 0; i < gs_ledger_node_count(l); i++) {
    const struct gs_node *n = gs_ledger_node_at(l, i);
    for (uint32_t g = 0; g < n->ngpus; g++) {
      const struct gs_gpu *gpu = &n->gpus[g];
      uint64_t used = gpu->used_mib > gpu->total_mib ? gpu->total_mib : gpu->used_mib;
      s->gpus++;
      s->used_mib += used;
      s->total_mib += gpu->total_mib;
      s->free_mib += gpu->total_mib - used;
      if (used == 0) {
        s->empty++;
      } else if (used >= gpu->total_mib) {
        s->full++;
      } else {
        s->partial++;
        s->stranded_mib += gpu->total_mib - used;
      }
    }
  }
}

static void snapshot_take(struct gs_sched *fw, struct snapshot *s) {
  struct snap_call c = {s};
  gs_sched_read(fw, snap_fn, NULL, &c);
}

struct replay_opts {
  uint32_t unit_mib;
  bool ties_random;
  uint64_t seed;
};

struct replay_result {
  struct snapshot first_fail; /* pods_done == 0: never failed */
  struct snapshot end;
  size_t first_fail_index;    /* 1-based pod index of the first failure */
  uint32_t first_fail_gpus, first_fail_milli; /* what it asked */
  double us_per_pod;
  bool ever_failed;
};

static int replay(const struct trace *t, const struct policy_def *pol, const struct replay_opts *o,
                  struct replay_result *ret) {
  struct gs_policy policy;
  size_t nplugins;
  const struct gs_plugin_ops *const *plugins = gs_plugins_default(&nplugins);
  struct gs_sched *fw;
  const char **names = calloc(t->nnodes, sizeof *names);
  const char **feasible = calloc(t->nnodes, sizeof *feasible);
  struct gs_node_result *res = calloc(t->nnodes, sizeof *res);
  struct gs_pod_request *pod = malloc(sizeof *pod);
  uint64_t rng = o->seed;
  int64_t t0;
  int rc = -1;

  memset(ret, 0, sizeof *ret);
  gs_policy_init(&policy);
  policy.unit_mib = o->unit_mib;
  policy.node_policy = pol->node_policy;
  policy.frag_aware = pol->frag_aware;
  fw = gs__sched_new_with(&policy, plugins, nplugins, NULL);
  if (fw == NULL || names == NULL || feasible == NULL || res == NULL || pod == NULL)
    goto out;
  for (size_t i = 0; i < t->nnodes; i++) {
    struct gs_node_spec spec;
    memset(&spec, 0, sizeof spec);
    snprintf(spec.name, sizeof spec.name, "%s", t->nodes[i].name);
    spec.mode = GS_MODE_SHARE;
    spec.placement = pol->placement;
    spec.gpu_count = t->nodes[i].gpus;
    spec.gpu_mem_units = (uint64_t)t->nodes[i].gpus * t->nodes[i].gib * (1024 / o->unit_mib);
    if (gs_fw_node_upsert(fw, &spec) != GS_EOK)
      goto out;
    names[i] = t->nodes[i].name;
  }
  t0 = bench_now_ns();
  for (size_t i = 0; i < t->npods; i++) {
    const struct trace_pod *tp = &t->pods[i];
    size_t nf = 0, best = 0, ties = 0;
    int64_t best_score = -1;
    struct gs_annotations ann;
    struct gs_status st;
    bool fresh = false;

    memset(pod, 0, sizeof *pod);
    memset(&ann, 0, sizeof ann);
    snprintf(pod->ns, sizeof pod->ns, "trace");
    snprintf(pod->name, sizeof pod->name, "%s", tp->name);
    snprintf(pod->uid, sizeof pod->uid, "uid-%.*s", (int)sizeof pod->uid - 5, tp->name);
    pod->ncontainers = 1;
    pod->mem_units[0] = pod_units(tp, o->unit_mib);
    pod->gpu_count = tp->num_gpu;

    if (gs_sched_filter(fw, pod, names, t->nnodes, 0, res) != GS_EOK)
      goto out;
    for (size_t k = 0; k < t->nnodes; k++)
      if (res[k].code == GS_EOK)
        feasible[nf++] = names[k];
    if (nf == 0) {
      ret->end.failed++;
      if (!ret->ever_failed) {
        ret->ever_failed = true;
        ret->first_fail_index = i + 1;
        ret->first_fail.pods_done = i;
        ret->first_fail.placed = i - ret->end.failed + 1;
        ret->first_fail.failed = 0;
        ret->first_fail_gpus = tp->num_gpu;
        ret->first_fail_milli = tp->milli;
        snapshot_take(fw, &ret->first_fail);
      }
      continue;
    }
    if (nf > 1) {
      if (gs_sched_prioritize(fw, pod, feasible, nf, 0, res) != GS_EOK)
        goto out;
      for (size_t k = 0; k < nf; k++) {
        if (res[k].code != GS_EOK)
          continue;
        if (res[k].score > best_score) {
          best_score = res[k].score;
          best = k;
          ties = 1;
        } else if (res[k].score == best_score) {
          /* kube-scheduler: a uniformly random one of the best (reservoir
           * sampling); or the first by name. */
          ties++;
          if (o->ties_random && bench_rand(&rng) % ties == 0)
            best = k;
        }
      }
    }
    if (gs_fw_reserve(fw, pod, feasible[best], 1, &ann, &fresh, &st) != GS_EOK) {
      fprintf(stderr, "gpushare-bench: bind of %s to %s failed: %s\n", tp->name,
              feasible[best], st.reason);
      gs_annotations_clear(&ann);
      goto out;
    }
    gs_annotations_clear(&ann);
    gs_sched_post_bind(fw, pod->uid);
  }
  ret->us_per_pod = t->npods ? (double)(bench_now_ns() - t0) / 1e3 / (double)t->npods : 0;
  ret->end.pods_done = t->npods;
  ret->end.placed = t->npods - ret->end.failed;
  snapshot_take(fw, &ret->end);
  rc = 0;
out:
  gs_sched_free(fw);
  free(names);
  free(feasible);
  free(res);
  free(pod);
  return rc;
}

/* ---- command line ------------------------------------------------------------------ */

static int policy_lookup(const char *name, struct policy_def *ret) {
  memset(ret, 0, sizeof *ret);
  snprintf(ret->name, sizeof ret->name, "%s", name);
  if (strcmp(name, "binpack") == 0) {
    ret->node_policy = GS_PLACE_BINPACK;
    ret->placement = GS_PLACE_BINPACK;
  } else if (strcmp(name, "spread") == 0) {
    ret->node_policy = GS_PLACE_SPREAD;
    ret->placement = GS_PLACE_SPREAD;
  } else if (strcmp(name, "binpack-fa") == 0) {
    /* binpack with the frag-aware GPU choice inside nodes only */
    ret->node_policy = GS_PLACE_BINPACK;
    ret->placement = GS_PLACE_BINPACK;
    ret->frag_aware = true;
  } else if (strcmp(name, "frag") == 0) {
    ret->node_policy = GS_PLACE_FRAG;
    ret->placement = GS_PLACE_BINPACK;
    ret->frag_aware = true;
  } else {
    return -1;
  }
  return 0;
}

static int parse_gpu_mem(const char *text) {
  char buf[1024], *save = NULL;
  snprintf(buf, sizeof buf, "%s", text);
  for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    size_t i;
    if (eq == NULL || atoi(eq + 1) <= 0) {
      fprintf(stderr, "gpushare-bench: --gpu-mem wants MODEL=GiB, not %s\n", tok);
      return -1;
    }
    *eq = '\0';
    for (i = 0; i < nmodels; i++)
      if (strcmp(models[i].name, tok) == 0)
        break;
    if (i == nmodels) {
      if (nmodels == PACK_MODELS_MAX)
        return -1;
      nmodels++;
      snprintf(models[i].name, sizeof models[i].name, "%s", tok);
    }
    models[i].gib = (uint32_t)atoi(eq + 1);
  }
  return 0;
}

static void usage(void) {
  fprintf(stderr,
          "usage: gpushare-bench pack [--trace DIR] [--nodes-file FILE] [--pods FILE,...]\n"
          "       [--policy binpack,spread,frag] [--unit 1GiB|128MiB] [--gpu-mem MODEL=GiB,...]\n"
          "       [--ref-gib N] [--ties random|name] [--seed N] [--json]\n");
}

static void add_rows(struct bench_table *t, const char *pods_file, const char *unit,
                     const struct policy_def *pol, const struct trace *tr,
                     const struct replay_result *r) {
  for (int phase = 0; phase < 2; phase++) {
    const struct snapshot *s = phase == 0 ? &r->first_fail : &r->end;
    if (phase == 0 && !r->ever_failed) {
      bench_table_row(t);
      bench_table_str(t, "%s", pods_file);
      bench_table_str(t, "%s", unit);
      bench_table_str(t, "%s", pol->name);
      bench_table_str(t, "%s", "first failure");
      bench_table_str(t, "%s", "none");
      continue;
    }
    bench_table_row(t);
    bench_table_str(t, "%s", pods_file);
    bench_table_str(t, "%s", unit);
    bench_table_str(t, "%s", pol->name);
    if (phase == 0)
      bench_table_str(t, "first failure (%u x %u)", r->first_fail_gpus, r->first_fail_milli);
    else
      bench_table_str(t, "%s", "end");
    bench_table_num(t, "%.0f", phase == 0 ? (double)r->first_fail_index : (double)tr->npods);
    bench_table_num(t, "%.0f", (double)s->placed);
    bench_table_num(t, "%.1f", 100.0 * (double)s->placed / (double)tr->npods);
    bench_table_num(t, "%.0f", (double)s->used_mib / 1024.0);
    bench_table_num(t, "%.1f", s->total_mib ? 100.0 * (double)s->used_mib / (double)s->total_mib : 0);
    bench_table_num(t, "%.1f", s->gpus ? 100.0 * (double)s->partial / (double)s->gpus : 0);
    bench_table_num(t, "%.1f", s->gpus ? 100.0 * (double)s->empty / (double)s->gpus : 0);
    bench_table_num(t, "%.0f", (double)s->stranded_mib / 1024.0);
    bench_table_num(t, "%.1f", s->free_mib ? 100.0 * (double)s->stranded_mib / (double)s->free_mib : 0);
    bench_table_num(t, "%.0f", phase == 0 ? 0.0 : (double)r->end.failed);
    bench_table_num(t, "%.0f", r->us_per_pod);
  }
}

int bench_pack(int argc, char **argv) {
  const char *dir = bench_shared_path("data/alibaba-gpu-v2023");
  const char *nodes_file = "openb_node_list_gpu_node.csv";
  char pods_list[1024] = "openb_pod_list_default.csv";
  char policies[256] = "binpack,spread,frag";
  char units[64] = "1GiB";
  struct replay_opts o = {.unit_mib = GS_UNIT_GIB, .ties_random = true, .seed = 1};
  int ref_gib = 0;
  static const char *const cols[] = {
      "pods file", "unit", "policy", "when", "pods tried", "placed", "placed %", "GPU mem GiB",
      "mem %", "GPUs partly used %", "GPUs empty %", "stranded GiB", "stranded % of free",
      "failed", "us/pod", NULL};
  static struct bench_table table;

  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--protocol") == 0) {
      if (strcmp(argv[i + 1], "fgd") == 0)
        return bench_pack_fgd(argc, argv);
      fprintf(stderr, "gpushare-bench: unknown --protocol %s: accepted fgd\n", argv[i + 1]);
      return 2;
    }
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (v == NULL) {
      usage();
      return 2;
    }
    if (strcmp(argv[i], "--trace") == 0)
      dir = v;
    else if (strcmp(argv[i], "--nodes-file") == 0)
      nodes_file = v;
    else if (strcmp(argv[i], "--pods") == 0)
      snprintf(pods_list, sizeof pods_list, "%s", v);
    else if (strcmp(argv[i], "--policy") == 0)
      snprintf(policies, sizeof policies, "%s", v);
    else if (strcmp(argv[i], "--unit") == 0)
      snprintf(units, sizeof units, "%s", v);
    else if (strcmp(argv[i], "--gpu-mem") == 0) {
      if (parse_gpu_mem(v) != 0)
        return 2;
    } else if (strcmp(argv[i], "--ref-gib") == 0)
      ref_gib = (int)bench_parse_u64(v, "--ref-gib", 1, 1024);
    else if (strcmp(argv[i], "--ties") == 0 && (strcmp(v, "random") == 0 || strcmp(v, "name") == 0))
      o.ties_random = strcmp(v, "random") == 0;
    else if (strcmp(argv[i], "--seed") == 0)
      o.seed = bench_parse_u64(v, "--seed", 0, UINT64_MAX);
    else {
      usage();
      return 2;
    }
    i++;
  }
  bench_print_machine();
  bench_table_init(&table, "pack: trace replay through filter, prioritize, bind", cols);
  {
    char pbuf[1024], *psave = NULL;
    snprintf(pbuf, sizeof pbuf, "%s", pods_list);
    for (char *pf = strtok_r(pbuf, ",", &psave); pf != NULL; pf = strtok_r(NULL, ",", &psave)) {
      char ubuf[64], *usave = NULL;
      snprintf(ubuf, sizeof ubuf, "%s", units);
      for (char *un = strtok_r(ubuf, ",", &usave); un != NULL; un = strtok_r(NULL, ",", &usave)) {
        struct trace tr;
        char polbuf[256], *save = NULL;
        uint32_t ref;
        uint64_t units_total = 0;
        memset(&tr, 0, sizeof tr);
        if (gs_unit_parse(un, &o.unit_mib) != GS_EOK) {
          fprintf(stderr, "gpushare-bench: invalid --unit %s: accepted 1GiB, 128MiB\n", un);
          return 2;
        }
        if (load_nodes(dir, nodes_file, &tr) != 0)
          return 1;
        /* R: --ref-gib, else the memory of the model with the most GPUs. */
        ref = (uint32_t)ref_gib;
        if (ref == 0) {
          uint64_t best = 0;
          for (size_t m = 0; m < nmodels; m++) {
            uint64_t g = 0;
            for (size_t k = 0; k < tr.nnodes; k++)
              if (strcmp(tr.nodes[k].model, models[m].name) == 0)
                g += tr.nodes[k].gpus;
            if (g > best) {
              best = g;
              ref = models[m].gib;
            }
          }
        }
        if (load_pods(dir, pf, ref, &tr) != 0)
          return 1;
        for (size_t k = 0; k < tr.npods; k++)
          units_total += pod_units(&tr.pods[k], o.unit_mib);
        bench_note("pack: %s: %zu nodes, %llu GPUs, %llu GiB; %zu GPU pods (%zu without GPU "
                   "skipped) asking %.0f GiB in all; R = %u GiB; unit %s; ties %s",
                   pf, tr.nnodes, (unsigned long long)tr.gpus,
                   (unsigned long long)tr.total_gib, tr.npods, tr.skipped,
                   (double)units_total * o.unit_mib / 1024.0, ref, un,
                   o.ties_random ? "random" : "by name");
        snprintf(polbuf, sizeof polbuf, "%s", policies);
        for (char *pn = strtok_r(polbuf, ",", &save); pn != NULL; pn = strtok_r(NULL, ",", &save)) {
          struct policy_def pol;
          struct replay_result r;
          if (policy_lookup(pn, &pol) != 0) {
            fprintf(stderr, "gpushare-bench: unknown policy %s: accepted binpack, spread, "
                            "binpack-fa, frag\n", pn);
            return 2;
          }
          if (replay(&tr, &pol, &o, &r) != 0)
            return 1;
          add_rows(&table, pf, un, &pol, &tr, &r);
        }
        free(tr.nodes);
        free(tr.pods);
      }
    }
  }
  bench_table_print(&table);
  bench_note("budget: the fragmentation-aware policy places more of the trace before the "
             "first failure than binpack");
  return 0;
}
