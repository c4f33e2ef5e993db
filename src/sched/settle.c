/* Preemptions under way (sched.h, gs_sched_preempt_note): kube-scheduler
 * deletes the victims on the node it picks and retries the preemptor as
 * soon as its own cache drops them; the extender's watch may bring the
 * deletions a moment later. A filter answered meanwhile refuses the node
 * and kube-scheduler preempts again, elsewhere (issue 34's flake,
 * docs/preemption.md "Victims gone before the watch says so"). The
 * preemptor's filter waits for them here instead, briefly. */
#include "settle.h"
#include "framework.h"

#include "alloc.h"
#include "strmap.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define SETTLE_MAX 256                         /* preemptors remembered */
#define SETTLE_VICTIMS_MAX 64                  /* victims remembered per preemptor */
#define SETTLE_TTL_NS (INT64_C(120) * 1000000000) /* a record older is forgotten */

struct victim {
  char node[GS_NAME_MAX + 1];
  char uid[GS_UID_MAX + 1]; /* "" once gone */
};

struct rec {
  char uid[GS_UID_MAX + 1]; /* the preemptor's */
  int64_t at_ns;            /* CLOCK_MONOTONIC, when noted */
  size_t n;
  struct victim v[];
};

struct gs__settle {
  pthread_mutex_t mu;
  pthread_cond_t gone; /* a victim went (CLOCK_MONOTONIC) */
  struct gs_strmap *by_pod; /* preemptor uid → struct rec */
};

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct gs__settle *gs__settle_new(void) {
  struct gs__settle *t = gs_calloc(1, sizeof *t);
  pthread_condattr_t attr;
  if (t == NULL)
    return NULL;
  pthread_mutex_init(&t->mu, NULL);
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&t->gone, &attr);
  pthread_condattr_destroy(&attr);
  t->by_pod = gs_strmap_new();
  if (t->by_pod == NULL) {
    gs__settle_free(t);
    return NULL;
  }
  return t;
}

void gs__settle_free(struct gs__settle *t) {
  if (t == NULL)
    return;
  gs_strmap_free_all(t->by_pod, gs_free);
  pthread_cond_destroy(&t->gone);
  pthread_mutex_destroy(&t->mu);
  gs_free(t);
}

/* Forgets records older than the TTL, and the oldest when room is needed
 * (t->mu held). */
static void prune(struct gs__settle *t, int64_t now, bool make_room) {
  size_t cur = 0;
  const char *key, *oldest = NULL;
  void *val;
  int64_t oldest_at = INT64_MAX;
  char drop[GS_UID_MAX + 1];
  bool again = true;
  while (again) {
    again = false;
    cur = 0;
    while (gs_strmap_next(t->by_pod, &cur, &key, &val)) {
      const struct rec *r = val;
      if (now - r->at_ns > SETTLE_TTL_NS) {
        snprintf(drop, sizeof drop, "%s", key);
        gs_free(gs_strmap_del(t->by_pod, drop));
        again = true; /* the iteration is void after a deletion */
        break;
      }
    }
  }
  if (!make_room || gs_strmap_count(t->by_pod) < SETTLE_MAX)
    return;
  cur = 0;
  while (gs_strmap_next(t->by_pod, &cur, &key, &val)) {
    const struct rec *r = val;
    if (r->at_ns < oldest_at) {
      oldest_at = r->at_ns;
      oldest = key;
    }
  }
  if (oldest != NULL) {
    snprintf(drop, sizeof drop, "%s", oldest);
    gs_free(gs_strmap_del(t->by_pod, drop));
  }
}

