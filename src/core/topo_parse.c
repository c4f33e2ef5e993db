/* `nvidia-smi topo -m` text → struct gs_topo, cells, and the validator.
 *
 * The parser is strict on purpose: the matrix drives which GPUs a training
 * job gets, so a table it cannot read completely is refused with the line
 * and the reason rather than half-read. It allocates nothing.
 */
#include <gpushare/topo.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- cells -------------------------------------------------------------- */

static const struct {
  const char *name;
  uint8_t link;
} cell_names[] = {
    {"X", GS_LINK_SELF},   {"PIX", GS_LINK_PIX}, {"PXB", GS_LINK_PXB},
    {"PHB", GS_LINK_PHB},  {"NODE", GS_LINK_NODE}, {"SYS", GS_LINK_SYS},
    {"SOC", GS_LINK_SYS}, /* drivers before NODE existed: socket-level link */
};

static enum gs_err cell_parse_span(const char *p, size_t n, uint8_t *ret_link,
                                   uint8_t *ret_nvlinks) {
  if (n >= 3 && p[0] == 'N' && p[1] == 'V') {
    unsigned v = 0;
    /* NV<k>: 1..255 without leading zeros, as nvidia-smi prints it. */
    if (n > 5 || p[2] == '0')
      return GS_EPARSE;
    for (size_t i = 2; i < n; i++) {
      if (p[i] < '0' || p[i] > '9')
        return GS_EPARSE;
      v = v * 10 + (unsigned)(p[i] - '0');
    }
    if (v == 0 || v > 255)
      return GS_EPARSE;
    *ret_link = GS_LINK_NV;
    *ret_nvlinks = (uint8_t)v;
    return GS_EOK;
  }
  for (size_t i = 0; i < sizeof cell_names / sizeof cell_names[0]; i++) {
    if (strlen(cell_names[i].name) == n && memcmp(cell_names[i].name, p, n) == 0) {
      *ret_link = cell_names[i].link;
      *ret_nvlinks = 0;
      return GS_EOK;
    }
  }
  return GS_EPARSE;
}

enum gs_err gs_topo_cell_parse(const char *cell, uint8_t *ret_link, uint8_t *ret_nvlinks) {
  uint8_t link, nv;
  if (cell == NULL || ret_link == NULL || ret_nvlinks == NULL)
    return GS_EINVAL;
  if (cell_parse_span(cell, strlen(cell), &link, &nv) != GS_EOK)
    return GS_EPARSE;
  *ret_link = link;
  *ret_nvlinks = nv;
  return GS_EOK;
}

const char *gs_topo_cell_name(uint8_t link) {
  if (link == GS_LINK_NV)
    return "NV";
  /* the first name of the class: SYS before the old drivers' SOC */
  for (size_t i = 0; i < sizeof cell_names / sizeof cell_names[0]; i++)
    if (cell_names[i].link == link)
      return cell_names[i].name;
  return "?";
}

const char *gs_topo_cell_format(uint8_t link, uint8_t nvlinks, char buf[GS_TOPO_CELL_MAX]) {
  if (link == GS_LINK_NV) {
    if (nvlinks == 0)
      snprintf(buf, GS_TOPO_CELL_MAX, "?");
    else
      snprintf(buf, GS_TOPO_CELL_MAX, "NV%u", (unsigned)nvlinks);
  } else {
    snprintf(buf, GS_TOPO_CELL_MAX, "%s", gs_topo_cell_name(link));
  }
  return buf;
}

/* ---- validator ---------------------------------------------------------- */

enum gs_err gs_topo_check(const struct gs_topo *t, struct gs_diag *diag) {
  char where[32], c1[GS_TOPO_CELL_MAX], c2[GS_TOPO_CELL_MAX];
  if (t == NULL)
    return GS_EINVAL;
  if (t->n == 0 || t->n > GS_MAX_GPUS) {
    gs_diag_set(diag, "n", "topology has %u GPUs, expected 1..%u", (unsigned)t->n,
                (unsigned)GS_MAX_GPUS);
    return GS_EPARSE;
  }
  for (uint32_t i = 0; i < t->n; i++) {
    for (uint32_t j = 0; j < t->n; j++) {
      uint8_t l = t->link[i * t->n + j], nv = t->nvlinks[i * t->n + j];
      snprintf(where, sizeof where, "GPU%u,GPU%u", (unsigned)i, (unsigned)j);
      if ((i == j) != (l == GS_LINK_SELF)) {
        gs_diag_set(diag, where, i == j ? "diagonal cell is not X" : "X off the diagonal");
        return GS_EPARSE;
      }
      if (l == GS_LINK_UNKNOWN || l > GS_LINK_SELF) {
        gs_diag_set(diag, where, "unknown link class %u", (unsigned)l);
        return GS_EPARSE;
      }
      if ((l == GS_LINK_NV) != (nv != 0)) {
        gs_diag_set(diag, where, "link class %s with %u NVLinks", gs_topo_cell_name(l),
                    (unsigned)nv);
        return GS_EPARSE;
      }
      if (l != t->link[j * t->n + i] || nv != t->nvlinks[j * t->n + i]) {
        gs_diag_set(diag, where, "matrix not symmetric: %s here, %s at GPU%u,GPU%u",
                    gs_topo_cell_format(l, nv, c1),
                    gs_topo_cell_format(t->link[j * t->n + i], t->nvlinks[j * t->n + i], c2),
                    (unsigned)j, (unsigned)i);
        return GS_EPARSE;
      }
    }
  }
  return GS_EOK;
}

