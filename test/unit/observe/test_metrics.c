/* Tests of the Prometheus registry: golden exposition text, escaping,
 * validation, reset, concurrency. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "../test_main.h"

#include "metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define L(...) ((const char *[]){__VA_ARGS__, NULL})

static void assert_render(const struct gs_metrics *m, const char *want) {
  char *got = gs_metrics_render(m);

  assert_non_null(got);
  if (strcmp(got, want) != 0)
    fprintf(stderr, "--- want\n%s--- got\n%s---\n", want, got);
  assert_string_equal(got, want);
  free(got);
}

static void test_empty(void **state) {
  struct gs_metrics *m = *state;

  assert_render(m, "");
  gs_metrics_free(NULL);
}

static void test_counter_golden(void **state) {
  struct gs_metrics *m = *state;

  assert_int_equal(gs_metrics_counter_add(m, "gpushare_requests_total",
                                          "Requests by verb and result.",
                                          L("verb", "filter", "result", "ok"), 1),
                   GS_EOK);
  assert_int_equal(gs_metrics_counter_add(m, "gpushare_requests_total", "ignored later",
                                          L("verb", "bind", "result", "error"), 1),
                   GS_EOK);
  assert_int_equal(gs_metrics_counter_add(m, "gpushare_requests_total", NULL,
                                          L("verb", "filter", "result", "ok"), 2),
                   GS_EOK);
  assert_int_equal(gs_metrics_counter_add(m, "up_total", "No labels.", NULL, 0.5), GS_EOK);
  assert_render(m, "# HELP gpushare_requests_total Requests by verb and result.\n"
                   "# TYPE gpushare_requests_total counter\n"
                   "gpushare_requests_total{verb=\"filter\",result=\"ok\"} 3\n"
                   "gpushare_requests_total{verb=\"bind\",result=\"error\"} 1\n"
                   "# HELP up_total No labels.\n"
                   "# TYPE up_total counter\n"
                   "up_total 0.5\n");
}

static void test_gauge_golden_and_reset(void **state) {
  struct gs_metrics *m = *state;
  const char *used = "gpushare_gpu_memory_used_mib";
  const char *total = "gpushare_gpu_memory_total_mib";

  assert_int_equal(gs_metrics_gauge_set(m, used, "GPU memory in use.", L("node", "a", "gpu", "0"),
                                        2048),
                   GS_EOK);
  assert_int_equal(gs_metrics_gauge_set(m, used, NULL, L("node", "a", "gpu", "1"), 0), GS_EOK);
  assert_int_equal(gs_metrics_gauge_set(m, total, "GPU memory.", L("node", "a", "gpu", "0"),
                                        16384),
                   GS_EOK);
  assert_int_equal(gs_metrics_gauge_add(m, used, NULL, L("node", "a", "gpu", "1"), -128),
                   GS_EOK);
  assert_int_equal(gs_metrics_gauge_add(m, "inflight", "In flight.", NULL, 3), GS_EOK);
  assert_int_equal(gs_metrics_gauge_add(m, "inflight", "In flight.", NULL, -1), GS_EOK);
  assert_render(m, "# HELP gpushare_gpu_memory_total_mib GPU memory.\n"
                   "# TYPE gpushare_gpu_memory_total_mib gauge\n"
                   "gpushare_gpu_memory_total_mib{node=\"a\",gpu=\"0\"} 16384\n"
                   "# HELP gpushare_gpu_memory_used_mib GPU memory in use.\n"
                   "# TYPE gpushare_gpu_memory_used_mib gauge\n"
                   "gpushare_gpu_memory_used_mib{node=\"a\",gpu=\"0\"} 2048\n"
                   "gpushare_gpu_memory_used_mib{node=\"a\",gpu=\"1\"} -128\n"
                   "# HELP inflight In flight.\n"
                   "# TYPE inflight gauge\n"
                   "inflight 2\n");

  /* Reset empties the family but keeps its help; rebuilt series follow. */
  gs_metrics_gauge_reset(m, used);
  gs_metrics_gauge_reset(m, "no_such_family");
  gs_metrics_gauge_reset(m, NULL);
  gs_metrics_gauge_reset(NULL, used);
  assert_int_equal(gs_metrics_gauge_set(m, used, NULL, L("node", "b", "gpu", "3"), 1), GS_EOK);
  assert_render(m, "# HELP gpushare_gpu_memory_total_mib GPU memory.\n"
                   "# TYPE gpushare_gpu_memory_total_mib gauge\n"
                   "gpushare_gpu_memory_total_mib{node=\"a\",gpu=\"0\"} 16384\n"
                   "# HELP gpushare_gpu_memory_used_mib GPU memory in use.\n"
                   "# TYPE gpushare_gpu_memory_used_mib gauge\n"
                   "gpushare_gpu_memory_used_mib{node=\"b\",gpu=\"3\"} 1\n"
                   "# HELP inflight In flight.\n"
                   "# TYPE inflight gauge\n"
                   "inflight 2\n");
  /* Label names stay fixed across a reset. */
  assert_int_equal(gs_metrics_gauge_set(m, used, NULL, L("gpu", "3", "node", "b"), 1),
                   GS_EINVAL);
  /* Reset of a counter is a no-op. */
  assert_int_equal(gs_metrics_counter_add(m, "c_total", "C.", NULL, 1), GS_EOK);
  gs_metrics_gauge_reset(m, "c_total");
  {
    char *text = gs_metrics_render(m);
    assert_non_null(strstr(text, "\nc_total 1\n"));
    free(text);
  }
}

