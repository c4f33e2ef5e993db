/* Pods nominated by preemption, their GPUs held (hold.h). A handful at a
 * time: a plain array. Three kinds: a pod nominated alone (placed on the
 * view in turn, as kube-scheduler adds it), a pod group's member whose
 * slot gang preemption chose (its exact GPUs), and such a slot of a label
 * gang's job, held for any of its members. */
#include "hold.h"

#include <gpushare/alloc.h>

#include <string.h>

struct hold {
  char node[GS_NAME_MAX + 1];
  struct gs_pod_request req;
  struct gs_place_pod place; /* place.req points at req */
  /* a pod group's slot (gs__holds_set_slot): exact GPUs */
  bool slot;
  bool job;      /* a label gang's slot: for every member of req's job */
  bool placed;   /* its member is reserved: its allocation stands for it */
  uint64_t gpus; /* bit i: GPU i */
  uint64_t mib_per_gpu;
  int64_t since_ns;
};

struct gs__holds {
  struct hold *h[GS__HOLDS_MAX];
  size_t n;
  uint64_t gen;
  const struct gs_policy *policy; /* the service's, from the first slot held */
};

struct gs__holds *gs__holds_new(void) { return gs_calloc(1, sizeof(struct gs__holds)); }

void gs__holds_free(struct gs__holds *h) {
  if (h == NULL)
    return;
  for (size_t i = 0; i < h->n; i++)
    gs_free(h->h[i]);
  gs_free(h);
}

static size_t find(const struct gs__holds *h, const char *uid) {
  for (size_t i = 0; i < h->n; i++)
    if (strcmp(h->h[i]->req.uid, uid) == 0)
      return i;
  return h->n;
}

bool gs__holds_drop(struct gs__holds *h, const char *uid) {
  size_t i;
  if (h->n == 0 || uid == NULL)
    return false;
  i = find(h, uid);
  if (i == h->n)
    return false;
  gs_free(h->h[i]);
  h->h[i] = h->h[--h->n];
  h->gen++;
  return true;
}

/* A new record of pod on node at index i (replacing the one there; i ==
 * h->n: appended), or NULL: past GS__HOLDS_MAX (i == h->n) or out of
 * memory, nothing changed. node fits GS_NAME_MAX. */
static struct hold *put(struct gs__holds *h, size_t i, const struct gs_pod_request *pod,
                        const struct gs_place_pod *place, const char *node) {
  struct hold *rec;
  if (i == h->n && h->n == GS__HOLDS_MAX)
    return NULL;
  if ((rec = gs_calloc(1, sizeof *rec)) == NULL)
    return NULL;
  memcpy(rec->node, node, strlen(node) + 1);
  rec->req = *pod;
  rec->place = *place;
  rec->place.req = &rec->req;
  if (i < h->n)
    gs_free(h->h[i]);
  else
    h->n++;
  h->h[i] = rec;
  h->gen++;
  return rec;
}

enum gs_err gs__holds_set(struct gs__holds *h, const struct gs_pod_request *pod,
                          const struct gs_policy *policy, const char *node, bool *ret_changed) {
  struct gs_place_pod place;
  struct hold *rec;
  size_t i;
  *ret_changed = false;
  if (pod->uid[0] == '\0')
    return GS_EOK;
  if (node == NULL || node[0] == '\0' || gs_place_prepare(pod, policy, &place, NULL) != GS_EOK ||
      gs_pod_request_is_gang_member(pod)) {
    *ret_changed = gs__holds_drop(h, pod->uid);
    return GS_EOK;
  }
  if (strlen(node) > GS_NAME_MAX)
    return GS_ETOOBIG;
  i = find(h, pod->uid);
  if (i < h->n && h->h[i]->slot && strcmp(h->h[i]->node, node) == 0)
    return GS_EOK; /* kube-scheduler nominated the member to its slot's node */
  if (i < h->n && strcmp(h->h[i]->node, node) == 0 &&
      memcmp(&h->h[i]->req, pod, sizeof *pod) == 0)
    return GS_EOK; /* the same nomination seen again */
  if ((rec = put(h, i, pod, &place, node)) == NULL)
    return i == h->n && h->n == GS__HOLDS_MAX ? GS_ETOOBIG : GS_ENOMEM;
  *ret_changed = true;
  return GS_EOK;
}

bool gs__holds_has(const struct gs__holds *h, const char *uid) {
  return h->n > 0 && find(h, uid) < h->n;
}

uint64_t gs__holds_gen(const struct gs__holds *h) { return h->gen; }

enum gs_err gs__holds_set_slot(struct gs__holds *h, const struct gs_pod_request *pod,
                               const struct gs_policy *policy, const char *node, uint64_t gpus,
                               uint64_t mib_per_gpu, int64_t now_ns) {
  struct gs_place_pod place;
  struct hold *rec;
  size_t i;
  if (pod->uid[0] == '\0' || gpus == 0)
    return GS_EINVAL;
  if (strlen(node) > GS_NAME_MAX)
    return GS_ETOOBIG;
  if (gs_place_prepare(pod, policy, &place, NULL) != GS_EOK)
    return GS_EINVAL;
  i = find(h, pod->uid);
  if ((rec = put(h, i, pod, &place, node)) == NULL)
    return i == h->n && h->n == GS__HOLDS_MAX ? GS_ETOOBIG : GS_ENOMEM;
  rec->slot = true;
  rec->gpus = gpus;
  rec->mib_per_gpu = mib_per_gpu;
  rec->since_ns = now_ns;
  h->policy = policy;
  return GS_EOK;
}

