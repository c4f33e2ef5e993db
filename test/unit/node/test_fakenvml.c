/* The fake NVML (test/fakenvml, docs/fake-nvml.md) through dlopen, as a
 * client meets it: every entry point against an inventory, the topology
 * answers for the DGX-1 matrix of test/data/topologies checked against
 * that text as gs_topo_parse_text reads it, events appended at run time,
 * and bad inventories answered with NVML's codes, never a crash. Under
 * ASan the library is the sanitized copy (GS_FAKENVML_DIR). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "../../fakenvml/nvml_abi.h"

#include <gpushare/topo.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../test_files.h"

#define LIB GS_FAKENVML_DIR "/libnvidia-ml.so.1"

static void *lib;
static char inv_path[64];

/* dlsym or fail: every name a client binds must be there. Each name keeps
 * its own slot, so FN(a)(FN(b)(...)) reads the right one; the slot is read
 * as a function pointer (POSIX's dlsym contract; ISO C has no cast). */
static struct {
  const char *name;
  void *p;
} slots[96];

static void **sym(const char *name) {
  size_t i;
  for (i = 0; i < sizeof slots / sizeof slots[0] && slots[i].name != NULL; i++)
    if (strcmp(slots[i].name, name) == 0)
      return &slots[i].p;
  assert_true(i < sizeof slots / sizeof slots[0]);
  slots[i].p = dlsym(lib, name);
  if (slots[i].p == NULL)
    fail_msg("libnvidia-ml.so.1 lacks %s", name);
  slots[i].name = name;
  return &slots[i].p;
}
#define FN(type, name) (*(__typeof__(type) *)(void *)sym(name))

typedef nvmlReturn_t (*f_void)(void);
typedef nvmlReturn_t (*f_uint)(unsigned int *);
typedef nvmlReturn_t (*f_handle)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*f_text)(nvmlDevice_t, char *, unsigned int);

static void write_file(const char *text, const char *mode) {
  gs_test_write(inv_path, text, mode);
}

/* The DGX-1 matrix from its nvidia-smi text, and an inventory of it. */
static struct gs_topo dgx1;

static void dgx1_inventory(const char *extra) {
  char cell[GS_TOPO_CELL_MAX], line[256];
  char *text = gs_test_slurp(GS_TEST_DATA "/topologies/dgx1_v100_topo-m.txt", NULL);
  FILE *f;
  assert_int_equal(gs_topo_parse_text(text, strlen(text), &dgx1, NULL), GS_EOK);
  free(text);
  f = fopen(inv_path, "w");
  assert_non_null(f);
  fprintf(f, "driver 535.104.05\ncuda 12020\n");
  for (uint32_t i = 0; i < dgx1.n; i++)
    fprintf(f, "gpu mem=%u uuid=GPU-dgx1-%u minor=%u bus=00000000:%02X:00.0 arch=5 cc=7.0 "
               "name=Tesla V100-SXM2-%uGB\n",
            i < 4 ? 16384 : 32768, i, 7 - i, 0x06 + i, i < 4 ? 16 : 32);
  for (uint32_t i = 0; i < dgx1.n; i++) {
    fputs("row", f);
    for (uint32_t j = 0; j < dgx1.n; j++) {
      snprintf(line, sizeof line, " %s",
               i == j ? "X" : gs_topo_cell_format(dgx1.link[i * dgx1.n + j],
                                                  dgx1.nvlinks[i * dgx1.n + j], cell));
      fputs(line, f);
    }
    fputs("   # a comment\n", f);
  }
  if (extra != NULL)
    fputs(extra, f);
  assert_int_equal(fclose(f), 0);
}

static int setup(void **state) {
  (void)state;
  gs_test_temp_file(inv_path, sizeof inv_path, "gs-fakenvml-");
  lib = dlopen(LIB, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL)
    fail_msg("dlopen %s: %s", LIB, dlerror());
  setenv("GS_FAKE_NVML_INVENTORY", inv_path, 1);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  unlink(inv_path);
  dlclose(lib);
  return 0;
}

static void init_ok(void) { assert_int_equal(FN(f_void, "nvmlInit_v2")(), NVML_SUCCESS); }
static void shutdown_ok(void) { assert_int_equal(FN(f_void, "nvmlShutdown")(), NVML_SUCCESS); }

