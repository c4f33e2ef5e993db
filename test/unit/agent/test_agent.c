/* gpushare-node's decisions (src/agent, docs/node-agent.md): the inventory,
 * what is advertised, which pod an Allocate is for, the env each container
 * receives (single-card, multi-card, mps, 128 MiB, whole GPUs), ten pods
 * matched in a fixed order whatever the listing order, and every refusal's
 * text. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "agent.h"
#include "agent_test.h"

#include <gpushare/annot.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char INV2[] =
    "{\"gpus\":[{\"uuid\":\"" UUID0 "\",\"memoryMiB\":16384,\"minor\":0},"
    "{\"uuid\":\"" UUID1 "\",\"memoryMiB\":16384,\"minor\":1,\"healthy\":true}],"
    "\"links\":[[\"X\",\"NV2\"],[\"NV2\",\"X\"]]}";

static struct gs_agent_inventory *inv2(void) {
  static struct gs_agent_inventory inv;
  struct gs_diag d = {0};
  assert_int_equal(gs_agent_inventory_decode(INV2, strlen(INV2), &inv, &d), GS_EOK);
  return &inv;
}

/* A pending memory pod on NODE: containers asking units[i] (0: none) and,
 * when v2 != NULL, gpushare's allocation annotations with assume time t. */
static json_t *pod_of(const char *ns, const char *name, const char *resource,
                      const uint64_t *units, size_t n, const char *v2, int64_t t) {
  json_t *containers = json_array(), *anns = json_object();
  char ts[24];
  for (size_t i = 0; i < n; i++) {
    char cname[24];
    snprintf(cname, sizeof cname, "c%zu", i);
    json_t *c = json_pack("{ss}", "name", cname);
    char q[24];
    snprintf(q, sizeof q, "%llu", (unsigned long long)units[i]);
    if (units[i] > 0) /* quantities are strings in a v1.Pod */
      json_object_set_new(c, "resources", json_pack("{s{ss}}", "limits", resource, q));
    json_array_append_new(containers, c);
  }
  snprintf(ts, sizeof ts, "%lld", (long long)t);
  if (v2 != NULL && strcmp(resource, GS_AGENT_RES_WHOLE) == 0) {
    json_object_set_new(anns, GS_ANN_TOPO_ALLOCATION, json_string(v2));
  } else if (v2 != NULL) {
    json_object_set_new(anns, GS_ANN_ALLOCATION, json_string(v2));
    json_object_set_new(anns, GS_ANN_ASSIGNED, json_string("false"));
    json_object_set_new(anns, GS_ANN_ASSUME_TIME, json_string(ts));
    json_object_set_new(anns, GS_ANN_LEGACY_ASSIGNED, json_string("false"));
    json_object_set_new(anns, GS_ANN_LEGACY_ASSUME_TIME, json_string(ts));
  }
  return json_pack("{s{ssssssso}s{ssso}s{ss}}", "metadata", "namespace", ns, "name", name, "uid",
                   name, "annotations", anns, "spec", "nodeName", NODE, "containers",
                   containers, "status", "phase", "Pending");
}

static json_t *mem_pod(const char *name, uint64_t units, const char *v2, int64_t t) {
  return pod_of("default", name, GS_AGENT_RES_MEM, &units, 1, v2, t);
}

/* Allocate over pods (stolen); the answer as JSON, or NULL with *err. */
static json_t *allocate(const struct gs_agent_config *cfg, const char *resource, uint64_t n,
                        json_t *pods, enum gs_err *ret_err, struct gs_diag *d) {
  json_t *answer = agent_allocate(cfg, inv2(), resource, n, pods, ret_err, d);
  json_decref(pods);
  return answer;
}

/* Allocate over a list of the one pod (stolen). */
static json_t *allocate_pod(const struct gs_agent_config *cfg, const char *resource, uint64_t n,
                            json_t *pod, enum gs_err *ret_err, struct gs_diag *d) {
  return allocate(cfg, resource, n, json_pack("[o]", pod), ret_err, d);
}

/* ---- inventory, capacity, devices, ConfigMap, topology ---------------------------- */

