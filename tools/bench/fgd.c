/* gpushare-bench pack --protocol fgd: the trace replayed as the FGD paper
 * (Weng et al., USENIX ATC'23) and its simulator measure it, so that
 * gpushare's policies sit in one table with the published ones.
 *
 * Data (docs/benchmarks.md §5b; the shared data set's fgd-protocol/README):
 * seq_default_sNN.csv, the arrival sequence of seed NN (name, cpu_milli,
 * memory_mib, num_gpu, gpu_milli, gpu_spec; inflated to 130% of the
 * cluster's GPUs), and nodes_sNN.csv, the cluster in the seed's tie order
 * (sn, cpu_milli, memory_mib, gpu, model).
 *
 * Protocol: every GPU is 1000 milli-GPU: a `share` node whose GPUs hold
 * 1000 units of 128 MiB, so a pod asking m milli asks m units (exact).
 * Host CPU and memory are enforced per node (kube-scheduler's
 * NodeResourcesFit), CPU-only pods are placed too, each pod is tried once
 * in order and never leaves. Among the nodes that fit, the highest score
 * wins; ties go to the first node in the seed's order. After each pod the
 * allocation (milli-GPU placed / cluster milli-GPU) is logged against the
 * arrived milli-GPU (all pods tried so far); the value at x% is the
 * allocation after the last pod whose arrival is at most x%.
 *
 * Scoring (--scoring):
 *   paper  the policy is the only score (the paper's protocol), at the
 *          plugin's 0..100 (binpack and spread: multiples of 10): binpack and
 *          spread score GPU pods and have no opinion on CPU-only pods
 *          (the extender never sees them); frag scores every pod, CPU-only
 *          ones included, as the in-process plugin can; frag-fine ranks by
 *          the exact fragmentation delta instead of its 0..10 score;
 *          frag-norm spreads that delta over the score's range per pod
 *          (min-max over the nodes that fit; an experiment of issue 32:
 *          the extender's normalised score spreads its 0..100 score
 *          instead, --normalize below).
 *   kube   what users of the extender get: kube-scheduler's default scores
 *          (NodeResourcesFit LeastAllocated + NodeResourcesBalancedAllocation,
 *          0..100 each) for every pod, plus for GPU pods gpushare's
 *          prioritize × 10 × the weight deploy/scheduler/ ships (5). Under
 *          frag the prioritize score is the extender's: its 0..100 score
 *          spread over the request's nodes by gs_place_scores_normalize
 *          (the function the extender's prioritize calls; --normalize off:
 *          rounded to 0..10 as the framework does without
 *          fragScoreNormalize).
 *   plugin what users of the in-process plugin get: the same default
 *          scores plus gpushare's score (0..100) × 5 for every pod, CPU-only
 *          ones included (frag scores them; binpack and spread do not).
 *   packing what users of the extender get with deploy/scheduler/'s packing
 *          stanza (every pod sent to the extender): kube, with CPU-only pods
 *          scored by gpushare too (0..10 × 10 × 5).
 *
 * Calibration against the real pipeline (tools/bench/fgd_real.py, issue 32):
 * ties go as kube-scheduler breaks them (one of the best nodes at random;
 * seeded by the seed, so runs repeat) for kube, plugin and packing, and to
 * the first node in the seed's order for paper, as the paper's simulator
 * does (--ties first|random forces one); --host-view off leaves the nodes' host CPU and memory out of
 * gpushare's scores (what the extender knew before it watched them; the
 * fit is still enforced); --normalize on|off sets the extender's
 * fragScoreNormalize for kube and packing (default: the extender's).
 */
#include "bench.h"

#include <gpushare/place.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FGD_LINE_MAX 1024
#define FGD_SEEDS_MAX 16
#define FGD_X_MAX 130          /* arrival percentages 0..130 */
#define FGD_MILLI 1000u        /* one GPU */
#define FGD_UNIT GS_UNIT_128MIB /* one milli-GPU is one unit */
#define FGD_KUBE_WEIGHT 5      /* deploy/scheduler/: the extender's weight */
#define FGD_POLICIES_MAX 8
#define FGD_PUBLISHED_MAX 16

struct fgd_node {
  char name[64];
  uint64_t cpu, mem; /* allocatable: milli-CPU, MiB */
  uint32_t gpus;
  uint64_t cpu_used, mem_used;
};

struct fgd_pod {
  uint64_t cpu, mem;
  uint32_t ngpu, milli; /* milli per GPU; 0 GPUs: CPU-only */
};

struct fgd_data {
  struct fgd_node *nodes;
  size_t nnodes;
  struct fgd_pod *pods;
  size_t npods;
  uint64_t cap_milli; /* GPUs × 1000 */
};