static nvmlDevice_t dev(unsigned i) {
  nvmlDevice_t d = NULL;
  assert_int_equal(FN(f_handle, "nvmlDeviceGetHandleByIndex_v2")(i, &d), NVML_SUCCESS);
  return d;
}

/* ---- init and errors ------------------------------------------------------ */

static void test_uninitialized(void **state) {
  unsigned n = 7;
  (void)state;
  assert_int_equal(FN(f_uint, "nvmlDeviceGetCount_v2")(&n), NVML_ERROR_UNINITIALIZED);
  assert_int_equal(n, 7);
  assert_int_equal(FN(f_void, "nvmlShutdown")(), NVML_ERROR_UNINITIALIZED);
  assert_string_equal(FN(const char *(*)(nvmlReturn_t), "nvmlErrorString")(NVML_ERROR_UNINITIALIZED),
                      "Uninitialized");
  assert_string_equal(FN(const char *(*)(nvmlReturn_t), "nvmlErrorString")(NVML_ERROR_UNKNOWN),
                      "Unknown Error");
}

static void test_no_inventory_is_no_driver(void **state) {
  (void)state;
  unsetenv("GS_FAKE_NVML_INVENTORY");
  assert_int_equal(FN(f_void, "nvmlInit_v2")(), NVML_ERROR_DRIVER_NOT_LOADED);
  setenv("GS_FAKE_NVML_INVENTORY", "/nonexistent/inventory", 1);
  assert_int_equal(FN(f_void, "nvmlInit")(), NVML_ERROR_UNKNOWN);
  setenv("GS_FAKE_NVML_INVENTORY", inv_path, 1);
}

static void test_bad_inventories(void **state) {
  static const char *const bad[] = {
      "gpu mem=16384\n",                                      /* no uuid */
      "gpu uuid=GPU-a\n",                                     /* no mem */
      "gpu mem=0 uuid=GPU-a\n",                               /* zero memory */
      "gpu mem=16384 uuid=GPU-a color=red\n",                 /* unknown key */
      "gpu mem=16384 uuid=GPU-a\ngpu mem=1 uuid=GPU-a\n",     /* same UUID */
      "gpu mem=16384 uuid=GPU-a minor=1\ngpu mem=1 uuid=GPU-b minor=1\n",
      "gpu mem=16384 uuid=GPU-a bus=zz\n",
      "gpu mem=16384 uuid=GPU-a\nrow NV1\n",                  /* diagonal not X */
      "gpu mem=1 uuid=a\ngpu mem=1 uuid=b\nrow X NV2\nrow NV1 X\n", /* asymmetric */
      "gpu mem=1 uuid=a\ngpu mem=1 uuid=b\nrow X NV2\n",     /* a row missing */
      "gpu mem=1 uuid=a\ngpu mem=1 uuid=b\nrow X FOO\nrow FOO X\n",
      "gpu mem=1 uuid=a\nxid 3 79\n",                         /* no GPU 3 */
      "gpu mem=1 uuid=a\nunhealthy GPU-zz\n",
      "nvswitch 19\n",
      "frobnicate\n",
  };
  unsigned n;
  (void)state;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_file(bad[i], "w");
    if (FN(f_void, "nvmlInit_v2")() != NVML_ERROR_UNKNOWN)
      fail_msg("inventory %zu accepted: %s", i, bad[i]);
    assert_int_equal(FN(f_uint, "nvmlDeviceGetCount")(&n), NVML_ERROR_UNINITIALIZED);
  }
  write_file("gpu mem=16384 uuid=GPU-a\ninit-error 9\n", "w");
  assert_int_equal(FN(f_void, "nvmlInit_v2")(), NVML_ERROR_DRIVER_NOT_LOADED);
  assert_int_equal(FN(nvmlReturn_t(*)(unsigned int), "nvmlInitWithFlags")(0),
                   NVML_ERROR_DRIVER_NOT_LOADED);
}

static void test_refcount(void **state) {
  nvmlDevice_t d;
  unsigned minor;
  (void)state;
  write_file("gpu mem=16384 uuid=GPU-a\n", "w");
  init_ok();
  assert_int_equal(FN(nvmlReturn_t(*)(unsigned int), "nvmlInitWithFlags")(NVML_INIT_FLAG_NO_GPUS),
                   NVML_SUCCESS);
  d = dev(0);
  shutdown_ok();
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, unsigned *), "nvmlDeviceGetMinorNumber")(d, &minor),
                   NVML_SUCCESS);
  assert_int_equal(minor, 0);
  shutdown_ok();
  /* a handle kept past the last shutdown: an answer, not a crash */
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, unsigned *), "nvmlDeviceGetMinorNumber")(d, &minor),
                   NVML_ERROR_UNINITIALIZED);
}

