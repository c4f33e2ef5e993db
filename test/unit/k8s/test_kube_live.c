/* The live backend against the test apiserver over plain HTTP: list +
 * watch delivery, changes within a second, dropped watches, 410 → relist,
 * bind (annotations, idempotence, wrong uid, missing pod), events, an
 * apiserver that comes up late, stop. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "kube_harness.h"

struct env {
  char dir[128];
  char kubeconfig[256];
  struct h_fake fake;
  struct h_rec rec;
  struct gs_cluster cluster;
  bool have_cluster;
};

static int setup(void **state) {
  struct env *e = calloc(1, sizeof *e);
  struct h_fake_opts fo = {.token = "test-token"};
  h_mkdtemp(e->dir, sizeof e->dir);
  h_fake_start(&e->fake, e->dir, &fo);
  snprintf(e->kubeconfig, sizeof e->kubeconfig, "%s/kubeconfig", e->dir);
  h_kubeconfig(e->kubeconfig, e->fake.url, NULL, "    token: test-token\n");
  h_rec_init(&e->rec);
  *state = e;
  return 0;
}

static int teardown(void **state) {
  struct env *e = *state;
  if (e->have_cluster)
    e->cluster.ops->destroy(e->cluster.self);
  h_fake_stop(&e->fake);
  h_rec_free(&e->rec);
  h_rmrf(e->dir);
  free(e);
  return 0;
}

static void start_client(struct env *e, const struct gs_kube_opts *o) {
  struct gs_diag d = {0};
  struct gs_cluster_sink s = h_sink(&e->rec);
  assert_int_equal(gs_cluster_kube_new(o, &e->cluster, &d), GS_EOK);
  e->have_cluster = true;
  assert_int_equal(e->cluster.ops->start(e->cluster.self, &s), GS_EOK);
}

static void seed(struct env *e) {
  h_create_node(&e->fake, "gpu-a");
  h_create_node(&e->fake, "gpu-b");
  h_create_pod(&e->fake, "default", "p1");
  h_create_pod(&e->fake, "ml", "p2");
  h_create_configmap(&e->fake, "kube-system", "gpushare-config", "gpuMemoryUnit", "128MiB");
  h_create_configmap(&e->fake, "kube-system", "unhealthy-gpu-gpu-a", "gpus", "0");
  h_create_configmap(&e->fake, "kube-system", "unrelated", "x", "y");
  h_create_configmap(&e->fake, "default", "gpushare-config", "gpuMemoryUnit", "1GiB");
}

static void test_list_watch(void **state) {
  struct env *e = *state;
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  json_t *pod;
  int64_t t0;
  seed(e);
  start_client(e, &o);
  assert_true(h_wait(&e->rec, h_is_synced, NULL, 10000));
  pthread_mutex_lock(&e->rec.mu);
  assert_non_null(json_object_get(e->rec.nodes, "gpu-a"));
  assert_non_null(json_object_get(e->rec.nodes, "gpu-b"));
  assert_non_null(json_object_get(e->rec.pods, "default/p1"));
  assert_non_null(json_object_get(e->rec.pods, "ml/p2"));
  /* The gpushare ConfigMap of its namespace, unhealthy-gpu-*, nothing else. */
  assert_int_equal(json_object_size(e->rec.cms), 2);
  assert_non_null(json_object_get(e->rec.cms, "kube-system/gpushare-config"));
  assert_non_null(json_object_get(e->rec.cms, "kube-system/unhealthy-gpu-gpu-a"));
  /* List items get kind/apiVersion back. */
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(e->rec.pods, "default/p1"), "kind")),
      "Pod");
  assert_int_equal(e->rec.leader, 1); /* no leader election: leader at start */
  pthread_mutex_unlock(&e->rec.mu);

  pod = e->cluster.ops->pod_get(e->cluster.self, "ml", "p2");
  assert_non_null(pod);
  assert_string_equal(h_meta(pod, "name"), "p2");
  json_decref(pod);
  assert_null(e->cluster.ops->pod_get(e->cluster.self, "ml", "nope"));

  /* A change arrives within a second. */
  t0 = h_now_ms();
  h_create_pod(&e->fake, "default", "p3");
  assert_true(h_wait(&e->rec, h_has_pod, "default/p3", 1000));
  h_create_node(&e->fake, "gpu-c");
  assert_true(h_wait(&e->rec, h_has_node, "gpu-c", 1000));
  h_delete_pod(&e->fake, "default", "p1");
  assert_true(h_wait(&e->rec, h_no_pod, "default/p1", 1000));
  assert_true(h_now_ms() - t0 < 3000);
  pod = e->cluster.ops->pod_get(e->cluster.self, "default", "p3");
  assert_non_null(pod);
  json_decref(pod);
  assert_null(e->cluster.ops->pod_get(e->cluster.self, "default", "p1"));
  h_create_configmap(&e->fake, "kube-system", "unhealthy-gpu-gpu-c", "gpus", "1");
  h_create_configmap(&e->fake, "kube-system", "unrelated-2", "x", "y");
  h_sleep_ms(500);
  pthread_mutex_lock(&e->rec.mu);
  assert_non_null(json_object_get(e->rec.cms, "kube-system/unhealthy-gpu-gpu-c"));
  assert_null(json_object_get(e->rec.cms, "kube-system/unrelated-2"));
  pthread_mutex_unlock(&e->rec.mu);

  /* stop() is prompt even with watches open. */
  t0 = h_now_ms();
  e->cluster.ops->stop(e->cluster.self);
  assert_true(h_now_ms() - t0 < 2000);
}

