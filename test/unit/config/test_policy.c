/* gs_config_apply_data: ConfigMap keys of docs/contract.md §6. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "config.h"

#include <string.h>

static struct gs_policy defaults(void) {
  struct gs_config cfg;
  gs_config_defaults(&cfg);
  return cfg.policy;
}

static json_t *data(const char *json) {
  json_error_t je;
  json_t *v = json_loads(json, 0, &je);
  if (v == NULL)
    fail_msg("bad test JSON: %s", je.text);
  return v;
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

static void test_valid_strings(void **state) {
  (void)state;
  struct gs_policy p = defaults();
  struct gs_diag d = {0};
  json_t *v = data("{\"gpuMemoryUnit\":\"128MiB\",\"nodePolicy\":\"spread\","
                   "\"cgpuMaxPodsPerGPU\":\"8\",\"gangTimeoutSeconds\":\"120\","
                   "\"fragmentationAware\":\"true\",\"somethingElse\":\"ignored\"}");
  assert_int_equal(gs_config_apply_data(&p, v, &d), GS_EOK);
  assert_int_equal(p.unit_mib, 128);
  assert_int_equal(p.node_policy, GS_PLACE_SPREAD);
  assert_int_equal(p.cgpu_max_pods, 8);
  assert_int_equal(p.gang_timeout_s, 120);
  assert_true(p.frag_aware);
  assert_string_equal(d.text, "");
  json_decref(v);

  /* Short unit names, boundaries, binpack back again. */
  v = data("{\"gpuMemoryUnit\":\"1Gi\",\"nodePolicy\":\"binpack\",\"cgpuMaxPodsPerGPU\":\"1\","
           "\"gangTimeoutSeconds\":\"86400\",\"fragmentationAware\":\"false\"}");
  assert_int_equal(gs_config_apply_data(&p, v, &d), GS_EOK);
  assert_int_equal(p.unit_mib, 1024);
  assert_int_equal(p.node_policy, GS_PLACE_BINPACK);
  assert_int_equal(p.cgpu_max_pods, 1);
  assert_int_equal(p.gang_timeout_s, 86400);
  assert_false(p.frag_aware);
  json_decref(v);

  /* The fragmentation-aware node policy (issue 6). */
  v = data("{\"nodePolicy\":\"frag\",\"fragmentationAware\":\"true\"}");
  assert_int_equal(gs_config_apply_data(&p, v, &d), GS_EOK);
  assert_int_equal(p.node_policy, GS_PLACE_FRAG);
  assert_true(p.frag_aware);
  assert_string_equal(gs_placement_name(p.node_policy), "frag");
  json_decref(v);

  v = data("{\"gpuMemoryUnit\":\"128Mi\",\"cgpuMaxPodsPerGPU\":\"1024\","
           "\"gangTimeoutSeconds\":\"0001\"}");
  assert_int_equal(gs_config_apply_data(&p, v, &d), GS_EOK);
  assert_int_equal(p.unit_mib, 128);
  assert_int_equal(p.cgpu_max_pods, 1024);
  assert_int_equal(p.gang_timeout_s, 1);
  json_decref(v);
}

