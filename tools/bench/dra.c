/* gpushare-bench dra: what the DRA feed (src/observe/dra.c, docs/dra.md)
 * costs a front end — both the extender and gpushare-scheduler hand it
 * every ResourceSlice and ResourceClaim their informers deliver
 * (docs/benchmarks.md §12).
 *
 * N share nodes of G GPUs × 16 GiB are in the service; then, timed one by
 * one in the thread's CPU time, JSON parsing included (the front ends hand
 * the feed parsed objects, so the parse is counted apart as well):
 *   slice   each node's ResourceSlice as gpushare-node --dra publishes it
 *           (plugins/node/nodeagent/dra.go through the kubelet plugin's
 *           slice controller: driver gpu.gpushare.io, pool = the node, G
 *           devices with gpushare.io/index and /uuid, capacity memory,
 *           multiple allocations allowed; owned by the Node)
 *   claim   K allocated ResourceClaims per node, as the apiserver serves
 *           them: one result each (a device of the node, a shareID,
 *           consumedCapacity memory 2Gi), the nodeSelector, reservedFor
 *   relist  every slice delivered again (an informer's relist) with the
 *           K claims charged on it: each slice re-resolves its claims
 * Then the feed's counts and the ledger's charged memory are checked
 * against what was fed: a wrong state exits 1 (figures of a broken feed
 * are not figures). */
#include "bench.h"
#include "dra.h"

#include <gpushare/ledger.h>

#include <jansson.h>

#include <stdlib.h>
#include <string.h>

#define DRA_TEXT_MAX 8192     /* one object's JSON text (G ≤ 16 devices) */
#define DRA_GIB_PER_GPU 16    /* each device's memory */
#define DRA_CLAIM_MIB 2048    /* each claim's consumedCapacity */
#define DRA_GPUS_MAX 16       /* --gpus */
#define DRA_CLAIMS_PER_GPU 8  /* --claims ≤ G × this: 8 × 2 GiB fill a GPU */

static void usage(void) {
  fprintf(stderr, "usage: gpushare-bench dra [--nodes 5000] [--gpus 8] [--claims 4] [--json]\n"
                  "  --claims  allocated claims per node (at most 8 per GPU)\n");
}

static void node_name(size_t i, char *out, size_t cap) {
  snprintf(out, cap, "dra-node-%05zu", i);
}

/* Node i's slice, the same object each time it is asked for (a relist
 * delivers it unchanged). */
static int slice_text(size_t i, uint32_t gpus, char *out, size_t cap) {
  char node[32];
  size_t n;
  int w;
  node_name(i, node, sizeof node);
  w = snprintf(out, cap,
               "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\","
               "\"metadata\":{\"name\":\"%s-gpu.gpushare.io-x7k2p\",\"generateName\":"
               "\"%s-gpu.gpushare.io-\",\"uid\":\"5a1ce000-0000-4000-8000-%012zx\","
               "\"resourceVersion\":\"%zu\",\"generation\":1,"
               "\"creationTimestamp\":\"2026-11-28T12:00:00Z\","
               "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"%s\","
               "\"uid\":\"0de00000-0000-4000-8000-%012zx\",\"controller\":true}]},"
               "\"spec\":{\"driver\":\"" GS_DRA_DRIVER "\",\"nodeName\":\"%s\","
               "\"pool\":{\"name\":\"%s\",\"generation\":1,\"resourceSliceCount\":1},"
               "\"devices\":[",
               node, node, i, 1000 + i, node, i, node, node);
  if (w < 0 || (size_t)w >= cap)
    return -1;
  n = (size_t)w;
  for (uint32_t g = 0; g < gpus; g++) {
    w = snprintf(out + n, cap - n,
                 "%s{\"name\":\"gpu-%u\",\"allowMultipleAllocations\":true,"
                 "\"attributes\":{\"" GS_DRA_ATTR_INDEX "\":{\"int\":%u},"
                 "\"gpushare.io/uuid\":{\"string\":\"GPU-%08zx-%04x-4000-8000-%012x\"}},"
                 "\"capacity\":{\"memory\":{\"value\":\"%uGi\"}}}",
                 g ? "," : "", g, g, i, g, g, DRA_GIB_PER_GPU);
    if (w < 0 || (size_t)w >= cap - n)
      return -1;
    n += (size_t)w;
  }
  w = snprintf(out + n, cap - n, "]}}");
  return w < 0 || (size_t)w >= cap - n ? -1 : 0;
}

