/* gpushare-bench core: filter + prioritize in-process over N nodes.
 *
 * The framework is built exactly as the extender builds it (gs__sched_new_with with
 * gs_plugins_default), the nodes are the synthetic mix of bench.h, half
 * full, and one "decision" is what kube-scheduler asks of an extender for
 * one pod: a filter over all N node names, then a prioritize over all N
 * (the worst case: kube-scheduler sends only the feasible ones).
 */
#include "bench.h"

#include "plugins.h"

#include <stdlib.h>
#include <string.h>

struct fill_ctx {
  struct gs_sched *fw;
  uint32_t unit_mib;
  size_t allocs;
  bool failed;
};

static void fill_one(void *arg, const struct bench_node *node, const struct bench_fill *f) {
  struct fill_ctx *ctx = arg;
  struct gs_alloc_part part = {.container = 0, .gpu = f->gpu, .units = f->units};
  struct gs_alloc a = {
      .ns = "bench",
      .name = f->name,
      .uid = f->uid,
      .node = node->name,
      .kind = f->kind,
      .state = GS_ALLOC_BOUND,
      .unit_mib = ctx->unit_mib,
      .assume_time_ns = 1,
      .nparts = 1,
      .parts = &part,
  };
  if (gs_fw_pod_restore(ctx->fw, &a) != GS_EOK)
    ctx->failed = true;
  ctx->allocs++;
}

/* --policy: the nodePolicy in force (frag also sets fragmentationAware
 * and gives every node host CPU and memory, half requested, and every pod
 * a CPU and memory request, so that the host terms are paid for). */
static enum gs_placement core_policy = GS_PLACE_BINPACK;
/* --workers: the framework's pool (-1: its default, one per CPU beside the
 * caller's). */
static long core_workers = -1;

/* Builds the framework with n synthetic nodes, half full. */
static struct gs_sched *build(size_t n, uint32_t gpus, const char *topo_path, char ***ret_names,
                           size_t *ret_allocs) {
  struct gs_policy policy;
  size_t nplugins;
  const struct gs_plugin_ops *const *plugins = gs_plugins_default(&nplugins);
  const struct gs_topo *topo = gpus == 8 ? bench_topo(topo_path) : NULL;
  struct fill_ctx ctx = {0};
  char **names;
  struct gs_sched *fw;

  if (gpus == 8 && topo == NULL)
    return NULL;
  gs_policy_init(&policy);
  policy.node_policy = core_policy;
  policy.frag_aware = core_policy == GS_PLACE_FRAG;
  fw = gs__sched_new_with(&policy, plugins, nplugins, NULL);
  if (fw != NULL && core_workers >= 0 &&
      gs_fw_set_parallel(fw, (size_t)core_workers, 1024) != GS_EOK) {
    gs_sched_free(fw);
    fw = NULL;
  }
  names = calloc(n, sizeof *names);
  if (fw == NULL || names == NULL) {
    gs_sched_free(fw);
    free(names);
    return NULL;
  }
  ctx.fw = fw;
  ctx.unit_mib = policy.unit_mib;
  for (size_t i = 0; i < n; i++) {
    struct bench_node bn;
    struct gs_node_spec spec;
    bench_node_make(i, gpus, &bn);
    memset(&spec, 0, sizeof spec);
    snprintf(spec.name, sizeof spec.name, "%s", bn.name);
    spec.mode = bn.mode;
    spec.gpu_count = bn.gpus;
    if (bn.mode == GS_MODE_TOPOLOGY) {
      spec.whole_gpus = bn.gpus;
      spec.has_topo = topo != NULL;
      spec.topo = topo;
    } else {
      spec.gpu_mem_units = (uint64_t)bn.gpus * bn.gib_per_gpu;
    }
    names[i] = strdup(bn.name);
    if (names[i] == NULL || gs_fw_node_upsert(fw, &spec) != GS_EOK) {
      fprintf(stderr, "gpushare-bench: cannot add node %s\n", bn.name);
      goto fail;
    }
    bench_fill_node(&bn, i, 42, fill_one, &ctx);
    if (core_policy == GS_PLACE_FRAG) {
      const char *one[1] = {names[i]};
      struct gs_host host = {96000, 393216, 48000 + 1000 * (i % 40), 196608};
      gs_sched_nodes_set_host(fw, one, &host, 1);
    }
  }
  if (ctx.failed) {
    fprintf(stderr, "gpushare-bench: cannot fill the synthetic cluster\n");
    goto fail;
  }
  *ret_names = names;
  *ret_allocs = ctx.allocs;
  return fw;

fail:
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
  gs_sched_free(fw);
  return NULL;
}

