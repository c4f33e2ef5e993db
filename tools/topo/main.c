/* gpushare-topo: reads `nvidia-smi topo -m` text (a file, or stdin), or with
 * --nvml the same matrix from NVML (libnvidia-ml.so.1, loaded at run time:
 * src/node), and prints the value of the node annotation gpushare.io/topology
 * (docs/contract.md §7):
 *   {"links":[["X","NV1",...],...]}
 * Exit status: 0 ok, 1 I/O error, 2 usage error or text it cannot read.
 * The JSON is written by hand: its shape is fixed and every cell is one of
 * the parser's own names, so no escaping is ever needed.
 */
#include <gpushare/nvml.h>
#include <gpushare/topo.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "gpushare-topo"

static void usage(FILE *out) {
  fprintf(out,
          "Usage: nvidia-smi topo -m | " PROG "\n"
          "       " PROG " FILE\n"
          "       " PROG " --nvml[=LIBRARY]\n"
          "\n"
          "Reads the output of `nvidia-smi topo -m` from FILE (\"-\" or none: standard\n"
          "input) and prints the\n"
          "value of the node annotation gpushare.io/topology, e.g.\n"
          "  {\"links\":[[\"X\",\"NV2\"],[\"NV2\",\"X\"]]}\n"
          "Text before and after the table, NIC rows and affinity columns are ignored;\n"
          "a partial or garbled table is refused.\n"
          "\n"
          "With --nvml the matrix comes from NVML instead (LIBRARY, default\n"
          GS_NVML_LIBRARY " through the loader's search path): NVLinks per GPU pair,\n"
          "else the PCIe common ancestor; the same text nvidia-smi would give.\n"
          "\n"
          "  kubectl annotate node NODE gpushare.io/topology=\"$(nvidia-smi topo -m | " PROG
          ")\"\n"
          "\n"
          "Options:\n"
          "  -h, --help     this text\n"
          "  --version      print the version\n"
          "  --nvml[=LIB]   read the GPUs' matrix from NVML, not from text\n"
          "\n"
          "Exit status: 0 ok, 1 input/output error, 2 usage error or unreadable table.\n");
}

/* Reads all of in (named name) into a malloc'd buffer of at most
 * GS_TOPO_TEXT_MAX bytes. Returns 0, 1 (I/O error) or 2 (too big). */
static int read_all(FILE *in, const char *name, char **ret_buf, size_t *ret_len) {
  size_t cap = GS_TOPO_TEXT_MAX + 1, len = 0, got;
  char *buf = malloc(cap);
  if (buf == NULL) {
    fprintf(stderr, PROG ": out of memory\n");
    return 1;
  }
  while ((got = fread(buf + len, 1, cap - len, in)) > 0) {
    len += got;
    if (len == cap)
      break;
  }
  if (ferror(in)) {
    fprintf(stderr, PROG ": cannot read %s: %s\n", name, strerror(errno));
    free(buf);
    return 1;
  }
  if (len > GS_TOPO_TEXT_MAX) {
    fprintf(stderr, PROG ": input is over %u bytes; expected one `nvidia-smi topo -m` output\n",
            (unsigned)GS_TOPO_TEXT_MAX);
    free(buf);
    return 2;
  }
  *ret_buf = buf;
  *ret_len = len;
  return 0;
}

static void print_links(const struct gs_topo *t) {
  char cell[GS_TOPO_CELL_MAX];
  fputs("{\"links\":[", stdout);
  for (uint32_t i = 0; i < t->n; i++) {
    fputs(i ? ",[" : "[", stdout);
    for (uint32_t j = 0; j < t->n; j++) {
      gs_topo_cell_format(t->link[i * t->n + j], t->nvlinks[i * t->n + j], cell);
      printf("%s\"%s\"", j ? "," : "", cell);
    }
    fputc(']', stdout);
  }
  fputs("]}\n", stdout);
}

/* --nvml: the matrix from the NVML library lib (NULL: the default). */
static int from_nvml(const char *lib, struct gs_topo *topo) {
  struct gs_nvml *nv = NULL;
  struct gs_diag diag;
  enum gs_err err;

  memset(&diag, 0, sizeof diag);
  err = gs_nvml_open(lib, &nv, &diag);
  if (err == GS_EOK) {
    err = gs_nvml_topo(nv, topo, &diag);
    gs_nvml_close(nv);
  }
  if (err != GS_EOK) {
    fprintf(stderr, PROG ": cannot read the topology from NVML: %s%s%s\n", diag.where,
            diag.where[0] ? ": " : "", diag.text[0] ? diag.text : gs_strerror(err));
    return 1;
  }
  return 0;
}

static int finish(const struct gs_topo *topo) {
  print_links(topo);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, PROG ": cannot write standard output: %s\n", strerror(errno));
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  struct gs_topo *topo;
  struct gs_diag diag;
  char *text = NULL;
  size_t len = 0;
  const char *path = NULL, *nvml_lib = NULL;
  bool nvml = false;
  enum gs_err err;
  int rc;

  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
    }
    if (strcmp(argv[i], "--version") == 0) {
      printf(PROG " %s\n", GS_VERSION);
      return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
    }
    if (strcmp(argv[i], "--nvml") == 0 || strncmp(argv[i], "--nvml=", 7) == 0) {
      nvml = true;
      nvml_lib = argv[i][6] == '=' && argv[i][7] != '\0' ? argv[i] + 7 : NULL;
      continue;
    }
    if (path != NULL || (argv[i][0] == '-' && argv[i][1] != '\0')) {
      fprintf(stderr, PROG ": unknown argument '%s' (one FILE, or the table on stdin; try --help)\n",
              argv[i]);
      return 2;
    }
    path = argv[i];
  }

  if (nvml) {
    if (path != NULL) {
      fprintf(stderr, PROG ": --nvml reads no FILE (try --help)\n");
      return 2;
    }
    topo = malloc(sizeof *topo);
    if (topo == NULL) {
      fprintf(stderr, PROG ": out of memory\n");
      return 1;
    }
    rc = from_nvml(nvml_lib, topo);
    if (rc == 0)
      rc = finish(topo);
    free(topo);
    return rc;
  }
  if (path == NULL || strcmp(path, "-") == 0) {
    rc = read_all(stdin, "standard input", &text, &len);
  } else {
    FILE *in = fopen(path, "rb");
    if (in == NULL) {
      fprintf(stderr, PROG ": cannot open %s: %s\n", path, strerror(errno));
      return 1;
    }
    rc = read_all(in, path, &text, &len);
    fclose(in);
  }
  if (rc != 0)
    return rc;
  topo = malloc(sizeof *topo);
  if (topo == NULL) {
    fprintf(stderr, PROG ": out of memory\n");
    free(text);
    return 1;
  }
  memset(&diag, 0, sizeof diag);
  err = gs_topo_parse_text(text, len, topo, &diag);
  free(text);
  if (err != GS_EOK) {
    if (diag.text[0] != '\0')
      fprintf(stderr, PROG ": cannot read the topology table: %s%s%s\n", diag.where,
              diag.where[0] ? ": " : "", diag.text);
    else
      fprintf(stderr, PROG ": cannot read the topology table: %s\n", gs_strerror(err));
    free(topo);
    return 2;
  }
  rc = finish(topo);
  free(topo);
  return rc;
}
