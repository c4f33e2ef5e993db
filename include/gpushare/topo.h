/* gpushare — GPU interconnect topology: parse `nvidia-smi topo -m`, score
 * GPU pairs and sets, choose k GPUs that keep good sets free for later.
 *
 * Pure: libc only, no I/O, no globals, reentrant (the server calls it from
 * several threads). The objective and its worked examples are written down
 * in docs/topology.md.
 */
#ifndef GPUSHARE_TOPO_H
#define GPUSHARE_TOPO_H

#include <gpushare/types.h>

/* Named caps. */
#define GS_TOPO_TEXT_MAX (1u << 20) /* bytes of `nvidia-smi topo -m` text */
#define GS_TOPO_CELL_MAX 8          /* a formatted cell, "NV255" + NUL, rounded */

/* Pair scores (gs_topo_pair_score). NV<k> scores k * GS_TOPO_SCORE_NV, above
 * any PCIe path; then PIX > PXB > PHB > NODE > SYS. */
#define GS_TOPO_SCORE_NV 100u
#define GS_TOPO_SCORE_PIX 50u
#define GS_TOPO_SCORE_PXB 40u
#define GS_TOPO_SCORE_PHB 30u
#define GS_TOPO_SCORE_NODE 20u
#define GS_TOPO_SCORE_SYS 10u
#define GS_TOPO_SCORE_EQUAL 1u /* every pair when there is no topology */

/* Work budgets, in work units (one DFS step or pair visit, ~1-3 ns). The
 * exact search runs when its estimated cost fits GS_TOPO_EXACT_WORK and at
 * most GS_TOPO_EXACT_GPUS GPUs are free (its memo has 2^m slots); otherwise
 * a local search stops after GS_TOPO_BOUNDED_WORK. docs/topology.md
 * "Performance" gives the measured figures. */
#define GS_TOPO_EXACT_WORK 3100000u
#define GS_TOPO_EXACT_GPUS 16u
#define GS_TOPO_BOUNDED_WORK 1000000u

/* ---- parsing ------------------------------------------------------------ */

/* Parses the text of `nvidia-smi topo -m` (len bytes, need not be
 * NUL-terminated) into *ret: the GPU-by-GPU block. Cells are separated by
 * tabs or spaces; text before the header row and after the GPU rows (NIC
 * rows, legend) is ignored, as are NIC and affinity columns. Accepted cells:
 * X, NV<k> (1 <= k <= 255), PIX, PXB, PHB, NODE, SYS, and SOC (old drivers'
 * name for SYS).
 * A partial or garbled table is an error, never a guess: a missing GPU row,
 * a row with too few cells, an unknown cell, a diagonal cell that is not X,
 * an X off the diagonal, an asymmetric matrix, GPU columns or rows not
 * GPU0..GPUn-1 in order, a second table: GS_EPARSE (GS_ETOOBIG over
 * GS_TOPO_TEXT_MAX bytes or GS_MAX_GPUS GPUs; GS_EINVAL for NULL text/ret),
 * with diag->where = "line N" ("end of input" for a table cut short, "input"
 * when no table is found) and diag->text saying what is wrong.
 * *ret is written only on success. Nothing is allocated. */
enum gs_err gs_topo_parse_text(const char *text, size_t len, struct gs_topo *ret,
                               struct gs_diag *diag) GS_WUR;

/* Parses one NUL-terminated cell ("X", "NV2", "SYS", "SOC", ...) into an
 * enum gs_link value and its NVLink count (0 unless NV). GS_EPARSE for
 * anything else (case matters: nvidia-smi prints upper case). Outputs are
 * written only on success. */
enum gs_err gs_topo_cell_parse(const char *cell, uint8_t *ret_link, uint8_t *ret_nvlinks) GS_WUR;

/* Name of a link class: "X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS";
 * "?" for GS_LINK_UNKNOWN and out-of-range values. Static, never NULL. */
const char *gs_topo_cell_name(uint8_t link);

