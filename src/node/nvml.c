/* The node's GPUs from NVML (gpushare/nvml.h): libnvidia-ml.so.1 loaded
 * with dlopen, its entry points looked up by name, answers turned into core
 * types. The few NVML types used are declared here with NVML's layouts
 * (nvml.h is NVIDIA's; nothing here links against it).
 */
#include <gpushare/alloc.h>
#include <gpushare/nvml.h>
#include <gpushare/topo.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* ---- NVML's ABI, the part used ------------------------------------------- */

typedef int nvret;               /* nvmlReturn_t */
typedef struct nvdev_st *nvdev;  /* nvmlDevice_t */
typedef struct nvset_st *nvset;  /* nvmlEventSet_t */
#define NV_SUCCESS 0
#define NV_INVALID_ARGUMENT 2
#define NV_NOT_SUPPORTED 3
#define NV_TIMEOUT 10
#define NV_MAX_LINKS 36 /* NVML_NVLINK_MAX_LINKS of NVML 13 (12: 18, beyond: INVALID_ARGUMENT) */
#define NV_EVENT_XID 0x8ull           /* nvmlEventTypeXidCriticalError */
#define NV_LINK_DEVICE_SWITCH 2       /* NVML_NVLINK_DEVICE_TYPE_SWITCH */

struct nvpci { /* nvmlPciInfo_t (the _v2/_v3 layout) */
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct nvmem { /* nvmlMemory_t */
  unsigned long long total, free, used;
};
struct nvevent { /* nvmlEventData_t (nvmlEventSetWait_v2) */
  nvdev device;
  unsigned long long eventType, eventData;
  unsigned int gpuInstanceId, computeInstanceId;
};

struct nvfn {
  nvret (*init)(void);
  nvret (*shutdown)(void);
  const char *(*error_string)(nvret);
  nvret (*count)(unsigned int *);
  nvret (*handle)(unsigned int, nvdev *);
  nvret (*name)(nvdev, char *, unsigned int);
  nvret (*uuid)(nvdev, char *, unsigned int);
  nvret (*minor)(nvdev, unsigned int *);
  nvret (*memory)(nvdev, struct nvmem *);
  nvret (*pci)(nvdev, struct nvpci *);
  nvret (*ancestor)(nvdev, nvdev, int *);
  nvret (*link_state)(nvdev, unsigned int, int *);
  nvret (*link_remote_pci)(nvdev, unsigned int, struct nvpci *);
  nvret (*set_create)(nvset *);
  nvret (*set_free)(nvset);
  nvret (*register_events)(nvdev, unsigned long long, nvset);
  nvret (*set_wait)(nvset, struct nvevent *, unsigned int);
  /* optional (drivers before it: no NVSwitch counted) */
  nvret (*link_remote_type)(nvdev, unsigned int, int *);
};

/* Entry point names, in struct nvfn's order; the last is optional. */
static const char *const nvfn_names[] = {
    "nvmlInit_v2",
    "nvmlShutdown",
    "nvmlErrorString",
    "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetHandleByIndex_v2",
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetMinorNumber",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetPciInfo_v3",
    "nvmlDeviceGetTopologyCommonAncestor",
    "nvmlDeviceGetNvLinkState",
    "nvmlDeviceGetNvLinkRemotePciInfo_v2",
    "nvmlEventSetCreate",
    "nvmlEventSetFree",
    "nvmlDeviceRegisterEvents",
    "nvmlEventSetWait_v2",
    "nvmlDeviceGetNvLinkRemoteDeviceType",
};
#define NVFN_REQUIRED (sizeof nvfn_names / sizeof nvfn_names[0] - 1)
_Static_assert(sizeof(struct nvfn) == sizeof nvfn_names / sizeof nvfn_names[0] * sizeof(void *),
               "struct nvfn and nvfn_names list the same entry points");

struct gs_nvml {
  void *lib;
  struct nvfn fn;
  nvset set; /* after gs_nvml_watch */
};

static const char *nverr(const struct gs_nvml *nv, nvret rc) {
  const char *s = nv->fn.error_string(rc);
  return s != NULL ? s : "?";
}

/* ---- open / close --------------------------------------------------------- */

enum gs_err gs_nvml_open(const char *path, struct gs_nvml **ret, struct gs_diag *diag) {
  struct gs_nvml *nv;
  const char *lib = path != NULL ? path : GS_NVML_LIBRARY;
  void **slot;
  nvret rc;

