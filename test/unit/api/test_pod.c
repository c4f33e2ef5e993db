/* v1.Pod → struct gs_pod_request. */
#include "api_test.h"

#include <gpushare/place.h>

static enum gs_err decode_text(const char *text, struct gs_pod_request *req,
                               struct gs_diag *diag) {
  json_t *pod = gs_test_json(text);
  enum gs_err err;
  memset(diag, 0, sizeof *diag);
  err = gs_api_pod_decode(pod, req, diag);
  json_decref(pod);
  return err;
}

/* The schema fixture: every field present, placeholder values. */
static void test_fixture_pod(void **state) {
  json_t *pod = load_fixture_json("api-roundtrip-v1.34.0-core.v1.Pod.json");
  struct gs_pod_request req;
  struct gs_diag diag = {{0}, {0}};
  (void)state;
  assert_int_equal(gs_api_pod_decode(pod, &req, &diag), GS_EOK);
  assert_string_equal(req.name, "nameValue");
  assert_string_equal(req.ns, "namespaceValue");
  assert_string_equal(req.uid, "uidValue");
  assert_int_equal(req.ncontainers, 1);
  assert_int_equal(req.mem_units[0], 0);
  assert_int_equal(req.whole_gpus[0], 0);
  assert_int_equal(req.init_mem_units, 0);
  assert_int_equal(req.gpu_count, 1);
  assert_string_equal(req.gang_job, "");
  assert_false(gs_pod_request_is_memory(&req));
  assert_string_equal(gs_api_pod_ns(pod), "namespaceValue");
  assert_string_equal(gs_api_pod_name(pod), "nameValue");
  assert_string_equal(gs_api_pod_uid(pod), "uidValue");
  assert_string_equal(gs_api_pod_node(pod), "nodeNameValue");
  assert_string_equal(gs_api_pod_phase(pod), "phaseValue");
  assert_false(gs_api_pod_is_terminal(pod));
  json_decref(pod);
}

static void test_share_multi(void **state) {
  json_t *pod = load_data_json("pod-share-multi.json");
  struct gs_pod_request req;
  struct gs_diag diag = {{0}, {0}};
  (void)state;
  assert_int_equal(gs_api_pod_decode(pod, &req, &diag), GS_EOK);
  assert_string_equal(diag.text, "");
  assert_string_equal(req.ns, "ml");
  assert_string_equal(req.name, "trainer-0");
  assert_string_equal(req.uid, "5b1e2f7c-3c1d-4d0e-9a55-0e4b0c7d1a2b");
  assert_int_equal(req.ncontainers, 2);
  assert_int_equal(req.mem_units[0], 8);
  assert_int_equal(req.mem_units[1], 0);
  assert_int_equal(req.init_mem_units, 2);
  assert_int_equal(req.gpu_count, 2);
  assert_int_equal(gs_pod_request_mem_effective(&req), 8);
  /* Host requests from requests (limits ignored): app 2 + 0.1 CPU and
   * 8 GiB + 64 MiB beat the init container's 250m and 128 MiB. */
  assert_int_equal(req.cpu_milli, 2100);
  assert_int_equal(req.mem_mib, 8256);
  assert_true(gs_pod_request_is_memory(&req));
  assert_false(gs_pod_request_is_whole(&req));
  assert_null(gs_api_pod_node(pod));
  assert_string_equal(gs_api_pod_phase(pod), "Pending");
  json_decref(pod);
}

static void test_requests_only(void **state) {
  json_t *pod = load_data_json("pod-requests-only.json");
  struct gs_pod_request req;
  (void)state;
  assert_int_equal(gs_api_pod_decode(pod, &req, NULL), GS_EOK);
  assert_string_equal(req.ns, "default"); /* namespace absent */
  assert_string_equal(req.name, "notebook-7f9c");
  assert_int_equal(req.mem_units[0], 3); /* JSON integer in requests */
  assert_string_equal(gs_api_pod_ns(pod), "default");
  json_decref(pod);
}

