/* The documented label of every reason text (docs/operations.md, "Metrics":
 * the reason codes of gpushare_filter_rejections_total, one per row of its
 * reason tables), by a fixed part of the text, first match wins. The code
 * labels from the reason's code (status.h), never from its wording; the
 * tests hold each refusal they see to this table, so a producer that sets
 * a code beside its text that the docs do not give it fails. Header-only:
 * included by the tests that see refusals. */
#ifndef GPUSHARE_TEST_REASON_LABELS_H
#define GPUSHARE_TEST_REASON_LABELS_H

#include <gpushare/status.h>

#include <string.h>

static inline const char *gs_test_reason_label(const char *reason) {
  static const struct {
    const char *part, *label;
  } rows[] = {
      {"node unknown to gpushare", "node_unknown"},
      {"node is not a GPU-sharing node", "node_not_managed"},
      {"node serves whole GPUs only", "node_whole_gpus_only"},
      {"node does not serve whole GPUs", "node_memory_only"},
      {"node's device plugin runs one GPU per pod", "node_single_card"},
      {"no healthy GPU", "no_healthy_gpu"},
      {"GPU pod limit reached", "cgpu_pod_limit"},
      {"insufficient GPU memory", "insufficient_gpu_memory"},
      {"GPUs with", "insufficient_gpu_memory"}, /* fewer than M GPUs with X MiB free */
      {"free whole GPUs", "insufficient_whole_gpus"},
      {"usable GPUs", "insufficient_gpus"},
      {"is not divisible by", "invalid_pod"},
      {"aliyun.com/gpu-count", "invalid_pod"},
      {"is too large", "invalid_pod"},
      {"exceeds", "invalid_pod"},
      {"pod requests both", "invalid_pod"},
      {"pod has more than", "invalid_pod"},
      {"pod needs more than", "invalid_pod"},
      {"members present", "gang_quorum"},
      {"members disagree", "gang_disagree"},
      {"replicas fit", "gang_no_fit"},
      {"slot is on another node", "gang_other_node"},
      {"replica slots are taken", "gang_full"},
      {"members reserved", "gang_waiting"},
      {"too many gangs waiting", "gang_limit"},
      {"replica", "gang_other"}, /* the other gang texts */
      {"gang", "gang_other"},
  };
  if (reason == NULL)
    return "other";
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (strstr(reason, rows[i].part) != NULL)
      return rows[i].label;
  return "other";
}

/* The label a refusal's code gives, held to the documented one of its text
 * (a cmocka assertion: include cmocka.h first). */
#define gs_test_assert_reason_label(st)                                                        \
  assert_string_equal(gs_reason_label((st)->why), gs_test_reason_label((st)->reason))

#endif
