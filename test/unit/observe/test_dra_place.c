/* gpushare placing claims, the DRA feed's part (src/observe/dra.c,
 * docs/dra.md): which claims are gpushare's and what it places of them
 * (gs__dra_request), and the published device of a node's GPU
 * (gs__dra_device_at) the allocation names. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "dra_test.h"

#include <stdio.h>
#include <string.h>

/* gs__dra_request on a claim whose spec.devices is devices (JSON text). */
static int request(const char *devices, struct gs_claim_request *req, char *name, char *why) {
  char text[2048];
  json_t *j;
  int r;
  snprintf(text, sizeof text, "{\"metadata\":{\"name\":\"c\",\"uid\":\"u\"},\"spec\":{\"devices\":%s}}",
           devices);
  j = gs_test_json(text);
  r = gs__dra_request(j, req, name, 64, why, 256);
  json_decref(j);
  return r;
}

static void test_request(void **state) {
  /* what gpushare places of a claim (ret 1: count GPUs, mib_per_gpu each,
   * the request's name) or that it is not gpushare's (ret 0) */
  static const struct {
    const char *devices;
    int ret;
    uint32_t count;
    uint64_t mib;
    const char *name;
  } cases[] = {
      /* 4 GiB of one GPU */
      {"{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":"
       "\"gpushare.io\",\"capacity\":{\"requests\":{\"memory\":\"4Gi\"}}}}]}",
       1, 1, 4096, "gpu"},
      /* 4 GiB on each of 2 GPUs (DRA: a capacity request is per device); 1G
       * (10^9 bytes) on each of 3: rounded up to MiB */
      {"{\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":"
       "\"gpushare.io\",\"count\":2,\"capacity\":{\"requests\":{\"memory\":"
       "\"4Gi\"}}}}]}",
       1, 2, 4096, "g"},
      {"{\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":"
       "\"gpushare.io\",\"count\":3,\"capacity\":{\"requests\":{\"memory\":"
       "\"1G\"}}}}]}",
       1, 3, 954 /* 10^9 bytes → 953.67 MiB, rounded up */, "g"},
      /* no capacity: whole devices */
      {"{\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":"
       "\"gpushare.io\",\"allocationMode\":\"ExactCount\",\"count\":2}}]}",
       1, 2, 0, "g"},
      /* another class: not gpushare's */
      {"{\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":"
       "\"gpu.nvidia.com\"}}]}",
       0, 0, 0, NULL},
      {"{}", 0, 0, 0, NULL},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct gs_claim_request req;
    char name[64], why[256];
    assert_int_equal(request(cases[i].devices, &req, name, why), cases[i].ret);
    if (cases[i].ret != 1)
      continue;
    assert_int_equal(req.count, cases[i].count);
    assert_int_equal(req.mib_per_gpu, cases[i].mib);
    assert_string_equal(name, cases[i].name);
  }
}

static void test_request_refused(void **state) {
  static const struct {
    const char *devices, *why;
  } cases[] = {
      {"{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpushare.io\"}},"
       "{\"name\":\"b\",\"exactly\":{\"deviceClassName\":\"nic\"}}]}",
       "2 requests"},
      {"{\"requests\":[{\"name\":\"a\",\"firstAvailable\":[{\"name\":\"x\","
       "\"deviceClassName\":\"gpushare.io\"}]}]}",
       "firstAvailable"},
      {"{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpushare.io\","
       "\"allocationMode\":\"All\"}}]}",
       "allocationMode All"},
      {"{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpushare.io\","
       "\"count\":65}}]}",
       "count: 1..64"},
      {"{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpushare.io\","
       "\"selectors\":[{\"cel\":{\"expression\":\"true\"}}]}}]}",
       "selectors"},
      {"{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpushare.io\","
       "\"capacity\":{\"requests\":{\"cores\":\"2\"}}}}]}",
       "requests.cores: only memory"},
      {"{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpushare.io\","
       "\"capacity\":{\"requests\":{\"memory\":\"lots\"}}}}]}",
       "capacity.requests.memory"},
      {"{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpushare.io\","
       "\"capacity\":{\"requests\":{\"memory\":\"0\"}}}}]}",
       "memory: 0"},
      {"{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpushare.io\"}}],"
       "\"config\":[{\"opaque\":{\"driver\":\"gpu.gpushare.io\",\"parameters\":{}}}]}",
       "constraints and config"},
  };
  struct gs_claim_request req;
  char name[64], why[256];
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    why[0] = '\0';
    assert_int_equal(request(cases[i].devices, &req, name, why), -1);
    if (strstr(why, cases[i].why) == NULL)
      fail_msg("case %zu: %s lacks %s", i, why, cases[i].why);
  }
}

static void slice(struct gs__dra *d, struct gs_sched *s, const char *driver, const char *node, bool del) {
  char text[1024];
  snprintf(text, sizeof text,
           "{\"metadata\":{\"name\":\"%s-%s\"},\"spec\":{\"driver\":\"%s\","
           "\"pool\":{\"name\":\"pool-%s\"},\"nodeName\":\"%s\",\"devices\":["
           "{\"name\":\"gpu-0\",\"allowMultipleAllocations\":true,"
           "\"attributes\":{\"gpushare.io/index\":{\"int\":0}}},"
           "{\"name\":\"whole-1\",\"attributes\":{\"gpushare.io/index\":{\"int\":1}}}]}}",
           node, driver, driver, node, node);
  dra_feed(d, s, text, del ? gs__dra_slice_delete : gs__dra_slice);
}

static void test_device_at(void **state) {
  struct gs__dra *d = gs__dra_new();
  struct gs_policy pol;
  struct gs_sched *s;
  char pool[64], dev[64];
  bool multi = false;
  (void)state;
  gs_policy_init(&pol);
  s = gs_sched_new(&pol);
  assert_false(gs__dra_node_published(d, "a"));
  /* another driver's devices are never the ones gpushare allocates */
  slice(d, s, "gpu.nvidia.com", "a", false);
  assert_false(gs__dra_node_published(d, "a"));
  slice(d, s, "gpu.gpushare.io", "a", false);
  assert_true(gs__dra_node_published(d, "a"));
  assert_true(gs__dra_device_at(d, "a", 0, pool, sizeof pool, dev, sizeof dev, &multi));
  assert_string_equal(pool, "pool-a");
  assert_string_equal(dev, "gpu-0");
  assert_true(multi);
  assert_true(gs__dra_device_at(d, "a", 1, pool, sizeof pool, dev, sizeof dev, &multi));
  assert_string_equal(dev, "whole-1");
  assert_false(multi);
  assert_false(gs__dra_device_at(d, "a", 2, pool, sizeof pool, dev, sizeof dev, &multi));
  assert_false(gs__dra_device_at(d, "b", 0, pool, sizeof pool, dev, sizeof dev, &multi));
  /* the slice gone: nothing published */
  slice(d, s, "gpu.gpushare.io", "a", true);
  assert_false(gs__dra_node_published(d, "a"));
  assert_false(gs__dra_device_at(d, "a", 0, pool, sizeof pool, dev, sizeof dev, &multi));
  gs__dra_free(d);
  gs_sched_free(s);
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_request),
             cmocka_unit_test(test_request_refused),
             cmocka_unit_test(test_device_at))
