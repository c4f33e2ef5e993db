/* Topology: nvidia-smi topo -m parsing (real outputs and garbled ones),
 * cells, validation, pair and set scores, and the look-ahead GPU choice.
 * One file (over 800 lines) because it is one module's test binary, as the
 * test layout wants; the sections below follow topo.h's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include <gpushare/topo.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../test_files.h"

/* Vendored copies of the shared data/topologies (the shared directory is
 * not there on a fresh machine); see test/data/topologies. */
#define TOPO_DIR GS_TEST_DATA "/topologies"

#define BIT(i) (UINT64_C(1) << (i))

/* ---- helpers ------------------------------------------------------------ */

static char *slurp_topo(const char *name, size_t *ret_len) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", TOPO_DIR, name);
  return gs_test_slurp(path, ret_len);
}

/* Parses a vendored file that must be accepted. */
static struct gs_topo *load(const char *name) {
  struct gs_topo *t = malloc(sizeof *t);
  struct gs_diag diag;
  size_t len;
  char *text = slurp_topo(name, &len);
  memset(&diag, 0, sizeof diag);
  assert_non_null(t);
  if (gs_topo_parse_text(text, len, t, &diag) != GS_EOK)
    fail_msg("%s: %s: %s", name, diag.where, diag.text);
  free(text);
  assert_int_equal(gs_topo_check(t, NULL), GS_EOK);
  return t;
}

static enum gs_err parse_str(const char *text, struct gs_topo *t, struct gs_diag *diag) {
  memset(diag, 0, sizeof *diag);
  return gs_topo_parse_text(text, strlen(text), t, diag);
}

static const char *cell(const struct gs_topo *t, uint32_t a, uint32_t b, char buf[GS_TOPO_CELL_MAX]) {
  return gs_topo_cell_format(t->link[a * t->n + b], t->nvlinks[a * t->n + b], buf);
}

static void assert_cell(const struct gs_topo *t, uint32_t a, uint32_t b, const char *want) {
  char buf[GS_TOPO_CELL_MAX];
  assert_string_equal(cell(t, a, b, buf), want);
}

/* Cells of t, as a list: {a, b, name}, ... */
struct cell_want {
  uint32_t a, b;
  const char *name;
};
static void assert_cells_n(const struct gs_topo *t, const struct cell_want *w, size_t n) {
  char buf[GS_TOPO_CELL_MAX];
  for (size_t i = 0; i < n; i++)
    if (strcmp(cell(t, w[i].a, w[i].b, buf), w[i].name) != 0)
      fail_msg("cell %u,%u: %s, want %s", w[i].a, w[i].b, buf, w[i].name);
}
#define assert_cells(t, ...)                                                                   \
  assert_cells_n(t, (const struct cell_want[]){__VA_ARGS__},                                  \
                 sizeof((const struct cell_want[]){__VA_ARGS__}) / sizeof(struct cell_want))

/* Expects a refusal whose diagnostic names `where` and contains `needle`. */
static void assert_refused(const char *text, enum gs_err want, const char *where,
                           const char *needle) {
  struct gs_topo *t = malloc(sizeof *t);
  struct gs_diag diag;
  assert_non_null(t);
  memset(t, 0x5a, sizeof *t);
  assert_int_equal(parse_str(text, t, &diag), want);
  if (where != NULL)
    assert_string_equal(diag.where, where);
  if (strstr(diag.text, needle) == NULL)
    fail_msg("diag \"%s: %s\" lacks \"%s\"", diag.where, diag.text, needle);
  /* *ret is written only on success. */
  assert_int_equal(t->n, 0x5a5a5a5au);
  free(t);
}

static uint64_t choose(const struct gs_topo *t, uint64_t free_mask, uint32_t k) {
  uint64_t set = 0;
  assert_int_equal(gs_topo_choose(t, free_mask, k, &set), GS_EOK);
  assert_int_equal(__builtin_popcountll(set), k);
  assert_int_equal(set & ~free_mask, 0);
  return set;
}

static uint64_t choose_mode(const struct gs_topo *t, uint64_t free_mask, uint32_t k,
                            bool exact) {
  uint64_t set = 0;
  struct gs_topo_stats st;
  assert_int_equal(
      gs_topo_choose_ex(t, free_mask, k, exact ? UINT64_MAX : 0, &set, &st), GS_EOK);
  assert_int_equal(__builtin_popcountll(set), k);
  assert_int_equal(set & ~free_mask, 0);
  return set;
}

/* A synthetic topology from a link function. */
static struct gs_topo *synth(uint32_t n, void (*fn)(uint32_t a, uint32_t b, uint8_t *l, uint8_t *nv)) {
  struct gs_topo *t = calloc(1, sizeof *t);
  assert_non_null(t);
  t->n = n;
  for (uint32_t a = 0; a < n; a++) {
    for (uint32_t b = 0; b < n; b++) {
      uint8_t l = GS_LINK_SELF, nv = 0;
      if (a != b)
        fn(a < b ? a : b, a < b ? b : a, &l, &nv);
      t->link[a * n + b] = l;
      t->nvlinks[a * n + b] = nv;
    }
  }
  assert_int_equal(gs_topo_check(t, NULL), GS_EOK);
  return t;
}

/* ---- cells -------------------------------------------------------------- */