/* ---- system and devices --------------------------------------------------- */

static void test_system(void **state) {
  char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  int cuda = 0;
  (void)state;
  dgx1_inventory(NULL);
  init_ok();
  assert_int_equal(FN(nvmlReturn_t(*)(char *, unsigned), "nvmlSystemGetDriverVersion")(buf, sizeof buf),
                   NVML_SUCCESS);
  assert_string_equal(buf, "535.104.05");
  assert_int_equal(FN(nvmlReturn_t(*)(char *, unsigned), "nvmlSystemGetDriverVersion")(buf, 10),
                   NVML_ERROR_INSUFFICIENT_SIZE);
  assert_int_equal(FN(nvmlReturn_t(*)(char *, unsigned), "nvmlSystemGetNVMLVersion")(buf, sizeof buf),
                   NVML_SUCCESS);
  assert_string_equal(buf, "12.535.104.05");
  assert_int_equal(FN(nvmlReturn_t(*)(int *), "nvmlSystemGetCudaDriverVersion")(&cuda), NVML_SUCCESS);
  assert_int_equal(cuda, 12020);
  cuda = 0;
  assert_int_equal(FN(nvmlReturn_t(*)(int *), "nvmlSystemGetCudaDriverVersion_v2")(&cuda),
                   NVML_SUCCESS);
  assert_int_equal(cuda, 12020);
  shutdown_ok();
}