static void test_histogram_golden(void **state) {
  struct gs_metrics *m = *state;
  const char *name = "gpushare_request_duration_seconds";
  const char *help = "Latency of the extender verbs.";

  /* Binary fractions keep the sum exact: 0.00390625 + 0.375 + 0.5 + 7. */
  assert_int_equal(gs_metrics_observe(m, name, help, L("verb", "filter"), 0.00390625), GS_EOK);
  assert_int_equal(gs_metrics_observe(m, name, help, L("verb", "filter"), 0.375), GS_EOK);
  assert_int_equal(gs_metrics_observe(m, name, help, L("verb", "filter"), 0.5), GS_EOK);
  assert_int_equal(gs_metrics_observe(m, name, help, L("verb", "filter"), 7), GS_EOK);
  assert_int_equal(gs_metrics_observe(m, name, help, L("verb", "bind"), 0), GS_EOK);
  assert_render(m, "# HELP gpushare_request_duration_seconds Latency of the extender verbs.\n"
                   "# TYPE gpushare_request_duration_seconds histogram\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"filter\",le=\"0.0001\"} 0\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"filter\",le=\"0.00025\"} 0\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"filter\",le=\"0.0005\"} 0\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"filter\",le=\"0.001\"} 0\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"filter\",le=\"0.0025\"} 0\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"filter\",le=\"0.005\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"filter\",le=\"0.01\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"filter\",le=\"0.025\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"filter\",le=\"0.05\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"filter\",le=\"0.1\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"filter\",le=\"0.25\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"filter\",le=\"0.5\"} 3\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"filter\",le=\"1\"} 3\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"filter\",le=\"2.5\"} 3\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"filter\",le=\"5\"} 3\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"filter\",le=\"+Inf\"} 4\n"
                   "gpushare_request_duration_seconds_sum{verb=\"filter\"} 7.87890625\n"
                   "gpushare_request_duration_seconds_count{verb=\"filter\"} 4\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"bind\",le=\"0.0001\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"bind\",le=\"0.00025\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"bind\",le=\"0.0005\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"bind\",le=\"0.001\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"bind\",le=\"0.0025\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"bind\",le=\"0.005\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"bind\",le=\"0.01\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"bind\",le=\"0.025\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"bind\",le=\"0.05\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"bind\",le=\"0.1\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"bind\",le=\"0.25\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"bind\",le=\"0.5\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"bind\",le=\"1\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"bind\",le=\"2.5\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"bind\",le=\"5\"} 1\n"
                   "gpushare_request_duration_seconds_bucket{verb=\"bind\",le=\"+Inf\"} 1\n"
                   "gpushare_request_duration_seconds_sum{verb=\"bind\"} 0\n"
                   "gpushare_request_duration_seconds_count{verb=\"bind\"} 1\n");
}