static void test_topology_gang(void **state) {
  json_t *pod = load_data_json("pod-topology-gang.json");
  struct gs_pod_request req;
  (void)state;
  assert_int_equal(gs_api_pod_decode(pod, &req, NULL), GS_EOK);
  assert_int_equal(req.whole_gpus[0], 2);
  assert_int_equal(req.mem_units[0], 0);
  assert_string_equal(req.gang_job, "pytorch-dist-nccl");
  assert_int_equal(req.gang_replicas, 2);
  assert_true(gs_pod_request_is_whole(&req));
  assert_string_equal(gs_api_pod_node(pod), "gpu-b");
  json_decref(pod);
}

/* Sidecar (restartPolicy: Always) init containers follow Kubernetes'
 * effective-request rule: max(app 4 + sidecar 1, init 6 + sidecar 1) = 7. */
static void test_sidecar(void **state) {
  json_t *pod = load_data_json("pod-sidecar.json");
  struct gs_pod_request req;
  (void)state;
  assert_int_equal(gs_api_pod_decode(pod, &req, NULL), GS_EOK);
  assert_int_equal(req.mem_units[0], 4);
  assert_int_equal(req.init_mem_units, 7);
  assert_int_equal(gs_pod_request_mem_effective(&req), 7);
  json_decref(pod);

  /* Sidecar only: app 4 + sidecar 1 = 5. */
  {
    struct gs_diag diag;
    assert_int_equal(
        decode_text("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"initContainers\":[{\"name\":\"s\","
                    "\"restartPolicy\":\"Always\",\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":"
                    "\"1\"}}}],\"containers\":[{\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":"
                    "\"4\"}}}]}}",
                    &req, &diag),
        GS_EOK);
    assert_int_equal(gs_pod_request_mem_effective(&req), 5);
  }
}

static void test_limits_win(void **state) {
  struct gs_pod_request req;
  struct gs_diag diag;
  (void)state;
  assert_int_equal(decode_text("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{"
                               "\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":\"6\"},"
                               "\"requests\":{\"aliyun.com/gpu-mem\":\"2\"}}}]}}",
                               &req, &diag),
                   GS_EOK);
  assert_int_equal(req.mem_units[0], 6);
  /* null limits map and null quantity are absent (Go decodes null as zero) */
  assert_int_equal(decode_text("{\"metadata\":{\"name\":\"p\",\"namespace\":null},\"spec\":{"
                               "\"containers\":[{\"resources\":{\"limits\":null,"
                               "\"requests\":{\"aliyun.com/gpu-mem\":\"2\"}}},"
                               "{\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":null},"
                               "\"requests\":{\"aliyun.com/gpu-mem\":\"5\"}}}]}}",
                               &req, &diag),
                   GS_EOK);
  assert_int_equal(req.mem_units[0], 2);
  assert_int_equal(req.mem_units[1], 5);
  assert_string_equal(req.ns, "default");
  /* no spec at all: nothing requested */
  assert_int_equal(decode_text("{\"metadata\":{\"name\":\"p\"}}", &req, &diag), GS_EOK);
  assert_int_equal(req.ncontainers, 0);
  assert_false(gs_pod_request_is_memory(&req));
}

/* CPU (milli) and memory (MiB) requests, as kube-scheduler's
 * NodeResourcesFit counts them: requests (limits when absent), the
 * effective rule with init containers and sidecars, the pod overhead,
 * rounded up. */
