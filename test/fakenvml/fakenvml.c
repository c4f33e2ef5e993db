/* libnvidia-ml.so.1 for machines without GPUs (docs/fake-nvml.md): NVML's
 * entry points as node software calls them, answering from the inventory
 * file named by GS_FAKE_NVML_INVENTORY (inventory.c). The GPUs are read at
 * the first nvmlInit; events are read again at every nvmlEventSetWait, so a
 * test marks a GPU unhealthy at run time by appending to the file.
 *
 * One lock around the state (clients call from several threads); device
 * handles point into a static array, so a handle kept past nvmlShutdown is
 * answered UNINITIALIZED, never a crash. Entry points a client binds but the
 * fake has nothing to say about answer NVML_ERROR_NOT_SUPPORTED, as a real
 * driver does for a feature the board lacks.
 */
#include "fake.h"
#include "nvml_abi.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define FK_API __attribute__((visibility("default")))
#define FK_EVENT_POLL_MS 20

struct nvmlDevice_st {
  unsigned index;
};

struct nvmlEventSet_st {
  unsigned long long mask[FK_MAX_GPUS]; /* registered event types per GPU */
  unsigned seen;                        /* inventory events already looked at */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned refs;          /* nvmlInit calls not yet shut down */
static struct fk_inv *inv;     /* while refs > 0 */
static char inv_path[4096];
static struct nvmlDevice_st devs[FK_MAX_GPUS];
/* NVLink slots: the remote GPU's index, or FK_SWITCH, or FK_NONE */
#define FK_SWITCH (-1)
#define FK_NONE (-2)
static int link_peer[FK_MAX_GPUS][FK_LINKS_MAX];

/* ---- init ----------------------------------------------------------------- */

static void plan_links(void) {
  for (unsigned i = 0; i < FK_MAX_GPUS; i++)
    for (unsigned l = 0; l < FK_LINKS_MAX; l++)
      link_peer[i][l] = FK_NONE;
  for (unsigned i = 0; i < inv->n; i++) {
    unsigned l = 0;
    for (unsigned k = 0; k < inv->nvswitch; k++)
      link_peer[i][l++] = FK_SWITCH;
    for (unsigned j = 0; j < inv->n; j++)
      for (unsigned k = 0; k < inv->nv[i][j]; k++)
        link_peer[i][l++] = (int)j; /* fk_inv_load checked l stays in range */
  }
}

static nvmlReturn_t init_locked(void) {
  const char *path;
  char err[1024];
  struct fk_inv *next;

  if (refs > 0) {
    refs++;
    return NVML_SUCCESS;
  }
  path = getenv("GS_FAKE_NVML_INVENTORY");
  if (path == NULL || path[0] == '\0') {
    fprintf(stderr, "fake nvml: GS_FAKE_NVML_INVENTORY is not set: no driver\n");
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  if (strlen(path) >= sizeof inv_path) {
    fprintf(stderr, "fake nvml: GS_FAKE_NVML_INVENTORY is too long\n");
    return NVML_ERROR_UNKNOWN;
  }
  next = malloc(sizeof *next);
  if (next == NULL)
    return NVML_ERROR_MEMORY;
  if (!fk_inv_load(path, next, err, sizeof err)) {
    fprintf(stderr, "fake nvml: bad inventory: %s\n", err);
    free(next);
    return NVML_ERROR_UNKNOWN;
  }
  if (next->init_error != 0) {
    nvmlReturn_t rc = (nvmlReturn_t)next->init_error;
    free(next);
    return rc;
  }
  strcpy(inv_path, path);
  inv = next;
  for (unsigned i = 0; i < FK_MAX_GPUS; i++)
    devs[i].index = i;
  plan_links();
  refs = 1;
  return NVML_SUCCESS;
}

FK_API nvmlReturn_t nvmlInit_v2(void) {
  nvmlReturn_t rc;
  pthread_mutex_lock(&lock);
  rc = init_locked();
  pthread_mutex_unlock(&lock);
  return rc;
}

FK_API nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }

FK_API nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
  (void)flags; /* NO_GPUS / NO_ATTACH change nothing here */
  return nvmlInit_v2();
}

