/* Gangs of claim pods (gpushare/sched.h, docs/dra.md): a barrier in Permit.
 * Each member reserved its claims' GPUs before asking, so when the last
 * member asks, every member has its GPUs and the job is released; a member
 * that gives its reservation back (a timeout) stops counting. Guarded by
 * s->mu. */
#include "alloc.h"
#include "framework.h"
#include "strmap.h"

#include <gpushare/sched.h>

#include <stdio.h>
#include <string.h>

#define GANG_REPLICAS_MAX 10000 /* as the gpu-topology-replica label allows */

struct claim_member {
  bool released;
  char key[GS_NS_MAX + GS_NAME_MAX + 2]; /* "ns/job" */
};

enum gs_err gs_sched_claim_gang_permit(struct gs_sched *s, const char *ns, const char *job,
                                       uint32_t replicas, const char *uid,
                                       struct gs_status *st) {
  struct claim_member *m;
  char key[sizeof m->key];
  size_t cur = 0, count = 0;
  bool released = false;
  const char *k;
  void *v;
  if (s == NULL || ns == NULL || job == NULL || job[0] == '\0' || uid == NULL ||
      uid[0] == '\0' || replicas == 0 || replicas > GANG_REPLICAS_MAX)
    return gs_status_set(st, GS_EINVAL, GS_R_GANG_OTHER, "a gang of %u members: 1..%d",
                         (unsigned)replicas, GANG_REPLICAS_MAX);
  snprintf(key, sizeof key, "%s/%s", ns, job);
  pthread_mutex_lock(&s->mu);
  m = gs_strmap_get(s->claim_gangs, uid);
  if (m == NULL) {
    m = gs_calloc(1, sizeof *m);
    if (m == NULL || gs_strmap_put(s->claim_gangs, uid, m) != GS_EOK) {
      gs_free(m);
      pthread_mutex_unlock(&s->mu);
      return gs_status_set(st, GS_ENOMEM, GS_R_OTHER, "out of memory");
    }
  }
  snprintf(m->key, sizeof m->key, "%s", key);
  while (gs_strmap_next(s->claim_gangs, &cur, &k, &v)) {
    const struct claim_member *o = v;
    if (strcmp(o->key, key) == 0) {
      count++;
      released = released || o->released;
    }
  }
  if (released || count >= replicas) {
    cur = 0;
    while (gs_strmap_next(s->claim_gangs, &cur, &k, &v))
      if (strcmp(((struct claim_member *)v)->key, key) == 0)
        ((struct claim_member *)v)->released = true;
    pthread_mutex_unlock(&s->mu);
    return gs_status_set(st, GS_EOK, GS_R_OTHER, "%s", "");
  }
  pthread_mutex_unlock(&s->mu);
  return gs_status_set(st, GS_EWAIT, GS_R_GANG_WAITING, "waiting for the job %s: %zu of %u members reserved",
                       key, count, (unsigned)replicas);
}

void gs_sched_claim_gang_leave(struct gs_sched *s, const char *uid) {
  if (s == NULL || uid == NULL || uid[0] == '\0')
    return;
  pthread_mutex_lock(&s->mu);
  gs_free(gs_strmap_del(s->claim_gangs, uid));
  pthread_mutex_unlock(&s->mu);
}
