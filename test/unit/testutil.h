/* Small helpers shared by unit tests (header-only: each test is one binary). */
#ifndef GPUSHARE_TESTUTIL_H
#define GPUSHARE_TESTUTIL_H

#include <gpushare/topo.h>

#include <stdio.h>
#include <stdlib.h>

/* Parses a topology file of test/data/topologies (vendored copies of
 * ../shared/data/topologies, so a fresh clone has them) into *ret; 0 on
 * success. The tests assert on the result. */
static inline int gs_test_load_topo(const char *file, struct gs_topo *ret) {
  char path[512], *text;
  struct gs_diag diag = {"", ""};
  FILE *f;
  long len;
  int rc = -1;
  snprintf(path, sizeof path, "%s/topologies/%s", GS_TEST_DATA, file);
  if ((f = fopen(path, "rb")) == NULL)
    return -1;
  if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (text = malloc((size_t)len)) != NULL) {
    if (fread(text, 1, (size_t)len, f) == (size_t)len &&
        gs_topo_parse_text(text, (size_t)len, ret, &diag) == GS_EOK)
      rc = 0;
    free(text);
  }
  fclose(f);
  return rc;
}

#endif
