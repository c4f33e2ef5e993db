/* gpushare-node's inventory from NVML (gs_agent_inventory_nvml,
 * gs_agent_inventory_xid) on the fake NVML (docs/fake-nvml.md): a DGX-1's
 * eight GPUs and NVLink matrix read into the inventory, the topology
 * annotation the matrix's own text, and a GPU marked unhealthy at run time
 * by a line appended to the inventory file → the inventory, the devices
 * and the unhealthy-gpu ConfigMap say so; an application XID changes
 * nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "agent.h"

#include <gpushare/nvml.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test_files.h"

#define LIB GS_FAKENVML_DIR "/libnvidia-ml.so.1"

/* the DGX-1 (V100) block of `nvidia-smi topo -m` (test/data/topologies) */
static const char *const DGX1[8][8] = {
    {"X", "NV1", "NV1", "NV2", "NV2", "SYS", "SYS", "SYS"},
    {"NV1", "X", "NV2", "NV1", "SYS", "NV2", "SYS", "SYS"},
    {"NV1", "NV2", "X", "NV2", "SYS", "SYS", "NV1", "SYS"},
    {"NV2", "NV1", "NV2", "X", "SYS", "SYS", "SYS", "NV1"},
    {"NV2", "SYS", "SYS", "SYS", "X", "NV1", "NV1", "NV2"},
    {"SYS", "NV2", "SYS", "SYS", "NV1", "X", "NV2", "NV1"},
    {"SYS", "SYS", "NV1", "SYS", "NV1", "NV2", "X", "NV2"},
    {"SYS", "SYS", "SYS", "NV1", "NV2", "NV1", "NV2", "X"},
};

static char inv_path[64];

static void append(const char *text) {
  gs_test_write(inv_path, text, "a");
}

/* eight GPUs, the last four of 16 GiB, minors in reverse */
static int setup(void **state) {
  char line[160];
  (void)state;
  gs_test_temp_file(inv_path, sizeof inv_path, "gs-agent-nvml-");
  for (int i = 0; i < 8; i++) {
    snprintf(line, sizeof line,
             "gpu mem=%d uuid=GPU-d9x1-%04d minor=%d name=Tesla V100-SXM2-32GB\n",
             i < 4 ? 32768 : 16384, i, 7 - i);
    append(line);
  }
  for (int i = 0; i < 8; i++) {
    append("row");
    for (int j = 0; j < 8; j++) {
      append(" ");
      append(DGX1[i][j]);
    }
    append("\n");
  }
  assert_int_equal(setenv("GS_FAKE_NVML_INVENTORY", inv_path, 1), 0);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  unlink(inv_path);
  return 0;
}

/* the annotation as gpushare-topo prints the matrix: {"links":[[…],…]} */
static void expected_topology(char *buf, size_t size) {
  size_t off = (size_t)snprintf(buf, size, "{\"links\":[");
  for (int i = 0; i < 8; i++) {
    off += (size_t)snprintf(buf + off, size - off, "%s[", i ? "," : "");
    for (int j = 0; j < 8; j++)
      off += (size_t)snprintf(buf + off, size - off, "%s\"%s\"", j ? "," : "", DGX1[i][j]);
    off += (size_t)snprintf(buf + off, size - off, "]");
  }
  snprintf(buf + off, size - off, "]}");
}