FK_API nvmlReturn_t nvmlShutdown(void) {
  nvmlReturn_t rc = NVML_SUCCESS;
  pthread_mutex_lock(&lock);
  if (refs == 0) {
    rc = NVML_ERROR_UNINITIALIZED;
  } else if (--refs == 0) {
    free(inv);
    inv = NULL;
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

FK_API const char *nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
  case NVML_SUCCESS: return "Success";
  case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
  case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
  case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
  case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
  case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
  case NVML_ERROR_NOT_FOUND: return "Not Found";
  case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
  case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
  case NVML_ERROR_TIMEOUT: return "Timeout";
  case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
  case NVML_ERROR_MEMORY: return "Insufficient Memory";
  case NVML_ERROR_NO_DATA: return "No data";
  case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
  case NVML_ERROR_UNKNOWN: return "Unknown Error";
  default: return "Unknown Error";
  }
}

/* ---- helpers -------------------------------------------------------------- */

/* Locks and resolves a handle; on success the caller unlocks. */
static nvmlReturn_t enter(nvmlDevice_t device, const struct fk_gpu **ret) {
  pthread_mutex_lock(&lock);
  if (inv == NULL) {
    pthread_mutex_unlock(&lock);
    return NVML_ERROR_UNINITIALIZED;
  }
  if (device == NULL || device < devs || device >= devs + inv->n) {
    pthread_mutex_unlock(&lock);
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *ret = &inv->gpu[device->index];
  return NVML_SUCCESS;
}

static nvmlReturn_t leave(nvmlReturn_t rc) {
  pthread_mutex_unlock(&lock);
  return rc;
}

static nvmlReturn_t copy_text(char *buf, unsigned int length, const char *text) {
  if (buf == NULL)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (strlen(text) + 1 > length)
    return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(buf, text, strlen(text) + 1);
  return NVML_SUCCESS;
}

static void pci_fill(unsigned domain, unsigned bus, unsigned dev, nvmlPciInfo_t *pci) {
  memset(pci, 0, sizeof *pci);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", domain & 0xffff, bus,
           dev);
  snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", domain, bus, dev);
  pci->domain = domain;
  pci->bus = bus;
  pci->device = dev;
  pci->pciDeviceId = 0x1db410de; /* device 0x1db4, vendor NVIDIA 0x10de */
  pci->pciSubSystemId = 0x121210de;
}

static void pci_v1(const nvmlPciInfo_t *pci, gs_fake_pci_info_v1 *old) {
  memset(old, 0, sizeof *old);
  memcpy(old->busId, pci->busIdLegacy, sizeof old->busId);
  old->domain = pci->domain;
  old->bus = pci->bus;
  old->device = pci->device;
  old->pciDeviceId = pci->pciDeviceId;
  old->pciSubSystemId = pci->pciSubSystemId;
}

/* ---- system --------------------------------------------------------------- */

/* One answer about the system, the shape every call of this part and the
 * next shares: an argument missing (ok false) is INVALID_ARGUMENT, no
 * inventory loaded UNINITIALIZED; otherwise `fill` answers under the lock
 * (in, out: the caller's arguments). */
typedef nvmlReturn_t (*fk_sys_fill)(const void *in, void *out);

static nvmlReturn_t system_answer(bool ok, fk_sys_fill fill, const void *in, void *out) {
  nvmlReturn_t rc = NVML_ERROR_UNINITIALIZED;
  if (!ok)
    return NVML_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&lock);
  if (inv != NULL)
    rc = fill(in, out);
  pthread_mutex_unlock(&lock);
  return rc;
}

static nvmlReturn_t fill_driver(const void *length, void *version) {
  return copy_text(version, *(const unsigned int *)length, inv->driver);
}

static nvmlReturn_t fill_nvml_version(const void *length, void *version) {
  char text[96];
  snprintf(text, sizeof text, "%d.%s", inv->cuda / 1000, inv->driver);
  return copy_text(version, *(const unsigned int *)length, text);
}

static nvmlReturn_t fill_cuda(const void *in, void *cudaDriverVersion) {
  (void)in;
  *(int *)cudaDriverVersion = inv->cuda;
  return NVML_SUCCESS;
}

FK_API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
  return system_answer(true, fill_driver, &length, version);
}

FK_API nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
  return system_answer(true, fill_nvml_version, &length, version);
}

FK_API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion) {
  return system_answer(cudaDriverVersion != NULL, fill_cuda, NULL, cudaDriverVersion);
}

