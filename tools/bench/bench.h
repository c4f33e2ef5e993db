/* gpushare-bench — shared pieces of the benchmark program: clocks,
 * percentiles, result tables (aligned text or JSON), option parsing, and
 * the synthetic cluster both the in-process and the HTTP benchmarks use.
 *
 * The benchmark is a program run on demand, never a unit test: nothing
 * here asserts a time. docs/benchmarks.md records its figures.
 */
#ifndef GPUSHARE_BENCH_H
#define GPUSHARE_BENCH_H

#include "framework.h"

#include <gpushare/topo.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BENCH_SIZES_MAX 16      /* entries of a --nodes/--clients list */
#define BENCH_TABLE_COLS 16     /* columns of one result table */
#define BENCH_TABLE_ROWS 256    /* rows of one result table */
#define BENCH_CELL_MAX 96       /* one formatted cell */
#define BENCH_GPUS_PER_NODE 8   /* default GPUs per synthetic node */

/* ---- clocks and statistics ------------------------------------------------ */

/* Monotonic time in nanoseconds. */
int64_t bench_now_ns(void);
/* CPU time of the calling thread in nanoseconds: unlike the monotonic
 * clock it does not count time the thread waited for a core, so figures
 * stay comparable on a machine other jobs share. */
int64_t bench_cpu_ns(void);
/* Wall-clock unix time in nanoseconds (what the extender's clock reads). */
int64_t bench_wall_ns(void);

/* A growable list of samples (nanoseconds). */
struct bench_samples {
  int64_t *v;
  size_t n, cap;
};
void bench_samples_add(struct bench_samples *s, int64_t ns);
void bench_samples_free(struct bench_samples *s);
/* Sorts the samples; then bench_pct() reads the q-quantile (0..1, nearest
 * rank). Returns 0 for an empty list. */
void bench_samples_sort(struct bench_samples *s);
int64_t bench_pct(const struct bench_samples *s, double q);
double bench_mean(const struct bench_samples *s);

/* ---- result tables ----------------------------------------------------------- */

struct bench_table {
  char title[160];
  size_t ncols, nrows;
  char cols[BENCH_TABLE_COLS][BENCH_CELL_MAX];
  char cells[BENCH_TABLE_ROWS][BENCH_TABLE_COLS][BENCH_CELL_MAX];
  bool numeric[BENCH_TABLE_ROWS][BENCH_TABLE_COLS];
};

/* Output mode, set once by main. */
extern bool bench_json;

/* Starts a table with the given column names (NULL-terminated). */
void bench_table_init(struct bench_table *t, const char *title, const char *const *cols);
/* Starts a new row; cells are then added left to right. */
void bench_table_row(struct bench_table *t);
void bench_table_str(struct bench_table *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A number printed with fmt (e.g. "%.3f"); JSON keeps it a number. */
void bench_table_num(struct bench_table *t, const char *fmt, double v);
/* Prints the table (text: aligned columns; JSON: one object per line,
 * {"table":title,"rows":[{col:value,...},...]}). */
void bench_table_print(const struct bench_table *t);
/* A free-form note: text mode prints it, JSON mode as {"note":...}. */
void bench_note(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Prints machine facts (nproc, CPU model, RAM, load, date) once. */
void bench_print_machine(void);
/* The 1-minute load average, or -1. */
double bench_load1(void);

/* ---- options -------------------------------------------------------------------- */

/* Parses "1000,5000" into sizes (at most BENCH_SIZES_MAX, each 1..max).
 * Returns the count, or 0 with a message on stderr. */
size_t bench_parse_list(const char *text, const char *flag, uint64_t max, uint64_t *out);
/* Parses a positive integer or exits with status 2. */
uint64_t bench_parse_u64(const char *text, const char *flag, uint64_t min, uint64_t max);

/* ---- CSV (the trace's files: no quoted fields) ------------------------------------- */

/* Splits line in place into at most max columns; returns how many. */
size_t bench_csv_split(char *line, char **cols, size_t max);
/* The index of the column named name, or -1. */
int bench_csv_column(char **cols, size_t n, const char *name);

/* ---- the synthetic cluster ---------------------------------------------------------- */

/* A node of the synthetic cluster: the mix is fixed by index (40% share,
 * 20% cgpu, 20% mps, 20% topology with the DGX-1 matrix), so every run and
 * every size has the same shape. */
struct bench_node {
  char name[32];
  enum gs_mode mode;
  uint32_t gpus;
  uint32_t gib_per_gpu; /* 16 or 32 (memory modes); 0 for topology */
};
void bench_node_make(size_t i, uint32_t gpus, struct bench_node *ret);

/* One allocation that makes the cluster "half full": memory nodes get
 * random shares per GPU until each GPU is about half used, topology nodes
 * get half of their GPUs owned by one-GPU pods. Deterministic for a seed. */
struct bench_fill {
  char name[40], uid[48];
  enum gs_alloc_kind kind;
  uint32_t gpu;   /* the GPU it sits on */
  uint32_t units; /* GiB for memory shares, 0 for whole GPUs */
};
/* Calls fn for every allocation of node i. */
void bench_fill_node(const struct bench_node *node, size_t i, uint64_t seed,
                     void (*fn)(void *ctx, const struct bench_node *node,
                                const struct bench_fill *fill),
                     void *ctx);

/* Reads the DGX-1 topology (path, default the shared data set) once.
 * Returns NULL and prints why when it cannot be read or parsed. */
const struct gs_topo *bench_topo(const char *path);
/* The default path of the DGX-1 topology text (NULL: the shared data set). */
extern const char *bench_topo_path;
/* rel under the shared data directory: $GS_SHARED_DIR, else the one beside
 * the source tree. Static storage (the last four calls). */
const char *bench_shared_path(const char *rel);

/* A small deterministic PRNG (splitmix64). */
uint64_t bench_rand(uint64_t *state);

/* ---- subcommands ------------------------------------------------------------------- */

int bench_core(int argc, char **argv);
/* pack --protocol fgd (fgd.c), called by bench_pack. */
int bench_pack_fgd(int argc, char **argv);
int bench_http(int argc, char **argv);
int bench_memory(int argc, char **argv);
int bench_preempt(int argc, char **argv);
int bench_pack(int argc, char **argv);
int bench_scale(int argc, char **argv);
/* dra.c: the DRA feed (src/observe/dra.c) over N nodes. */
int bench_dra(int argc, char **argv);

/* Pieces scale reuses: one figure row each. */
struct core_figures {
  double med_us, p99_us, per_node_ns, filter_med_us, prio_med_us, cpu_med_us;
};
int bench_core_run(size_t nodes, uint32_t gpus, size_t iters, const char *topo_path,
                   struct bench_table *t, struct core_figures *ret);

struct http_figures {
  double p50_ms, p99_ms, rps;
};
/* The extender binary: --extender, $GS_EXTENDER, next to this program, or
 * the build tree's. */
const char *bench_extender_path(const char *flag_value);

#endif
