/* Fuzz target "config": the --config file of gpushare-extender. The input
 * is written to a temporary file and read through gs_config_from_args
 * exactly as `gpushare-extender --config FILE` does. */
#include "fuzz.h"

#include "config.h"

#include <gpushare/place.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct gs_config cfg;
  struct gs_diag diag = {{0}, {0}};
  enum gs_config_action action;
  char path[128];
  char *argv[] = {"gpushare-extender", "--config", path, NULL};
  enum gs_err err;

  fuzz_init();
  fuzz_write_file("config.yaml", data, size, path, sizeof path);
  err = gs_config_from_args(3, argv, &cfg, &action, &diag);
  FUZZ_CHECK_DIAG(err, diag);
  if (err == GS_EOK) {
    FUZZ_CHECK(action == GS_CONFIG_RUN);
    FUZZ_CHECK(cfg.listen[0] != '\0' && memchr(cfg.listen, '\0', sizeof cfg.listen));
    FUZZ_CHECK(cfg.policy.unit_mib == GS_UNIT_GIB || cfg.policy.unit_mib == GS_UNIT_128MIB);
    FUZZ_CHECK(cfg.unit_override_mib == 0 || cfg.unit_override_mib == GS_UNIT_GIB ||
               cfg.unit_override_mib == GS_UNIT_128MIB);
    FUZZ_CHECK(cfg.log_level <= GS_LVL_DEBUG);
    FUZZ_CHECK((cfg.tls_cert_file[0] == '\0') == (cfg.tls_key_file[0] == '\0'));
  }
  return 0;
}