static void test_host_requests(void **state) {
  static const struct {
    const char *spec;
    uint64_t cpu, mem;
  } cases[] = {
      {"{}", 0, 0},
      {"{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"1Gi\"}}},"
       "{\"resources\":{\"requests\":{\"cpu\":\"1.5\",\"memory\":\"1G\"}}}]}",
       1600, 1024 + 954}, /* 1e9 bytes = 953.67 MiB, rounded up */
      {"{\"containers\":[{\"resources\":{\"limits\":{\"cpu\":\"2\",\"memory\":\"3Mi\"}}}]}", 2000,
       3},
      {"{\"containers\":[{\"resources\":{\"limits\":{\"cpu\":\"4\"},\"requests\":{\"cpu\":\"1\"}}}]}",
       1000, 0},
      {"{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":1,\"memory\":1}}}]}", 1000, 1},
      {"{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"0.0001\",\"memory\":\"1e-30\"}}}]}",
       1, 1},
      /* init 3 CPUs beats app 1 */
      {"{\"initContainers\":[{\"resources\":{\"requests\":{\"cpu\":\"3\"}}}],"
       "\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}",
       3000, 0},
      /* a sidecar of 1 runs beside the app's 2.5 and after the init's 3 */
      {"{\"initContainers\":[{\"restartPolicy\":\"Always\",\"resources\":{\"requests\":{\"cpu\":"
       "\"1\"}}},{\"resources\":{\"requests\":{\"cpu\":\"3\"}}}],"
       "\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"2500m\"}}}]}",
       4000, 0},
      {"{\"initContainers\":[{\"restartPolicy\":\"Always\",\"resources\":{\"requests\":{\"cpu\":"
       "\"1\"}}}],\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"2500m\"}}}]}",
       3500, 0},
      {"{\"overhead\":{\"cpu\":\"250m\",\"memory\":\"120Mi\"},"
       "\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}",
       1250, 1144},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[1024];
    struct gs_pod_request req;
    struct gs_diag diag;
    snprintf(text, sizeof text, "{\"metadata\":{\"name\":\"p\"},\"spec\":%s}", cases[i].spec);
    if (decode_text(text, &req, &diag) != GS_EOK)
      fail_msg("case %zu: %s: %s", i, diag.where, diag.text);
    if (req.cpu_milli != cases[i].cpu || req.mem_mib != cases[i].mem)
      fail_msg("case %zu: cpu %llu mem %llu, want %llu %llu", i,
               (unsigned long long)req.cpu_milli, (unsigned long long)req.mem_mib,
               (unsigned long long)cases[i].cpu, (unsigned long long)cases[i].mem);
  }
}