/* Claim k of node i, allocated on GPU k mod G of it. */
static int claim_text(size_t i, size_t k, uint32_t gpus, char *out, size_t cap) {
  char node[32];
  int w;
  node_name(i, node, sizeof node);
  w = snprintf(
      out, cap,
      "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
      "\"metadata\":{\"name\":\"job-%05zu-%02zu-gpu\",\"namespace\":\"team\","
      "\"uid\":\"c1a10000-%04zx-4000-8000-%012zx\",\"resourceVersion\":\"%zu\","
      "\"creationTimestamp\":\"2026-11-28T12:00:01Z\","
      "\"finalizers\":[\"resource.kubernetes.io/delete-protection\"]},"
      "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
      "\"deviceClassName\":\"" GS_DRA_CLASS "\",\"allocationMode\":\"ExactCount\",\"count\":1,"
      "\"capacity\":{\"requests\":{\"memory\":\"%uMi\"}}}}]}},"
      "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
      "\"driver\":\"" GS_DRA_DRIVER "\",\"pool\":\"%s\",\"device\":\"gpu-%zu\","
      "\"shareID\":\"5ea1e000-%04zx-4000-8000-%012zx\","
      "\"consumedCapacity\":{\"memory\":\"%uMi\"}}]},"
      "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\","
      "\"operator\":\"In\",\"values\":[\"%s\"]}]}]},"
      "\"allocationTimestamp\":\"2026-11-28T12:00:02Z\"},"
      "\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"job-%05zu-%02zu\","
      "\"uid\":\"90d00000-%04zx-4000-8000-%012zx\"}]}}",
      i, k, k, i, 100000 + i * 64 + k, DRA_CLAIM_MIB, node, k % gpus, k, i, DRA_CLAIM_MIB, node,
      i, k, k, i);
  return w < 0 || (size_t)w >= (size_t)cap ? -1 : 0;
}

/* One phase's samples: CPU per object (parse + feed), of which parse. */
struct phase {
  struct bench_samples cpu, parse;
  int64_t wall_ns;
};

static void phase_free(struct phase *p) {
  bench_samples_free(&p->cpu);
  bench_samples_free(&p->parse);
}

enum kind { K_SLICE, K_CLAIM };

/* Parses text and hands it to the feed, timed into p. */
static int feed(struct gs__dra *d, struct gs_sched *s, enum kind kind, const char *text,
                struct phase *p) {
  json_error_t e;
  int64_t c0 = bench_cpu_ns(), c1, c2;
  json_t *j = json_loads(text, 0, &e);
  c1 = bench_cpu_ns();
  if (j == NULL) {
    fprintf(stderr, "gpushare-bench dra: bad generated JSON: %s\n", e.text);
    return -1;
  }
  if (kind == K_SLICE)
    gs__dra_slice(d, s, j);
  else
    gs__dra_claim(d, s, j);
  json_decref(j);
  c2 = bench_cpu_ns();
  bench_samples_add(&p->cpu, c2 - c0);
  bench_samples_add(&p->parse, c1 - c0);
  return 0;
}