static void test_histogram_custom_buckets(void **state) {
  struct gs_metrics *m = *state;
  const double b[] = {1, 10, 100};
  const double bad_order[] = {1, 1};
  const double bad_inf[] = {1, INFINITY};

  assert_int_equal(gs_metrics_histogram_define(m, "size_bytes", "Sizes.", b, 3), GS_EOK);
  /* Same bounds again: fine; other bounds: refused. */
  assert_int_equal(gs_metrics_histogram_define(m, "size_bytes", "Sizes.", b, 3), GS_EOK);
  assert_int_equal(gs_metrics_histogram_define(m, "size_bytes", "Sizes.", b, 2), GS_EINVAL);
  assert_int_equal(gs_metrics_histogram_define(m, "x", "X.", bad_order, 2), GS_EINVAL);
  assert_int_equal(gs_metrics_histogram_define(m, "x", "X.", bad_inf, 2), GS_EINVAL);
  assert_int_equal(gs_metrics_histogram_define(m, "x", "X.", b, 0), GS_EINVAL);
  assert_int_equal(gs_metrics_observe(m, "size_bytes", NULL, NULL, 5), GS_EOK);
  assert_int_equal(gs_metrics_observe(m, "size_bytes", NULL, NULL, 1000), GS_EOK);
  assert_render(m, "# HELP size_bytes Sizes.\n"
                   "# TYPE size_bytes histogram\n"
                   "size_bytes_bucket{le=\"1\"} 0\n"
                   "size_bytes_bucket{le=\"10\"} 1\n"
                   "size_bytes_bucket{le=\"100\"} 1\n"
                   "size_bytes_bucket{le=\"+Inf\"} 2\n"
                   "size_bytes_sum 1005\n"
                   "size_bytes_count 2\n");
}

static void test_escaping(void **state) {
  struct gs_metrics *m = *state;

  assert_int_equal(gs_metrics_counter_add(m, "esc_total", "Back\\slash \"quoted\"\nnext line.",
                                          L("path", "C:\\dir\\\"x\"\nend", "empty", ""), 1),
                   GS_EOK);
  /* The same raw values find the same series. */
  assert_int_equal(gs_metrics_counter_add(m, "esc_total", NULL,
                                          L("path", "C:\\dir\\\"x\"\nend", "empty", ""), 1),
                   GS_EOK);
  assert_render(m, "# HELP esc_total Back\\\\slash \"quoted\"\\nnext line.\n"
                   "# TYPE esc_total counter\n"
                   "esc_total{path=\"C:\\\\dir\\\\\\\"x\\\"\\nend\",empty=\"\"} 2\n");
}

static void test_values(void **state) {
  struct gs_metrics *m = *state;

  assert_int_equal(gs_metrics_gauge_set(m, "a", "A.", L("k", "tenth"), 0.1), GS_EOK);
  assert_int_equal(gs_metrics_gauge_set(m, "a", "A.", L("k", "big"), 1e21), GS_EOK);
  assert_int_equal(gs_metrics_gauge_set(m, "a", "A.", L("k", "third"), 1.0 / 3), GS_EOK);
  assert_int_equal(gs_metrics_gauge_set(m, "a", "A.", L("k", "inf"), INFINITY), GS_EOK);
  assert_int_equal(gs_metrics_gauge_set(m, "a", "A.", L("k", "ninf"), -INFINITY), GS_EOK);
  assert_int_equal(gs_metrics_gauge_set(m, "a", "A.", L("k", "int"), 123456789012.0), GS_EOK);
  assert_render(m, "# HELP a A.\n"
                   "# TYPE a gauge\n"
                   "a{k=\"tenth\"} 0.1\n"
                   "a{k=\"big\"} 1e+21\n"
                   "a{k=\"third\"} 0.33333333333333331\n"
                   "a{k=\"inf\"} +Inf\n"
                   "a{k=\"ninf\"} -Inf\n"
                   "a{k=\"int\"} 123456789012\n");
}