static void test_devices(void **state) {
  char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  unsigned n = 0, u = 0;
  nvmlDevice_t d, e;
  nvmlMemory_t mem;
  nvmlMemory_v2_t mem2;
  nvmlPciInfo_t pci;
  gs_fake_pci_info_v1 old[2];
  int major = 0, minor = 0;
  nvmlBrandType_t brand;
  (void)state;
  dgx1_inventory(NULL);
  init_ok();
  assert_int_equal(FN(f_uint, "nvmlDeviceGetCount")(&n), NVML_SUCCESS);
  assert_int_equal(n, 8);
  assert_int_equal(FN(f_uint, "nvmlDeviceGetCount_v2")(&n), NVML_SUCCESS);
  assert_int_equal(n, 8);
  assert_int_equal(FN(f_handle, "nvmlDeviceGetHandleByIndex")(8, &d), NVML_ERROR_INVALID_ARGUMENT);
  assert_int_equal(FN(f_handle, "nvmlDeviceGetHandleByIndex")(5, &d), NVML_SUCCESS);
  assert_ptr_equal(d, dev(5));
  assert_int_equal(FN(f_text, "nvmlDeviceGetName")(d, buf, sizeof buf), NVML_SUCCESS);
  assert_string_equal(buf, "Tesla V100-SXM2-32GB");
  assert_int_equal(FN(f_text, "nvmlDeviceGetUUID")(d, buf, 5), NVML_ERROR_INSUFFICIENT_SIZE);
  assert_int_equal(FN(f_text, "nvmlDeviceGetUUID")(d, buf, sizeof buf), NVML_SUCCESS);
  assert_string_equal(buf, "GPU-dgx1-5");
  assert_int_equal(FN(nvmlReturn_t(*)(const char *, nvmlDevice_t *), "nvmlDeviceGetHandleByUUID")(
                       "GPU-dgx1-5", &e), NVML_SUCCESS);
  assert_ptr_equal(e, d);
  assert_int_equal(FN(nvmlReturn_t(*)(const char *, nvmlDevice_t *), "nvmlDeviceGetHandleByUUID")(
                       "GPU-nope", &e), NVML_ERROR_NOT_FOUND);
  for (int form = 0; form < 3; form++) {
    static const char *const ids[] = {"00000000:0B:00.0", "0000:0b:00.0", "0b:00.0"};
    e = NULL;
    assert_int_equal(FN(nvmlReturn_t(*)(const char *, nvmlDevice_t *),
                        form ? "nvmlDeviceGetHandleByPciBusId" : "nvmlDeviceGetHandleByPciBusId_v2")(
                         ids[form], &e), NVML_SUCCESS);
    assert_ptr_equal(e, d);
  }
  assert_int_equal(FN(nvmlReturn_t(*)(const char *, nvmlDevice_t *), "nvmlDeviceGetHandleByPciBusId_v2")(
                       "00000000:99:00.0", &e), NVML_ERROR_NOT_FOUND);
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, unsigned *), "nvmlDeviceGetMinorNumber")(d, &u),
                   NVML_SUCCESS);
  assert_int_equal(u, 2);
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, unsigned *), "nvmlDeviceGetIndex")(d, &u),
                   NVML_SUCCESS);
  assert_int_equal(u, 5);
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_t *), "nvmlDeviceGetMemoryInfo")(d, &mem),
                   NVML_SUCCESS);
  assert_int_equal(mem.total, 32768ull << 20);
  assert_int_equal(mem.free + mem.used, mem.total);
  memset(&mem2, 0, sizeof mem2);
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_v2_t *), "nvmlDeviceGetMemoryInfo_v2")(
                       d, &mem2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  mem2.version = nvmlMemory_v2;
  assert_int_equal(nvmlMemory_v2, 0x02000028u);
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_v2_t *), "nvmlDeviceGetMemoryInfo_v2")(
                       d, &mem2), NVML_SUCCESS);
  assert_int_equal(mem2.total, 32768ull << 20);
  /* the _v3 layout, and the unversioned one's shorter record */
  assert_int_equal(sizeof(nvmlPciInfo_t), 68);
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, nvmlPciInfo_t *), "nvmlDeviceGetPciInfo_v3")(d, &pci),
                   NVML_SUCCESS);
  assert_string_equal(pci.busId, "00000000:0B:00.0");
  assert_string_equal(pci.busIdLegacy, "0000:0B:00.0");
  assert_int_equal(pci.bus, 0x0b);
  assert_int_equal(pci.pciDeviceId & 0xffff, 0x10de);
  memset(&pci, 0, sizeof pci);
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, nvmlPciInfo_t *), "nvmlDeviceGetPciInfo_v2")(d, &pci),
                   NVML_SUCCESS);
  assert_string_equal(pci.busId, "00000000:0B:00.0");
  memset(old, 0x5a, sizeof old);
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, gs_fake_pci_info_v1 *), "nvmlDeviceGetPciInfo")(d, old),
                   NVML_SUCCESS);
  assert_string_equal(old[0].busId, "0000:0B:00.0");
  assert_int_equal(old[1].domain, 0x5a5a5a5au); /* nothing written past the record */
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, unsigned *), "nvmlDeviceGetArchitecture")(d, &u),
                   NVML_SUCCESS);
  assert_int_equal(u, NVML_DEVICE_ARCH_VOLTA);
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, int *, int *), "nvmlDeviceGetCudaComputeCapability")(
                       d, &major, &minor), NVML_SUCCESS);
  assert_int_equal(major * 10 + minor, 70);
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, nvmlBrandType_t *), "nvmlDeviceGetBrand")(d, &brand),
                   NVML_SUCCESS);
  assert_int_equal(brand, NVML_BRAND_TESLA);
  u = 9, n = 9;
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, unsigned *, unsigned *), "nvmlDeviceGetMigMode")(
                       d, &u, &n), NVML_SUCCESS);
  assert_int_equal(u, NVML_DEVICE_MIG_DISABLE);
  assert_int_equal(n, NVML_DEVICE_MIG_DISABLE);
  /* a pointer that is no handle */
  assert_int_equal(FN(f_text, "nvmlDeviceGetName")((nvmlDevice_t)buf, buf, sizeof buf),
                   NVML_ERROR_INVALID_ARGUMENT);
  assert_int_equal(FN(f_text, "nvmlDeviceGetName")(NULL, buf, sizeof buf), NVML_ERROR_INVALID_ARGUMENT);
  shutdown_ok();
}

/* Every symbol Aliyun's device plugin binds that the fake has nothing to
 * say about: present, NOT_SUPPORTED (processes: an empty list). */
