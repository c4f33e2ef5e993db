/* gs_kubeconfig_load: inline (-data) and file credentials, relative paths,
 * and every error. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "config.h"
#include "tmpdir.h"

#include <string.h>

#define KUBE GS_TEST_DATA "/config/kube/"

static const char ca_pem[] = "-----BEGIN CERTIFICATE-----\nMIIBgatestCAcertificateAAAA\n"
                             "-----END CERTIFICATE-----\n";
static const char cert_pem[] = "-----BEGIN CERTIFICATE-----\nMIIBclientcertBBBB\n"
                               "-----END CERTIFICATE-----\n";
static const char key_pem[] = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIkeyCCCC\n"
                              "-----END EC PRIVATE KEY-----\n";

static int teardown(void **state) {
  (void)state;
  tmp_cleanup();
  return 0;
}

static void test_inline_data(void **state) {
  (void)state;
  struct gs_kubeconfig kc;
  struct gs_diag d = {0};
  assert_int_equal(gs_kubeconfig_load(KUBE "data.yaml", &kc, &d), GS_EOK);
  assert_string_equal(kc.server, "https://127.0.0.1:6443");
  assert_string_equal(kc.tls_server_name, "kubernetes.default.svc");
  assert_false(kc.insecure);
  assert_string_equal(kc.ns, "gpu-system");
  assert_int_equal(kc.ca_data_len, strlen(ca_pem));
  assert_string_equal(kc.ca_data, ca_pem); /* NUL-terminated for convenience */
  assert_int_equal(kc.cert_data_len, strlen(cert_pem));
  assert_memory_equal(kc.cert_data, cert_pem, kc.cert_data_len);
  assert_int_equal(kc.key_data_len, strlen(key_pem)); /* wrapped base64 */
  assert_memory_equal(kc.key_data, key_pem, kc.key_data_len);
  assert_string_equal(kc.ca_file, "");
  assert_string_equal(kc.cert_file, "");
  assert_string_equal(kc.key_file, "");
  assert_string_equal(kc.token, "");
  assert_string_equal(kc.token_file, "");
  gs_kubeconfig_release(&kc);
  assert_null(kc.ca_data);
  assert_null(kc.cert_data);
  assert_null(kc.key_data);
  gs_kubeconfig_release(&kc); /* twice is fine */
  gs_kubeconfig_release(NULL);
}

static void test_files_relative(void **state) {
  (void)state;
  struct gs_kubeconfig kc;
  struct gs_diag d = {0};
  assert_int_equal(gs_kubeconfig_load(KUBE "files.yaml", &kc, &d), GS_EOK);
  assert_string_equal(kc.server, "https://203.0.113.10:6443");
  assert_string_equal(kc.ca_file, KUBE "pki/ca.crt");
  assert_string_equal(kc.cert_file, KUBE "pki/admin.crt");
  assert_string_equal(kc.key_file, "/etc/abs/admin.key");
  assert_string_equal(kc.token, "abc.def.ghi");
  assert_string_equal(kc.token_file, KUBE "../token");
  assert_string_equal(kc.ns, "default");
  assert_null(kc.ca_data);
  assert_null(kc.cert_data);
  assert_null(kc.key_data);
  assert_string_equal(kc.tls_server_name, "");
  gs_kubeconfig_release(&kc);
}

static void test_insecure_and_anonymous(void **state) {
  (void)state;
  struct gs_kubeconfig kc;
  struct gs_diag d = {0};
  assert_int_equal(gs_kubeconfig_load(KUBE "insecure.yaml", &kc, &d), GS_EOK);
  assert_string_equal(kc.server, "https://lab:6443");
  assert_true(kc.insecure);
  assert_string_equal(kc.token, "");
  gs_kubeconfig_release(&kc);
}

