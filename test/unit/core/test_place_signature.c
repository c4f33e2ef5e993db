/* Pod signatures (gs_place_signature): what makes two pods the same to
 * placement, for kube-scheduler's opportunistic batching. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include <gpushare/place.h>

#include "../testutil.h"

#include <stdio.h>
#include <string.h>

static enum gs_err sign(const struct gs_pod_request *r, const struct gs_policy *policy,
                        char sig[GS_REASON_MAX]) {
  memset(sig, 'x', GS_REASON_MAX);
  return gs_place_signature(r, policy, sig);
}

/* Two pods asking the same are signed alike whatever their names; any
 * difference placement could see makes another text. */
static void test_same_request_same_text(void **state) {
  struct gs_policy policy;
  char a[GS_REASON_MAX], b[GS_REASON_MAX];
  struct gs_pod_request p = gs_test_mem_pod("p", 4, 1), q = gs_test_mem_pod("q", 4, 1), r;
  (void)state;
  gs_policy_init(&policy);
  snprintf(q.ns, sizeof q.ns, "other");
  assert_int_equal(sign(&p, &policy, a), GS_EOK);
  assert_int_equal(sign(&q, &policy, b), GS_EOK);
  assert_string_equal(a, "mem k=1 mib=4096 prio=0 init=0/0 c=4/0,");
  assert_string_equal(a, b);

  r = gs_test_mem_pod("r", 8, 2); /* 4 GiB on each of two GPUs */
  assert_int_equal(sign(&r, &policy, b), GS_EOK);
  assert_string_equal(b, "mem k=2 mib=4096 prio=0 init=0/0 c=8/0,");

  r = gs_test_mem_pod("r", 4, 1); /* the same total in two containers */
  r.ncontainers = 2;
  r.mem_units[0] = r.mem_units[1] = 2;
  assert_int_equal(sign(&r, &policy, b), GS_EOK);
  assert_string_not_equal(a, b);

  r = gs_test_mem_pod("r", 4, 1);
  r.priority = 10;
  assert_int_equal(sign(&r, &policy, b), GS_EOK);
  assert_string_not_equal(a, b);

  r = gs_test_mem_pod("r", 0, 1); /* two whole GPUs */
  r.whole_gpus[0] = 2;
  assert_int_equal(sign(&r, &policy, b), GS_EOK);
  assert_string_equal(b, "whole k=2 mib=0 prio=0 init=0/0 c=0/2,");

  policy.unit_mib = 128; /* the same units are another amount of memory */
  assert_int_equal(sign(&p, &policy, b), GS_EOK);
  assert_string_equal(b, "mem k=1 mib=512 prio=0 init=0/0 c=4/0,");
}

/* What cannot be signed says why; a pod asking no GPU adds nothing. */
static void test_unsignable(void **state) {
  struct gs_policy policy;
  char sig[GS_REASON_MAX];
  struct gs_pod_request r = gs_test_mem_pod("m", 0, 1);
  (void)state;
  gs_policy_init(&policy);

  assert_int_equal(sign(&r, &policy, sig), GS_ESKIP);
  assert_string_equal(sig, "");

  r.whole_gpus[0] = 1;
  snprintf(r.gang_job, sizeof r.gang_job, "job");
  r.gang_replicas = 2;
  assert_int_equal(sign(&r, &policy, sig), GS_EUNRESOLVABLE);
  assert_string_equal(sig, "a member of a distributed job is placed by its plan");

  r = gs_test_mem_pod("u", 5, 2); /* 5 is not divisible by 2: refused everywhere */
  assert_int_equal(sign(&r, &policy, sig), GS_EUNRESOLVABLE);
  assert_string_equal(sig, "aliyun.com/gpu-mem 5 is not divisible by aliyun.com/gpu-count 2");

  r = gs_test_mem_pod("f", 4, 1);
  policy.node_policy = GS_PLACE_FRAG;
  assert_int_equal(sign(&r, &policy, sig), GS_EUNRESOLVABLE);
  assert_string_equal(sig, "nodePolicy frag weighs the whole cluster's shares");
  r = gs_test_mem_pod("c", 0, 1); /* a CPU-only pod frag scores: not signable either */
  r.cpu_milli = 1000;
  assert_int_equal(sign(&r, &policy, sig), GS_EUNRESOLVABLE);

  policy.node_policy = GS_PLACE_BINPACK;
  r = gs_test_mem_pod("many", 1, 1);
  r.ncontainers = GS_MAX_CONTAINERS;
  for (uint32_t c = 0; c < GS_MAX_CONTAINERS; c++)
    r.mem_units[c] = 1000000 + c;
  assert_int_equal(sign(&r, &policy, sig), GS_EUNRESOLVABLE);
  assert_string_equal(sig, "too many containers to sign");
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_same_request_same_text),
             cmocka_unit_test(test_unsignable))
