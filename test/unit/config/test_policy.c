/* gs_config_apply_data: ConfigMap keys of docs/contract.md §6. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_json.h"
#include "../test_main.h"

#include "config.h"

#include <string.h>

static struct gs_policy defaults(void) {
  struct gs_config cfg;
  gs_config_defaults(&cfg);
  return cfg.policy;
}

static void test_defaults(void **state) {
  (void)state;
  struct gs_policy p = defaults();
  assert_int_equal(p.unit_mib, 1024);
  assert_int_equal(p.cgpu_max_pods, 16);
  assert_int_equal(p.node_policy, GS_PLACE_BINPACK);
  assert_false(p.frag_aware);
  assert_int_equal(p.gang_timeout_s, 60);
}

/* A ConfigMap's data applied, and the policy it leaves. */
struct valid_case {
  const char *json;
  uint32_t unit_mib, cgpu_max_pods, gang_timeout_s;
  enum gs_placement node_policy;
  bool frag_aware;
};

/* Applies each case in turn to one policy (what a case leaves out keeps the
 * value the case before set) and checks every field. */
static void check_valid(const struct valid_case *c, size_t n) {
  struct gs_policy p = defaults();
  for (size_t i = 0; i < n; i++) {
    struct gs_diag d = {0};
    json_t *v = gs_test_json(c[i].json);
    assert_int_equal(gs_config_apply_data(&p, v, &d), GS_EOK);
    assert_int_equal(p.unit_mib, c[i].unit_mib);
    assert_int_equal(p.node_policy, c[i].node_policy);
    assert_int_equal(p.cgpu_max_pods, c[i].cgpu_max_pods);
    assert_int_equal(p.gang_timeout_s, c[i].gang_timeout_s);
    assert_int_equal(p.frag_aware, c[i].frag_aware);
    assert_string_equal(d.text, "");
    json_decref(v);
  }
}

static void test_valid_strings(void **state) {
  static const struct valid_case cases[] = {
      {"{\"gpuMemoryUnit\":\"128MiB\",\"nodePolicy\":\"spread\",\"cgpuMaxPodsPerGPU\":\"8\","
       "\"gangTimeoutSeconds\":\"120\",\"fragmentationAware\":\"true\",\"somethingElse\":\"ignored\"}",
       128, 8, 120, GS_PLACE_SPREAD, true},
      /* Short unit names, boundaries, binpack back again. */
      {"{\"gpuMemoryUnit\":\"1Gi\",\"nodePolicy\":\"binpack\",\"cgpuMaxPodsPerGPU\":\"1\","
       "\"gangTimeoutSeconds\":\"86400\",\"fragmentationAware\":\"false\"}",
       1024, 1, 86400, GS_PLACE_BINPACK, false},
      /* The fragmentation-aware node policy (issue 6). */
      {"{\"nodePolicy\":\"frag\",\"fragmentationAware\":\"true\"}", 1024, 1, 86400, GS_PLACE_FRAG,
       true},
      {"{\"gpuMemoryUnit\":\"128Mi\",\"cgpuMaxPodsPerGPU\":\"1024\",\"gangTimeoutSeconds\":\"0001\"}",
       128, 1024, 1, GS_PLACE_FRAG, true},
  };
  (void)state;
  check_valid(cases, sizeof cases / sizeof cases[0]);
  assert_string_equal(gs_placement_name(GS_PLACE_FRAG), "frag");
}

static void test_typed_values(void **state) {
  static const struct valid_case cases[] = {
      {"{\"cgpuMaxPodsPerGPU\":4,\"gangTimeoutSeconds\":30,\"fragmentationAware\":true}", 1024, 4,
       30, GS_PLACE_BINPACK, true},
  };
  (void)state;
  check_valid(cases, sizeof cases / sizeof cases[0]);
}

/* fragScoreNormalize (issue 32): off by default; the key sets it either
 * way, in YAML's words or as a boolean. */
static void test_frag_normalize(void **state) {
  static const struct {
    const char *json;
    bool want;
  } cases[] = {
      {"{\"fragScoreNormalize\":\"true\"}", true},
      {"{\"fragScoreNormalize\":true,\"nodePolicy\":\"frag\"}", true},
      {"{\"fragScoreNormalize\":\"off\"}", false},
  };
  (void)state;
  assert_false(defaults().frag_normalize);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct gs_policy p = defaults();
    struct gs_diag d = {0};
    json_t *v = gs_test_json(cases[i].json);
    p.frag_normalize = !cases[i].want;
    assert_int_equal(gs_config_apply_data(&p, v, &d), GS_EOK);
    assert_int_equal(p.frag_normalize, cases[i].want);
    json_decref(v);
  }
}

static void test_empty(void **state) {
  (void)state;
  struct gs_policy p = defaults(), want = defaults();
  struct gs_diag d = {0};
  assert_int_equal(gs_config_apply_data(&p, NULL, &d), GS_EOK);
  json_t *v = json_object();
  assert_int_equal(gs_config_apply_data(&p, v, &d), GS_EOK);
  assert_memory_equal(&p, &want, sizeof p);
  json_decref(v);
  v = json_array();
  assert_int_equal(gs_config_apply_data(&p, v, &d), GS_EINVAL);
  assert_string_equal(d.text, "ConfigMap data is not a mapping");
  json_decref(v);
}

/* Refused with exactly this error, place and text; nothing applied, not
 * even the valid keys. */
