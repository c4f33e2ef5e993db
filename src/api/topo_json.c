/* The node topology annotation (docs/contract.md §7):
 * {"links":[["X","NV1",...],...]} ↔ struct gs_topo.
 *
 * Cells are the legend of `nvidia-smi topo -m`: X (a GPU to itself, the
 * diagonal only), NV<k> (k bonded NVLinks, 1..255), PIX, PXB, PHB, NODE,
 * SYS; SOC is the pre-NODE name of SYS in old drivers and is read as SYS.
 * One grammar with gpushare-topo, which prints the annotation: cells are
 * read by the core's gs_topo_cell_parse and the matrix is checked by
 * gs_topo_check (symmetric), so the annotation means what the CLI meant.
 */
#include "api_internal.h"
#include "alloc.h"

#include <gpushare/topo.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOPO_TEXT_MAX (256u * 1024u)

/* One cell; false if text is not a link class. */
static bool cell_parse(const char *text, uint8_t *ret_link, uint8_t *ret_nv) {
  return gs_topo_cell_parse(text, ret_link, ret_nv) == GS_EOK;
}

static enum gs_err links_decode(const json_t *links, struct gs_topo *topo,
                                struct gs_diag *diag) {
  const json_t *row, *cell;
  char where[GS__API_PATH_MAX];
  size_t n = json_array_size(links), i, j;

  if (!json_is_array(links)) {
    gs_diag_set(diag, "links", "missing or not an array");
    return GS_EPARSE;
  }
  if (n == 0) {
    gs_diag_set(diag, "links", "no GPUs");
    return GS_EPARSE;
  }
  if (n > GS_MAX_GPUS) {
    gs_diag_set(diag, "links", "%zu GPUs, more than the limit of %d", n, GS_MAX_GPUS);
    return GS_ETOOBIG;
  }
  topo->n = (uint32_t)n;
  json_array_foreach(links, i, row) {
    gs__api_path(where, "links[%zu]", i);
    if (!json_is_array(row) || json_array_size(row) != n) {
      gs_diag_set(diag, where, "must be an array of %zu cells (a square matrix)", n);
      return GS_EPARSE;
    }
    json_array_foreach(row, j, cell) {
      uint8_t link, nv;
      gs__api_path(where, "links[%zu][%zu]", i, j);
      if (!json_is_string(cell)) {
        gs_diag_set(diag, where, "must be a string");
        return GS_EPARSE;
      }
      if (!cell_parse(json_string_value(cell), &link, &nv)) {
        gs_diag_set(diag, where,
                    "unknown link \"%s\" (expected X, NV1..NV255, PIX, PXB, PHB, NODE, SYS)",
                    json_string_value(cell));
        return GS_EPARSE;
      }
      if ((i == j) != (link == GS_LINK_SELF)) {
        gs_diag_set(diag, where, i == j ? "the diagonal must be \"X\""
                                        : "\"X\" is allowed on the diagonal only");
        return GS_EPARSE;
      }
      topo->link[i * n + j] = link;
      topo->nvlinks[i * n + j] = nv;
    }
  }
  return GS_EOK;
}

enum gs_err gs_api_topo_decode(const char *json_text, struct gs_topo *ret,
                               struct gs_diag *diag) {
  struct gs_topo *topo;
  json_t *doc;
  json_error_t jerr;
  enum gs_err err;

  if (json_text == NULL) {
    gs_diag_set(diag, "", "no topology text");
    return GS_EPARSE;
  }
  if (strlen(json_text) > TOPO_TEXT_MAX) {
    gs_diag_set(diag, "", "topology is longer than %u bytes", TOPO_TEXT_MAX);
    return GS_ETOOBIG;
  }
  doc = gs__api_loadb(json_text, strlen(json_text), JSON_REJECT_DUPLICATES, &jerr, &err);
  if (doc == NULL) {
    if (err == GS_ENOMEM) {
      gs_diag_set(diag, "", "out of memory");
      return GS_ENOMEM;
    }
    gs_diag_set(diag, "", "invalid JSON at line %d column %d: %s", jerr.line, jerr.column,
                jerr.text);
    return GS_EPARSE;
  }
  /* The struct is 8 KiB: build it on the heap, copy out on success. */
  topo = gs_calloc(1, sizeof *topo);
  if (topo == NULL) {
    err = GS_ENOMEM;
    goto out_doc;
  }
  if (!json_is_object(doc)) {
    gs_diag_set(diag, "", "must be a JSON object {\"links\":[[...],...]}");
    err = GS_EPARSE;
    goto out_topo;
  }
  err = links_decode(json_object_get(doc, "links"), topo, diag);
  if (err == GS_EOK) {
    /* Cells are fine one by one; the matrix must also be symmetric. */
    struct gs_diag cdiag = {{0}, {0}};
    err = gs_topo_check(topo, &cdiag);
    if (err != GS_EOK)
      gs_diag_set(diag, "links", "%s: %s", cdiag.where, cdiag.text);
  }
  if (err == GS_EOK)
    memcpy(ret, topo, sizeof *topo);
out_topo:
  gs_free(topo);
out_doc:
  json_decref(doc);
  return err;
}

char *gs_api_topo_encode(const struct gs_topo *topo) {
  json_t *doc, *links, *row;
  char cell[8];
  char *out = NULL;
  uint32_t n;

  if (topo == NULL || topo->n == 0 || topo->n > GS_MAX_GPUS)
    return NULL;
  n = topo->n;
  doc = json_object();
  if (doc == NULL)
    return NULL;
  links = json_array();
  if (json_object_set_new(doc, "links", links) != 0) /* steals links */
    goto out_doc;
  for (uint32_t i = 0; i < n; i++) {
    row = json_array();
    if (json_array_append_new(links, row) != 0)
      goto out_doc;
    for (uint32_t j = 0; j < n; j++) {
      enum gs_link link = (enum gs_link)topo->link[i * n + j];
      const char *name = NULL;
      switch (link) {
      case GS_LINK_SELF:
        name = "X";
        break;
      case GS_LINK_NV:
        if (topo->nvlinks[i * n + j] == 0) /* NV with no link has no name */
          goto out_doc;
        snprintf(cell, sizeof cell, "NV%u", (unsigned)topo->nvlinks[i * n + j]);
        name = cell;
        break;
      case GS_LINK_PIX:
        name = "PIX";
        break;
      case GS_LINK_PXB:
        name = "PXB";
        break;
      case GS_LINK_PHB:
        name = "PHB";
        break;
      case GS_LINK_NODE:
        name = "NODE";
        break;
      case GS_LINK_SYS:
        name = "SYS";
        break;
      case GS_LINK_UNKNOWN:
        break;
      }
      if (name == NULL || (i == j) != (link == GS_LINK_SELF) ||
          json_array_append_new(row, json_string(name)) != 0)
        goto out_doc;
    }
  }
  out = gs__api_dump(doc);
out_doc:
  json_decref(doc);
  return out;
}