static bool h_synced_more(struct h_rec *r, const void *arg) {
  return r->synced > *(const int *)arg;
}

static void test_dropped_watch_and_410(void **state) {
  struct env *e = *state;
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  int synced;
  seed(e);
  start_client(e, &o);
  assert_true(h_wait(&e->rec, h_is_synced, NULL, 10000));

  /* The apiserver closes every watch: the client re-watches from its RV. */
  h_admin_drop_watches(&e->fake);
  h_create_pod(&e->fake, "default", "after-drop");
  assert_true(h_wait(&e->rec, h_has_pod, "default/after-drop", 5000));

  /* History compacted: the next watches get 410 → relist, and a pod
   * deleted meanwhile is reported as deleted by the relist diff. */
  pthread_mutex_lock(&e->rec.mu);
  synced = e->rec.synced;
  pthread_mutex_unlock(&e->rec.mu);
  h_admin_expire(&e->fake);
  h_delete_pod(&e->fake, "ml", "p2");
  h_create_pod(&e->fake, "default", "after-410");
  assert_true(h_wait(&e->rec, h_has_pod, "default/after-410", 5000));
  assert_true(h_wait(&e->rec, h_no_pod, "ml/p2", 5000));
  assert_true(h_wait(&e->rec, h_synced_more, &synced, 5000)); /* relisted */

  /* An in-stream ERROR 410 on the open watches: relist again. */
  pthread_mutex_lock(&e->rec.mu);
  synced = e->rec.synced;
  pthread_mutex_unlock(&e->rec.mu);
  h_admin(&e->fake, "/admin/watches/drop", json_pack("{s:s}", "mode", "error"));
  assert_true(h_wait(&e->rec, h_synced_more, &synced, 5000));
  h_create_pod(&e->fake, "default", "after-error");
  assert_true(h_wait(&e->rec, h_has_pod, "default/after-error", 5000));

  /* Streams ended cleanly (a server timeout): re-watch, no relist needed. */
  h_admin(&e->fake, "/admin/watches/drop", json_pack("{s:s}", "mode", "end"));
  h_create_pod(&e->fake, "default", "after-end");
  assert_true(h_wait(&e->rec, h_has_pod, "default/after-end", 5000));
}