enum fgd_policy { FGD_BINPACK, FGD_SPREAD, FGD_FRAG, FGD_FRAG_FINE, FGD_FRAG_NORM };
enum fgd_scoring { FGD_SCORING_PAPER, FGD_SCORING_KUBE, FGD_SCORING_PLUGIN, FGD_SCORING_PACKING };

static const char *const scoring_names[] = {"paper", "kube", "plugin", "packing"};

/* --ties (calibration; see the top): -1 the default (random for the
 * scorings that model kube-scheduler, first for paper), 0 first, 1 random */
static int ties_random = -1;
static bool host_view = true;
/* --normalize: the extender's frag scores spread over each request's nodes
 * (fragScoreNormalize); -1 the extender's default (gs_policy_init) */
static int normalize = -1;

static const char *const policy_names[] = {"binpack", "spread", "frag", "frag-fine",
                                           "frag-norm"};

/* ---- input ---------------------------------------------------------------------- */

/* A non-negative decimal field, or -1. */
static int64_t num(const char *s) {
  char *end;
  long long v;
  errno = 0;
  v = strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < 0)
    return -1;
  return v;
}

static void *grow(void *p, size_t *cap, size_t n, size_t size) {
  if (n < *cap)
    return p;
  *cap = *cap ? *cap * 2 : 1024;
  p = realloc(p, *cap * size);
  if (p == NULL) {
    fprintf(stderr, "gpushare-bench: out of memory\n");
    exit(1);
  }
  return p;
}

/* Reads one CSV with the named columns into rows of int64 (name column,
 * if asked, into names). Returns the row count or -1 (with a message). */
static long read_csv(const char *path, const char *const *want, size_t nwant, int64_t **ret_rows,
                     char (**ret_names)[64], const char *name_col) {
  char line[FGD_LINE_MAX], *cols[32];
  int idx[8], name_idx = -1;
  size_t n, cap = 0, ncap = 0, rows = 0, lineno = 1;
  int64_t *out = NULL;
  char(*names)[64] = NULL;
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "gpushare-bench: cannot open %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (fgets(line, sizeof line, f) == NULL)
    goto bad_header;
  n = bench_csv_split(line, cols, 32);
  for (size_t i = 0; i < nwant; i++)
    if ((idx[i] = bench_csv_column(cols, n, want[i])) < 0)
      goto bad_header;
  if (name_col != NULL && (name_idx = bench_csv_column(cols, n, name_col)) < 0)
    goto bad_header;
  while (fgets(line, sizeof line, f) != NULL) {
    lineno++;
    n = bench_csv_split(line, cols, 32);
    if (n == 1 && cols[0][0] == '\0')
      continue;
    out = grow(out, &cap, rows * nwant + nwant, sizeof *out);
    for (size_t i = 0; i < nwant; i++) {
      int64_t v = (size_t)idx[i] < n ? num(cols[idx[i]]) : -1;
      if (v < 0 && !((size_t)idx[i] < n && cols[idx[i]][0] == '\0')) {
        fprintf(stderr, "gpushare-bench: %s:%zu: %s is not a non-negative number\n", path,
                lineno, want[i]);
        goto fail;
      }
      out[rows * nwant + i] = v < 0 ? 0 : v;
    }
    if (name_idx >= 0) {
      names = grow(names, &ncap, rows, sizeof *names);
      snprintf(names[rows], sizeof names[rows], "%s",
               (size_t)name_idx < n ? cols[name_idx] : "");
    }
    rows++;
  }
  fclose(f);
  *ret_rows = out;
  if (ret_names != NULL)
    *ret_names = names;
  return (long)rows;
bad_header:
  fprintf(stderr, "gpushare-bench: %s: the header lacks a column this protocol reads\n", path);
fail:
  fclose(f);
  free(out);
  free(names);
  return -1;
}

/* The workload (--workload): "default" reads the shipped seq_default_sNN.csv
 * and nodes_sNN.csv; another reads seq_<name>_sNN.csv and
 * nodes_<name>_sNN.csv, which tools/bench/fgd-workloads.sh generates. */
static const char *workload = "default";