static void test_cells(void **state) {
  static const struct {
    const char *in;
    uint8_t link, nv;
    const char *out;
  } ok[] = {
      {"X", GS_LINK_SELF, 0, "X"},      {"NV1", GS_LINK_NV, 1, "NV1"},
      {"NV12", GS_LINK_NV, 12, "NV12"}, {"NV255", GS_LINK_NV, 255, "NV255"},
      {"PIX", GS_LINK_PIX, 0, "PIX"},   {"PXB", GS_LINK_PXB, 0, "PXB"},
      {"PHB", GS_LINK_PHB, 0, "PHB"},   {"NODE", GS_LINK_NODE, 0, "NODE"},
      {"SYS", GS_LINK_SYS, 0, "SYS"},   {"SOC", GS_LINK_SYS, 0, "SYS"},
  };
  static const char *bad[] = {"", "x", "nv2", "NV", "NV0", "NV01", "NV256", "NV1000",
                              "NVX", "NV-1", "SYS ", " SYS", "PIX2", "N/A", "CPU", "NV#"};
  char buf[GS_TOPO_CELL_MAX];
  uint8_t link = 99, nv = 99;
  (void)state;
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    assert_int_equal(gs_topo_cell_parse(ok[i].in, &link, &nv), GS_EOK);
    assert_int_equal(link, ok[i].link);
    assert_int_equal(nv, ok[i].nv);
    assert_string_equal(gs_topo_cell_format(link, nv, buf), ok[i].out);
  }
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    link = 99;
    nv = 99;
    assert_int_equal(gs_topo_cell_parse(bad[i], &link, &nv), GS_EPARSE);
    assert_int_equal(link, 99); /* untouched on error */
    assert_int_equal(nv, 99);
  }
  assert_int_equal(gs_topo_cell_parse(NULL, &link, &nv), GS_EINVAL);
  assert_string_equal(gs_topo_cell_name(GS_LINK_NV), "NV");
  assert_string_equal(gs_topo_cell_name(GS_LINK_UNKNOWN), "?");
  assert_string_equal(gs_topo_cell_name(200), "?");
  assert_string_equal(gs_topo_cell_format(GS_LINK_NV, 0, buf), "?");
}

/* ---- real outputs ------------------------------------------------------- */

static void test_parse_dgx1(void **state) {
  struct gs_topo *t = load("dgx1_v100_topo-m.txt");
  (void)state;
  assert_int_equal(t->n, 8);
  assert_cells(t, {0, 0, "X"}, {0, 1, "NV1"}, {0, 3, "NV2"}, {0, 4, "NV2"}, {0, 6, "SYS"},
                  {5, 6, "NV2"}, {7, 3, "NV1"});
  /* Each V100 has 6 NVLink ports. */
  for (uint32_t i = 0; i < 8; i++) {
    uint32_t sum = 0;
    for (uint32_t j = 0; j < 8; j++)
      sum += t->nvlinks[i * 8 + j];
    assert_int_equal(sum, 6);
  }
  free(t);
}

static void test_parse_dgx1_mp(void **state) {
  struct gs_topo *t = load("dgx1_v100_topo-mp.txt");
  (void)state;
  assert_int_equal(t->n, 8);
  assert_cells(t, {0, 1, "PIX"}, {0, 2, "PHB"}, {3, 2, "PIX"}, {0, 4, "SYS"}, {7, 6, "PIX"});
  free(t);
}

static void test_parse_pairs_and_bridges(void **state) {
  struct gs_topo *t = load("8gpu_nvlink_pairs_topo-m.txt");
  (void)state;
  assert_int_equal(t->n, 8); /* "GPU NUMA ID" column and N/A cells ignored */
  assert_cells(t, {0, 2, "NV12"}, {1, 3, "NV12"}, {0, 1, "SYS"}, {6, 7, "NV12"});
  free(t);

  t = load("a100_pcie_nvlink_bridge_4gpu_topo-m.txt");
  assert_int_equal(t->n, 4); /* mlx5 rows and columns ignored */
  assert_cells(t, {0, 1, "NV12"}, {0, 2, "SYS"});
  /* The matrix, not the caption, is the truth: GPU2-GPU3 reads NODE. */
  assert_cell(t, 2, 3, "NODE");
  free(t);
}

static void test_parse_nvswitch(void **state) {
  struct gs_topo *t = load("dgx_a100_topo-m.txt");
  size_t len;
  char *text, *b;
  struct gs_diag diag;
  (void)state;
  assert_int_equal(t->n, 8);
  for (uint32_t i = 0; i < 8; i++)
    for (uint32_t j = 0; j < 8; j++)
      assert_cell(t, i, j, i == j ? "X" : "NV12");
  free(t);

  /* The H100/H200 file holds two tables: (a) is partial (only GPU0's row
   * whole), so the whole file is refused at (a)'s broken row... */
  text = slurp_topo("hgx_h100_h200_topo-m.txt", &len);
  t = malloc(sizeof *t);
  assert_non_null(t);
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_topo_parse_text(text, len, t, &diag), GS_EPARSE);
  assert_string_equal(diag.where, "line 8");
  assert_non_null(strstr(diag.text, "unknown link \"...\" (row GPU1, column GPU3)"));
  /* ...and (b), the complete H200 output, parses on its own. */
  b = strstr(text, "(b)");
  assert_non_null(b);
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_topo_parse_text(b, len - (size_t)(b - text), t, &diag), GS_EOK);
  assert_int_equal(t->n, 8);
  for (uint32_t i = 0; i < 8; i++)
    for (uint32_t j = 0; j < 8; j++)
      assert_cell(t, i, j, i == j ? "X" : "NV18");
  free(t);
  free(text);
}

