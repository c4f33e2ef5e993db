/* The ledger's change log (ledger_log.h): a ring of the last
 * GS__LEDGER_LOG changed nodes, by generation. */
#include "ledger_log.h"

void gs__ledger_log_touch(struct gs__ledger_log *log, const struct gs_node *node) {
  log->gen++;
  log->node[log->gen % GS__LEDGER_LOG] = node;
}

void gs__ledger_log_barrier(struct gs__ledger_log *log) {
  log->gen++;
  log->node[log->gen % GS__LEDGER_LOG] = NULL;
  log->barrier = log->gen;
}

size_t gs__ledger_log_since(const struct gs__ledger_log *log, uint64_t gen,
                            const struct gs_node **ret, size_t max) {
  size_t n = 0;
  if (gen > log->gen || gen < log->barrier || log->gen - gen > GS__LEDGER_LOG ||
      log->gen - gen > max)
    return SIZE_MAX;
  for (uint64_t g = gen + 1; g <= log->gen; g++) {
    const struct gs_node *node = log->node[g % GS__LEDGER_LOG];
    size_t j = 0;
    while (j < n && ret[j] != node) /* once each */
      j++;
    if (j == n)
      ret[n++] = node;
  }
  return n;
}
