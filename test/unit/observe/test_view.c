/* The reason codes (status.h, issue 16 item 4; issue 30): every reason text
 * a filter can give maps to a fixed code, the same for every amount, job and
 * node, so the metric's label set stays bounded. The texts are the core's
 * and the plugins' (docs/operations.md, "Reading the reasons"); the
 * documented mapping is reason_labels.h, which the core and framework tests
 * hold every refusal they see to, and its labels are exactly the codes'. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "../reason_labels.h"

#include <string.h>

static void test_every_reason_has_its_code(void **state) {
  static const struct {
    const char *reason, *code;
  } cases[] = {
      {"node unknown to gpushare", "node_unknown"},
      {"node is not a GPU-sharing node", "node_not_managed"},
      {"node serves whole GPUs only (topology mode)", "node_whole_gpus_only"},
      {"node does not serve whole GPUs", "node_memory_only"},
      {"node's device plugin runs one GPU per pod (label gpushare.io/multi-card=false)",
       "node_single_card"},
      {"no healthy GPU", "no_healthy_gpu"},
      {"GPU pod limit reached (cgpu)", "cgpu_pod_limit"},
      {"insufficient GPU memory on any single GPU", "insufficient_gpu_memory"},
      {"fewer than 2 GPUs with 4096 MiB free", "insufficient_gpu_memory"},
      {"fewer than 4 GPUs with 12288 MiB free", "insufficient_gpu_memory"},
      {"fewer than 3 free whole GPUs", "insufficient_whole_gpus"},
      {"fewer than 2 usable GPUs", "insufficient_gpus"},
      {"aliyun.com/gpu-mem 9 is not divisible by aliyun.com/gpu-count 2", "invalid_pod"},
      {"aliyun.com/gpu-mem 9 (init container) is not divisible by aliyun.com/gpu-count 2",
       "invalid_pod"},
      {"aliyun.com/gpu-count 65 is out of range 1..64", "invalid_pod"},
      {"aliyun.com/gpu-count \"two\" is not a number from 1 to 64", "invalid_pod"},
      {"aliyun.com/gpu-mem 99999999999999 is too large", "invalid_pod"},
      {"aliyun.com/gpu 9 exceeds 8 GPUs per node", "invalid_pod"},
      {"pod requests both aliyun.com/gpu-mem and aliyun.com/gpu; a pod gets either shared GPU "
       "memory or whole GPUs",
       "invalid_pod"},
      {"pod has more than 16 containers", "invalid_pod"},
      {"pod needs more than 64 (container, GPU) shares", "invalid_pod"},
      {"gang team-a/train: 1 of 4 members present", "gang_quorum"},
      {"gang ns/job: members disagree: pod a asks 2 GPUs x 2 replicas, pod b asks 4 GPUs x 2 "
       "replicas",
       "gang_disagree"},
      {"gang ns/job: only 1 of 2 replicas fit (4 whole GPUs each)", "gang_no_fit"},
      {"gang ns/job: this replica's slot is on another node", "gang_other_node"},
      {"gang ns/job: all 2 replica slots are taken", "gang_full"},
      {"gang ns/job: 1 of 4 members reserved", "gang_waiting"},
      {"too many gangs waiting", "gang_limit"},
      {"gang member has no replica slot", "gang_other"},
      {"gang ns/job: label gpu-topology-replica must be 1..64", "gang_other"},
      {"something new", "other"},
      {"", "other"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *code = gs_test_reason_label(cases[i].reason);
    if (strcmp(code, cases[i].code) != 0)
      fail_msg("reason \"%s\": code %s, want %s", cases[i].reason, code, cases[i].code);
  }
  assert_string_equal(gs_test_reason_label(NULL), "other");
}

/* The codes' labels are the documented ones: each case's label is some
 * code's, and every code's label is some case's. */
static void test_codes_are_the_documented_labels(void **state) {
  static const char *const documented[] = {
      "other", "node_unknown", "node_not_managed", "node_whole_gpus_only", "node_memory_only",
      "node_single_card", "no_healthy_gpu", "cgpu_pod_limit", "insufficient_gpu_memory",
      "insufficient_whole_gpus", "insufficient_gpus", "invalid_pod", "gang_quorum",
      "gang_disagree", "gang_no_fit", "gang_other_node", "gang_full", "gang_waiting",
      "gang_limit", "gang_other"};
  size_t n = sizeof documented / sizeof documented[0];
  (void)state;
  for (size_t i = 0; i < n; i++)
    assert_string_equal(gs_reason_label((enum gs_reason)i), documented[i]);
  assert_string_equal(gs_reason_label((enum gs_reason)n), "other"); /* past the list */
  assert_string_equal(gs_reason_label(GS_R_GANG_OTHER), "gang_other");
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_every_reason_has_its_code),
             cmocka_unit_test(test_codes_are_the_documented_labels))
