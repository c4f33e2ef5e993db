#include "spawn.h"
int bench_apiserver_start(const char *dir, size_t nodes, size_t pending, char *kubeconfig,
                          size_t len, void **ret_handle) {
  (void)dir; (void)nodes; (void)pending; (void)kubeconfig; (void)len; (void)ret_handle;
  fprintf(stderr, "gpushare-bench: --apiserver: not available\n");
  return -1;
}
void bench_apiserver_stop(void *handle) { (void)handle; }
