/* Fuzz target "topo_json": the node annotation gpushare.io/topology →
 * gs_api_topo_decode. What it accepts must be a valid matrix for the core
 * (gs_topo_check) and must survive encode → decode unchanged. */
#include "fuzz_topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct gs_topo t, back;
  struct gs_diag diag = {{0}, {0}};
  char *text = fuzz_cstr(data, size);
  enum gs_err err;

  fuzz_init();
  err = gs_api_topo_decode(text, &t, &diag);
  FUZZ_CHECK_DIAG(err, diag);
  free(text);
  if (err != GS_EOK)
    return 0;
  fuzz_topo_roundtrip(&t, &back);
  FUZZ_CHECK(memcmp(&back, &t, sizeof t) == 0);
  return 0;
}
