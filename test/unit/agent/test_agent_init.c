/* gpushare-node's decisions for init containers and cgpu nodes (src/agent,
 * docs/node-agent.md "Init containers", "cgpu nodes"): the kubelet's order
 * of Allocate calls (init containers, then app containers), what an init
 * container receives (its own request over the pod's GPUs), the app
 * container charged with the init excess getting its own request, and on
 * cgpu nodes the Aliyun keys in GiB that the cGPU module reads. */
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

static struct gs_agent_inventory *inv2(void) {
  static const char text[] =
      "{\"gpus\":[{\"uuid\":\"" UUID0 "\",\"memoryMiB\":16384},"
      "{\"uuid\":\"" UUID1 "\",\"memoryMiB\":16384}]}";
  static struct gs_agent_inventory inv;
  struct gs_diag d = {0};
  assert_int_equal(gs_agent_inventory_decode(text, strlen(text), &inv, &d), GS_EOK);
  return &inv;
}

/* A pending pod on NODE: init containers and app containers asking
 * resource (inits[i]/apps[i], 0: nothing; names i<k>/c<k>), the allocation
 * annotation alloc (V2 for memory, topology for whole GPUs), unit_mib
 * recorded, gpu_count the pod's label (0: none). */
static json_t *pod(const char *name, const char *resource, const uint64_t *inits, size_t ni,
                   const uint64_t *apps, size_t na, const char *alloc, uint32_t unit_mib,
                   uint32_t gpu_count) {
  json_t *spec = json_pack("{ss}", "nodeName", NODE), *anns = json_object(), *labels = json_object();
  for (int init = 1; init >= 0; init--) {
    json_t *arr = json_array();
    for (size_t i = 0; i < (init ? ni : na); i++) {
      uint64_t u = init ? inits[i] : apps[i];
      char cname[24], q[24];
      snprintf(cname, sizeof cname, "%s%zu", init ? "i" : "c", i);
      snprintf(q, sizeof q, "%llu", (unsigned long long)u);
      json_t *c = json_pack("{ss}", "name", cname);
      if (u > 0)
        json_object_set_new(c, "resources", json_pack("{s{ss}}", "limits", resource, q));
      json_array_append_new(arr, c);
    }
    json_object_set_new(spec, init ? "initContainers" : "containers", arr);
  }
  if (strcmp(resource, GS_AGENT_RES_WHOLE) == 0) {
    json_object_set_new(anns, GS_ANN_TOPO_ALLOCATION, json_string(alloc));
  } else {
    char u[16];
    snprintf(u, sizeof u, "%u", unit_mib);
    json_object_set_new(anns, GS_ANN_ALLOCATION, json_string(alloc));
    json_object_set_new(anns, GS_ANN_ASSIGNED, json_string("false"));
    json_object_set_new(anns, GS_ANN_ASSUME_TIME, json_string("100"));
    json_object_set_new(anns, GS_ANN_UNIT_MIB, json_string(u));
  }
  if (gpu_count > 0) {
    char g[16];
    snprintf(g, sizeof g, "%u", gpu_count);
    json_object_set_new(labels, "aliyun.com/gpu-count", json_string(g));
  }
  return json_pack("{s{sssssssoso}sos{ss}}", "metadata", "namespace", "ml", "name", name, "uid",
                   name, "annotations", anns, "labels", labels, "spec", spec, "status", "phase",
                   "Pending");
}

/* Allocate over a borrowed pod list; the answer, or NULL with *ret_err and d. */
static json_t *allocate(const struct gs_agent_config *cfg, const char *resource, uint64_t n,
                        const json_t *pods, enum gs_err *ret_err, struct gs_diag *d) {
  return agent_allocate(cfg, inv2(), resource, n, pods, ret_err, d);
}

static const char *served(const json_t *answer) {
  return json_string_value(json_object_get(answer, "container"));
}

/* The Go side's merge patch of the answer's annotations on its pod. */
static void apply(json_t *pods, const json_t *answer) {
  json_t *anns = json_object_get(json_object_get(json_array_get(pods, 0), "metadata"),
                                 "annotations");
  json_object_update(anns, json_object_get(answer, "annotations"));
}

/* An init container asking more than the app container: the scheduler
 * reserved 6 (max(6, 4)) and charged the excess 2 to c0. */
