/* gpushare — placement decisions on one node. Pure: reads the ledger's node
 * view, never changes it. */
#ifndef GPUSHARE_PLACE_H
#define GPUSHARE_PLACE_H

#include <gpushare/ledger.h>
#include <gpushare/status.h>

/* Cluster-wide knobs (ConfigMap keys of docs/contract.md §6). */
struct gs_policy {
  uint32_t unit_mib;        /* active unit (1024 or 128) */
  uint32_t cgpu_max_pods;   /* cgpuMaxPodsPerGPU, default 16; 0 = no cap */
  enum gs_placement node_policy; /* nodePolicy: how prioritize ranks nodes
                                    (binpack, spread, frag) */
  bool frag_aware;          /* fragmentation-aware GPU choice inside a node */
  uint32_t gang_timeout_s;  /* gangTimeoutSeconds, default 60 */
  bool frag_normalize;      /* fragScoreNormalize: under frag, the extender's
                               0..10 spread over each request's nodes
                               (gs_place_scores_normalize) */
};
/* Fills the defaults: 1GiB, 16, binpack, not frag-aware, 60 s. */
void gs_policy_init(struct gs_policy *policy);

/* Verdict of a placement attempt. */
/* Placement verdicts are the framework's status codes (gpushare/status.h):
 * SUCCESS; UNSCHEDULABLE (not on this node now, may change: FailedNodes);
 * UNRESOLVABLE (the pod itself is invalid everywhere:
 * FailedAndUnresolvableNodes); SKIP (the pod asks for nothing gpushare
 * manages). One vocabulary from the core up. */

/* Where a pod would go on a node. */
struct gs_choice {
  uint32_t ngpus;
  uint32_t gpus[GS_MAX_GPUS];  /* ascending GPU indices */
  uint64_t mib_per_gpu;        /* memory charged on each chosen GPU (0: whole GPUs) */
  int64_t score;               /* 0..10, higher is better for nodePolicy */
};

/* Checks the pod on its own (no node): N % M, counts, caps.
 * Returns GS_EOK, GS_ESKIP, or GS_EUNRESOLVABLE; st (may be NULL) gets the
 * verdict, its reason code and text (never a node name; "" for OK and
 * SKIP). Every st below is the same: optional, the verdict and why. */
enum gs_err gs_place_check_pod(const struct gs_pod_request *req, const struct gs_policy *policy,
                               struct gs_status *st);

/* Picks GPUs for req on node. GS_EOK fills *ret_choice; otherwise the
 * verdict and why (the same text and code for the same cause on every
 * node) go to st.
 * GPU choice inside the node follows node->placement (binpack: fullest GPU
 * that fits; spread: emptiest; lowest index on ties; policy->frag_aware
 * first avoids leaving small stranded remainders). Memory pods get
 * mib_per_gpu = (sum of N_c + init excess) / M × unit; whole-GPU pods 0.
 * Score, for ranking nodes by policy->node_policy:
 *   memory pods: f = (used + mib_per_gpu) summed over the chosen GPUs /
 *                total_mib summed over the chosen GPUs;
 *   whole pods:  f = (GPUs busy on the node + the k chosen) / node GPUs;
 *   binpack: score = round(10 × f); spread: score = 10 − round(10 × f). */
enum gs_err gs_place_pick(const struct gs_node *node, const struct gs_pod_request *req,
                          const struct gs_policy *policy, struct gs_choice *ret_choice,
                          struct gs_status *st);

/* A pod checked once for many nodes. gs_place_pick checks the pod for
 * every node it is given (it is public and validates its input); a request
 * over thousands of nodes checks it once with gs_place_prepare and places
 * it with gs_place_pick_prepared. Fill it only with gs_place_prepare. It
 * borrows req and policy, which must stay valid and unchanged while it is
 * used. */