static void test_bound_but_unsupported(void **state) {
  static const char *const names[] = {
      "nvmlDeviceGetAccountingBufferSize", "nvmlDeviceGetAccountingMode",
      "nvmlDeviceGetBAR1MemoryInfo", "nvmlDeviceGetCurrentClocksThrottleReasons",
      "nvmlDeviceGetDisplayActive", "nvmlDeviceGetDisplayMode",
      "nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkWidth",
      "nvmlDeviceGetPerformanceState", "nvmlDeviceGetPersistenceMode",
      "nvmlDeviceGetPowerManagementLimit", "nvmlDeviceGetPowerUsage",
      "nvmlDeviceGetUtilizationRates"};
  unsigned long long word[4];
  unsigned count = 5;
  (void)state;
  dgx1_inventory(NULL);
  init_ok();
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, void *), names[i])(dev(0), word),
                     NVML_ERROR_NOT_SUPPORTED);
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, unsigned, unsigned *), "nvmlDeviceGetClockInfo")(
                       dev(0), 0, &count), NVML_ERROR_NOT_SUPPORTED);
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, unsigned, unsigned *), "nvmlDeviceGetTemperature")(
                       dev(0), 0, &count), NVML_ERROR_NOT_SUPPORTED);
  sym("nvmlDeviceGetMaxClockInfo");
  sym("nvmlDeviceGetDecoderUtilization");
  sym("nvmlDeviceGetEncoderUtilization");
  sym("nvmlDeviceGetMemoryErrorCounter");
  sym("nvmlDeviceGetPcieThroughput");
  sym("nvmlSystemGetProcessName");
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, unsigned *, void *),
                      "nvmlDeviceGetComputeRunningProcesses")(dev(0), &count, word), NVML_SUCCESS);
  assert_int_equal(count, 0);
  count = 5;
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, unsigned *, void *),
                      "nvmlDeviceGetGraphicsRunningProcesses_v3")(dev(0), &count, word), NVML_SUCCESS);
  assert_int_equal(count, 0);
  shutdown_ok();
}

/* ---- topology ------------------------------------------------------------- */

static unsigned level_of(uint8_t link) {
  switch (link) {
  case GS_LINK_PIX: return NVML_TOPOLOGY_SINGLE;
  case GS_LINK_PXB: return NVML_TOPOLOGY_MULTIPLE;
  case GS_LINK_PHB: return NVML_TOPOLOGY_HOSTBRIDGE;
  case GS_LINK_NODE: return NVML_TOPOLOGY_NODE;
  default: return NVML_TOPOLOGY_SYSTEM;
  }
}

