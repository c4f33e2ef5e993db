/* Leader election with a coordination.k8s.io/v1 Lease, as client-go's
 * LeaderElector + LeaseLock (docs/kube-protocol.md §C.10). Informers run whatever
 * the leadership; on taking the lease every informer relists (a consistent
 * read) and only then is the sink told leader(true), so a new leader serves
 * from fresh state. Losing the renew deadline → leader(false), then this
 * process keeps trying to acquire again as a standby. */
#include "kube_int.h"
#include <gpushare/alloc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lease_state {
  struct gs__kube *k;
  char *path;      /* .../leases/NAME */
  char *coll_path; /* .../leases */
  json_t *obj;     /* the Lease as last read or written */
  struct gs__lease_spec observed;
  bool have_observed;
  int64_t observed_ms;
  bool leader;         /* holds the lease */
  int64_t last_renew_ms;
  unsigned gen;        /* resync generation asked for on take-over */
  bool releasing;      /* stopping: short timeouts */
};

#define RELEASE_TIMEOUT_MS 2000

/* A round must end well within the renew deadline. */
static long call_timeout_ms(const struct lease_state *ls) {
  const struct gs__kube *k = ls->k;
  long t = k->conn.request_timeout_s * 1000, half = (long)k->renew_deadline_s * 500;
  if (ls->releasing)
    return RELEASE_TIMEOUT_MS;
  if (half > 0 && half < t)
    t = half;
  if (ls->leader) {
    /* A renewal answered after the deadline is of no use. */
    int64_t left = ls->last_renew_ms + (int64_t)k->renew_deadline_s * 1000 - gs__kube_now_ms();
    if (left < t)
      t = left < 100 ? 100 : (long)left;
  }
  return t;
}

static void now_micro(char out[32]) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  gs__kube_microtime(&ts, out);
}

/* Sends method with the Lease obj carrying spec; on 200/201 stores the
 * reply. Returns the HTTP code (0 on transport failure or abort). */
/* The Lease in a 200/201 answer, kept as ls->obj; false (ls->obj kept)
 * when the body is not a JSON object. */
static bool keep_lease(struct lease_state *ls, const struct gs__kube_resp *resp) {
  json_t *obj = json_loadb(resp->body.p, resp->body.len, 0, NULL);
  if (!json_is_object(obj)) {
    json_decref(obj);
    return false;
  }
  json_decref(ls->obj);
  ls->obj = obj;
  return true;
}

static long send_lease(struct lease_state *ls, const char *method, const struct gs__lease_spec *spec) {
  struct gs__kube *k = ls->k;
  json_t *body;
  char *text;
  struct gs__kube_resp resp = {0};
  struct gs__kube_req req = {.method = method, .timeout_ms = call_timeout_ms(ls)};
  long code = 0;
  enum gs_err e;
  if (ls->obj != NULL && strcmp(method, "PUT") == 0) {
    body = json_deep_copy(ls->obj);
  } else {
    body = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "coordination.k8s.io/v1", "kind",
                     "Lease", "metadata", "name", k->lease_name, "namespace", k->lease_ns);
  }
  if (body == NULL)
    return 0;
  json_object_set_new(body, "spec", gs__lease_spec_to_json(spec));
  text = gs_api_dump(body);
  json_decref(body);
  if (text == NULL)
    return 0;
  req.path = strcmp(method, "POST") == 0 ? ls->coll_path : ls->path;
  req.body = text;
  e = gs__kube_do(&k->conn, &k->lease_h, &req, &resp);
  gs_free(text);
  if (e == GS_EOK) {
    code = resp.code;
    if (code == 200 || code == 201) {
      (void)keep_lease(ls, &resp);
    } else if (code != 409) {
      struct gs__kube_status st;
      gs__kube_status_decode(resp.body.p, resp.body.len, resp.code, &st);
      gs__kube_log(GS_LVL_WARN, "lease update failed", "lease=%s/%s method=%s code=%ld error=\"%s\"",
                   k->lease_ns, k->lease_name, method, code, st.message);
    }
  } else if (e != GS_EAGAIN) {
    gs__kube_log(GS_LVL_WARN, "lease update failed", "lease=%s/%s method=%s err=%s error=\"%s\"",
                 k->lease_ns, k->lease_name, method, gs_strerror(e), resp.error);
  }
  gs__kube_resp_release(&resp);
  return code;
}

