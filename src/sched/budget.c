/* PodDisruptionBudgets and pod labels for preemption (budget.h). */
#include "budget.h"
#include "framework.h"

#include "alloc.h"
#include "strmap.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct pdb_rec {
  char key[GS_NS_MAX + GS_NAME_MAX + 2]; /* ns/name */
  char ns[GS_NS_MAX + 1];
  char *selector; /* NULL: selects nothing */
  int32_t allowed;
};

struct pod_rec {
  char uid[GS_UID_MAX + 1];
  char ns[GS_NS_MAX + 1];
  char *labels;
  uint64_t cpu_milli, mem_mib;
};

struct gs__budgets {
  pthread_mutex_t mu;
  struct gs_strmap *pdbs; /* ns/name → struct pdb_rec */
  struct gs_strmap *pods; /* uid → struct pod_rec */
};

static char *dup_or_null(const char *text) {
  char *d;
  size_t len;
  if (text == NULL)
    return NULL;
  len = strlen(text);
  d = gs_malloc(len + 1);
  if (d != NULL)
    memcpy(d, text, len + 1);
  return d;
}

static void pdb_free(void *v) {
  struct pdb_rec *p = v;
  if (p != NULL)
    gs_free(p->selector);
  gs_free(p);
}

static void pod_free(void *v) {
  struct pod_rec *p = v;
  if (p != NULL)
    gs_free(p->labels);
  gs_free(p);
}

void gs__budgets_free(struct gs__budgets *b) {
  if (b == NULL)
    return;
  gs_strmap_free_all(b->pdbs, pdb_free);
  gs_strmap_free_all(b->pods, pod_free);
  pthread_mutex_destroy(&b->mu);
  gs_free(b);
}

struct gs__budgets *gs__budgets_new(void) {
  struct gs__budgets *b = gs_calloc(1, sizeof *b);
  if (b == NULL)
    return NULL;
  pthread_mutex_init(&b->mu, NULL);
  b->pdbs = gs_strmap_new();
  b->pods = gs_strmap_new();
  if (b->pdbs == NULL || b->pods == NULL) {
    gs__budgets_free(b);
    return NULL;
  }
  return b;
}

/* Keeps rec under key in map, freeing the record it replaces; rec itself
 * when it cannot be kept. */
static enum gs_err rec_put(struct gs__budgets *b, struct gs_strmap *map, const char *key,
                           void *rec, void (*free_rec)(void *)) {
  void *old;
  enum gs_err err;
  pthread_mutex_lock(&b->mu);
  old = gs_strmap_del(map, key);
  err = gs_strmap_put(map, key, rec);
  pthread_mutex_unlock(&b->mu);
  free_rec(old);
  if (err != GS_EOK)
    free_rec(rec);
  return err;
}

/* Forgets key's record in map. */
static void rec_drop(struct gs__budgets *b, struct gs_strmap *map, const char *key,
                     void (*free_rec)(void *)) {
  void *old;
  pthread_mutex_lock(&b->mu);
  old = gs_strmap_del(map, key);
  pthread_mutex_unlock(&b->mu);
  free_rec(old);
}

enum gs_err gs_sched_pdb_upsert(struct gs_sched *s, const struct gs_pdb *pdb) {
  struct gs__budgets *b = s->budgets;
  struct pdb_rec *p = gs_calloc(1, sizeof *p);
  int n;
  if (p == NULL)
    return GS_ENOMEM;
  if (pdb->ns == NULL || pdb->name == NULL || pdb->ns[0] == '\0' || pdb->name[0] == '\0' ||
      strlen(pdb->ns) > GS_NS_MAX || strlen(pdb->name) > GS_NAME_MAX) {
    pdb_free(p);
    return GS_EINVAL;
  }
  n = snprintf(p->key, sizeof p->key, "%s/%s", pdb->ns, pdb->name);
  (void)n;
  snprintf(p->ns, sizeof p->ns, "%s", pdb->ns);
  p->allowed = pdb->allowed;
  p->selector = dup_or_null(pdb->selector);
  if (pdb->selector != NULL && p->selector == NULL) {
    pdb_free(p);
    return GS_ENOMEM;
  }
  return rec_put(b, b->pdbs, p->key, p, pdb_free);
}

void gs_sched_pdb_remove(struct gs_sched *s, const char *ns, const char *name) {
  struct gs__budgets *b = s->budgets;
  char key[GS_NS_MAX + GS_NAME_MAX + 2];
  snprintf(key, sizeof key, "%s/%s", ns, name);
  rec_drop(b, b->pdbs, key, pdb_free);
}

enum gs_err gs_sched_pod_meta(struct gs_sched *s, const struct gs_pod_meta *m) {
  struct gs__budgets *b = s->budgets;
  struct pod_rec *p;
  if (m->uid == NULL || m->uid[0] == '\0' || strlen(m->uid) > GS_UID_MAX || m->ns == NULL ||
      strlen(m->ns) > GS_NS_MAX)
    return GS_EINVAL;
  p = gs_calloc(1, sizeof *p);
  if (p == NULL)
    return GS_ENOMEM;
  snprintf(p->uid, sizeof p->uid, "%s", m->uid);
  snprintf(p->ns, sizeof p->ns, "%s", m->ns);
  p->labels = dup_or_null(m->labels != NULL ? m->labels : "");
  p->cpu_milli = m->cpu_milli;
  p->mem_mib = m->mem_mib;
  if (p->labels == NULL) {
    pod_free(p);
    return GS_ENOMEM;
  }
  return rec_put(b, b->pods, p->uid, p, pod_free);
}

void gs__budgets_pod_forget(struct gs__budgets *b, const char *uid) {
  rec_drop(b, b->pods, uid, pod_free);
}

bool gs__budgets_describe(struct gs__budget_view *v, const char *uid,
                          struct gs_preempt_candidate *c) {
  const struct pod_rec *p;
  size_t cur = 0;
  const char *key;
  void *val;
  bool ok = true;
  c->cpu_milli = c->mem_mib = 0;
  c->budgets = 0;
  pthread_mutex_lock(&v->b->mu);
  p = gs_strmap_get(v->b->pods, uid);
  if (p == NULL)
    goto unlock;
  c->cpu_milli = p->cpu_milli;
  c->mem_mib = p->mem_mib;
  /* A namespace holds few budgets; a cluster a few hundred at most. */
  while (gs_strmap_next(v->b->pdbs, &cur, &key, &val)) {
    const struct pdb_rec *d = val;
    uint32_t i;
    if (strcmp(d->ns, p->ns) != 0 || !gs_selector_matches(d->selector, p->labels))
      continue;
    for (i = 0; i < v->n && strcmp(v->keys[i], d->key) != 0; i++)
      ;
    if (i == v->n) {
      if (v->n == GS_PREEMPT_BUDGETS_MAX) {
        ok = false; /* no room to count it: the pod is not offered */
        continue;
      }
      snprintf(v->keys[i], sizeof v->keys[i], "%s", d->key);
      v->allowed[i] = d->allowed;
      v->n++;
    }
    c->budgets |= UINT64_C(1) << i;
  }
unlock:
  pthread_mutex_unlock(&v->b->mu);
  return ok;
}