static void test_parse_partial_dgx2(void **state) {
  struct gs_topo *t = malloc(sizeof *t);
  struct gs_diag diag;
  size_t len;
  char *text = slurp_topo("dgx2_v100_16gpu_topo-m_partial.txt", &len);
  (void)state;
  /* 16 GPU columns, 5 GPU rows, then the excerpt ends: a partial table. */
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_topo_parse_text(text, len, t, &diag), GS_EPARSE);
  assert_string_equal(diag.where, "end of input");
  assert_non_null(strstr(diag.text, "partial table"));
  assert_non_null(strstr(diag.text, "5 of 16"));
  free(text);
  free(t);
}

static void test_parse_legend_only(void **state) {
  (void)state;
  size_t len;
  char *text = slurp_topo("legend.txt", &len);
  assert_refused(text, GS_EPARSE, "input", "no GPU table found");
  free(text);
}

/* Every sample parses into a valid matrix or is refused with a reason. */
static void check_dir(const char *dir, unsigned *ret_ok, unsigned *ret_refused) {
  DIR *d = opendir(dir);
  struct dirent *e;
  if (d == NULL)
    return;
  while ((e = readdir(d)) != NULL) {
    char path[1024];
    struct gs_topo *t;
    struct gs_diag diag;
    size_t len;
    char *text;
    enum gs_err err;
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    text = gs_test_slurp(path, &len);
    t = malloc(sizeof *t);
    assert_non_null(t);
    memset(&diag, 0, sizeof diag);
    err = gs_topo_parse_text(text, len, t, &diag);
    if (err == GS_EOK) {
      assert_int_equal(gs_topo_check(t, NULL), GS_EOK);
      assert_true(t->n >= 1);
      assert_string_equal(diag.text, "");
      ++*ret_ok;
    } else {
      assert_int_equal(err, GS_EPARSE);
      assert_true(diag.text[0] != '\0');
      assert_true(diag.where[0] != '\0');
      ++*ret_refused;
    }
    free(t);
    free(text);
  }
  closedir(d);
}

static void test_parse_every_sample(void **state) {
  unsigned ok = 0, refused = 0;
  (void)state;
  check_dir(TOPO_DIR, &ok, &refused);
  assert_int_equal(ok, 5);      /* 8gpu pairs, a100 bridges, dgx1 -m, dgx1 -mp, dgx a100 */
  assert_int_equal(refused, 3); /* dgx2 partial, h100/h200 (partial (a)), legend */
}

static void test_parse_layouts(void **state) {
  struct gs_topo *a = load("dgx1_v100_topo-m.txt");
  struct gs_topo *b = malloc(sizeof *b);
  struct gs_diag diag;
  size_t len;
  char *text = slurp_topo("dgx1_v100_topo-m.txt", &len), *crlf;
  size_t o = 0;
  (void)state;
  assert_non_null(b);
  /* Tabs → runs of spaces (as pasted in issues). */
  for (size_t i = 0; i < len; i++)
    if (text[i] == '\t')
      text[i] = ' ';
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_topo_parse_text(text, len, b, &diag), GS_EOK);
  assert_memory_equal(a, b, sizeof *a);
  /* CRLF line ends, no trailing newline. */
  crlf = malloc(2 * len + 1);
  assert_non_null(crlf);
  for (size_t i = 0; i < len; i++) {
    if (text[i] == '\n')
      crlf[o++] = '\r';
    crlf[o++] = text[i];
  }
  while (o > 0 && (crlf[o - 1] == '\n' || crlf[o - 1] == '\r'))
    o--;
  memset(b, 0, sizeof *b);
  assert_int_equal(gs_topo_parse_text(crlf, o, b, &diag), GS_EOK);
  assert_memory_equal(a, b, sizeof *a);
  free(crlf);
  free(text);

  /* The bare block, no NIC or affinity columns, no surrounding text. */
  assert_int_equal(parse_str("\tGPU0\tGPU1\nGPU0\t X \tNV2\nGPU1\tNV2\t X \n", b, &diag),
                   GS_EOK);
  assert_int_equal(b->n, 2);
  assert_cell(b, 0, 1, "NV2");
  /* Old drivers: SOC for SYS. One GPU. */
  assert_int_equal(parse_str("GPU0 GPU1 CPU Affinity\nGPU0 X SOC 0-7\nGPU1 SOC X 8-15\n", b,
                             &diag),
                   GS_EOK);
  assert_cell(b, 1, 0, "SYS");
  assert_int_equal(parse_str("        GPU0    CPU Affinity\nGPU0     X      0-11\n", b, &diag),
                   GS_EOK);
  assert_int_equal(b->n, 1);
  assert_int_equal(parse_str("GPU0\nGPU0 X\n", b, &diag), GS_EOK);
  assert_int_equal(b->n, 1);
  free(a);
  free(b);
}

/* ---- garbled input -------------------------------------------------------- */

#define HDR "\tGPU0\tGPU1\tGPU2\tCPU Affinity\n"