static void test_errors(void **state) {
  static const struct api_err_case cases[] = {
      {"[]", GS_EPARSE, "Pod", "must be an object"},
      {"{}", GS_EPARSE, "Pod.metadata", "missing pod metadata"},
      {"{\"metadata\":[]}", GS_EPARSE, "Pod.metadata", "must be an object, not an array"},
      {"{\"metadata\":{}}", GS_EPARSE, "Pod.metadata.name", "missing pod name"},
      {"{\"metadata\":{\"name\":\"\"}}", GS_EPARSE, "Pod.metadata.name", "missing pod name"},
      {"{\"metadata\":{\"name\":7}}", GS_EPARSE, "Pod.metadata.name", "must be a string"},
      {"{\"metadata\":{\"name\":\"p\",\"namespace\":1}}", GS_EPARSE, "Pod.metadata.namespace",
       "must be a string, not an integer"},
      {"{\"metadata\":{\"name\":\"p\",\"uid\":true}}", GS_EPARSE, "Pod.metadata.uid",
       "must be a string, not a boolean"},
      {"{\"metadata\":{\"name\":\"p\",\"labels\":\"x\"}}", GS_EPARSE, "Pod.metadata.labels",
       "must be an object"},
      {"{\"metadata\":{\"name\":\"p\",\"labels\":{\"aliyun.com/gpu-count\":2}}}", GS_EPARSE,
       "Pod.metadata.labels[\"aliyun.com/gpu-count\"]", "must be a string"},
      {"{\"metadata\":{\"name\":\"p\",\"labels\":{\"gpu-topology\":\"j\","
       "\"gpu-topology-replica\":\"0\"}}}",
       GS_EPARSE, "Pod.metadata.labels[\"gpu-topology-replica\"]", "from 1 to"},
      {"{\"metadata\":{\"name\":\"p\",\"labels\":{\"gpu-topology\":\"j\","
       "\"gpu-topology-replica\":\"two\"}}}",
       GS_EPARSE, "Pod.metadata.labels[\"gpu-topology-replica\"]", "\"two\""},
      {"{\"metadata\":{\"name\":\"p\"},\"spec\":[]}", GS_EPARSE, "Pod.spec",
       "must be an object"},
      {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":{}}}", GS_EPARSE,
       "Pod.spec.containers", "must be an array"},
      {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[1]}}", GS_EPARSE,
       "Pod.spec.containers[0]", "must be an object"},
      {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{},{\"resources\":5}]}}",
       GS_EPARSE, "Pod.spec.containers[1].resources", "must be an object"},
      {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{},{\"resources\":{"
       "\"limits\":[]}}]}}",
       GS_EPARSE, "Pod.spec.containers[1].resources.limits", "must be an object"},
      {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{},{\"resources\":{"
       "\"limits\":{\"aliyun.com/gpu-mem\":\"-1\"}}}]}}",
       GS_ERANGE, "Pod.spec.containers[1].resources.limits[\"aliyun.com/gpu-mem\"]",
       "quantity \"-1\" is negative"},
      {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"resources\":{"
       "\"limits\":{\"aliyun.com/gpu-mem\":\"1.5\"}}}]}}",
       GS_EPARSE, "Pod.spec.containers[0].resources.limits[\"aliyun.com/gpu-mem\"]",
       "not a whole number"},
      {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"resources\":{"
       "\"limits\":{\"aliyun.com/gpu-mem\":\"abc\"}}}]}}",
       GS_EPARSE, "Pod.spec.containers[0].resources.limits[\"aliyun.com/gpu-mem\"]",
       "not a valid quantity"},
      {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"resources\":{"
       "\"requests\":{\"aliyun.com/gpu\":2.0}}}]}}",
       GS_EPARSE, "Pod.spec.containers[0].resources.requests[\"aliyun.com/gpu\"]",
       "real number"},
      {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[],\"initContainers\":[{"
       "\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":\"x\"}}}]}}",
       GS_EPARSE, "Pod.spec.initContainers[0].resources.limits[\"aliyun.com/gpu-mem\"]",
       "not a valid quantity"},
      {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"resources\":{"
       "\"requests\":{\"cpu\":\"two\"}}}]}}",
       GS_EPARSE, "Pod.spec.containers[0].resources.requests[\"cpu\"]", "not a valid quantity"},
      {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"resources\":{"
       "\"limits\":{\"memory\":\"-1Gi\"}}}]}}",
       GS_ERANGE, "Pod.spec.containers[0].resources.limits[\"memory\"]", "is negative"},
      {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"resources\":{"
       "\"requests\":{\"cpu\":\"1e40\"}}}]}}",
       GS_ERANGE, "Pod.spec.containers[0].resources.requests[\"cpu\"]", "too large"},
      {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"resources\":{"
       "\"requests\":{\"memory\":1.5}}}]}}",
       GS_EPARSE, "Pod.spec.containers[0].resources.requests[\"memory\"]", "string or an integer"},
      {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"overhead\":{\"cpu\":\"x\"}}}", GS_EPARSE,
       "Pod.spec.overhead[\"cpu\"]", "not a valid quantity"},
      {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"overhead\":7}}", GS_EPARSE,
       "Pod.spec.overhead", "must be an object"},
      {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"initContainers\":[{\"restartPolicy\":1}]}}",
       GS_EPARSE, "Pod.spec.initContainers[0].restartPolicy", "must be a string"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct gs_pod_request req;
    struct gs_diag diag;
    check_err_case(i, &cases[i], decode_text(cases[i].input, &req, &diag), &diag);
  }
}

/* A bad aliyun.com/gpu-count label is not a decode error (that would fail
 * the whole filter call): the request records it and the core refuses the
 * pod on every node with a reason (issue 13 item 8). */
static void test_bad_gpu_count_label(void **state) {
  static const struct {
    const char *value;
    uint32_t count;
    const char *text;
    const char *reason;
  } cases[] = {
      {"0", 0, "", "aliyun.com/gpu-count 0 is out of range 1..64"},
      {"65", 65, "", "aliyun.com/gpu-count 65 is out of range 1..64"},
      {"-1", 0, "-1", "aliyun.com/gpu-count \"-1\" is not a number from 1 to 64"},
      {"two", 0, "two", "aliyun.com/gpu-count \"two\" is not a number from 1 to 64"},
      {"99999999999", 0, "99999999999",
       "aliyun.com/gpu-count \"99999999999\" is not a number from 1 to 64"},
  };
  struct gs_policy policy;
  (void)state;
  gs_policy_init(&policy);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char json[512];
    struct gs_status st;
    struct gs_pod_request req;
    struct gs_diag diag;
    snprintf(json, sizeof json,
             "{\"metadata\":{\"name\":\"p\",\"labels\":{\"aliyun.com/gpu-count\":\"%s\"}},"
             "\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":"
             "\"4\"}}}]}}",
             cases[i].value);
    assert_int_equal(decode_text(json, &req, &diag), GS_EOK);
    assert_int_equal(req.gpu_count, cases[i].count);
    assert_string_equal(req.gpu_count_text, cases[i].text);
    assert_int_equal(gs_place_check_pod(&req, &policy, &st), GS_EUNRESOLVABLE);
    assert_string_equal(st.reason, cases[i].reason);
  }
}

static void test_caps(void **state) {
  json_t *pod = gs_test_json("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[]}}");
  json_t *arr = json_object_get(json_object_get(pod, "spec"), "containers");
  struct gs_pod_request req;
  struct gs_diag diag = {{0}, {0}};
  char longname[GS_NAME_MAX + 2];
  (void)state;
  for (int i = 0; i < GS_MAX_CONTAINERS; i++)
    assert_int_equal(json_array_append_new(arr, json_pack("{s:{s:{s:s}}}", "resources",
                                                           "limits", "aliyun.com/gpu-mem", "1")),
                     0);
  assert_int_equal(gs_api_pod_decode(pod, &req, &diag), GS_EOK);
  assert_int_equal(req.ncontainers, GS_MAX_CONTAINERS);
  assert_int_equal(gs_pod_request_mem_sum(&req), GS_MAX_CONTAINERS);
  assert_int_equal(json_array_append_new(arr, json_object()), 0);
  assert_int_equal(gs_api_pod_decode(pod, &req, &diag), GS_ETOOBIG);
  assert_where(diag, "Pod.spec.containers");
  assert_diag(diag, "more than the limit of 64");

  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  json_array_clear(arr);
  json_object_set_new(json_object_get(pod, "metadata"), "name", json_string(longname));
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_api_pod_decode(pod, &req, &diag), GS_ETOOBIG);
  assert_where(diag, "Pod.metadata.name");
  longname[GS_NAME_MAX] = '\0';
  json_object_set_new(json_object_get(pod, "metadata"), "name", json_string(longname));
  assert_int_equal(gs_api_pod_decode(pod, &req, &diag), GS_EOK);
  json_object_set_new(json_object_get(pod, "metadata"), "namespace", json_string(longname));
  memset(&diag, 0, sizeof diag);
  assert_int_equal(gs_api_pod_decode(pod, &req, &diag), GS_ETOOBIG);
  assert_where(diag, "Pod.metadata.namespace");
  json_decref(pod);
}