static void phase_row(struct bench_table *t, const char *name, size_t nodes, struct phase *p) {
  double total = 0, parse = 0;
  for (size_t i = 0; i < p->cpu.n; i++) {
    total += (double)p->cpu.v[i];
    parse += (double)p->parse.v[i];
  }
  bench_samples_sort(&p->cpu);
  bench_table_row(t);
  bench_table_str(t, "%s", name);
  bench_table_num(t, "%.0f", (double)nodes);
  bench_table_num(t, "%.0f", (double)p->cpu.n);
  bench_table_num(t, "%.6f", total / 1e9);
  bench_table_num(t, "%.6f", (double)p->wall_ns / 1e9);
  bench_table_num(t, "%.1f", p->cpu.n ? total / (double)p->cpu.n / 1e3 : 0);
  bench_table_num(t, "%.1f", p->cpu.n ? parse / (double)p->cpu.n / 1e3 : 0);
  bench_table_num(t, "%.1f", (double)bench_pct(&p->cpu, 0.5) / 1e3);
  bench_table_num(t, "%.1f", (double)bench_pct(&p->cpu, 0.99) / 1e3);
}

/* The memory claims hold in the ledger, summed over the nodes. */
struct charged_call {
  size_t nodes;
  uint64_t mib, claims;
};
static void charged_fn(const struct gs_ledger *ledger, void *arg) {
  struct charged_call *c = arg;
  char name[32];
  for (size_t i = 0; i < c->nodes; i++) {
    const struct gs_node *n;
    node_name(i, name, sizeof name);
    n = gs_ledger_node_get(ledger, name);
    if (n == NULL)
      continue;
    for (uint32_t g = 0; g < n->ngpus; g++)
      c->mib += n->gpus[g].used_mib;
    for (size_t a = 0; a < gs_ledger_node_alloc_count(ledger, name); a++)
      c->claims += gs_ledger_node_alloc_at(ledger, name, a)->kind == GS_ALLOC_CLAIM;
  }
}

static int run(size_t nodes, uint32_t gpus, size_t claims, struct bench_table *t,
               struct bench_table *state) {
  struct gs_policy policy;
  struct gs_sched *s = NULL;
  struct gs__dra *d = gs__dra_new();
  struct phase ps = {0}, pc = {0}, pr = {0};
  char *text = malloc(DRA_TEXT_MAX);
  struct gs__dra_counts n;
  struct charged_call cc = {nodes, 0, 0};
  uint64_t want_mib = (uint64_t)nodes * claims * DRA_CLAIM_MIB;
  int64_t w0;
  bool ok = false, checked = false;
  int rc = 1;

  gs_policy_init(&policy);
  s = gs_sched_new(&policy);
  if (s == NULL || d == NULL || text == NULL)
    goto out;
  for (size_t i = 0; i < nodes; i++) {
    struct gs_node_spec spec;
    memset(&spec, 0, sizeof spec);
    node_name(i, spec.name, sizeof spec.name);
    spec.mode = GS_MODE_SHARE;
    spec.gpu_count = gpus;
    spec.gpu_mem_units = (uint64_t)gpus * DRA_GIB_PER_GPU * 1024 / policy.unit_mib;
    if (gs_sched_node_upsert(s, &spec) != GS_EOK)
      goto out;
  }
  w0 = bench_now_ns();
  for (size_t i = 0; i < nodes; i++)
    if (slice_text(i, gpus, text, DRA_TEXT_MAX) != 0 || feed(d, s, K_SLICE, text, &ps) != 0)
      goto out;
  ps.wall_ns = bench_now_ns() - w0;
  w0 = bench_now_ns();
  for (size_t i = 0; i < nodes; i++)
    for (size_t k = 0; k < claims; k++)
      if (claim_text(i, k, gpus, text, DRA_TEXT_MAX) != 0 ||
          feed(d, s, K_CLAIM, text, &pc) != 0)
        goto out;
  pc.wall_ns = bench_now_ns() - w0;
  w0 = bench_now_ns();
  for (size_t i = 0; i < nodes; i++)
    if (slice_text(i, gpus, text, DRA_TEXT_MAX) != 0 || feed(d, s, K_SLICE, text, &pr) != 0)
      goto out;
  pr.wall_ns = bench_now_ns() - w0;

  phase_row(t, "slice", nodes, &ps);
  phase_row(t, "claim", nodes, &pc);
  phase_row(t, "relist", nodes, &pr);

  n = gs__dra_counts(d);
  gs_sched_read(s, charged_fn, NULL, &cc);
  ok = n.slices == nodes && n.devices == nodes * gpus && n.claims == nodes * claims &&
       n.charged == nodes * claims && n.unresolved == 0 && cc.claims == nodes * claims &&
       cc.mib == want_mib;
  checked = true;
  bench_table_row(state);
  bench_table_num(state, "%.0f", (double)nodes);
  bench_table_num(state, "%.0f", (double)n.slices);
  bench_table_num(state, "%.0f", (double)n.devices);
  bench_table_num(state, "%.0f", (double)n.claims);
  bench_table_num(state, "%.0f", (double)n.charged);
  bench_table_num(state, "%.0f", (double)n.unresolved);
  bench_table_num(state, "%.0f", (double)cc.claims);
  bench_table_num(state, "%.0f", (double)cc.mib);
  bench_table_num(state, "%.0f", (double)want_mib);
  bench_table_str(state, "%s", ok ? "yes" : "NO");
  if (!ok)
    fprintf(stderr, "gpushare-bench dra: the feed's state is not what was fed (%zu nodes)\n",
            nodes);
  rc = ok ? 0 : 1;
out:
  if (!checked)
    fprintf(stderr, "gpushare-bench dra: set-up failed (%zu nodes)\n", nodes);
  phase_free(&ps);
  phase_free(&pc);
  phase_free(&pr);
  gs__dra_free(d);
  gs_sched_free(s);
  free(text);
  return rc;
}