static void test_parse_garbled(void **state) {
  (void)state;
  assert_refused("", GS_EPARSE, "input", "no GPU table found");
  assert_refused("hello\nworld\n", GS_EPARSE, "input", "no GPU table found");
  assert_refused("intro\n" HDR "GPU0\t X \tNV1\tSYS\t0-7\nGPU1\tNV1\t X \tNVX\t0-7\n"
                 "GPU2\tSYS\tNV1\t X \t0-7\n",
                 GS_EPARSE, "line 4", "unknown link \"NVX\" (row GPU1, column GPU2)");
  /* missing row, then NIC row / blank / end */
  assert_refused(HDR "GPU0\t X \tNV1\tSYS\nGPU1\tNV1\t X \tNV1\nmlx5_0\tPIX\tPIX\tSYS\n",
                 GS_EPARSE, "line 4", "partial table: \"mlx5_0\" where row GPU2 was expected");
  assert_refused(HDR "GPU0\t X \tNV1\tSYS\n\nGPU1\tNV1\t X \tNV1\n", GS_EPARSE, "line 3",
                 "blank line where row GPU1 was expected");
  assert_refused(HDR "GPU0\t X \tNV1\tSYS\n", GS_EPARSE, "end of input",
                 "1 of 3 GPU rows");
  /* rows out of order, or a GPU index skipped */
  assert_refused(HDR "GPU1\tNV1\t X \tNV1\n", GS_EPARSE, "line 2",
                 "expected row GPU0, found \"GPU1\"");
  assert_refused(HDR "GPU0\t X \tNV1\tSYS\nGPU2\tSYS\tNV1\t X \n", GS_EPARSE, "line 3",
                 "expected row GPU1, found \"GPU2\"");
  assert_refused("\tGPU0\tGPU2\nGPU0\t X \tNV1\nGPU2\tNV1\t X \n", GS_EPARSE, "line 1",
                 "column \"GPU2\" where GPU1 was expected");
  assert_refused("\tGPU0\tGPU1\tmlx5_0\tGPU2\nGPU0\t X \tNV1\tPIX\n", GS_EPARSE, "line 1",
                 "GPU column \"GPU2\" after non-GPU columns");
  assert_refused("\tGPU0\tGPU01\n", GS_EPARSE, "line 1", "column \"GPU01\" where GPU1");
  assert_refused("\tGPU0\tGPU1\nGPU0\t X \tNV1\nGPU01\tNV1\t X\n", GS_EPARSE, "line 3",
                 "expected row GPU1, found \"GPU01\"");
  /* too few cells (even with an affinity after them) */
  assert_refused(HDR "GPU0\t X \tNV1\n", GS_EPARSE, "line 2", "row GPU0 has 2 of 3 GPU cells");
  assert_refused(HDR "GPU0\t X \tNV1\t0-7\n", GS_EPARSE, "line 2", "unknown link \"0-7\"");
  /* diagonal, X elsewhere, asymmetry */
  assert_refused(HDR "GPU0\tNV1\tNV1\tSYS\n", GS_EPARSE, "line 2",
                 "row GPU0: cell GPU0 is \"NV1\", expected X on the diagonal");
  assert_refused(HDR "GPU0\t X \t X \tSYS\n", GS_EPARSE, "line 2",
                 "row GPU0: cell GPU1 is X off the diagonal");
  assert_refused(HDR "GPU0\t X \tNV1\tSYS\nGPU1\tNV1\t X \tNV1\nGPU2\tSYS\tNV2\t X \n",
                 GS_EPARSE, "line 4",
                 "matrix not symmetric: GPU2,GPU1 is NV2 but GPU1,GPU2 is NV1");
  /* a row before the header; a second table; an extra GPU row */
  assert_refused("GPU0\t X \tNV1\n", GS_EPARSE, "line 1", "row GPU0 before any header row");
  assert_refused("\tGPU0\nGPU0\t X \n\n\tGPU0\nGPU0\t X \n", GS_EPARSE, "line 4",
                 "unexpected \"GPU0\" after the GPU0..GPU0 rows");
  assert_refused("\tGPU0\tGPU1\nGPU0\t X \tNV1\nGPU1\tNV1\t X \nGPU2\tNV1\tNV1\t X\n",
                 GS_EPARSE, "line 4", "unexpected \"GPU2\"");
  /* control bytes are shown as '?', long tokens cut */
  assert_refused("\tGPU0\tGPU1\nGPU0\t X \tNV\x01\x02\n", GS_EPARSE, "line 2",
                 "unknown link \"NV??\"");
  assert_refused("\tGPU0\tGPU1\nGPU0\t X \tAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n", GS_EPARSE,
                 "line 2", "\"AAAAAAAAAAAAAAAAAAAAAAAA...\"");
}

static void test_parse_caps(void **state) {
  struct gs_topo *t = malloc(sizeof *t);
  struct gs_diag diag;
  char *big;
  size_t o = 0;
  (void)state;
  assert_non_null(t);
  assert_int_equal(gs_topo_parse_text(NULL, 0, t, &diag), GS_EINVAL);
  assert_int_equal(gs_topo_parse_text("x", 1, NULL, &diag), GS_EINVAL);
  /* over the text cap */
  big = calloc(GS_TOPO_TEXT_MAX + 2, 1);
  assert_non_null(big);
  memset(big, ' ', GS_TOPO_TEXT_MAX + 1);
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_topo_parse_text(big, GS_TOPO_TEXT_MAX + 1, t, &diag), GS_ETOOBIG);
  /* 65 GPU columns */
  for (int i = 0; i <= GS_MAX_GPUS; i++)
    o += (size_t)sprintf(big + o, "\tGPU%d", i);
  big[o++] = '\n';
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_topo_parse_text(big, o, t, &diag), GS_ETOOBIG);
  assert_string_equal(diag.where, "line 1");
  /* exactly 64 GPUs is fine */
  o = 0;
  for (int i = 0; i < GS_MAX_GPUS; i++)
    o += (size_t)sprintf(big + o, "\tGPU%d", i);
  big[o++] = '\n';
  for (int i = 0; i < GS_MAX_GPUS; i++) {
    o += (size_t)sprintf(big + o, "GPU%d", i);
    for (int j = 0; j < GS_MAX_GPUS; j++)
      o += (size_t)sprintf(big + o, "\t%s", i == j ? " X " : (i / 2 == j / 2 ? "NV4" : "SYS"));
    big[o++] = '\n';
  }
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_topo_parse_text(big, o, t, &diag), GS_EOK);
  assert_int_equal(t->n, 64);
  assert_cell(t, 62, 63, "NV4");
  free(big);
  free(t);
}