/* Formats a cell as nvidia-smi prints it ("NV2", "SYS", "X") into buf and
 * returns buf. An unknown class, or NV with 0 links, prints "?". */
const char *gs_topo_cell_format(uint8_t link, uint8_t nvlinks, char buf[GS_TOPO_CELL_MAX]);

/* Checks a topology built elsewhere (e.g. decoded from the node annotation):
 * 1 <= n <= GS_MAX_GPUS, X exactly on the diagonal, known classes elsewhere,
 * NV cells with 1..255 links and other cells with 0, symmetric.
 * GS_EPARSE with diag->where = "GPUi,GPUj" on the first violation. */
enum gs_err gs_topo_check(const struct gs_topo *t, struct gs_diag *diag) GS_WUR;

/* ---- scoring ------------------------------------------------------------ */

/* Score of the link between GPUs a and b (higher is better), see the
 * GS_TOPO_SCORE_* constants. No topology (t NULL or n == 0): every pair
 * scores GS_TOPO_SCORE_EQUAL. a == b, or an index outside the topology: 0. */
uint32_t gs_topo_pair_score(const struct gs_topo *t, uint32_t a, uint32_t b);

/* Quality of a chosen GPU set for prioritize, 0..10, from its weakest link:
 * one GPU 10; all NVLink 8..10 (10 when the weakest bond is as wide as the
 * node's widest); PIX 7, PXB 6, PHB 5, NODE 3, SYS 1; no topology 5 (unknown
 * sits in the middle). An empty set or a GPU outside the topology: 0. */
uint32_t gs_topo_set_score(const struct gs_topo *t, uint64_t set);

/* ---- choosing ----------------------------------------------------------- */

/* Optional figures of one gs_topo_choose_ex call. */
struct gs_topo_stats {
  bool exact;    /* the subset DP ran (else bounded local search or a shortcut) */
  bool searched; /* the DP or the local search ran (split_* are set) */
  uint64_t work; /* work units spent (see GS_TOPO_EXACT_WORK) */
  /* Key of the split found (docs/topology.md), to compare searches. */
  uint32_t split_allnv;   /* groups joined all by NVLink */
  uint64_t split_penalty; /* weakest-link strand penalty */
  uint32_t split_minsum;  /* sum of weakest-link scores */
  uint32_t split_sum;     /* sum of all pair scores */
};

/* Chooses k GPUs among free_mask (bit i = GPU i free) so as to keep good
 * sets free for later: the best way to split ALL free GPUs into groups of k
 * (plus one smaller leftover group) is found, and its best k-group is
 * returned (ties: the lowest indices). Partitions compare lexicographically
 * by (1) more all-NVLink groups, (2) fewer groups whose weakest link is poor,
 * counted from SYS upwards (one group stranded on SYS outweighs any number
 * on NODE), (3) larger sum of weakest-link scores, (4) larger total score.
 * k == 1 takes the least-connected free GPU. No topology, or all free pairs
 * alike: the k lowest free indices.
 * Exact while the search's estimated cost fits GS_TOPO_EXACT_WORK (always
 * for <= 14 free GPUs); beyond, a deterministic local search bounded by
 * GS_TOPO_BOUNDED_WORK.
 * GS_EINVAL: k == 0, ret_set NULL, or a free GPU outside the topology;
 * GS_ENOFIT: fewer than k free GPUs; GS_ENOMEM. *ret_set written only on
 * success. */
enum gs_err gs_topo_choose(const struct gs_topo *t, uint64_t free_mask, uint32_t k,
                           uint64_t *ret_set) GS_WUR;

/* Same with an explicit exact-search budget (0: always the bounded search;
 * UINT64_MAX: exact whenever at most GS_TOPO_EXACT_GPUS GPUs are free) and
 * optional statistics (ret_stats may be NULL). For benchmarks and tests. */
enum gs_err gs_topo_choose_ex(const struct gs_topo *t, uint64_t free_mask, uint32_t k,
                              uint64_t exact_work, uint64_t *ret_set,
                              struct gs_topo_stats *ret_stats) GS_WUR;

#endif