static void test_bind(void **state) {
  struct env *e = *state;
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  struct gs_annotations a = {0};
  struct gs_diag diag;
  json_t *pod, *ann;
  const char *uid;
  char uid_copy[64];
  seed(e);
  start_client(e, &o);
  assert_true(h_wait(&e->rec, h_is_synced, NULL, 10000));
  pod = h_get_pod(&e->fake, "default", "p1");
  assert_non_null(pod);
  uid = h_meta(pod, "uid");
  assert_non_null(uid);
  snprintf(uid_copy, sizeof uid_copy, "%s", uid);
  json_decref(pod);

  assert_int_equal(gs_annotations_set(&a, "scheduler.framework.gpushare.allocation",
                                      "{\"0\":{\"1\":4}}"),
                   GS_EOK);
  assert_int_equal(gs_annotations_set(&a, "ALIYUN_COM_GPU_MEM_IDX", "1"), GS_EOK);
  assert_int_equal(gs_annotations_set(&a, "gpushare.io/unit-mib", "1024"), GS_EOK);
  assert_int_equal(
      e->cluster.ops->bind(e->cluster.self, "default", "p1", uid_copy, "gpu-b", &a, gs_test_diag(&diag)),
      GS_EOK);
  pod = h_get_pod(&e->fake, "default", "p1");
  assert_string_equal(json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName")),
                      "gpu-b");
  ann = json_object_get(json_object_get(pod, "metadata"), "annotations");
  assert_string_equal(json_string_value(json_object_get(ann, "scheduler.framework.gpushare.allocation")),
                      "{\"0\":{\"1\":4}}");
  assert_string_equal(json_string_value(json_object_get(ann, "ALIYUN_COM_GPU_MEM_IDX")), "1");
  assert_string_equal(json_string_value(json_object_get(ann, "gpushare.io/unit-mib")), "1024");
  json_decref(pod);

  /* The same bind again (a retry): idempotent. */
  assert_int_equal(
      e->cluster.ops->bind(e->cluster.self, "default", "p1", uid_copy, "gpu-b", &a, gs_test_diag(&diag)),
      GS_EOK);
  /* Bound elsewhere already: error. */
  assert_int_not_equal(
      e->cluster.ops->bind(e->cluster.self, "default", "p1", uid_copy, "gpu-a", &a, gs_test_diag(&diag)),
      GS_EOK);
  assert_true(strlen(diag.text) > 0);
  assert_null(strchr(diag.text, '%'));
  /* Wrong uid (the pod was recreated): error, nothing written. */
  assert_int_not_equal(e->cluster.ops->bind(e->cluster.self, "ml", "p2",
                                            "00000000-0000-0000-0000-000000000000", "gpu-a", &a,
                                            gs_test_diag(&diag)),
                       GS_EOK);
  assert_true(strlen(diag.text) > 0);
  pod = h_get_pod(&e->fake, "ml", "p2");
  assert_null(json_object_get(json_object_get(pod, "spec"), "nodeName"));
  json_decref(pod);
  /* A pod that does not exist. */
  assert_int_equal(
      e->cluster.ops->bind(e->cluster.self, "default", "ghost", "x", "gpu-a", &a, gs_test_diag(&diag)),
      GS_ENOTFOUND);
  assert_non_null(strstr(diag.text, "ghost"));
  gs_annotations_clear(&a);

  /* The bound pod reaches the sink through the watch. */
  assert_true(h_wait(&e->rec, h_has_pod, "default/p1", 1000));
}

/* Transport-level trouble on bind: 5xx and 429 are retried within the
 * budget (Retry-After honoured); a persistent 500 fails in under 4 s. */