static void test_init_then_app(void **state) {
  (void)state;
  struct gs_agent_config cfg = cfg_of(GS_UNIT_GIB, GS_MODE_SHARE);
  static const uint64_t ini[1] = {6}, app[1] = {4};
  struct gs_diag d;
  enum gs_err err;
  json_t *pods = json_array(), *a;
  json_array_append_new(pods, pod("p", GS_AGENT_RES_MEM, ini, 1, app, 1, "{\"0\":{\"1\":6}}",
                                  1024, 0));
  /* the kubelet admits the init container first: 4 is not this pod's yet */
  assert_null(allocate(&cfg, GS_AGENT_RES_MEM, 4, pods, &err, &d));
  assert_int_equal(err, GS_ENOTFOUND);
  a = allocate(&cfg, GS_AGENT_RES_MEM, 6, pods, NULL, &d);
  assert_non_null(a);
  assert_string_equal(served(a), "i0");
  assert_true(json_is_true(json_object_get(a, "init")));
  assert_int_equal(json_integer_value(json_object_get(a, "containerIndex")), 0);
  assert_envs(a,
              "NVIDIA_VISIBLE_DEVICES", UUID1,
              "ALIYUN_COM_GPU_MEM_IDX", "1",
              "ALIYUN_COM_GPU_MEM_POD", "6",
              "ALIYUN_COM_GPU_MEM_CONTAINER", "6",
              "GPUSHARE_GPU_MEM_LIMIT_MIB", "6144");
  assert_int_equal(json_object_size(json_object_get(a, "annotations")), 1);
  assert_string_equal(patched(a, GS_AGENT_ANN_INIT_CONTAINERS), "0");
  apply(pods, a);
  json_decref(a);
  /* served once: a second init Allocate of 6 finds nothing */
  assert_null(allocate(&cfg, GS_AGENT_RES_MEM, 6, pods, &err, &d));
  a = allocate(&cfg, GS_AGENT_RES_MEM, 4, pods, NULL, &d);
  assert_non_null(a);
  assert_string_equal(served(a), "c0");
  assert_true(json_is_false(json_object_get(a, "init")));
  assert_envs(a,
              "NVIDIA_VISIBLE_DEVICES", UUID1,
              "ALIYUN_COM_GPU_MEM_CONTAINER", "4",
              "ALIYUN_COM_GPU_MEM_POD", "6",
              "GPUSHARE_GPU_MEM_LIMIT_MIB", "4096");
  assert_string_equal(patched(a, GS_AGENT_ANN_CONTAINERS), "0");
  assert_null(patched(a, GS_AGENT_ANN_INIT_CONTAINERS));
  assert_string_equal(patched(a, GS_ANN_ASSIGNED), "true");
  assert_string_equal(patched(a, "ALIYUN_COM_GPU_MEM_ASSIGNED"), "true");
  json_decref(a);
  json_decref(pods);
}

/* Over two GPUs (gpu-count 2): the init container's request is split over
 * the pod's GPUs as the app container's is; two init containers in order;
 * one asking nothing is skipped. */
static void test_init_multi_card(void **state) {
  (void)state;
  struct gs_agent_config cfg = cfg_of(GS_UNIT_GIB, GS_MODE_SHARE);
  static const uint64_t ini[3] = {4, 0, 12}, app[2] = {0, 8};
  struct gs_diag d;
  json_t *pods = json_array(), *a;
  /* effective max(12, 8) = 12: the excess 4 on c1, 6 per GPU */
  json_array_append_new(pods, pod("m", GS_AGENT_RES_MEM, ini, 3, app, 2,
                                  "{\"1\":{\"0\":6,\"1\":6}}", 1024, 2));
  a = allocate(&cfg, GS_AGENT_RES_MEM, 4, pods, NULL, &d);
  assert_string_equal(served(a), "i0");
  assert_envs(a,
              "NVIDIA_VISIBLE_DEVICES", UUID0 "," UUID1,
              "ALIYUN_COM_GPU_MEM_IDX", "0,1",
              "GPUSHARE_GPU_MEM_LIMIT_MIB", "2048,2048",
              "ALIYUN_COM_GPU_MEM_CONTAINER", "4",
              "ALIYUN_COM_GPU_MEM_POD", "12");
  apply(pods, a);
  json_decref(a);
  a = allocate(&cfg, GS_AGENT_RES_MEM, 12, pods, NULL, &d);
  assert_string_equal(served(a), "i2");
  assert_int_equal(json_integer_value(json_object_get(a, "containerIndex")), 2);
  assert_string_equal(env(a, "GPUSHARE_GPU_MEM_LIMIT_MIB"), "6144,6144");
  assert_string_equal(patched(a, GS_AGENT_ANN_INIT_CONTAINERS), "0,2");
  assert_null(patched(a, GS_ANN_ASSIGNED));
  apply(pods, a);
  json_decref(a);
  a = allocate(&cfg, GS_AGENT_RES_MEM, 8, pods, NULL, &d);
  assert_string_equal(served(a), "c1");
  assert_envs(a,
              "GPUSHARE_GPU_MEM_LIMIT_MIB", "4096,4096",
              "ALIYUN_COM_GPU_MEM_CONTAINER", "8");
  assert_string_equal(patched(a, GS_AGENT_ANN_CONTAINERS), "1");
  assert_string_equal(patched(a, GS_ANN_ASSIGNED), "true");
  json_decref(a);
  json_decref(pods);
}