static int load(const char *dir, int seed, struct fgd_data *d) {
  static const char *const node_cols[] = {"cpu_milli", "memory_mib", "gpu"};
  static const char *const pod_cols[] = {"cpu_milli", "memory_mib", "num_gpu", "gpu_milli"};
  char path[4096];
  int64_t *rows;
  char(*names)[64];
  long n;
  memset(d, 0, sizeof *d);
  if (strcmp(workload, "default") == 0)
    snprintf(path, sizeof path, "%s/nodes_s%d.csv", dir, seed);
  else
    snprintf(path, sizeof path, "%s/nodes_%s_s%d.csv", dir, workload, seed);
  if ((n = read_csv(path, node_cols, 3, &rows, &names, "sn")) < 0)
    return -1;
  d->nodes = calloc((size_t)n + 1, sizeof *d->nodes);
  if (d->nodes == NULL)
    exit(1);
  for (long i = 0; i < n; i++) {
    struct fgd_node *x = &d->nodes[d->nnodes++];
    snprintf(x->name, sizeof x->name, "%s", names[i]);
    x->cpu = (uint64_t)rows[i * 3];
    x->mem = (uint64_t)rows[i * 3 + 1];
    x->gpus = rows[i * 3 + 2] > GS_MAX_GPUS ? GS_MAX_GPUS : (uint32_t)rows[i * 3 + 2];
    d->cap_milli += (uint64_t)x->gpus * FGD_MILLI;
  }
  free(rows);
  free(names);
  snprintf(path, sizeof path, "%s/seq_%s_s%d.csv", dir, workload, seed);
  if ((n = read_csv(path, pod_cols, 4, &rows, NULL, NULL)) < 0)
    return -1;
  d->pods = calloc((size_t)n + 1, sizeof *d->pods);
  if (d->pods == NULL)
    exit(1);
  for (long i = 0; i < n; i++) {
    struct fgd_pod *p = &d->pods[d->npods++];
    int64_t milli = rows[i * 4 + 3];
    p->cpu = (uint64_t)rows[i * 4];
    p->mem = (uint64_t)rows[i * 4 + 1];
    p->ngpu = rows[i * 4 + 2] > GS_MAX_GPUS ? GS_MAX_GPUS : (uint32_t)rows[i * 4 + 2];
    /* As the simulator reads it: a share above one GPU is one GPU; a GPU
     * pod asking no share asks no GPU. */
    p->milli = milli > FGD_MILLI ? FGD_MILLI : (uint32_t)milli;
    if (p->milli == 0)
      p->ngpu = 0;
  }
  free(rows);
  if (d->nnodes == 0 || d->cap_milli == 0) {
    fprintf(stderr, "gpushare-bench: %s/nodes_s%d.csv: no GPU in the cluster\n", dir, seed);
    return -1;
  }
  return 0;
}

static void unload(struct fgd_data *d) {
  free(d->nodes);
  free(d->pods);
  memset(d, 0, sizeof *d);
}

/* ---- one replay ------------------------------------------------------------------- */

/* kube-scheduler's NodeResourcesFit (LeastAllocated) and
 * NodeResourcesBalancedAllocation scores of a node with the pod on it,
 * 0..100 each, as v1.25+ computes them for CPU and memory. */
static int64_t kube_default_score(const struct fgd_node *n, const struct fgd_pod *p) {
  uint64_t cpu = n->cpu_used + p->cpu, mem = n->mem_used + p->mem;
  int64_t least = 0;
  double fc, fm, balanced;
  if (n->cpu > 0)
    least += (int64_t)((n->cpu - cpu) * 100 / n->cpu);
  if (n->mem > 0)
    least += (int64_t)((n->mem - mem) * 100 / n->mem);
  least /= 2;
  fc = n->cpu ? (double)cpu / (double)n->cpu : 0;
  fm = n->mem ? (double)mem / (double)n->mem : 0;
  balanced = (1 - (fc > fm ? fc - fm : fm - fc) / 2) * 100;
  return least + (int64_t)balanced;
}

struct replay {
  enum fgd_policy policy;
  enum fgd_scoring scoring;
  double at[FGD_X_MAX + 1]; /* allocation % at each arrived % */
  size_t placed, failed;
  double us_per_pod;
  int seed; /* --ties random's generator starts from it */
  bool normalize; /* the extender's frag scores spread (--normalize) */
};

/* The policy's opinion of the pod on node v (higher is better), as the
 * gpumem plugin forms it; false when the GPUs do not fit. */