  if (ret == NULL)
    return GS_EINVAL;
  nv = gs_calloc(1, sizeof *nv);
  if (nv == NULL)
    return GS_ENOMEM;
  nv->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (nv->lib == NULL) {
    const char *why = dlerror();
    gs_diag_set(diag, lib, "cannot load NVML: %s (no NVIDIA driver on this machine?)",
                why != NULL ? why : "?");
    gs_free(nv);
    return GS_ENOTFOUND;
  }
  /* struct nvfn is a run of function pointers in nvfn_names' order */
  slot = (void **)&nv->fn;
  for (size_t i = 0; i < sizeof nvfn_names / sizeof nvfn_names[0]; i++) {
    void *sym = dlsym(nv->lib, nvfn_names[i]);
    if (sym == NULL && i < NVFN_REQUIRED) {
      gs_diag_set(diag, lib, "NVML lacks %s (driver too old?)", nvfn_names[i]);
      dlclose(nv->lib);
      gs_free(nv);
      return GS_ENOTFOUND;
    }
    memcpy(&slot[i], &sym, sizeof sym);
  }
  rc = nv->fn.init();
  if (rc != NV_SUCCESS) {
    gs_diag_set(diag, lib, "nvmlInit: %s (%d)", nverr(nv, rc), rc);
    dlclose(nv->lib);
    gs_free(nv);
    return GS_EIO;
  }
  *ret = nv;
  return GS_EOK;
}

void gs_nvml_close(struct gs_nvml *nv) {
  if (nv == NULL)
    return;
  if (nv->set != NULL)
    (void)nv->fn.set_free(nv->set);
  (void)nv->fn.shutdown();
  dlclose(nv->lib);
  gs_free(nv);
}

/* ---- GPUs ----------------------------------------------------------------- */

static enum gs_err count_handles(struct gs_nvml *nv, nvdev *ret_dev, uint32_t *ret_n,
                                 struct gs_diag *diag) {
  unsigned int n;
  nvret rc = nv->fn.count(&n);
  if (rc != NV_SUCCESS) {
    gs_diag_set(diag, "nvmlDeviceGetCount", "%s (%d)", nverr(nv, rc), rc);
    return GS_EIO;
  }
  if (n > GS_MAX_GPUS) {
    gs_diag_set(diag, "nvmlDeviceGetCount", "%u GPUs, over %u", n, (unsigned)GS_MAX_GPUS);
    return GS_ETOOBIG;
  }
  for (unsigned int i = 0; i < n; i++) {
    rc = nv->fn.handle(i, &ret_dev[i]);
    if (rc != NV_SUCCESS) {
      gs_diag_set(diag, "nvmlDeviceGetHandleByIndex", "GPU %u: %s (%d)", i, nverr(nv, rc), rc);
      return GS_EIO;
    }
  }
  *ret_n = n;
  return GS_EOK;
}

#define CALL(what, expr)                                                          \
  do {                                                                            \
    nvret rc_ = (expr);                                                           \
    if (rc_ != NV_SUCCESS) {                                                      \
      gs_diag_set(diag, what, "GPU %u: %s (%d)", (unsigned)i, nverr(nv, rc_), rc_); \
      return GS_EIO;                                                              \
    }                                                                             \
  } while (0)

enum gs_err gs_nvml_gpus(struct gs_nvml *nv, struct gs_nvml_gpu *ret_gpus, uint32_t *ret_n,
                         struct gs_diag *diag) {
  nvdev dev[GS_MAX_GPUS];
  struct gs_nvml_gpu one;
  uint32_t n;
  enum gs_err err;

