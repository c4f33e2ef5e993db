/* Preemptions under way (gs_sched_preempt_note / _settle / _forget,
 * include/gpushare/sched.h): the victims answered for each preemptor,
 * until they are gone. Internal to src/sched. */
#ifndef GS_SCHED_SETTLE_H
#define GS_SCHED_SETTLE_H

struct gs__settle;

struct gs__settle *gs__settle_new(void);
void gs__settle_free(struct gs__settle *t);
/* uid is gone (gs_sched_pod_gone): as a victim it no longer holds its
 * node; as a preemptor its record goes. Wakes the waiters. */
void gs__settle_pod_gone(struct gs__settle *t, const char *uid);

#endif
