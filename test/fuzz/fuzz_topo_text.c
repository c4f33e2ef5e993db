/* Fuzz target "topo_text": `nvidia-smi topo -m` text → gs_topo_parse_text.
 * A table it accepts must pass gs_topo_check, and its annotation (as
 * gpushare-topo prints it, through the api encoder) must decode back to
 * the same matrix: the node annotation is whatever the CLI prints. */
#include "fuzz_topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct gs_topo t, back;
  struct gs_diag diag = {{0}, {0}};
  enum gs_err err;

  fuzz_init();
  memset(&t, 0xA5, sizeof t); /* written only on success */
  err = gs_topo_parse_text((const char *)data, size, &t, &diag);
  FUZZ_CHECK_DIAG(err, diag);
  if (err != GS_EOK) {
    for (size_t i = 0; i < sizeof t.link; i++)
      FUZZ_CHECK(t.link[i] == 0xA5);
    return 0;
  }
  fuzz_topo_roundtrip(&t, &back);
  return 0;
}