/* GET: 200 → ls->obj replaced, returns 200; 404; else 0/code. */
static long get_lease(struct lease_state *ls) {
  struct gs__kube *k = ls->k;
  struct gs__kube_resp resp = {0};
  struct gs__kube_req req = {.method = "GET", .path = ls->path, .timeout_ms = call_timeout_ms(ls)};
  long code = 0;
  enum gs_err e = gs__kube_do(&k->conn, &k->lease_h, &req, &resp);
  if (e == GS_EOK) {
    code = resp.code;
    if (code == 200) {
      if (!keep_lease(ls, &resp))
        code = 0;
    } else if (code != 404) {
      struct gs__kube_status st;
      gs__kube_status_decode(resp.body.p, resp.body.len, resp.code, &st);
      gs__kube_log(GS_LVL_WARN, "lease read failed", "lease=%s/%s code=%ld error=\"%s\"",
                   k->lease_ns, k->lease_name, code, st.message);
    }
  } else if (e != GS_EAGAIN) {
    gs__kube_log(GS_LVL_WARN, "lease read failed", "lease=%s/%s err=%s error=\"%s\"", k->lease_ns,
                 k->lease_name, gs_strerror(e), resp.error);
  }
  gs__kube_resp_release(&resp);
  return code;
}

static void observe(struct lease_state *ls, const struct gs__lease_spec *spec, int64_t now) {
  ls->observed = *spec;
  ls->have_observed = true;
  ls->observed_ms = now;
}

enum round { ROUND_OK, ROUND_FAILED, ROUND_HELD /* another holder's lease is live */ };

/* client-go's tryAcquireOrRenew. */
static enum round try_acquire_or_renew(struct lease_state *ls) {
  struct gs__kube *k = ls->k;
  struct gs__lease_spec desired, cur;
  char now_s[32];
  int64_t now = gs__kube_now_ms();
  long code;
  enum gs__lease_action act;
  now_micro(now_s);
  memset(&desired, 0, sizeof desired);
  snprintf(desired.holder, sizeof desired.holder, "%s", k->identity);
  desired.duration_s = k->lease_duration_s;
  snprintf(desired.acquire, sizeof desired.acquire, "%s", now_s);
  snprintf(desired.renew, sizeof desired.renew, "%s", now_s);

  /* Fast path: leader with a locally valid lease. */
  if (ls->leader && ls->have_observed && ls->obj != NULL &&
      ls->observed_ms + (int64_t)ls->observed.duration_s * 1000 > now) {
    struct gs__lease_spec renew = desired;
    snprintf(renew.acquire, sizeof renew.acquire, "%s", ls->observed.acquire);
    renew.transitions = ls->observed.transitions;
    if (send_lease(ls, "PUT", &renew) == 200) {
      observe(ls, &renew, now);
      return ROUND_OK;
    }
    if (gs__kube_stopping(k))
      return ROUND_FAILED;
  }

  code = get_lease(ls);
  if (code == 404) {
    json_decref(ls->obj);
    ls->obj = NULL;
    code = send_lease(ls, "POST", &desired);
    if (code == 201 || code == 200) {
      observe(ls, &desired, now);
      return ROUND_OK;
    }
    return ROUND_FAILED;
  }
  if (code != 200)
    return ROUND_FAILED;
  gs__lease_spec_from_json(ls->obj, &cur);
  if (!ls->have_observed || !gs__lease_spec_equal(&cur, &ls->observed))
    observe(ls, &cur, now);
  act = gs__lease_decide(&cur, k->identity, ls->observed_ms, now, now_s, k->lease_duration_s,
                         &desired);
  if (act == GS__LEASE_WAIT)
    return ROUND_HELD;
  if (send_lease(ls, "PUT", &desired) != 200)
    return ROUND_HELD; /* 409: another candidate won this round */
  observe(ls, &desired, now);
  return ROUND_OK;
}

/* ReleaseOnCancel: holder "" and duration 1 s so a standby takes over at once. */
static void release(struct lease_state *ls) {
  struct gs__kube *k = ls->k;
  k->lease_h.abort = NULL; /* stop is set: let these requests run */
  ls->releasing = true;
  for (int tries = 0; tries < 3; tries++) {
    struct gs__lease_spec cur, rel;
    char now_s[32];
    if (get_lease(ls) != 200)
      return;
    gs__lease_spec_from_json(ls->obj, &cur);
    if (strcmp(cur.holder, k->identity) != 0)
      return;
    now_micro(now_s);
    rel = cur;
    rel.holder[0] = '\0';
    rel.duration_s = 1;
    snprintf(rel.acquire, sizeof rel.acquire, "%s", now_s);
    snprintf(rel.renew, sizeof rel.renew, "%s", now_s);
    if (send_lease(ls, "PUT", &rel) == 200) {
      gs__kube_log(GS_LVL_INFO, "lease released", "lease=%s/%s identity=%s", k->lease_ns,
                   k->lease_name, k->identity);
      return;
    }
  }
}