static void test_bind_retries(void **state) {
  struct env *e = *state;
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  struct gs_annotations a = {0};
  struct gs_diag diag;
  int64_t t0;
  seed(e);
  h_create_pod(&e->fake, "default", "p4");
  start_client(e, &o);
  assert_true(h_wait(&e->rec, h_is_synced, NULL, 10000));
  assert_int_equal(gs_annotations_set(&a, "gpushare.io/unit-mib", "1024"), GS_EOK);

  h_admin_fault(&e->fake, "POST", "/binding$", 503, 2, -1);
  assert_int_equal(
      e->cluster.ops->bind(e->cluster.self, "default", "p1", NULL, "gpu-a", &a, gs_test_diag(&diag)),
      GS_EOK);

  h_admin_fault(&e->fake, "POST", "/binding$", 429, 1, 1);
  t0 = h_now_ms();
  assert_int_equal(
      e->cluster.ops->bind(e->cluster.self, "ml", "p2", NULL, "gpu-a", &a, gs_test_diag(&diag)),
      GS_EOK);
  assert_true(h_now_ms() - t0 >= 900);

  h_admin_fault(&e->fake, "POST", "/binding$", 500, -1, -1);
  t0 = h_now_ms();
  assert_int_not_equal(
      e->cluster.ops->bind(e->cluster.self, "default", "p4", NULL, "gpu-a", &a, gs_test_diag(&diag)),
      GS_EOK);
  assert_true(h_now_ms() - t0 < 4000);
  assert_true(diag.text[0] != '\0');
  assert_null(strchr(diag.text, '%'));
  h_admin_clear_faults(&e->fake);
  gs_annotations_clear(&a);
}

static bool has_1100_pods(struct h_rec *r, const void *arg) {
  (void)arg;
  return json_object_size(r->pods) >= 1100;
}

/* More than two pages (limit 500); the continue token expires once (410)
 * and the list starts over. */
/* n pods bulk/bulk-0000.. in the test apiserver at once (3 list pages). */
static void add_bulk_pods(struct env *e, int n) {
  json_t *list = json_pack("{s:s, s:s, s:[]}", "kind", "List", "apiVersion", "v1", "items");
  char url[256], name[32];
  long code = 0;
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "bulk-%04d", i);
    json_array_append_new(json_object_get(list, "items"), h_pod("bulk", name));
  }
  snprintf(url, sizeof url, "%s/admin/objects", e->fake.admin_url);
  json_decref(h_http(&e->fake, "POST", url, list, &code));
  json_decref(list);
  assert_int_equal(code, 200);
}

static void test_paged_list(void **state) {
  struct env *e = *state;
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  char url[256];
  long code = 0;
  add_bulk_pods(e, 1100);
  {
    json_t *b = json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:s}", "method", "GET", "path",
                          "^/api/v1/pods$", "query", "continue=", "status", 410, "count", 1,
                          "reason", "Expired", "message", "The provided continue parameter is too old");
    h_admin(&e->fake, "/admin/faults", b);
  }
  start_client(e, &o);
  assert_true(h_wait(&e->rec, h_is_synced, NULL, 20000));
  assert_true(h_wait(&e->rec, has_1100_pods, NULL, 100));
  {
    json_t *r;
    snprintf(url, sizeof url, "%s/admin/faults", e->fake.admin_url);
    r = h_http(&e->fake, "GET", url, NULL, &code);
    assert_int_equal(json_array_size(json_object_get(r, "faults")), 0);
    json_decref(r);
  }
}

/* A page asked for ahead fails (500, then the connection reset): the list
 * retries that page from its token and still ends with every pod, once. */
