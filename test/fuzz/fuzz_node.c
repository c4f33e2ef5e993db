/* Fuzz target "node": a v1.Node object (JSON) → gs_api_node_decode with
 * its device-resource and topology annotations, then into a ledger, and
 * the topology through the checks and the GPU-set chooser. */
#include "fuzz.h"

#include "api.h"

#include <gpushare/ledger.h>
#include <gpushare/topo.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct gs_topo topo;
  struct gs_node_spec spec;
  struct gs_diag diag = {{0}, {0}};
  struct gs_ledger *ledger;
  const struct gs_node *n;
  json_t *node;
  enum gs_err err;

  fuzz_init();
  node = json_loadb((const char *)data, size, 0, NULL);
  if (node == NULL)
    return 0;
  err = gs_api_node_decode(node, &spec, &topo, &diag);
  FUZZ_CHECK_DIAG(err, diag);
  json_decref(node);
  if (err != GS_EOK)
    return 0;
  FUZZ_CHECK(spec.name[0] != '\0' && strlen(spec.name) <= GS_NAME_MAX);
  FUZZ_CHECK(spec.gpu_count <= GS_MAX_GPUS);
  FUZZ_CHECK(!spec.has_topo || (spec.topo == &topo && topo.n >= 1 && topo.n <= GS_MAX_GPUS));

  ledger = gs_ledger_new(GS_UNIT_128MIB);
  FUZZ_CHECK(ledger != NULL);
  err = gs_ledger_node_upsert(ledger, &spec);
  n = gs_ledger_node_get(ledger, spec.name);
  FUZZ_CHECK((err == GS_EOK) == (n != NULL));
  if (n != NULL) {
    FUZZ_CHECK(n->ngpus <= GS_MAX_GPUS);
    FUZZ_CHECK((n->topo != NULL) == spec.has_topo);
    /* An update with the same spec changes nothing and cannot fail. */
    FUZZ_CHECK(gs_ledger_node_upsert(ledger, &spec) == GS_EOK);
  }
  if (spec.has_topo) {
    struct gs_diag tdiag = {{0}, {0}};
    uint64_t all = topo.n == 64 ? UINT64_MAX : (UINT64_C(1) << topo.n) - 1, set = 0;
    err = gs_topo_check(&topo, &tdiag);
    FUZZ_CHECK_DIAG(err, tdiag);
    for (uint32_t k = 1; k <= topo.n && k <= 4; k++) {
      err = gs_topo_choose_ex(&topo, all, k, 4096, &set, NULL);
      FUZZ_CHECK(err == GS_EOK);
      FUZZ_CHECK((unsigned)__builtin_popcountll(set) == k && (set & ~all) == 0);
      FUZZ_CHECK(gs_topo_set_score(&topo, set) <= 10);
    }
    for (uint32_t i = 0; i < topo.n; i++)
      for (uint32_t j = 0; j < topo.n; j++)
        (void)gs_topo_pair_score(&topo, i, j);
  }
  gs_ledger_free(ledger);
  return 0;
}