/* ---- the leader label (k8s.h, pod_ns/pod_name) ----------------------------- */

#define LEADER_LABEL "gpushare.io/leader"

static enum gs_err pod_path(struct gs_buf *b, const char *ns, const char *name) {
  enum gs_err e;
  if ((e = gs_buf_str(b, "/api/v1/namespaces/")) != GS_EOK || (e = gs__kube_escape(b, ns)) != GS_EOK ||
      (e = gs_buf_str(b, "/pods")) != GS_EOK)
    return e;
  if (name == NULL)
    return GS_EOK;
  if ((e = gs_buf_str(b, "/")) != GS_EOK)
    return e;
  return gs__kube_escape(b, name);
}

/* Sets (on) or removes the leader label of Pod ns/name with a JSON merge
 * patch. Best effort: a failure is logged and the next change retries. */
static void label_pod(struct lease_state *ls, const char *ns, const char *name, bool on) {
  struct gs__kube *k = ls->k;
  struct gs_buf path = {.max = 4096};
  struct gs__kube_resp resp = {0};
  struct gs__kube_req req = {
      .method = "PATCH",
      .content_type = "application/merge-patch+json",
      .body = on ? "{\"metadata\":{\"labels\":{\"" LEADER_LABEL "\":\"true\"}}}"
                 : "{\"metadata\":{\"labels\":{\"" LEADER_LABEL "\":null}}}",
      .timeout_ms = call_timeout_ms(ls)};
  enum gs_err e;
  if (pod_path(&path, ns, name) != GS_EOK) {
    gs_buf_release(&path);
    return;
  }
  req.path = path.p;
  e = gs__kube_do(&k->conn, &k->lease_h, &req, &resp);
  if (e == GS_EOK && resp.code == 200) {
    gs__kube_log(GS_LVL_INFO, on ? "leader label set" : "leader label removed", "pod=%s/%s", ns,
                 name);
  } else if (e == GS_EOK) {
    struct gs__kube_status st;
    gs__kube_status_decode(resp.body.p, resp.body.len, resp.code, &st);
    gs__kube_log(GS_LVL_WARN, "cannot label the pod", "pod=%s/%s code=%ld error=\"%s\"", ns, name,
                 resp.code, st.message);
  } else if (e != GS_EAGAIN) {
    gs__kube_log(GS_LVL_WARN, "cannot label the pod", "pod=%s/%s err=%s error=\"%s\"", ns, name,
                 gs_strerror(e), resp.error);
  }
  gs__kube_resp_release(&resp);
  gs_buf_release(&path);
}

/* A new leader: its own Pod labelled first (the Service has an endpoint at
 * once), then the label taken off every other Pod of its namespace that
 * still carries it (a replica that lost the lease without saying so). */
static void label_leader(struct lease_state *ls) {
  struct gs__kube *k = ls->k;
  struct gs_buf path = {.max = 4096};
  struct gs__kube_resp resp = {0};
  struct gs__kube_req req = {.method = "GET", .timeout_ms = call_timeout_ms(ls)};
  json_t *list, *item;
  size_t i;
  label_pod(ls, k->pod_ns, k->pod_name, true);
  if (pod_path(&path, k->pod_ns, NULL) != GS_EOK ||
      gs_buf_str(&path, "?labelSelector=gpushare.io%2Fleader%3Dtrue") != GS_EOK) {
    gs_buf_release(&path);
    return;
  }
  req.path = path.p;
  if (gs__kube_do(&k->conn, &k->lease_h, &req, &resp) == GS_EOK && resp.code == 200) {
    list = json_loadb(resp.body.p, resp.body.len, 0, NULL);
    json_array_foreach(json_object_get(list, "items"), i, item) {
      const char *name =
          json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
      if (name != NULL && strcmp(name, k->pod_name) != 0)
        label_pod(ls, k->pod_ns, name, false);
    }
    json_decref(list);
  }
  gs__kube_resp_release(&resp);
  gs_buf_release(&path);
}

static void announce(struct gs__kube *k, bool leader) {
  pthread_mutex_lock(&k->sink_mu);
  if (k->sink.leader)
    k->sink.leader(k->sink.ctx, leader);
  pthread_mutex_unlock(&k->sink_mu);
}

static void step_down(struct gs__kube *k, struct lease_state *ls, bool *announced,
                      const char *why) {
  ls->leader = false;
  gs__kube_log(GS_LVL_WARN, "leadership lost", "lease=%s/%s identity=%s why=\"%s\"", k->lease_ns,
               k->lease_name, k->identity, why);
  if (*announced) {
    *announced = false;
    announce(k, false);
    if (k->pod_name != NULL)
      label_pod(ls, k->pod_ns, k->pod_name, false);
  }
}

