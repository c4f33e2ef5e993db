/* Fuzz target "pod": a v1.Pod object (JSON) → gs_api_pod_decode, the
 * metadata helpers, the pod-level placement check and the allocation
 * read-back. */
#include "fuzz.h"

#include "api.h"

#include <gpushare/place.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct gs_api_alloc alloc;
  struct gs_pod_request req;
  struct gs_policy policy;
  struct gs_diag diag = {{0}, {0}};
  struct gs_status st;
  json_t *pod;
  enum gs_err err;

  fuzz_init();
  pod = json_loadb((const char *)data, size, 0, NULL);
  if (pod == NULL)
    return 0;
  err = gs_api_pod_decode(pod, &req, &diag);
  FUZZ_CHECK_DIAG(err, diag);
  if (err == GS_EOK) {
    FUZZ_CHECK(req.name[0] != '\0' && req.ns[0] != '\0');
    FUZZ_CHECK(req.ncontainers <= GS_MAX_CONTAINERS);
    FUZZ_CHECK(req.gpu_count_text[0] == '\0' || req.gpu_count == 0);
    FUZZ_CHECK(req.gang_job[0] == '\0' ? req.gang_replicas == 0 : req.gang_replicas >= 1);
    (void)gs_pod_request_mem_effective(&req);
    (void)gs_pod_request_whole_effective(&req);
    gs_policy_init(&policy);
    (void)gs_place_check_pod(&req, &policy, &st);
  }
  (void)gs_api_pod_ns(pod);
  (void)gs_api_pod_name(pod);
  (void)gs_api_pod_uid(pod);
  (void)gs_api_pod_node(pod);
  (void)gs_api_pod_phase(pod);
  (void)gs_api_pod_is_terminal(pod);
  memset(&diag, 0, sizeof diag);
  err = gs_api_alloc_from_pod(pod, GS_UNIT_GIB, &alloc, &diag);
  if (err != GS_ENOTFOUND)
    FUZZ_CHECK_DIAG(err, diag);
  json_decref(pod);
  return 0;
}