/* Only an init container asks: served, the pod is assigned at once. An
 * init request that does not divide over the pod's GPUs is refused. */
static void test_init_only_and_refusal(void **state) {
  (void)state;
  struct gs_agent_config cfg = cfg_of(GS_UNIT_GIB, GS_MODE_SHARE);
  static const uint64_t ini[1] = {2}, odd[1] = {3}, none[1] = {0}, app[1] = {4};
  struct gs_diag d;
  enum gs_err err;
  json_t *pods = json_array(), *a;
  json_array_append_new(pods, pod("only", GS_AGENT_RES_MEM, ini, 1, none, 1, "{\"0\":{\"0\":2}}",
                                  1024, 0));
  a = allocate(&cfg, GS_AGENT_RES_MEM, 2, pods, NULL, &d);
  assert_string_equal(served(a), "i0");
  assert_string_equal(env(a, "NVIDIA_VISIBLE_DEVICES"), UUID0);
  assert_string_equal(patched(a, GS_AGENT_ANN_INIT_CONTAINERS), "0");
  assert_string_equal(patched(a, GS_ANN_ASSIGNED), "true");
  json_decref(a);
  json_decref(pods);
  pods = json_array();
  json_array_append_new(pods, pod("odd", GS_AGENT_RES_MEM, odd, 1, app, 1,
                                  "{\"0\":{\"0\":2,\"1\":2}}", 1024, 2));
  assert_null(allocate(&cfg, GS_AGENT_RES_MEM, 3, pods, &err, &d));
  assert_int_equal(err, GS_ERANGE);
  assert_string_equal(d.text, "pod ml/odd: its init container i0 asks 3 units, which do not "
                              "divide over the pod's 2 GPUs");
  json_decref(pods);
}

/* Whole GPUs: the init container takes the first n of the pod's GPUs; the
 * app container charged with the init's extra GPU gets its own count. */
static void test_init_whole_gpus(void **state) {
  (void)state;
  struct gs_agent_config cfg = cfg_of(GS_UNIT_GIB, GS_MODE_TOPOLOGY);
  static const uint64_t ini[1] = {2}, app[1] = {1};
  struct gs_diag d;
  json_t *pods = json_array(), *a;
  json_array_append_new(pods, pod("w", GS_AGENT_RES_WHOLE, ini, 1, app, 1,
                                  "{\"allocatedGPUs\":{\"0\":[\"0\",\"1\"]},\"visibleGPUs\":"
                                  "[\"0\",\"1\"],\"assumeTime\":7,\"assigned\":false}",
                                  1024, 0));
  a = allocate(&cfg, GS_AGENT_RES_WHOLE, 2, pods, NULL, &d);
  assert_non_null(a);
  assert_string_equal(served(a), "i0");
  assert_string_equal(env(a, "NVIDIA_VISIBLE_DEVICES"), UUID0 "," UUID1);
  assert_null(patched(a, GS_ANN_TOPO_ALLOCATION)); /* c0 still to come */
  apply(pods, a);
  json_decref(a);
  a = allocate(&cfg, GS_AGENT_RES_WHOLE, 1, pods, NULL, &d);
  assert_non_null(a);
  assert_string_equal(served(a), "c0");
  assert_string_equal(env(a, "NVIDIA_VISIBLE_DEVICES"), UUID0);
  assert_non_null(strstr(patched(a, GS_ANN_TOPO_ALLOCATION), "\"assigned\":true"));
  json_decref(a);
  json_decref(pods);
}

