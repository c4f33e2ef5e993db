/* Fuzz target "preempt": a preempt body (ExtenderPreemptionArgs), then what
 * the server does with one: the preemptor's request, the service's answer
 * for every offered node over a fixed cluster (a share node whose two GPUs
 * are full of pods of priorities 0 and 100, a cgpu node, a topology node),
 * and the result encoder. Invariants: the ledger never changes; every kept
 * node has victims, each named once; a victim holding GPUs there has a lower
 * priority than the preemptor, other victims are ones kube-scheduler
 * proposed; the answer is valid JSON naming only kept nodes. */
#include "fuzz.h"

#include "api.h"

#include <gpushare/sched.h>

#include "../unit/node_spec.h"

#define NOW_NS INT64_C(1700000000000000000)

static void add(struct gs_sched *s, const char *node, enum gs_mode mode, uint32_t gpus,
                uint64_t units) {
  struct gs_node_spec spec = gs_test_node(node, mode, gpus, mode == GS_MODE_TOPOLOGY ? 0 : units);
  spec.whole_gpus = mode == GS_MODE_TOPOLOGY ? gpus : 0;
  FUZZ_CHECK(gs_sched_node_upsert(s, &spec) == GS_EOK);
}

static void bound(struct gs_sched *s, const char *node, const char *uid, int32_t prio,
                  enum gs_alloc_kind kind, uint32_t gpu, uint64_t units) {
  struct gs_alloc_part part = {0, gpu, units};
  struct gs_alloc a = {.ns = "default", .name = uid, .uid = uid, .node = node, .kind = kind,
                       .state = GS_ALLOC_BOUND, .unit_mib = 1024, .assume_time_ns = NOW_NS,
                       .nparts = 1, .parts = &part, .priority = prio};
  FUZZ_CHECK(gs_sched_pod_bound(s, &a) == GS_EOK);
}

struct snap {
  uint64_t used;
  size_t pods;
};
static void snap_fn(const struct gs_ledger *l, void *arg) {
  struct snap *sn = arg;
  sn->used = 0;
  sn->pods = gs_ledger_alloc_count(l);
  for (size_t i = 0; i < gs_ledger_node_count(l); i++) {
    const struct gs_node *n = gs_ledger_node_at(l, i);
    for (uint32_t g = 0; g < n->ngpus; g++)
      sn->used += n->gpus[g].used_mib * (g + 1) + n->gpus[g].npods;
  }
}

struct prio_call {
  const char *uid, *node;
  int32_t prio;
  bool found;
};
static void prio_fn(const struct gs_ledger *l, void *arg) {
  struct prio_call *c = arg;
  const struct gs_alloc *a = gs_ledger_alloc_get(l, c->uid);
  c->found = a != NULL && strcmp(a->node, c->node) == 0;
  c->prio = a != NULL ? a->priority : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct gs_sched *s;
  struct gs_api_preempt_args args;
  struct gs_diag diag = {"", ""};
  struct gs_pod_request pod;
  struct gs_preempt_offer offers[64];
  struct gs_preempt_answer answers[64];
  struct gs_api_preempt_node kept[64];
  const char *uids[4096];
  struct snap before, after;
  size_t n, nkept = 0, nuids = 0;
  enum gs_err err;
  char *out;

  if (s == NULL) {
    struct gs_policy policy;
    gs_policy_init(&policy);
    policy.cgpu_max_pods = 3;
    s = gs_sched_new(&policy);
    FUZZ_CHECK(s != NULL);
    add(s, "n", GS_MODE_SHARE, 2, 32);
    add(s, "c", GS_MODE_CGPU, 1, 16);
    add(s, "t", GS_MODE_TOPOLOGY, 4, 0);
    bound(s, "n", "a6", 0, GS_ALLOC_MEM, 0, 6);
    bound(s, "n", "a4", 100, GS_ALLOC_MEM, 0, 4);
    bound(s, "n", "a5", 0, GS_ALLOC_MEM, 0, 5);
    bound(s, "n", "b8", 0, GS_ALLOC_MEM, 1, 8);
    bound(s, "n", "b7", 100, GS_ALLOC_MEM, 1, 7);
    bound(s, "c", "c1", 0, GS_ALLOC_MEM, 0, 1);
    bound(s, "c", "c2", 0, GS_ALLOC_MEM, 0, 1);
    bound(s, "c", "c3", 0, GS_ALLOC_MEM, 0, 1);
    bound(s, "t", "w0", 0, GS_ALLOC_WHOLE, 0, 0);
    bound(s, "t", "w1", 200, GS_ALLOC_WHOLE, 1, 0);
  }
  err = gs_api_preempt_args_decode((const char *)data, size, &args, &diag);
  FUZZ_CHECK_DIAG(err, diag);
  if (err != GS_EOK)
    return 0;
  if (gs_api_pod_decode(args.pod, &pod, &diag) != GS_EOK || args.nnodes > 64) {
    gs_api_preempt_args_release(&args);
    return 0;
  }
  n = args.nnodes;
  for (size_t i = 0; i < n; i++) {
    FUZZ_CHECK(args.nodes[i].node != NULL && args.nodes[i].node[0] != '\0');
    offers[i] = (struct gs_preempt_offer){args.nodes[i].node, args.nodes[i].uids,
                                          args.nodes[i].nvictims};
  }
  gs_sched_read(s, snap_fn, NULL, &before);
  err = gs_sched_preempt(s, &pod, offers, n, answers);
  gs_sched_read(s, snap_fn, NULL, &after);
  FUZZ_CHECK(before.used == after.used && before.pods == after.pods); /* a what-if */
  FUZZ_CHECK(err == GS_EOK || err == GS_ENOMEM);
  for (size_t i = 0; i < n; i++) {
    FUZZ_CHECK(answers[i].keep == (answers[i].nvictims > 0));
    FUZZ_CHECK(answers[i].keep || answers[i].reason[0] != '\0');
    if (!answers[i].keep)
      continue;
    kept[nkept] = (struct gs_api_preempt_node){args.nodes[i].node, answers[i].nvictims,
                                               uids + nuids, args.nodes[i].pdb_violations};
    for (size_t j = 0; j < answers[i].nvictims; j++) {
      struct prio_call c = {answers[i].victims[j], args.nodes[i].node, 0, false};
      bool proposed = false;
      for (size_t k = 0; k < j; k++)
        FUZZ_CHECK(strcmp(answers[i].victims[k], answers[i].victims[j]) != 0);
      for (size_t k = 0; k < args.nodes[i].nvictims; k++)
        proposed = proposed || strcmp(args.nodes[i].uids[k], c.uid) == 0;
      gs_sched_read(s, prio_fn, NULL, &c);
      FUZZ_CHECK(c.found ? c.prio < pod.priority : proposed);
      FUZZ_CHECK(nuids < sizeof uids / sizeof uids[0]);
      uids[nuids++] = answers[i].victims[j];
    }
    nkept++;
  }
  out = gs_api_preempt_result_dump(kept, nkept);
  if (out != NULL) {
    json_t *back = json_loads(out, 0, NULL);
    FUZZ_CHECK(back != NULL);
    FUZZ_CHECK(json_object_size(json_object_get(back, "NodeNameToMetaVictims")) <= nkept);
    json_decref(back);
    free(out);
  }
  gs_sched_preempt_free(answers, n);
  gs_api_preempt_args_release(&args);
  return 0;
}