FK_API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion) {
  return nvmlSystemGetCudaDriverVersion_v2(cudaDriverVersion);
}

FK_API nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length) {
  (void)pid, (void)name, (void)length;
  return NVML_ERROR_NOT_FOUND; /* no process runs on a fake GPU */
}

/* ---- enumeration ---------------------------------------------------------- */

static nvmlReturn_t fill_count(const void *in, void *deviceCount) {
  (void)in;
  *(unsigned int *)deviceCount = inv->n;
  return NVML_SUCCESS;
}

static nvmlReturn_t fill_by_index(const void *index, void *device) {
  unsigned int i = *(const unsigned int *)index;
  if (i >= inv->n)
    return NVML_ERROR_INVALID_ARGUMENT;
  *(nvmlDevice_t *)device = &devs[i];
  return NVML_SUCCESS;
}

static nvmlReturn_t fill_by_uuid(const void *uuid, void *device) {
  for (unsigned i = 0; i < inv->n; i++)
    if (strcmp(inv->gpu[i].uuid, uuid) == 0) {
      *(nvmlDevice_t *)device = &devs[i];
      return NVML_SUCCESS;
    }
  return NVML_ERROR_NOT_FOUND;
}

/* in: the bus id's domain, bus and device */
static nvmlReturn_t fill_by_bus_id(const void *in, void *device) {
  const unsigned *id = in;
  for (unsigned i = 0; i < inv->n; i++)
    if (inv->gpu[i].domain == id[0] && inv->gpu[i].bus == id[1] && inv->gpu[i].dev == id[2]) {
      *(nvmlDevice_t *)device = &devs[i];
      return NVML_SUCCESS;
    }
  return NVML_ERROR_NOT_FOUND;
}

FK_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
  return system_answer(deviceCount != NULL, fill_count, NULL, deviceCount);
}

FK_API nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount) {
  return nvmlDeviceGetCount_v2(deviceCount);
}

FK_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
  return system_answer(device != NULL, fill_by_index, &index, device);
}

FK_API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

FK_API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
  return system_answer(uuid != NULL && device != NULL, fill_by_uuid, uuid, device);
}

FK_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device) {
  unsigned id[3];
  if (pciBusId == NULL || device == NULL || !fk_parse_bus_id(pciBusId, &id[0], &id[1], &id[2]))
    return NVML_ERROR_INVALID_ARGUMENT;
  return system_answer(true, fill_by_bus_id, id, device);
}

FK_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device) {
  return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

/* ---- per device ----------------------------------------------------------- */

FK_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
  const struct fk_gpu *g;
  nvmlReturn_t rc = enter(device, &g);
  return rc != NVML_SUCCESS ? rc : leave(copy_text(name, length, g->name));
}

FK_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
  const struct fk_gpu *g;
  nvmlReturn_t rc = enter(device, &g);
  return rc != NVML_SUCCESS ? rc : leave(copy_text(uuid, length, g->uuid));
}

/* One answer about a device, the shape every getter below shares: an out
 * parameter missing (ok false) is INVALID_ARGUMENT; otherwise the lock is
 * taken, `fill` writes the answer (a, b: the caller's out parameters) and
 * says how it went, and the lock is let go. */
typedef nvmlReturn_t (*fk_fill)(nvmlDevice_t device, const struct fk_gpu *g, void *a, void *b);

static nvmlReturn_t answer(nvmlDevice_t device, bool ok, fk_fill fill, void *a, void *b) {
  const struct fk_gpu *g;
  nvmlReturn_t rc = ok ? enter(device, &g) : NVML_ERROR_INVALID_ARGUMENT;
  return rc != NVML_SUCCESS ? rc : leave(fill(device, g, a, b));
}

/* the fills take the one signature; each uses what it needs of it */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
static nvmlReturn_t fill_index(nvmlDevice_t device, const struct fk_gpu *g, void *a, void *b) {
  *(unsigned int *)a = device->index;
  return NVML_SUCCESS;
}

static nvmlReturn_t fill_minor(nvmlDevice_t device, const struct fk_gpu *g, void *a, void *b) {
  *(unsigned int *)a = g->minor;
  return NVML_SUCCESS;
}

static nvmlReturn_t fill_memory(nvmlDevice_t device, const struct fk_gpu *g, void *a, void *b) {
  nvmlMemory_t *memory = a;
  memory->total = g->mem_mib << 20;
  memory->free = memory->total;
  memory->used = 0;
  return NVML_SUCCESS;
}

