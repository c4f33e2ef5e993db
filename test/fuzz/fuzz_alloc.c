/* Fuzz target "alloc": allocation annotations read back from a Pod
 * (gs_api_alloc_from_pod): V2, legacy ALIYUN_COM_GPU_MEM_* and topology.
 *
 * Input: a selector byte, then '\n'-separated annotation values, so that
 * the mutations land in the values rather than in JSON framing:
 *   0: V2 allocation, assigned, assume-time, unit-mib
 *   1: legacy IDX, POD, ASSIGNED, ASSUME_TIME, unit-mib
 *   2: topology allocation, unit-mib
 *   3: the rest is a whole Pod object (JSON)
 * A successful read must be well-formed, and writing it again with the
 * core's annotation writer and reading that back gives the same parts. */
#include "fuzz.h"

#include "api.h"

#include <gpushare/annot.h>
#include <gpushare/ledger.h>

static const char *const keys[3][5] = {
    {GS_ANN_ALLOCATION, GS_ANN_ASSIGNED, GS_ANN_ASSUME_TIME, GS_ANN_UNIT_MIB, NULL},
    {GS_ANN_LEGACY_IDX, GS_ANN_LEGACY_POD, GS_ANN_LEGACY_ASSIGNED, GS_ANN_LEGACY_ASSUME_TIME,
     GS_ANN_UNIT_MIB},
    {GS_ANN_TOPO_ALLOCATION, GS_ANN_UNIT_MIB, NULL, NULL, NULL},
};

/* {"metadata":{"annotations":{...}}} from the selector's keys. */
static json_t *pod_from_fields(unsigned sel, const char *p, size_t n) {
  json_t *anns = json_object(), *pod;
  for (size_t k = 0; k < 5 && keys[sel][k] != NULL && n > 0; k++) {
    const char *nl = memchr(p, '\n', n);
    size_t len = nl != NULL ? (size_t)(nl - p) : n;
    json_t *v = json_stringn(p, len); /* NULL for invalid UTF-8: key left out */
    if (v != NULL)
      json_object_set_new(anns, keys[sel][k], v);
    if (nl == NULL)
      break;
    p = nl + 1;
    n -= len + 1;
  }
  pod = json_pack("{s:{s:o}}", "metadata", "annotations", anns);
  FUZZ_CHECK(pod != NULL);
  return pod;
}

static void check_shape(const struct gs_api_alloc *a) {
  uint64_t seen = 0;
  FUZZ_CHECK(a->kind == GS_ALLOC_MEM || a->kind == GS_ALLOC_WHOLE);
  FUZZ_CHECK(a->unit_mib == GS_UNIT_GIB || a->unit_mib == GS_UNIT_128MIB);
  FUZZ_CHECK(a->nparts >= 1 && a->nparts <= GS_MAX_PARTS);
  for (uint32_t i = 0; i < a->nparts; i++) {
    const struct gs_alloc_part *p = &a->parts[i];
    FUZZ_CHECK(p->container < GS_MAX_CONTAINERS && p->gpu < GS_MAX_GPUS);
    FUZZ_CHECK(p->units <= GS_API_QUANTITY_MAX);
    if (i > 0) /* sorted, no pair twice */
      FUZZ_CHECK(a->parts[i - 1].container < p->container ||
                 (a->parts[i - 1].container == p->container && a->parts[i - 1].gpu < p->gpu));
    if (a->kind == GS_ALLOC_WHOLE) {
      FUZZ_CHECK(p->units == 0 && !(seen >> p->gpu & 1));
      seen |= UINT64_C(1) << p->gpu;
    }
  }
}

/* Write a with the core's writer (on a 64-GPU node), read it back. */
static void check_rewrite(const struct gs_api_alloc *a) {
  static struct gs_api_alloc back;
  struct gs_annotations ann = {0};
  struct gs_node_spec spec;
  struct gs_ledger *ledger = gs_ledger_new(a->unit_mib);
  struct gs_alloc alloc = {
      .ns = "default", .name = "p", .uid = "u", .node = "n", .kind = a->kind,
      .state = GS_ALLOC_BOUND, .unit_mib = a->unit_mib, .assume_time_ns = a->assume_time_ns,
      .nparts = a->nparts, .parts = a->parts,
  };
  struct gs_diag diag = {{0}, {0}};
  json_t *anns, *pod;
  enum gs_err err;

  FUZZ_CHECK(ledger != NULL);
  memset(&spec, 0, sizeof spec);
  strcpy(spec.name, "n");
  spec.mode = a->kind == GS_ALLOC_MEM ? GS_MODE_SHARE : GS_MODE_TOPOLOGY;
  spec.gpu_count = GS_MAX_GPUS;
  spec.gpu_mem_units = GS_MAX_GPUS * 16;
  FUZZ_CHECK(gs_ledger_node_upsert(ledger, &spec) == GS_EOK);
  /* Restore never refuses for room; it may for amounts past the caps. */
  if (gs_ledger_restore(ledger, &alloc) != GS_EOK)
    goto out_ledger;
  if (a->kind == GS_ALLOC_MEM)
    err = gs_annot_mem(&alloc, gs_ledger_node_get(ledger, "n"), &ann);
  else
    err = gs_annot_whole(&alloc, &ann);
  FUZZ_CHECK(err == GS_EOK);
  anns = json_object();
  for (size_t i = 0; i < ann.n; i++)
    FUZZ_CHECK(json_object_set_new(anns, ann.kv[i].key, json_string(ann.kv[i].value)) == 0);
  pod = json_pack("{s:{s:o}}", "metadata", "annotations", anns);
  FUZZ_CHECK(pod != NULL);
  err = gs_api_alloc_from_pod(pod, a->unit_mib, &back, &diag);
  if (err != GS_EOK)
    fprintf(stderr, "read-back: %s: %s\n", diag.where, diag.text);
  FUZZ_CHECK(err == GS_EOK);
  FUZZ_CHECK(back.kind == a->kind && back.unit_mib == a->unit_mib &&
             back.nparts == a->nparts && back.assume_time_ns == a->assume_time_ns);
  FUZZ_CHECK(memcmp(back.parts, a->parts, a->nparts * sizeof a->parts[0]) == 0);
  json_decref(pod);
  gs_annotations_clear(&ann);
out_ledger:
  gs_ledger_free(ledger);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct gs_api_alloc a;
  struct gs_diag diag = {{0}, {0}};
  unsigned sel;
  json_t *pod;
  enum gs_err err;

  fuzz_init();
  if (size == 0)
    return 0;
  sel = data[0] & 3u;
  if (sel == 3)
    pod = json_loadb((const char *)data + 1, size - 1, 0, NULL);
  else
    pod = pod_from_fields(sel, (const char *)data + 1, size - 1);
  if (pod == NULL)
    return 0;
  err = gs_api_alloc_from_pod(pod, data[0] & 4u ? GS_UNIT_128MIB : GS_UNIT_GIB, &a, &diag);
  json_decref(pod);
  if (err == GS_ENOTFOUND)
    return 0;
  FUZZ_CHECK_DIAG(err, diag);
  if (err != GS_EOK)
    return 0;
  check_shape(&a);
  check_rewrite(&a);
  return 0;
}
