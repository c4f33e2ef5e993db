/* gpushare-bench memory: resident set size of the real extender holding N
 * nodes × 8 GPUs and P bound pods, and its time to ready.
 *
 * A demo file with P pods carrying the bind annotations (docs/contract.md §4) is
 * generated, so start-up goes through the real restore path (annotations →
 * ledger), as after a restart against a live cluster. RSS is read from
 * /proc/PID/status once /readyz answers 200 (and again a moment later);
 * VmHWM is the peak during start-up.
 */
#include "spawn.h"

#include <curl/curl.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static void usage(void) {
  fprintf(stderr, "usage: gpushare-bench memory [--nodes 5000] [--pods 50000] [--runs 3] "
                  "[--apiserver] [--extender PATH] [--keep-files] [--json]\n");
}

/* One size: rows into t; figures of the last run into ret_*. */
int bench_memory_size(size_t nodes, size_t pods, unsigned runs, const char *extender, bool keep,
                      bool apiserver, struct bench_table *t, double *ret_rss_mib,
                      double *ret_ready_s) {
  char dir[BENCH_PATH_MAX], file[BENCH_PATH_MAX + 32], log[BENCH_PATH_MAX + 32];
  char kubeconfig[BENCH_PATH_MAX + 32];
  struct demo_spec spec = {.nodes = nodes, .gpus = BENCH_GPUS_PER_NODE, .bound_pods = pods};
  size_t bound = 0;
  struct stat st;
  void *api = NULL;
  int rc = -1;

  if (bench_tmpdir(dir, sizeof dir) != 0)
    return -1;
  snprintf(file, sizeof file, "%s/cluster.json", dir);
  snprintf(log, sizeof log, "%s/extender.log", dir);
  if (bench_demo_write(file, &spec, &bound) != 0)
    goto out;
  if (stat(file, &st) != 0)
    st.st_size = 0;
  if (apiserver && bench_apiserver_start(dir, &spec, kubeconfig, sizeof kubeconfig, &api) != 0)
    goto out;
  for (unsigned r = 0; r < runs; r++) {
    const char *demo_args[] = {"--demo", file, NULL};
    const char *live_args[] = {"--kubeconfig", kubeconfig, NULL};
    const char *const *args = apiserver ? live_args : demo_args;
    struct bench_proc p;
    long rss, hwm, rss2, hwm2;
    struct timespec ts = {0, 500 * 1000 * 1000};
    double cpu;
    if (bench_proc_start(extender, args, log, 600, &p) != 0)
      goto out;
    cpu = bench_proc_cpu(p.pid);
    bench_proc_rss(p.pid, &rss, &hwm);
    nanosleep(&ts, NULL);
    bench_proc_rss(p.pid, &rss2, &hwm2);
    bench_proc_stop(&p);
    bench_table_row(t);
    bench_table_num(t, "%.0f", (double)nodes);
    bench_table_num(t, "%.0f", (double)bound);
    bench_table_num(t, "%.1f", (double)st.st_size / 1048576.0);
    bench_table_num(t, "%.0f", (double)(r + 1));
    bench_table_num(t, "%.3f", p.ready_s);
    bench_table_num(t, "%.2f", cpu);
    bench_table_num(t, "%.1f", (double)rss / 1024.0);
    bench_table_num(t, "%.1f", (double)rss2 / 1024.0);
    bench_table_num(t, "%.1f", (double)hwm2 / 1024.0);
    bench_table_num(t, "%.2f", bench_load1());
    if (ret_rss_mib != NULL)
      *ret_rss_mib = (double)rss2 / 1024.0;
    if (ret_ready_s != NULL)
      *ret_ready_s = p.ready_s;
  }
  rc = 0;
out:
  bench_apiserver_stop(api);
  bench_tmpdir_rm(dir, keep);
  return rc;
}

const char *const bench_memory_cols[] = {"nodes",       "pods",         "file MiB",
                                         "run",         "ready s",      "extender CPU s",
                                         "RSS at ready MiB",
                                         "RSS +0.5 s MiB", "peak (HWM) MiB", "load", NULL};

int bench_memory(int argc, char **argv) {
  uint64_t sizes[BENCH_SIZES_MAX] = {5000};
  uint64_t podsz[BENCH_SIZES_MAX] = {50000};
  size_t nsizes = 1, npods = 1;
  unsigned runs = 3;
  bool keep = false, apiserver = false;
  const char *ext = NULL;
  static struct bench_table t;

  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--nodes") == 0) {
      if ((nsizes = bench_parse_list(v, "--nodes", 60000, sizes)) == 0)
        return 2;
      i++;
    } else if (strcmp(argv[i], "--pods") == 0) {
      if ((npods = bench_parse_list(v, "--pods", 2000000, podsz)) == 0)
        return 2;
      i++;
    } else if (strcmp(argv[i], "--runs") == 0) {
      runs = (unsigned)bench_parse_u64(v, "--runs", 1, 100);
      i++;
    } else if (strcmp(argv[i], "--extender") == 0 && v != NULL) {
      ext = v;
      i++;
    } else if (strcmp(argv[i], "--keep-files") == 0) {
      keep = true;
    } else if (strcmp(argv[i], "--apiserver") == 0) {
      apiserver = true;
    } else {
      usage();
      return 2;
    }
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  bench_print_machine();
  bench_note("extender: %s (%s backend)", bench_extender_path(ext),
             apiserver ? "live, test apiserver" : "demo");
  bench_table_init(&t,
                   apiserver ? "memory: gpushare-extender --kubeconfig (test apiserver), bound "
                               "pods restored from annotations"
                             : "memory: gpushare-extender --demo, bound pods restored from "
                               "annotations",
                   bench_memory_cols);
  /* Baseline: the process with an empty cluster. */
  if (bench_memory_size(0, 0, 1, bench_extender_path(ext), keep, apiserver, &t, NULL, NULL) != 0)
    return 1;
  for (size_t s = 0; s < nsizes; s++)
    for (size_t p = 0; p < npods; p++)
      if (bench_memory_size((size_t)sizes[s], (size_t)podsz[p], runs, bench_extender_path(ext),
                            keep, apiserver, &t, NULL, NULL) != 0)
        return 1;
  bench_table_print(&t);
  bench_note("budgets: RSS at 5,000 nodes / 50,000 pods <= 64 MiB; ready <= 2 s after start");
  curl_global_cleanup();
  return 0;
}
