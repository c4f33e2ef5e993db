/* gpushare-bench: the test kube-apiserver (test/lib/kube_apiserver.py)
 * as the extender's cluster, for the bind and start-up figures of the live
 * backend: the demo List is its preloaded state, and a kubeconfig with a
 * bearer token points the extender at it over plain HTTP. */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define APISERVER_TOKEN "gpushare-bench-token"

struct apiserver {
  pid_t pid;
};

/* The script: $GS_APISERVER, else the source tree's. */
static const char *script_path(void) {
  const char *env = getenv("GS_APISERVER");
  return env != NULL && *env ? env : GS_SOURCE_DIR "/test/lib/kube_apiserver.py";
}

int bench_apiserver_start(const char *dir, const struct demo_spec *spec, char *kubeconfig,
                          size_t len, void **ret_handle) {
  char state[BENCH_PATH_MAX + 32], portf[BENCH_PATH_MAX + 32], log[BENCH_PATH_MAX + 32];
  struct apiserver *a;
  int64_t deadline;
  unsigned port = 0;
  FILE *f;

  if (access(script_path(), R_OK) != 0) {
    fprintf(stderr, "gpushare-bench: --apiserver: %s not found (set GS_APISERVER)\n",
            script_path());
    return -1;
  }
  snprintf(state, sizeof state, "%s/state.json", dir);
  snprintf(portf, sizeof portf, "%s/apiserver.port", dir);
  snprintf(log, sizeof log, "%s/apiserver.log", dir);
  if (bench_demo_write(state, spec, NULL) != 0)
    return -1;
  a = calloc(1, sizeof *a);
  if (a == NULL)
    return -1;
  fflush(stdout);
  a->pid = fork();
  if (a->pid < 0) {
    free(a);
    return -1;
  }
  if (a->pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execlp("python3", "python3", script_path(), "--port", "0", "--port-file", portf, "--state",
           state, "--token", APISERVER_TOKEN, "--history-limit", "200000", (char *)NULL);
    _exit(127);
  }
  /* Loading tens of thousands of objects takes the Python server a while. */
  deadline = bench_now_ns() + (int64_t)600e9;
  while (bench_now_ns() < deadline) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    int status;
    f = fopen(portf, "r");
    if (f != NULL) {
      int got = fscanf(f, "%u", &port);
      fclose(f);
      if (got == 1 && port > 0)
        break;
    }
    if (waitpid(a->pid, &status, WNOHANG) == a->pid) {
      fprintf(stderr, "gpushare-bench: the test apiserver exited (see %s)\n", log);
      free(a);
      return -1;
    }
    nanosleep(&ts, NULL);
  }
  if (port == 0) {
    fprintf(stderr, "gpushare-bench: the test apiserver did not start (see %s)\n", log);
    bench_apiserver_stop(a);
    return -1;
  }
  snprintf(kubeconfig, len, "%s/kubeconfig", dir);
  f = fopen(kubeconfig, "w");
  if (f == NULL) {
    bench_apiserver_stop(a);
    return -1;
  }
  fprintf(f,
          "apiVersion: v1\nkind: Config\nclusters:\n- name: bench\n  cluster:\n"
          "    server: http://127.0.0.1:%u\nusers:\n- name: bench\n  user:\n    token: %s\n"
          "contexts:\n- name: bench\n  context:\n    cluster: bench\n    user: bench\n"
          "current-context: bench\n",
          port, APISERVER_TOKEN);
  fclose(f);
  bench_note("test apiserver: pid %ld, port %u, state %s", (long)a->pid, port, state);
  *ret_handle = a;
  return 0;
}

void bench_apiserver_stop(void *handle) {
  struct apiserver *a = handle;
  int status;
  if (a == NULL)
    return;
  if (a->pid > 0) {
    kill(a->pid, SIGTERM);
    for (int i = 0; i < 500; i++) {
      struct timespec ts = {0, 10 * 1000 * 1000};
      if (waitpid(a->pid, &status, WNOHANG) == a->pid) {
        a->pid = 0;
        break;
      }
      nanosleep(&ts, NULL);
    }
    if (a->pid > 0) {
      kill(a->pid, SIGKILL);
      waitpid(a->pid, &status, 0);
    }
  }
  free(a);
}
