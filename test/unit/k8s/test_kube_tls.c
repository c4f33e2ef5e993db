/* Connecting over HTTPS: kubeconfig with a CA file, CA data, client
 * certificate data, tls-server-name, insecure-skip-tls-verify, a wrong CA
 * (refused), a tokenFile, and the in-cluster service account. Certificates
 * come from the openssl CLI in a temporary directory. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "kube_harness.h"

struct env {
  char dir[128];
  char kubeconfig[256];
  struct h_fake fake;
};

static struct env g; /* certificates are made once */

static int group_setup(void **state) {
  struct h_fake_opts fo = {.token = "tls-token", .tls = true};
  h_mkdtemp(g.dir, sizeof g.dir);
  h_make_certs(g.dir);
  h_fake_start(&g.fake, g.dir, &fo);
  h_create_node(&g.fake, "gpu-a");
  snprintf(g.kubeconfig, sizeof g.kubeconfig, "%s/kubeconfig", g.dir);
  *state = &g;
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  h_fake_stop(&g.fake);
  h_rmrf(g.dir);
  return 0;
}

/* Starts a client with o, waits up to ms for the first sync; returns
 * whether it synced (and saw node gpu-a). */
static bool syncs(const struct gs_kube_opts *o, long ms) {
  struct h_rec rec;
  struct gs_cluster c;
  struct gs_diag d = {0};
  struct gs_cluster_sink s;
  bool ok;
  h_rec_init(&rec);
  s = h_sink(&rec);
  if (gs_cluster_kube_new(o, &c, &d) != GS_EOK) {
    fprintf(stderr, "new: %s: %s\n", d.where, d.text);
    fail();
  }
  assert_int_equal(c.ops->start(c.self, &s), GS_EOK);
  ok = h_wait(&rec, h_is_synced, NULL, ms) && h_wait(&rec, h_has_node, "gpu-a", 100);
  c.ops->destroy(c.self);
  h_rec_free(&rec);
  return ok;
}

/* syncs(ms) with a kubeconfig for the test apiserver that trusts ca (a file
 * of the env's folder), checks server_name when given, and sends the token. */
static bool syncs_trusting(const struct env *e, const char *ca, const char *server_name,
                           long ms) {
  char extra[512];
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  snprintf(extra, sizeof extra, "    certificate-authority: %s/%s\n%s%s%s", e->dir, ca,
           server_name != NULL ? "    tls-server-name: " : "",
           server_name != NULL ? server_name : "", server_name != NULL ? "\n" : "");
  h_kubeconfig(e->kubeconfig, e->fake.url, extra, "    token: tls-token\n");
  return syncs(&o, ms);
}

static void test_ca_file(void **state) {
  assert_true(syncs_trusting(*state, "ca.crt", NULL, 10000));
}

static void test_ca_data_and_client_cert_data(void **state) {
  struct env *e = *state;
  char path[256], *ca, *cert, *key, *cluster, *user;
  size_t n;
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  snprintf(path, sizeof path, "%s/ca.crt", e->dir);
  ca = h_base64_file(path);
  snprintf(path, sizeof path, "%s/client.crt", e->dir);
  cert = h_base64_file(path);
  snprintf(path, sizeof path, "%s/client.key", e->dir);
  key = h_base64_file(path);
  n = strlen(ca) + 64;
  cluster = malloc(n);
  snprintf(cluster, n, "    certificate-authority-data: %s\n", ca);
  n = strlen(cert) + strlen(key) + 128;
  user = malloc(n);
  snprintf(user, n,
           "    client-certificate-data: %s\n    client-key-data: %s\n    token: tls-token\n",
           cert, key);
  h_kubeconfig(e->kubeconfig, e->fake.url, cluster, user);
  assert_true(syncs(&o, 10000));
  free(ca);
  free(cert);
  free(key);
  free(cluster);
  free(user);
}

/* Authentication by client certificate alone (no token). */
static void test_client_cert_auth(void **state) {
  struct env *e = *state;
  struct h_fake_opts fo = {.token = "unused-token", .tls = true, .client_ca = true};
  struct h_fake f2;
  char sub[256], extra[512], user[1024];
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  /* A second apiserver in its own directory, sharing the certificates. */
  snprintf(sub, sizeof sub, "%s/cc", e->dir);
  mkdir(sub, 0700);
  {
    const char *names[] = {"ca.crt", "server.crt", "server.key"};
    for (int i = 0; i < 3; i++) {
      char from[300], to[300];
      snprintf(from, sizeof from, "%s/%s", e->dir, names[i]);
      snprintf(to, sizeof to, "%s/%s", sub, names[i]);
      assert_int_equal(symlink(from, to), 0);
    }
  }
  h_fake_start(&f2, sub, &fo);
  h_create_node(&f2, "gpu-a");
  snprintf(extra, sizeof extra, "    certificate-authority: %s/ca.crt\n", e->dir);
  snprintf(user, sizeof user, "    client-certificate: %s/client.crt\n    client-key: %s/client.key\n",
           e->dir, e->dir);
  h_kubeconfig(e->kubeconfig, f2.url, extra, user);
  assert_true(syncs(&o, 10000));
  /* The same as in-memory blobs (client-certificate-data, client-key-data). */
  {
    char path[300], *cert, *key, *u;
    size_t n;
    snprintf(path, sizeof path, "%s/client.crt", e->dir);
    cert = h_base64_file(path);
    snprintf(path, sizeof path, "%s/client.key", e->dir);
    key = h_base64_file(path);
    n = strlen(cert) + strlen(key) + 128;
    u = malloc(n);
    snprintf(u, n, "    client-certificate-data: %s\n    client-key-data: %s\n", cert, key);
    h_kubeconfig(e->kubeconfig, f2.url, extra, u);
    assert_true(syncs(&o, 10000));
    free(cert);
    free(key);
    free(u);
  }
  /* Neither certificate nor token: 401. */
  h_kubeconfig(e->kubeconfig, f2.url, extra, NULL);
  assert_false(syncs(&o, 1500));
  h_fake_stop(&f2);
}

