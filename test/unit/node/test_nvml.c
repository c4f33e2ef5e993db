/* src/node's NVML reader (gpushare/nvml.h) on the fake NVML: the GPUs in
 * core terms, every sample topology read back equal to its nvidia-smi text
 * (gs_topo_parse_text), XID events and their health verdict, and the
 * refusals: no library, a library without NVML, a failing nvmlInit, each
 * with its text and nothing leaked. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include <gpushare/nvml.h>
#include <gpushare/topo.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../test_files.h"

#define LIB GS_FAKENVML_DIR "/libnvidia-ml.so.1"
#define TOPO_DIR GS_TEST_DATA "/topologies"

static char inv_path[64];

static void write_file(const char *text, const char *mode) {
  gs_test_write(inv_path, text, mode);
}

/* An inventory of t's GPUs (16 GiB each) and matrix; an all-NV<k> matrix
 * whose links could not be direct becomes an NVSwitch fabric of k links. */
static void inventory_of(const struct gs_topo *t) {
  char cell[GS_TOPO_CELL_MAX];
  uint32_t n = t->n, k = t->nvlinks[1];
  bool fabric = n > 1 && (n - 1) * k > 18;
  FILE *f = fopen(inv_path, "w");
  assert_non_null(f);
  for (uint32_t i = 0; i < n; i++)
    fprintf(f, "gpu mem=16384 uuid=GPU-t-%u\n", i);
  for (uint32_t i = 0; i < n && fabric; i++)
    for (uint32_t j = 0; j < n; j++)
      fabric = i == j || (t->link[i * n + j] == GS_LINK_NV && t->nvlinks[i * n + j] == k);
  if (fabric)
    fprintf(f, "nvswitch %u\n", k);
  for (uint32_t i = 0; i < n; i++) {
    fputs("row", f);
    for (uint32_t j = 0; j < n; j++)
      fprintf(f, " %s", i == j ? "X" : fabric ? "SYS"
                                             : gs_topo_cell_format(t->link[i * n + j],
                                                                   t->nvlinks[i * n + j], cell));
    fputc('\n', f);
  }
  assert_int_equal(fclose(f), 0);
}

static int setup(void **state) {
  (void)state;
  gs_test_temp_file(inv_path, sizeof inv_path, "gs-nvml-");
  setenv("GS_FAKE_NVML_INVENTORY", inv_path, 1);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  unlink(inv_path);
  return 0;
}

static struct gs_nvml *open_ok(void) {
  struct gs_nvml *nv = NULL;
  struct gs_diag diag = {{0}, {0}};
  enum gs_err err = gs_nvml_open(LIB, &nv, &diag);
  if (err != GS_EOK)
    fail_msg("gs_nvml_open: %s: %s", diag.where, diag.text);
  return nv;
}

static void test_gpus(void **state) {
  struct gs_nvml_gpu gpus[GS_MAX_GPUS];
  uint32_t n = 99;
  struct gs_nvml *nv;
  (void)state;
  write_file("gpu mem=16384 uuid=GPU-aa minor=4 bus=0000:3b:00.0 name=Tesla V100-PCIE-16GB\n"
             "gpu mem=32510 uuid=GPU-bb minor=0 name=Tesla V100-SXM2-32GB\n",
             "w");
  nv = open_ok();
  assert_int_equal(gs_nvml_gpus(nv, gpus, &n, NULL), GS_EOK);
  assert_int_equal(n, 2);
  assert_int_equal(gpus[0].index, 0);
  assert_int_equal(gpus[0].minor, 4);
  assert_int_equal(gpus[0].mem_mib, 16384);
  assert_string_equal(gpus[0].uuid, "GPU-aa");
  assert_string_equal(gpus[0].name, "Tesla V100-PCIE-16GB");
  assert_string_equal(gpus[0].bus_id, "00000000:3B:00.0");
  assert_int_equal(gpus[1].index, 1);
  assert_int_equal(gpus[1].minor, 0);
  assert_int_equal(gpus[1].mem_mib, 32510);
  assert_string_equal(gpus[1].uuid, "GPU-bb");
  gs_nvml_close(nv);
  gs_nvml_close(NULL);
}

/* Every complete sample of test/data/topologies: the reader's matrix is
 * the text's, byte for byte. */
static void test_topo_equals_text(void **state) {
  static const char *const samples[] = {
      "dgx1_v100_topo-m.txt", "dgx1_v100_topo-mp.txt", "dgx_a100_topo-m.txt",
      "8gpu_nvlink_pairs_topo-m.txt", "a100_pcie_nvlink_bridge_4gpu_topo-m.txt"};
  struct gs_topo *want = malloc(sizeof *want), *got = malloc(sizeof *got);
  (void)state;
  assert_non_null(want);
  assert_non_null(got);
  for (size_t s = 0; s < sizeof samples / sizeof samples[0]; s++) {
    char path[512];
    size_t len;
    char *text;
    struct gs_nvml *nv;
    struct gs_diag diag = {{0}, {0}};
    snprintf(path, sizeof path, "%s/%s", TOPO_DIR, samples[s]);
    text = gs_test_slurp(path, &len);
    memset(want, 0, sizeof *want);
    assert_int_equal(gs_topo_parse_text(text, len, want, NULL), GS_EOK);
    free(text);
    inventory_of(want);
    nv = open_ok();
    memset(got, 0xee, sizeof *got); /* the unused tail must come back zeroed */
    if (gs_nvml_topo(nv, got, &diag) != GS_EOK)
      fail_msg("%s: %s: %s", samples[s], diag.where, diag.text);
    gs_nvml_close(nv);
    if (memcmp(want, got, sizeof *want) != 0)
      fail_msg("%s: NVML's matrix differs from the text's", samples[s]);
  }
  free(want);
  free(got);
}