  if (nv == NULL || ret_gpus == NULL || ret_n == NULL)
    return GS_EINVAL;
  err = count_handles(nv, dev, &n, diag);
  if (err != GS_EOK)
    return err;
  for (uint32_t i = 0; i < n; i++) {
    struct nvmem mem;
    struct nvpci pci;
    unsigned int minor;
    memset(&one, 0, sizeof one);
    one.index = i;
    CALL("nvmlDeviceGetUUID", nv->fn.uuid(dev[i], one.uuid, sizeof one.uuid));
    CALL("nvmlDeviceGetName", nv->fn.name(dev[i], one.name, sizeof one.name));
    CALL("nvmlDeviceGetMinorNumber", nv->fn.minor(dev[i], &minor));
    CALL("nvmlDeviceGetMemoryInfo", nv->fn.memory(dev[i], &mem));
    CALL("nvmlDeviceGetPciInfo", nv->fn.pci(dev[i], &pci));
    one.minor = minor;
    one.mem_mib = mem.total >> 20;
    memcpy(one.bus_id, pci.busId, sizeof one.bus_id);
    one.bus_id[sizeof one.bus_id - 1] = '\0';
    ret_gpus[i] = one;
  }
  *ret_n = n;
  return GS_EOK;
}

/* ---- topology ------------------------------------------------------------- */

static bool same_pci(const struct nvpci *a, const struct nvpci *b) {
  return a->domain == b->domain && a->bus == b->bus && a->device == b->device;
}

static uint8_t level_link(int level) {
  switch (level) {
  case 0:  /* NVML_TOPOLOGY_INTERNAL: two GPUs on one board */
  case 10: /* SINGLE */
    return GS_LINK_PIX;
  case 20: return GS_LINK_PXB; /* MULTIPLE */
  case 30: return GS_LINK_PHB; /* HOSTBRIDGE */
  case 40: return GS_LINK_NODE;
  case 50: return GS_LINK_SYS;
  default: return GS_LINK_UNKNOWN;
  }
}

enum gs_err gs_nvml_topo(struct gs_nvml *nv, struct gs_topo *ret, struct gs_diag *diag) {
  nvdev dev[GS_MAX_GPUS];
  struct nvpci pci[GS_MAX_GPUS];
  uint32_t n, links[GS_MAX_GPUS][GS_MAX_GPUS], to_switch[GS_MAX_GPUS];
  struct gs_topo *t;
  enum gs_err err;

  if (nv == NULL || ret == NULL)
    return GS_EINVAL;
  err = count_handles(nv, dev, &n, diag);
  if (err != GS_EOK)
    return err;
  if (n == 0) {
    gs_diag_set(diag, "nvmlDeviceGetCount", "no GPU");
    return GS_ENOTFOUND;
  }
  for (uint32_t i = 0; i < n; i++)
    CALL("nvmlDeviceGetPciInfo", nv->fn.pci(dev[i], &pci[i]));
  memset(links, 0, sizeof links);
  memset(to_switch, 0, sizeof to_switch);
  for (uint32_t i = 0; i < n; i++)
    for (unsigned int l = 0; l < NV_MAX_LINKS; l++) {
      int active = 0, type = -1;
      struct nvpci remote;
      nvret rc = nv->fn.link_state(dev[i], l, &active);
      if (rc == NV_NOT_SUPPORTED || rc == NV_INVALID_ARGUMENT || (rc == NV_SUCCESS && !active))
        continue; /* no such link (on this board, or in this driver's NVML), or down */
      if (rc != NV_SUCCESS) {
        gs_diag_set(diag, "nvmlDeviceGetNvLinkState", "GPU %u link %u: %s (%d)", i, l,
                    nverr(nv, rc), rc);
        return GS_EIO;
      }
      CALL("nvmlDeviceGetNvLinkRemotePciInfo", nv->fn.link_remote_pci(dev[i], l, &remote));
      for (uint32_t j = 0; j < n; j++)
        if (j != i && same_pci(&remote, &pci[j])) {
          links[i][j]++;
          type = 0;
        }
      if (type == -1 && nv->fn.link_remote_type != NULL &&
          nv->fn.link_remote_type(dev[i], l, &type) == NV_SUCCESS && type == NV_LINK_DEVICE_SWITCH)
        to_switch[i]++;
    }
  t = gs_calloc(1, sizeof *t);
  if (t == NULL)
    return GS_ENOMEM;
  t->n = n;
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t j = 0; j < n; j++) {
      uint32_t k = i < j ? links[i][j] : links[j][i]; /* one side's count: symmetric */
      uint8_t *cell = &t->link[i * n + j];
      if (i == j) {
        *cell = GS_LINK_SELF;
        continue;
      }
      if (to_switch[i] > 0 && to_switch[j] > 0)
        k += to_switch[i] < to_switch[j] ? to_switch[i] : to_switch[j];
      if (k > 0) {
        *cell = GS_LINK_NV;
        t->nvlinks[i * n + j] = (uint8_t)(k > 255 ? 255 : k);
      } else {
        int level;
        nvret rc = nv->fn.ancestor(dev[i], dev[j], &level);
        if (rc != NV_SUCCESS) {
          gs_diag_set(diag, "nvmlDeviceGetTopologyCommonAncestor", "GPUs %u and %u: %s (%d)", i,
                      j, nverr(nv, rc), rc);
          gs_free(t);
          return GS_EIO;
        }
        *cell = level_link(level);
        if (*cell == GS_LINK_UNKNOWN) {
          gs_diag_set(diag, "nvmlDeviceGetTopologyCommonAncestor",
                      "GPUs %u and %u: unknown level %d", i, j, level);
          gs_free(t);
          return GS_EIO;
        }
      }
    }
  err = gs_topo_check(t, diag);
  if (err == GS_EOK)
    *ret = *t;
  gs_free(t);
  return err;
}