static nvmlReturn_t fill_memory_v2(nvmlDevice_t device, const struct fk_gpu *g, void *a, void *b) {
  nvmlMemory_v2_t *memory = a;
  if (memory->version != nvmlMemory_v2)
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  memory->total = g->mem_mib << 20;
  memory->reserved = 0;
  memory->free = memory->total;
  memory->used = 0;
  return NVML_SUCCESS;
}

static nvmlReturn_t fill_pci(nvmlDevice_t device, const struct fk_gpu *g, void *a, void *b) {
  pci_fill(g->domain, g->bus, g->dev, a);
  return NVML_SUCCESS;
}

static nvmlReturn_t fill_arch(nvmlDevice_t device, const struct fk_gpu *g, void *a, void *b) {
  *(nvmlDeviceArchitecture_t *)a = g->arch;
  return NVML_SUCCESS;
}

static nvmlReturn_t fill_cc(nvmlDevice_t device, const struct fk_gpu *g, void *a, void *b) {
  *(int *)a = g->cc_major;
  *(int *)b = g->cc_minor;
  return NVML_SUCCESS;
}

static nvmlReturn_t fill_brand(nvmlDevice_t device, const struct fk_gpu *g, void *a, void *b) {
  *(nvmlBrandType_t *)a = NVML_BRAND_TESLA;
  return NVML_SUCCESS;
}

static nvmlReturn_t fill_mig(nvmlDevice_t device, const struct fk_gpu *g, void *a, void *b) {
  *(unsigned int *)a = NVML_DEVICE_MIG_DISABLE;
  *(unsigned int *)b = NVML_DEVICE_MIG_DISABLE;
  return NVML_SUCCESS;
}
#pragma GCC diagnostic pop

FK_API nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index) {
  return answer(device, index != NULL, fill_index, index, NULL);
}

FK_API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber) {
  return answer(device, minorNumber != NULL, fill_minor, minorNumber, NULL);
}

FK_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
  return answer(device, memory != NULL, fill_memory, memory, NULL);
}

FK_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
  return answer(device, memory != NULL, fill_memory_v2, memory, NULL);
}

FK_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
  return answer(device, pci != NULL, fill_pci, pci, NULL);
}

FK_API nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci) {
  return nvmlDeviceGetPciInfo_v3(device, pci);
}

FK_API nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, gs_fake_pci_info_v1 *pci) {
  nvmlPciInfo_t now;
  nvmlReturn_t rc = pci == NULL ? NVML_ERROR_INVALID_ARGUMENT : nvmlDeviceGetPciInfo_v3(device, &now);
  if (rc == NVML_SUCCESS)
    pci_v1(&now, pci);
  return rc;
}

FK_API nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t *arch) {
  return answer(device, arch != NULL, fill_arch, arch, NULL);
}

FK_API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor) {
  return answer(device, major != NULL && minor != NULL, fill_cc, major, minor);
}

FK_API nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type) {
  return answer(device, type != NULL, fill_brand, type, NULL);
}

FK_API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                         unsigned int *pendingMode) {
  return answer(device, currentMode != NULL && pendingMode != NULL, fill_mig, currentMode,
                pendingMode);
}

/* ---- topology ------------------------------------------------------------- */

/* One answer about a link: answer()'s shape, and a link index out of range
 * is INVALID_ARGUMENT, one with nothing behind it NOT_SUPPORTED (the board
 * has fewer links). `fill` gets the link and the GPU behind it: a peer's
 * index or FK_SWITCH. */
typedef nvmlReturn_t (*fk_link_fill)(unsigned int link, int peer, void *out);