static void test_paged_list_prefetch_fails(void **state) {
  struct env *e = *state;
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  char url[256];
  long code = 0;
  add_bulk_pods(e, 1100);
  h_admin(&e->fake, "/admin/faults",
          json_pack("{s:s, s:s, s:s, s:i, s:i}", "method", "GET", "path", "^/api/v1/pods$",
                    "query", "continue=", "status", 500, "count", 1));
  h_admin(&e->fake, "/admin/faults",
          json_pack("{s:s, s:s, s:s, s:s, s:i}", "method", "GET", "path", "^/api/v1/pods$",
                    "query", "continue=", "action", "reset", "count", 1));
  start_client(e, &o);
  assert_true(h_wait(&e->rec, h_is_synced, NULL, 20000));
  assert_true(h_wait(&e->rec, has_1100_pods, NULL, 100));
  pthread_mutex_lock(&e->rec.mu);
  assert_int_equal(json_object_size(e->rec.pods), 1100);
  pthread_mutex_unlock(&e->rec.mu);
  {
    json_t *r;
    snprintf(url, sizeof url, "%s/admin/faults", e->fake.admin_url);
    r = h_http(&e->fake, "GET", url, NULL, &code);
    assert_int_equal(json_array_size(json_object_get(r, "faults")), 0); /* both were hit */
    json_decref(r);
  }
}

static bool has_p0(struct h_rec *r, const void *arg) {
  (void)arg;
  return json_object_get(r->pods, "t/p0") != NULL;
}

/* A page's token is read ahead (for the next request) before the page is
 * parsed; the parsed page decides. A reply whose first metadata says
 * "bogus" and whose last (the one a parser keeps) says nothing: the
 * read-ahead request for "bogus" is made, and the list still ends with
 * exactly the crafted page (its 400 neither fails the list nor restarts
 * it, which would have brought p1 in). */
static void test_list_read_ahead_dropped(void **state) {
  struct env *e = *state;
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  char url[256], *item, *body;
  const char *rv;
  long code = 0;
  json_t *reply, *p0, *reqs;
  bool asked = false;
  size_t i;
  h_create_pod(&e->fake, "t", "p0");
  h_create_pod(&e->fake, "t", "p1");
  snprintf(url, sizeof url, "%s/admin/rv", e->fake.admin_url);
  reply = h_http(&e->fake, "GET", url, NULL, &code);
  rv = json_string_value(json_object_get(reply, "resourceVersion"));
  assert_non_null(rv);
  p0 = h_pod("t", "p0");
  json_object_set_new(json_object_get(p0, "metadata"), "uid", json_string("uid-p0"));
  json_object_set_new(json_object_get(p0, "metadata"), "resourceVersion", json_string(rv));
  item = json_dumps(p0, JSON_COMPACT);
  body = malloc(strlen(item) + 512);
  assert_non_null(body);
  sprintf(body,
          "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"%s\","
          "\"continue\":\"bogus\"},\"items\":[%s],\"metadata\":{\"resourceVersion\":\"%s\"}}",
          rv, item, rv);
  h_admin(&e->fake, "/admin/faults",
          json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:s}", "method", "GET", "path",
                    "^/api/v1/pods$", "query", "^limit=500$", "action", "reply", "status", 200,
                    "count", 1, "body", body));
  start_client(e, &o);
  assert_true(h_wait(&e->rec, h_is_synced, NULL, 10000));
  assert_true(h_wait(&e->rec, has_p0, NULL, 1000));
  h_sleep_ms(300);
  pthread_mutex_lock(&e->rec.mu);
  assert_int_equal(json_object_size(e->rec.pods), 1); /* p1 was not on the page */
  pthread_mutex_unlock(&e->rec.mu);
  snprintf(url, sizeof url, "%s/admin/requests", e->fake.admin_url);
  reqs = h_http(&e->fake, "GET", url, NULL, &code);
  for (i = 0; i < json_array_size(json_object_get(reqs, "requests")); i++) {
    const json_t *q = json_object_get(json_array_get(json_object_get(reqs, "requests"), i), "query");
    if (json_is_string(q) && strstr(json_string_value(q), "continue=bogus") != NULL)
      asked = true;
  }
  assert_true(asked); /* the read-ahead happened, and was dropped */
  json_decref(reqs);
  json_decref(reply);
  json_decref(p0);
  free(item);
  free(body);
}

