/* libgpushare in a program of your own: an in-memory cluster of two nodes,
 * one pod asking 8 GiB over two GPUs, scheduled as kube-scheduler would
 * (filter, prioritize, bind) by the same C core gpushare-extender runs.
 *
 *   cc schedule.c $(pkg-config --cflags --libs gpushare) -o schedule
 *   ./schedule
 */
#include <gpushare/annot.h>
#include <gpushare/sched.h>

#include <stdio.h>
#include <string.h>

/* The cluster's side of a bind: here, print what the Binding would carry. */
static enum gs_err print_binding(void *ctx, const struct gs_pod_request *pod, const char *node,
                                 const struct gs_annotations *annots, struct gs_diag *diag) {
  (void)ctx;
  (void)diag;
  printf("Binding %s/%s -> %s\n", pod->ns, pod->name, node);
  for (size_t i = 0; i < annots->n; i++)
    printf("  %s: %s\n", annots->kv[i].key, annots->kv[i].value);
  return GS_EOK;
}

static void print_ledger(const struct gs_ledger *ledger, void *arg) {
  (void)arg;
  for (size_t i = 0; i < gs_ledger_node_count(ledger); i++) {
    const struct gs_node *n = gs_ledger_node_at(ledger, i);
    for (uint32_t g = 0; g < n->ngpus; g++)
      printf("ledger %s gpu %u: %llu/%llu MiB\n", n->name, (unsigned)n->gpus[g].index,
             (unsigned long long)n->gpus[g].used_mib, (unsigned long long)n->gpus[g].total_mib);
  }
}

static struct gs_node_spec node(const char *name, uint32_t gpus, uint64_t units) {
  struct gs_node_spec spec;
  memset(&spec, 0, sizeof spec);
  snprintf(spec.name, sizeof spec.name, "%s", name);
  spec.mode = GS_MODE_SHARE; /* label ack.node.gpu.schedule=share */
  spec.gpu_count = gpus;     /* capacity aliyun.com/gpu-count */
  spec.gpu_mem_units = units; /* capacity aliyun.com/gpu-mem */
  return spec;
}

int main(void) {
  struct gs_policy policy;
  struct gs_sched *s;
  struct gs_node_spec a = node("gpu-a", 1, 16), b = node("gpu-b", 4, 64);
  struct gs_pod_request pod;
  const char *names[] = {"gpu-a", "gpu-b"};
  struct gs_node_result res[2];
  struct gs_binder binder = {print_binding, NULL};
  struct gs_sched_bind_result r;
  int best = -1;

  printf("libgpushare %s (header %s)\n", gs_version(), GS_VERSION_STRING);
  gs_policy_init(&policy); /* unit 1GiB, binpack */
  s = gs_sched_new(&policy);
  if (s == NULL || gs_sched_node_upsert(s, &a) != GS_EOK || gs_sched_node_upsert(s, &b) != GS_EOK)
    return 1;

  memset(&pod, 0, sizeof pod);
  snprintf(pod.ns, sizeof pod.ns, "default");
  snprintf(pod.name, sizeof pod.name, "multi-gpu-8gib");
  snprintf(pod.uid, sizeof pod.uid, "3f0e2a8c-0000-4000-8000-000000000001");
  pod.ncontainers = 1;
  pod.mem_units[0] = 8; /* limits aliyun.com/gpu-mem: 8 */
  pod.gpu_count = 2;    /* label aliyun.com/gpu-count: "2" */

  if (gs_sched_filter(s, &pod, names, 2, 0, res) != GS_EOK)
    return 1;
  for (int i = 0; i < 2; i++)
    printf("filter %s: %s%s%s\n", names[i], res[i].code == GS_EOK ? "fits" : "refused",
           res[i].code == GS_EOK ? "" : ": ", res[i].reason);
  if (gs_sched_prioritize(s, &pod, names, 2, 0, res) != GS_EOK)
    return 1;
  for (int i = 0; i < 2; i++)
    if (res[i].code == GS_EOK && (best < 0 || res[i].score > res[best].score))
      best = i;
  if (best < 0)
    return 1;
  printf("prioritize: %s scores %lld\n", names[best], (long long)res[best].score);
  if (gs_sched_bind(s, &pod, NULL, names[best], 0, &binder, &r) != GS_EOK) {
    fprintf(stderr, "bind: %s\n", r.diag.text);
    return 1;
  }
  gs_annotations_clear(&r.annots);
  gs_sched_read(s, print_ledger, NULL, NULL);
  gs_sched_free(s);
  return 0;
}
