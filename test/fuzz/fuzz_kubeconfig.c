/* Fuzz target "kubeconfig": a kubeconfig file (written to a temporary
 * file) → gs_kubeconfig_load, resolved to its current context. */
#include "fuzz.h"

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct gs_kubeconfig kc;
  struct gs_diag diag = {{0}, {0}};
  char path[128];
  enum gs_err err;

  fuzz_init();
  fuzz_write_file("kubeconfig", data, size, path, sizeof path);
  memset(&kc, 0, sizeof kc);
  err = gs_kubeconfig_load(path, &kc, &diag);
  FUZZ_CHECK_DIAG(err, diag);
  if (err == GS_EOK) {
    FUZZ_CHECK(kc.ns[0] != '\0');
    FUZZ_CHECK(kc.ca_data == NULL || kc.ca_data[kc.ca_data_len] == '\0');
    FUZZ_CHECK(kc.cert_data == NULL || kc.cert_data[kc.cert_data_len] == '\0');
    FUZZ_CHECK(kc.key_data == NULL || kc.key_data[kc.key_data_len] == '\0');
    FUZZ_CHECK(kc.ca_data == NULL || kc.ca_file[0] == '\0');
    gs_kubeconfig_release(&kc);
    gs_kubeconfig_release(&kc); /* safe twice */
  }
  return 0;
}