static bool score_node(const struct replay *r, const struct gs_node *v,
                       const struct gs_place_pod *prep, const struct gs_pod_request *req,
                       const struct gs_frag_table *table, const struct gs_policy *policy,
                       struct gs_choice *choice, int64_t *ret) {
  bool frag = r->policy != FGD_BINPACK && r->policy != FGD_SPREAD;
  struct gs_frag_pick fp = {.table = table};
  /* The extender's scale for the extender's view, else the plugin's. */
  bool ext = r->scoring == FGD_SCORING_KUBE || r->scoring == FGD_SCORING_PACKING;
  /* frag on the extender's scale: its 0..100 first, turned into 0..10 by
   * the caller as the extender does */
  int64_t max = ext && r->policy != FGD_FRAG ? 10 : GS_SCORE_MAX;
  bool line = r->policy == FGD_FRAG; /* the 0..max line */
  if (prep != NULL) {
    if (gs_place_pick_prepared(v, prep, frag ? gs_place_choose_frag : NULL, &fp, choice, NULL) !=
        GS_EOK)
      return false;
    if (!frag)
      *ret = choice->score * max / 10;
    else if (!fp.has_delta)
      *ret = line
                 ? gs_place_frag_score(v, policy, table, req, choice, max)
                 : -gs_place_frag_delta(v, policy, table, choice->gpus, choice->ngpus,
                                        choice->mib_per_gpu, req->cpu_milli, req->mem_mib);
    else
      *ret = line
                 ? gs_place_frag_delta_score(fp.delta,
                                             (int64_t)(choice->mib_per_gpu * choice->ngpus), max)
                 : -fp.delta;
    return true;
  }
  choice->ngpus = 0;
  *ret = 0; /* binpack and spread: no opinion on a pod without GPUs */
  if (frag && r->scoring != FGD_SCORING_KUBE)
    *ret = line
               ? gs_place_frag_score(v, policy, table, req, NULL, max)
               : -gs_place_frag_delta(v, policy, table, NULL, 0, 0, req->cpu_milli, req->mem_mib);
  return true;
}