/* ---- text parser -------------------------------------------------------- */

struct span {
  const char *p;
  size_t n;
};

static bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Next whitespace-separated token of [*pos, end); false at the end. */
static bool next_token(const char **pos, const char *end, struct span *ret) {
  const char *p = *pos;
  while (p < end && is_blank(*p))
    p++;
  if (p == end) {
    *pos = p;
    return false;
  }
  ret->p = p;
  while (p < end && !is_blank(*p))
    p++;
  ret->n = (size_t)(p - ret->p);
  *pos = p;
  return true;
}

static bool span_is(struct span s, const char *lit) {
  return strlen(lit) == s.n && memcmp(s.p, lit, s.n) == 0;
}

/* "GPU<digits>": true and *ret = the index; a leading zero ("GPU01") or a
 * huge number gives UINT32_MAX, which matches no expected index. */
static bool span_gpu_name(struct span s, uint32_t *ret) {
  uint32_t v = 0;
  if (s.n < 4 || memcmp(s.p, "GPU", 3) != 0)
    return false;
  for (size_t i = 3; i < s.n; i++) {
    if (s.p[i] < '0' || s.p[i] > '9')
      return false;
    v = v > 100000000u ? UINT32_MAX : v * 10 + (uint32_t)(s.p[i] - '0');
  }
  *ret = (s.p[3] == '0' && s.n > 4) ? UINT32_MAX : v;
  return true;
}

