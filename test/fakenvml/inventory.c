/* The fake NVML's inventory file: one statement a line (docs/fake-nvml.md).
 *
 *   driver 550.54.15
 *   cuda 12040
 *   init-error 9
 *   gpu mem=16384 uuid=GPU-0 minor=0 bus=00000000:06:00.0 arch=7 cc=7.0 name=Tesla V100
 *   row X NV1 NV2 SYS       (one per GPU, nvidia-smi topo -m cells)
 *   nvswitch 12             (links each GPU has into an NVSwitch fabric)
 *   xid 0 79                (an XID event on GPU 0, by index or UUID)
 *   unhealthy GPU-1         (the same as: xid GPU-1 48)
 *
 * '#' starts a comment at the start of a line or after a blank. Strict: an
 * unknown word, a bad number or a row that disagrees with the GPUs is an
 * error, so a test's typo is never a silent default.
 */
#include "fake.h"
#include "nvml_abi.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rd {
  const char *path;
  unsigned line;
  char *err;
  size_t errlen;
};

static bool fail(struct rd *rd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(struct rd *rd, const char *fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  snprintf(rd->err, rd->errlen, "%s:%u: %s", rd->path, rd->line, text);
  return false;
}

static bool parse_ull(const char *s, unsigned long long max, unsigned long long *ret) {
  char *end;
  unsigned long long v;
  if (!isdigit((unsigned char)s[0]))
    return false;
  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v > max)
    return false;
  *ret = v;
  return true;
}

/* "00000000:06:00.0", "0000:06:00.0" or "06:00.0" (hex, any case). */
bool fk_parse_bus_id(const char *s, unsigned *domain, unsigned *bus, unsigned *dev) {
  unsigned d = 0, b, v, f;
  int used = 0;
  if (sscanf(s, "%x:%x:%x.%x%n", &d, &b, &v, &f, &used) == 4 && s[used] == '\0') {
  } else if (used = 0, d = 0, sscanf(s, "%x:%x.%x%n", &b, &v, &f, &used) == 3 && s[used] == '\0') {
  } else {
    return false;
  }
  if (b > 0xff || v > 0x1f || f != 0)
    return false;
  *domain = d;
  *bus = b;
  *dev = v;
  return true;
}

static bool gpu_ref(struct rd *rd, const struct fk_inv *inv, const char *s, unsigned *ret) {
  unsigned long long v;
  if (parse_ull(s, FK_MAX_GPUS - 1, &v)) {
    if (v >= inv->n)
      return fail(rd, "GPU %llu: only %u gpu lines above", v, inv->n);
    *ret = (unsigned)v;
    return true;
  }
  for (unsigned i = 0; i < inv->n; i++)
    if (strcmp(inv->gpu[i].uuid, s) == 0) {
      *ret = i;
      return true;
    }
  return fail(rd, "no GPU '%s' (an index or the UUID of a gpu line above)", s);
}

static bool cell(const char *s, unsigned char *ret_nv, unsigned char *ret_level) {
  static const struct {
    const char *name;
    unsigned char level;
  } names[] = {{"PIX", NVML_TOPOLOGY_SINGLE},    {"PXB", NVML_TOPOLOGY_MULTIPLE},
               {"PHB", NVML_TOPOLOGY_HOSTBRIDGE}, {"NODE", NVML_TOPOLOGY_NODE},
               {"SYS", NVML_TOPOLOGY_SYSTEM},     {"SOC", NVML_TOPOLOGY_SYSTEM}};
  unsigned long long k;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(s, names[i].name) == 0) {
      *ret_nv = 0;
      *ret_level = names[i].level;
      return true;
    }
  if (strncmp(s, "NV", 2) == 0 && parse_ull(s + 2, 255, &k) && k > 0 && s[2] != '0') {
    *ret_nv = (unsigned char)k;
    *ret_level = NVML_TOPOLOGY_SYSTEM; /* the text does not say which PCIe path */
    return true;
  }
  return false;
}

