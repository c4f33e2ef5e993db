/* gpushare-inspect — renders the extender's /debug/ledger JSON (docs/contract.md §5)
 * as text. No I/O here: main.c fetches, this file only formats, so the
 * output is tested byte for byte against golden files.
 *
 * Ownership: json_t arguments are borrowed; *ret_text is malloc'd and owned
 * by the caller (free). Nothing is written to ret_* on failure.
 */
#ifndef GPUSHARE_INSPECT_FORMAT_H
#define GPUSHARE_INSPECT_FORMAT_H

#include <gpushare/err.h>

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Named caps. Input beyond them is refused with a diagnostic, never a crash. */
#define GS_INSPECT_MAX_GPU_INDEX 1023u           /* table columns GPU0..GPU1023 */
#define GS_INSPECT_MIB_MAX (UINT64_C(1) << 40)   /* one amount: 1 EiB */
#define GS_INSPECT_UNIT_MIB_MAX (UINT64_C(1) << 20) /* unitMiB: 1 TiB */
#define GS_INSPECT_OUT_MAX ((size_t)512 << 20)   /* rendered text */
#define GS_INSPECT_AMOUNT_MAX 32                 /* "1099511627776.5" + NUL */

/* Output shapes. */
enum gs_inspect_view {
  GS_INSPECT_TABLE = 0, /* one row per node, one column per GPU index */
  GS_INSPECT_DETAILS,   /* -d: one block per node, the pods on each GPU */
};

/* Renders the ledger object in the given view. Validates the shape first:
 * a missing required key or a wrong type gives GS_EPARSE, an amount beyond
 * the caps GS_ERANGE, both with diag->where = the JSON path ("nodes[0].gpus[1]
 * .usedMiB") and diag->text = what was expected. Unknown keys are ignored.
 * GS_ENOMEM / GS_ETOOBIG when the text cannot be built. */
enum gs_err gs_inspect_render(const json_t *ledger, enum gs_inspect_view view, char **ret_text,
                              struct gs_diag *diag) GS_WUR;

/* Writes mib expressed in units of unit_mib (> 0) into out: the exact
 * integer when mib is a multiple of unit_mib, else one decimal, rounded up
 * when round_up (allocated amounts) and down otherwise (capacities), so the
 * table never shows more free memory than there is. "16", "15.9", "0.1". */
void gs_inspect_amount(uint64_t mib, uint64_t unit_mib, bool round_up,
                       char out[GS_INSPECT_AMOUNT_MAX]);

/* The column-header form of a unit name: "1GiB" → "GiB" (as Aliyun's
 * kubectl-inspect-gpushare prints it), "128MiB" → "128MiB". The result
 * points into unit (borrowed). */
const char *gs_inspect_unit_label(const char *unit);

#endif