struct gs_place_pod {
  const struct gs_pod_request *req;
  const struct gs_policy *policy;
  bool mem;             /* GPU memory; false: whole GPUs */
  uint32_t k;           /* GPUs to choose */
  uint64_t mib_per_gpu; /* memory charged on each chosen GPU (0: whole GPUs) */
};
/* Checks the pod as gs_place_check_pod does and returns its verdict;
 * *ret_pod is written on GS_EOK only. */
enum gs_err gs_place_prepare(const struct gs_pod_request *req, const struct gs_policy *policy,
                             struct gs_place_pod *ret_pod, struct gs_status *st);

/* What makes two pods the same to placement, for kube-scheduler's pod
 * signatures (its opportunistic batching reuses one pod's node ranking for
 * the next pod with an equal signature, re-checking only the node it picks:
 * docs/plugin.md). Pods with equal texts get the same verdict and score on
 * a node in the same state: the text holds the GPUs to choose, the memory
 * charged on each, every container's request and the priority. GS_EOK
 * with sig written; GS_ESKIP when the pod asks for nothing gpushare
 * manages (and nodePolicy frag does not score it): sig is ""; else
 * GS_EUNRESOLVABLE with why it cannot be signed in sig: a member of a
 * distributed job (placed by its job's plan, slot by slot), nodePolicy
 * frag (a node's score weighs the shares of the whole cluster), a pod
 * gs_place_check_pod refuses, or a request too long to write. */
enum gs_err gs_place_signature(const struct gs_pod_request *req, const struct gs_policy *policy,
                               char sig[GS_REASON_MAX]);

/* The seam for choosing which k GPUs of a node (a topology-aware chooser
 * plugs in here). candidates: bit i set = GPU i can take the pod (healthy,
 * not owned, enough free memory and under the cgpu cap for memory pods;
 * no pod at all for whole-GPU pods); at least k bits are set. Writes k
 * distinct candidate indices, in any order, to ret_gpus and returns
 * GS_EOK, or returns GS_ENOFIT with st saying why (node-independent).
 * mib_per_gpu is 0 for whole-GPU pods. ctx is the chooser's own state. */
typedef enum gs_err (*gs_place_choose_fn)(void *ctx, const struct gs_node *node,
                                          const struct gs_pod_request *req,
                                          const struct gs_policy *policy, uint64_t candidates,
                                          uint32_t k, uint64_t mib_per_gpu,
                                          uint32_t ret_gpus[GS_MAX_GPUS],
                                          struct gs_status *st);
/* The default chooser (ctx unused). Whole-GPU pods: the k lowest indices.
 * Memory pods: candidates ordered by node->placement (binpack: least free
 * first; spread: most free first; lowest index on ties), the first k.
 * With policy->frag_aware, GPUs are first ranked by what placement leaves:
 * exactly 0 MiB, then at least mib_per_gpu (room for another pod like this
 * one, our proxy for a typical request), then a stranded remainder. */
enum gs_err gs_place_choose_default(void *ctx, const struct gs_node *node,
                                    const struct gs_pod_request *req,
                                    const struct gs_policy *policy, uint64_t candidates,
                                    uint32_t k, uint64_t mib_per_gpu,
                                    uint32_t ret_gpus[GS_MAX_GPUS], struct gs_status *st);
/* gs_place_pick with another chooser; choose NULL = gs_place_choose_default.
 * The chooser's answer is checked (k distinct candidates) and sorted. */
enum gs_err gs_place_pick_with(const struct gs_node *node, const struct gs_pod_request *req,
                               const struct gs_policy *policy, gs_place_choose_fn choose,
                               void *choose_ctx, struct gs_choice *ret_choice,
                               struct gs_status *st);

/* gs_place_pick_with for a prepared pod: the same verdict, choice and
 * status, without checking the pod again. */
enum gs_err gs_place_pick_prepared(const struct gs_node *node, const struct gs_place_pod *pod,
                                   gs_place_choose_fn choose, void *choose_ctx,
                                   struct gs_choice *ret_choice, struct gs_status *st);