static void test_topo_refusals(void **state) {
  struct gs_topo *t = malloc(sizeof *t);
  struct gs_diag diag = {{0}, {0}};
  struct gs_nvml *nv;
  (void)state;
  assert_non_null(t);
  write_file("driver 550.1\n", "w");
  nv = open_ok();
  t->n = 77;
  assert_int_equal(gs_nvml_topo(nv, t, &diag), GS_ENOTFOUND);
  assert_string_equal(diag.text, "no GPU");
  assert_int_equal(t->n, 77); /* untouched */
  assert_int_equal(gs_nvml_topo(nv, NULL, NULL), GS_EINVAL);
  gs_nvml_close(nv);
  free(t);
}

static void test_events(void **state) {
  struct gs_nvml *nv;
  struct gs_nvml_event ev = {99, 99};
  struct gs_diag diag = {{0}, {0}};
  (void)state;
  write_file("gpu mem=16384 uuid=GPU-0\ngpu mem=16384 uuid=GPU-1\n", "w");
  nv = open_ok();
  assert_int_equal(gs_nvml_wait(nv, 0, &ev, NULL), GS_EINVAL); /* not watching yet */
  assert_int_equal(gs_nvml_watch(nv, &diag), GS_EOK);
  assert_int_equal(gs_nvml_watch(nv, NULL), GS_EINVAL); /* once */
  assert_int_equal(gs_nvml_wait(nv, 0, &ev, NULL), GS_ETIMEOUT);
  assert_int_equal(ev.gpu, 99);
  write_file("unhealthy GPU-1\nxid 0 31\n", "a");
  assert_int_equal(gs_nvml_wait(nv, 5000, &ev, NULL), GS_EOK);
  assert_int_equal(ev.gpu, 1);
  assert_int_equal(ev.xid, 48);
  assert_true(gs_nvml_xid_is_critical(ev.xid));
  assert_int_equal(gs_nvml_wait(nv, 5000, &ev, NULL), GS_EOK);
  assert_int_equal(ev.gpu, 0);
  assert_int_equal(ev.xid, 31);
  assert_false(gs_nvml_xid_is_critical(ev.xid)); /* an application's page fault */
  assert_int_equal(gs_nvml_wait(nv, 20, &ev, NULL), GS_ETIMEOUT);
  gs_nvml_close(nv); /* frees the event set */
  for (uint64_t x = 0; x < 200; x++)
    assert_int_equal(gs_nvml_xid_is_critical(x),
                     !(x == 13 || x == 31 || x == 43 || x == 45 || x == 68 || x == 109));
}

static void test_open_refusals(void **state) {
  struct gs_nvml *nv = (struct gs_nvml *)&nv;
  struct gs_nvml *keep = nv;
  struct gs_diag diag = {{0}, {0}};
  (void)state;
  assert_int_equal(gs_nvml_open("/nonexistent/libnvidia-ml.so.1", &nv, &diag), GS_ENOTFOUND);
  assert_ptr_equal(nv, keep);
  assert_string_equal(diag.where, "/nonexistent/libnvidia-ml.so.1");
  assert_non_null(strstr(diag.text, "cannot load NVML: "));
  /* a library that is not NVML */
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_nvml_open("libm.so.6", &nv, &diag), GS_ENOTFOUND);
  assert_string_equal(diag.text, "NVML lacks nvmlInit_v2 (driver too old?)");
  /* nvmlInit fails: its error string */
  write_file("gpu mem=1 uuid=GPU-0\ninit-error 9\n", "w");
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_nvml_open(LIB, &nv, &diag), GS_EIO);
  assert_string_equal(diag.text, "nvmlInit: Driver Not Loaded (9)");
  write_file("gpu mem=1\n", "w");
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_nvml_open(LIB, &nv, &diag), GS_EIO);
  assert_string_equal(diag.text, "nvmlInit: Unknown Error (999)");
  assert_ptr_equal(nv, keep);
  assert_int_equal(gs_nvml_open(LIB, NULL, NULL), GS_EINVAL);
}

GS_TEST_MAIN(setup, teardown, cmocka_unit_test(test_gpus), cmocka_unit_test(test_topo_equals_text),
             cmocka_unit_test(test_topo_refusals), cmocka_unit_test(test_events),
             cmocka_unit_test(test_open_refusals))
