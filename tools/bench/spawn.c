/* gpushare-bench: demo cluster files, the extender as a child process,
 * libcurl helpers. */
#include "spawn.h"

#include <curl/curl.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- demo files ------------------------------------------------------------ */

struct writer {
  FILE *f;
  bool first;   /* no comma before the next item */
  size_t pods;  /* bound pods written */
  uint32_t unit_mib;
};

static void item_sep(struct writer *w) {
  if (!w->first)
    fputs(",\n", w->f);
  w->first = false;
}

static void write_topo(FILE *f, const struct gs_topo *t) {
  char cell[GS_TOPO_CELL_MAX];
  /* The annotation value is JSON inside a JSON string: quotes escaped. */
  fputs("{\\\"links\\\":[", f);
  for (uint32_t i = 0; i < t->n; i++) {
    fprintf(f, "%s[", i ? "," : "");
    for (uint32_t j = 0; j < t->n; j++)
      fprintf(f, "%s\\\"%s\\\"", j ? "," : "",
              gs_topo_cell_format(t->link[i * t->n + j], t->nvlinks[i * t->n + j], cell));
    fputc(']', f);
  }
  fputs("]}", f);
}

static void write_node(struct writer *w, const struct bench_node *n, const struct gs_topo *topo) {
  item_sep(w);
  fprintf(w->f,
          "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\","
          "\"labels\":{\"kubernetes.io/hostname\":\"%s\",\"kubernetes.io/os\":\"linux\","
          "\"ack.node.gpu.schedule\":\"%s\"}",
          n->name, n->name, gs_mode_name(n->mode));
  if (n->mode == GS_MODE_TOPOLOGY && topo != NULL) {
    fputs(",\"annotations\":{\"gpushare.io/topology\":\"", w->f);
    write_topo(w->f, topo);
    fputs("\"}", w->f);
  }
  fputs("},\"status\":{", w->f);
  for (int pass = 0; pass < 2; pass++) {
    fprintf(w->f, "%s\"%s\":{\"cpu\":\"96\",\"memory\":\"768Gi\",\"pods\":\"110\",", pass ? "," : "",
            pass ? "allocatable" : "capacity");
    if (n->mode == GS_MODE_TOPOLOGY)
      fprintf(w->f, "\"aliyun.com/gpu\":\"%u\"}", n->gpus);
    else
      fprintf(w->f, "\"aliyun.com/gpu-mem\":\"%u\",\"aliyun.com/gpu-count\":\"%u\"}",
              n->gpus * n->gib_per_gpu, n->gpus);
  }
  fputs("}}", w->f);
}

/* A bound pod as the apiserver would return it after our bind: the
 * docs/contract.md §4 annotations, nodeName, Running. */