/* The verdict alone of gs_place_pick_prepared with the default chooser:
 * the same code and status, without choosing the GPUs or scoring where
 * the verdict does not need them (a memory pod on one GPU, or on a node
 * without a topology to weigh: any candidate set of k GPUs is the choice).
 * For filter, whose answer is the verdict (docs/benchmarks.md §10). */
enum gs_err gs_place_fits_prepared(const struct gs_node *node, const struct gs_place_pod *pod,
                                   struct gs_status *st);

/* ---- fragmentation-aware placement (nodePolicy: frag) -------------------------
 *
 * In the spirit of FGD (Weng et al., "Beware of Fragmentation", USENIX
 * ATC'23), our own formulation. The workload is a distribution of request
 * classes (k GPUs of m MiB each, with the mean host CPU and memory their
 * pods ask), learned from the pods seen. A node's fragmentation for a class
 * is the free GPU memory that class cannot use:
 *   - all of it when no such pod fits: fewer than k GPUs can take m, or the
 *     node's host (struct gs_host, when known) has no room for the class's
 *     mean CPU and memory;
 *   - otherwise the free memory of the GPUs that cannot take m, plus, when
 *     the host has room for fewer such pods (R) than the GPUs could take
 *     (S = GPUs that can take m / k), the share (S − R) / S of the memory
 *     the GPUs could give them: CPU a node's GPUs need strands them.
 * The node's fragmentation is the average over classes weighted by how
 * often each is asked, and a placement is judged by how much it grows:
 * filling a hole nobody else fits lowers it, breaking a whole GPU that
 * large requests need raises it, and so does taking the CPU or memory the
 * node's free GPUs need (a CPU-only pod counts too). docs/placement.md has
 * worked examples; docs/benchmarks.md §5b measures it against FGD. */

#define GS_FRAG_CLASSES 32    /* distinct classes remembered */
#define GS_FRAG_WINDOW 4096u  /* weights halve when their sum passes this */

struct gs_frag_class {
  uint32_t k;       /* GPUs */
  uint64_t mib;     /* per GPU */
  uint32_t weight;  /* recent requests of this class */
  uint64_t cpu_sum; /* host CPU (milli) and memory (MiB) those requests */
  uint64_t mem_sum; /* asked, summed: the class's mean is sum / weight */
};
struct gs_frag_dist {
  uint32_t n;     /* classes in use */
  uint32_t total; /* sum of weights */
  struct gs_frag_class c[GS_FRAG_CLASSES];
};
/* An empty distribution. */
void gs_frag_dist_init(struct gs_frag_dist *d);
/* Counts one request of k GPUs × mib_per_gpu (no host request). */
void gs_frag_dist_add(struct gs_frag_dist *d, uint32_t k, uint64_t mib_per_gpu);
/* Counts one request of k GPUs × mib_per_gpu asking cpu_milli and mem_mib
 * of the host (0: unknown). When all slots are taken, the lightest class
 * makes room; past GS_FRAG_WINDOW every weight (and sum) halves (classes
 * reaching 0 are dropped), so recent requests count most. k or mib 0 (a
 * CPU-only pod) adds nothing: such pods use no GPU. */
void gs_frag_dist_add_host(struct gs_frag_dist *d, uint32_t k, uint64_t mib_per_gpu,
                           uint64_t cpu_milli, uint64_t mem_mib);

/* A distribution prepared for placement: the classes largest per-GPU
 * memory first, with what each node's evaluation needs precomputed. Build
 * it when the distribution changes; evaluate any number of nodes with it. */
struct gs_frag_entry {
  uint32_t k;
  uint64_t mib;
  double weight;           /* requests */
  double cpu_inv, mem_inv; /* 1 / the mean host request, 0 when none */
};
struct gs_frag_table {
  uint32_t n;
  double total; /* sum of weights */
  struct gs_frag_entry c[GS_FRAG_CLASSES];
};
/* Builds t from d. An empty d gives an empty table. */
void gs_frag_table_build(struct gs_frag_table *t, const struct gs_frag_dist *d);