static void test_inventory(void **state) {
  (void)state;
  struct gs_agent_inventory *inv = inv2();
  assert_int_equal(inv->n, 2);
  assert_string_equal(inv->gpu[1].uuid, UUID1);
  assert_int_equal(inv->gpu[1].mem_mib, 16384);
  assert_true(inv->gpu[0].healthy);
  assert_true(inv->has_topo);

  static const struct {
    const char *text, *msg;
  } bad[] = {
      {"{\"gpus\":[]}", "must be a non-empty array of GPUs"},
      {"{\"gpus\":[{\"uuid\":\"a\",\"memoryMiB\":0}]}", "memoryMiB must be an integer from 1"},
      {"{\"gpus\":[{\"uuid\":\"a\",\"memoryMiB\":1},{\"uuid\":\"a\",\"memoryMiB\":1}]}",
       "GPUs 0 and 1 have the same uuid \"a\""},
      {"{\"gpus\":[{\"uuid\":\"a\",\"memoryMiB\":1,\"mem\":2}]}", "unknown key \"mem\""},
      {"{\"gpus\":[{\"uuid\":\"a,b\",\"memoryMiB\":1}]}", "has a comma"},
      {"{\"gpus\":[{\"uuid\":\"a\",\"memoryMiB\":1}],\"links\":[[\"X\",\"NV1\"],[\"NV1\",\"X\"]]}",
       "a 2×2 matrix for 1 GPUs"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct gs_agent_inventory out;
    struct gs_diag d = {0};
    out.n = 99;
    assert_int_not_equal(gs_agent_inventory_decode(bad[i].text, strlen(bad[i].text), &out, &d),
                         GS_EOK);
    assert_non_null(strstr(d.text, bad[i].msg));
    assert_int_equal(out.n, 99); /* written only on success */
  }
}

static void test_capacity_and_devices(void **state) {
  (void)state;
  struct gs_agent_config gib = cfg_of(GS_UNIT_GIB, GS_MODE_SHARE);
  struct gs_agent_config mib = cfg_of(GS_UNIT_128MIB, GS_MODE_SHARE);
  struct gs_agent_config topo = cfg_of(GS_UNIT_GIB, GS_MODE_TOPOLOGY);
  struct gs_agent_inventory inv = *inv2();
  char *s;
  json_t *devs;

  assert_int_equal(gs_agent_mem_units(&gib, &inv), 32);
  assert_int_equal(gs_agent_mem_units(&mib, &inv), 256);
  inv.gpu[1].mem_mib = 15109; /* a real card's odd size: floor */
  assert_int_equal(gs_agent_mem_units(&gib, &inv), 16 + 14);
  inv.gpu[1].healthy = false;

  s = gs_agent_devices(&gib, &inv, GS_AGENT_RES_MEM);
  devs = json_loads(s, 0, NULL);
  free(s);
  assert_int_equal(json_array_size(devs), 30);
  assert_string_equal(json_string_value(json_object_get(json_array_get(devs, 0), "id")),
                      UUID0 "-_-0");
  assert_string_equal(json_string_value(json_object_get(json_array_get(devs, 0), "health")),
                      "Healthy");
  assert_string_equal(json_string_value(json_object_get(json_array_get(devs, 29), "id")),
                      UUID1 "-_-13");
  assert_string_equal(json_string_value(json_object_get(json_array_get(devs, 29), "health")),
                      "Unhealthy");
  json_decref(devs);

  s = gs_agent_devices(&gib, &inv, GS_AGENT_RES_COUNT);
  assert_string_equal(s, "[{\"id\":\"" UUID0 "\",\"health\":\"Healthy\"},{\"id\":\"" UUID1
                         "\",\"health\":\"Unhealthy\"}]");
  free(s);
  assert_null(gs_agent_devices(&gib, &inv, "nvidia.com/gpu"));

  s = gs_agent_resources(&gib);
  assert_string_equal(s, "[\"aliyun.com/gpu-mem\",\"aliyun.com/gpu-count\"]");
  free(s);
  s = gs_agent_resources(&topo);
  assert_string_equal(s, "[\"aliyun.com/gpu-mem\",\"aliyun.com/gpu-count\",\"aliyun.com/gpu\"]");
  free(s);

  s = gs_agent_unhealthy_data(&inv);
  assert_string_equal(s, "{\"gpus\":\"1\"}");
  free(s);
  s = gs_agent_unhealthy_data(inv2());
  assert_string_equal(s, "{\"gpus\":\"\"}");
  free(s);
}

static void test_topology_is_gpushare_topo_text(void **state) {
  (void)state;
  struct gs_agent_inventory inv = *inv2();
  char *s = gs_agent_topology(&inv);
  /* what gpushare-topo prints for this matrix (test/integration checks the binary) */
  assert_string_equal(s, "{\"links\":[[\"X\",\"NV2\"],[\"NV2\",\"X\"]]}");
  free(s);
  inv.has_topo = false;
  assert_null(gs_agent_topology(&inv));
}

static void test_config_check(void **state) {
  (void)state;
  struct gs_agent_config c = cfg_of(512, GS_MODE_SHARE);
  struct gs_diag d = {0};
  assert_int_equal(gs_agent_config_check(&c, &d), GS_EINVAL);
  assert_string_equal(d.text, "512 MiB: the unit must be 1GiB or 128MiB");
  c = cfg_of(GS_UNIT_GIB, GS_MODE_MPS);
  c.mps_pipe_dir[0] = '\0';
  memset(&d, 0, sizeof d);
  assert_int_equal(gs_agent_config_check(&c, &d), GS_EINVAL);
  assert_non_null(strstr(d.text, "an mps node needs the MPS pipe directory"));
}

/* ---- Allocate ----------------------------------------------------------------------- */

static void test_single_card(void **state) {
  (void)state;
  struct gs_agent_config cfg = cfg_of(GS_UNIT_GIB, GS_MODE_SHARE);
  struct gs_diag d;
  json_t *a;
  a = allocate_pod(&cfg, GS_AGENT_RES_MEM, 4, mem_pod("p1", 4, "{\"0\":{\"1\":4}}", 100), NULL, &d);
  assert_non_null(a);
  assert_string_equal(json_string_value(json_object_get(json_object_get(a, "pod"), "name")), "p1");
  assert_string_equal(json_string_value(json_object_get(a, "container")), "c0");
  assert_envs(a,
              "NVIDIA_VISIBLE_DEVICES", UUID1,
              "ALIYUN_COM_GPU_MEM_IDX", "1",
              "ALIYUN_COM_GPU_MEM_POD", "4",
              "ALIYUN_COM_GPU_MEM_CONTAINER", "4",
              "ALIYUN_COM_GPU_MEM_DEV", "16",
              "GPUSHARE_GPU_MEM_LIMIT_MIB", "4096",
              "GPUSHARE_GPU_MEM_UNIT_MIB", "1024",
              "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", NULL);
  assert_int_equal(json_object_size(json_object_get(a, "envs")), 7);
  assert_int_equal(json_array_size(json_object_get(a, "mounts")), 0);
  assert_string_equal(patched(a, GS_AGENT_ANN_CONTAINERS), "0");
  assert_string_equal(patched(a, "ALIYUN_COM_GPU_MEM_ASSIGNED"), "true");
  assert_string_equal(patched(a, GS_ANN_ASSIGNED), "true");
  assert_string_equal(patched(a, "ALIYUN_COM_GPU_MEM_ASSIGN_TIME"), "1800000000000000000");
  json_decref(a);
}

static void test_multi_card(void **state) {
  (void)state;
  struct gs_agent_config cfg = cfg_of(GS_UNIT_GIB, GS_MODE_SHARE);
  struct gs_diag d;
  json_t *a;
  a = allocate_pod(&cfg, GS_AGENT_RES_MEM, 8,
                   mem_pod("multi", 8, "{\"0\":{\"0\":4,\"1\":4}}", 100), NULL, &d);
  assert_non_null(a);
  assert_envs(a,
              "NVIDIA_VISIBLE_DEVICES", UUID0 "," UUID1,
              "ALIYUN_COM_GPU_MEM_IDX", "0,1",
              "ALIYUN_COM_GPU_MEM_POD", "8",
              "ALIYUN_COM_GPU_MEM_CONTAINER", "8",
              "ALIYUN_COM_GPU_MEM_DEV", "16",
              "GPUSHARE_GPU_MEM_LIMIT_MIB", "4096,4096");
  json_decref(a);
}

static void test_mps(void **state) {
  (void)state;
  struct gs_agent_config cfg = cfg_of(GS_UNIT_GIB, GS_MODE_MPS);
  struct gs_diag d;
  json_t *a, *m;
  a = allocate_pod(&cfg, GS_AGENT_RES_MEM, 6,
                   mem_pod("multi", 6, "{\"0\":{\"0\":3,\"1\":3}}", 100), NULL, &d);
  assert_non_null(a);
  assert_envs(a,
              "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=3072M,1=3072M",
              "CUDA_MPS_PIPE_DIRECTORY", "/var/run/nvidia/mps");
  m = json_array_get(json_object_get(a, "mounts"), 0);
  assert_string_equal(json_string_value(json_object_get(m, "hostPath")), "/var/run/nvidia/mps");
  assert_string_equal(json_string_value(json_object_get(m, "containerPath")),
                      "/var/run/nvidia/mps");
  json_decref(a);
  /* one GPU, not the first: the container's ordinal is still 0 */
  a = allocate_pod(&cfg, GS_AGENT_RES_MEM, 2,
                   mem_pod("one", 2, "{\"0\":{\"1\":2}}", 100), NULL, &d);
  assert_string_equal(env(a, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=2048M");
  json_decref(a);
}

static void test_128mib(void **state) {
  (void)state;
  struct gs_agent_config cfg = cfg_of(GS_UNIT_128MIB, GS_MODE_SHARE);
  struct gs_diag d;
  json_t *pods = json_array(), *a, *p = mem_pod("small", 16, "{\"0\":{\"0\":16}}", 100);
  json_object_set_new(json_object_get(json_object_get(p, "metadata"), "annotations"),
                      GS_ANN_UNIT_MIB, json_string("128"));
  json_array_append_new(pods, p);
  a = allocate(&cfg, GS_AGENT_RES_MEM, 16, pods, NULL, &d);
  assert_non_null(a);
  assert_envs(a,
              "ALIYUN_COM_GPU_MEM_CONTAINER", "16",
              "ALIYUN_COM_GPU_MEM_DEV", "128",
              "GPUSHARE_GPU_MEM_LIMIT_MIB", "2048",
              "GPUSHARE_GPU_MEM_UNIT_MIB", "128");
  json_decref(a);
  /* a pod placed in 1 GiB units before the unit changed keeps its amounts */
  pods = json_array();
  p = mem_pod("old", 2, "{\"0\":{\"0\":2}}", 100);
  json_object_set_new(json_object_get(json_object_get(p, "metadata"), "annotations"),
                      GS_ANN_UNIT_MIB, json_string("1024"));
  json_array_append_new(pods, p);
  a = allocate(&cfg, GS_AGENT_RES_MEM, 2, pods, NULL, &d);
  assert_envs(a,
              "GPUSHARE_GPU_MEM_LIMIT_MIB", "2048",
              "ALIYUN_COM_GPU_MEM_DEV", "16");
  json_decref(a);
}

/* Applies an answer's annotations to the pod it names (what the Go side's
 * patch does). */
static void apply(json_t *pods, const json_t *answer) {
  const char *uid = json_string_value(json_object_get(json_object_get(answer, "pod"), "uid"));
  size_t i;
  json_t *p;
  json_array_foreach(pods, i, p) {
    json_t *meta = json_object_get(p, "metadata");
    if (strcmp(json_string_value(json_object_get(meta, "uid")), uid) == 0)
      json_object_update(json_object_get(meta, "annotations"),
                         json_object_get(answer, "annotations"));
  }
}

static void test_ten_pods_in_a_fixed_order(void **state) {
  (void)state;
  struct gs_agent_config cfg = cfg_of(GS_UNIT_GIB, GS_MODE_SHARE);
  /* ten pods of 2 units: assume times with ties (p3/p7 and p0/p9 equal) */
  static const int64_t times[10] = {50, 10, 20, 30, 40, 60, 70, 30, 80, 50};
  static const char *const want[10] = {"p1", "p2", "p3", "p7", "p4", "p0", "p9", "p5", "p6", "p8"};
  for (unsigned round = 0; round < 5; round++) {
    json_t *pods = json_array();
    for (unsigned k = 0; k < 10; k++) {
      unsigned i = (k * 3 + round * 7) % 10; /* a different listing order each round */
      char name[8], v2[32];
      snprintf(name, sizeof name, "p%u", i);
      snprintf(v2, sizeof v2, "{\"0\":{\"%u\":2}}", i % 2);
      json_array_append_new(pods, mem_pod(name, 2, v2, times[i]));
    }
    for (unsigned k = 0; k < 10; k++) {
      struct gs_diag d;
      json_t *a = allocate(&cfg, GS_AGENT_RES_MEM, 2, json_incref(pods), NULL, &d);
      assert_non_null(a);
      const char *name = json_string_value(json_object_get(json_object_get(a, "pod"), "name"));
      assert_string_equal(name, want[k]);
      /* its own GPU: the annotation's, never another pod's */
      assert_string_equal(env(a, "ALIYUN_COM_GPU_MEM_IDX"), (name[1] - '0') % 2 ? "1" : "0");
      apply(pods, a);
      json_decref(a);
    }
    struct gs_diag d;
    enum gs_err err;
    assert_null(allocate(&cfg, GS_AGENT_RES_MEM, 2, pods, &err, &d));
    assert_int_equal(err, GS_ENOTFOUND);
  }
}

static void test_containers_in_order(void **state) {
  (void)state;
  struct gs_agent_config cfg = cfg_of(GS_UNIT_GIB, GS_MODE_SHARE);
  static const uint64_t units[3] = {2, 0, 3};
  struct gs_diag d;
  json_t *pods = json_array(), *a;
  json_array_append_new(pods, pod_of("ml", "two", GS_AGENT_RES_MEM, units, 3,
                                     "{\"0\":{\"0\":2},\"2\":{\"1\":3}}", 5));
  /* the kubelet serves c0 first: an Allocate of 3 is not for this pod yet */
  assert_null(allocate(&cfg, GS_AGENT_RES_MEM, 3, json_incref(pods), NULL, &d));
  a = allocate(&cfg, GS_AGENT_RES_MEM, 2, json_incref(pods), NULL, &d);
  assert_string_equal(json_string_value(json_object_get(a, "container")), "c0");
  assert_envs(a,
              "ALIYUN_COM_GPU_MEM_POD", "5",
              "ALIYUN_COM_GPU_MEM_CONTAINER", "2");
  assert_string_equal(patched(a, GS_AGENT_ANN_CONTAINERS), "0");
  assert_null(patched(a, "ALIYUN_COM_GPU_MEM_ASSIGNED")); /* c2 still to come */
  apply(pods, a);
  json_decref(a);
  a = allocate(&cfg, GS_AGENT_RES_MEM, 3, json_incref(pods), NULL, &d);
  assert_string_equal(json_string_value(json_object_get(a, "container")), "c2");
  assert_int_equal(json_integer_value(json_object_get(a, "containerIndex")), 2);
  assert_envs(a,
              "NVIDIA_VISIBLE_DEVICES", UUID1,
              "ALIYUN_COM_GPU_MEM_CONTAINER", "3");
  assert_string_equal(patched(a, GS_AGENT_ANN_CONTAINERS), "0,2");
  assert_string_equal(patched(a, "ALIYUN_COM_GPU_MEM_ASSIGNED"), "true");
  json_decref(a);
  json_decref(pods);
}

static void test_whole_gpus(void **state) {
  (void)state;
  struct gs_agent_config cfg = cfg_of(GS_UNIT_GIB, GS_MODE_TOPOLOGY);
  static const uint64_t two = 2;
  struct gs_diag d;
  json_t *pods = json_array(), *a;
  json_array_append_new(
      pods, pod_of("default", "job-0", GS_AGENT_RES_WHOLE, &two, 1,
                   "{\"allocatedGPUs\":{\"0\":[\"1\",\"0\"]},\"visibleGPUs\":[\"0\",\"1\"],"
                   "\"assumeTime\":7,\"assigned\":false}",
                   0));
  a = allocate(&cfg, GS_AGENT_RES_WHOLE, 2, pods, NULL, &d);
  assert_non_null(a);
  assert_string_equal(env(a, "NVIDIA_VISIBLE_DEVICES"), UUID0 "," UUID1);
  assert_int_equal(json_object_size(json_object_get(a, "envs")), 1);
  assert_string_equal(patched(a, GS_ANN_TOPO_ALLOCATION),
                      "{\"allocatedGPUs\":{\"0\":[\"1\",\"0\"]},\"visibleGPUs\":[\"0\",\"1\"],"
                      "\"assumeTime\":7,\"assigned\":true}");
  json_decref(a);
  /* gpu-count: nothing to give */
  a = allocate(&cfg, GS_AGENT_RES_COUNT, 1, json_array(), NULL, &d);
  assert_int_equal(json_object_size(json_object_get(a, "envs")), 0);
  json_decref(a);
}

/* ---- the kubelet's admission (its pod-resources list) ------------------------------ */

static json_t *seen_allocate(const struct gs_agent_config *cfg, const json_t *pods,
                             const char *kubelet, enum gs_err *ret_err, struct gs_diag *d) {
  json_t *view = kubelet != NULL ? json_loads(kubelet, 0, NULL) : NULL;
  json_t *a = agent_allocate_seen(cfg, inv2(), GS_AGENT_RES_MEM, 4, pods, view, ret_err, d);
  json_decref(view);
  return a;
}

static const char *chosen(const json_t *a) {
  return json_string_value(json_object_get(json_object_get(a, "pod"), "name"));
}

static void test_kubelet_admission_order(void **state) {
  (void)state;
  struct gs_agent_config cfg = cfg_of(GS_UNIT_GIB, GS_MODE_SHARE);
  struct gs_diag d;
  enum gs_err err;
  json_t *pods = json_array(), *a;
  /* the same request; "early" has the older assume time */
  json_array_append_new(pods, mem_pod("early", 4, "{\"0\":{\"0\":4}}", 10));
  json_array_append_new(pods, mem_pod("late", 4, "{\"0\":{\"1\":4}}", 20));

  /* without the kubelet's view: the assume order, as Aliyun's plugin */
  a = seen_allocate(&cfg, pods, NULL, NULL, &d);
  assert_string_equal(chosen(a), "early");
  assert_string_equal(json_string_value(json_object_get(a, "by")), "assume");
  json_decref(a);
  /* the kubelet admits "late" first: late gets its own GPU */
  a = seen_allocate(&cfg, pods,
                    "{\"podResources\":[{\"name\":\"late\",\"namespace\":\"default\","
                    "\"containers\":[{\"name\":\"c0\"}]}]}",
                    NULL, &d);
  assert_string_equal(chosen(a), "late");
  assert_string_equal(json_string_value(json_object_get(a, "by")), "kubelet");
  assert_string_equal(env(a, "NVIDIA_VISIBLE_DEVICES"), UUID1);
  json_decref(a);
  /* a container holding devices of another resource is still being admitted
   * for this one; one holding this resource's is not */
  a = seen_allocate(&cfg, pods,
                    "{\"podResources\":[{\"name\":\"late\",\"namespace\":\"default\","
                    "\"containers\":[{\"name\":\"c0\",\"devices\":[{\"resourceName\":"
                    "\"aliyun.com/gpu-mem\",\"deviceIds\":[\"x\"]}]}]},"
                    "{\"name\":\"early\",\"namespace\":\"default\",\"containers\":[{\"name\":"
                    "\"c0\",\"devices\":[{\"resourceName\":\"aliyun.com/gpu-count\",\"deviceIds\":"
                    "[\"" UUID0 "\"]}]}]}]}",
                    NULL, &d);
  assert_string_equal(chosen(a), "early");
  assert_string_equal(env(a, "NVIDIA_VISIBLE_DEVICES"), UUID0);
  json_decref(a);
  /* two entries of one name (the old pod still terminating, holding its
   * devices; the new one being admitted): the new one is admitted */
  a = seen_allocate(&cfg, pods,
                    "{\"podResources\":[{\"name\":\"late\",\"namespace\":\"default\","
                    "\"containers\":[{\"name\":\"c0\",\"devices\":[{\"resourceName\":"
                    "\"aliyun.com/gpu-mem\",\"deviceIds\":[\"y\"]}]}]},"
                    "{\"name\":\"late\",\"namespace\":\"default\",\"containers\":"
                    "[{\"name\":\"c0\"}]}]}",
                    NULL, &d);
  assert_string_equal(chosen(a), "late");
  json_decref(a);
  /* same name, another namespace: not the pod */
  assert_null(seen_allocate(&cfg, pods,
                            "{\"podResources\":[{\"name\":\"late\",\"namespace\":\"ml\"}]}", &err,
                            &d));
  assert_int_equal(err, GS_ENOTFOUND);
  /* the kubelet lists none of them (an empty list is "{}" in protobuf's JSON) */
  assert_null(seen_allocate(&cfg, pods, "{}", &err, &d));
  assert_int_equal(err, GS_ENOTFOUND);
  assert_string_equal(d.text,
                      "no pending pod on node gpu-a that the kubelet is admitting has a container "
                      "asking aliyun.com/gpu-mem: 4 with a gpushare allocation not yet assigned "
                      "(2 other pods match: the kubelet's pod-resources list shows them not yet "
                      "admitted or already holding the devices)");
  /* a pod not placed by gpushare is being admitted: refused as such, it never
   * takes the allocation of a placed pod that waits */
  json_array_append_new(pods, mem_pod("bare", 4, NULL, 0));
  assert_null(seen_allocate(&cfg, pods,
                            "{\"podResources\":[{\"name\":\"bare\",\"namespace\":\"default\","
                            "\"containers\":[{\"name\":\"c0\"}]}]}",
                            &err, &d));
  assert_int_equal(err, GS_ENOTFOUND);
  assert_string_equal(d.text, "pod default/bare asks aliyun.com/gpu-mem: 4 but carries no gpushare "
                              "allocation (annotation scheduler.framework.gpushare.allocation): it "
                              "was not placed by gpushare's scheduler");
  json_decref(pods);
}

static void test_kubelet_view_malformed(void **state) {
  (void)state;
  struct gs_agent_config cfg = cfg_of(GS_UNIT_GIB, GS_MODE_SHARE);
  static const struct {
    const char *view, *text;
  } cases[] = {
      {"[]", "the kubelet's pod-resources list must be an object whose \"podResources\" is an "
             "array"},
      {"{\"podResources\":{}}", "the kubelet's pod-resources list must be an object whose "
                                "\"podResources\" is an array"},
      {"{\"podResources\":[{\"name\":\"p\"}]}",
       "the kubelet's pod-resources list: podResources[0] has no name, namespace or containers "
       "array"},
      {"{\"podResources\":[{\"name\":\"p\",\"namespace\":\"n\",\"containers\":[{\"devices\":[]}]}]}",
       "the kubelet's pod-resources list: podResources[0].containers[0] has no name or devices "
       "array"},
      {"{\"podResources\":[{\"name\":\"p\",\"namespace\":\"n\",\"containers\":[{\"name\":\"c\","
       "\"devices\":{}}]}]}",
       "the kubelet's pod-resources list: podResources[0].containers[0] has no name or devices "
       "array"},
  };
  json_t *pods = json_array();
  json_array_append_new(pods, mem_pod("p", 4, "{\"0\":{\"0\":4}}", 10));
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct gs_diag d;
    enum gs_err err;
    assert_null(seen_allocate(&cfg, pods, cases[i].view, &err, &d));
    assert_int_equal(err, GS_EPARSE);
    assert_string_equal(d.text, cases[i].text);
  }
  /* not JSON at all */
  struct gs_diag d = {0};
  char *out = NULL;
  struct gs_agent_call call = {NODE, GS_AGENT_RES_MEM, 4, "[]", 2, "{\"podRes", 9, NOW};
  assert_int_equal(gs_agent_allocate(&cfg, inv2(), &call, &out, &d), GS_EPARSE);
  char head[47];
  memcpy(head, d.text, sizeof head - 1);
  head[sizeof head - 1] = '\0';
  assert_string_equal(head, "the kubelet's pod-resources list is not JSON: ");
  assert_null(out);
  json_decref(pods);
}

/* ---- refusals ----------------------------------------------------------------------- */

static void refused(const struct gs_agent_config *cfg, uint64_t n, json_t *pod, enum gs_err want,
                    const char *text) {
  json_t *pods = json_array();
  struct gs_diag d;
  enum gs_err err;
  json_array_append_new(pods, pod);
  assert_null(allocate(cfg, GS_AGENT_RES_MEM, n, pods, &err, &d));
  assert_int_equal(err, want);
  assert_string_equal(d.text, text);
}

static void test_refusals(void **state) {
  (void)state;
  struct gs_agent_config cfg = cfg_of(GS_UNIT_GIB, GS_MODE_SHARE);
  const char *no_match = "no pending pod on node gpu-a has a container asking "
                         "aliyun.com/gpu-mem: 4 with a gpushare allocation not yet assigned";
  json_t *p;

  refused(&cfg, 4, mem_pod("p1", 2, "{\"0\":{\"0\":2}}", 1), GS_ENOTFOUND, no_match);
  refused(&cfg, 4, mem_pod("bare", 4, NULL, 1), GS_ENOTFOUND,
          "pod default/bare asks aliyun.com/gpu-mem: 4 but carries no gpushare allocation "
          "(annotation scheduler.framework.gpushare.allocation): it was not placed by gpushare's "
          "scheduler");
  refused(&cfg, 4, mem_pod("far", 4, "{\"0\":{\"3\":4}}", 1), GS_ERANGE,
          "pod default/far: its allocation names GPU 3, but node gpu-a has 2 GPUs (0-1)");
  refused(&cfg, 20, mem_pod("big", 20, "{\"0\":{\"0\":20}}", 1), GS_ERANGE,
          "pod default/big: its allocation gives GPU 0 20 units of 1024 MiB (20480 MiB), more "
          "than the GPU's 16384 MiB");
  refused(&cfg, 4, mem_pod("short", 4, "{\"0\":{\"0\":3}}", 1), GS_ERANGE,
          "pod default/short: its allocation gives container c0 3 units, but it asks 4");
  refused(&cfg, 4, mem_pod("junk", 4, "{\"0\":7", 1), GS_EPARSE,
          "pod default/junk: its allocation cannot be read: "
          "Pod.metadata.annotations[\"scheduler.framework.gpushare.allocation\"]: "
          "invalid JSON: '}' expected near end of file");
  /* an already assigned pod (either annotation), a running one, one on another node: no
   * match; each is the same pod with one field set */
  static const struct {
    const char *name, *part, *key, *value; /* part: "annotations" (of metadata), or a top key */
  } unmatched[] = {
      {"done", "annotations", GS_ANN_ASSIGNED, "true"},
      {"done-legacy", "annotations", GS_ANN_LEGACY_ASSIGNED, "true"},
      {"running", "status", "phase", "Running"},
      {"elsewhere", "spec", "nodeName", "gpu-b"},
  };
  for (size_t i = 0; i < sizeof unmatched / sizeof unmatched[0]; i++) {
    json_t *part;
    p = mem_pod(unmatched[i].name, 4, "{\"0\":{\"0\":4}}", 1);
    part = strcmp(unmatched[i].part, "annotations") == 0
               ? json_object_get(json_object_get(p, "metadata"), "annotations")
               : json_object_get(p, unmatched[i].part);
    json_object_set_new(part, unmatched[i].key, json_string(unmatched[i].value));
    refused(&cfg, 4, p, GS_ENOTFOUND, no_match);
  }

  /* an annotated pod wins over an older bare one: the refusal is only when none matches */
  json_t *pods = json_array(), *a;
  struct gs_diag d;
  json_array_append_new(pods, mem_pod("bare", 4, NULL, 0));
  json_array_append_new(pods, mem_pod("placed", 4, "{\"0\":{\"0\":4}}", 9));
  a = allocate(&cfg, GS_AGENT_RES_MEM, 4, pods, NULL, &d);
  assert_string_equal(json_string_value(json_object_get(json_object_get(a, "pod"), "name")),
                      "placed");
  json_decref(a);

  enum gs_err err;
  memset(&d, 0, sizeof d);
  char *out = NULL;
  struct gs_agent_call call = {NODE, GS_AGENT_RES_MEM, 4, "{}", 2, NULL, 0, NOW};
  assert_int_equal(gs_agent_allocate(&cfg, inv2(), &call, &out, &d), GS_EPARSE);
  assert_string_equal(d.text, "the node's pods must be a JSON array or a PodList");
  memset(&d, 0, sizeof d);
  call = (struct gs_agent_call){NODE, "nvidia.com/gpu", 4, "[]", 2, NULL, 0, NOW};
  err = gs_agent_allocate(&cfg, inv2(), &call, &out, &d);
  assert_int_equal(err, GS_EINVAL);
  assert_string_equal(d.text, "unknown resource \"nvidia.com/gpu\"");
  assert_null(out);
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_inventory),
             cmocka_unit_test(test_capacity_and_devices),
             cmocka_unit_test(test_topology_is_gpushare_topo_text),
             cmocka_unit_test(test_config_check),
             cmocka_unit_test(test_single_card),
             cmocka_unit_test(test_multi_card),
             cmocka_unit_test(test_mps),
             cmocka_unit_test(test_128mib),
             cmocka_unit_test(test_ten_pods_in_a_fixed_order),
             cmocka_unit_test(test_containers_in_order),
             cmocka_unit_test(test_whole_gpus),
             cmocka_unit_test(test_kubelet_admission_order),
             cmocka_unit_test(test_kubelet_view_malformed),
             cmocka_unit_test(test_refusals))