static int run(const struct fgd_data *d, struct replay *r) {
  struct gs_ledger *l = gs_ledger_new(FGD_UNIT);
  struct gs_policy policy;
  struct gs_frag_dist dist;
  struct gs_frag_table table;
  struct fgd_node *nodes = malloc(d->nnodes * sizeof *nodes);
  const char **names = malloc(d->nnodes * sizeof *names);
  const struct gs_node **views = malloc(d->nnodes * sizeof *views);
  int64_t *raw = malloc(d->nnodes * sizeof *raw);
  bool *ok = malloc(d->nnodes * sizeof *ok);
  struct gs_choice *choices = malloc(d->nnodes * sizeof *choices);
  struct gs_node_result *res = calloc(d->nnodes, sizeof *res); /* the extender's answer */
  uint64_t arrived = 0, allocated = 0;
  uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(r->seed + 1); /* --ties random */
  int64_t t0;
  int rc = -1;

  gs_policy_init(&policy);
  policy.unit_mib = FGD_UNIT;
  policy.node_policy = r->policy == FGD_SPREAD ? GS_PLACE_SPREAD
                       : r->policy == FGD_BINPACK ? GS_PLACE_BINPACK
                                                  : GS_PLACE_FRAG;
  policy.frag_aware = r->policy != FGD_BINPACK && r->policy != FGD_SPREAD;
  gs_frag_dist_init(&dist);
  gs_frag_table_build(&table, &dist);
  memset(r->at, 0, sizeof r->at);
  r->placed = r->failed = 0;
  if (l == NULL || nodes == NULL || names == NULL || views == NULL || raw == NULL ||
      ok == NULL || choices == NULL || res == NULL)
    goto out;
  memcpy(nodes, d->nodes, d->nnodes * sizeof *nodes);
  for (size_t i = 0; i < d->nnodes; i++) {
    struct gs_node_spec spec;
    struct gs_host host = {.cpu_milli = nodes[i].cpu, .mem_mib = nodes[i].mem};
    memset(&spec, 0, sizeof spec);
    snprintf(spec.name, sizeof spec.name, "%s", nodes[i].name);
    spec.mode = GS_MODE_SHARE;
    spec.placement = r->policy == FGD_SPREAD ? GS_PLACE_SPREAD : GS_PLACE_BINPACK;
    spec.gpu_count = nodes[i].gpus;
    spec.gpu_mem_units = (uint64_t)nodes[i].gpus * FGD_MILLI;
    if (gs_ledger_node_upsert(l, &spec) != GS_EOK ||
        (host_view && gs_ledger_node_set_host(l, spec.name, &host) != GS_EOK)) {
      fprintf(stderr, "gpushare-bench: node %s refused (duplicate name?)\n", nodes[i].name);
      goto out;
    }
    names[i] = nodes[i].name;
  }
  t0 = bench_now_ns();
  for (size_t i = 0; i < d->npods; i++) {
    const struct fgd_pod *p = &d->pods[i];
    struct gs_pod_request req;
    struct gs_place_pod prep;
    struct gs_choice best_choice, choice;
    int64_t best_score = INT64_MIN, s;
    size_t best = SIZE_MAX, ties = 0;
    double a;

    memset(&req, 0, sizeof req);
    snprintf(req.ns, sizeof req.ns, "trace");
    snprintf(req.name, sizeof req.name, "pod-%zu", i);
    snprintf(req.uid, sizeof req.uid, "uid-%zu", i);
    req.ncontainers = 1;
    req.mem_units[0] = (uint64_t)p->ngpu * p->milli;
    req.gpu_count = p->ngpu ? p->ngpu : 1;
    req.cpu_milli = p->cpu;
    req.mem_mib = p->mem;
    if (p->ngpu > 0) {
      if (gs_place_prepare(&req, &policy, &prep, NULL) != GS_EOK) {
        r->failed++;
        goto logged;
      }
      if (policy.node_policy == GS_PLACE_FRAG) { /* as gpumem learns */
        gs_frag_dist_add_host(&dist, p->ngpu, (uint64_t)p->milli * FGD_UNIT, p->cpu, p->mem);
        gs_frag_table_build(&table, &dist);
      }
    }
    gs_ledger_nodes_get(l, names, d->nnodes, views);
    /* Every node's own score first: frag-norm spreads them over 0..max
     * per pod (min-max over the nodes that fit) before they are combined. */
    {
      int64_t lo = INT64_MAX, hi = INT64_MIN;
      bool ext = r->scoring == FGD_SCORING_KUBE || r->scoring == FGD_SCORING_PACKING;
      for (size_t j = 0; j < d->nnodes; j++) {
        const struct fgd_node *n = &nodes[j];
        ok[j] = n->cpu_used + p->cpu <= n->cpu && n->mem_used + p->mem <= n->mem && /* Fit */
                score_node(r, views[j], p->ngpu ? &prep : NULL, &req, &table, &policy,
                           &choices[j], &raw[j]);
        if (ok[j]) {
          lo = raw[j] < lo ? raw[j] : lo;
          hi = raw[j] > hi ? raw[j] : hi;
        }
      }
      if (r->policy == FGD_FRAG_NORM) {
        int64_t max = ext ? 10 : GS_SCORE_MAX;
        for (size_t j = 0; j < d->nnodes; j++)
          if (ok[j])
            raw[j] = hi == lo ? max : ((raw[j] - lo) * max * 2 + (hi - lo)) / (2 * (hi - lo));
      } else if (r->policy == FGD_FRAG && ext) {
        /* the extender's prioritize answer from its 0..100 scores */
        for (size_t j = 0; j < d->nnodes; j++) {
          res[j].code = ok[j] ? GS_EOK : GS_ENOFIT;
          res[j].score100 = ok[j] ? raw[j] : 0;
          res[j].score = (res[j].score100 + 5) / 10; /* framework.c, run_node */
        }
        if (r->normalize)
          gs_place_scores_normalize(res, d->nnodes, 10);
        for (size_t j = 0; j < d->nnodes; j++)
          raw[j] = res[j].score;
      }
    }
    for (size_t j = 0; j < d->nnodes; j++) {
      const struct fgd_node *n = &nodes[j];
      if (!ok[j])
        continue;
      s = raw[j];
      choice = choices[j];
      if (r->scoring == FGD_SCORING_KUBE)
        s = kube_default_score(n, p) + (p->ngpu ? s * 10 * FGD_KUBE_WEIGHT : 0);
      else if (r->scoring == FGD_SCORING_PACKING)
        s = kube_default_score(n, p) + s * 10 * FGD_KUBE_WEIGHT;
      else if (r->scoring == FGD_SCORING_PLUGIN)
        s = kube_default_score(n, p) + s * FGD_KUBE_WEIGHT; /* s in 0..100 */
      if (s > best_score) { /* ties: the first node in the seed's order */
        best_score = s;
        best = j;
        best_choice = choice;
        ties = 1;
      } else if (s == best_score &&
                 (ties_random == 1 || (ties_random < 0 && r->scoring != FGD_SCORING_PAPER))) {
        /* kube-scheduler's selectHost: each of the k best kept with
         * probability 1/k (reservoir sampling) */
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        if (rng % ++ties == 0) {
          best = j;
          best_choice = choice;
        }
      }
    }
    if (best == SIZE_MAX) {
      r->failed++;
      goto logged;
    }
    if (p->ngpu > 0) {
      struct gs_alloc_part parts[GS_MAX_GPUS];
      struct gs_alloc alloc = {.ns = req.ns, .name = req.name, .uid = req.uid,
                               .node = nodes[best].name, .kind = GS_ALLOC_MEM,
                               .state = GS_ALLOC_BOUND, .unit_mib = FGD_UNIT};
      alloc.nparts = gs_place_parts(&req, &best_choice, parts, GS_MAX_GPUS);
      alloc.parts = parts;
      if (alloc.nparts == 0 || gs_ledger_reserve(l, &alloc, policy.cgpu_max_pods) != GS_EOK) {
        fprintf(stderr, "gpushare-bench: the ledger refused pod %zu on %s\n", i,
                nodes[best].name);
        goto out;
      }
      allocated += (uint64_t)p->ngpu * p->milli;
    }
    nodes[best].cpu_used += p->cpu;
    nodes[best].mem_used += p->mem;
    if (host_view) {
      struct gs_host host = {nodes[best].cpu, nodes[best].mem, nodes[best].cpu_used,
                             nodes[best].mem_used};
      if (gs_ledger_node_set_host(l, nodes[best].name, &host) != GS_EOK)
        goto out;
    }
    r->placed++;
  logged:
    arrived += (uint64_t)p->ngpu * p->milli;
    a = 100.0 * (double)arrived / (double)d->cap_milli;
    for (int x = FGD_X_MAX; x >= 0 && (double)x >= a; x--)
      r->at[x] = 100.0 * (double)allocated / (double)d->cap_milli;
  }
  r->us_per_pod = d->npods ? (double)(bench_now_ns() - t0) / 1e3 / (double)d->npods : 0;
  rc = 0;
out:
  gs_ledger_free(l);
  free(nodes);
  free(names);
  free(views);
  free(raw);
  free(ok);
  free(choices);
  free(res);
  return rc;
}

