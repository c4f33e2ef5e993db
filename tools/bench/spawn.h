/* gpushare-bench: the real gpushare-extender as a child process, the demo
 * cluster files it reads, and a few libcurl helpers. */
#ifndef GPUSHARE_BENCH_SPAWN_H
#define GPUSHARE_BENCH_SPAWN_H

#include "bench.h"

#include <sys/types.h>

#define BENCH_PATH_MAX 4096

/* What a generated demo file holds. */
struct demo_spec {
  size_t nodes;
  uint32_t gpus;
  /* Bound pods with allocation annotations: 0 → the half-full fill of
   * bench_fill_node (about 10 per node), else exactly this many, spread
   * over the nodes (topology nodes: half their GPUs, the rest over the
   * memory nodes' GPUs, 1..3 GiB each). */
  size_t bound_pods;
  bool half_full;
  size_t pending_pods; /* pending 1 GiB pods "bind-NNNNNN" for the bind bench */
};

/* Writes the demo List (JSON, which the extender's YAML loader reads) to
 * path. Returns 0, or -1 with a message on stderr. *ret_bound gets the
 * number of bound pods written. */
int bench_demo_write(const char *path, const struct demo_spec *spec, size_t *ret_bound);

/* A running extender. */
struct bench_proc {
  pid_t pid;
  uint16_t port;
  char base[64];          /* http://127.0.0.1:PORT */
  double ready_s;         /* spawn → first /readyz 200 */
  char log_path[BENCH_PATH_MAX];
};

/* Starts `extender args... --listen 127.0.0.1:PORT` (stdout and stderr to
 * log_path) and waits up to timeout_s for /readyz 200. Returns 0 or -1
 * (the child is stopped then). */
int bench_proc_start(const char *extender, const char *const *args, const char *log_path,
                     double timeout_s, struct bench_proc *ret);
/* SIGTERM, then SIGKILL after 5 s; reaps the child. */
void bench_proc_stop(struct bench_proc *p);
/* CPU seconds (user + system) a process has used; pid 0: this one. */
double bench_proc_cpu(pid_t pid);
/* VmRSS and VmHWM of a process, KiB (-1 when unreadable). */
void bench_proc_rss(pid_t pid, long *ret_rss_kib, long *ret_hwm_kib);

/* A scratch directory under $TMPDIR (or /tmp), removed by bench_tmpdir_rm. */
int bench_tmpdir(char *out, size_t len);
void bench_tmpdir_rm(const char *dir, bool keep);

/* A free loopback TCP port (bound then released). 0 on failure. */
uint16_t bench_free_port(void);

/* GET url; returns the HTTP status (0 when unreachable). */
long bench_http_get(const char *url, double timeout_s);

/* ---- http bench pieces shared with scale -------------------------------------------- */

/* filter, prioritize, bind, and GET /version: the loopback floor, a request
 * that does no work, to which a verb's latency is compared */
#define BENCH_HTTP_VERBS 4

struct http_opts {
  uint64_t clients[BENCH_SIZES_MAX];
  size_t nclients;
  double seconds;
  bool verbs[BENCH_HTTP_VERBS]; /* filter, prioritize, bind, version (the floor) */
  const char *extender;
  bool keep;
  bool apiserver;
};
/* One cluster size: rows into t; figures per verb and client count into
 * ret (may be NULL); the extender's time to ready. */
int bench_http_size(size_t nodes, const struct http_opts *o, struct bench_table *t,
                    struct http_figures ret[BENCH_HTTP_VERBS][BENCH_SIZES_MAX], double *ret_ready_s);
extern const char *const bench_http_cols[];

/* memory: one cluster size, runs times; rows into t; the last run's
 * figures into ret_* (may be NULL). */
int bench_memory_size(size_t nodes, size_t pods, unsigned runs, const char *extender, bool keep,
                      bool apiserver, struct bench_table *t, double *ret_rss_mib,
                      double *ret_ready_s);
extern const char *const bench_memory_cols[];

/* The test kube-apiserver (test/lib/kube_apiserver.py) loaded with
 * the synthetic cluster; writes a kubeconfig for it into dir. */
int bench_apiserver_start(const char *dir, const struct demo_spec *spec, char *kubeconfig,
                          size_t len, void **ret_handle);
void bench_apiserver_stop(void *handle);

#endif