static void test_gang_labels(void **state) {
  struct gs_pod_request req;
  struct gs_diag diag;
  (void)state;
  /* job without replica count: a gang of one */
  assert_int_equal(
      decode_text("{\"metadata\":{\"name\":\"p\",\"labels\":{\"gpu-topology\":\"j\"}}}", &req,
                  &diag),
      GS_EOK);
  assert_string_equal(req.gang_job, "j");
  assert_int_equal(req.gang_replicas, 1);
  /* replica label alone is someone else's label */
  assert_int_equal(decode_text("{\"metadata\":{\"name\":\"p\",\"labels\":{"
                               "\"gpu-topology-replica\":\"junk\"}}}",
                               &req, &diag),
                   GS_EOK);
  assert_string_equal(req.gang_job, "");
  assert_int_equal(req.gang_replicas, 0);
}

static void test_helpers(void **state) {
  json_t *pod = gs_test_json("{\"metadata\":{\"name\":1,\"namespace\":\"\"},"
                              "\"spec\":{\"nodeName\":\"\"},\"status\":{\"phase\":\"Failed\"}}");
  (void)state;
  assert_null(gs_api_pod_name(pod));
  assert_null(gs_api_pod_uid(pod));
  assert_string_equal(gs_api_pod_ns(pod), "default");
  assert_null(gs_api_pod_node(pod));
  assert_true(gs_api_pod_is_terminal(pod));
  json_object_set_new(json_object_get(pod, "status"), "phase", json_string("Succeeded"));
  assert_true(gs_api_pod_is_terminal(pod));
  json_object_set_new(json_object_get(pod, "status"), "phase", json_string("Running"));
  assert_false(gs_api_pod_is_terminal(pod));
  json_decref(pod);
  assert_null(gs_api_pod_name(NULL));
  assert_string_equal(gs_api_pod_ns(NULL), "default");
  assert_false(gs_api_pod_is_terminal(NULL));
}