static void write_bound(struct writer *w, const struct bench_node *n, const char *name,
                        const char *uid, enum gs_alloc_kind kind, uint32_t gpu, uint32_t units) {
  item_sep(w);
  w->pods++;
  fprintf(w->f,
          "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
          "\"namespace\":\"bench\",\"uid\":\"%s\",\"resourceVersion\":\"%zu\","
          "\"creationTimestamp\":\"2025-01-01T00:00:00Z\",\"labels\":{\"app\":\"bench\"},"
          "\"annotations\":{",
          name, uid, 1000 + w->pods);
  if (kind == GS_ALLOC_WHOLE) {
    fprintf(w->f,
            "\"gputopology.alibabacloud.com/allocation\":\"{\\\"allocatedGPUs\\\":{\\\"0\\\":"
            "[\\\"%u\\\"]},\\\"visibleGPUs\\\":[\\\"%u\\\"],\\\"assumeTime\\\":1,"
            "\\\"assigned\\\":true}\"}},",
            gpu, gpu);
  } else {
    fprintf(w->f,
            "\"scheduler.framework.gpushare.allocation\":\"{\\\"0\\\":{\\\"%u\\\":%u}}\","
            "\"scheduler.framework.gpushare.assigned\":\"true\","
            "\"scheduler.framework.gpushare.assume-time\":\"1735689600000000000\","
            "\"gpushare.alibabacloud.com/device-resource\":\"{",
            gpu, units);
    for (uint32_t g = 0; g < n->gpus; g++)
      fprintf(w->f, "%s\\\"%u\\\":%u", g ? "," : "", g, n->gib_per_gpu);
    fprintf(w->f,
            "}\",\"ALIYUN_COM_GPU_MEM_IDX\":\"%u\",\"ALIYUN_COM_GPU_MEM_POD\":\"%u\","
            "\"ALIYUN_COM_GPU_MEM_DEV\":\"%u\",\"ALIYUN_COM_GPU_MEM_ASSIGNED\":\"true\","
            "\"ALIYUN_COM_GPU_MEM_ASSUME_TIME\":\"1735689600000000000\","
            "\"gpushare.io/unit-mib\":\"%u\"}},",
            gpu, units, n->gib_per_gpu, w->unit_mib);
  }
  fprintf(w->f,
          "\"spec\":{\"nodeName\":\"%s\",\"schedulerName\":\"default-scheduler\","
          "\"restartPolicy\":\"Always\",\"containers\":[{\"name\":\"main\","
          "\"image\":\"registry.example/cuda-sample:12\",\"resources\":{\"limits\":{\"%s\":\"%u\"},"
          "\"requests\":{\"%s\":\"%u\"}}}]},"
          "\"status\":{\"phase\":\"Running\",\"qosClass\":\"BestEffort\","
          "\"hostIP\":\"10.0.0.1\",\"podIP\":\"10.1.0.1\",\"startTime\":\"2025-01-01T00:00:01Z\"}}",
          n->name, kind == GS_ALLOC_WHOLE ? "aliyun.com/gpu" : "aliyun.com/gpu-mem",
          kind == GS_ALLOC_WHOLE ? 1 : units,
          kind == GS_ALLOC_WHOLE ? "aliyun.com/gpu" : "aliyun.com/gpu-mem",
          kind == GS_ALLOC_WHOLE ? 1 : units);
}

static void fill_cb(void *ctx, const struct bench_node *node, const struct bench_fill *f) {
  write_bound(ctx, node, f->name, f->uid, f->kind, f->gpu, f->units);
}

static void write_pending(struct writer *w, size_t i) {
  item_sep(w);
  fprintf(w->f,
          "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"bind-%06zu\","
          "\"namespace\":\"bench\",\"uid\":\"uid-bind-%06zu\",\"labels\":{\"app\":\"bench\"}},"
          "\"spec\":{\"schedulerName\":\"default-scheduler\",\"containers\":[{\"name\":\"main\","
          "\"image\":\"registry.example/cuda-sample:12\",\"resources\":{\"limits\":"
          "{\"aliyun.com/gpu-mem\":\"1\"}}}]},\"status\":{\"phase\":\"Pending\"}}",
          i, i);
}