/* Is pod a member of the job r holds a slot for? */
static bool of_job(const struct hold *r, const struct gs_pod_request *pod) {
  return r->job && pod->gang_job[0] != '\0' && strcmp(r->req.ns, pod->ns) == 0 &&
         strcmp(r->req.gang_job, pod->gang_job) == 0;
}

enum gs_err gs__holds_set_job_slot(struct gs__holds *h, const struct gs_pod_request *pod,
                                   const char *key, const struct gs_policy *policy,
                                   const char *node, uint64_t gpus, uint64_t mib_per_gpu) {
  struct gs_pod_request keyed = *pod;
  enum gs_err err;
  if (key == NULL || key[0] == '\0' || strlen(key) > GS_UID_MAX || pod->gang_job[0] == '\0')
    return GS_EINVAL;
  memcpy(keyed.uid, key, strlen(key) + 1);
  /* stamped by the next gs__holds_expire: the caller has no clock */
  err = gs__holds_set_slot(h, &keyed, policy, node, gpus, mib_per_gpu, -1);
  if (err == GS_EOK)
    h->h[find(h, key)]->job = true;
  return err;
}

bool gs__holds_job_end(struct gs__holds *h, const struct gs_pod_request *pod) {
  bool any = false;
  size_t i = 0;
  while (i < h->n) {
    if (of_job(h->h[i], pod)) {
      (void)gs__holds_drop(h, h->h[i]->req.uid); /* the last one moves here */
      any = true;
      continue;
    }
    i++;
  }
  return any;
}

bool gs__holds_placed(struct gs__holds *h, const char *uid, bool placed) {
  size_t i;
  if (h->n == 0 || uid == NULL)
    return false;
  i = find(h, uid);
  if (i == h->n)
    return false;
  if (!h->h[i]->slot)
    return placed && gs__holds_drop(h, uid); /* a pod nominated alone: done */
  if (h->h[i]->placed == placed)
    return false;
  h->h[i]->placed = placed;
  h->gen++;
  return true;
}

size_t gs__holds_expire(struct gs__holds *h, int64_t now_ns) {
  size_t dropped = 0, i = 0;
  while (i < h->n) {
    struct hold *r = h->h[i];
    if (r->slot && r->since_ns < 0)
      r->since_ns = now_ns; /* a job's slot: its bound counts from here */
    if (r->slot && now_ns - r->since_ns > GS__SLOT_HOLD_MAX_NS) {
      (void)gs__holds_drop(h, r->req.uid); /* the last one moves here */
      dropped++;
      continue;
    }
    i++;
  }
  return dropped;
}

enum gs_err gs__holds_view(const struct gs__holds *h, const struct gs_node *node,
                           const struct gs_pod_request *pod, struct gs_node *ret_view,
                           struct gs_gpu *gpus, struct gs_status *st) {
  const struct gs_place_pod *held[GS__HOLDS_MAX];
  struct gs_hold_slot slots[GS__HOLDS_MAX];
  struct gs_gpu slot_gpus[GS_MAX_GPUS];
  struct gs_node slot_view;
  struct gs_place_pod asking;
  size_t m = 0, ns = 0;
  enum gs_err err;
  if (h == NULL || h->n == 0 || node == NULL)
    return GS_ESKIP;
  /* kube-scheduler adds the nominated pods of equal or higher priority */
  for (size_t i = 0; i < h->n; i++) {
    const struct hold *r = h->h[i];
    if (strcmp(r->node, node->name) != 0 || strcmp(r->req.uid, pod->uid) == 0 ||
        r->req.priority < pod->priority || r->placed || of_job(r, pod))
      continue;
    if (r->slot)
      slots[ns++] = (struct gs_hold_slot){&r->req, r->gpus, r->mib_per_gpu};
    else
      held[m++] = &r->place;
  }
  if (ns > 0) {
    /* the slots' exact GPUs first; pods nominated alone placed after them */
    bool prepared = h->policy != NULL && gs_place_prepare(pod, h->policy, &asking, NULL) == GS_EOK;
    err = gs_preempt_hold_slots(node, slots, ns, prepared ? &asking : NULL,
                                m > 0 ? &slot_view : ret_view, m > 0 ? slot_gpus : gpus, st);
    if (err != GS_EOK || m == 0)
      return err;
    node = &slot_view;
  }
  /* the most important first, as they would be placed */
  for (size_t i = 1; i < m; i++)
    for (size_t j = i; j > 0 && held[j]->req->priority > held[j - 1]->req->priority; j--) {
      const struct gs_place_pod *t = held[j];
      held[j] = held[j - 1];
      held[j - 1] = t;
    }
  if (m == 0)
    return GS_ESKIP;
  return gs_preempt_hold_view(node, held, m, ret_view, gpus, st);
}