static void test_check(void **state) {
  struct gs_topo *t = load("dgx1_v100_topo-m.txt");
  struct gs_diag diag;
  (void)state;
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_topo_check(t, &diag), GS_EOK);
  t->nvlinks[0 * 8 + 3] = 1; /* GPU0,GPU3 NV1 but GPU3,GPU0 NV2 */
  assert_int_equal(gs_topo_check(t, &diag), GS_EPARSE);
  assert_string_equal(diag.where, "GPU0,GPU3");
  assert_non_null(strstr(diag.text, "not symmetric"));
  t->nvlinks[0 * 8 + 3] = 2;
  t->link[1 * 8 + 1] = GS_LINK_SYS;
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_topo_check(t, &diag), GS_EPARSE);
  assert_string_equal(diag.where, "GPU1,GPU1");
  t->link[1 * 8 + 1] = GS_LINK_SELF;
  t->nvlinks[0 * 8 + 6] = 3; /* SYS with links */
  t->nvlinks[6 * 8 + 0] = 3;
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_topo_check(t, &diag), GS_EPARSE);
  t->nvlinks[0 * 8 + 6] = 0;
  t->nvlinks[6 * 8 + 0] = 0;
  t->link[0 * 8 + 6] = GS_LINK_UNKNOWN;
  t->link[6 * 8 + 0] = GS_LINK_UNKNOWN;
  assert_int_equal(gs_topo_check(t, NULL), GS_EPARSE);
  t->n = 0;
  assert_int_equal(gs_topo_check(t, NULL), GS_EPARSE);
  assert_int_equal(gs_topo_check(NULL, NULL), GS_EINVAL);
  free(t);
}

/* ---- scores ------------------------------------------------------------- */

static void test_pair_score(void **state) {
  struct gs_topo *t = load("dgx1_v100_topo-m.txt");
  struct gs_topo *p = load("dgx1_v100_topo-mp.txt");
  struct gs_topo *b = synth(1, NULL);
  struct gs_diag diag;
  (void)state;
  /* NV2 > NV1 > PIX > PXB > PHB > NODE > SYS */
  assert_true(gs_topo_pair_score(t, 0, 3) > gs_topo_pair_score(t, 0, 1));
  assert_true(gs_topo_pair_score(t, 0, 1) > gs_topo_pair_score(p, 0, 1)); /* NV1 > PIX */
  assert_int_equal(parse_str("\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\n"
                             "GPU0\t X \tPIX\tPXB\tPHB\tNODE\tSYS\n"
                             "GPU1\tPIX\t X \tSYS\tSYS\tSYS\tSYS\n"
                             "GPU2\tPXB\tSYS\t X \tSYS\tSYS\tSYS\n"
                             "GPU3\tPHB\tSYS\tSYS\t X \tSYS\tSYS\n"
                             "GPU4\tNODE\tSYS\tSYS\tSYS\t X \tSYS\n"
                             "GPU5\tSYS\tSYS\tSYS\tSYS\tSYS\t X \n",
                             b, &diag),
                   GS_EOK);
  for (uint32_t j = 1; j < 5; j++)
    assert_true(gs_topo_pair_score(b, 0, j) > gs_topo_pair_score(b, 0, j + 1));
  assert_true(gs_topo_pair_score(b, 0, 5) > 0);
  assert_int_equal(gs_topo_pair_score(t, 2, 2), 0);
  assert_int_equal(gs_topo_pair_score(t, 0, 8), 0);
  assert_int_equal(gs_topo_pair_score(t, 3, 0), gs_topo_pair_score(t, 0, 3));
  /* no topology: all pairs equal */
  assert_int_equal(gs_topo_pair_score(NULL, 0, 1), GS_TOPO_SCORE_EQUAL);
  assert_int_equal(gs_topo_pair_score(NULL, 5, 40), GS_TOPO_SCORE_EQUAL);
  b->n = 0;
  assert_int_equal(gs_topo_pair_score(b, 0, 1), GS_TOPO_SCORE_EQUAL);
  free(t);
  free(p);
  free(b);
}

static void test_set_score(void **state) {
  struct gs_topo *t = load("dgx1_v100_topo-m.txt");
  struct gs_topo *p = load("dgx1_v100_topo-mp.txt");
  struct gs_topo *a = load("dgx_a100_topo-m.txt");
  (void)state;
  assert_int_equal(gs_topo_set_score(t, BIT(0) | BIT(3)), 10);          /* NV2 */
  assert_int_equal(gs_topo_set_score(t, BIT(0) | BIT(1)), 9);           /* NV1 */
  assert_int_equal(gs_topo_set_score(t, 0x0f), 9);                      /* weakest NV1 */
  assert_int_equal(gs_topo_set_score(t, BIT(0) | BIT(5)), 1);           /* SYS */
  assert_int_equal(gs_topo_set_score(t, BIT(6)), 10);                   /* one GPU */
  assert_int_equal(gs_topo_set_score(p, BIT(0) | BIT(1)), 7);           /* PIX */
  assert_int_equal(gs_topo_set_score(p, BIT(0) | BIT(1) | BIT(2)), 5);  /* PHB */
  assert_int_equal(gs_topo_set_score(a, 0xff), 10);
  assert_int_equal(gs_topo_set_score(NULL, 0x3), 5);
  assert_int_equal(gs_topo_set_score(NULL, 0x1), 10);
  assert_int_equal(gs_topo_set_score(t, 0), 0);
  assert_int_equal(gs_topo_set_score(t, BIT(8)), 0);
  free(t);
  free(p);
  free(a);
}

