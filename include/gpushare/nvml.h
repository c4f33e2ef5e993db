/* gpushare — the node's GPUs as NVIDIA's NVML reports them, in core types:
 * count, memory, UUID, minor number and PCI address per GPU, the NVLink /
 * PCIe matrix as the struct gs_topo that `nvidia-smi topo -m` text parses
 * into, and XID health events. For node programs (gpushare-topo --nvml,
 * the node agent); src/node, never the core.
 *
 * libnvidia-ml.so.1 is loaded at run time (dlopen): nothing links against
 * NVML, so a program runs on a machine without the driver and says so. The
 * NVML calls used are listed in docs/fake-nvml.md; the test suite runs them
 * against its fake library (test/fakenvml).
 *
 * A struct gs_nvml is one loaded, initialized library. After gs_nvml_watch
 * it is read-only, so one thread may block in gs_nvml_wait while others
 * call gs_nvml_gpus and gs_nvml_topo (NVML itself is thread-safe);
 * gs_nvml_watch and gs_nvml_close must not run beside any other call.
 * The annotation text of a gs_topo: gs_api_topo_encode (src/api), which
 * writes what gpushare-topo prints (without its newline).
 */
#ifndef GPUSHARE_NVML_H
#define GPUSHARE_NVML_H

#include <gpushare/types.h>

#define GS_NVML_LIBRARY "libnvidia-ml.so.1"
#define GS_NVML_TEXT_MAX 96 /* name, UUID (NVML's v2 buffer sizes) */
#define GS_NVML_BUSID_MAX 32

struct gs_nvml_gpu {
  uint32_t index;                 /* NVML's index */
  uint32_t minor;                 /* /dev/nvidia<minor> */
  uint64_t mem_mib;               /* total memory, MiB (rounded down) */
  char uuid[GS_NVML_TEXT_MAX];    /* "GPU-..." */
  char name[GS_NVML_TEXT_MAX];    /* "Tesla V100-SXM2-16GB" */
  char bus_id[GS_NVML_BUSID_MAX]; /* "00000000:06:00.0" */
};

/* An XID event (nvmlEventTypeXidCriticalError). */
struct gs_nvml_event {
  uint32_t gpu;  /* NVML index */
  uint64_t xid;
};

struct gs_nvml;

/* Loads NVML from path (NULL: GS_NVML_LIBRARY through the loader's search
 * path, e.g. LD_LIBRARY_PATH) and initializes it (nvmlInit_v2).
 * GS_ENOTFOUND: the library cannot be loaded or lacks an entry point;
 * GS_EIO: nvmlInit failed. diag->text names the library and NVML's error
 * string. *ret is caller-owned (gs_nvml_close), written only on success. */
enum gs_err gs_nvml_open(const char *path, struct gs_nvml **ret, struct gs_diag *diag) GS_WUR;

/* Shuts NVML down and unloads it. NULL is fine. */
void gs_nvml_close(struct gs_nvml *nv);

/* The GPUs, by NVML index, into ret_gpus (room for GS_MAX_GPUS).
 * GS_ETOOBIG over GS_MAX_GPUS; GS_EIO when an NVML call fails (diag says
 * which GPU and call). *ret_n written only on success. */
enum gs_err gs_nvml_gpus(struct gs_nvml *nv, struct gs_nvml_gpu *ret_gpus, uint32_t *ret_n,
                         struct gs_diag *diag) GS_WUR;

/* The GPU-by-GPU matrix as `nvidia-smi topo -m` shows it: NV<k> where k
 * NVLinks join two GPUs, directly (a link whose remote PCI address is the
 * other GPU's) or through an NVSwitch fabric (both have links to switches:
 * the smaller of the two counts); otherwise the PCIe common ancestor (PIX,
 * PXB, PHB, NODE, SYS). NVLink queries a board does not support count as
 * no link. The result passes gs_topo_check. GS_EIO when the common-ancestor
 * query fails; GS_ETOOBIG over GS_MAX_GPUS. *ret written only on success. */
enum gs_err gs_nvml_topo(struct gs_nvml *nv, struct gs_topo *ret, struct gs_diag *diag) GS_WUR;

/* Starts listening for XID events on every GPU (an NVML event set).
 * GS_EUNSUPPORTED when no GPU supports them. Once per struct gs_nvml. */
enum gs_err gs_nvml_watch(struct gs_nvml *nv, struct gs_diag *diag) GS_WUR;

/* Waits up to timeout_ms for the next XID event after gs_nvml_watch.
 * GS_ETIMEOUT when none came; GS_EINVAL before gs_nvml_watch; GS_EIO.
 * *ret written only on success. */
enum gs_err gs_nvml_wait(struct gs_nvml *nv, uint32_t timeout_ms, struct gs_nvml_event *ret,
                         struct gs_diag *diag) GS_WUR;

/* Whether an XID makes its GPU unhealthy. Every XID does except those an
 * application causes (13 graphics engine exception, 31 memory page fault,
 * 43 stopped channel, 45 preemptive cleanup, 68 video processor
 * exception, 109 context switch timeout): NVIDIA's device plugin skips the
 * same ones. */
bool gs_nvml_xid_is_critical(uint64_t xid);

#endif
