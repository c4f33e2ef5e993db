/* gs_config_from_args: every flag of docs/contract.md §1, both forms, each error
 * text, the --config file and its precedence, and the --help text. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "config.h"
#include "tmpdir.h"

#include <string.h>

/* Paths made in setup. */
static const char *kubeconfig, *demo, *cert, *key;

static int setup(void **state) {
  (void)state;
  kubeconfig = strdup(tmp_write("kubeconfig", "apiVersion: v1\n"));
  demo = strdup(tmp_write("demo.yaml", "kind: List\nitems: []\n"));
  cert = strdup(tmp_write("tls.crt", "-----BEGIN CERTIFICATE-----\n"));
  key = strdup(tmp_write("tls.key", "-----BEGIN PRIVATE KEY-----\n"));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  free((void *)kubeconfig);
  free((void *)demo);
  free((void *)cert);
  free((void *)key);
  tmp_cleanup();
  return 0;
}

#define ARGV(...) ((const char *[]){"gpushare-extender", __VA_ARGS__, NULL})

static int count(const char **argv) {
  int n = 0;
  while (argv[n] != NULL)
    n++;
  return n;
}

static struct gs_config cfg;
static enum gs_config_action action;
static struct gs_diag diag;

static enum gs_err run(const char **argv) {
  memset(&diag, 0, sizeof diag);
  memset(&cfg, 0xA5, sizeof cfg); /* must be left alone on error */
  action = (enum gs_config_action)99;
  return gs_config_from_args(count(argv), (char **)argv, &cfg, &action, &diag);
}

static void ok(const char **argv) {
  enum gs_err err = run(argv);
  if (err != GS_EOK)
    fail_msg("%s: %s", gs_err_name(err), diag.text);
}

/* Fails with exactly text; cfg and action untouched. */
static void bad(const char **argv, enum gs_err want, const char *text) {
  struct gs_config untouched;
  enum gs_err err = run(argv);
  memset(&untouched, 0xA5, sizeof untouched);
  if (err == GS_EOK)
    fail_msg("accepted; expected \"%s\"", text);
  assert_string_equal(diag.text, text);
  assert_int_equal(err, want);
  assert_memory_equal(&cfg, &untouched, sizeof cfg);
  assert_int_equal(action, 99);
  assert_null(strchr(diag.text, '\n'));
}

/* One refused command line: bad(argv, err, text). */
struct bad_case {
  const char **argv;
  enum gs_err err;
  const char *text;
};
static void bad_all(const struct bad_case *c, size_t n) {
  for (size_t i = 0; i < n; i++)
    bad(c[i].argv, c[i].err, c[i].text);
}
#define BAD_ALL(cases) bad_all(cases, sizeof cases / sizeof cases[0])

static void test_defaults(void **state) {
  (void)state;
  const char *argv[] = {"gpushare-extender", NULL};
  ok(argv);
  assert_int_equal(action, GS_CONFIG_RUN);
  assert_string_equal(cfg.listen, "0.0.0.0:32766");
  assert_string_equal(cfg.kubeconfig, "");
  assert_string_equal(cfg.configmap_ns, "kube-system");
  assert_string_equal(cfg.configmap_name, "gpushare-config");
  assert_int_equal(cfg.unit_override_mib, 0);
  assert_string_equal(cfg.demo, "");
  assert_false(cfg.leader_elect);
  assert_string_equal(cfg.lease_ns, "kube-system");
  assert_string_equal(cfg.lease_name, "gpushare-extender");
  assert_string_equal(cfg.tls_cert_file, "");
  assert_string_equal(cfg.tls_key_file, "");
  assert_int_equal(cfg.log_level, GS_LVL_INFO);
  assert_int_equal(cfg.policy.unit_mib, 1024);
  assert_int_equal(cfg.policy.cgpu_max_pods, 16);
  assert_int_equal(cfg.policy.node_policy, GS_PLACE_BINPACK);
  assert_false(cfg.policy.frag_aware);
  assert_int_equal(cfg.policy.gang_timeout_s, 60);

  /* argc 0 (no argv[0]) is not an error either. */
  char *none[] = {NULL};
  assert_int_equal(gs_config_from_args(0, none, &cfg, &action, &diag), GS_EOK);

  struct gs_config d;
  gs_config_defaults(&d);
  assert_string_equal(d.listen, "0.0.0.0:32766");
  assert_int_equal(d.log_level, GS_LVL_INFO);
}

