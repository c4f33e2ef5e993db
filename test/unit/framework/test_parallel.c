/* Filter and prioritize over many nodes on the framework's worker pool
 * (src/framework/pool.c): the same answers, node for node, as on one
 * thread, for every policy and pod kind; two callers at once (one gets the
 * pool, the other runs alone) too. Run under ThreadSanitizer by the test
 * command. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "framework.h"
#include "plugins.h"
#include "fw_test.h"

#include "../testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODES 1500

static char names_buf[NODES][16];
static const char *names[NODES];

static uint32_t rnd(uint32_t *s, uint32_t n) {
  *s = *s * 1103515245u + 12345u;
  return (*s >> 8) % n;
}

/* NODES nodes: share, cgpu, mps and plain, 1–8 GPUs of 16 or 32 GiB,
 * loaded at random, some with host resources known. */
static struct gs_sched *cluster(enum gs_placement node_policy) {
  struct gs_policy policy;
  struct gs_sched *fw;
  uint32_t s = 7;
  gs_policy_init(&policy);
  policy.node_policy = node_policy;
  policy.frag_aware = node_policy == GS_PLACE_FRAG;
  fw = fw_test_new(&policy);
  for (uint32_t i = 0; i < NODES; i++) {
    static const enum gs_mode modes[] = {GS_MODE_SHARE, GS_MODE_CGPU, GS_MODE_MPS, GS_MODE_NONE};
    uint32_t gpus = 1 + rnd(&s, 8), per = rnd(&s, 2) ? 16 : 32;
    enum gs_mode mode = modes[rnd(&s, 4)];
    struct gs_node_spec spec;
    char name[16];
    snprintf(name, sizeof name, "n%04u", i);
    memcpy(names_buf[i], name, sizeof name);
    names[i] = names_buf[i];
    spec = gs_test_node(name, mode, mode == GS_MODE_NONE ? 0 : gpus,
                        mode == GS_MODE_NONE ? 0 : (uint64_t)gpus * per);
    assert_int_equal(gs_fw_node_upsert(fw, &spec), GS_EOK);
    if (mode != GS_MODE_NONE)
      for (uint32_t g = 0; g < gpus; g++) {
        char uid[32];
        struct gs_alloc_part part = {0, g, rnd(&s, per + 1)};
        struct gs_alloc a = {.ns = "default", .node = names[i], .kind = GS_ALLOC_MEM,
                             .state = GS_ALLOC_BOUND, .unit_mib = policy.unit_mib,
                             .nparts = 1, .parts = &part};
        if (part.units == 0)
          continue;
        snprintf(uid, sizeof uid, "load-%u-%u", i, g);
        a.uid = a.name = uid;
        assert_int_equal(gs_fw_pod_restore(fw, &a), GS_EOK);
      }
    if (rnd(&s, 2)) {
      const char *one[1] = {names[i]};
      struct gs_host h = {64000, 262144, rnd(&s, 64000), rnd(&s, 262144)};
      gs_sched_nodes_set_host(fw, one, &h, 1);
    }
  }
  return fw;
}

static struct gs_pod_request pod_of(uint32_t i, uint32_t *s) {
  struct gs_pod_request p;
  char name[16];
  snprintf(name, sizeof name, "p%u", i);
  p = gs_test_mem_pod(name, 1 + rnd(s, 16), 1);
  switch (i % 4) {
  case 1: /* two cards */
    p.mem_units[0] = 2 * (1 + rnd(s, 8));
    p.gpu_count = 2;
    break;
  case 2: /* CPU only */
    p.mem_units[0] = 0;
    break;
  default:
    break;
  }
  p.cpu_milli = 500 * rnd(s, 8);
  p.mem_mib = 1024 * rnd(s, 8);
  return p;
}

static void same(const struct gs_node_result *a, const struct gs_node_result *b) {
  for (size_t i = 0; i < NODES; i++) {
    if (a[i].code != b[i].code || a[i].score != b[i].score || a[i].score100 != b[i].score100 ||
        strcmp(a[i].reason, b[i].reason) != 0)
      fail_msg("node %s: %d %lld %lld \"%s\" vs %d %lld %lld \"%s\"", names[i], a[i].code,
               (long long)a[i].score, (long long)a[i].score100, a[i].reason, b[i].code,
               (long long)b[i].score, (long long)b[i].score100, b[i].reason);
  }
}

static void test_same_answers(void **state) {
  static struct gs_node_result one[NODES], many[NODES];
  (void)state;
  for (int pol = 0; pol < 3; pol++) {
    enum gs_placement np = pol == 0 ? GS_PLACE_BINPACK : pol == 1 ? GS_PLACE_SPREAD : GS_PLACE_FRAG;
    struct gs_sched *fw = cluster(np);
    uint32_t s = 11;
    for (uint32_t i = 0; i < 24; i++) {
      struct gs_pod_request p = pod_of(i, &s);
      for (int verb = 0; verb < 2; verb++) {
        enum gs_err (*fn)(struct gs_sched *, const struct gs_pod_request *, const char *const *,
                          size_t, int64_t, struct gs_node_result *) =
            verb ? gs_sched_prioritize : gs_sched_filter;
        assert_int_equal(gs_fw_set_parallel(fw, 0, 1), GS_EOK);
        assert_int_equal(fn(fw, &p, names, NODES, 1, one), GS_EOK);
        assert_int_equal(gs_fw_set_parallel(fw, 3, 1), GS_EOK);
        memset(many, 0x5a, sizeof many);
        assert_int_equal(fn(fw, &p, names, NODES, 1, many), GS_EOK);
        same(one, many);
      }
    }
    gs_sched_free(fw);
  }
}

struct caller {
  struct gs_sched *fw;
  struct gs_pod_request pod;
  struct gs_node_result res[NODES];
};

static void *call(void *arg) {
  struct caller *c = arg;
  for (int k = 0; k < 20; k++)
    if (gs_sched_prioritize(c->fw, &c->pod, names, NODES, 1, c->res) != GS_EOK)
      return arg;
  return NULL;
}

/* Two callers at once: one shares the pool, the other finds it busy and
 * runs alone; both get the answers of one thread. */
static void test_two_callers(void **state) {
  static struct gs_node_result want[2][NODES];
  static struct caller c[2];
  struct gs_sched *fw = cluster(GS_PLACE_FRAG);
  pthread_t t[2];
  uint32_t s = 5;
  void *rv;
  (void)state;
  assert_int_equal(gs_fw_set_parallel(fw, 0, 1), GS_EOK);
  for (int i = 0; i < 2; i++) {
    c[i].fw = fw;
    c[i].pod = pod_of((uint32_t)(4 * i), &s); /* one-card pods */
    /* first seen here: frag learns both before the answers are taken */
    assert_int_equal(gs_sched_prioritize(fw, &c[i].pod, names, NODES, 1, want[i]), GS_EOK);
  }
  for (int i = 0; i < 2; i++)
    assert_int_equal(gs_sched_prioritize(fw, &c[i].pod, names, NODES, 1, want[i]), GS_EOK);
  assert_int_equal(gs_fw_set_parallel(fw, 2, 1), GS_EOK);
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&t[i], NULL, call, &c[i]), 0);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(pthread_join(t[i], &rv), 0);
    assert_null(rv);
    same(want[i], c[i].res);
  }
  gs_sched_free(fw);
}

GS_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_same_answers), cmocka_unit_test(test_two_callers))