static nvmlReturn_t link_answer(nvmlDevice_t device, unsigned int link, void *out,
                                fk_link_fill fill) {
  const struct fk_gpu *g;
  nvmlReturn_t rc = out == NULL ? NVML_ERROR_INVALID_ARGUMENT : enter(device, &g);
  int peer;
  if (rc != NVML_SUCCESS)
    return rc;
  if (link >= NVML_NVLINK_MAX_LINKS)
    return leave(NVML_ERROR_INVALID_ARGUMENT);
  peer = link < FK_LINKS_MAX ? link_peer[device->index][link] : FK_NONE;
  return leave(peer == FK_NONE ? NVML_ERROR_NOT_SUPPORTED : fill(link, peer, out));
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
static nvmlReturn_t fill_link_state(unsigned int link, int peer, void *out) {
  *(nvmlEnableState_t *)out = NVML_FEATURE_ENABLED;
  return NVML_SUCCESS;
}

static nvmlReturn_t fill_link_pci(unsigned int link, int peer, void *out) {
  if (peer == FK_SWITCH) /* one NVSwitch per link index, off the GPUs' buses */
    pci_fill(0, 0xe0 + link, 0, out);
  else
    pci_fill(inv->gpu[peer].domain, inv->gpu[peer].bus, inv->gpu[peer].dev, out);
  return NVML_SUCCESS;
}

static nvmlReturn_t fill_link_type(unsigned int link, int peer, void *out) {
  *(nvmlIntNvLinkDeviceType_t *)out =
      peer == FK_SWITCH ? NVML_NVLINK_DEVICE_TYPE_SWITCH : NVML_NVLINK_DEVICE_TYPE_GPU;
  return NVML_SUCCESS;
}
#pragma GCC diagnostic pop

FK_API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                             nvmlEnableState_t *isActive) {
  return link_answer(device, link, isActive, fill_link_state);
}

FK_API nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                        nvmlPciInfo_t *pci) {
  return link_answer(device, link, pci, fill_link_pci);
}

FK_API nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t device, unsigned int link,
                                                     gs_fake_pci_info_v1 *pci) {
  nvmlPciInfo_t now;
  nvmlReturn_t rc = pci == NULL ? NVML_ERROR_INVALID_ARGUMENT
                                : nvmlDeviceGetNvLinkRemotePciInfo_v2(device, link, &now);
  if (rc == NVML_SUCCESS)
    pci_v1(&now, pci);
  return rc;
}

FK_API nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                                        nvmlIntNvLinkDeviceType_t *type) {
  return link_answer(device, link, type, fill_link_type);
}

FK_API nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                        nvmlGpuTopologyLevel_t *pathInfo) {
  const struct fk_gpu *g;
  nvmlReturn_t rc = pathInfo == NULL ? NVML_ERROR_INVALID_ARGUMENT : enter(device1, &g);
  if (rc != NVML_SUCCESS)
    return rc;
  if (device2 == NULL || device2 < devs || device2 >= devs + inv->n)
    return leave(NVML_ERROR_INVALID_ARGUMENT);
  if (device1 == device2)
    *pathInfo = NVML_TOPOLOGY_INTERNAL;
  else if (!inv->has_rows)
    *pathInfo = NVML_TOPOLOGY_SYSTEM;
  else
    *pathInfo = (nvmlGpuTopologyLevel_t)inv->level[device1->index][device2->index];
  return leave(NVML_SUCCESS);
}

FK_API nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
                                           nvmlGpuP2PCapsIndex_t p2pIndex,
                                           nvmlGpuP2PStatus_t *p2pStatus) {
  const struct fk_gpu *g;
  nvmlReturn_t rc = p2pStatus == NULL ? NVML_ERROR_INVALID_ARGUMENT : enter(device1, &g);
  unsigned a, b;
  if (rc != NVML_SUCCESS)
    return rc;
  if (device2 == NULL || device2 < devs || device2 >= devs + inv->n ||
      p2pIndex >= NVML_P2P_CAPS_INDEX_UNKNOWN)
    return leave(NVML_ERROR_INVALID_ARGUMENT);
  a = device1->index;
  b = device2->index;
  if (p2pIndex == NVML_P2P_CAPS_INDEX_NVLINK)
    *p2pStatus = a != b && (inv->nv[a][b] > 0 || inv->nvswitch > 0) ? NVML_P2P_STATUS_OK
                                                                   : NVML_P2P_STATUS_NOT_SUPPORTED;
  else
    *p2pStatus = NVML_P2P_STATUS_OK;
  return leave(NVML_SUCCESS);
}

/* ---- events --------------------------------------------------------------- */

#define FK_EVENTS_SUPPORTED (nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError | \
                             nvmlEventTypeSingleBitEccError)

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
static nvmlReturn_t fill_events(nvmlDevice_t device, const struct fk_gpu *g, void *a, void *b) {
  *(unsigned long long *)a = FK_EVENTS_SUPPORTED;
  return NVML_SUCCESS;
}

