/* The extender's filter, for a preemptor whose victims may be gone in
 * kube-scheduler's view and not yet in gpushare's (server_int.h). */
#include "server_int.h"

#include <inttypes.h>
#include <string.h>

#define SETTLE_WAIT_MS 2000 /* a filter's wait for its preemption's victims (< httpTimeout) */

/* A preemptor asked again on nodes where the victims gpushare answered for
 * it are not gone yet in its view: kube-scheduler has deleted them (it
 * offers a node only with the room they leave) and the watch is behind.
 * Wait for the deletions rather than refuse the node, which would make
 * kube-scheduler preempt again elsewhere (docs/preemption.md "Victims gone
 * before the watch says so"). */
void gs__server_settle(struct gs_server *s, const struct gs_pod_request *pod, const json_t *obj,
                       const char *const *nodes, size_t n) {
  const char *nominated =
      json_string_value(json_object_get(json_object_get(obj, "status"), "nominatedNodeName"));
  int64_t t0;
  enum gs_err err;
  if (nominated != NULL && nominated[0] != '\0') {
    /* once kube-scheduler's nomination is known, only its node's victims
     * are waited for: the other nodes' were not deleted */
    size_t i = 0;
    while (i < n && strcmp(nodes[i], nominated) != 0)
      i++;
    if (i == n)
      return;
    nodes += i;
    n = 1;
  }
  if (!gs_sched_preempt_unsettled(s->sched, pod->uid, nodes, n))
    return;
  gs_log(GS_LVL_INFO, "filter: waiting for its preemption's victims to go", "pod=%s/%s",
         pod->ns, pod->name);
  t0 = gs__now_ns();
  err = gs_sched_preempt_settle(s->sched, pod->uid, nodes, n, SETTLE_WAIT_MS);
  gs_log(GS_LVL_INFO, "filter: waited for its preemption's victims",
         "pod=%s/%s waited_ms=%" PRId64 " result=%s", pod->ns, pod->name,
         (gs__now_ns() - t0) / 1000000, err == GS_EOK ? "gone" : "still-there");
}