static void test_invalid(void **state) {
  static const struct {
    const char *json;
    enum gs_err err;
    const char *where, *text;
  } cases[] = {
      {"{\"gpuMemoryUnit\":\"2GiB\"}", GS_EUNIT, "data.gpuMemoryUnit",
       "invalid gpuMemoryUnit \"2GiB\": accepted values are 1GiB, 128MiB"},
      {"{\"gpuMemoryUnit\":\"1gib\"}", GS_EUNIT, "data.gpuMemoryUnit",
       "invalid gpuMemoryUnit \"1gib\": accepted values are 1GiB, 128MiB"},
      {"{\"gpuMemoryUnit\":1}", GS_EUNIT, "data.gpuMemoryUnit",
       "invalid gpuMemoryUnit 1: accepted values are 1GiB, 128MiB"},
      {"{\"nodePolicy\":\"Spread\",\"gpuMemoryUnit\":\"128MiB\"}", GS_EINVAL, "data.nodePolicy",
       "invalid nodePolicy \"Spread\": accepted values are binpack, spread, frag"},
      {"{\"gpuMemoryUnit\":\"128MiB\",\"cgpuMaxPodsPerGPU\":\"0\"}", GS_EINVAL,
       "data.cgpuMaxPodsPerGPU",
       "invalid cgpuMaxPodsPerGPU \"0\": accepted values are integers 1..1024"},
      {"{\"cgpuMaxPodsPerGPU\":\"1025\"}", GS_EINVAL, "data.cgpuMaxPodsPerGPU",
       "invalid cgpuMaxPodsPerGPU \"1025\": accepted values are integers 1..1024"},
      {"{\"cgpuMaxPodsPerGPU\":\"-1\"}", GS_EINVAL, "data.cgpuMaxPodsPerGPU",
       "invalid cgpuMaxPodsPerGPU \"-1\": accepted values are integers 1..1024"},
      {"{\"cgpuMaxPodsPerGPU\":\" 8\"}", GS_EINVAL, "data.cgpuMaxPodsPerGPU",
       "invalid cgpuMaxPodsPerGPU \" 8\": accepted values are integers 1..1024"},
      {"{\"cgpuMaxPodsPerGPU\":\"\"}", GS_EINVAL, "data.cgpuMaxPodsPerGPU",
       "invalid cgpuMaxPodsPerGPU \"\": accepted values are integers 1..1024"},
      {"{\"cgpuMaxPodsPerGPU\":8.5}", GS_EINVAL, "data.cgpuMaxPodsPerGPU",
       "invalid cgpuMaxPodsPerGPU 8.5: accepted values are integers 1..1024"},
      {"{\"cgpuMaxPodsPerGPU\":[8]}", GS_EINVAL, "data.cgpuMaxPodsPerGPU",
       "invalid cgpuMaxPodsPerGPU (a list): accepted values are integers 1..1024"},
      {"{\"gangTimeoutSeconds\":\"86401\"}", GS_EINVAL, "data.gangTimeoutSeconds",
       "invalid gangTimeoutSeconds \"86401\": accepted values are integers 1..86400"},
      {"{\"gangTimeoutSeconds\":\"99999999999\"}", GS_EINVAL, "data.gangTimeoutSeconds",
       "invalid gangTimeoutSeconds \"99999999999\": accepted values are integers 1..86400"},
      {"{\"gangTimeoutSeconds\":0}", GS_EINVAL, "data.gangTimeoutSeconds",
       "invalid gangTimeoutSeconds 0: accepted values are integers 1..86400"},
      {"{\"gangTimeoutSeconds\":\"60s\"}", GS_EINVAL, "data.gangTimeoutSeconds",
       "invalid gangTimeoutSeconds \"60s\": accepted values are integers 1..86400"},
      {"{\"fragmentationAware\":\"maybe\"}", GS_EINVAL, "data.fragmentationAware",
       "invalid fragmentationAware \"maybe\": accepted values are true, false"},
      {"{\"fragmentationAware\":1}", GS_EINVAL, "data.fragmentationAware",
       "invalid fragmentationAware 1: accepted values are true, false"},
      {"{\"fragScoreNormalize\":\"sometimes\"}", GS_EINVAL, "data.fragScoreNormalize",
       "invalid fragScoreNormalize \"sometimes\": accepted values are true, false"},
      {"{\"nodePolicy\":null}", GS_EINVAL, "data.nodePolicy",
       "invalid nodePolicy (empty): accepted values are binpack, spread, frag"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct gs_policy p = defaults(), before = defaults();
    struct gs_diag d = {0};
    json_t *v = gs_test_json(cases[i].json);
    assert_int_equal(gs_config_apply_data(&p, v, &d), cases[i].err);
    assert_string_equal(d.text, cases[i].text);
    assert_string_equal(d.where, cases[i].where);
    assert_memory_equal(&p, &before, sizeof p);
    json_decref(v);
  }
}

/* A real ConfigMap from the apiserver: its keys are not ours, so nothing
 * changes. */
static void test_foreign_configmap(void **state) {
  (void)state;
  struct gs_policy p = defaults(), before = defaults();
  struct gs_diag d = {0};
  json_t *cm = gs_test_json("{\"apiVersion\":\"v1\",\"data\":{\"baz\":\"qux\",\"foo\":\"changed-value\"},"
                    "\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm1\"}}");
  assert_int_equal(gs_config_apply_data(&p, json_object_get(cm, "data"), &d), GS_EOK);
  assert_memory_equal(&p, &before, sizeof p);
  json_decref(cm);
}

GS_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_frag_normalize), cmocka_unit_test(test_defaults),
             cmocka_unit_test(test_valid_strings), cmocka_unit_test(test_typed_values),
             cmocka_unit_test(test_empty), cmocka_unit_test(test_invalid),
             cmocka_unit_test(test_foreign_configmap))
