/* gpushare-node: the node's GPUs read from NVML (agent.h,
 * gs_agent_inventory_nvml) and their health from XID events
 * (gs_agent_inventory_xid). The reader is src/node's (gpushare/nvml.h);
 * this file only turns its answers into the inventory the other decisions
 * read, so an NVML node and an --inventory file node are served alike. */
#include "agent.h"

#include <gpushare/alloc.h>
#include <gpushare/nvml.h>

#include <string.h>

enum gs_err gs_agent_inventory_nvml(struct gs_nvml *nv, struct gs_agent_inventory *ret,
                                    struct gs_diag *diag) {
  struct gs_nvml_gpu *gpus;
  struct gs_agent_inventory *inv;
  uint32_t n = 0;
  enum gs_err err;

  if (nv == NULL || ret == NULL)
    return GS_EINVAL;
  /* both are large (the matrix alone is 2 × GS_MAX_GPUS²): off the stack */
  gpus = gs_calloc(GS_MAX_GPUS, sizeof *gpus);
  inv = gs_calloc(1, sizeof *inv);
  if (gpus == NULL || inv == NULL) {
    gs_free(gpus);
    gs_free(inv);
    return GS_ENOMEM;
  }
  err = gs_nvml_gpus(nv, gpus, &n, diag);
  for (uint32_t i = 0; err == GS_EOK && i < n; i++) {
    size_t len = strlen(gpus[i].uuid);
    if (len == 0 || len > GS_AGENT_UUID_MAX) {
      gs_diag_set(diag, "nvmlDeviceGetUUID", "GPU %u: a UUID of %zu bytes (1 to %d)", i, len,
                  GS_AGENT_UUID_MAX);
      err = GS_EPARSE;
      break;
    }
    memcpy(inv->gpu[i].uuid, gpus[i].uuid, len + 1);
    inv->gpu[i].minor = gpus[i].minor;
    inv->gpu[i].mem_mib = gpus[i].mem_mib;
    inv->gpu[i].healthy = true;
  }
  if (err == GS_EOK && n == 0) {
    gs_diag_set(diag, "nvmlDeviceGetCount", "NVML reports no GPU on this node");
    err = GS_ENOTFOUND;
  }
  if (err == GS_EOK)
    err = gs_nvml_topo(nv, &inv->topo, diag);
  if (err == GS_EOK) {
    inv->n = n;
    inv->has_topo = true; /* what gpushare-topo --nvml prints, on every NVML node */
    *ret = *inv;
  }
  gs_free(gpus);
  gs_free(inv);
  return err;
}

bool gs_agent_inventory_xid(struct gs_agent_inventory *inv, const struct gs_nvml_event *ev) {
  if (inv == NULL || ev == NULL || ev->gpu >= inv->n || !gs_nvml_xid_is_critical(ev->xid))
    return false;
  if (!inv->gpu[ev->gpu].healthy)
    return false;
  inv->gpu[ev->gpu].healthy = false;
  return true;
}
