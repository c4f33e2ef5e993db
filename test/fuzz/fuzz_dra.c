/* Fuzz target "dra": the DRA feed (src/observe/dra.c, docs/dra.md). Input:
 * a JSON list of events, each {"slice": ResourceSlice}, {"claim":
 * ResourceClaim}, {"slice-": …} / {"claim-": …} (deleted) or {"node":
 * "name"} (a share node of 4 GPUs × 16 GiB); a single object is one slice
 * (it has spec.driver) or one claim. Invariants: nothing of a claim is
 * charged that the ledger cannot account for (every GPU's used memory is
 * the sum of its claims' charges), and once every claim the input named is
 * deleted, nothing is charged and nothing is kept. */
#include "fuzz.h"

#include "dra.h"
#include "feed.h"

#include <gpushare/sched.h>

#include "../unit/node_spec.h"

#define MAX_EVENTS 64

static void node(struct gs_sched *s, const char *name) {
  struct gs_node_spec spec = gs_test_node(name, GS_MODE_SHARE, 4, 64);
  FUZZ_CHECK(gs_sched_node_upsert(s, &spec) == GS_EOK);
}

struct check {
  bool ok;
  size_t claims;
};
static void check_fn(const struct gs_ledger *l, void *arg) {
  struct check *c = arg;
  c->claims = 0;
  for (size_t i = 0; i < gs_ledger_node_count(l); i++) {
    const struct gs_node *n = gs_ledger_node_at(l, i);
    uint64_t sum[GS_MAX_GPUS] = {0};
    for (size_t j = 0; j < gs_ledger_node_alloc_count(l, n->name); j++) {
      const struct gs_alloc *a = gs_ledger_node_alloc_at(l, n->name, j);
      c->ok = c->ok && a->kind == GS_ALLOC_CLAIM;
      c->claims++;
      for (uint32_t p = 0; p < a->nparts; p++)
        if (a->parts[p].gpu < n->ngpus)
          sum[a->parts[p].gpu] += gs_ledger_part_charge_mib(&n->gpus[a->parts[p].gpu], a,
                                                            &a->parts[p]);
    }
    for (uint32_t g = 0; g < n->ngpus; g++)
      c->ok = c->ok && sum[g] == n->gpus[g].used_mib;
  }
}

static void apply(struct gs__dra *d, struct gs_sched *s, const char *key, const json_t *v,
                  json_t *claims) {
  if (strcmp(key, "slice") == 0) {
    gs__dra_slice(d, s, v);
  } else if (strcmp(key, "slice-") == 0) {
    gs__dra_slice_delete(d, s, v);
  } else if (strcmp(key, "claim") == 0 || strcmp(key, "claim-") == 0) {
    if (key[5] == '-')
      gs__dra_claim_delete(d, s, v);
    else
      gs__dra_claim(d, s, v);
    json_array_append((json_t *)claims, (json_t *)v);
  } else if (strcmp(key, "node") == 0 && json_is_string(v)) {
    node(s, json_string_value(v));
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct gs_policy policy;
  struct gs_sched *s;
  struct gs__dra *d;
  json_t *root, *claims, *ev, *c;
  struct check chk = {true, 0};
  size_t i;
  fuzz_init();
  root = json_loadb((const char *)data, size, 0, NULL);
  if (root == NULL)
    return 0;
  gs_policy_init(&policy);
  s = gs_sched_new(&policy);
  d = gs__dra_new();
  claims = json_array();
  FUZZ_CHECK(s != NULL && d != NULL && claims != NULL);
  node(s, "n1");
  if (json_is_array(root)) {
    json_array_foreach(root, i, ev) {
      const char *key;
      json_t *v;
      if (i >= MAX_EVENTS)
        break;
      json_object_foreach(ev, key, v) apply(d, s, key, v, claims);
    }
  } else if (json_is_object(root)) {
    apply(d, s, json_object_get(json_object_get(root, "spec"), "driver") ? "slice" : "claim",
          root, claims);
  }
  node(s, "n2"); /* kept claims of a node coming late are charged now */
  gs_sched_read(s, check_fn, NULL, &chk);
  FUZZ_CHECK(chk.ok);
  json_array_foreach(claims, i, c) gs__dra_claim_delete(d, s, c);
  chk = (struct check){true, 0};
  gs_sched_read(s, check_fn, NULL, &chk);
  FUZZ_CHECK(chk.ok && chk.claims == 0);
  FUZZ_CHECK(gs_sched_kept_count(s) == 0);
  FUZZ_CHECK(gs__dra_counts(d).claims == 0);
  json_decref(claims);
  json_decref(root);
  gs__dra_free(d);
  gs_sched_free(s);
  return 0;
}