static void test_topology_dgx1(void **state) {
  typedef nvmlReturn_t (*f_state)(nvmlDevice_t, unsigned, nvmlEnableState_t *);
  typedef nvmlReturn_t (*f_remote)(nvmlDevice_t, unsigned, nvmlPciInfo_t *);
  typedef nvmlReturn_t (*f_anc)(nvmlDevice_t, nvmlDevice_t, nvmlGpuTopologyLevel_t *);
  typedef nvmlReturn_t (*f_p2p)(nvmlDevice_t, nvmlDevice_t, nvmlGpuP2PCapsIndex_t,
                                nvmlGpuP2PStatus_t *);
  nvmlEnableState_t on;
  nvmlGpuTopologyLevel_t level;
  nvmlGpuP2PStatus_t p2p;
  nvmlPciInfo_t pci, peer;
  gs_fake_pci_info_v1 old;
  nvmlIntNvLinkDeviceType_t type;
  (void)state;
  dgx1_inventory(NULL);
  init_ok();
  for (unsigned i = 0; i < dgx1.n; i++) {
    unsigned count[GS_MAX_GPUS] = {0}, active = 0;
    for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
      nvmlReturn_t rc = FN(f_state, "nvmlDeviceGetNvLinkState")(dev(i), l, &on);
      if (rc == NVML_ERROR_NOT_SUPPORTED)
        continue;
      assert_int_equal(rc, NVML_SUCCESS);
      assert_int_equal(on, NVML_FEATURE_ENABLED);
      active++;
      assert_int_equal(FN(f_remote, "nvmlDeviceGetNvLinkRemotePciInfo_v2")(dev(i), l, &pci),
                       NVML_SUCCESS);
      assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, unsigned, gs_fake_pci_info_v1 *),
                          "nvmlDeviceGetNvLinkRemotePciInfo")(dev(i), l, &old), NVML_SUCCESS);
      assert_string_equal(old.busId, pci.busIdLegacy);
      assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, unsigned, nvmlIntNvLinkDeviceType_t *),
                          "nvmlDeviceGetNvLinkRemoteDeviceType")(dev(i), l, &type), NVML_SUCCESS);
      assert_int_equal(type, NVML_NVLINK_DEVICE_TYPE_GPU);
      for (unsigned j = 0; j < dgx1.n; j++) {
        assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, nvmlPciInfo_t *), "nvmlDeviceGetPciInfo_v3")(
                             dev(j), &peer), NVML_SUCCESS);
        if (strcmp(peer.busId, pci.busId) == 0)
          count[j]++;
      }
    }
    assert_int_equal(FN(f_state, "nvmlDeviceGetNvLinkState")(dev(i), NVML_NVLINK_MAX_LINKS, &on),
                     NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(FN(f_state, "nvmlDeviceGetNvLinkState")(dev(i), 20, &on),
                     NVML_ERROR_NOT_SUPPORTED); /* NVML 13 asks up to 35 */
    assert_int_equal(active, 6); /* a V100 SXM2 has six NVLinks */
    for (unsigned j = 0; j < dgx1.n; j++) {
      uint8_t link = dgx1.link[i * dgx1.n + j];
      assert_int_equal(count[j], dgx1.nvlinks[i * dgx1.n + j]);
      assert_int_equal(FN(f_anc, "nvmlDeviceGetTopologyCommonAncestor")(dev(i), dev(j), &level),
                       NVML_SUCCESS);
      assert_int_equal(level, i == j ? NVML_TOPOLOGY_INTERNAL : level_of(link));
      assert_int_equal(FN(f_p2p, "nvmlDeviceGetP2PStatus")(dev(i), dev(j),
                                                            NVML_P2P_CAPS_INDEX_NVLINK, &p2p),
                       NVML_SUCCESS);
      assert_int_equal(p2p, link == GS_LINK_NV ? NVML_P2P_STATUS_OK : NVML_P2P_STATUS_NOT_SUPPORTED);
    }
  }
  shutdown_ok();
}

static void test_topology_pcie_and_switch(void **state) {
  typedef nvmlReturn_t (*f_anc)(nvmlDevice_t, nvmlDevice_t, nvmlGpuTopologyLevel_t *);
  nvmlGpuTopologyLevel_t level;
  nvmlIntNvLinkDeviceType_t type;
  nvmlPciInfo_t pci;
  (void)state;
  write_file("gpu mem=81920 uuid=GPU-0\ngpu mem=81920 uuid=GPU-1\ngpu mem=81920 uuid=GPU-2\n"
             "row X PIX SOC\nrow PIX X NODE\nrow SOC NODE X\nnvswitch 2\n", "w");
  init_ok();
  assert_int_equal(FN(f_anc, "nvmlDeviceGetTopologyCommonAncestor")(dev(0), dev(1), &level),
                   NVML_SUCCESS);
  assert_int_equal(level, NVML_TOPOLOGY_SINGLE);
  assert_int_equal(FN(f_anc, "nvmlDeviceGetTopologyCommonAncestor")(dev(0), dev(2), &level),
                   NVML_SUCCESS);
  assert_int_equal(level, NVML_TOPOLOGY_SYSTEM);
  assert_int_equal(FN(f_anc, "nvmlDeviceGetTopologyCommonAncestor")(dev(2), dev(1), &level),
                   NVML_SUCCESS);
  assert_int_equal(level, NVML_TOPOLOGY_NODE);
  for (unsigned l = 0; l < 3; l++) {
    nvmlReturn_t rc = FN(nvmlReturn_t(*)(nvmlDevice_t, unsigned, nvmlIntNvLinkDeviceType_t *),
                         "nvmlDeviceGetNvLinkRemoteDeviceType")(dev(1), l, &type);
    assert_int_equal(rc, l < 2 ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED);
    if (l < 2) {
      assert_int_equal(type, NVML_NVLINK_DEVICE_TYPE_SWITCH);
      assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, unsigned, nvmlPciInfo_t *),
                          "nvmlDeviceGetNvLinkRemotePciInfo_v2")(dev(1), l, &pci), NVML_SUCCESS);
      assert_true(pci.bus >= 0xe0); /* no GPU's bus */
    }
  }
  shutdown_ok();
}

