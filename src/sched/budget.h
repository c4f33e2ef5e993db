/* The service's record of what preemption weighs besides GPUs
 * (docs/preemption.md): PodDisruptionBudgets and, per pod, its labels and
 * host requests, as the front ends' watches feed them (gs_sched_pdb_*,
 * gs_sched_pod_meta). Its own lock; taken inside the framework's, never
 * the other way round. */
#ifndef GPUSHARE_SCHED_BUDGET_H
#define GPUSHARE_SCHED_BUDGET_H

#include <gpushare/preempt.h>
#include <gpushare/sched.h>

struct gs__budgets;

struct gs__budgets *gs__budgets_new(void);
void gs__budgets_free(struct gs__budgets *b);
/* gs_sched_pdb_upsert, gs_sched_pdb_remove and gs_sched_pod_meta (sched.h)
 * are implemented in budget.c over the service's budgets. */
void gs__budgets_pod_forget(struct gs__budgets *b, const char *uid);

/* One preemption's view: the budgets selecting the pods described so far
 * (indices into allowed), at most GS_PREEMPT_BUDGETS_MAX. */
struct gs__budget_view {
  struct gs__budgets *b;
  char keys[GS_PREEMPT_BUDGETS_MAX][GS_NS_MAX + GS_NAME_MAX + 2];
  int32_t allowed[GS_PREEMPT_BUDGETS_MAX];
  uint32_t n;
};
/* Fills c's host requests and budget mask from pod uid's record (nothing
 * known: zeros). A pod selected by a budget past the view's cap is
 * reported as protected: false (the caller leaves it out). */
bool gs__budgets_describe(struct gs__budget_view *v, const char *uid,
                          struct gs_preempt_candidate *c);

#endif
