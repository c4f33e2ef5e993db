/* What both topology targets (fuzz_topo_json.c, fuzz_topo_text.c) ask of a
 * matrix their parser accepted (header-only): it is valid for the core
 * (gs_topo_check), and the node annotation gpushare writes for it
 * (gs_api_topo_encode) decodes back to the same links. */
#ifndef GS_FUZZ_TOPO_H
#define GS_FUZZ_TOPO_H

#include "fuzz.h"

#include "api.h"

#include <gpushare/topo.h>

/* *back: the matrix decoded from t's annotation. */
static inline void fuzz_topo_roundtrip(const struct gs_topo *t, struct gs_topo *back) {
  struct gs_diag diag = {{0}, {0}};
  enum gs_err err;
  char *json;

  FUZZ_CHECK(t->n >= 1 && t->n <= GS_MAX_GPUS);
  err = gs_topo_check(t, &diag);
  if (err != GS_EOK)
    fprintf(stderr, "check: %s: %s\n", diag.where, diag.text);
  FUZZ_CHECK(err == GS_EOK);
  json = gs_api_topo_encode(t);
  FUZZ_CHECK(json != NULL);
  memset(&diag, 0, sizeof diag);
  memset(back, 0, sizeof *back);
  err = gs_api_topo_decode(json, back, &diag);
  if (err != GS_EOK)
    fprintf(stderr, "decode %s: %s: %s\n", json, diag.where, diag.text);
  FUZZ_CHECK(err == GS_EOK);
  FUZZ_CHECK(back->n == t->n);
  FUZZ_CHECK(memcmp(back->link, t->link, (size_t)t->n * t->n) == 0);
  FUZZ_CHECK(memcmp(back->nvlinks, t->nvlinks, (size_t)t->n * t->n) == 0);
  free(json);
}

#endif
