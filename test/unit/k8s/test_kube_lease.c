/* Leader election between clients sharing one test apiserver: exactly one
 * leader; stopping it hands over within the lease duration; a lease held
 * by a silent holder is taken only after it expires by local observation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "kube_harness.h"

#define LEASE_PATH "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/gs-test"
#define LEASE_S 3

struct client {
  struct h_rec rec;
  struct gs_cluster c;
  bool running;
};

struct env {
  char dir[128];
  char kubeconfig[256];
  struct h_fake fake;
  struct client cl[2];
};

static int setup(void **state) {
  struct env *e = calloc(1, sizeof *e);
  struct h_fake_opts fo = {0};
  h_mkdtemp(e->dir, sizeof e->dir);
  h_fake_start(&e->fake, e->dir, &fo);
  h_create_node(&e->fake, "gpu-a");
  snprintf(e->kubeconfig, sizeof e->kubeconfig, "%s/kubeconfig", e->dir);
  h_kubeconfig(e->kubeconfig, e->fake.url, NULL, NULL);
  *state = e;
  return 0;
}

static void client_stop(struct client *cl) {
  if (cl->running) {
    cl->c.ops->destroy(cl->c.self);
    h_rec_free(&cl->rec);
    cl->running = false;
  }
}

static int teardown(void **state) {
  struct env *e = *state;
  client_stop(&e->cl[0]);
  client_stop(&e->cl[1]);
  h_fake_stop(&e->fake);
  h_rmrf(e->dir);
  free(e);
  return 0;
}

static void client_start(struct env *e, int i, const char *identity) {
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  struct gs_diag d = {0};
  struct gs_cluster_sink s;
  struct client *cl = &e->cl[i];
  o.leader_elect = true;
  o.lease_ns = "kube-system";
  o.lease_name = "gs-test";
  o.identity = identity;
  o.lease_duration_s = LEASE_S;
  o.renew_deadline_s = 2;
  o.retry_period_s = 1;
  h_rec_init(&cl->rec);
  s = h_sink(&cl->rec);
  assert_int_equal(gs_cluster_kube_new(&o, &cl->c, &d), GS_EOK);
  assert_int_equal(cl->c.ops->start(cl->c.self, &s), GS_EOK);
  cl->running = true;
}

static int leader_of(struct client *cl) {
  int v;
  if (!cl->running)
    return 0;
  pthread_mutex_lock(&cl->rec.mu);
  v = cl->rec.leader == 1;
  pthread_mutex_unlock(&cl->rec.mu);
  return v;
}

static json_t *get_lease(struct env *e) {
  long code = 0;
  json_t *l = h_rest(&e->fake, "GET", LEASE_PATH, NULL, &code);
  if (code != 200) {
    json_decref(l);
    return NULL;
  }
  return l;
}

static const char *holder(const json_t *lease) {
  return json_string_value(json_object_get(json_object_get(lease, "spec"), "holderIdentity"));
}

static void test_one_leader_then_failover(void **state) {
  struct env *e = *state;
  int64_t t0, end;
  int winner = -1, other, upserts, synced;
  json_t *lease;
  const char *renew;
  client_start(e, 0, "cand-a");
  client_start(e, 1, "cand-b");
  /* Exactly one leader, and it stays one over several renewals. */
  end = h_now_ms() + 8000;
  while (h_now_ms() < end && winner < 0) {
    if (leader_of(&e->cl[0]))
      winner = 0;
    else if (leader_of(&e->cl[1]))
      winner = 1;
    else
      h_sleep_ms(50);
  }
  assert_true(winner >= 0);
  other = 1 - winner;
  /* Never two at once (a slow machine may legitimately hand over). */
  for (int i = 0; i < 30; i++) {
    assert_true(leader_of(&e->cl[0]) + leader_of(&e->cl[1]) <= 1);
    h_sleep_ms(100);
  }
  winner = leader_of(&e->cl[0]) ? 0 : 1;
  assert_true(h_wait(&e->cl[winner].rec, h_is_leader, NULL, 1000));
  other = 1 - winner;
  lease = get_lease(e);
  assert_non_null(lease);
  assert_string_equal(holder(lease), winner == 0 ? "cand-a" : "cand-b");
  assert_int_equal(
      json_integer_value(json_object_get(json_object_get(lease, "spec"), "leaseDurationSeconds")),
      LEASE_S);
  /* MicroTime: six fractional digits. */
  renew = json_string_value(json_object_get(json_object_get(lease, "spec"), "renewTime"));
  assert_non_null(renew);
  assert_int_equal(strlen(renew), 27);
  assert_int_equal(renew[19], '.');
  json_decref(lease);
  /* The standby has a warm cache. */
  assert_true(h_wait(&e->cl[other].rec, h_has_node, "gpu-a", 1000));
  assert_true(h_wait(&e->cl[other].rec, h_is_synced, NULL, 1000));

  /* Stop the leader: it releases, the other takes over within the lease duration. */
  pthread_mutex_lock(&e->cl[other].rec.mu);
  upserts = e->cl[other].rec.upserts;
  synced = e->cl[other].rec.synced;
  pthread_mutex_unlock(&e->cl[other].rec.mu);
  t0 = h_now_ms();
  client_stop(&e->cl[winner]);
  lease = get_lease(e);
  assert_non_null(lease);
  json_decref(lease);
  assert_true(h_wait(&e->cl[other].rec, h_is_leader, NULL, LEASE_S * 1000));
  assert_true(h_now_ms() - t0 <= LEASE_S * 1000 + 500);
  /* Before leader(true): a fresh relist replayed everything, then synced. */
  pthread_mutex_lock(&e->cl[other].rec.mu);
  assert_true(e->cl[other].rec.upserts > upserts);
  assert_true(e->cl[other].rec.synced > synced);
  pthread_mutex_unlock(&e->cl[other].rec.mu);
  lease = get_lease(e);
  assert_string_equal(holder(lease), other == 0 ? "cand-a" : "cand-b");
  assert_true(json_integer_value(json_object_get(json_object_get(lease, "spec"),
                                                 "leaseTransitions")) >= 1);
  json_decref(lease);
}