/* ---- choice: the issue's cases -------------------------------------------- */

static bool is_nv(const struct gs_topo *t, uint64_t set, uint8_t nvlinks) {
  uint32_t a = (uint32_t)__builtin_ctzll(set), b = (uint32_t)(63 - __builtin_clzll(set));
  return __builtin_popcountll(set) == 2 && t->link[a * t->n + b] == GS_LINK_NV &&
         t->nvlinks[a * t->n + b] == nvlinks;
}

static void test_choose_dgx1(void **state) {
  struct gs_topo *t = load("dgx1_v100_topo-m.txt");
  (void)state;
  /* default budget, forced exact, forced bounded search */
  for (int mode = 0; mode < 3; mode++) {
    uint64_t s;
#define PICK(f, k) (mode == 0 ? choose(t, f, k) : choose_mode(t, f, k, mode == 1))
    /* all free, 4 → one half of the hybrid cube mesh */
    s = PICK(0xff, 4);
    assert_true(s == 0x0f || s == 0xf0);
    assert_int_equal(s, 0x0f); /* ties: lowest indices */
    /* all free, 2 → a pair joined by 2 NVLinks */
    s = PICK(0xff, 2);
    assert_true(is_nv(t, s, 2));
    /* {0,2,4,5} free, 2 → {0,2} or {4,5} (NV1), never {0,4} (NV2) which
     * leaves {2,5} on SYS */
    s = PICK(BIT(0) | BIT(2) | BIT(4) | BIT(5), 2);
    assert_true(s == (BIT(0) | BIT(2)) || s == (BIT(4) | BIT(5)));
    /* half taken: the other half's 4 */
    assert_int_equal(PICK(0xf0, 4), 0xf0);
    /* {0,1,2,3,4} free, 1 → 4, leaving the NVLinked quad whole */
    assert_int_equal(PICK(0x1f, 1), BIT(4));
    /* everything else: valid */
    for (uint32_t k = 1; k <= 8; k++)
      (void)PICK(0xff, k);
#undef PICK
  }
  free(t);
}

static void test_choose_pairs(void **state) {
  struct gs_topo *t = load("8gpu_nvlink_pairs_topo-m.txt");
  struct gs_topo *b = load("a100_pcie_nvlink_bridge_4gpu_topo-m.txt");
  (void)state;
  /* bridged pairs are (0,2), (1,3), (4,5), (6,7): read the matrix */
  assert_int_equal(choose(t, 0xff, 2), BIT(0) | BIT(2));
  assert_int_equal(choose(t, 0xff & ~BIT(0), 2), BIT(1) | BIT(3));
  assert_int_equal(choose(t, BIT(0) | BIT(2) | BIT(4), 1), BIT(4));
  assert_int_equal(choose(t, BIT(0) | BIT(1) | BIT(3) | BIT(6), 2), BIT(1) | BIT(3));
  /* 4 GPUs: two bridged pairs, never one pair plus strays */
  {
    uint64_t s = choose(t, 0xff, 4);
    uint32_t nvpairs = 0;
    for (uint32_t a = 0; a < 8; a++)
      for (uint32_t c = a + 1; c < 8; c++)
        if ((s & BIT(a)) && (s & BIT(c)) && t->link[a * 8 + c] == GS_LINK_NV)
          nvpairs++;
    assert_int_equal(nvpairs, 2);
  }
  /* A100 PCIe with one bridge: 2 → the bridged pair; 1 → not from it */
  assert_int_equal(choose(b, 0xf, 2), BIT(0) | BIT(1));
  assert_int_equal(choose(b, 0xf, 1), BIT(2));
  assert_int_equal(choose(b, 0xe, 2), BIT(2) | BIT(3)); /* NODE beats SYS */
  free(t);
  free(b);
}

static void test_choose_nvswitch(void **state) {
  static const char *files[] = {"dgx_a100_topo-m.txt"};
  (void)state;
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    struct gs_topo *t = load(files[f]);
    for (uint32_t k = 1; k <= 8; k++) {
      assert_int_equal(choose(t, 0xff, k), (BIT(k) - 1));
      /* free {1,3,4,6,7}: lowest free indices */
      if (k <= 5) {
        uint64_t fr = BIT(1) | BIT(3) | BIT(4) | BIT(6) | BIT(7), want = 0, x = fr;
        for (uint32_t i = 0; i < k; i++) {
          want |= x & (~x + 1);
          x &= x - 1;
        }
        assert_int_equal(choose(t, fr, k), want);
        assert_int_equal(choose_mode(t, fr, k, true), want);
      }
    }
    free(t);
  }
}

static void test_choose_no_topology(void **state) {
  struct gs_topo *empty = calloc(1, sizeof *empty);
  uint64_t s = 0;
  (void)state;
  assert_non_null(empty);
  assert_int_equal(choose(NULL, 0xf0f0, 3), BIT(4) | BIT(5) | BIT(6));
  assert_int_equal(choose(empty, BIT(63) | BIT(2), 2), BIT(63) | BIT(2));
  assert_int_equal(choose(NULL, 0xff, 8), 0xff);
  assert_int_equal(gs_topo_choose(NULL, 0xff, 9, &s), GS_ENOFIT);
  assert_int_equal(gs_topo_choose(NULL, 0, 1, &s), GS_ENOFIT);
  assert_int_equal(gs_topo_choose(NULL, 0xff, 0, &s), GS_EINVAL);
  assert_int_equal(gs_topo_choose(NULL, 0xff, 1, NULL), GS_EINVAL);
  assert_int_equal(s, 0); /* untouched on error */
  free(empty);
}