static void test_typed_values(void **state) {
  (void)state;
  struct gs_policy p = defaults();
  struct gs_diag d = {0};
  json_t *v = data("{\"cgpuMaxPodsPerGPU\":4,\"gangTimeoutSeconds\":30,"
                   "\"fragmentationAware\":true}");
  assert_int_equal(gs_config_apply_data(&p, v, &d), GS_EOK);
  assert_int_equal(p.cgpu_max_pods, 4);
  assert_int_equal(p.gang_timeout_s, 30);
  assert_true(p.frag_aware);
  json_decref(v);
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

static void check_invalid(const char *json, enum gs_err want_err, const char *want_where,
                          const char *want_text) {
  struct gs_policy p = defaults(), before = defaults();
  struct gs_diag d = {0};
  json_t *v = data(json);
  assert_int_equal(gs_config_apply_data(&p, v, &d), want_err);
  assert_string_equal(d.text, want_text);
  assert_string_equal(d.where, want_where);
  /* Nothing applied, not even the valid keys. */
  assert_memory_equal(&p, &before, sizeof p);
  json_decref(v);
}

static void test_invalid(void **state) {
  (void)state;
  check_invalid("{\"gpuMemoryUnit\":\"2GiB\"}", GS_EUNIT, "data.gpuMemoryUnit",
                "invalid gpuMemoryUnit \"2GiB\": accepted values are 1GiB, 128MiB");
  check_invalid("{\"gpuMemoryUnit\":\"1gib\"}", GS_EUNIT, "data.gpuMemoryUnit",
                "invalid gpuMemoryUnit \"1gib\": accepted values are 1GiB, 128MiB");
  check_invalid("{\"gpuMemoryUnit\":1}", GS_EUNIT, "data.gpuMemoryUnit",
                "invalid gpuMemoryUnit 1: accepted values are 1GiB, 128MiB");
  check_invalid("{\"nodePolicy\":\"Spread\",\"gpuMemoryUnit\":\"128MiB\"}", GS_EINVAL,
                "data.nodePolicy",
                "invalid nodePolicy \"Spread\": accepted values are binpack, spread, frag");
  check_invalid("{\"gpuMemoryUnit\":\"128MiB\",\"cgpuMaxPodsPerGPU\":\"0\"}", GS_EINVAL,
                "data.cgpuMaxPodsPerGPU",
                "invalid cgpuMaxPodsPerGPU \"0\": accepted values are integers 1..1024");
  check_invalid("{\"cgpuMaxPodsPerGPU\":\"1025\"}", GS_EINVAL, "data.cgpuMaxPodsPerGPU",
                "invalid cgpuMaxPodsPerGPU \"1025\": accepted values are integers 1..1024");
  check_invalid("{\"cgpuMaxPodsPerGPU\":\"-1\"}", GS_EINVAL, "data.cgpuMaxPodsPerGPU",
                "invalid cgpuMaxPodsPerGPU \"-1\": accepted values are integers 1..1024");
  check_invalid("{\"cgpuMaxPodsPerGPU\":\" 8\"}", GS_EINVAL, "data.cgpuMaxPodsPerGPU",
                "invalid cgpuMaxPodsPerGPU \" 8\": accepted values are integers 1..1024");
  check_invalid("{\"cgpuMaxPodsPerGPU\":\"\"}", GS_EINVAL, "data.cgpuMaxPodsPerGPU",
                "invalid cgpuMaxPodsPerGPU \"\": accepted values are integers 1..1024");
  check_invalid("{\"cgpuMaxPodsPerGPU\":8.5}", GS_EINVAL, "data.cgpuMaxPodsPerGPU",
                "invalid cgpuMaxPodsPerGPU 8.5: accepted values are integers 1..1024");
  check_invalid("{\"cgpuMaxPodsPerGPU\":[8]}", GS_EINVAL, "data.cgpuMaxPodsPerGPU",
                "invalid cgpuMaxPodsPerGPU (a list): accepted values are integers 1..1024");
  check_invalid("{\"gangTimeoutSeconds\":\"86401\"}", GS_EINVAL, "data.gangTimeoutSeconds",
                "invalid gangTimeoutSeconds \"86401\": accepted values are integers 1..86400");
  check_invalid("{\"gangTimeoutSeconds\":\"99999999999\"}", GS_EINVAL,
                "data.gangTimeoutSeconds",
                "invalid gangTimeoutSeconds \"99999999999\": accepted values are integers "
                "1..86400");
  check_invalid("{\"gangTimeoutSeconds\":0}", GS_EINVAL, "data.gangTimeoutSeconds",
                "invalid gangTimeoutSeconds 0: accepted values are integers 1..86400");
  check_invalid("{\"gangTimeoutSeconds\":\"60s\"}", GS_EINVAL, "data.gangTimeoutSeconds",
                "invalid gangTimeoutSeconds \"60s\": accepted values are integers 1..86400");
  check_invalid("{\"fragmentationAware\":\"maybe\"}", GS_EINVAL, "data.fragmentationAware",
                "invalid fragmentationAware \"maybe\": accepted values are true, false");
  check_invalid("{\"fragmentationAware\":1}", GS_EINVAL, "data.fragmentationAware",
                "invalid fragmentationAware 1: accepted values are true, false");
  check_invalid("{\"nodePolicy\":null}", GS_EINVAL, "data.nodePolicy",
                "invalid nodePolicy (empty): accepted values are binpack, spread, frag");
}

/* A real ConfigMap from the apiserver: its keys are not ours, so nothing
 * changes. */
static void test_foreign_configmap(void **state) {
  (void)state;
  struct gs_policy p = defaults(), before = defaults();
  struct gs_diag d = {0};
  json_t *cm = data("{\"apiVersion\":\"v1\",\"data\":{\"baz\":\"qux\",\"foo\":\"changed-value\"},"
                    "\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm1\"}}");
  assert_int_equal(gs_config_apply_data(&p, json_object_get(cm, "data"), &d), GS_EOK);
  assert_memory_equal(&p, &before, sizeof p);
  json_decref(cm);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults),     cmocka_unit_test(test_valid_strings),
      cmocka_unit_test(test_typed_values), cmocka_unit_test(test_empty),
      cmocka_unit_test(test_invalid),      cmocka_unit_test(test_foreign_configmap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