/* The first lists fail (500, then 429): the client backs off and syncs. */
static void test_list_faults(void **state) {
  struct env *e = *state;
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  seed(e);
  h_admin_fault(&e->fake, "GET", "^/api/v1/pods$", 500, 2, -1);
  h_admin_fault(&e->fake, "GET", "^/api/v1/nodes$", 429, 1, 1);
  start_client(e, &o);
  assert_true(h_wait(&e->rec, h_is_synced, NULL, 10000));
  assert_true(h_wait(&e->rec, h_has_pod, "default/p1", 100));
  assert_true(h_wait(&e->rec, h_has_node, "gpu-a", 100));
  {
    /* Every injected fault was hit. */
    char url[256];
    long code = 0;
    json_t *r;
    snprintf(url, sizeof url, "%s/admin/faults", e->fake.admin_url);
    r = h_http(&e->fake, "GET", url, NULL, &code);
    assert_int_equal(code, 200);
    assert_int_equal(json_array_size(json_object_get(r, "faults")), 0);
    json_decref(r);
  }
}

static const char *str_or(const json_t *v) {
  return json_is_string(v) ? json_string_value(v) : "";
}

static bool has_event(const struct h_fake *f) {
  long code = 0;
  json_t *list = h_rest(f, "GET", "/api/v1/namespaces/ml/events", NULL, &code), *item;
  size_t i;
  bool found = false;
  json_array_foreach(json_object_get(list, "items"), i, item) {
    const json_t *io = json_object_get(item, "involvedObject");
    if (strcmp(str_or(json_object_get(item, "reason")), "FailedBinding") == 0 &&
        strcmp(str_or(json_object_get(io, "name")), "p2") == 0 &&
        strcmp(str_or(json_object_get(item, "type")), "Warning") == 0 &&
        strncmp(str_or(json_object_get(json_object_get(item, "metadata"), "name")), "p2.", 3) == 0)
      found = true;
  }
  json_decref(list);
  return found;
}

static void test_event(void **state) {
  struct env *e = *state;
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  json_t *pod;
  bool found = false;
  seed(e);
  start_client(e, &o);
  assert_true(h_wait(&e->rec, h_is_synced, NULL, 10000));
  pod = e->cluster.ops->pod_get(e->cluster.self, "ml", "p2");
  assert_non_null(pod);
  e->cluster.ops->event(e->cluster.self, pod, "FailedBinding", "no GPU has 4 GiB free (100%)");
  json_decref(pod);
  for (int i = 0; i < 50 && !found; i++) {
    found = has_event(&e->fake);
    if (!found)
      h_sleep_ms(50);
  }
  assert_true(found);
}

static void test_apiserver_late(void **state) {
  struct env *e = *state;
  struct h_fake_opts fo = {.token = "test-token"};
  struct gs_kube_opts o;
  char url[128];
  int port = h_free_port();
  /* Point the client at a port where nothing listens yet. */
  h_fake_stop(&e->fake);
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  h_kubeconfig(e->kubeconfig, url, NULL, "    token: test-token\n");
  o = h_opts(e->kubeconfig);
  start_client(e, &o);
  h_sleep_ms(1500);
  pthread_mutex_lock(&e->rec.mu);
  assert_int_equal(e->rec.synced, 0);
  pthread_mutex_unlock(&e->rec.mu);
  fo.port = port;
  h_fake_start(&e->fake, e->dir, &fo);
  h_create_node(&e->fake, "late");
  assert_true(h_wait(&e->rec, h_is_synced, NULL, 10000));
  assert_true(h_wait(&e->rec, h_has_node, "late", 1000));

  /* Down for a while (connections refused), a pod created meanwhile, up
   * again: the informers come back and catch up. */
  h_admin(&e->fake, "/admin/down", NULL);
  h_sleep_ms(1000);
  {
    char aurl[256];
    long code = 0;
    json_t *pod = h_pod("default", "while-down");
    snprintf(aurl, sizeof aurl, "%s/admin/objects", e->fake.admin_url);
    json_decref(h_http(&e->fake, "POST", aurl, pod, &code));
    json_decref(pod);
    assert_int_equal(code, 200);
  }
  h_admin(&e->fake, "/admin/up", NULL);
  assert_true(h_wait(&e->rec, h_has_pod, "default/while-down", 8000));
}

