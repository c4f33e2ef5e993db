/* The memo of the last prioritize (memo.h): the object; framework.c's
 * run_verb fills it. */
#include "memo.h"

#include <gpushare/alloc.h>

struct gs_sched_memo *gs_sched_memo_new(void) {
  struct gs_sched_memo *memo = gs_calloc(1, sizeof *memo);
  if (memo != NULL)
    memo->all = true;
  return memo;
}

void gs_sched_memo_free(struct gs_sched_memo *memo) {
  if (memo == NULL)
    return;
  gs_free(memo->resolved);
  gs_free(memo->res);
  gs_free(memo);
}

void gs_sched_memo_forget(struct gs_sched_memo *memo) {
  memo->sig[0] = '\0';
  memo->all = true;
}

size_t gs_sched_memo_evaluated(const struct gs_sched_memo *memo) { return memo->evaluated; }

bool gs_sched_memo_changed(const struct gs_sched_memo *memo, const size_t **ret_idx, size_t *ret_n) {
  if (memo->all)
    return false;
  *ret_idx = memo->changed;
  *ret_n = memo->nchanged;
  return true;
}

enum gs_err gs__fw_memo_reserve(struct gs_sched_memo *memo, size_t n) {
  memo->sig[0] = '\0';
  memo->all = true;
  if (n > memo->cap) {
    struct gs_node_result *res = gs_calloc(n, sizeof *res);
    const struct gs_node **resolved = gs_calloc(n, sizeof *resolved);
    if (res == NULL || resolved == NULL) {
      gs_free(res);
      gs_free(resolved);
      return GS_ENOMEM;
    }
    gs_free(memo->res);
    gs_free(memo->resolved);
    memo->res = res;
    memo->resolved = resolved;
    memo->cap = n;
  }
  return GS_EOK;
}
