/* The fake NVML's inventory (docs/fake-nvml.md): what the GPUs of the
 * pretend node are, read from the text file named by GS_FAKE_NVML_INVENTORY.
 * Internal to test/fakenvml. */
#ifndef GS_FAKENVML_FAKE_H
#define GS_FAKENVML_FAKE_H

#include <stdbool.h>
#include <stddef.h>

#define FK_MAX_GPUS 64
#define FK_MAX_EVENTS 1024
#define FK_LINE_MAX 4096
#define FK_TEXT_MAX 96
#define FK_FILE_MAX (1u << 20)
#define FK_LINKS_MAX 18 /* NVLinks of one GPU (V100 6, A100 12, H100 and B200 18) */

struct fk_gpu {
  char name[FK_TEXT_MAX];
  char uuid[FK_TEXT_MAX];
  unsigned domain, bus, dev;  /* PCI address (function 0) */
  unsigned minor;             /* /dev/nvidia<minor> */
  unsigned long long mem_mib; /* total memory */
  unsigned arch;              /* nvmlDeviceArchitecture_t */
  int cc_major, cc_minor;     /* CUDA compute capability */
};

struct fk_event {
  unsigned gpu;            /* index */
  unsigned long long xid;  /* nvmlEventTypeXidCriticalError's eventData */
};

struct fk_inv {
  unsigned n;
  struct fk_gpu gpu[FK_MAX_GPUS];
  /* matrix rows (`row` lines): NVLinks between two GPUs, and their PCIe
   * common ancestor (nvmlGpuTopologyLevel_t) */
  bool has_rows;
  unsigned rows;
  unsigned char nv[FK_MAX_GPUS][FK_MAX_GPUS];
  unsigned char level[FK_MAX_GPUS][FK_MAX_GPUS];
  unsigned nvswitch; /* links each GPU has into an NVSwitch fabric */
  char driver[80];
  int cuda;       /* nvmlSystemGetCudaDriverVersion: 1000 * major + 10 * minor */
  int init_error; /* nvmlInit's answer when not 0 */
  unsigned nevents;
  struct fk_event ev[FK_MAX_EVENTS];
};

/* Reads the inventory at path into *inv (zeroed first). On error returns
 * false with "path:line: what" in err. */
bool fk_inv_load(const char *path, struct fk_inv *inv, char *err, size_t errlen);

/* Parses "00000000:06:00.0", "0000:06:00.0" or "06:00.0" (function 0). */
bool fk_parse_bus_id(const char *s, unsigned *domain, unsigned *bus, unsigned *dev);

#endif