/* How much a placement grows node's fragmentation under t (the weighted
 * average of the classes), in MiB, negative when it shrinks: mib_per_gpu
 * on each of the k GPUs in gpus[] and, when the node's host resources are
 * known, cpu_milli and mem_mib of the host. k 0 is a CPU-only pod. An
 * empty t counts the placed request as the only class. */
int64_t gs_place_frag_delta(const struct gs_node *node, const struct gs_policy *policy,
                            const struct gs_frag_table *t, const uint32_t *gpus, uint32_t k,
                            uint64_t mib_per_gpu, uint64_t cpu_milli, uint64_t mem_mib);
/* A delta as a prioritize score, 0..max (10 for the extender, 100 for
 * kube-scheduler's framework): max/2 when fragmentation is unchanged, max
 * when it shrinks by scale_mib or more, 0 when it grows by scale_mib or
 * more, linear between (rounded half up). scale_mib: the memory placed
 * (k × mib), or for a CPU-only pod the memory of the node's largest GPU. */
int64_t gs_place_frag_delta_score(int64_t delta, int64_t scale_mib, int64_t max);
/* The prioritize score (0..max) under nodePolicy frag of req on node: for
 * a memory pod's choice, gs_place_frag_delta of it (with req's host
 * request) scored with the memory placed as the scale; for whole GPUs the
 * choice's fill score (0..10) × max / 10; for a pod asking no GPU (choice
 * NULL), the delta of its host request scored with the node's largest GPU
 * as the scale. */
int64_t gs_place_frag_score(const struct gs_node *node, const struct gs_policy *policy,
                            const struct gs_frag_table *t, const struct gs_pod_request *req,
                            const struct gs_choice *choice, int64_t max);
/* The extender's 0..max scores of one prioritize call spread over its
 * nodes (kube-scheduler's plugins normalise theirs so, NormalizeScore):
 * for every node that fits (code GS_EOK), score = score100 mapped from
 * [lo, hi], the least and greatest score100 of those nodes, onto 0..max,
 * rounded half up; when all are equal (one node among them), max; a node
 * refused, 0. score100 is left as it was. nodePolicy frag with
 * fragScoreNormalize (docs/configuration.md; the framework applies it in
 * gs_sched_prioritize, the FGD replay calls it as well). */
void gs_place_scores_normalize(struct gs_node_result *res, size_t n, int64_t max);
/* True when nodePolicy frag scores req although it asks no GPU: it asks
 * host CPU or memory, which the GPUs' pods may need (a CPU-only pod). */
bool gs_place_frag_scores_host(const struct gs_pod_request *req, const struct gs_policy *policy);
/* The context of gs_place_choose_frag: the table in, and for a one-GPU
 * pod the chosen GPU's delta out (what gs_place_frag_delta answers for it),
 * so that scoring need not evaluate the node again. */
struct gs_frag_pick {
  const struct gs_frag_table *table;
  int64_t delta;  /* out */
  bool has_delta; /* out: false for several GPUs */
};
/* A gs_place_choose_fn (ctx: struct gs_frag_pick *): one GPU — the
 * candidate with the least delta (req's host request included), then the
 * placement order of gs_place_choose_default; several GPUs — as
 * gs_place_choose_default. */
enum gs_err gs_place_choose_frag(void *ctx, const struct gs_node *node,
                                 const struct gs_pod_request *req,
                                 const struct gs_policy *policy, uint64_t candidates, uint32_t k,
                                 uint64_t mib_per_gpu, uint32_t ret_gpus[GS_MAX_GPUS],
                                 struct gs_status *st);

/* Turns a choice into allocation parts, per container: for memory pods
 * each container's units split evenly over the chosen GPUs (init-container
 * excess charged to the first GPU-requesting container); for whole-GPU pods
 * each container gets its own GPUs from the chosen set, in order.
 * Containers asking for nothing get no part. Returns the number of parts
 * written, or 0 if more than cap would be needed. */
uint32_t gs_place_parts(const struct gs_pod_request *req, const struct gs_choice *choice,
                        struct gs_alloc_part *parts, uint32_t cap);

#endif