/* gs_api_pod_init_asks: each init container's amount in order (limits,
 * else requests; 0 for one asking nothing), the same diagnostics as the
 * pod's decode, ret untouched on error. */
static void test_init_asks(void **state) {
  (void)state;
  uint64_t got[GS_MAX_CONTAINERS] = {0};
  uint32_t n = 99;
  struct gs_diag d = {0};
  json_t *pod = json_loads(
      "{\"spec\":{\"initContainers\":[{\"name\":\"a\",\"resources\":{\"limits\":"
      "{\"aliyun.com/gpu-mem\":\"6\"}}},{\"name\":\"b\"},{\"name\":\"c\",\"resources\":"
      "{\"requests\":{\"aliyun.com/gpu-mem\":2,\"aliyun.com/gpu\":\"1\"}}}]}}",
      0, NULL);
  assert_non_null(pod);
  assert_int_equal(gs_api_pod_init_asks(pod, GS_RES_GPU_MEM, got, &n, &d), GS_EOK);
  assert_int_equal(n, 3);
  assert_int_equal(got[0], 6);
  assert_int_equal(got[1], 0);
  assert_int_equal(got[2], 2);
  assert_int_equal(gs_api_pod_init_asks(pod, GS_RES_GPU, got, &n, &d), GS_EOK);
  assert_int_equal(got[0], 0);
  assert_int_equal(got[2], 1);
  assert_int_equal(gs_api_pod_init_asks(pod, "nvidia.com/gpu", got, &n, &d), GS_EINVAL);
  assert_string_equal(d.text, "unknown resource \"nvidia.com/gpu\"");
  json_decref(pod);
  /* no init containers; a bad quantity (ret unchanged) */
  pod = json_loads("{\"spec\":{\"containers\":[]}}", 0, NULL);
  assert_int_equal(gs_api_pod_init_asks(pod, GS_RES_GPU_MEM, got, &n, &d), GS_EOK);
  assert_int_equal(n, 0);
  json_decref(pod);
  pod = json_loads("{\"spec\":{\"initContainers\":[{\"resources\":{\"limits\":"
                   "{\"aliyun.com/gpu-mem\":\"1.5\"}}}]}}",
                   0, NULL);
  memset(&d, 0, sizeof d);
  got[0] = 42;
  assert_int_not_equal(gs_api_pod_init_asks(pod, GS_RES_GPU_MEM, got, &n, &d), GS_EOK);
  assert_string_equal(d.where,
                      "Pod.spec.initContainers[0].resources.limits[\"aliyun.com/gpu-mem\"]");
  assert_int_equal(got[0], 42);
  assert_int_equal(n, 0);
  json_decref(pod);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixture_pod),   cmocka_unit_test(test_share_multi),
      cmocka_unit_test(test_requests_only), cmocka_unit_test(test_topology_gang),
      cmocka_unit_test(test_sidecar),       cmocka_unit_test(test_host_requests),       cmocka_unit_test(test_limits_win),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_bad_gpu_count_label),        cmocka_unit_test(test_caps),
      cmocka_unit_test(test_gang_labels),   cmocka_unit_test(test_helpers),
      cmocka_unit_test(test_init_asks),
  };
  return cmocka_run_group_tests_name("api_pod", tests, NULL, NULL);
}