/* cgpu: the Aliyun amount keys in GiB, the cap per GPU, the GPUs for the
 * cGPU module; 128 MiB pods of whole GiB run, others are refused. */
static void test_cgpu(void **state) {
  (void)state;
  struct gs_agent_config cfg = cfg_of(GS_UNIT_GIB, GS_MODE_CGPU);
  static const uint64_t none[1] = {0}, four[1] = {4}, eight[1] = {8}, sixteen[1] = {16},
                        twelve[1] = {12};
  struct gs_diag d;
  enum gs_err err;
  json_t *pods = json_array(), *a;
  json_array_append_new(pods, pod("one", GS_AGENT_RES_MEM, none, 0, four, 1, "{\"0\":{\"1\":4}}",
                                  1024, 0));
  a = allocate(&cfg, GS_AGENT_RES_MEM, 4, pods, NULL, &d);
  assert_envs(a,
              "NVIDIA_VISIBLE_DEVICES", UUID1,
              "ALIYUN_COM_GPU_VISIBLE_DEVICES", UUID1,
              "ALIYUN_COM_GPU_MEM_IDX", "1",
              "ALIYUN_COM_GPU_MEM_CONTAINER", "4",
              "ALIYUN_COM_GPU_MEM_POD", "4",
              "ALIYUN_COM_GPU_MEM_DEV", "16",
              "GPUSHARE_GPU_MEM_LIMIT_MIB", "4096",
              "GPUSHARE_GPU_MEM_UNIT_MIB", "1024",
              "CGPU_DISABLE", NULL);
  assert_int_equal(json_object_size(json_object_get(a, "envs")), 8);
  json_decref(a);
  json_decref(pods);
  /* two cards: the cap is per GPU */
  pods = json_array();
  json_array_append_new(pods, pod("two", GS_AGENT_RES_MEM, none, 0, eight, 1,
                                  "{\"0\":{\"0\":4,\"1\":4}}", 1024, 2));
  a = allocate(&cfg, GS_AGENT_RES_MEM, 8, pods, NULL, &d);
  assert_envs(a,
              "ALIYUN_COM_GPU_VISIBLE_DEVICES", UUID0 "," UUID1,
              "ALIYUN_COM_GPU_MEM_CONTAINER", "4",
              "ALIYUN_COM_GPU_MEM_POD", "8");
  json_decref(a);
  json_decref(pods);
  /* 128 MiB units: 16 units = 2 GiB, given in GiB */
  cfg = cfg_of(GS_UNIT_128MIB, GS_MODE_CGPU);
  pods = json_array();
  json_array_append_new(pods, pod("small", GS_AGENT_RES_MEM, none, 0, sixteen, 1,
                                  "{\"0\":{\"0\":16}}", 128, 0));
  a = allocate(&cfg, GS_AGENT_RES_MEM, 16, pods, NULL, &d);
  assert_envs(a,
              "ALIYUN_COM_GPU_MEM_CONTAINER", "2",
              "ALIYUN_COM_GPU_MEM_POD", "2",
              "ALIYUN_COM_GPU_MEM_DEV", "16",
              "GPUSHARE_GPU_MEM_UNIT_MIB", "1024",
              "GPUSHARE_GPU_MEM_LIMIT_MIB", "2048");
  json_decref(a);
  json_decref(pods);
  /* 12 units = 1536 MiB: no GiB count says it */
  pods = json_array();
  json_array_append_new(pods, pod("odd", GS_AGENT_RES_MEM, none, 0, twelve, 1,
                                  "{\"0\":{\"0\":12}}", 128, 0));
  assert_null(allocate(&cfg, GS_AGENT_RES_MEM, 12, pods, &err, &d));
  assert_int_equal(err, GS_ERANGE);
  assert_string_equal(d.text, "pod ml/odd: its allocation gives GPU 0 1536 MiB on cgpu node gpu-a, "
                              "but the cGPU module takes whole GiB (ALIYUN_COM_GPU_MEM_CONTAINER): "
                              "ask multiples of 8 units");
  json_decref(pods);
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_init_then_app),
             cmocka_unit_test(test_init_multi_card),
             cmocka_unit_test(test_init_only_and_refusal),
             cmocka_unit_test(test_init_whole_gpus),
             cmocka_unit_test(test_cgpu))
