/* Fuzz target "topo_text": `nvidia-smi topo -m` text → gs_topo_parse_text.
 * A table it accepts must pass gs_topo_check, and its annotation (as
 * gpushare-topo prints it, through the api encoder) must decode back to
 * the same matrix: the node annotation is whatever the CLI prints. */
#include "fuzz.h"

#include "api.h"

#include <gpushare/topo.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct gs_topo t, back;
  struct gs_diag diag = {{0}, {0}};
  char *json;
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
  FUZZ_CHECK(t.n >= 1 && t.n <= GS_MAX_GPUS);
  memset(&diag, 0, sizeof diag);
  err = gs_topo_check(&t, &diag);
  if (err != GS_EOK)
    fprintf(stderr, "check: %s: %s\n", diag.where, diag.text);
  FUZZ_CHECK(err == GS_EOK);

  json = gs_api_topo_encode(&t);
  FUZZ_CHECK(json != NULL);
  memset(&diag, 0, sizeof diag);
  memset(&back, 0, sizeof back);
  err = gs_api_topo_decode(json, &back, &diag);
  if (err != GS_EOK)
    fprintf(stderr, "decode %s: %s: %s\n", json, diag.where, diag.text);
  FUZZ_CHECK(err == GS_EOK);
  FUZZ_CHECK(back.n == t.n);
  FUZZ_CHECK(memcmp(back.link, t.link, (size_t)t.n * t.n) == 0);
  FUZZ_CHECK(memcmp(back.nvlinks, t.nvlinks, (size_t)t.n * t.n) == 0);
  free(json);
  return 0;
}