static void test_every_flag_both_forms(void **state) {
  (void)state;
  char kc_eq[4200], demo_eq[4200], cert_eq[4200], key_eq[4200];
  snprintf(kc_eq, sizeof kc_eq, "--kubeconfig=%s", kubeconfig);
  snprintf(demo_eq, sizeof demo_eq, "--demo=%s", demo);
  snprintf(cert_eq, sizeof cert_eq, "--tls-cert-file=%s", cert);
  snprintf(key_eq, sizeof key_eq, "--tls-key-file=%s", key);

  /* Every flag, space-separated, then with "=". */
  const struct {
    const char **argv;
    const char *listen, *configmap_ns, *configmap_name, *lease_ns, *lease_name;
    uint32_t unit_mib;
    enum gs_log_lvl log_level;
  } forms[] = {
      {ARGV("--listen", "127.0.0.1:8080", "--kubeconfig", kubeconfig, "--configmap",
            "gpu-system/my-config", "--gpu-memory-unit", "128MiB", "--demo", demo,
            "--leader-elect", "--lease", "gpu-system/my-lease", "--tls-cert-file", cert,
            "--tls-key-file", key, "--log-level", "debug"),
       "127.0.0.1:8080", "gpu-system", "my-config", "gpu-system", "my-lease", 128, GS_LVL_DEBUG},
      {ARGV("--listen=[::1]:0", kc_eq, "--configmap=a/b.c", "--gpu-memory-unit=1Gi", demo_eq,
            "--leader-elect=true", "--lease=x/y", cert_eq, key_eq, "--log-level=error"),
       "[::1]:0", "a", "b.c", "x", "y", 1024, GS_LVL_ERROR},
  };
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    ok(forms[i].argv);
    assert_int_equal(action, GS_CONFIG_RUN);
    assert_string_equal(cfg.listen, forms[i].listen);
    assert_string_equal(cfg.kubeconfig, kubeconfig);
    assert_string_equal(cfg.configmap_ns, forms[i].configmap_ns);
    assert_string_equal(cfg.configmap_name, forms[i].configmap_name);
    assert_int_equal(cfg.unit_override_mib, forms[i].unit_mib);
    assert_int_equal(cfg.policy.unit_mib, forms[i].unit_mib);
    assert_string_equal(cfg.demo, demo);
    assert_true(cfg.leader_elect);
    assert_string_equal(cfg.lease_ns, forms[i].lease_ns);
    assert_string_equal(cfg.lease_name, forms[i].lease_name);
    assert_string_equal(cfg.tls_cert_file, cert);
    assert_string_equal(cfg.tls_key_file, key);
    assert_int_equal(cfg.log_level, forms[i].log_level);
  }

  ok(ARGV("--gpu-memory-unit", "128Mi"));
  assert_int_equal(cfg.unit_override_mib, 128);
  ok(ARGV("--gpu-memory-unit=1GiB"));
  assert_int_equal(cfg.unit_override_mib, 1024);

  /* The last of a repeated flag wins; an empty path means "off". */
  ok(ARGV("--listen", "a:1", "--listen", "b:2", demo_eq, "--demo="));
  assert_string_equal(cfg.listen, "b:2");
  assert_string_equal(cfg.demo, "");
}

static void test_log_levels(void **state) {
  (void)state;
  static const char *const names[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; i++) {
    ok(ARGV("--log-level", names[i]));
    assert_int_equal(cfg.log_level, i);
    assert_string_equal(gs_config_log_level_name((enum gs_log_lvl)i), names[i]);
  }
  bad(ARGV("--log-level", "verbose"), GS_EINVAL,
      "invalid --log-level \"verbose\": accepted values are error, warn, info, debug");
  bad(ARGV("--log-level=INFO"), GS_EINVAL,
      "invalid --log-level \"INFO\": accepted values are error, warn, info, debug");
}