static void test_choose_errors(void **state) {
  struct gs_topo *t = load("dgx1_v100_topo-m.txt");
  uint64_t s = 42;
  (void)state;
  assert_int_equal(gs_topo_choose(t, 0x07, 4, &s), GS_ENOFIT);
  assert_int_equal(gs_topo_choose(t, 0x1ff, 2, &s), GS_EINVAL); /* GPU8 not in topology */
  assert_int_equal(gs_topo_choose(t, 0xff, 0, &s), GS_EINVAL);
  assert_int_equal(s, 42);
  free(t);
}

/* The objective's worked example (docs/topology.md): a split
 * [NV2 pair, SYS pair] loses to [NV1 pair, PIX pair]. */
static void ex_link(uint32_t a, uint32_t b, uint8_t *l, uint8_t *nv) {
  *nv = 0;
  if (a == 0 && b == 1) {
    *l = GS_LINK_NV;
    *nv = 2;
  } else if (a == 0 && b == 2) {
    *l = GS_LINK_NV;
    *nv = 1;
  } else if (a == 1 && b == 3) {
    *l = GS_LINK_PIX;
  } else {
    *l = GS_LINK_SYS;
  }
}

static void test_choose_strand_costs_more(void **state) {
  struct gs_topo *t = synth(4, ex_link);
  (void)state;
  assert_int_equal(choose(t, 0xf, 2), BIT(0) | BIT(2));
  assert_int_equal(choose_mode(t, 0xf, 2, false), BIT(0) | BIT(2));
  /* once GPU3 is gone nothing is stranded: take the NV2 pair */
  assert_int_equal(choose(t, 0x7, 2), BIT(0) | BIT(1));
  free(t);
}

/* ---- 16 GPUs ------------------------------------------------------------ */

/* A PCIe box: NV4 bridges on pairs, PIX in a quad, NODE in a socket's 8,
 * SYS across sockets. */
static void box16_link(uint32_t a, uint32_t b, uint8_t *l, uint8_t *nv) {
  *nv = 0;
  if (a / 2 == b / 2) {
    *l = GS_LINK_NV;
    *nv = 4;
  } else if (a / 4 == b / 4) {
    *l = GS_LINK_PIX;
  } else if (a / 8 == b / 8) {
    *l = GS_LINK_NODE;
  } else {
    *l = GS_LINK_SYS;
  }
}

/* Irregular: a deterministic hash picks each pair's link. */
static void hash16_link(uint32_t a, uint32_t b, uint8_t *l, uint8_t *nv) {
  uint32_t h = (a * 73856093u) ^ (b * 19349663u);
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  *nv = 0;
  switch (h % 7) {
  case 0:
  case 1:
    *l = GS_LINK_NV;
    *nv = (uint8_t)(1 + h / 7 % 3);
    break;
  case 2:
    *l = GS_LINK_PIX;
    break;
  case 3:
    *l = GS_LINK_PXB;
    break;
  case 4:
    *l = GS_LINK_PHB;
    break;
  case 5:
    *l = GS_LINK_NODE;
    break;
  default:
    *l = GS_LINK_SYS;
  }
}

static void nv6_link(uint32_t a, uint32_t b, uint8_t *l, uint8_t *nv) {
  (void)a;
  (void)b;
  *l = GS_LINK_NV;
  *nv = 6;
}

static void test_choose_16(void **state) {
  struct gs_topo *box = synth(16, box16_link);
  struct gs_topo *irr = synth(16, hash16_link);
  struct gs_topo *dgx2 = synth(16, nv6_link);
  (void)state;
  /* DGX-2 (NVSwitch, NV6 everywhere): lowest indices */
  for (uint32_t k = 1; k <= 16; k++)
    assert_int_equal(choose(dgx2, 0xffff, k), BIT(k) - 1);
  /* the PCIe box: the structure is respected */
  assert_int_equal(choose(box, 0xffff, 2), 0x3);
  assert_int_equal(choose(box, 0xffff, 4), 0xf);
  assert_int_equal(choose(box, 0xffff, 8), 0xff);
  assert_int_equal(choose(box, 0xffff & ~BIT(0), 2), 0xc); /* keep pairs whole */
  assert_int_equal(choose(box, 0xffff & ~BIT(0), 1), BIT(1)); /* the orphan */
  /* every k and a few masks: valid and deterministic, exact or bounded */
  for (uint32_t k = 1; k <= 16; k++) {
    static const uint64_t masks[] = {0xffff, 0x7fff, 0xfffe, 0xbeef, 0x5aff};
    for (size_t i = 0; i < sizeof masks / sizeof masks[0]; i++) {
      struct gs_topo *ts[] = {box, irr};
      for (size_t j = 0; j < 2; j++) {
        uint64_t s1, s2;
        if ((uint32_t)__builtin_popcountll(masks[i]) < k)
          continue;
        s1 = choose(ts[j], masks[i], k);
        s2 = choose(ts[j], masks[i], k);
        assert_int_equal(s1, s2);
      }
    }
  }
  free(box);
  free(irr);
  free(dgx2);
}

