/* libFuzzer target: gs_topo_parse_text on arbitrary bytes, then the
 * parsed matrix through check, scores and a choice. */
#include <gpushare/topo.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct gs_topo *t = malloc(sizeof *t);
  struct gs_diag diag;
  uint64_t set;
  if (t == NULL)
    return 0;
  memset(&diag, 0, sizeof diag);
  if (gs_topo_parse_text((const char *)data, size, t, &diag) == GS_EOK) {
    uint64_t all = t->n >= 64 ? UINT64_MAX : (UINT64_C(1) << t->n) - 1;
    if (gs_topo_check(t, NULL) != GS_EOK)
      abort();
    (void)gs_topo_set_score(t, all);
    if (t->n <= 16) {
      for (uint32_t k = 1; k <= t->n; k++)
        if (gs_topo_choose(t, all, k, &set) != GS_EOK || (set & ~all) != 0 ||
            (uint32_t)__builtin_popcountll(set) != k)
          abort();
    }
  } else if (diag.text[0] == '\0') {
    abort(); /* every refusal says why */
  }
  free(t);
  return 0;
}