static void test_client_cert_files_and_token_file(void **state) {
  struct env *e = *state;
  char extra[512], user[1024], tok[256];
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  snprintf(tok, sizeof tok, "%s/token", e->dir);
  h_write(tok, "  tls-token\n");
  snprintf(extra, sizeof extra, "    certificate-authority: ca.crt\n"); /* relative */
  snprintf(user, sizeof user,
           "    client-certificate: %s/client.crt\n    client-key: %s/client.key\n"
           "    tokenFile: %s\n",
           e->dir, e->dir, tok);
  h_kubeconfig(e->kubeconfig, e->fake.url, extra, user);
  assert_true(syncs(&o, 10000));
}

static void test_tls_server_name(void **state) {
  /* The URL says 127.0.0.1; the name checked (and sent as SNI) is
   * kubernetes.default.svc (test_wrong_ca_refused shows a name the
   * certificate lacks is refused). */
  assert_true(syncs_trusting(*state, "ca.crt", "kubernetes.default.svc", 10000));
}

static void test_wrong_ca_refused(void **state) {
  assert_false(syncs_trusting(*state, "other-ca.crt", NULL, 1500));
  /* tls-server-name not in the certificate: refused too. */
  assert_false(syncs_trusting(*state, "ca.crt", "not-the-apiserver", 1500));
}

static void test_insecure(void **state) {
  struct env *e = *state;
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  h_kubeconfig(e->kubeconfig, e->fake.url, "    insecure-skip-tls-verify: true\n",
               "    token: tls-token\n");
  assert_true(syncs(&o, 10000));
}

static void test_in_cluster(void **state) {
  struct env *e = *state;
  char sa[256], path[300], port[16], cmd_ca[256];
  struct gs_kube_opts o = h_opts(NULL);
  FILE *in, *out;
  int ch;
  snprintf(sa, sizeof sa, "%s/sa", e->dir);
  mkdir(sa, 0700);
  snprintf(path, sizeof path, "%s/token", sa);
  h_write(path, "tls-token\n");
  snprintf(cmd_ca, sizeof cmd_ca, "%s/ca.crt", e->dir);
  snprintf(path, sizeof path, "%s/ca.crt", sa);
  in = fopen(cmd_ca, "rb");
  out = fopen(path, "wb");
  assert_non_null(in);
  assert_non_null(out);
  while ((ch = fgetc(in)) != EOF)
    fputc(ch, out);
  fclose(in);
  fclose(out);
  snprintf(port, sizeof port, "%d", e->fake.port);
  setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", port, 1);
  o.sa_dir = sa;
  assert_true(syncs(&o, 10000));
  /* A wrong token is refused (401, re-read, still 401). */
  snprintf(path, sizeof path, "%s/token", sa);
  h_write(path, "stale\n");
  assert_false(syncs(&o, 1500));
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
}

/* A projected token rotated while running: the 401 makes the client read
 * the file again and retry. */
static void test_token_rotation(void **state) {
  struct env *e = *state;
  char tok[256];
  struct gs_kube_opts o = h_opts(e->kubeconfig);
  struct h_rec rec;
  struct gs_cluster c;
  struct gs_diag d = {0};
  struct gs_cluster_sink s;
  struct gs_annotations a = {0};
  struct gs_diag diag;
  snprintf(tok, sizeof tok, "%s/rot-token", e->dir);
  h_write(tok, "tls-token\n");
  {
    char user[512], extra[512];
    snprintf(user, sizeof user, "    tokenFile: %s\n", tok);
    snprintf(extra, sizeof extra, "    certificate-authority: %s/ca.crt\n", e->dir);
    h_kubeconfig(e->kubeconfig, e->fake.url, extra, user);
  }
  h_rec_init(&rec);
  s = h_sink(&rec);
  assert_int_equal(gs_cluster_kube_new(&o, &c, &d), GS_EOK);
  assert_int_equal(c.ops->start(c.self, &s), GS_EOK);
  assert_true(h_wait(&rec, h_is_synced, NULL, 10000));
  /* The apiserver now accepts only a new token, which the file gets. */
  h_admin_token(&e->fake, "rotated-token");
  snprintf(e->fake.token, sizeof e->fake.token, "rotated-token");
  h_write(tok, "rotated-token\n");
  h_create_pod(&e->fake, "default", "rot");
  /* bind works at once: its 401 → re-read → retry. */
  assert_int_equal(c.ops->bind(c.self, "default", "rot", NULL, "gpu-a", &a, gs_test_diag(&diag)),
                   GS_EOK);
  c.ops->destroy(c.self);
  h_rec_free(&rec);
  h_admin_token(&e->fake, "tls-token");
  snprintf(e->fake.token, sizeof e->fake.token, "tls-token");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ca_file),
      cmocka_unit_test(test_ca_data_and_client_cert_data),
      cmocka_unit_test(test_client_cert_files_and_token_file),
      cmocka_unit_test(test_client_cert_auth),
      cmocka_unit_test(test_tls_server_name),
      cmocka_unit_test(test_wrong_ca_refused),
      cmocka_unit_test(test_insecure),
      cmocka_unit_test(test_in_cluster),
      cmocka_unit_test(test_token_rotation),
  };
  gs_log_set_level(getenv("GS_TEST_VERBOSE") ? GS_LVL_DEBUG : GS_LVL_ERROR);
  h_use_arena_hooks();
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