static void test_leader_elect(void **state) {
  (void)state;
  static const char *const t[] = {"--leader-elect", "--leader-elect=true", "--leader-elect=1",
                                  "--leader-elect=True", "--leader-elect=t"};
  static const char *const f[] = {"--leader-elect=false", "--leader-elect=0",
                                  "--leader-elect=FALSE", "--leader-elect=f"};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    ok(ARGV(t[i]));
    assert_true(cfg.leader_elect);
  }
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    ok(ARGV("--leader-elect", f[i]));
    assert_false(cfg.leader_elect);
  }
  bad(ARGV("--leader-elect=maybe"), GS_EINVAL,
      "invalid --leader-elect \"maybe\": accepted values are true, false");
  bad(ARGV("--leader-elect", "false"), GS_EINVAL, "unexpected argument: false");
}

static void test_listen(void **state) {
  (void)state;
  static const char *const good[] = {
      "0.0.0.0:32766", "127.0.0.1:0",      "localhost:8080",  "[::1]:32766",
      "[fd00::1]:443", "[::]:65535",       "gpushare-extender.kube-system.svc:80",
      "Host-1:1",      "10.0.0.1:00080"};
  static const char *const wrong[] = {
      "abc",        "1.2.3.4",     "1.2.3.4:65536", ":80",          "[::1]",  "::1:80",
      "999.1.1.1:80", "host:-1",   "host:80x",      "-bad-:80",     "host:",  "[::1:80",
      "[zz::1]:80", "a..b:80",     "a_b:80",        "1.2.3:80",     "host:123456",
      "[]:80",      "h ost:80"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    ok(ARGV("--listen", good[i]));
    assert_string_equal(cfg.listen, good[i]);
  }
  for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
    char want[256];
    snprintf(want, sizeof want,
             "invalid --listen \"%s\": expected HOST:PORT with a port 0..65535 (an IPv6 host "
             "in brackets: [::1]:32766)",
             wrong[i]);
    bad(ARGV("--listen", wrong[i]), GS_EINVAL, want);
  }
}

static void test_ns_name(void **state) {
  (void)state;
  static const char *const wrong[] = {"kube-system", "/x",  "ns/",        "NS/x", "ns/X",
                                      "a/b/c",       "-a/b", "ns/-x",     "ns/x.", "ns/a..b",
                                      "ns/a_b",      ""};
  for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
    char want[256];
    snprintf(want, sizeof want,
             "invalid --configmap \"%s\": expected NAMESPACE/NAME (lowercase DNS names)",
             wrong[i]);
    bad(ARGV("--configmap", wrong[i]), GS_EINVAL, want);
    snprintf(want, sizeof want,
             "invalid --lease \"%s\": expected NAMESPACE/NAME (lowercase DNS names)", wrong[i]);
    bad(ARGV("--lease", wrong[i]), GS_EINVAL, want);
  }
  char long_ns[80];
  memset(long_ns, 'a', 64);
  snprintf(long_ns + 64, 16, "/x");
  bad(ARGV("--lease", long_ns), GS_EINVAL,
      "invalid --lease \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/x\": "
      "expected NAMESPACE/NAME (lowercase DNS names)");
  ok(ARGV("--lease", "a-1/gpushare.extender-2"));
  assert_string_equal(cfg.lease_name, "gpushare.extender-2");
}

static void test_unit(void **state) {
  const struct bad_case cases[] = {
      {ARGV("--gpu-memory-unit", "2GiB"), GS_EUNIT,
       "invalid --gpu-memory-unit \"2GiB\": accepted values are 1GiB, 128MiB (also 1Gi, 128Mi)"},
      {ARGV("--gpu-memory-unit=1G"), GS_EUNIT,
       "invalid --gpu-memory-unit \"1G\": accepted values are 1GiB, 128MiB (also 1Gi, 128Mi)"},
      {ARGV("--gpu-memory-unit="), GS_EUNIT,
       "invalid --gpu-memory-unit \"\": accepted values are 1GiB, 128MiB (also 1Gi, 128Mi)"},
  };
  (void)state;
  BAD_ALL(cases);
}

