/* Fuzz target "topo_json": the node annotation gpushare.io/topology →
 * gs_api_topo_decode. What it accepts must be a valid matrix for the core
 * (gs_topo_check) and must survive encode → decode unchanged. */
#include "fuzz.h"

#include "api.h"

#include <gpushare/topo.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct gs_topo t, back;
  struct gs_diag diag = {{0}, {0}};
  char *text = fuzz_cstr(data, size), *json;
  enum gs_err err;

  fuzz_init();
  err = gs_api_topo_decode(text, &t, &diag);
  FUZZ_CHECK_DIAG(err, diag);
  free(text);
  if (err != GS_EOK)
    return 0;
  FUZZ_CHECK(t.n >= 1 && t.n <= GS_MAX_GPUS);
  memset(&diag, 0, sizeof diag);
  err = gs_topo_check(&t, &diag);
  if (err != GS_EOK)
    fprintf(stderr, "check: %s: %s\n", diag.where, diag.text);
  FUZZ_CHECK(err == GS_EOK);
  json = gs_api_topo_encode(&t);
  FUZZ_CHECK(json != NULL);
  memset(&back, 0, sizeof back);
  FUZZ_CHECK(gs_api_topo_decode(json, &back, NULL) == GS_EOK);
  FUZZ_CHECK(memcmp(&back, &t, sizeof t) == 0);
  free(json);
  return 0;
}