/* Quotes an input token for a diagnostic: printable ASCII only, bounded. */
static const char *quote(struct span s, char out[40]) {
  size_t o = 0, i;
  out[o++] = '"';
  for (i = 0; i < s.n && i < 24; i++)
    out[o++] = (s.p[i] >= 0x20 && s.p[i] < 0x7f) ? s.p[i] : '?';
  if (i < s.n) {
    memcpy(out + o, "...", 3);
    o += 3;
  }
  out[o++] = '"';
  out[o] = '\0';
  return out;
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void diag_at(struct gs_diag *diag, size_t line, const char *fmt, ...) {
  char where[32], text[sizeof diag->text];
  va_list ap;
  if (diag == NULL || diag->text[0] != '\0')
    return;
  snprintf(where, sizeof where, "line %zu", line);
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  gs_diag_set(diag, where, "%s", text);
}

enum parse_state { SEEK_HEADER, IN_ROWS, AFTER_TABLE };

/* Reads the header row's GPU columns: GPU0..GPUn-1, then anything that is
 * not a GPU name (NIC columns, "CPU Affinity", ...). */
static enum gs_err parse_header(const char *p, const char *end, size_t line, uint32_t *ret_n,
                                struct gs_diag *diag) {
  struct span tok;
  uint32_t n = 0, d;
  bool gpus_done = false;
  char q[40];
  while (next_token(&p, end, &tok)) {
    if (!span_gpu_name(tok, &d)) {
      gpus_done = true;
      continue;
    }
    if (gpus_done) {
      diag_at(diag, line, "header: GPU column %s after non-GPU columns", quote(tok, q));
      return GS_EPARSE;
    }
    if (d != n) {
      diag_at(diag, line,
              "header: column %s where GPU%u was expected (GPU columns must be GPU0..GPUn-1 "
              "in order)",
              quote(tok, q), (unsigned)n);
      return GS_EPARSE;
    }
    if (++n > GS_MAX_GPUS) {
      diag_at(diag, line, "header names more than %u GPUs", (unsigned)GS_MAX_GPUS);
      return GS_ETOOBIG;
    }
  }
  *ret_n = n;
  return GS_EOK;
}

/* Reads row GPU<i> (its label already consumed) into t, checking the cells
 * against the diagonal and against the rows above. */
static enum gs_err parse_row(const char *p, const char *end, size_t line, uint32_t i,
                             struct gs_topo *t, struct gs_diag *diag) {
  struct span tok;
  char q[40], c1[GS_TOPO_CELL_MAX], c2[GS_TOPO_CELL_MAX];
  for (uint32_t j = 0; j < t->n; j++) {
    uint8_t link, nv;
    if (!next_token(&p, end, &tok)) {
      diag_at(diag, line, "row GPU%u has %u of %u GPU cells (partial table)", (unsigned)i,
              (unsigned)j, (unsigned)t->n);
      return GS_EPARSE;
    }
    if (cell_parse_span(tok.p, tok.n, &link, &nv) != GS_EOK) {
      diag_at(diag, line, "unknown link %s (row GPU%u, column GPU%u)", quote(tok, q),
              (unsigned)i, (unsigned)j);
      return GS_EPARSE;
    }
    if (i == j && link != GS_LINK_SELF) {
      diag_at(diag, line, "row GPU%u: cell GPU%u is %s, expected X on the diagonal",
              (unsigned)i, (unsigned)j, quote(tok, q));
      return GS_EPARSE;
    }
    if (i != j && link == GS_LINK_SELF) {
      diag_at(diag, line, "row GPU%u: cell GPU%u is X off the diagonal", (unsigned)i,
              (unsigned)j);
      return GS_EPARSE;
    }
    if (j < i && (t->link[j * t->n + i] != link || t->nvlinks[j * t->n + i] != nv)) {
      diag_at(diag, line, "matrix not symmetric: GPU%u,GPU%u is %s but GPU%u,GPU%u is %s",
              (unsigned)i, (unsigned)j, gs_topo_cell_format(link, nv, c1), (unsigned)j,
              (unsigned)i,
              gs_topo_cell_format(t->link[j * t->n + i], t->nvlinks[j * t->n + i], c2));
      return GS_EPARSE;
    }
    t->link[i * t->n + j] = link;
    t->nvlinks[i * t->n + j] = nv;
  }
  /* Cells after the GPU columns (NICs, affinities) are ignored. */
  return GS_EOK;
}

enum gs_err gs_topo_parse_text(const char *text, size_t len, struct gs_topo *ret,
                               struct gs_diag *diag) {
  struct gs_topo t;
  enum parse_state state = SEEK_HEADER;
  const char *p, *end, *eol;
  size_t line = 0;
  uint32_t row = 0;
  char q[40];
  enum gs_err err;

  if (text == NULL || ret == NULL)
    return GS_EINVAL;
  if (len > GS_TOPO_TEXT_MAX) {
    gs_diag_set(diag, "input", "input is over %u bytes", (unsigned)GS_TOPO_TEXT_MAX);
    return GS_ETOOBIG;
  }
  memset(&t, 0, sizeof t);
  end = text + len;
  for (p = text; p < end; p = eol + 1) {
    const char *lp;
    struct span first, second;
    bool has_first;
    uint32_t d;

    eol = memchr(p, '\n', (size_t)(end - p));
    if (eol == NULL)
      eol = end;
    line++;
    lp = p;
    has_first = next_token(&lp, eol, &first);

    switch (state) {
    case SEEK_HEADER:
      if (!has_first || !span_is(first, "GPU0"))
        break;
      /* The header is "GPU0 GPU1 ..." (label column empty); a row reads
       * "GPU0 X ...". A row before any header is a garbled table. */
      {
        const char *sp = lp;
        if (next_token(&sp, eol, &second) && span_is(second, "X")) {
          diag_at(diag, line, "row GPU0 before any header row");
          return GS_EPARSE;
        }
      }
      err = parse_header(p, eol, line, &t.n, diag);
      if (err != GS_EOK)
        return err;
      state = IN_ROWS;
      break;
    case IN_ROWS:
      if (!has_first || !span_gpu_name(first, &d) || d != row) {
        if (has_first && span_gpu_name(first, &d)) {
          diag_at(diag, line, "expected row GPU%u, found %s", (unsigned)row, quote(first, q));
        } else if (has_first) {
          diag_at(diag, line, "partial table: %s where row GPU%u was expected (%u of %u GPU rows)",
                  quote(first, q), (unsigned)row, (unsigned)row, (unsigned)t.n);
        } else {
          diag_at(diag, line,
                  "partial table: blank line where row GPU%u was expected (%u of %u GPU rows)",
                  (unsigned)row, (unsigned)row, (unsigned)t.n);
        }
        return GS_EPARSE;
      }
      err = parse_row(lp, eol, line, row, &t, diag);
      if (err != GS_EOK)
        return err;
      if (++row == t.n)
        state = AFTER_TABLE;
      break;
    case AFTER_TABLE:
      /* NIC rows and the legend follow; another GPU row or header does not
       * belong to one node's output. */
      if (has_first && span_gpu_name(first, &d)) {
        diag_at(diag, line, "unexpected %s after the GPU0..GPU%u rows (one node's table expected)",
                quote(first, q), (unsigned)(t.n - 1));
        return GS_EPARSE;
      }
      break;
    }
    if (eol == end)
      break;
  }
  if (state == SEEK_HEADER) {
    gs_diag_set(diag, "input", "no GPU table found: expected a header row \"GPU0 GPU1 ...\"");
    return GS_EPARSE;
  }
  if (state == IN_ROWS) {
    gs_diag_set(diag, "end of input",
                "partial table: input ends where row GPU%u was expected (%u of %u GPU rows)",
                (unsigned)row, (unsigned)row, (unsigned)t.n);
    return GS_EPARSE;
  }
  memcpy(ret, &t, sizeof t);
  return GS_EOK;
}
