/* gpushare — the ledger's change log (internal to src/core): which nodes'
 * views changed since a generation, so that a caller keeping per-node
 * results between calls (the framework's memo) re-evaluates only those.
 * Plain data in the ledger; the framework's lock covers it as it covers
 * the rest of the ledger. */
#ifndef GPUSHARE_CORE_LEDGER_LOG_H
#define GPUSHARE_CORE_LEDGER_LOG_H

#include <gpushare/ledger.h>

#define GS__LEDGER_LOG GS_LEDGER_CHANGES_MAX

struct gs__ledger_log {
  uint64_t gen;     /* changes so far */
  uint64_t barrier; /* gen of the last node added or removed */
  const struct gs_node *node[GS__LEDGER_LOG]; /* the node of change g at g % GS__LEDGER_LOG */
};

/* node's view changed (charges, health, mode, host, GPUs, topology). */
void gs__ledger_log_touch(struct gs__ledger_log *log, const struct gs_node *node);
/* A node was added or removed: no earlier generation can be answered
 * (a removed node's pointer may be reused). */
void gs__ledger_log_barrier(struct gs__ledger_log *log);
/* gs_ledger_changed_since over the log. */
size_t gs__ledger_log_since(const struct gs__ledger_log *log, uint64_t gen,
                            const struct gs_node **ret, size_t max);

#endif
