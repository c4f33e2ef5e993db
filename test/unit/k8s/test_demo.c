/* The demo backend: start tells the sink every object whole, then keeps a
 * bound pod compactly; pod_get and bind answer for such a pod as for the
 * whole one (and as the live backend does). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "demo.h"
#include "../testutil.h"

#include <gpushare/plugin.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char cluster[] =
    "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":["
    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n1\","
    "\"labels\":{\"ack.node.gpu.schedule\":\"share\"}},\"status\":{\"capacity\":"
    "{\"aliyun.com/gpu-mem\":\"32\",\"aliyun.com/gpu-count\":\"2\"}}},"
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"bound\",\"namespace\":\"ml\","
    "\"uid\":\"u-bound\",\"annotations\":{\"ALIYUN_COM_GPU_MEM_IDX\":\"1\"}},\"spec\":{\"nodeName\":"
    "\"n1\",\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":\"4\"}}}]},"
    "\"status\":{\"phase\":\"Running\"}},"
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"waiting\",\"namespace\":\"ml\","
    "\"uid\":\"u-wait\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
    "{\"aliyun.com/gpu-mem\":\"2\"}}}]},\"status\":{\"phase\":\"Pending\"}},"
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"nophase\",\"namespace\":\"ml\","
    "\"uid\":\"u-np\"},\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\"}]}}"
    "]}";

struct rec {
  json_t *pods;  /* "ns/name" → last upsert (a copy) */
  json_t *nodes; /* name → copy */
  int synced;
};

static void rec_node(void *ctx, const json_t *node) {
  struct rec *r = ctx;
  json_object_set_new(r->nodes,
                      json_string_value(json_object_get(json_object_get(node, "metadata"), "name")),
                      json_deep_copy(node));
}

static void rec_pod(void *ctx, const json_t *pod) {
  struct rec *r = ctx;
  const json_t *meta = json_object_get(pod, "metadata");
  char key[256];
  snprintf(key, sizeof key, "%s/%s", json_string_value(json_object_get(meta, "namespace")),
           json_string_value(json_object_get(meta, "name")));
  json_object_set_new(r->pods, key, json_deep_copy(pod));
}

static void rec_synced(void *ctx) { ((struct rec *)ctx)->synced++; }

static const char *at(const json_t *obj, const char *a, const char *b) {
  return json_string_value(json_object_get(json_object_get(obj, a), b));
}

static void test_start_compacts_bound_pods(void **state) {
  char path[] = "/tmp/gs-demo-XXXXXX";
  int fd = mkstemp(path);
  struct gs_cluster c;
  struct gs_diag diag = {"", ""};
  struct rec r = {json_object(), json_object(), 0};
  struct gs_cluster_sink sink = {.ctx = &r, .node_upsert = rec_node, .pod_upsert = rec_pod,
                                 .synced = rec_synced};
  struct gs_annotations ann = {0};
  json_t *p;
  (void)state;
  assert_true(fd >= 0);
  assert_int_equal(write(fd, cluster, sizeof cluster - 1), (ssize_t)(sizeof cluster - 1));
  close(fd);
  assert_int_equal(gs_cluster_demo_new(path, &c, &diag), GS_EOK);
  unlink(path);
  assert_int_equal(c.ops->start(c.self, &sink), GS_EOK);

  /* The sink got everything whole, once. */
  assert_int_equal(r.synced, 1);
  assert_non_null(json_object_get(r.nodes, "n1"));
  assert_int_equal(json_object_size(r.pods), 3);
  assert_string_equal(at(json_object_get(r.pods, "ml/bound"), "metadata", "uid"), "u-bound");
  assert_non_null(json_object_get(json_object_get(json_object_get(r.pods, "ml/bound"), "metadata"),
                                  "annotations"));

  /* A bound pod afterwards: what the live backend's pod_get gives. */
  p = c.ops->pod_get(c.self, "ml", "bound");
  assert_non_null(p);
  assert_string_equal(json_string_value(json_object_get(p, "kind")), "Pod");
  assert_string_equal(at(p, "metadata", "namespace"), "ml");
  assert_string_equal(at(p, "metadata", "name"), "bound");
  assert_string_equal(at(p, "metadata", "uid"), "u-bound");
  assert_string_equal(at(p, "spec", "nodeName"), "n1");
  assert_string_equal(at(p, "status", "phase"), "Running");
  assert_null(json_object_get(json_object_get(p, "metadata"), "annotations"));
  json_decref(p);
  p = c.ops->pod_get(c.self, "ml", "nophase");
  assert_string_equal(at(p, "metadata", "uid"), "u-np");
  assert_null(json_object_get(p, "status"));
  json_decref(p);
  /* A pending pod stays whole: bind decodes its requests. */
  p = c.ops->pod_get(c.self, "ml", "waiting");
  assert_non_null(json_object_get(json_object_get(p, "spec"), "containers"));
  json_decref(p);
  assert_null(c.ops->pod_get(c.self, "ml", "nope"));

  /* Bind of a compact pod: as for the whole one. */
  assert_int_equal(c.ops->bind(c.self, "ml", "bound", "u-bound", "n1", &ann, gs_test_diag(&diag)),
                   GS_EOK);
  assert_int_equal(c.ops->bind(c.self, "ml", "bound", "u-bound", "n2", &ann, gs_test_diag(&diag)),
                   GS_ECONFLICT);
  assert_string_equal(diag.text, "pod bound is already assigned to node \"n1\"");
  assert_int_equal(c.ops->bind(c.self, "ml", "bound", "u-other", "n1", &ann, gs_test_diag(&diag)),
                   GS_ECONFLICT);
  assert_string_equal(diag.text, "Precondition failed: UID in precondition: u-other, UID in object "
                           "meta: u-bound");
  /* A pending pod binds, and the sink hears of it. */
  assert_int_equal(gs_annotations_set(&ann, "ALIYUN_COM_GPU_MEM_IDX", "0"), GS_EOK);
  assert_int_equal(c.ops->bind(c.self, "ml", "waiting", "u-wait", "n1", &ann, gs_test_diag(&diag)),
                   GS_EOK);
  assert_string_equal(at(json_object_get(r.pods, "ml/waiting"), "spec", "nodeName"), "n1");
  p = c.ops->pod_get(c.self, "ml", "waiting");
  assert_string_equal(at(p, "spec", "nodeName"), "n1");
  assert_string_equal(json_string_value(json_object_get(
                          json_object_get(json_object_get(p, "metadata"), "annotations"),
                          "ALIYUN_COM_GPU_MEM_IDX")),
                      "0");
  json_decref(p);

  gs_annotations_clear(&ann);
  c.ops->destroy(c.self);
  json_decref(r.pods);
  json_decref(r.nodes);
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_start_compacts_bound_pods))