static void test_fill_and_health(void **state) {
  struct gs_agent_inventory *inv = calloc(1, sizeof *inv);
  struct gs_agent_config cfg = {.unit_mib = 1024, .mode = GS_MODE_SHARE};
  struct gs_nvml *nv = NULL;
  struct gs_nvml_event ev;
  struct gs_diag diag = {0};
  char want[1024], *s;
  (void)state;
  assert_non_null(inv);

  assert_int_equal(gs_nvml_open(LIB, &nv, &diag), GS_EOK);
  assert_int_equal(gs_agent_inventory_nvml(nv, inv, &diag), GS_EOK);
  assert_int_equal(inv->n, 8);
  for (uint32_t i = 0; i < 8; i++) {
    char uuid[32];
    snprintf(uuid, sizeof uuid, "GPU-d9x1-%04u", i);
    assert_string_equal(inv->gpu[i].uuid, uuid);
    assert_int_equal(inv->gpu[i].minor, 7 - i);
    assert_int_equal(inv->gpu[i].mem_mib, i < 4 ? 32768 : 16384);
    assert_true(inv->gpu[i].healthy);
  }
  assert_true(inv->has_topo);
  expected_topology(want, sizeof want);
  s = gs_agent_topology(inv);
  assert_string_equal(s, want);
  free(s);
  assert_int_equal(gs_agent_mem_units(&cfg, inv), 4 * 32 + 4 * 16);
  s = gs_agent_unhealthy_data(inv);
  assert_string_equal(s, "{\"gpus\":\"\"}");
  free(s);

  /* at run time: an application XID on GPU 1, then a double-bit ECC error
   * (the fake's "unhealthy") on GPU 5, named by UUID */
  assert_int_equal(gs_nvml_watch(nv, &diag), GS_EOK);
  append("xid GPU-d9x1-0001 13\nunhealthy GPU-d9x1-0005\n");
  assert_int_equal(gs_nvml_wait(nv, 10000, &ev, &diag), GS_EOK);
  assert_int_equal(ev.gpu, 1);
  assert_int_equal(ev.xid, 13);
  assert_false(gs_agent_inventory_xid(inv, &ev));
  assert_true(inv->gpu[1].healthy);
  assert_int_equal(gs_nvml_wait(nv, 10000, &ev, &diag), GS_EOK);
  assert_int_equal(ev.gpu, 5);
  assert_int_equal(ev.xid, 48);
  assert_true(gs_agent_inventory_xid(inv, &ev));
  assert_false(gs_agent_inventory_xid(inv, &ev)); /* already unhealthy: no news */
  for (uint32_t i = 0; i < 8; i++)
    assert_int_equal(inv->gpu[i].healthy, i != 5);
  s = gs_agent_unhealthy_data(inv);
  assert_string_equal(s, "{\"gpus\":\"5\"}");
  free(s);
  s = gs_agent_devices(&cfg, inv, GS_AGENT_RES_COUNT);
  assert_non_null(strstr(s, "{\"id\":\"GPU-d9x1-0005\",\"health\":\"Unhealthy\"}"));
  assert_non_null(strstr(s, "{\"id\":\"GPU-d9x1-0004\",\"health\":\"Healthy\"}"));
  free(s);
  /* no further news */
  assert_int_equal(gs_nvml_wait(nv, 50, &ev, &diag), GS_ETIMEOUT);

  /* an event for a GPU the inventory lacks changes nothing */
  ev.gpu = 8;
  ev.xid = 48;
  assert_false(gs_agent_inventory_xid(inv, &ev));
  gs_nvml_close(nv);
  free(inv);
}

/* refusals: NVML's init fails → no inventory, the old one untouched */
static void test_refusals(void **state) {
  struct gs_agent_inventory inv;
  struct gs_nvml *nv = NULL;
  struct gs_diag diag = {0};
  (void)state;
  memset(&inv, 0x5a, sizeof inv);
  assert_int_equal(gs_agent_inventory_nvml(NULL, &inv, &diag), GS_EINVAL);
  assert_int_equal(inv.n, 0x5a5a5a5a);
  append("init-error 9\n");
  assert_int_equal(gs_nvml_open(LIB, &nv, &diag), GS_EIO);
  assert_non_null(strstr(diag.text, "nvmlInit"));
  assert_null(nv);
}

GS_TEST_MAIN(NULL, NULL,
             GS_TEST_FX(test_fill_and_health),
             GS_TEST_FX(test_refusals))