static void test_declare(void **state) {
  struct gs_metrics *m = *state;

  assert_int_equal(gs_metrics_declare(m, GS_METRIC_COUNTER, "z_total", "Z."), GS_EOK);
  assert_int_equal(gs_metrics_declare(m, GS_METRIC_COUNTER, "z_total", "Z."), GS_EOK);
  assert_int_equal(gs_metrics_declare(m, GS_METRIC_GAUGE, "z_total", "Z."), GS_EINVAL);
  assert_int_equal(gs_metrics_declare(m, GS_METRIC_HISTOGRAM, "h", "H."), GS_EOK);
  assert_int_equal(gs_metrics_declare(m, (enum gs_metric_type)7, "q", "Q."), GS_EINVAL);
  assert_render(m, "# HELP h H.\n"
                   "# TYPE h histogram\n"
                   "# HELP z_total Z.\n"
                   "# TYPE z_total counter\n");
  /* The histogram declared above uses the default buckets. */
  assert_int_equal(gs_metrics_observe(m, "h", NULL, NULL, 0.2), GS_EOK);
  {
    char *text = gs_metrics_render(m);
    assert_non_null(strstr(text, "h_bucket{le=\"0.25\"} 1\n"));
    assert_non_null(strstr(text, "h_bucket{le=\"0.1\"} 0\n"));
    free(text);
  }
}

static void test_invalid(void **state) {
  struct gs_metrics *m = *state;

  assert_int_equal(gs_metrics_counter_add(NULL, "a_total", "A.", NULL, 1), GS_EINVAL);
  assert_int_equal(gs_metrics_counter_add(m, NULL, "A.", NULL, 1), GS_EINVAL);
  assert_int_equal(gs_metrics_counter_add(m, "", "A.", NULL, 1), GS_EINVAL);
  assert_int_equal(gs_metrics_counter_add(m, "9lives", "A.", NULL, 1), GS_EINVAL);
  assert_int_equal(gs_metrics_counter_add(m, "has-dash", "A.", NULL, 1), GS_EINVAL);
  assert_int_equal(gs_metrics_counter_add(m, "a_total", "A.", NULL, -1), GS_ERANGE);
  assert_int_equal(gs_metrics_counter_add(m, "a_total", "A.", NULL, NAN), GS_ERANGE);
  assert_int_equal(gs_metrics_gauge_set(m, "g", "G.", NULL, NAN), GS_ERANGE);
  assert_int_equal(gs_metrics_observe(m, "h", "H.", NULL, NAN), GS_ERANGE);
  /* Odd label list, bad label names, duplicates, reserved names. */
  assert_int_equal(gs_metrics_counter_add(m, "a_total", "A.", (const char *[]){"verb", NULL}, 1),
                   GS_EINVAL);
  assert_int_equal(gs_metrics_counter_add(m, "a_total", "A.", L("1x", "v"), 1), GS_EINVAL);
  assert_int_equal(gs_metrics_counter_add(m, "a_total", "A.", L("a:b", "v"), 1), GS_EINVAL);
  assert_int_equal(gs_metrics_counter_add(m, "a_total", "A.", L("__name__", "v"), 1),
                   GS_EINVAL);
  assert_int_equal(gs_metrics_counter_add(m, "a_total", "A.", L("k", "1", "k", "2"), 1),
                   GS_EINVAL);
  assert_int_equal(gs_metrics_observe(m, "h", "H.", L("le", "1"), 1), GS_EINVAL);
  /* Nothing was created by the failures. */
  assert_render(m, "");
  /* Type clash and label-set clash. */
  assert_int_equal(gs_metrics_counter_add(m, "a_total", "A.", L("verb", "filter"), 1), GS_EOK);
  assert_int_equal(gs_metrics_gauge_set(m, "a_total", "A.", L("verb", "filter"), 1), GS_EINVAL);
  assert_int_equal(gs_metrics_observe(m, "a_total", "A.", L("verb", "filter"), 1), GS_EINVAL);
  assert_int_equal(gs_metrics_counter_add(m, "a_total", "A.", L("node", "x"), 1), GS_EINVAL);
  assert_int_equal(gs_metrics_counter_add(m, "a_total", "A.", NULL, 1), GS_EINVAL);
  assert_int_equal(
      gs_metrics_counter_add(m, "a_total", "A.", L("verb", "filter", "result", "ok"), 1),
      GS_EINVAL);
  /* "le" is an ordinary label outside histograms. */
  assert_int_equal(gs_metrics_gauge_set(m, "g", "G.", L("le", "x"), 1), GS_EOK);
}

