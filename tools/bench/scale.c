/* gpushare-bench scale: how each figure grows with the cluster, from 100 to
 * 5,000 nodes (8 GPUs each): the core decision, the HTTP verbs (one and
 * eight clients), and the extender's memory and start-up holding ten bound
 * pods per node. Each part is the same measurement as its own subcommand,
 * shorter. */
#include "spawn.h"

#include <curl/curl.h>

#include <stdlib.h>
#include <string.h>

static void usage(void) {
  fprintf(stderr, "usage: gpushare-bench scale [--nodes 100,500,1000,2000,5000] [--seconds 2]\n"
                  "       [--iters 100] [--apiserver] [--extender PATH] [--json]\n");
}

int bench_scale(int argc, char **argv) {
  uint64_t sizes[BENCH_SIZES_MAX] = {100, 500, 1000, 2000, 5000};
  size_t nsizes = 5, iters = 100;
  struct http_opts o = {.clients = {1, 8}, .nclients = 2, .seconds = 2,
                        .verbs = {true, true, false}};
  const char *ext = NULL;
  bool apiserver = false;
  static struct bench_table summary, core_t, http_t, mem_t;
  static const char *const cols[] = {
      "nodes",           "core p50 us",       "core p99 us",         "core ns/node",
      "core CPU p50 us", "filter p50 ms",     "filter p99 ms",       "filter 8c req/s",
      "prio p50 ms",     "prio 8c req/s",     "RSS MiB (10 pods/node)", "ready s",
      "load",            NULL};
  static const char *const core_cols[] = {"nodes", "pod", "feasible", "decision p50 us",
                                          "decision p99 us", "per node ns", "CPU p50 us",
                                          "detail", NULL};

  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--nodes") == 0) {
      if ((nsizes = bench_parse_list(v, "--nodes", 60000, sizes)) == 0)
        return 2;
      i++;
    } else if (strcmp(argv[i], "--seconds") == 0) {
      o.seconds = (double)bench_parse_u64(v, "--seconds", 1, 3600);
      i++;
    } else if (strcmp(argv[i], "--iters") == 0) {
      iters = (size_t)bench_parse_u64(v, "--iters", 1, 1000000);
      i++;
    } else if (strcmp(argv[i], "--extender") == 0 && v != NULL) {
      ext = v;
      i++;
    } else if (strcmp(argv[i], "--apiserver") == 0) {
      apiserver = true;
    } else {
      usage();
      return 2;
    }
  }
  o.extender = bench_extender_path(ext);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  bench_print_machine();
  bench_note("extender: %s; memory with the %s backend", o.extender,
             apiserver ? "live (test apiserver)" : "demo");
  bench_table_init(&summary, "scale: each figure from 100 to 5,000 nodes x 8 GPUs", cols);
  for (size_t s = 0; s < nsizes; s++) {
    size_t n = (size_t)sizes[s];
    struct core_figures cf = {0};
    struct http_figures hf[BENCH_HTTP_VERBS][BENCH_SIZES_MAX];
    double rss = 0, ready = 0;
    memset(hf, 0, sizeof hf);
    bench_table_init(&core_t, "core", core_cols);
    bench_table_init(&http_t, "http", bench_http_cols);
    bench_table_init(&mem_t, "memory", bench_memory_cols);
    if (bench_core_run(n, BENCH_GPUS_PER_NODE, iters, NULL, &core_t, &cf) != 0)
      return 1;
    if (bench_http_size(n, &o, &http_t, hf, NULL) != 0)
      return 1;
    if (bench_memory_size(n, n * 10, 1, o.extender, false, apiserver, &mem_t, &rss, &ready) != 0)
      return 1;
    bench_table_row(&summary);
    bench_table_num(&summary, "%.0f", (double)n);
    bench_table_num(&summary, "%.1f", cf.med_us);
    bench_table_num(&summary, "%.1f", cf.p99_us);
    bench_table_num(&summary, "%.0f", cf.per_node_ns);
    bench_table_num(&summary, "%.1f", cf.cpu_med_us);
    bench_table_num(&summary, "%.3f", hf[0][0].p50_ms);
    bench_table_num(&summary, "%.3f", hf[0][0].p99_ms);
    bench_table_num(&summary, "%.0f", hf[0][1].rps);
    bench_table_num(&summary, "%.3f", hf[1][0].p50_ms);
    bench_table_num(&summary, "%.0f", hf[1][1].rps);
    bench_table_num(&summary, "%.1f", rss);
    bench_table_num(&summary, "%.3f", ready);
    bench_table_num(&summary, "%.2f", bench_load1());
    if (bench_json) {
      bench_table_print(&core_t);
      bench_table_print(&http_t);
      bench_table_print(&mem_t);
    }
  }
  bench_table_print(&summary);
  curl_global_cleanup();
  return 0;
}