/* ---- the published results ----------------------------------------------------------- */

struct published {
  char name[48];
  double at[FGD_SEEDS_MAX][FGD_X_MAX + 1];
  int nseeds;
};

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  if (n <= 0)
    return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* fgd_artifact_allocation_default.csv: per policy and seed, the allocation
 * % at each arrived % (columns "0".."130"). Returns the policies read. */
static int load_published(const char *path, const int *seeds, int nseeds, struct published *out,
                          int max) {
  static char line[16384];
  char *cols[FGD_X_MAX + 16];
  int c_pol, c_seed, c_x[FGD_X_MAX + 1], n = 0;
  size_t nc;
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return 0;
  if (fgets(line, sizeof line, f) == NULL)
    goto done;
  nc = bench_csv_split(line, cols, FGD_X_MAX + 16);
  c_pol = bench_csv_column(cols, nc, "sc_policy");
  c_seed = bench_csv_column(cols, nc, "seed");
  for (int x = 0; x <= FGD_X_MAX; x++) {
    char name[8];
    snprintf(name, sizeof name, "%d", x);
    c_x[x] = bench_csv_column(cols, nc, name);
  }
  if (c_pol < 0 || c_seed < 0 || c_x[FGD_X_MAX] < 0)
    goto done;
  while (fgets(line, sizeof line, f) != NULL) {
    int p, s = -1;
    nc = bench_csv_split(line, cols, FGD_X_MAX + 16);
    if (nc <= (size_t)c_x[FGD_X_MAX])
      continue;
    for (int i = 0; i < nseeds; i++)
      if (seeds[i] == atoi(cols[c_seed]))
        s = i;
    if (s < 0)
      continue;
    for (p = 0; p < n; p++)
      if (strcmp(out[p].name, cols[c_pol]) == 0)
        break;
    if (p == n) {
      if (n == max)
        continue;
      memset(&out[n], 0, sizeof out[n]);
      snprintf(out[n].name, sizeof out[n].name, "%s", cols[c_pol]);
      n++;
    }
    for (int x = 0; x <= FGD_X_MAX; x++)
      out[p].at[out[p].nseeds][x] = c_x[x] >= 0 ? atof(cols[c_x[x]]) : 0;
    out[p].nseeds++;
  }
done:
  fclose(f);
  return n;
}

/* ---- command line ------------------------------------------------------------------------ */

static void usage(void) {
  fprintf(stderr,
          "usage: gpushare-bench pack --protocol fgd [--dir DIR] [--seeds 42-51|42,43,...]\n"
          "       [--policy binpack,spread,frag,frag-fine] [--scoring paper,kube] [--step 10]\n"
          "       [--curve] [--workload default|NAME] [--ties first|random]\n"
          "       [--host-view on|off] [--normalize on|off]   (--scoring also plugin, packing)\n"
          "  --workload NAME: seq_NAME_sNN.csv and nodes_NAME_sNN.csv in DIR\n"
          "                   (tools/bench/fgd-workloads.sh makes them)\n");
}

static int parse_seeds(const char *text, int *seeds) {
  int n = 0, a, b;
  char buf[256], *save = NULL;
  snprintf(buf, sizeof buf, "%s", text);
  for (char *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
    if (sscanf(t, "%d-%d", &a, &b) == 2) {
    } else if (sscanf(t, "%d", &a) == 1) {
      b = a;
    } else {
      return 0;
    }
    for (int s = a; s <= b; s++) {
      if (n == FGD_SEEDS_MAX || s < 0)
        return 0;
      seeds[n++] = s;
    }
  }
  return n;
}

