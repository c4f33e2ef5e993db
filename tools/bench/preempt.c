/* gpushare-bench preempt: the preempt decision kube-scheduler waits for —
 * gs_fw_preempt for every offered node, as gs_sched_preempt runs it — over
 * N candidate nodes with V proposed victims each (docs/benchmarks.md).
 *
 * Each node has two 16 GiB GPUs; V low-priority pods fill them (sizes 1..4
 * GiB, deterministic), the preemptor asks 8 GiB at a higher priority, and
 * kube-scheduler's proposal is every pod of the node. */
#include "bench.h"
#include "plugins.h"

#include <gpushare/alloc.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
  fprintf(stderr, "usage: gpushare-bench preempt [--nodes 1000] [--victims 10] [--iters 20] "
                  "[--json]\n");
}

static int run(size_t nodes, size_t victims, size_t iters, struct bench_table *t) {
  struct gs_policy policy;
  struct gs_sched *fw;
  size_t nplugins;
  const struct gs_plugin_ops *const *plugins = gs_plugins_default(&nplugins);
  char (*names)[32] = calloc(nodes, sizeof *names);
  char (*uids)[48] = calloc(nodes * victims, sizeof *uids);
  const char **proposed = calloc(victims, sizeof *proposed);
  struct gs_pod_request pod;
  struct bench_samples wall = {0}, cpu = {0};
  uint64_t seed = 42;
  size_t kept = 0, total_victims = 0;
  int rc = 1;

  gs_policy_init(&policy);
  fw = gs__sched_new_with(&policy, plugins, nplugins, NULL);
  if (fw == NULL || names == NULL || uids == NULL || proposed == NULL)
    goto out;
  for (size_t i = 0; i < nodes; i++) {
    struct gs_node_spec spec;
    uint64_t used[2] = {0, 0};
    memset(&spec, 0, sizeof spec);
    snprintf(names[i], sizeof names[i], "pre-%05zu", i);
    snprintf(spec.name, sizeof spec.name, "%s", names[i]);
    spec.mode = GS_MODE_SHARE;
    spec.gpu_count = 2;
    spec.gpu_mem_units = 32;
    if (gs_fw_node_upsert(fw, &spec) != GS_EOK)
      goto out;
    for (size_t v = 0; v < victims; v++) {
      uint32_t g = (uint32_t)(v % 2);
      uint64_t gib = 1 + bench_rand(&seed) % 4;
      struct gs_alloc_part part;
      struct gs_alloc a;
      if (used[g] + gib > 16)
        gib = 16 - used[g];
      if (gib == 0)
        gib = 1; /* over-full GPUs are fine for a what-if: restore never refuses */
      used[g] += gib;
      part = (struct gs_alloc_part){0, g, gib};
      snprintf(uids[i * victims + v], sizeof uids[0], "uid-%05zu-%02zu", i, v);
      a = (struct gs_alloc){.ns = "default", .name = uids[i * victims + v],
                            .uid = uids[i * victims + v], .node = names[i],
                            .kind = GS_ALLOC_MEM, .state = GS_ALLOC_BOUND, .unit_mib = 1024,
                            .assume_time_ns = 1, .nparts = 1, .parts = &part, .priority = 0};
      if (gs_fw_pod_restore(fw, &a) != GS_EOK)
        goto out;
    }
  }
  memset(&pod, 0, sizeof pod);
  snprintf(pod.ns, sizeof pod.ns, "default");
  snprintf(pod.name, sizeof pod.name, "preemptor");
  snprintf(pod.uid, sizeof pod.uid, "uid-preemptor");
  pod.ncontainers = 1;
  pod.mem_units[0] = 8;
  pod.gpu_count = 1;
  pod.priority = 1000;
  for (size_t it = 0; it < iters + 2; it++) {
    int64_t w0 = bench_now_ns(), c0 = bench_cpu_ns();
    kept = total_victims = 0;
    for (size_t i = 0; i < nodes; i++) {
      char(*out)[GS_UID_MAX + 1] = NULL;
      size_t n = 0;
      struct gs_status st;
      for (size_t v = 0; v < victims; v++)
        proposed[v] = uids[i * victims + v];
      if (gs_fw_preempt(fw, &pod, names[i], proposed, victims, &out, &n, &st) != GS_EOK)
        goto out;
      kept += st.code == GS_EOK && n > 0;
      total_victims += n;
      gs_free(out);
    }
    if (it >= 2) { /* two warm-up rounds */
      bench_samples_add(&wall, bench_now_ns() - w0);
      bench_samples_add(&cpu, bench_cpu_ns() - c0);
    }
  }
  bench_samples_sort(&wall);
  bench_samples_sort(&cpu);
  bench_table_row(t);
  bench_table_num(t, "%.0f", (double)nodes);
  bench_table_num(t, "%.0f", (double)victims);
  bench_table_num(t, "%.0f", (double)kept);
  bench_table_num(t, "%.2f", kept ? (double)total_victims / (double)kept : 0);
  bench_table_num(t, "%.2f", (double)bench_pct(&wall, 0.5) / 1e6);
  bench_table_num(t, "%.2f", (double)bench_pct(&wall, 0.99) / 1e6);
  bench_table_num(t, "%.2f", (double)bench_pct(&cpu, 0.5) / 1e6);
  bench_table_num(t, "%.2f", (double)bench_pct(&cpu, 0.5) / (double)nodes / 1e3);
  rc = 0;
out:
  bench_samples_free(&wall);
  bench_samples_free(&cpu);
  gs_sched_free(fw);
  free(names);
  free(uids);
  free(proposed);
  if (rc != 0)
    fprintf(stderr, "gpushare-bench preempt: set-up failed\n");
  return rc;
}

int bench_preempt(int argc, char **argv) {
  uint64_t sizes[BENCH_SIZES_MAX] = {1000};
  size_t nsizes = 1, victims = 10, iters = 20;
  static const char *const cols[] = {"nodes", "victims offered", "nodes kept",
                                     "victims per node", "call p50 ms", "call p99 ms",
                                     "CPU p50 ms", "per node us", NULL};
  static struct bench_table t;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--nodes") == 0) {
      nsizes = bench_parse_list(v, "--nodes", 100000, sizes);
      if (nsizes == 0)
        return 2;
      i++;
    } else if (strcmp(argv[i], "--victims") == 0) {
      victims = (size_t)bench_parse_u64(v, "--victims", 1, 256);
      i++;
    } else if (strcmp(argv[i], "--iters") == 0) {
      iters = (size_t)bench_parse_u64(v, "--iters", 1, 100000);
      i++;
    } else {
      usage();
      return 2;
    }
  }
  bench_print_machine();
  bench_table_init(&t, "preempt: gs_fw_preempt for every offered node (one preempt call)", cols);
  for (size_t s = 0; s < nsizes; s++)
    if (run((size_t)sizes[s], victims, iters, &t) != 0)
      return 1;
  bench_table_print(&t);
  bench_note("load now %.2f", bench_load1());
  return 0;
}