int bench_demo_write(const char *path, const struct demo_spec *spec, size_t *ret_bound) {
  struct writer w = {NULL, true, 0, GS_UNIT_GIB};
  const struct gs_topo *topo = spec->gpus == 8 ? bench_topo(NULL) : NULL;
  size_t *per_node = NULL, nmem = 0;
  w.f = fopen(path, "w");
  if (w.f == NULL) {
    fprintf(stderr, "gpushare-bench: cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  fputs("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[\n", w.f);
  item_sep(&w);
  fputs("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"gpushare-config\","
        "\"namespace\":\"kube-system\"},\"data\":{\"gpuMemoryUnit\":\"1GiB\","
        "\"nodePolicy\":\"binpack\"}}",
        w.f);
  for (size_t i = 0; i < spec->nodes; i++) {
    struct bench_node n;
    bench_node_make(i, spec->gpus, &n);
    write_node(&w, &n, topo);
    if (n.mode != GS_MODE_TOPOLOGY)
      nmem++;
  }
  if (spec->half_full) {
    for (size_t i = 0; i < spec->nodes; i++) {
      struct bench_node n;
      bench_node_make(i, spec->gpus, &n);
      bench_fill_node(&n, i, 42, fill_cb, &w);
    }
  } else if (spec->bound_pods > 0) {
    /* Topology nodes: half their GPUs; the rest round-robin over the
     * memory nodes' GPUs, 1..3 GiB each (fits: 16 GiB GPUs). */
    size_t left = spec->bound_pods, p = 0;
    per_node = calloc(spec->nodes ? spec->nodes : 1, sizeof *per_node);
    if (per_node == NULL)
      goto fail;
    for (size_t i = 0; i < spec->nodes && left > 0; i++) {
      struct bench_node n;
      bench_node_make(i, spec->gpus, &n);
      if (n.mode != GS_MODE_TOPOLOGY)
        continue;
      for (uint32_t g = 0; g < n.gpus / 2 && left > 0; g++, left--, p++) {
        char name[40], uid[48];
        snprintf(name, sizeof name, "pod-%06zu", p);
        snprintf(uid, sizeof uid, "uid-pod-%06zu", p);
        write_bound(&w, &n, name, uid, GS_ALLOC_WHOLE, g, 0);
      }
    }
    for (size_t i = 0; left > 0 && nmem > 0; i = (i + 1) % spec->nodes) {
      struct bench_node n;
      char name[40], uid[48];
      bench_node_make(i, spec->gpus, &n);
      if (n.mode == GS_MODE_TOPOLOGY)
        continue;
      snprintf(name, sizeof name, "pod-%06zu", p);
      snprintf(uid, sizeof uid, "uid-pod-%06zu", p);
      write_bound(&w, &n, name, uid, GS_ALLOC_MEM, (uint32_t)(per_node[i] % n.gpus),
                  (uint32_t)(1 + p % 3));
      per_node[i]++;
      p++;
      left--;
    }
  }
  for (size_t i = 0; i < spec->pending_pods; i++)
    write_pending(&w, i);
  fputs("\n]}\n", w.f);
  free(per_node);
  if (ferror(w.f) || fclose(w.f) != 0) {
    fprintf(stderr, "gpushare-bench: cannot write %s\n", path);
    return -1;
  }
  if (ret_bound != NULL)
    *ret_bound = w.pods;
  return 0;
fail:
  fclose(w.f);
  fprintf(stderr, "gpushare-bench: out of memory\n");
  return -1;
}

/* ---- processes -------------------------------------------------------------- */

uint16_t bench_free_port(void) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  uint16_t port = 0;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return 0;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

static size_t discard(char *p, size_t size, size_t n, void *ctx) {
  (void)p;
  (void)ctx;
  return size * n;
}

long bench_http_get(const char *url, double timeout_s) {
  CURL *c = curl_easy_init();
  long code = 0;
  if (c == NULL)
    return 0;
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(c);
  return code;
}

int bench_proc_start(const char *extender, const char *const *args, const char *log_path,
                     double timeout_s, struct bench_proc *ret) {
  const char *argv[32];
  char listen[32], url[96];
  size_t n = 0;
  int64_t t0, deadline;
  struct bench_proc p;

  memset(&p, 0, sizeof p);
  p.port = bench_free_port();
  if (p.port == 0) {
    fprintf(stderr, "gpushare-bench: no free port\n");
    return -1;
  }
  snprintf(listen, sizeof listen, "127.0.0.1:%u", (unsigned)p.port);
  snprintf(p.base, sizeof p.base, "http://127.0.0.1:%u", (unsigned)p.port);
  snprintf(p.log_path, sizeof p.log_path, "%s", log_path);
  argv[n++] = extender;
  for (; args[0] != NULL && n < 28; args++)
    argv[n++] = args[0];
  argv[n++] = "--listen";
  argv[n++] = listen;
  argv[n] = NULL;

  fflush(stdout);
  fflush(stderr);
  t0 = bench_now_ns();
  p.pid = fork();
  if (p.pid < 0) {
    fprintf(stderr, "gpushare-bench: fork: %s\n", strerror(errno));
    return -1;
  }
  if (p.pid == 0) {
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execv(extender, (char *const *)argv);
    fprintf(stderr, "exec %s: %s\n", extender, strerror(errno));
    _exit(127);
  }
  snprintf(url, sizeof url, "%s/readyz", p.base);
  deadline = t0 + (int64_t)(timeout_s * 1e9);
  for (;;) {
    int status;
    struct timespec ts = {0, 2 * 1000 * 1000};
    if (bench_http_get(url, 1.0) == 200)
      break;
    if (waitpid(p.pid, &status, WNOHANG) == p.pid) {
      fprintf(stderr, "gpushare-bench: %s exited before ready (see %s)\n", extender, log_path);
      return -1;
    }
    if (bench_now_ns() > deadline) {
      fprintf(stderr, "gpushare-bench: %s not ready after %.0f s (see %s)\n", extender,
              timeout_s, log_path);
      bench_proc_stop(&p);
      return -1;
    }
    nanosleep(&ts, NULL);
  }
  p.ready_s = (double)(bench_now_ns() - t0) / 1e9;
  *ret = p;
  return 0;
}

void bench_proc_stop(struct bench_proc *p) {
  int status;
  if (p->pid <= 0)
    return;
  kill(p->pid, SIGTERM);
  for (int i = 0; i < 500; i++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
      p->pid = 0;
      return;
    }
    nanosleep(&ts, NULL);
  }
  kill(p->pid, SIGKILL);
  waitpid(p->pid, &status, 0);
  p->pid = 0;
}

void bench_proc_rss(pid_t pid, long *ret_rss_kib, long *ret_hwm_kib) {
  char path[64], line[256];
  FILE *f;
  *ret_rss_kib = *ret_hwm_kib = -1;
  if (pid == 0)
    snprintf(path, sizeof path, "/proc/self/status");
  else
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
  f = fopen(path, "r");
  if (f == NULL)
    return;
  while (fgets(line, sizeof line, f) != NULL) {
    long v;
    if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
      *ret_rss_kib = v;
    else if (sscanf(line, "VmHWM: %ld kB", &v) == 1)
      *ret_hwm_kib = v;
  }
  fclose(f);
}

/* CPU seconds (user + system) a process has used; pid 0: this one. */
double bench_proc_cpu(pid_t pid) {
  char path[64], buf[1024];
  unsigned long ut = 0, st = 0;
  FILE *f;
  char *p;
  if (pid == 0) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
  }
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  f = fopen(path, "r");
  if (f == NULL)
    return 0;
  p = fgets(buf, sizeof buf, f);
  fclose(f);
  if (p == NULL || (p = strrchr(buf, ')')) == NULL)
    return 0;
  /* Fields after the command: state is the 3rd; utime and stime the 14th
   * and 15th of the line. */
  if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
    return 0;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* ---- scratch directories ----------------------------------------------------- */

int bench_tmpdir(char *out, size_t len) {
  const char *base = getenv("TMPDIR");
  snprintf(out, len, "%s/gpushare-bench.XXXXXX", base && *base ? base : "/tmp");
  if (mkdtemp(out) == NULL) {
    fprintf(stderr, "gpushare-bench: mkdtemp: %s\n", strerror(errno));
    return -1;
  }
  return 0;
}

void bench_tmpdir_rm(const char *dir, bool keep) {
  DIR *d;
  struct dirent *e;
  if (keep) {
    bench_note("kept %s", dir);
    return;
  }
  /* The directory is flat: only files this program wrote. */
  d = opendir(dir);
  if (d != NULL) {
    while ((e = readdir(d)) != NULL) {
      char path[BENCH_PATH_MAX + 256];
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
    closedir(d);
  }
  rmdir(dir);
}

const char *bench_extender_path(const char *flag_value) {
  static char path[BENCH_PATH_MAX];
  const char *env = getenv("GS_EXTENDER");
  ssize_t n;
  if (flag_value != NULL)
    return flag_value;
  if (env != NULL && *env)
    return env;
  /* Installed side by side: the directory of this program. */
  n = readlink("/proc/self/exe", path, sizeof path - 32);
  if (n > 0) {
    char *slash;
    path[n] = '\0';
    slash = strrchr(path, '/');
    if (slash != NULL) {
      strcpy(slash + 1, "gpushare-extender");
      if (access(path, X_OK) == 0)
        return path;
    }
  }
  return GS_EXTENDER_BUILD_PATH;
}
