/* gpushare-node as a DRA kubelet plugin (src/agent/dra.c, docs/node-agent.md
 * "DRA"): the devices its ResourceSlice lists, and what a container receives
 * for an allocated ResourceClaim — shared and exclusive results, two GPUs,
 * two requests on one GPU, other drivers' results skipped, mps nodes — and
 * every refusal's text. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "agent.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODE "gpu-a"
#define UUID0 "GPU-00000000-0000-0000-0000-000000000000"
#define UUID1 "GPU-11111111-1111-1111-1111-111111111111"

static struct gs_agent_inventory *inv2(bool healthy1) {
  char text[512];
  static struct gs_agent_inventory inv;
  struct gs_diag d = {0};
  snprintf(text, sizeof text,
           "{\"gpus\":[{\"uuid\":\"" UUID0 "\",\"memoryMiB\":16384},"
           "{\"uuid\":\"" UUID1 "\",\"memoryMiB\":8192,\"healthy\":%s}]}",
           healthy1 ? "true" : "false");
  assert_int_equal(gs_agent_inventory_decode(text, strlen(text), &inv, &d), GS_EOK);
  return &inv;
}

static struct gs_agent_config cfg_of(enum gs_mode mode) {
  struct gs_agent_config c;
  memset(&c, 0, sizeof c);
  c.unit_mib = 1024;
  c.mode = mode;
  strcpy(c.mps_pipe_dir, "/tmp/nvidia-mps");
  return c;
}

static void test_devices(void **state) {
  (void)state;
  char *s = gs_agent_dra_devices(inv2(true));
  assert_string_equal(s, "[{\"name\":\"gpu-0\",\"index\":0,\"uuid\":\"" UUID0
                         "\",\"memoryBytes\":17179869184},"
                         "{\"name\":\"gpu-1\",\"index\":1,\"uuid\":\"" UUID1
                         "\",\"memoryBytes\":8589934592}]");
  free(s);
  /* an unhealthy GPU is not offered */
  s = gs_agent_dra_devices(inv2(false));
  assert_string_equal(s, "[{\"name\":\"gpu-0\",\"index\":0,\"uuid\":\"" UUID0
                         "\",\"memoryBytes\":17179869184}]");
  free(s);
}

static void test_health(void **state) {
  (void)state;
  /* every GPU, the unhealthy one too: a claim prepared before may hold it */
  char *s = gs_agent_dra_health(inv2(false));
  assert_string_equal(s, "[{\"device\":\"gpu-0\",\"health\":\"Healthy\"},"
                         "{\"device\":\"gpu-1\",\"health\":\"Unhealthy\"}]");
  free(s);
  s = gs_agent_dra_health(inv2(true));
  assert_string_equal(s, "[{\"device\":\"gpu-0\",\"health\":\"Healthy\"},"
                         "{\"device\":\"gpu-1\",\"health\":\"Healthy\"}]");
  free(s);
}

/* A claim with uid u whose allocation results are results (JSON text). */
static char *claim(const char *results) {
  char *s = malloc(4096);
  snprintf(s, 4096,
           "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
           "\"metadata\":{\"name\":\"c\",\"namespace\":\"ml\",\"uid\":\"u-1\"},"
           "\"status\":{\"allocation\":{\"devices\":{\"results\":%s}}}}",
           results);
  return s;
}

static enum gs_err prepare(enum gs_mode mode, bool healthy1, const char *results, char **out,
                           struct gs_diag *d) {
  struct gs_agent_config c = cfg_of(mode);
  char *text = claim(results);
  *out = NULL;
  enum gs_err err = gs_agent_dra_prepare(&c, inv2(healthy1), NODE, text, strlen(text), out, d);
  free(text);
  return err;
}

static void test_prepare_shared(void **state) {
  (void)state;
  struct gs_diag d = {0};
  char *out;
  assert_int_equal(
      prepare(GS_MODE_SHARE, true,
              "[{\"request\":\"gpu\",\"driver\":\"gpu.gpushare.io\",\"pool\":\"gpu-a\","
              "\"device\":\"gpu-1\",\"shareID\":\"s-1\",\"consumedCapacity\":{\"memory\":\"4Gi\"}},"
              "{\"request\":\"nic\",\"driver\":\"net.example.com\",\"pool\":\"p\",\"device\":\"x\"}]",
              &out, &d),
      GS_EOK);
  assert_string_equal(out, "{\"devices\":[{\"request\":\"gpu\",\"pool\":\"gpu-a\",\"device\":"
                           "\"gpu-1\",\"shareID\":\"s-1\"}],\"claim\":\"u-1\",\"envs\":{"
                           "\"NVIDIA_VISIBLE_DEVICES\":\"" UUID1 "\","
                           "\"ALIYUN_COM_GPU_MEM_IDX\":\"1\",\"ALIYUN_COM_GPU_MEM_POD\":\"4\","
                           "\"ALIYUN_COM_GPU_MEM_CONTAINER\":\"4\",\"ALIYUN_COM_GPU_MEM_DEV\":\"8\","
                           "\"GPUSHARE_GPU_MEM_LIMIT_MIB\":\"4096\","
                           "\"GPUSHARE_GPU_MEM_UNIT_MIB\":\"1024\"},\"mounts\":[]}");
  free(out);
}