static nvmlReturn_t fill_no_processes(nvmlDevice_t device, const struct fk_gpu *g, void *a,
                                      void *b) {
  *(unsigned int *)a = 0;
  return NVML_SUCCESS;
}
#pragma GCC diagnostic pop

FK_API nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                     unsigned long long *eventTypes) {
  return answer(device, eventTypes != NULL, fill_events, eventTypes, NULL);
}

FK_API nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
  nvmlReturn_t rc = NVML_ERROR_UNINITIALIZED;
  if (set == NULL)
    return NVML_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&lock);
  if (inv != NULL) {
    *set = calloc(1, sizeof **set);
    rc = *set != NULL ? NVML_SUCCESS : NVML_ERROR_MEMORY;
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

FK_API nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  if (set == NULL)
    return NVML_ERROR_INVALID_ARGUMENT;
  free(set);
  return NVML_SUCCESS;
}

FK_API nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                             nvmlEventSet_t set) {
  const struct fk_gpu *g;
  nvmlReturn_t rc = set == NULL ? NVML_ERROR_INVALID_ARGUMENT : enter(device, &g);
  if (rc != NVML_SUCCESS)
    return rc;
  if ((eventTypes & ~(unsigned long long)FK_EVENTS_SUPPORTED) != 0)
    return leave(NVML_ERROR_NOT_SUPPORTED);
  set->mask[device->index] |= eventTypes;
  return leave(NVML_SUCCESS);
}

/* Reads the inventory's events again and takes the first one this set has
 * not looked at and listens for. Called without the lock: the file is read
 * into a private copy. */
static bool next_event(nvmlEventSet_t set, nvmlEventData_t *ret) {
  struct fk_inv *now;
  char err[1024], path[sizeof inv_path];
  bool found = false;

  pthread_mutex_lock(&lock);
  if (inv == NULL) {
    pthread_mutex_unlock(&lock);
    return false;
  }
  strcpy(path, inv_path);
  pthread_mutex_unlock(&lock);
  now = malloc(sizeof *now);
  if (now == NULL)
    return false;
  /* a file caught half-written reads as no news; the next poll sees it whole */
  if (fk_inv_load(path, now, err, sizeof err)) {
    pthread_mutex_lock(&lock);
    while (!found && inv != NULL && set->seen < now->nevents) {
      const struct fk_event *e = &now->ev[set->seen++];
      if (e->gpu < inv->n && (set->mask[e->gpu] & nvmlEventTypeXidCriticalError)) {
        memset(ret, 0, sizeof *ret);
        ret->device = &devs[e->gpu];
        ret->eventType = nvmlEventTypeXidCriticalError;
        ret->eventData = e->xid;
        ret->gpuInstanceId = 0xFFFFFFFFu; /* not a MIG device */
        ret->computeInstanceId = 0xFFFFFFFFu;
        found = true;
      }
    }
    pthread_mutex_unlock(&lock);
  }
  free(now);
  return found;
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

FK_API nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data,
                                        unsigned int timeoutms) {
  long long deadline = now_ms() + timeoutms;
  if (set == NULL || data == NULL)
    return NVML_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&lock);
  if (inv == NULL) {
    pthread_mutex_unlock(&lock);
    return NVML_ERROR_UNINITIALIZED;
  }
  pthread_mutex_unlock(&lock);
  for (;;) {
    long long left;
    struct timespec pause;
    if (next_event(set, data))
      return NVML_SUCCESS;
    left = deadline - now_ms();
    if (left <= 0)
      return NVML_ERROR_TIMEOUT;
    if (left > FK_EVENT_POLL_MS)
      left = FK_EVENT_POLL_MS;
    pause.tv_sec = 0;
    pause.tv_nsec = (long)left * 1000000L;
    nanosleep(&pause, NULL);
  }
}

FK_API nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, gs_fake_event_data_v1 *data,
                                     unsigned int timeoutms) {
  nvmlEventData_t now;
  nvmlReturn_t rc = data == NULL ? NVML_ERROR_INVALID_ARGUMENT
                                 : nvmlEventSetWait_v2(set, &now, timeoutms);
  if (rc == NVML_SUCCESS) {
    data->device = now.device;
    data->eventType = now.eventType;
    data->eventData = now.eventData;
  }
  return rc;
}

/* ---- bound by clients, nothing to say ------------------------------------- */

