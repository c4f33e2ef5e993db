/* gpushare-bench: benchmarks of gpushare (issue 6, docs/benchmarks.md).
 *
 *   gpushare-bench core    filter + prioritize in-process over N nodes
 *   gpushare-bench http    the real extender over loopback HTTP
 *   gpushare-bench memory  resident set size and time to ready
 *   gpushare-bench pack    trace replay: packing per policy
 *   gpushare-bench scale   each figure from 100 to 5,000 nodes
 *   gpushare-bench preempt the preempt decision over N offered nodes
 *   gpushare-bench dra     the DRA feed: slices, claims, a relist (CPU time)
 */
#include "bench.h"

#include <stdio.h>
#include <string.h>

static const char usage_text[] =
    "usage: gpushare-bench COMMAND [options] [--json]\n"
    "\n"
    "  core    [--nodes 1000,5000] [--gpus 8] [--iters 200] [--topo FILE]\n"
    "  http    [--nodes 1000,5000] [--clients 1,8] [--seconds 5] [--verbs filter,prioritize,bind]\n"
    "          [--extender PATH] [--apiserver] [--keep-files]\n"
    "  memory  [--nodes 5000] [--pods 50000] [--runs 3] [--extender PATH]\n"
    "  pack    [--trace DIR] [--pods FILE.csv] [--policy binpack,spread,frag] [--unit 1GiB]\n"
    "          [--gpu-mem MODEL=GiB,...] [--ref-gib N] [--ties random|name] [--seed N]\n"
    "  scale   [--nodes 100,500,1000,2000,5000] [--seconds 3] [--extender PATH]\n"
    "  preempt [--nodes 1000] [--victims 10] [--iters 20]\n"
    "  dra     [--nodes 5000] [--gpus 8] [--claims 4]\n"
    "\n"
    "  --version  print the version\n"
    "\n"
    "Figures go to stdout as aligned text tables (--json: one JSON object per table).\n"
    "Budgets and recorded figures: docs/benchmarks.md.\n";

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    int (*fn)(int, char **);
  } cmds[] = {{"core", bench_core},     {"http", bench_http}, {"memory", bench_memory},
              {"pack", bench_pack},     {"scale", bench_scale}, {"preempt", bench_preempt},
              {"dra", bench_dra}};
  int n = 0;
  /* --json may stand anywhere; strip it before the subcommand parses. */
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0)
      bench_json = true;
    else
      argv[n++] = argv[i];
  }
  argc = n;
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fputs(usage_text, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("gpushare-bench %s\n", GS_VERSION);
    return fflush(stdout) == 0 ? 0 : 1;
  }
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    if (strcmp(argv[1], cmds[i].name) == 0)
      return cmds[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "gpushare-bench: unknown command %s\n%s", argv[1], usage_text);
  return 2;
}