static void test_caps(void **state) {
  struct gs_metrics *m = *state;
  char *longv = malloc(GS_METRICS_LABEL_TEXT_MAX + 1);
  const char *many[2 * (GS_METRICS_LABELS_MAX + 1) + 1];
  char names[GS_METRICS_LABELS_MAX + 1][8];
  char fam[32];

  memset(longv, 'x', GS_METRICS_LABEL_TEXT_MAX);
  longv[GS_METRICS_LABEL_TEXT_MAX] = '\0';
  assert_int_equal(gs_metrics_gauge_set(m, "g", "G.", L("k", longv), 1), GS_ETOOBIG);
  /* Escaping doubles the size: half of the cap of quotes is too big too. */
  memset(longv, '"', GS_METRICS_LABEL_TEXT_MAX / 2);
  longv[GS_METRICS_LABEL_TEXT_MAX / 2] = '\0';
  assert_int_equal(gs_metrics_gauge_set(m, "g", "G.", L("k", longv), 1), GS_ETOOBIG);
  longv[GS_METRICS_LABEL_TEXT_MAX / 2 - 16] = '\0';
  assert_int_equal(gs_metrics_gauge_set(m, "g", "G.", L("k", longv), 1), GS_EOK);
  free(longv);

  for (int i = 0; i <= GS_METRICS_LABELS_MAX; i++) {
    snprintf(names[i], sizeof names[i], "l%d", i);
    many[2 * i] = names[i];
    many[2 * i + 1] = "v";
  }
  many[2 * (GS_METRICS_LABELS_MAX + 1)] = NULL;
  assert_int_equal(gs_metrics_gauge_set(m, "h", "H.", many, 1), GS_ETOOBIG);
  many[2 * GS_METRICS_LABELS_MAX] = NULL;
  assert_int_equal(gs_metrics_gauge_set(m, "h", "H.", many, 1), GS_EOK);

  for (int i = 0; i < GS_METRICS_FAMILIES_MAX; i++) {
    enum gs_err err;
    snprintf(fam, sizeof fam, "f%d", i);
    err = gs_metrics_gauge_set(m, fam, "F.", NULL, 1);
    /* Two families ("g", "h") exist already. */
    assert_int_equal(err, i < GS_METRICS_FAMILIES_MAX - 2 ? GS_EOK : GS_ETOOBIG);
  }
}

/* Per-GPU gauges of a large cluster rebuilt several times: the index keeps
 * lookups cheap and the output complete. */