/* Exact whenever at most 14 GPUs are free (every 8-GPU node); bounded
 * search on big nodes stays valid and deterministic. */
static void test_choose_paths(void **state) {
  struct gs_topo *irr = synth(16, hash16_link);
  struct gs_topo *big = synth(64, box16_link);
  struct gs_topo_stats st;
  uint64_t s1, s2;
  (void)state;
  for (uint32_t m = 3; m <= 14; m++) {
    for (uint32_t k = 2; k < m; k++) {
      assert_int_equal(gs_topo_choose_ex(irr, BIT(m) - 1, k, GS_TOPO_EXACT_WORK, &s1, &st),
                       GS_EOK);
      assert_true(st.exact);
      assert_true(st.searched);
      assert_true(st.work > 0);
    }
  }
  /* forced bounded search reports itself */
  assert_int_equal(gs_topo_choose_ex(irr, 0xffff, 4, 0, &s1, &st), GS_EOK);
  assert_false(st.exact);
  assert_true(st.searched);
  /* shortcuts search nothing */
  assert_int_equal(gs_topo_choose_ex(irr, 0xffff, 16, GS_TOPO_EXACT_WORK, &s1, &st), GS_EOK);
  assert_false(st.searched);
  assert_int_equal(s1, 0xffff);
  /* 64 GPUs: box16_link scales (pairs NV4, quads PIX, 8s NODE, else SYS) */
  for (uint32_t k = 2; k <= 32; k *= 2) {
    assert_int_equal(gs_topo_choose_ex(big, UINT64_MAX, k, GS_TOPO_EXACT_WORK, &s1, &st),
                     GS_EOK);
    assert_false(st.exact);
    assert_int_equal(__builtin_popcountll(s1), k);
    assert_int_equal(gs_topo_choose(big, UINT64_MAX, k, &s2), GS_EOK);
    assert_int_equal(s1, s2);
    /* the structure is found: k <= 8 stays inside one socket's block */
    if (k <= 8)
      assert_int_equal(__builtin_ctzll(s1) / 8, (63 - __builtin_clzll(s1)) / 8);
  }
  assert_int_equal(choose(big, UINT64_MAX, 2) & 1, 1); /* lowest NV4 pair {0,1} */
  free(irr);
  free(big);
}

/* The bounded search must reach the exact answer's quality on the real
 * 8-GPU topologies (same weakest link and total score of the chosen set). */
static uint32_t set_min(const struct gs_topo *t, uint64_t s) {
  uint32_t min = UINT32_MAX;
  for (uint32_t a = 0; a < t->n; a++)
    for (uint32_t b = a + 1; b < t->n; b++)
      if ((s & BIT(a)) && (s & BIT(b)) && gs_topo_pair_score(t, a, b) < min)
        min = gs_topo_pair_score(t, a, b);
  return min;
}

static void test_bounded_vs_exact_8(void **state) {
  static const char *files[] = {"dgx1_v100_topo-m.txt", "dgx1_v100_topo-mp.txt",
                                "8gpu_nvlink_pairs_topo-m.txt"};
  unsigned same = 0, total = 0;
  (void)state;
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    struct gs_topo *t = load(files[f]);
    for (uint64_t fr = 1; fr < 256; fr++) {
      for (uint32_t k = 2; k < (uint32_t)__builtin_popcountll(fr); k++) {
        uint64_t e = choose_mode(t, fr, k, true), b = choose_mode(t, fr, k, false);
        total++;
        same += e == b || set_min(t, e) == set_min(t, b);
      }
    }
    free(t);
  }
  /* Documented in docs/topology.md; require near agreement. */
  print_message("bounded vs exact on 8 GPUs: %u of %u choices with the same weakest link\n",
                same, total);
  assert_true(same * 100 >= total * 95);
}

static void test_choose_timing_16(void **state) {
  struct gs_topo *irr = synth(16, hash16_link);
  struct timespec t0, t1;
  double worst = 0;
  (void)state;
  for (uint32_t k = 2; k <= 15; k++) {
    double ms;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    (void)choose(irr, 0xffff, k);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    if (ms > worst)
      worst = ms;
  }
  print_message("16 GPUs, worst k: %.2f ms (sanitized build)\n", worst);
  assert_true(worst < 2000.0); /* generous: ASan, shared cores */
  free(irr);
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_cells),
             cmocka_unit_test(test_parse_dgx1),
             cmocka_unit_test(test_parse_dgx1_mp),
             cmocka_unit_test(test_parse_pairs_and_bridges),
             cmocka_unit_test(test_parse_nvswitch),
             cmocka_unit_test(test_parse_partial_dgx2),
             cmocka_unit_test(test_parse_legend_only),
             cmocka_unit_test(test_parse_every_sample),
             cmocka_unit_test(test_parse_layouts),
             cmocka_unit_test(test_parse_garbled),
             cmocka_unit_test(test_parse_caps),
             cmocka_unit_test(test_check),
             cmocka_unit_test(test_pair_score),
             cmocka_unit_test(test_set_score),
             cmocka_unit_test(test_choose_dgx1),
             cmocka_unit_test(test_choose_pairs),
             cmocka_unit_test(test_choose_nvswitch),
             cmocka_unit_test(test_choose_no_topology),
             cmocka_unit_test(test_choose_errors),
             cmocka_unit_test(test_choose_strand_costs_more),
             cmocka_unit_test(test_choose_16),
             cmocka_unit_test(test_choose_paths),
             cmocka_unit_test(test_bounded_vs_exact_8),
             cmocka_unit_test(test_choose_timing_16))
