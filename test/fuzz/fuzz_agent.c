/* Fuzz target "agent": gpushare-node's two inputs from outside. The input
 * is read as an inventory (gs_agent_inventory_decode) and as the node's pods
 * for one Allocate (gs_agent_allocate, over a fixed 2-GPU inventory, for
 * each resource, at both units; for counts 1 and 4 also as the kubelet's
 * pod-resources list). Every refusal has a text; an answer is a
 * JSON object with "envs". */
#include "fuzz.h"

#include "agent.h"

static const char INV[] = "{\"gpus\":[{\"uuid\":\"GPU-a\",\"memoryMiB\":16384},"
                          "{\"uuid\":\"GPU-b\",\"memoryMiB\":16384,\"healthy\":false}],"
                          "\"links\":[[\"X\",\"NV2\"],[\"NV2\",\"X\"]]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct gs_agent_inventory inv, fixed;
  static const char *const res[] = {GS_AGENT_RES_MEM, GS_AGENT_RES_WHOLE, GS_AGENT_RES_COUNT};
  struct gs_diag diag = {{0}, {0}};
  enum gs_err err;

  fuzz_init();
  err = gs_agent_inventory_decode((const char *)data, size, &inv, &diag);
  FUZZ_CHECK_DIAG(err, diag);
  if (err == GS_EOK) {
    FUZZ_CHECK(inv.n >= 1 && inv.n <= GS_MAX_GPUS);
    FUZZ_CHECK(!inv.has_topo || inv.topo.n == inv.n);
    free(gs_agent_unhealthy_data(&inv));
    free(gs_agent_topology(&inv));
  }
  FUZZ_CHECK(gs_agent_inventory_decode(INV, sizeof INV - 1, &fixed, NULL) == GS_EOK);
  for (unsigned u = 0; u < 2; u++) {
    struct gs_agent_config cfg = {u ? GS_UNIT_128MIB : GS_UNIT_GIB, u ? GS_MODE_MPS : GS_MODE_SHARE,
                                  "/tmp/nvidia-mps"};
    for (size_t r = 0; r < sizeof res / sizeof res[0]; r++) {
      for (uint64_t n = 1; n <= 8; n *= 2) {
        char *out = NULL;
        json_t *doc;
        memset(&diag, 0, sizeof diag);
        /* the input as the node's pods, and (n 1 and 4) also as the
         * kubelet's pod-resources list */
        bool seen = n == 1 || n == 4;
        struct gs_agent_call call = {"gpu-a", res[r], n, (const char *)data, size,
                                     seen ? (const char *)data : NULL, seen ? size : 0, 1};
        err = gs_agent_allocate(&cfg, &fixed, &call, &out, &diag);
        FUZZ_CHECK_DIAG(err, diag);
        if (err != GS_EOK) {
          FUZZ_CHECK(out == NULL);
          continue;
        }
        doc = json_loads(out, 0, NULL);
        FUZZ_CHECK(json_is_object(json_object_get(doc, "envs")));
        json_decref(doc);
        free(out);
      }
    }
  }
  return 0;
}