static bool gpu_line(struct rd *rd, struct fk_inv *inv, char *rest) {
  struct fk_gpu *g;
  bool has_mem = false, has_uuid = false, has_bus = false, has_minor = false;
  unsigned long long v;
  if (inv->n == FK_MAX_GPUS)
    return fail(rd, "more than %u GPUs", FK_MAX_GPUS);
  if (inv->rows > 0)
    return fail(rd, "gpu line after the matrix rows");
  g = &inv->gpu[inv->n];
  snprintf(g->name, sizeof g->name, "NVIDIA Fake GPU");
  g->arch = NVML_DEVICE_ARCH_VOLTA;
  g->cc_major = 7;
  g->cc_minor = 0;
  while (*rest != '\0') {
    char *tok = rest, *eq, *end;
    if (strncmp(tok, "name=", 5) == 0) { /* the rest of the line */
      if (strlen(tok + 5) == 0 || strlen(tok + 5) >= sizeof g->name)
        return fail(rd, "name: 1 to %zu characters", sizeof g->name - 1);
      strcpy(g->name, tok + 5);
      break;
    }
    end = tok + strcspn(tok, " \t");
    rest = end + strspn(end, " \t");
    *end = '\0';
    eq = strchr(tok, '=');
    if (eq == NULL)
      return fail(rd, "'%s': expected key=value", tok);
    *eq++ = '\0';
    if (strcmp(tok, "mem") == 0) {
      if (!parse_ull(eq, 1ull << 30, &v) || v == 0)
        return fail(rd, "mem=%s: MiB, a positive number", eq);
      g->mem_mib = v;
      has_mem = true;
    } else if (strcmp(tok, "uuid") == 0) {
      if (strlen(eq) == 0 || strlen(eq) >= NVML_DEVICE_UUID_BUFFER_SIZE)
        return fail(rd, "uuid: 1 to %d characters", NVML_DEVICE_UUID_BUFFER_SIZE - 1);
      for (unsigned i = 0; i < inv->n; i++)
        if (strcmp(inv->gpu[i].uuid, eq) == 0)
          return fail(rd, "uuid %s: already GPU %u's", eq, i);
      strcpy(g->uuid, eq);
      has_uuid = true;
    } else if (strcmp(tok, "minor") == 0) {
      if (!parse_ull(eq, 255, &v))
        return fail(rd, "minor=%s: 0..255", eq);
      g->minor = (unsigned)v;
      has_minor = true;
    } else if (strcmp(tok, "bus") == 0) {
      if (!fk_parse_bus_id(eq, &g->domain, &g->bus, &g->dev))
        return fail(rd, "bus=%s: a PCI address such as 00000000:06:00.0", eq);
      has_bus = true;
    } else if (strcmp(tok, "arch") == 0) {
      if (!parse_ull(eq, 255, &v))
        return fail(rd, "arch=%s: an nvmlDeviceArchitecture_t number", eq);
      g->arch = (unsigned)v;
    } else if (strcmp(tok, "cc") == 0) {
      int used = 0;
      if (sscanf(eq, "%d.%d%n", &g->cc_major, &g->cc_minor, &used) != 2 || eq[used] != '\0')
        return fail(rd, "cc=%s: MAJOR.MINOR", eq);
    } else {
      return fail(rd, "unknown gpu key '%s' (mem, uuid, minor, bus, arch, cc, name)", tok);
    }
  }
  if (!has_mem || !has_uuid)
    return fail(rd, "a gpu needs mem= and uuid=");
  if (!has_minor)
    g->minor = inv->n;
  if (!has_bus) {
    g->domain = 0;
    g->bus = 0x10 + inv->n;
    g->dev = 0;
  }
  for (unsigned i = 0; i < inv->n; i++) {
    if (inv->gpu[i].minor == g->minor)
      return fail(rd, "minor %u: already GPU %u's", g->minor, i);
    if (inv->gpu[i].domain == g->domain && inv->gpu[i].bus == g->bus &&
        inv->gpu[i].dev == g->dev)
      return fail(rd, "bus id: already GPU %u's", i);
  }
  inv->n++;
  return true;
}

static bool row_line(struct rd *rd, struct fk_inv *inv, char *rest) {
  unsigned i = inv->rows, j = 0;
  if (i >= inv->n)
    return fail(rd, "row %u: only %u gpu lines", i, inv->n);
  while (*rest != '\0') {
    char *tok = rest, *end = tok + strcspn(tok, " \t");
    unsigned char nv, level;
    rest = end + strspn(end, " \t");
    *end = '\0';
    if (j >= inv->n)
      return fail(rd, "row %u: more than %u cells", i, inv->n);
    if (i == j) {
      if (strcmp(tok, "X") != 0)
        return fail(rd, "row %u: cell %u must be X", i, j);
      nv = 0;
      level = NVML_TOPOLOGY_INTERNAL;
    } else if (!cell(tok, &nv, &level)) {
      return fail(rd, "row %u: '%s' is not X, NV<k>, PIX, PXB, PHB, NODE or SYS", i, tok);
    }
    if (j < i && (inv->nv[j][i] != nv || inv->level[j][i] != level))
      return fail(rd, "row %u: cell %u differs from row %u's cell %u", i, j, j, i);
    inv->nv[i][j] = nv;
    inv->level[i][j] = level;
    j++;
  }
  if (j != inv->n)
    return fail(rd, "row %u: %u cells for %u GPUs", i, j, inv->n);
  inv->rows++;
  inv->has_rows = true;
  return true;
}

static bool add_event(struct rd *rd, struct fk_inv *inv, unsigned gpu, unsigned long long xid) {
  if (inv->nevents == FK_MAX_EVENTS)
    return fail(rd, "more than %u events", FK_MAX_EVENTS);
  inv->ev[inv->nevents].gpu = gpu;
  inv->ev[inv->nevents].xid = xid;
  inv->nevents++;
  return true;
}