/* A path without a directory: relative paths stay as they are. */
static void test_bare_name(void **state) {
  (void)state;
  struct gs_kubeconfig kc;
  struct gs_diag d = {0};
  char cwd[4096];
  const char *path = tmp_write("bare", "current-context: c\n"
                                       "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                                       "clusters: [{name: k, cluster: {server: 'https://k', "
                                       "certificate-authority: ca.crt}}]\n"
                                       "users: [{name: u, user: {tokenFile: tok}}]\n");
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(tmp_dir), 0);
  assert_int_equal(gs_kubeconfig_load("bare", &kc, &d), GS_EOK);
  assert_int_equal(chdir(cwd), 0);
  assert_string_equal(kc.ca_file, "ca.crt");
  assert_string_equal(kc.token_file, "tok");
  gs_kubeconfig_release(&kc);
  (void)path;
}

/* Loads text as a kubeconfig that must fail with err; returns the text. */
static const char *fails(const char *name, const char *text, enum gs_err err) {
  static struct gs_diag d;
  struct gs_kubeconfig kc;
  const char *path = tmp_write(name, text);
  memset(&d, 0, sizeof d);
  memset(&kc, 0x5A, sizeof kc);
  enum gs_err got = gs_kubeconfig_load(path, &kc, &d);
  if (got != err)
    fail_msg("%s: got %s (%s), want %s", name, gs_err_name(got), d.text, gs_err_name(err));
  struct gs_kubeconfig untouched;
  memset(&untouched, 0x5A, sizeof untouched);
  assert_memory_equal(&kc, &untouched, sizeof kc);
  assert_null(strchr(d.text, '\n'));
  return d.text;
}

/* got must be the template with its one "%s" replaced by the file's path. */
static void expect(const char *got, const char *templ, const char *name) {
  char want[512];
  const char *hole = strstr(templ, "%s");
  assert_non_null(hole);
  snprintf(want, sizeof want, "%.*s%s%s", (int)(hole - templ), templ, tmp_path(name), hole + 2);
  assert_string_equal(got, want);
}

#define CLUSTER "clusters: [{name: k, cluster: {server: 'https://k:6443'}}]\n"
#define CONTEXT "contexts: [{name: c, context: {cluster: k, user: u}}]\n"

static void test_errors(void **state) {
  (void)state;
  const char *t;
  t = fails("no-current", CLUSTER CONTEXT, GS_EINVAL);
  expect(t, "kubeconfig %s has no current-context", "no-current");

  t = fails("empty-current", "current-context: ''\n" CLUSTER CONTEXT, GS_EINVAL);
  expect(t, "kubeconfig %s has no current-context", "empty-current");

  t = fails("unknown-context", "current-context: nope\n" CLUSTER CONTEXT, GS_ENOTFOUND);
  expect(t, "context \"nope\" not found in kubeconfig %s", "unknown-context");

  t = fails("no-contexts", "current-context: c\n" CLUSTER, GS_ENOTFOUND);
  expect(t, "context \"c\" not found in kubeconfig %s", "no-contexts");

  t = fails("unknown-cluster",
            "current-context: c\ncontexts: [{name: c, context: {cluster: gone}}]\n" CLUSTER,
            GS_ENOTFOUND);
  expect(t, "cluster \"gone\" (of context \"c\") not found in kubeconfig %s", "unknown-cluster");

  t = fails("no-cluster", "current-context: c\ncontexts: [{name: c, context: {user: u}}]\n",
            GS_EINVAL);
  expect(t, "context \"c\" in kubeconfig %s has no cluster", "no-cluster");

  t = fails("no-server",
            "current-context: c\n" CONTEXT "clusters: [{name: k, cluster: {insecure-skip-tls-"
            "verify: true}}]\n",
            GS_EINVAL);
  expect(t, "cluster \"k\" in kubeconfig %s has no server", "no-server");

  t = fails("unknown-user", "current-context: c\n" CLUSTER CONTEXT "users: []\n", GS_ENOTFOUND);
  expect(t, "user \"u\" (of context \"c\") not found in kubeconfig %s", "unknown-user");

  t = fails("bad-base64",
            "current-context: c\n" CONTEXT
            "clusters: [{name: k, cluster: {server: 'https://k', certificate-authority-data: "
            "'bm90!YmFzZTY0'}}]\n",
            GS_EPARSE);
  expect(t, "certificate-authority-data of cluster \"k\" in kubeconfig %s is not valid base64",
         "bad-base64");

  t = fails("bad-key-data",
            "current-context: c\n" CLUSTER CONTEXT
            "users: [{name: u, user: {client-certificate-data: Zm9v, client-key-data: Zg=}}]\n",
            GS_EPARSE);
  expect(t, "client-key-data of user \"u\" in kubeconfig %s is not valid base64",
         "bad-key-data");

  t = fails("insecure-ca",
            "current-context: c\n" CONTEXT
            "clusters: [{name: k, cluster: {server: 'https://k', insecure-skip-tls-verify: "
            "true, certificate-authority: ca.crt}}]\n",
            GS_EINVAL);
  expect(t,
         "cluster \"k\" in kubeconfig %s sets insecure-skip-tls-verify together with a "
         "certificate authority",
         "insecure-ca");

  t = fails("insecure-word",
            "current-context: c\n" CONTEXT
            "clusters: [{name: k, cluster: {server: 'https://k', insecure-skip-tls-verify: "
            "sometimes}}]\n",
            GS_EINVAL);
  expect(t, "insecure-skip-tls-verify of cluster \"k\" in kubeconfig %s is not true or false",
         "insecure-word");

  t = fails("server-type",
            "current-context: c\n" CONTEXT "clusters: [{name: k, cluster: {server: [a]}}]\n",
            GS_EINVAL);
  expect(t, "server of cluster \"k\" in kubeconfig %s is not a string", "server-type");

  t = fails("auth-provider",
            "current-context: c\n" CLUSTER CONTEXT
            "users: [{name: u, user: {auth-provider: {name: oidc}}}]\n",
            GS_EUNSUPPORTED);
  expect(t,
         "user \"u\" in kubeconfig %s uses an auth-provider, which gpushare does not support; "
         "use token, tokenFile or a client certificate",
         "auth-provider");

  t = fails("basic", "current-context: c\n" CLUSTER CONTEXT
                     "users: [{name: u, user: {username: admin, password: secret}}]\n",
            GS_EUNSUPPORTED);
  expect(t,
         "user \"u\" in kubeconfig %s uses basic auth (username/password), which gpushare "
         "does not support; use token, tokenFile or a client certificate",
         "basic");

  t = fails("not-a-mapping", "- a\n- b\n", GS_EINVAL);
  expect(t, "kubeconfig %s is not a mapping", "not-a-mapping");

  t = fails("syntax", "current-context: c\nclusters:\n- name: k\n cluster: x\n", GS_EPARSE);
  expect(t, "invalid kubeconfig %s:4:2: did not find expected key (while parsing a block "
            "mapping at 1:1)",
         "syntax");

  char big[9000 + 200];
  int n = snprintf(big, sizeof big, "current-context: c\n" CLUSTER CONTEXT
                                    "users: [{name: u, user: {token: ");
  memset(big + n, 't', 9000);
  snprintf(big + n + 9000, 100, "}}]\n");
  t = fails("long-token", big, GS_ETOOBIG);
  expect(t, "token of user \"u\" in kubeconfig %s is longer than 8191 bytes", "long-token");
}

static void test_exec_unsupported(void **state) {
  (void)state;
  struct gs_kubeconfig kc;
  struct gs_diag d = {0};
  assert_int_equal(gs_kubeconfig_load(KUBE "exec.yaml", &kc, &d), GS_EUNSUPPORTED);
  assert_string_equal(d.text, "user \"eks\" in kubeconfig " KUBE
                              "exec.yaml uses an exec credential plugin, which gpushare does "
                              "not run; use token, tokenFile or a client certificate");
}

static void test_missing_file(void **state) {
  (void)state;
  struct gs_kubeconfig kc;
  struct gs_diag d = {0};
  assert_int_equal(gs_kubeconfig_load("/nonexistent/kubeconfig", &kc, &d), GS_EIO);
  assert_string_equal(d.text, "cannot read /nonexistent/kubeconfig: No such file or directory");
}

/* No leak when a later field fails after a -data field was decoded. */
static void test_no_leak_on_late_error(void **state) {
  (void)state;
  const char *t = fails("late",
                        "current-context: c\n" CONTEXT
                        "clusters: [{name: k, cluster: {server: 'https://k', "
                        "certificate-authority-data: Zm9v}}]\n"
                        "users: [{name: u, user: {client-certificate-data: Zm9v, exec: {}}}]\n",
                        GS_EUNSUPPORTED);
  assert_non_null(strstr(t, "exec credential plugin"));
  t = fails("late2",
            "current-context: c\n" CONTEXT
            "clusters: [{name: k, cluster: {server: 'https://k', "
            "certificate-authority-data: Zm9v}}]\n"
            "users: [{name: u, user: {client-certificate-data: Zm9v, client-key-data: '!'}}]\n",
            GS_EPARSE);
  assert_non_null(strstr(t, "client-key-data"));
}

/* The first matching name is used. Names are text even where YAML 1.1
 * would see booleans or numbers (y, no, 007), as kubectl reads them. */
static void test_selection(void **state) {
  (void)state;
  struct gs_kubeconfig kc;
  struct gs_diag d = {0};
  const char *path = tmp_write("select",
                               "current-context: b\n"
                               "contexts:\n"
                               "- {name: a, context: {cluster: one, user: x}}\n"
                               "- {name: b, context: {cluster: two, user: y, namespace: ~}}\n"
                               "clusters:\n"
                               "- {name: one, cluster: {server: 'https://one'}}\n"
                               "- {name: two, cluster: {server: 'https://two', "
                               "insecure-skip-tls-verify: yes}}\n"
                               "- {name: two, cluster: {server: 'https://shadowed'}}\n"
                               "users:\n"
                               "- {name: x, user: {token: tx}}\n"
                               "- {name: y, user: {token: ty, tokenFile: /run/ty}}\n");
  if (gs_kubeconfig_load(path, &kc, &d) != GS_EOK)
    fail_msg("%s", d.text);
  assert_string_equal(kc.server, "https://two");
  assert_true(kc.insecure);
  assert_string_equal(kc.token, "ty");
  assert_string_equal(kc.token_file, "/run/ty");
  assert_string_equal(kc.ns, "default");
  gs_kubeconfig_release(&kc);
}

static void test_yaml11_names(void **state) {
  (void)state;
  struct gs_kubeconfig kc;
  struct gs_diag d = {0};
  const char *path = tmp_write("names", "current-context: no\n"
                                        "contexts: [{name: no, context: {cluster: 007, user: on,"
                                        " namespace: off}}]\n"
                                        "clusters: [{name: 007, cluster: {server: 'https://x'}}]\n"
                                        "users: [{name: on, user: {token: 12345}}]\n");
  if (gs_kubeconfig_load(path, &kc, &d) != GS_EOK)
    fail_msg("%s", d.text);
  assert_string_equal(kc.server, "https://x");
  assert_string_equal(kc.token, "12345");
  assert_string_equal(kc.ns, "off");
  gs_kubeconfig_release(&kc);
}

GS_TEST_MAIN(NULL, teardown, cmocka_unit_test(test_inline_data),
             cmocka_unit_test(test_files_relative), cmocka_unit_test(test_insecure_and_anonymous),
             cmocka_unit_test(test_bare_name), cmocka_unit_test(test_errors),
             cmocka_unit_test(test_exec_unsupported), cmocka_unit_test(test_missing_file),
             cmocka_unit_test(test_no_leak_on_late_error), cmocka_unit_test(test_selection),
             cmocka_unit_test(test_yaml11_names))