static void test_prepare_two_gpus_exclusive_mps(void **state) {
  (void)state;
  struct gs_diag d = {0};
  char *out;
  /* 8 GiB as 4 + 4 over two GPUs, plus a second request on GPU 0: adds up;
   * the exclusive result (no consumedCapacity) is the whole GPU */
  assert_int_equal(
      prepare(GS_MODE_MPS, true,
              "[{\"request\":\"a\",\"driver\":\"gpu.gpushare.io\",\"pool\":\"gpu-a\","
              "\"device\":\"gpu-0\",\"consumedCapacity\":{\"memory\":\"4Gi\"}},"
              "{\"request\":\"a\",\"driver\":\"gpu.gpushare.io\",\"pool\":\"gpu-a\","
              "\"device\":\"gpu-1\"},"
              "{\"request\":\"b\",\"driver\":\"gpu.gpushare.io\",\"pool\":\"gpu-a\","
              "\"device\":\"gpu-0\",\"consumedCapacity\":{\"memory\":\"1536Mi\"}}]",
              &out, &d),
      GS_EOK);
  json_t *o = json_loads(out, 0, NULL);
  json_t *e = json_object_get(o, "envs");
  assert_string_equal(json_string_value(json_object_get(e, "NVIDIA_VISIBLE_DEVICES")),
                      UUID0 "," UUID1);
  assert_string_equal(json_string_value(json_object_get(e, "GPUSHARE_GPU_MEM_LIMIT_MIB")),
                      "5632,8192");
  assert_string_equal(json_string_value(json_object_get(e, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT")),
                      "0=5632M,1=8192M");
  assert_string_equal(json_string_value(json_object_get(e, "CUDA_MPS_PIPE_DIRECTORY")),
                      "/tmp/nvidia-mps");
  assert_int_equal(json_array_size(json_object_get(o, "devices")), 3);
  char *m = json_dumps(json_object_get(o, "mounts"), JSON_COMPACT);
  assert_string_equal(m, "[{\"hostPath\":\"/tmp/nvidia-mps\",\"containerPath\":\"/tmp/nvidia-mps\","
                         "\"readOnly\":false}]");
  free(m);
  json_decref(o);
  free(out);
}

static void refused(const char *results, enum gs_err want, const char *where, const char *text) {
  struct gs_diag d = {0};
  char *out;
  assert_int_equal(prepare(GS_MODE_SHARE, true, results, &out, &d), want);
  assert_null(out);
  assert_string_equal(d.where, where);
  assert_string_equal(d.text, text);
}

#define R(pool, dev, mem)                                                                    \
  "[{\"request\":\"gpu\",\"driver\":\"gpu.gpushare.io\",\"pool\":\"" pool "\",\"device\":\"" \
  dev "\"" mem "}]"

static void test_prepare_refusals(void **state) {
  (void)state;
  refused(R("gpu-b", "gpu-0", ""), GS_ERANGE, "status.allocation.devices.results[0]",
          "pool gpu-b is not node gpu-a's");
  refused(R("gpu-a", "gpu-2", ""), GS_ERANGE, "status.allocation.devices.results[0]",
          "device gpu-2: node gpu-a has 2 GPUs (gpu-0…)");
  refused(R("gpu-a", "gpu-01", ""), GS_ERANGE, "status.allocation.devices.results[0]",
          "device gpu-01: node gpu-a has 2 GPUs (gpu-0…)");
  refused(R("gpu-a", "gpu-1", ",\"consumedCapacity\":{\"memory\":\"9Gi\"}"), GS_ERANGE,
          "status.allocation.devices.results[0].consumedCapacity",
          "memory 9663676416 bytes: GPU gpu-1 has 8192 MiB");
  refused(R("gpu-a", "gpu-1", ",\"consumedCapacity\":{\"memory\":\"lots\"}"), GS_EPARSE,
          "status.allocation.devices.results[0].consumedCapacity",
          "quantity \"lots\" is not a valid quantity");
  refused("[{\"driver\":\"net.example.com\",\"pool\":\"p\",\"device\":\"x\"}]", GS_ENOTFOUND,
          "status.allocation", "claim u-1 has no device of driver gpu.gpushare.io");
  refused("[{\"driver\":\"gpu.gpushare.io\",\"pool\":\"gpu-a\"}]", GS_EPARSE,
          "status.allocation.devices.results[0]", "no pool or device");
  refused("{}", GS_EPARSE, "status.allocation", "claim u-1 is not allocated");
  /* two requests over one GPU's memory */
  refused("[{\"driver\":\"gpu.gpushare.io\",\"pool\":\"gpu-a\",\"device\":\"gpu-1\","
          "\"consumedCapacity\":{\"memory\":\"6Gi\"}},"
          "{\"driver\":\"gpu.gpushare.io\",\"pool\":\"gpu-a\",\"device\":\"gpu-1\","
          "\"consumedCapacity\":{\"memory\":\"6Gi\"}}]",
          GS_ERANGE, "status.allocation", "claim u-1: 12288 MiB of GPU 1 which has 8192");
  struct gs_agent_config c = cfg_of(GS_MODE_SHARE);
  struct gs_diag d = {0};
  char *out = NULL;
  assert_int_equal(gs_agent_dra_prepare(&c, inv2(true), NODE, "[1", 2, &out, &d), GS_EPARSE);
  assert_null(out);
  assert_string_equal(d.where, "claim");
}

GS_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_devices), cmocka_unit_test(test_health),
             cmocka_unit_test(test_prepare_shared),
             cmocka_unit_test(test_prepare_two_gpus_exclusive_mps),
             cmocka_unit_test(test_prepare_refusals))