/* ---- events --------------------------------------------------------------- */

static void test_events(void **state) {
  typedef nvmlReturn_t (*f_reg)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
  typedef nvmlReturn_t (*f_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned);
  nvmlEventSet_t set = NULL, set2 = NULL;
  nvmlEventData_t ev;
  gs_fake_event_data_v1 old[2];
  unsigned long long types = 0;
  (void)state;
  dgx1_inventory(NULL);
  init_ok();
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlDevice_t, unsigned long long *),
                      "nvmlDeviceGetSupportedEventTypes")(dev(1), &types), NVML_SUCCESS);
  assert_true(types & nvmlEventTypeXidCriticalError);
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlEventSet_t *), "nvmlEventSetCreate")(&set), NVML_SUCCESS);
  assert_int_equal(FN(f_reg, "nvmlDeviceRegisterEvents")(dev(1), nvmlEventTypeXidCriticalError, set),
                   NVML_SUCCESS);
  assert_int_equal(FN(f_reg, "nvmlDeviceRegisterEvents")(dev(1), nvmlEventTypePState, set),
                   NVML_ERROR_NOT_SUPPORTED);
  assert_int_equal(FN(f_wait, "nvmlEventSetWait_v2")(set, &ev, 0), NVML_ERROR_TIMEOUT);
  /* at run time: an XID on GPU 1, then GPU 2 (not registered) unhealthy */
  write_file("xid 1 79\nunhealthy GPU-dgx1-2\nxid GPU-dgx1-1 13\n", "a");
  memset(&ev, 0, sizeof ev);
  assert_int_equal(FN(f_wait, "nvmlEventSetWait_v2")(set, &ev, 5000), NVML_SUCCESS);
  assert_ptr_equal(ev.device, dev(1));
  assert_int_equal(ev.eventType, nvmlEventTypeXidCriticalError);
  assert_int_equal(ev.eventData, 79);
  assert_int_equal(ev.gpuInstanceId, 0xFFFFFFFFu);
  /* the unversioned call: the three-field record, nothing past it */
  memset(old, 0x5a, sizeof old);
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlEventSet_t, gs_fake_event_data_v1 *, unsigned),
                      "nvmlEventSetWait")(set, old, 5000), NVML_SUCCESS);
  assert_ptr_equal(old[0].device, dev(1));
  assert_int_equal(old[0].eventData, 13);
  assert_int_equal(old[1].eventType, 0x5a5a5a5a5a5a5a5aull);
  assert_int_equal(FN(f_wait, "nvmlEventSetWait_v2")(set, &ev, 30), NVML_ERROR_TIMEOUT);
  /* a new set listening to GPU 2 hears its event from the start */
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlEventSet_t *), "nvmlEventSetCreate")(&set2), NVML_SUCCESS);
  assert_int_equal(FN(f_reg, "nvmlDeviceRegisterEvents")(dev(2), nvmlEventTypeXidCriticalError, set2),
                   NVML_SUCCESS);
  assert_int_equal(FN(f_wait, "nvmlEventSetWait_v2")(set2, &ev, 5000), NVML_SUCCESS);
  assert_ptr_equal(ev.device, dev(2));
  assert_int_equal(ev.eventData, 48);
  /* a half-written file is no news, not an error */
  write_file("xid 1", "a");
  assert_int_equal(FN(f_wait, "nvmlEventSetWait_v2")(set, &ev, 30), NVML_ERROR_TIMEOUT);
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlEventSet_t), "nvmlEventSetFree")(set), NVML_SUCCESS);
  assert_int_equal(FN(nvmlReturn_t(*)(nvmlEventSet_t), "nvmlEventSetFree")(set2), NVML_SUCCESS);
  shutdown_ok();
}

GS_TEST_MAIN(setup, teardown,
             cmocka_unit_test(test_uninitialized),
             cmocka_unit_test(test_no_inventory_is_no_driver),
             cmocka_unit_test(test_bad_inventories),
             cmocka_unit_test(test_refcount),
             cmocka_unit_test(test_system),
             cmocka_unit_test(test_devices),
             cmocka_unit_test(test_bound_but_unsupported),
             cmocka_unit_test(test_topology_dgx1),
             cmocka_unit_test(test_topology_pcie_and_switch),
             cmocka_unit_test(test_events))