/* ---- health --------------------------------------------------------------- */

enum gs_err gs_nvml_watch(struct gs_nvml *nv, struct gs_diag *diag) {
  nvdev dev[GS_MAX_GPUS];
  uint32_t n, watched = 0;
  enum gs_err err;
  nvret rc;

  if (nv == NULL || nv->set != NULL)
    return GS_EINVAL;
  err = count_handles(nv, dev, &n, diag);
  if (err != GS_EOK)
    return err;
  rc = nv->fn.set_create(&nv->set);
  if (rc != NV_SUCCESS) {
    nv->set = NULL;
    gs_diag_set(diag, "nvmlEventSetCreate", "%s (%d)", nverr(nv, rc), rc);
    return GS_EIO;
  }
  for (uint32_t i = 0; i < n; i++) {
    rc = nv->fn.register_events(dev[i], NV_EVENT_XID, nv->set);
    if (rc == NV_SUCCESS)
      watched++;
    else if (rc != NV_NOT_SUPPORTED) {
      gs_diag_set(diag, "nvmlDeviceRegisterEvents", "GPU %u: %s (%d)", (unsigned)i,
                  nverr(nv, rc), rc);
      return GS_EIO;
    }
  }
  if (watched == 0) {
    gs_diag_set(diag, "nvmlDeviceRegisterEvents", "no GPU reports XID events");
    return GS_EUNSUPPORTED;
  }
  return GS_EOK;
}

enum gs_err gs_nvml_wait(struct gs_nvml *nv, uint32_t timeout_ms, struct gs_nvml_event *ret,
                         struct gs_diag *diag) {
  nvdev dev[GS_MAX_GPUS];
  struct nvevent ev;
  uint32_t n;
  enum gs_err err;
  nvret rc;

  if (nv == NULL || nv->set == NULL || ret == NULL)
    return GS_EINVAL;
  memset(&ev, 0, sizeof ev);
  rc = nv->fn.set_wait(nv->set, &ev, timeout_ms);
  if (rc == NV_TIMEOUT)
    return GS_ETIMEOUT;
  if (rc != NV_SUCCESS) {
    gs_diag_set(diag, "nvmlEventSetWait", "%s (%d)", nverr(nv, rc), rc);
    return GS_EIO;
  }
  err = count_handles(nv, dev, &n, diag);
  if (err != GS_EOK)
    return err;
  for (uint32_t i = 0; i < n; i++)
    if (dev[i] == ev.device) {
      ret->gpu = i;
      ret->xid = ev.eventData;
      return GS_EOK;
    }
  gs_diag_set(diag, "nvmlEventSetWait", "an event for a device not among the GPUs");
  return GS_EIO;
}

bool gs_nvml_xid_is_critical(uint64_t xid) {
  switch (xid) {
  case 13: case 31: case 43: case 45: case 68: case 109:
    return false;
  default:
    return true;
  }
}
