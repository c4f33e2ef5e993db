/* gpushare — the memo of the last prioritize (framework.h,
 * gs_sched_prioritize_memo): its layout, shared by memo.c (the object) and
 * framework.c (the verb that fills it). Internal to src/framework. */
#ifndef GPUSHARE_FRAMEWORK_MEMO_H
#define GPUSHARE_FRAMEWORK_MEMO_H

#include "framework.h"

/* At most this many positions a memo's call changed are told
 * (gs_sched_memo_changed); past them, every position is. */
#define GS__MEMO_INDEX_MAX 64

/* The results over a node list its caller keeps, each name's node, the
 * ledger's generation when they were computed, and the pod's signature
 * ("": nothing to reuse). */
struct gs_sched_memo {
  const struct gs_sched *fw;
  const char *const *nodes;
  size_t n, cap;
  uint64_t gen;
  uint64_t holds_gen; /* the nominations' (hold.h) when they were computed */
  bool held; /* its pod had a hold of its own, which its answers skipped */
  char sig[GS_REASON_MAX];
  const struct gs_node **resolved;
  struct gs_node_result *res;
  size_t evaluated; /* nodes the last call evaluated */
  /* Where the last call's results may differ from the call's before: at
   * changed[0..nchanged) only, unless all. */
  bool all;
  size_t nchanged;
  size_t changed[GS__MEMO_INDEX_MAX];
};

/* Room for n results in memo; whatever it held is forgotten. */
enum gs_err gs__fw_memo_reserve(struct gs_sched_memo *memo, size_t n) GS_WUR;

#endif