/* The start-up read of the gpushare ConfigMap (main, before the ledger). */
static void test_configmap_data(void **state) {
  struct env *e = *state;
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  struct gs_diag d = {0};
  volatile sig_atomic_t stop = 0;
  json_t *data = NULL;
  seed(e);
  assert_int_equal(gs_cluster_kube_new(&o, &e->cluster, &d), GS_EOK);
  e->have_cluster = true;
  assert_int_equal(gs_kube_configmap_data(&e->cluster, "kube-system", "gpushare-config", &stop,
                                          &data),
                   GS_EOK);
  assert_non_null(data);
  assert_string_equal(json_string_value(json_object_get(data, "gpuMemoryUnit")), "128MiB");
  json_decref(data);
  /* Absent: defaults (no data). json_null() is a static singleton: no leak
   * when the call overwrites it. */
  data = json_null();
  assert_int_equal(gs_kube_configmap_data(&e->cluster, "kube-system", "absent", &stop, &data),
                   GS_EOK);
  assert_null(data);
}

/* Bound pods and nodes are cached compactly: pod_get of a bound pod reads
 * it whole from the apiserver, and gives back the cached identity, node and
 * phase only when that read fails; a pending pod comes back whole from the
 * cache (bind decodes it); a relist after missed changes still reports them. */
static void test_compact_cache(void **state) {
  struct env *e = *state;
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  struct gs_annotations a = {0};
  struct gs_diag diag;
  char uid[64];
  json_t *pod, *got;
  seed(e);
  start_client(e, &o);
  assert_true(h_wait(&e->rec, h_is_synced, NULL, 10000));
  pod = h_get_pod(&e->fake, "default", "p1");
  snprintf(uid, sizeof uid, "%s", h_meta(pod, "uid"));
  json_decref(pod);
  /* Pending: whole, resources included. */
  got = e->cluster.ops->pod_get(e->cluster.self, "default", "p1");
  assert_non_null(got);
  assert_non_null(json_object_get(json_object_get(got, "spec"), "containers"));
  json_decref(got);
  assert_int_equal(gs_annotations_set(&a, "scheduler.framework.gpushare.allocation",
                                      "{\"0\":{\"0\":4}}"),
                   GS_EOK);
  assert_int_equal(
      e->cluster.ops->bind(e->cluster.self, "default", "p1", uid, "gpu-a", &a, gs_test_diag(&diag)),
      GS_EOK);
  gs_annotations_clear(&a);
  /* Bound: the watch brings it; the cache keeps the compact form, which
   * pod_get gives back only while the apiserver cannot be read (else it
   * reads the whole pod: a repeated bind decodes its containers). */
  h_admin_fault(&e->fake, "GET", "^/api/v1/namespaces/default/pods/p1$", 500, -1, -1);
  for (int i = 0; i < 100; i++) {
    const json_t *node;
    got = e->cluster.ops->pod_get(e->cluster.self, "default", "p1");
    node = json_object_get(json_object_get(got, "spec"), "nodeName");
    if (json_is_string(node))
      break;
    json_decref(got);
    got = NULL;
    h_sleep_ms(20);
  }
  assert_non_null(got);
  assert_string_equal(h_meta(got, "name"), "p1");
  assert_string_equal(h_meta(got, "namespace"), "default");
  assert_string_equal(h_meta(got, "uid"), uid);
  assert_non_null(h_meta(got, "resourceVersion"));
  assert_string_equal(json_string_value(json_object_get(json_object_get(got, "spec"), "nodeName")),
                      "gpu-a");
  assert_null(json_object_get(json_object_get(got, "spec"), "containers"));
  json_decref(got);
  h_admin_clear_faults(&e->fake);
  got = e->cluster.ops->pod_get(e->cluster.self, "default", "p1");
  assert_non_null(got);
  assert_non_null(json_object_get(json_object_get(got, "spec"), "containers"));
  assert_string_equal(h_meta(got, "uid"), uid);
  json_decref(got);
  /* Missed changes (a dropped watch and a compaction): the relist reports
   * the deleted bound pod with its uid. */
  h_admin_expire(&e->fake);
  h_delete_pod(&e->fake, "default", "p1");
  h_create_pod(&e->fake, "default", "after-410");
  assert_true(h_wait(&e->rec, h_has_pod, "default/after-410", 5000));
  assert_true(h_wait(&e->rec, h_no_pod, "default/p1", 5000));
  assert_null(e->cluster.ops->pod_get(e->cluster.self, "default", "p1"));
}