/* A holder that vanished without releasing: the lease is taken only once
 * leaseDurationSeconds have passed since it was last seen changing. */
static void test_expired_holder(void **state) {
  struct env *e = *state;
  char now_s[32];
  struct timespec ts;
  int64_t t0;
  json_t *lease;
  clock_gettime(CLOCK_REALTIME, &ts);
  gs__kube_microtime(&ts, now_s);
  h_rest_ok(&e->fake, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
            json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i, s:s, s:s, s:i}}", "apiVersion",
                      "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", "gs-test",
                      "namespace", "kube-system", "spec", "holderIdentity", "ghost",
                      "leaseDurationSeconds", LEASE_S, "acquireTime", now_s, "renewTime", now_s,
                      "leaseTransitions", 7));
  t0 = h_now_ms();
  client_start(e, 0, "cand-a");
  assert_true(h_wait(&e->cl[0].rec, h_is_leader, NULL, LEASE_S * 1000 + 4000));
  /* Not before the ghost's lease ran out. */
  assert_true(h_now_ms() - t0 >= LEASE_S * 1000 - 200);
  lease = get_lease(e);
  assert_string_equal(holder(lease), "cand-a");
  assert_int_equal(
      json_integer_value(json_object_get(json_object_get(lease, "spec"), "leaseTransitions")), 8);
  json_decref(lease);
  /* Stop: released with holder "" and duration 1. */
  client_stop(&e->cl[0]);
  lease = get_lease(e);
  assert_string_equal(holder(lease), "");
  assert_int_equal(
      json_integer_value(json_object_get(json_object_get(lease, "spec"), "leaseDurationSeconds")),
      1);
  json_decref(lease);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      GS_TEST_FX(test_one_leader_then_failover),
      GS_TEST_FX(test_expired_holder),
  };
  gs_log_set_level(getenv("GS_TEST_VERBOSE") ? GS_LVL_DEBUG : GS_LVL_ERROR);
  h_use_arena_hooks();
  return cmocka_run_group_tests(tests, NULL, NULL);
}