static bool lease_abort(void *ctx) {
  return gs__kube_stopping(ctx);
}

static enum gs_err build_paths(struct lease_state *ls) {
  struct gs__kube *k = ls->k;
  struct gs_buf b = {.max = 4096};
  enum gs_err e;
  if ((e = gs_buf_str(&b, "/apis/coordination.k8s.io/v1/namespaces/")) != GS_EOK ||
      (e = gs__kube_escape(&b, k->lease_ns)) != GS_EOK ||
      (e = gs_buf_str(&b, "/leases")) != GS_EOK) {
    gs_buf_release(&b);
    return e;
  }
  if ((ls->coll_path = gs_strdup(b.p)) == NULL) {
    gs_buf_release(&b);
    return GS_ENOMEM;
  }
  if ((e = gs_buf_str(&b, "/")) != GS_EOK || (e = gs__kube_escape(&b, k->lease_name)) != GS_EOK) {
    gs_buf_release(&b);
    return e;
  }
  ls->path = b.p;
  return GS_EOK;
}

void *gs__lease_main(void *arg) {
  struct gs__kube *k = arg;
  struct lease_state ls = {.k = k};
  uint64_t rng = 0;
  bool announced = false;
  k->lease_h.abort = lease_abort;
  k->lease_h.abort_ctx = k;
  if (build_paths(&ls) != GS_EOK) {
    gs__kube_log(GS_LVL_ERROR, "leader election disabled: out of memory", NULL);
    goto out;
  }
  gs__kube_log(GS_LVL_INFO, "leader election started", "lease=%s/%s identity=%s", k->lease_ns,
               k->lease_name, k->identity);
  if (k->pod_name != NULL) /* a label left by this Pod's previous process */
    label_pod(&ls, k->pod_ns, k->pod_name, false);
  while (!gs__kube_stopping(k)) {
    int64_t now, next, round_start = gs__kube_now_ms();
    enum round r = try_acquire_or_renew(&ls);
    if (gs__kube_stopping(k))
      break;
    now = gs__kube_now_ms();
    if (r == ROUND_OK) {
      /* The renewal counts from the round's start: the conservative end. */
      ls.last_renew_ms = round_start;
      if (!ls.leader) {
        ls.leader = true;
        ls.gen = atomic_fetch_add(&k->resync_gen, 1) + 1;
        gs__kube_log(GS_LVL_INFO, "became leader, resyncing", "lease=%s/%s identity=%s",
                     k->lease_ns, k->lease_name, k->identity);
        gs__kube_request_resync(k, ls.gen);
      }
    } else if (ls.leader && r == ROUND_HELD) {
      /* Someone else holds it now: no point waiting for the deadline. */
      step_down(k, &ls, &announced, "lease taken by another holder");
    }
    /* Leader: every RetryPeriod; candidate: RetryPeriod + up to 1.2 × jitter. */
    next = now + (int64_t)k->retry_period_s * 1000;
    if (!ls.leader)
      next += (int64_t)((double)(gs__kube_rand(&rng) % 1000) / 1000.0 * 1.2 *
                        (double)k->retry_period_s * 1000.0);
    for (;;) {
      now = gs__kube_now_ms();
      /* No renewal within RenewDeadline: stop serving on time, before a
       * standby can take over (it waits a whole LeaseDuration). */
      if (ls.leader && now - ls.last_renew_ms >= (int64_t)k->renew_deadline_s * 1000)
        step_down(k, &ls, &announced, "renew deadline passed");
      if (ls.leader && !announced && gs__kube_resynced(k, ls.gen)) {
        announced = true;
        gs__kube_log(GS_LVL_INFO, "leading", "lease=%s/%s identity=%s", k->lease_ns,
                     k->lease_name, k->identity);
        announce(k, true);
        if (k->pod_name != NULL)
          label_leader(&ls);
      }
      if (now >= next || gs__kube_stopping(k))
        break;
      /* Woken early by list completions (the resync) and by stop. */
      {
        int64_t until = next;
        if (ls.leader && ls.last_renew_ms + (int64_t)k->renew_deadline_s * 1000 < until)
          until = ls.last_renew_ms + (int64_t)k->renew_deadline_s * 1000;
        if (!gs__kube_wait(k, until - now > 0 ? until - now : 0))
          break;
      }
    }
  }
  if (ls.leader)
    release(&ls);
  if (announced) {
    announce(k, false);
    if (k->pod_name != NULL) /* release() let requests run again */
      label_pod(&ls, k->pod_ns, k->pod_name, false);
  }
out:
  json_decref(ls.obj);
  gs_free(ls.path);
  gs_free(ls.coll_path);
  return NULL;
}