static void test_bad_token(void **state) {
  struct env *e = *state;
  struct gs_kube_opts o;
  h_kubeconfig(e->kubeconfig, e->fake.url, NULL, "    token: wrong\n");
  o = h_opts(e->kubeconfig);
  start_client(e, &o);
  h_sleep_ms(1000);
  pthread_mutex_lock(&e->rec.mu);
  assert_int_equal(e->rec.synced, 0);
  pthread_mutex_unlock(&e->rec.mu);
}

static void test_new_errors(void **state) {
  struct env *e = *state;
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  struct gs_cluster c;
  struct gs_diag d = {0};
  char path[256];
  /* In-cluster without the environment. */
  o.kubeconfig = NULL;
  unsetenv("KUBERNETES_SERVICE_HOST");
  assert_int_equal(gs_cluster_kube_new(&o, &c, &d), GS_EINVAL);
  assert_non_null(strstr(d.text, "KUBERNETES_SERVICE_HOST"));
  /* A kubeconfig that does not exist. */
  memset(&d, 0, sizeof d);
  snprintf(path, sizeof path, "%s/missing", e->dir);
  o.kubeconfig = path;
  assert_int_not_equal(gs_cluster_kube_new(&o, &c, &d), GS_EOK);
  assert_true(d.text[0] != '\0');
  /* Inconsistent leader-election timings. */
  memset(&d, 0, sizeof d);
  o = h_opts(e->kubeconfig);
  o.leader_elect = true;
  o.lease_duration_s = 5;
  o.renew_deadline_s = 6;
  assert_int_equal(gs_cluster_kube_new(&o, &c, &d), GS_EINVAL);
  /* destroy without start. */
  o = h_opts(e->kubeconfig);
  assert_int_equal(gs_cluster_kube_new(&o, &c, &d), GS_EOK);
  c.ops->destroy(c.self);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      GS_TEST_FX(test_list_watch),
      GS_TEST_FX(test_dropped_watch_and_410),
      GS_TEST_FX(test_bind),
      GS_TEST_FX(test_bind_retries),
      GS_TEST_FX(test_list_faults),
      GS_TEST_FX(test_paged_list),
      GS_TEST_FX(test_list_read_ahead_dropped),
      GS_TEST_FX(test_paged_list_prefetch_fails),
      GS_TEST_FX(test_event),
      GS_TEST_FX(test_apiserver_late),
      GS_TEST_FX(test_configmap_data),
      GS_TEST_FX(test_compact_cache),
      GS_TEST_FX(test_bad_token),
      GS_TEST_FX(test_new_errors),
  };
  gs_log_set_level(getenv("GS_TEST_VERBOSE") ? GS_LVL_DEBUG : GS_LVL_ERROR);
  h_use_arena_hooks();
  return cmocka_run_group_tests(tests, NULL, NULL);
}