static void test_files_must_exist(void **state) {
  const struct bad_case cases[] = {
      {ARGV("--kubeconfig", "/nonexistent/kubeconfig"), GS_EIO,
       "cannot read --kubeconfig file \"/nonexistent/kubeconfig\": No such file or directory"},
      {ARGV("--demo", "/nonexistent/demo.yaml"), GS_EIO,
       "cannot read --demo file \"/nonexistent/demo.yaml\": No such file or directory"},
      {ARGV("--demo", "/tmp"), GS_EIO, "cannot read --demo file \"/tmp\": Is a directory"},
      {ARGV("--tls-cert-file", "/nonexistent/c", "--tls-key-file", key), GS_EIO,
       "cannot read --tls-cert-file file \"/nonexistent/c\": No such file or directory"},
      {ARGV("--tls-cert-file", cert, "--tls-key-file", "/nonexistent/k"), GS_EIO,
       "cannot read --tls-key-file file \"/nonexistent/k\": No such file or directory"},
      {ARGV("--tls-cert-file", cert), GS_EINVAL,
       "--tls-cert-file and --tls-key-file must be given together"},
      {ARGV("--tls-key-file", key), GS_EINVAL,
       "--tls-cert-file and --tls-key-file must be given together"},
      {ARGV("--config", "/nonexistent/gpushare.yaml"), GS_EIO,
       "cannot read /nonexistent/gpushare.yaml: No such file or directory"},
  };
  (void)state;
  BAD_ALL(cases);

  char huge[GS_PATH_MAX + 10];
  memset(huge, 'x', sizeof huge - 1);
  huge[sizeof huge - 1] = '\0';
  bad(ARGV("--demo", huge), GS_ETOOBIG, "--demo path is longer than 4095 bytes");

  /* A FIFO without a writer: checked without blocking (the check used to
   * wait for a writer forever). */
  {
    const char *fifo = tmp_path("fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    ok(ARGV("--kubeconfig", fifo));
    assert_string_equal(cfg.kubeconfig, fifo);
    assert_int_equal(unlink(fifo), 0);
  }
}

static void test_syntax_errors(void **state) {
  const struct bad_case cases[] = {
      {ARGV("--foo"), GS_EINVAL, "unknown flag: --foo"},
      {ARGV("--foo=bar"), GS_EINVAL, "unknown flag: --foo"},
      {ARGV("--listen", "a:1", "--listenx", "b"), GS_EINVAL, "unknown flag: --listenx"},
      {ARGV("-x"), GS_EINVAL, "unknown flag: -x"},
      {ARGV("-listen", "a:1"), GS_EINVAL, "unknown flag: -listen"},
      {ARGV("---listen"), GS_EINVAL, "unknown flag: ---listen"},
      {ARGV("serve"), GS_EINVAL, "unexpected argument: serve"},
      {ARGV("-"), GS_EINVAL, "unexpected argument: -"},
      {ARGV("--", "x"), GS_EINVAL, "unexpected argument: x"},
      {ARGV("--listen"), GS_EINVAL, "flag --listen needs a value"},
      {ARGV("--listen", "--demo", "x"), GS_EINVAL, "flag --listen needs a value"},
      {ARGV("--kubeconfig"), GS_EINVAL, "flag --kubeconfig needs a value"},
      {ARGV("--config"), GS_EINVAL, "flag --config needs a value"},
      {ARGV("--help=yes"), GS_EINVAL, "flag --help takes no value"},
      {ARGV("--version=1"), GS_EINVAL, "flag --version takes no value"},
      /* A syntax error before --help wins over it. */
      {ARGV("--bogus", "--help"), GS_EINVAL, "unknown flag: --bogus"},
  };
  (void)state;
  BAD_ALL(cases);
  ok(ARGV("--listen", "a:1", "--"));
}

static void test_actions(void **state) {
  (void)state;
  ok(ARGV("--help"));
  assert_int_equal(action, GS_CONFIG_HELP);
  assert_string_equal(cfg.listen, "0.0.0.0:32766");
  ok(ARGV("-h"));
  assert_int_equal(action, GS_CONFIG_HELP);
  ok(ARGV("--version"));
  assert_int_equal(action, GS_CONFIG_VERSION);
  /* The first action wins; what follows is not even read, and the values
   * before it are not checked (no --config is loaded). */
  ok(ARGV("--listen", "nonsense", "--help", "--bogus"));
  assert_int_equal(action, GS_CONFIG_HELP);
  ok(ARGV("--config", "/nonexistent", "--version", "--help"));
  assert_int_equal(action, GS_CONFIG_VERSION);
}

static void test_config_file(void **state) {
  (void)state;
  const char *file = tmp_write("conf/gpushare.yaml",
                               "# gpushare-extender settings\n"
                               "listen: 127.0.0.1:9000\n"
                               "kubeconfig: ../kubeconfig\n"
                               "configmap: gpu/cm\n"
                               "demo: ../demo.yaml\n"
                               "leader-elect: yes\n"
                               "lease: gpu/lease\n"
                               "tls-cert-file: ../tls.crt\n"
                               "tls-key-file: ../tls.key\n"
                               "log-level: warn\n"
                               "gpuMemoryUnit: 128MiB\n"
                               "nodePolicy: spread\n"
                               "cgpuMaxPodsPerGPU: 8\n"
                               "gangTimeoutSeconds: \"90\"\n"
                               "fragmentationAware: true\n");
  ok(ARGV("--config", file));
  assert_string_equal(cfg.listen, "127.0.0.1:9000");
  /* Relative paths are relative to the file's directory. */
  assert_string_equal(cfg.kubeconfig, tmp_path("conf/../kubeconfig"));
  assert_string_equal(cfg.demo, tmp_path("conf/../demo.yaml"));
  assert_string_equal(cfg.tls_cert_file, tmp_path("conf/../tls.crt"));
  assert_string_equal(cfg.tls_key_file, tmp_path("conf/../tls.key"));
  assert_string_equal(cfg.configmap_ns, "gpu");
  assert_string_equal(cfg.configmap_name, "cm");
  assert_true(cfg.leader_elect);
  assert_string_equal(cfg.lease_name, "lease");
  assert_int_equal(cfg.log_level, GS_LVL_WARN);
  /* gpuMemoryUnit is the ConfigMap key: it sets the policy, not an override. */
  assert_int_equal(cfg.policy.unit_mib, 128);
  assert_int_equal(cfg.unit_override_mib, 0);
  assert_int_equal(cfg.policy.node_policy, GS_PLACE_SPREAD);
  assert_int_equal(cfg.policy.cgpu_max_pods, 8);
  assert_int_equal(cfg.policy.gang_timeout_s, 90);
  assert_true(cfg.policy.frag_aware);

  /* Flags override the file, before or after --config. */
  char cfg_eq[512];
  snprintf(cfg_eq, sizeof cfg_eq, "--config=%s", file);
  ok(ARGV("--listen", "0.0.0.0:1", "--log-level=debug", cfg_eq, "--leader-elect=false",
          "--gpu-memory-unit", "1GiB", "--demo="));
  assert_string_equal(cfg.listen, "0.0.0.0:1");
  assert_int_equal(cfg.log_level, GS_LVL_DEBUG);
  assert_false(cfg.leader_elect);
  assert_int_equal(cfg.unit_override_mib, 1024);
  assert_int_equal(cfg.policy.unit_mib, 1024);
  assert_string_equal(cfg.demo, "");
  assert_string_equal(cfg.configmap_name, "cm"); /* from the file still */
  assert_int_equal(cfg.policy.cgpu_max_pods, 8);

  /* gpu-memory-unit in the file is the override and beats gpuMemoryUnit. */
  file = tmp_write("unit.yaml", "gpu-memory-unit: 1Gi\ngpuMemoryUnit: 128MiB\n");
  ok(ARGV("--config", file));
  assert_int_equal(cfg.unit_override_mib, 1024);
  assert_int_equal(cfg.policy.unit_mib, 1024);

  /* Empty file, empty values: defaults. */
  file = tmp_write("empty.yaml", "# nothing yet\n");
  ok(ARGV("--config", file));
  assert_string_equal(cfg.listen, "0.0.0.0:32766");
  file = tmp_write("nulls.yaml", "listen:\ndemo: ~\n");
  ok(ARGV("--config", file));
  assert_string_equal(cfg.listen, "0.0.0.0:32766");
  /* The same in flow style, and in JSON. */
  file = tmp_write("flow.yaml", "{listen: 'h:1', leader-elect: true, cgpuMaxPodsPerGPU: 2}\n");
  ok(ARGV("--config", file));
  assert_string_equal(cfg.listen, "h:1");
  assert_true(cfg.leader_elect);
  assert_int_equal(cfg.policy.cgpu_max_pods, 2);
  /* YAML 1.1 words for booleans; values keep their text (a Go string field
   * would): "no" is a log level name here, not false. */
  file = tmp_write("words.yaml", "leader-elect: on\nfragmentationAware: Yes\n"
                                 "configmap: no/n\n");
  ok(ARGV("--config", file));
  assert_true(cfg.leader_elect);
  assert_true(cfg.policy.frag_aware);
  assert_string_equal(cfg.configmap_ns, "no");
  assert_string_equal(cfg.configmap_name, "n");
  file = tmp_write("words2.yaml", "leader-elect: 'off'\nfragmentationAware: n\n");
  ok(ARGV("--config", file));
  assert_false(cfg.leader_elect);
  assert_false(cfg.policy.frag_aware);
  file = tmp_write("conf.json", "{\"log-level\": \"error\", \"nodePolicy\": \"spread\"}");
  ok(ARGV("--config", file));
  assert_int_equal(cfg.log_level, GS_LVL_ERROR);
  assert_int_equal(cfg.policy.node_policy, GS_PLACE_SPREAD);
}

/* A config file refused: the error's text is before, the file's path,
 * after. */
static void test_config_file_errors(void **state) {
  static const struct {
    const char *name, *content;
    enum gs_err err;
    const char *before, *after;
  } cases[] = {
      {"bad-key.yaml", "listen: a:1\nbogus: 1\n", GS_EINVAL,
       "unknown key \"bogus\" in config file ", ""},
      {"dash-key.yaml", "--listen: a:1\n", GS_EINVAL,
       "unknown key \"--listen\" in config file ", ""},
      {"nested.yaml", "config: other.yaml\n", GS_EINVAL,
       "unknown key \"config\" in config file ", ""},
      {"bad-unit.yaml", "gpuMemoryUnit: 2GiB\n", GS_EUNIT, "invalid gpuMemoryUnit \"2GiB\" in ",
       ": accepted values are 1GiB, 128MiB"},
      {"bad-unit2.yaml", "gpu-memory-unit: 2GiB\n", GS_EUNIT,
       "invalid gpu-memory-unit \"2GiB\" in ", ": accepted values are 1GiB, 128MiB (also 1Gi, 128Mi)"},
      {"bad-cgpu.yaml", "cgpuMaxPodsPerGPU: 0\n", GS_EINVAL, "invalid cgpuMaxPodsPerGPU \"0\" in ",
       ": accepted values are integers 1..1024"},
      {"bad-listen.yaml", "listen: 8080\n", GS_EINVAL, "invalid listen \"8080\" in ",
       ": expected HOST:PORT with a port 0..65535 (an IPv6 host in brackets: [::1]:32766)"},
      {"bad-listen3.yaml", "listen: {host: a, port: 1}\n", GS_EINVAL,
       "invalid listen (a mapping) in ", ": expected a string"},
      {"bad-leader2.yaml", "leader-elect: perhaps\n", GS_EINVAL,
       "invalid leader-elect \"perhaps\" in ", ": accepted values are true, false"},
      {"bad-listen2.yaml", "listen: nowhere\n", GS_EINVAL, "invalid listen \"nowhere\" in ",
       ": expected HOST:PORT with a port 0..65535 (an IPv6 host in brackets: [::1]:32766)"},
      {"bad-leader.yaml", "leader-elect: [1]\n", GS_EINVAL, "invalid leader-elect (a list) in ",
       ": expected true or false"},
      {"list.yaml", "- listen\n", GS_EINVAL, "config file ", " is not a mapping of settings"},
  };
  char want[512];
  const char *file;
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    file = tmp_write(cases[i].name, cases[i].content);
    snprintf(want, sizeof want, "%s%s%s", cases[i].before, file, cases[i].after);
    bad(ARGV("--config", file), cases[i].err, want);
  }

  file = tmp_write("bad-demo.yaml", "demo: missing.yaml\n");
  snprintf(want, sizeof want,
           "cannot read demo file \"%s\" in %s: No such file or directory",
           tmp_path("missing.yaml"), file);
  bad(ARGV("--config", file), GS_EIO, want);

  file = tmp_write("syntax.yaml", "listen: a:1\n  log-level: info\n");
  snprintf(want, sizeof want,
           "invalid config file %s:2:12: mapping values are not allowed in this context", file);
  bad(ARGV("--config", file), GS_EPARSE, want);
  assert_non_null(strstr(diag.where, "syntax.yaml:2:12"));

  /* The file's TLS half is completed by a flag, or the pair is refused. */
  file = tmp_write("tls.yaml", "tls-cert-file: tls.crt\n");
  bad(ARGV("--config", file), GS_EINVAL,
      "--tls-cert-file and --tls-key-file must be given together");
  ok(ARGV("--config", file, "--tls-key-file", key));
  assert_string_equal(cfg.tls_cert_file, cert);

  /* A flag error is reported even when the file is fine. */
  file = tmp_write("fine.yaml", "listen: a:1\n");
  bad(ARGV("--config", file, "--log-level", "loud"), GS_EINVAL,
      "invalid --log-level \"loud\": accepted values are error, warn, info, debug");
}