void gs_sched_preempt_note(struct gs_sched *s, const char *pod_uid,
                           const struct gs_preempt_offer *offers,
                           const struct gs_preempt_answer *answers, size_t n) {
  struct gs__settle *t = s->settle;
  size_t total = 0, k = 0;
  struct rec *r, *old;
  if (pod_uid == NULL || pod_uid[0] == '\0' || strlen(pod_uid) > GS_UID_MAX)
    return;
  for (size_t i = 0; i < n; i++)
    if (answers[i].keep)
      total += answers[i].nvictims;
  if (total > SETTLE_VICTIMS_MAX)
    total = SETTLE_VICTIMS_MAX; /* the rest is not waited for */
  r = gs_calloc(1, sizeof *r + total * sizeof r->v[0]);
  if (r == NULL)
    return; /* not remembered: the filter does not wait */
  snprintf(r->uid, sizeof r->uid, "%s", pod_uid);
  for (size_t i = 0; i < n && k < total; i++) {
    if (!answers[i].keep || offers[i].node == NULL || strlen(offers[i].node) > GS_NAME_MAX)
      continue;
    for (size_t j = 0; j < answers[i].nvictims && k < total; j++, k++) {
      snprintf(r->v[k].node, sizeof r->v[k].node, "%s", offers[i].node);
      snprintf(r->v[k].uid, sizeof r->v[k].uid, "%s", answers[i].victims[j]);
    }
  }
  r->n = k;
  pthread_mutex_lock(&t->mu);
  r->at_ns = mono_ns();
  old = gs_strmap_del(t->by_pod, r->uid);
  gs_free(old);
  prune(t, r->at_ns, true);
  if (gs_strmap_put(t->by_pod, r->uid, r) != GS_EOK)
    gs_free(r);
  pthread_mutex_unlock(&t->mu);
}

/* pod's victims still held on one of nodes (t->mu held). */
static bool pending(const struct rec *r, const char *const *nodes, size_t n) {
  for (size_t k = 0; r != NULL && k < r->n; k++) {
    if (r->v[k].uid[0] == '\0')
      continue;
    for (size_t i = 0; i < n; i++)
      if (nodes[i] != NULL && strcmp(nodes[i], r->v[k].node) == 0)
        return true;
  }
  return false;
}

bool gs_sched_preempt_unsettled(struct gs_sched *s, const char *pod_uid,
                                const char *const *nodes, size_t n) {
  struct gs__settle *t = s->settle;
  bool p;
  if (pod_uid == NULL || pod_uid[0] == '\0')
    return false;
  pthread_mutex_lock(&t->mu);
  p = pending(gs_strmap_get(t->by_pod, pod_uid), nodes, n);
  pthread_mutex_unlock(&t->mu);
  return p;
}

enum gs_err gs_sched_preempt_settle(struct gs_sched *s, const char *pod_uid,
                                    const char *const *nodes, size_t n, int64_t timeout_ms) {
  struct gs__settle *t = s->settle;
  struct timespec until;
  int64_t end;
  enum gs_err err = GS_EOK;
  if (pod_uid == NULL || pod_uid[0] == '\0')
    return GS_EOK;
  end = mono_ns() + (timeout_ms > 0 ? timeout_ms : 0) * 1000000;
  until.tv_sec = (time_t)(end / 1000000000);
  until.tv_nsec = (long)(end % 1000000000);
  pthread_mutex_lock(&t->mu);
  /* the record is looked up again after each wake: it may have gone */
  while (pending(gs_strmap_get(t->by_pod, pod_uid), nodes, n)) {
    if (pthread_cond_timedwait(&t->gone, &t->mu, &until) == ETIMEDOUT &&
        pending(gs_strmap_get(t->by_pod, pod_uid), nodes, n)) {
      /* they did not go: kube-scheduler picked another node, or they are
       * slow to end; no second wait for this preemptor */
      gs_free(gs_strmap_del(t->by_pod, pod_uid));
      err = GS_ETIMEOUT;
      break;
    }
  }
  pthread_mutex_unlock(&t->mu);
  return err;
}

void gs_sched_preempt_forget(struct gs_sched *s, const char *pod_uid) {
  struct gs__settle *t = s->settle;
  if (pod_uid == NULL || pod_uid[0] == '\0')
    return;
  pthread_mutex_lock(&t->mu);
  gs_free(gs_strmap_del(t->by_pod, pod_uid));
  pthread_mutex_unlock(&t->mu);
}

void gs__settle_pod_gone(struct gs__settle *t, const char *uid) {
  size_t cur = 0;
  const char *key;
  void *val;
  bool woke = false;
  if (t == NULL || uid == NULL || uid[0] == '\0')
    return;
  pthread_mutex_lock(&t->mu);
  if (gs_strmap_count(t->by_pod) == 0)
    goto unlock;
  gs_free(gs_strmap_del(t->by_pod, uid)); /* a preemptor gone */
  while (gs_strmap_next(t->by_pod, &cur, &key, &val)) {
    struct rec *r = val;
    for (size_t k = 0; k < r->n; k++)
      if (strcmp(r->v[k].uid, uid) == 0) {
        r->v[k].uid[0] = '\0';
        woke = true;
      }
  }
  if (woke)
    pthread_cond_broadcast(&t->gone);
unlock:
  pthread_mutex_unlock(&t->mu);
}