/* Aliyun's device plugin (NVIDIA's gpu-monitoring-tools bindings) binds
 * these at build time; a missing symbol would end it at the first call. */
#define FK_NOT_SUPPORTED(name, ...)                 \
  FK_API nvmlReturn_t name(nvmlDevice_t device, __VA_ARGS__);    \
  FK_API nvmlReturn_t name(nvmlDevice_t device, __VA_ARGS__) { \
    (void)device;                                   \
    return NVML_ERROR_NOT_SUPPORTED;                \
  }
/* the stubs keep NVML's parameter names, for the reader; none is used */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
FK_NOT_SUPPORTED(nvmlDeviceGetAccountingBufferSize, unsigned int *bufferSize)
FK_NOT_SUPPORTED(nvmlDeviceGetAccountingMode, nvmlEnableState_t *mode)
FK_NOT_SUPPORTED(nvmlDeviceGetBAR1MemoryInfo, nvmlBAR1Memory_t *bar1Memory)
FK_NOT_SUPPORTED(nvmlDeviceGetClockInfo, unsigned int type, unsigned int *clock)
FK_NOT_SUPPORTED(nvmlDeviceGetMaxClockInfo, unsigned int type, unsigned int *clock)
FK_NOT_SUPPORTED(nvmlDeviceGetCurrentClocksThrottleReasons, unsigned long long *reasons)
FK_NOT_SUPPORTED(nvmlDeviceGetDecoderUtilization, unsigned int *utilization,
                 unsigned int *samplingPeriodUs)
FK_NOT_SUPPORTED(nvmlDeviceGetEncoderUtilization, unsigned int *utilization,
                 unsigned int *samplingPeriodUs)
FK_NOT_SUPPORTED(nvmlDeviceGetDisplayActive, nvmlEnableState_t *isActive)
FK_NOT_SUPPORTED(nvmlDeviceGetDisplayMode, nvmlEnableState_t *display)
FK_NOT_SUPPORTED(nvmlDeviceGetMaxPcieLinkGeneration, unsigned int *maxLinkGen)
FK_NOT_SUPPORTED(nvmlDeviceGetMaxPcieLinkWidth, unsigned int *maxLinkWidth)
FK_NOT_SUPPORTED(nvmlDeviceGetMemoryErrorCounter, unsigned int errorType, unsigned int counterType,
                 unsigned int locationType, unsigned long long *count)
FK_NOT_SUPPORTED(nvmlDeviceGetPcieThroughput, unsigned int counter, unsigned int *value)
FK_NOT_SUPPORTED(nvmlDeviceGetPerformanceState, unsigned int *pState)
FK_NOT_SUPPORTED(nvmlDeviceGetPersistenceMode, nvmlEnableState_t *mode)
FK_NOT_SUPPORTED(nvmlDeviceGetPowerManagementLimit, unsigned int *limit)
FK_NOT_SUPPORTED(nvmlDeviceGetPowerUsage, unsigned int *power)
FK_NOT_SUPPORTED(nvmlDeviceGetTemperature, unsigned int sensorType, unsigned int *temp)
FK_NOT_SUPPORTED(nvmlDeviceGetUtilizationRates, void *utilization)
#pragma GCC diagnostic pop

/* No process runs on a fake GPU: an empty list (nvmlProcessInfo_t entries
 * are never written). */
#define FK_NO_PROCESSES(name)                                                        \
  FK_API nvmlReturn_t name(nvmlDevice_t device, unsigned int *infoCount, void *infos); \
  FK_API nvmlReturn_t name(nvmlDevice_t device, unsigned int *infoCount, void *infos) { \
    (void)infos;                                                                     \
    return answer(device, infoCount != NULL, fill_no_processes, infoCount, NULL);    \
  }
FK_NO_PROCESSES(nvmlDeviceGetComputeRunningProcesses)
FK_NO_PROCESSES(nvmlDeviceGetComputeRunningProcesses_v2)
FK_NO_PROCESSES(nvmlDeviceGetComputeRunningProcesses_v3)
FK_NO_PROCESSES(nvmlDeviceGetGraphicsRunningProcesses)
FK_NO_PROCESSES(nvmlDeviceGetGraphicsRunningProcesses_v2)
FK_NO_PROCESSES(nvmlDeviceGetGraphicsRunningProcesses_v3)