static void test_usage(void **state) {
  (void)state;
  const char *u = gs_config_usage();
  static const char *const must[] = {
      "--listen HOST:PORT", "0.0.0.0:32766", "--kubeconfig FILE", "in-cluster",
      "--configmap NS/NAME", "kube-system/gpushare-config", "--gpu-memory-unit U", "1GiB",
      "128MiB", "--demo FILE", "--leader-elect", "--lease NS/NAME",
      "kube-system/gpushare-extender", "--tls-cert-file FILE", "--tls-key-file FILE",
      "plain HTTP", "--log-level", "error, warn, info or debug", "default info",
      "--config FILE", "--version", "--help"};
  for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
    if (strstr(u, must[i]) == NULL)
      fail_msg("usage lacks \"%s\"", must[i]);
  /* 80 columns. */
  for (const char *line = u; *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    assert_true(len <= 80);
    line += len + (nl != NULL);
  }
}

GS_TEST_MAIN(setup, teardown,
             cmocka_unit_test(test_defaults),
             cmocka_unit_test(test_every_flag_both_forms),
             cmocka_unit_test(test_log_levels),
             cmocka_unit_test(test_leader_elect),
             cmocka_unit_test(test_listen),
             cmocka_unit_test(test_ns_name),
             cmocka_unit_test(test_unit),
             cmocka_unit_test(test_files_must_exist),
             cmocka_unit_test(test_syntax_errors),
             cmocka_unit_test(test_actions),
             cmocka_unit_test(test_config_file),
             cmocka_unit_test(test_config_file_errors),
             cmocka_unit_test(test_usage))