/* The pod mix of one decision round. */
struct pod_kind {
  const char *label;
  uint64_t units;     /* gpu-mem (GiB) */
  uint32_t count;     /* gpu-count */
  uint64_t whole;     /* aliyun.com/gpu */
};
static const struct pod_kind kinds[] = {
    {"1 card, 2 GiB", 2, 1, 0},
    {"1 card, 12 GiB", 12, 1, 0},
    {"2 cards, 8 GiB", 8, 2, 0},
    {"whole, 2 GPUs", 0, 1, 2},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

/* --only K: time only kinds[K-1] (for profiling one path); 0: the mix. */
static size_t only_kind;

static void make_pod(const struct pod_kind *k, size_t seq, struct gs_pod_request *p) {
  memset(p, 0, sizeof *p);
  snprintf(p->ns, sizeof p->ns, "bench");
  snprintf(p->name, sizeof p->name, "pod-%zu", seq);
  snprintf(p->uid, sizeof p->uid, "uid-pod-%zu", seq);
  p->ncontainers = 1;
  p->mem_units[0] = k->units;
  p->whole_gpus[0] = k->whole;
  p->gpu_count = k->count;
  if (core_policy == GS_PLACE_FRAG) {
    p->cpu_milli = 4000;
    p->mem_mib = 16384;
  }
}

int bench_core_run(size_t n, uint32_t gpus, size_t iters, const char *topo_path,
                   struct bench_table *t, struct core_figures *ret) {
  char **names = NULL;
  size_t allocs = 0;
  int64_t t0 = bench_now_ns();
  struct gs_sched *fw = build(n, gpus, topo_path, &names, &allocs);
  struct gs_node_result *res = calloc(n, sizeof *res);
  struct bench_samples all = {0}, filt = {0}, prio = {0}, cpu = {0};
  struct bench_samples per[NKINDS];
  size_t feasible[NKINDS] = {0};
  struct gs_pod_request *pod = malloc(sizeof *pod);
  double build_ms = (double)(bench_now_ns() - t0) / 1e6;
  int rc = 1;

  memset(per, 0, sizeof per);
  if (fw == NULL || res == NULL || pod == NULL)
    goto out;
  /* Warm-up: caches and branch predictors, not counted. */
  for (size_t k = 0; k < NKINDS; k++) {
    make_pod(&kinds[k], k, pod);
    if (gs_sched_filter(fw, pod, (const char *const *)names, n, bench_wall_ns(), res) != GS_EOK)
      goto out;
  }
  for (size_t it = 0; it < iters; it++) {
    for (size_t k = 0; k < NKINDS; k++) {
      int64_t a, b, c, ca;
      if (only_kind != 0 && k != only_kind - 1)
        continue;
      make_pod(&kinds[k], it * NKINDS + k, pod);
      ca = bench_cpu_ns();
      a = bench_now_ns();
      if (gs_sched_filter(fw, pod, (const char *const *)names, n, bench_wall_ns(), res) != GS_EOK)
        goto out;
      b = bench_now_ns();
      if (gs_sched_prioritize(fw, pod, (const char *const *)names, n, bench_wall_ns(), res) !=
          GS_EOK)
        goto out;
      c = bench_now_ns();
      bench_samples_add(&cpu, bench_cpu_ns() - ca);
      bench_samples_add(&filt, b - a);
      bench_samples_add(&prio, c - b);
      bench_samples_add(&all, c - a);
      bench_samples_add(&per[k], c - a);
      if (it == 0)
        for (size_t i = 0; i < n; i++)
          feasible[k] += res[i].code == GS_EOK;
    }
  }
  bench_samples_sort(&all);
  bench_samples_sort(&filt);
  bench_samples_sort(&prio);
  bench_samples_sort(&cpu);
  for (size_t k = 0; k < NKINDS; k++) {
    if (only_kind != 0 && k != only_kind - 1)
      continue;
    bench_samples_sort(&per[k]);
    bench_table_row(t);
    bench_table_num(t, "%.0f", (double)n);
    bench_table_str(t, "%s", kinds[k].label);
    bench_table_num(t, "%.0f", (double)feasible[k]);
    bench_table_num(t, "%.1f", (double)bench_pct(&per[k], 0.5) / 1e3);
    bench_table_num(t, "%.1f", (double)bench_pct(&per[k], 0.99) / 1e3);
    bench_table_num(t, "%.0f", (double)bench_pct(&per[k], 0.5) / (double)n);
    bench_table_str(t, "%s", "");
    bench_table_str(t, "%s", "");
  }
  bench_table_row(t);
  bench_table_num(t, "%.0f", (double)n);
  bench_table_str(t, "%s", "all (mix)");
  bench_table_str(t, "%s", "");
  bench_table_num(t, "%.1f", (double)bench_pct(&all, 0.5) / 1e3);
  bench_table_num(t, "%.1f", (double)bench_pct(&all, 0.99) / 1e3);
  bench_table_num(t, "%.0f", (double)bench_pct(&all, 0.5) / (double)n);
  bench_table_num(t, "%.1f", (double)bench_pct(&cpu, 0.5) / 1e3);
  bench_table_str(t, "filter %.1f + prioritize %.1f us; build %.0f ms, %zu pods",
                  (double)bench_pct(&filt, 0.5) / 1e3, (double)bench_pct(&prio, 0.5) / 1e3,
                  build_ms, allocs);
  if (ret != NULL) {
    ret->med_us = (double)bench_pct(&all, 0.5) / 1e3;
    ret->p99_us = (double)bench_pct(&all, 0.99) / 1e3;
    ret->per_node_ns = (double)bench_pct(&all, 0.5) / (double)n;
    ret->filter_med_us = (double)bench_pct(&filt, 0.5) / 1e3;
    ret->prio_med_us = (double)bench_pct(&prio, 0.5) / 1e3;
    ret->cpu_med_us = (double)bench_pct(&cpu, 0.5) / 1e3;
  }
  rc = 0;
out:
  if (rc != 0)
    fprintf(stderr, "gpushare-bench: core benchmark failed at %zu nodes\n", n);
  for (size_t k = 0; k < NKINDS; k++)
    bench_samples_free(&per[k]);
  bench_samples_free(&all);
  bench_samples_free(&filt);
  bench_samples_free(&prio);
  bench_samples_free(&cpu);
  if (names != NULL)
    for (size_t i = 0; i < n; i++)
      free(names[i]);
  free(names);
  free(res);
  free(pod);
  gs_sched_free(fw);
  return rc;
}

static void usage(void) {
  fprintf(stderr, "usage: gpushare-bench core [--nodes 1000,5000] [--gpus 8] [--iters N] "
                  "[--topo FILE] [--only 1-4] [--policy binpack|spread|frag] [--workers N] "
                  "[--json]\n"
                  "  --only K: time one pod kind of the mix (1 card 2 GiB, 1 card 12 GiB,\n"
                  "            2 cards 8 GiB, 2 whole GPUs)\n");
}

int bench_core(int argc, char **argv) {
  uint64_t sizes[BENCH_SIZES_MAX] = {1000, 5000};
  size_t nsizes = 2, iters = 200;
  uint32_t gpus = BENCH_GPUS_PER_NODE;
  const char *topo_path = NULL;
  static const char *const cols[] = {"nodes", "pod", "feasible", "decision p50 us",
                                     "decision p99 us", "per node ns", "CPU p50 us",
                                     "detail", NULL};
  static struct bench_table t;

  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--nodes") == 0) {
      nsizes = bench_parse_list(v, "--nodes", 1000000, sizes);
      if (nsizes == 0)
        return 2;
      i++;
    } else if (strcmp(argv[i], "--gpus") == 0) {
      gpus = (uint32_t)bench_parse_u64(v, "--gpus", 1, GS_MAX_GPUS);
      i++;
    } else if (strcmp(argv[i], "--iters") == 0) {
      iters = (size_t)bench_parse_u64(v, "--iters", 1, 1000000);
      i++;
    } else if (strcmp(argv[i], "--only") == 0) {
      only_kind = (size_t)bench_parse_u64(v, "--only", 1, NKINDS);
      i++;
    } else if (strcmp(argv[i], "--workers") == 0) {
      core_workers = (long)bench_parse_u64(v, "--workers", 0, 16);
      i++;
    } else if (strcmp(argv[i], "--policy") == 0 && v != NULL) {
      if (strcmp(v, "binpack") == 0)
        core_policy = GS_PLACE_BINPACK;
      else if (strcmp(v, "spread") == 0)
        core_policy = GS_PLACE_SPREAD;
      else if (strcmp(v, "frag") == 0)
        core_policy = GS_PLACE_FRAG;
      else {
        fprintf(stderr, "gpushare-bench: unknown --policy %s: accepted binpack, spread, frag\n", v);
        return 2;
      }
      i++;
    } else if (strcmp(argv[i], "--topo") == 0 && v != NULL) {
      topo_path = v;
      i++;
    } else {
      usage();
      return 2;
    }
  }
  bench_print_machine();
  bench_table_init(&t, "core: gs_sched_filter + gs_sched_prioritize over all nodes (one decision)",
                   cols);
  for (size_t s = 0; s < nsizes; s++)
    if (bench_core_run((size_t)sizes[s], gpus, iters, topo_path, &t, NULL) != 0)
      return 1;
  bench_table_print(&t);
  bench_note("nodePolicy %s", core_policy == GS_PLACE_FRAG     ? "frag (host CPU and memory known)"
                              : core_policy == GS_PLACE_SPREAD ? "spread"
                                                               : "binpack");
  if (core_workers >= 0)
    bench_note("workers: %ld beside the caller from 1,024 nodes", core_workers);
  else
    bench_note("workers: the framework's default (one per CPU beside the caller's, at most 7, "
               "from 1,024 nodes)");
  bench_note("budget: decision over 5,000 nodes <= 1000 us (p50 and p99 above); load now %.2f",
             bench_load1());
  return 0;
}