struct result {
  enum fgd_policy policy;
  enum fgd_scoring scoring;
  double at[FGD_SEEDS_MAX][FGD_X_MAX + 1];
};

static void median_row(struct bench_table *t, const char *name, const char *scoring,
                       double (*at)[FGD_X_MAX + 1], int nseeds, int step) {
  double v[FGD_SEEDS_MAX];
  bench_table_row(t);
  bench_table_str(t, "%s", name);
  bench_table_str(t, "%s", scoring);
  for (int x = 0; x <= FGD_X_MAX; x += step) {
    for (int s = 0; s < nseeds; s++)
      v[s] = at[s][x];
    bench_table_num(t, "%.2f", median(v, nseeds));
  }
}

int bench_pack_fgd(int argc, char **argv) {
  const char *dir = bench_shared_path("data/fgd-protocol");
  char policies[128] = "binpack,spread,frag,frag-fine", scorings[64] = "paper,kube,plugin";
  int seeds[FGD_SEEDS_MAX], nseeds = parse_seeds("42-51", seeds), step = 10;
  bool curve = false;
  static struct result results[FGD_POLICIES_MAX * 4];
  static struct published pub[FGD_PUBLISHED_MAX];
  static struct bench_table runs, med;
  static const char *const run_cols[] = {"policy", "scoring", "seed", "alloc % at 100",
                                         "alloc % at 130", "pods placed", "pods failed",
                                         "us/pod", NULL};
  const char *med_cols[BENCH_TABLE_COLS + 1];
  static char med_names[BENCH_TABLE_COLS][16];
  char path[4096];
  int nres = 0, npub, ncols = 0;

  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--curve") == 0) {
      curve = true;
      continue;
    }
    if (v == NULL) {
      usage();
      return 2;
    }
    if (strcmp(argv[i], "--protocol") == 0 && strcmp(v, "fgd") == 0)
      ;
    else if (strcmp(argv[i], "--dir") == 0)
      dir = v;
    else if (strcmp(argv[i], "--workload") == 0) {
      if (strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(v) || v[0] == '\0') {
        fprintf(stderr, "gpushare-bench: --workload wants a trace workload name (default, "
                        "gpushare100, multigpu50)\n");
        return 2;
      }
      workload = v;
    }
    else if (strcmp(argv[i], "--seeds") == 0) {
      if ((nseeds = parse_seeds(v, seeds)) == 0) {
        fprintf(stderr, "gpushare-bench: --seeds wants 42-51 or 42,43 (at most %d)\n",
                FGD_SEEDS_MAX);
        return 2;
      }
    } else if (strcmp(argv[i], "--policy") == 0)
      snprintf(policies, sizeof policies, "%s", v);
    else if (strcmp(argv[i], "--scoring") == 0)
      snprintf(scorings, sizeof scorings, "%s", v);
    else if (strcmp(argv[i], "--ties") == 0 &&
             (strcmp(v, "first") == 0 || strcmp(v, "random") == 0))
      ties_random = strcmp(v, "random") == 0 ? 1 : 0;
    else if (strcmp(argv[i], "--host-view") == 0 &&
             (strcmp(v, "on") == 0 || strcmp(v, "off") == 0))
      host_view = strcmp(v, "on") == 0;
    else if (strcmp(argv[i], "--normalize") == 0 &&
             (strcmp(v, "on") == 0 || strcmp(v, "off") == 0))
      normalize = strcmp(v, "on") == 0;
    else if (strcmp(argv[i], "--step") == 0)
      step = (int)bench_parse_u64(v, "--step", 10, FGD_X_MAX);
    else {
      usage();
      return 2;
    }
    i++;
  }
  {
    char pbuf[128], sbuf[64], *ps = NULL, *ss = NULL;
    snprintf(sbuf, sizeof sbuf, "%s", scorings);
    for (char *sc = strtok_r(sbuf, ",", &ss); sc != NULL; sc = strtok_r(NULL, ",", &ss)) {
      enum fgd_scoring scoring;
      if (strcmp(sc, "paper") == 0)
        scoring = FGD_SCORING_PAPER;
      else if (strcmp(sc, "kube") == 0)
        scoring = FGD_SCORING_KUBE;
      else if (strcmp(sc, "plugin") == 0)
        scoring = FGD_SCORING_PLUGIN;
      else if (strcmp(sc, "packing") == 0)
        scoring = FGD_SCORING_PACKING;
      else {
        fprintf(stderr, "gpushare-bench: unknown --scoring %s: accepted paper, kube, plugin, packing\n",
                sc);
        return 2;
      }
      snprintf(pbuf, sizeof pbuf, "%s", policies);
      for (char *pn = strtok_r(pbuf, ",", &ps); pn != NULL; pn = strtok_r(NULL, ",", &ps)) {
        size_t k;
        for (k = 0; k < sizeof policy_names / sizeof *policy_names; k++)
          if (strcmp(pn, policy_names[k]) == 0)
            break;
        if (k == sizeof policy_names / sizeof *policy_names) {
          fprintf(stderr, "gpushare-bench: unknown policy %s: accepted binpack, spread, frag, "
                          "frag-fine, frag-norm\n", pn);
          return 2;
        }
        if (nres == FGD_POLICIES_MAX * 4)
          break;
        results[nres].policy = (enum fgd_policy)k;
        results[nres].scoring = scoring;
        nres++;
      }
      ps = NULL;
    }
  }
  bench_print_machine();
  bench_table_init(&runs, "pack --protocol fgd: allocation per policy and seed", run_cols);
  for (int s = 0; s < nseeds; s++) {
    struct fgd_data d;
    if (load(dir, seeds[s], &d) != 0)
      return 1;
    if (s == 0)
      bench_note("pack fgd: %s, workload %s, seed %d: %zu nodes, %llu GPUs, %zu pods", dir,
                 workload, seeds[s], d.nnodes, (unsigned long long)(d.cap_milli / FGD_MILLI),
                 d.npods);
    for (int k = 0; k < nres; k++) {
      struct replay r = {.policy = results[k].policy, .scoring = results[k].scoring,
                         .seed = seeds[s], .normalize = normalize == 1};
      if (normalize < 0) {
        struct gs_policy defaults;
        gs_policy_init(&defaults);
        r.normalize = defaults.frag_normalize;
      }
      if (run(&d, &r) != 0) {
        unload(&d);
        return 1;
      }
      memcpy(results[k].at[s], r.at, sizeof r.at);
      bench_table_row(&runs);
      bench_table_str(&runs, "%s", policy_names[r.policy]);
      bench_table_str(&runs, "%s", scoring_names[r.scoring]);
      bench_table_num(&runs, "%.0f", seeds[s]);
      bench_table_num(&runs, "%.2f", r.at[100]);
      bench_table_num(&runs, "%.2f", r.at[FGD_X_MAX]);
      bench_table_num(&runs, "%.0f", (double)r.placed);
      bench_table_num(&runs, "%.0f", (double)r.failed);
      bench_table_num(&runs, "%.1f", r.us_per_pod);
      if (curve) {
        char text[FGD_X_MAX * 8 + 1];
        size_t off = 0;
        for (int x = 0; x <= FGD_X_MAX; x++)
          off += (size_t)snprintf(text + off, sizeof text - off, x ? " %.2f" : "%.2f", r.at[x]);
        bench_note("curve %s %s seed %d (allocation %% at arrived 0..%d%%): %s",
                   policy_names[r.policy], scoring_names[r.scoring],
                   seeds[s], FGD_X_MAX, text);
      }
    }
    unload(&d);
  }
  bench_table_print(&runs);

  med_cols[ncols++] = "policy";
  med_cols[ncols++] = "scoring";
  for (int x = 0; x <= FGD_X_MAX && ncols < BENCH_TABLE_COLS; x += step) {
    snprintf(med_names[ncols], sizeof med_names[ncols], "%d%%", x);
    med_cols[ncols] = med_names[ncols];
    ncols++;
  }
  med_cols[ncols] = NULL;
  bench_table_init(&med, "pack --protocol fgd: median allocation % over seeds, at arrived %",
                   med_cols);
  for (int k = 0; k < nres; k++)
    median_row(&med, policy_names[results[k].policy],
               scoring_names[results[k].scoring], results[k].at, nseeds,
               step);
  snprintf(path, sizeof path, "%s/fgd_artifact_allocation_default.csv", dir);
  /* published results exist for the default workload only */
  npub = strcmp(workload, "default") == 0
             ? load_published(path, seeds, nseeds, pub, FGD_PUBLISHED_MAX)
             : 0;
  for (int p = 0; p < npub; p++)
    median_row(&med, pub[p].name, "published", pub[p].at, pub[p].nseeds, step);
  bench_table_print(&med);
  if (strcmp(workload, "default") != 0) {
    bench_note("workload %s: the paper publishes no results for it", workload);
    return 0;
  }
  if (npub == 0)
    bench_note("no published results at %s", path);
  bench_note("targets (issue 17): median >= 95.23%% at 100%% and >= 95.40%% at 130%% (FGD)");
  return 0;
}