static void test_many_series(void **state) {
  struct gs_metrics *m = *state;
  char node[32], gpu[8], *text;
  size_t lines = 0;

  for (int round = 0; round < 3; round++) {
    gs_metrics_gauge_reset(m, "gpushare_gpu_memory_used_mib");
    for (int n = 0; n < 2500; n++) {
      for (int g = 0; g < 8; g++) {
        snprintf(node, sizeof node, "node-%05d", n);
        snprintf(gpu, sizeof gpu, "%d", g);
        assert_int_equal(gs_metrics_gauge_set(m, "gpushare_gpu_memory_used_mib", "Used.",
                                              L("node", node, "gpu", gpu), n * 8 + g + round),
                         GS_EOK);
      }
    }
  }
  /* Setting an existing series again does not add one. */
  assert_int_equal(gs_metrics_gauge_set(m, "gpushare_gpu_memory_used_mib", "Used.",
                                        L("node", "node-00007", "gpu", "3"), -1),
                   GS_EOK);
  text = gs_metrics_render(m);
  assert_non_null(text);
  for (const char *p = text; *p != '\0'; p++)
    lines += *p == '\n';
  assert_int_equal(lines, 2 + 2500 * 8);
  assert_non_null(strstr(text, "gpushare_gpu_memory_used_mib{node=\"node-00007\",gpu=\"3\"} -1\n"));
  assert_non_null(
      strstr(text, "gpushare_gpu_memory_used_mib{node=\"node-02499\",gpu=\"7\"} 20001\n"));
  free(text);
}

#define THREADS 8
#define PER_THREAD 20000

static void *hammer(void *arg) {
  struct gs_metrics *m = arg;

  for (int i = 0; i < PER_THREAD; i++) {
    (void)gs_metrics_counter_add(m, "gpushare_requests_total", "R.",
                                 L("verb", (i & 1) ? "filter" : "bind", "result", "ok"), 1);
    (void)gs_metrics_observe(m, "gpushare_request_duration_seconds", "D.", L("verb", "filter"),
                             0.001);
    if (i % 1000 == 0) {
      char *text = gs_metrics_render(m);
      free(text);
    }
  }
  return NULL;
}

static void test_concurrent(void **state) {
  struct gs_metrics *m = *state;
  pthread_t t[THREADS];
  char *text;
  char want[128];

  for (int i = 0; i < THREADS; i++)
    assert_int_equal(pthread_create(&t[i], NULL, hammer, m), 0);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  text = gs_metrics_render(m);
  snprintf(want, sizeof want, "gpushare_requests_total{verb=\"filter\",result=\"ok\"} %d\n",
           THREADS * PER_THREAD / 2);
  assert_non_null(strstr(text, want));
  snprintf(want, sizeof want, "gpushare_request_duration_seconds_count{verb=\"filter\"} %d\n",
           THREADS * PER_THREAD);
  assert_non_null(strstr(text, want));
  snprintf(want, sizeof want,
           "gpushare_request_duration_seconds_bucket{verb=\"filter\",le=\"0.001\"} %d\n",
           THREADS * PER_THREAD);
  assert_non_null(strstr(text, want));
  free(text);
}

/* Every case gets a fresh registry (its *state), freed after it. */
static int setup(void **state) {
  *state = gs_metrics_new();
  assert_non_null(*state);
  return 0;
}

static int teardown(void **state) {
  gs_metrics_free(*state);
  return 0;
}

GS_TEST_MAIN(NULL, NULL,
             GS_TEST_FX(test_empty),
             GS_TEST_FX(test_counter_golden),
             GS_TEST_FX(test_gauge_golden_and_reset),
             GS_TEST_FX(test_histogram_golden),
             GS_TEST_FX(test_histogram_custom_buckets),
             GS_TEST_FX(test_escaping),
             GS_TEST_FX(test_values),
             GS_TEST_FX(test_declare),
             GS_TEST_FX(test_invalid),
             GS_TEST_FX(test_caps),
             GS_TEST_FX(test_many_series),
             GS_TEST_FX(test_concurrent))