static bool statement(struct rd *rd, struct fk_inv *inv, char *line) {
  char *word = line, *rest, *end;
  unsigned long long v;
  end = word + strcspn(word, " \t");
  rest = end + strspn(end, " \t");
  *end = '\0';
  if (strcmp(word, "gpu") == 0)
    return gpu_line(rd, inv, rest);
  if (strcmp(word, "row") == 0)
    return row_line(rd, inv, rest);
  if (strcmp(word, "driver") == 0) {
    if (strlen(rest) == 0 || strlen(rest) >= sizeof inv->driver || strpbrk(rest, " \t"))
      return fail(rd, "driver: one word of 1 to %zu characters", sizeof inv->driver - 1);
    strcpy(inv->driver, rest);
    return true;
  }
  if (strcmp(word, "cuda") == 0) {
    if (!parse_ull(rest, 99999, &v))
      return fail(rd, "cuda '%s': a number such as 12040", rest);
    inv->cuda = (int)v;
    return true;
  }
  if (strcmp(word, "init-error") == 0) {
    if (!parse_ull(rest, 999, &v) || v == 0)
      return fail(rd, "init-error '%s': an nvmlReturn_t code, not 0", rest);
    inv->init_error = (int)v;
    return true;
  }
  if (strcmp(word, "nvswitch") == 0) {
    if (!parse_ull(rest, FK_LINKS_MAX, &v) || v == 0)
      return fail(rd, "nvswitch '%s': links per GPU, 1..%d", rest, FK_LINKS_MAX);
    inv->nvswitch = (unsigned)v;
    return true;
  }
  if (strcmp(word, "xid") == 0 || strcmp(word, "unhealthy") == 0) {
    char *ref = rest;
    unsigned gpu = 0;
    end = ref + strcspn(ref, " \t");
    rest = end + strspn(end, " \t");
    *end = '\0';
    if (!gpu_ref(rd, inv, ref, &gpu))
      return false;
    if (word[0] == 'u') {
      if (*rest != '\0')
        return fail(rd, "unhealthy takes one GPU");
      return add_event(rd, inv, gpu, 48); /* a double-bit ECC error: critical */
    }
    if (!parse_ull(rest, 0xffffffffull, &v))
      return fail(rd, "xid '%s': a number", rest);
    return add_event(rd, inv, gpu, v);
  }
  return fail(rd, "unknown statement '%s' (gpu, row, nvswitch, xid, unhealthy, driver, cuda, "
                  "init-error)", word);
}

/* Links per GPU: NVSwitch links first, then one per NV<k> link to a peer. */
static bool check_links(struct rd *rd, struct fk_inv *inv) {
  if (inv->has_rows && inv->rows != inv->n)
    return fail(rd, "%u matrix rows for %u GPUs", inv->rows, inv->n);
  for (unsigned i = 0; i < inv->n; i++) {
    unsigned total = inv->nvswitch;
    for (unsigned j = 0; j < inv->n; j++)
      total += inv->nv[i][j];
    if (total > FK_LINKS_MAX)
      return fail(rd, "GPU %u has %u NVLinks, a GPU has at most %d (an NVSwitch fabric is "
                      "'nvswitch K', not NV<K> rows)", i, total, FK_LINKS_MAX);
  }
  return true;
}

bool fk_inv_load(const char *path, struct fk_inv *inv, char *err, size_t errlen) {
  struct rd rd = {path, 0, err, errlen};
  char *line = NULL;
  size_t cap = 0, total = 0;
  ssize_t got;
  bool ok = true;
  FILE *f;

  memset(inv, 0, sizeof *inv);
  snprintf(inv->driver, sizeof inv->driver, "550.54.15");
  inv->cuda = 12040;
  f = fopen(path, "r");
  if (f == NULL)
    return fail(&rd, "cannot open: %s", strerror(errno));
  while (ok && (got = getline(&line, &cap, f)) >= 0) {
    char *s = line, *hash;
    rd.line++;
    total += (size_t)got;
    if (total > FK_FILE_MAX || (size_t)got > FK_LINE_MAX) {
      ok = fail(&rd, "over %u bytes (or a line over %u)", FK_FILE_MAX, FK_LINE_MAX);
      break;
    }
    for (hash = strchr(s, '#'); hash != NULL; hash = strchr(hash + 1, '#'))
      if (hash == s || hash[-1] == ' ' || hash[-1] == '\t') {
        *hash = '\0';
        break;
      }
    s += strspn(s, " \t\r\n");
    for (size_t n = strlen(s); n > 0 && isspace((unsigned char)s[n - 1]); n--)
      s[n - 1] = '\0';
    if (*s != '\0')
      ok = statement(&rd, inv, s);
  }
  if (ok && ferror(f))
    ok = fail(&rd, "cannot read: %s", strerror(errno));
  free(line);
  fclose(f);
  if (ok)
    ok = check_links(&rd, inv);
  return ok;
}