int bench_dra(int argc, char **argv) {
  uint64_t sizes[BENCH_SIZES_MAX] = {5000};
  size_t nsizes = 1, claims = 4;
  uint32_t gpus = 8;
  static const char *const cols[] = {"phase",          "nodes",          "objects",
                                     "CPU s",          "wall s",         "CPU per object us",
                                     "of which parse us", "CPU p50 us", "CPU p99 us", NULL};
  static const char *const state_cols[] = {
      "nodes",  "slices",     "devices",    "claims",        "charged", "unresolved",
      "ledger claims", "ledger claim MiB", "fed MiB", "as fed", NULL};
  static struct bench_table t, state;
  int rc = 0;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--nodes") == 0) {
      nsizes = bench_parse_list(v, "--nodes", 100000, sizes);
      if (nsizes == 0)
        return 2;
      i++;
    } else if (strcmp(argv[i], "--gpus") == 0) {
      gpus = (uint32_t)bench_parse_u64(v, "--gpus", 1, DRA_GPUS_MAX);
      i++;
    } else if (strcmp(argv[i], "--claims") == 0) {
      claims = (size_t)bench_parse_u64(v, "--claims", 0, 1000);
      i++;
    } else {
      usage();
      return 2;
    }
  }
  if (claims > (size_t)gpus * DRA_CLAIMS_PER_GPU) {
    fprintf(stderr, "gpushare-bench dra: --claims %zu: at most %u on %u GPUs\n", claims,
            gpus * DRA_CLAIMS_PER_GPU, gpus);
    return 2;
  }
  bench_print_machine();
  bench_table_init(&t, "dra: the DRA feed's CPU time per object (parse + src/observe/dra.c)",
                   cols);
  bench_table_init(&state, "dra: the feed's state after the relist", state_cols);
  for (size_t i = 0; i < nsizes && rc == 0; i++)
    rc = run((size_t)sizes[i], gpus, claims, &t, &state);
  bench_table_print(&t);
  bench_table_print(&state);
  bench_note("%u GPUs of %u GiB a node, %zu claims of %u MiB a node; load now %.2f", gpus,
             DRA_GIB_PER_GPU, claims, DRA_CLAIM_MIB, bench_load1());
  return rc;
}
