/* gpushare — Kubernetes object and extender v1 wire codecs (jansson).
 *
 * Decoders are bounded and validating: they take a caller-owned gs_diag
 * (JSON path + text, first error wins) and write their ret_* only on
 * success. json_t arguments are borrowed. Encoders return new references
 * (caller json_decref) or malloc'd strings (caller free).
 */
#ifndef GPUSHARE_API_H
#define GPUSHARE_API_H

#include <gpushare/annot.h>
#include <gpushare/ledger.h>
#include <gpushare/plugin.h>
#include <gpushare/types.h>

#include <jansson.h>

/* Resource, label and annotation names (docs/contract.md §3, §4). */
#define GS_RES_GPU_MEM "aliyun.com/gpu-mem"
#define GS_RES_GPU_COUNT "aliyun.com/gpu-count"
#define GS_RES_GPU "aliyun.com/gpu"
#define GS_LABEL_MODE "ack.node.gpu.schedule"
#define GS_LABEL_PLACEMENT "ack.node.gpu.placement"
/* "false": the node's device plugin runs one GPU per pod (types.h) */
#define GS_LABEL_MULTI_CARD "gpushare.io/multi-card"
#define GS_LABEL_POD_GPU_COUNT "aliyun.com/gpu-count"
#define GS_LABEL_GANG_JOB "gpu-topology"
#define GS_LABEL_GANG_REPLICAS "gpu-topology-replica"
#define GS_ANN_TOPOLOGY "gpushare.io/topology"

#define GS_API_BODY_MAX (16u * 1024u * 1024u) /* request body cap */
#define GS_API_NODES_MAX 65536u               /* nodes in one ExtenderArgs */

/* ---- quantities -------------------------------------------------------- */

/* Parses a Kubernetes quantity that must be a whole, non-negative number
 * ("4", "16", "1k", "2Ki", "1e3"; also a JSON integer). Fractions ("500m",
 * "1.5"), negatives, overflow and garbage give GS_EPARSE/GS_ERANGE. */
enum gs_err gs_api_quantity_whole(const json_t *value, uint64_t *ret) GS_WUR;
/* Largest quantity accepted: 2^53, the largest integer every JSON reader
 * (Go float64 paths, JavaScript) keeps exact. Larger → GS_ERANGE. */
#define GS_API_QUANTITY_MAX (UINT64_C(1) << 53)
/* As gs_api_quantity_whole, with a diagnostic at where (a JSON path). */
enum gs_err gs_api_quantity_whole_diag(const json_t *value, const char *where, uint64_t *ret,
                                       struct gs_diag *diag) GS_WUR;
/* As gs_api_quantity_whole_diag, for quantity text ("2Ki"). */
enum gs_err gs_api_quantity_whole_str(const char *text, const char *where, uint64_t *ret,
                                      struct gs_diag *diag) GS_WUR;

/* A quantity (string or JSON integer) × 10^e10 × 2^b2, rounded up: CPU in
 * milli (e10 3: "100m" → 100, "0.5" → 500) or memory in MiB (b2 -20:
 * "1Gi" → 1024, "1G" → 954). Negatives → GS_ERANGE, results above
 * GS_API_QUANTITY_MAX → GS_ERANGE, garbage and more than 18 significant
 * digits → GS_EPARSE. */
enum gs_err gs_api_quantity_scaled_diag(const json_t *value, int e10, int b2, const char *where,
                                        uint64_t *ret, struct gs_diag *diag) GS_WUR;

/* ---- objects ----------------------------------------------------------- */

/* Pod → request: ns/name/uid, per-container limits aliyun.com/gpu-mem and
 * aliyun.com/gpu (requests used when limits absent), init containers' max,
 * label aliyun.com/gpu-count (absent → 1; "0", non-numeric, > GS_MAX_GPUS →
 * GS_EPARSE), gang labels. Missing metadata.name → GS_EPARSE.
 * Details: namespace absent or "" → "default"; uid absent → "". More than
 * GS_MAX_CONTAINERS containers (or init containers) → GS_ETOOBIG. Sidecars
 * (init containers with restartPolicy Always) are folded into
 * init_mem_units/init_whole_gpus so that gs_pod_request_*_effective()
 * equal Kubernetes' effective request. gpu-topology-replica is read only
 * beside a non-empty gpu-topology label: decimal 1..10000, absent → 1;
 * without a job gang_replicas is 0. Host requests (cpu_milli, mem_mib):
 * requests.cpu/memory (limits when requests lack them) with the same
 * effective rule plus spec.overhead, as kube-scheduler's NodeResourcesFit
 * counts them, rounded up (gs_api_quantity_scaled_diag); a bad one is a
 * decode error like a bad gpu-mem. */
enum gs_err gs_api_pod_decode(const json_t *pod, struct gs_pod_request *ret,
                              struct gs_diag *diag) GS_WUR;

/* What each init container of pod asks of resource (aliyun.com/gpu-mem or
 * aliyun.com/gpu: limits, else requests, as gs_api_pod_decode reads them),
 * in spec.initContainers order, into ret[0 .. *ret_n-1] (0 for one asking
 * nothing). gs_pod_request keeps only their maximum; the node agent serves
 * them one by one. Errors as gs_api_pod_decode's; ret written only on
 * success. */
enum gs_err gs_api_pod_init_asks(const json_t *pod, const char *resource,
                                 uint64_t ret[GS_MAX_CONTAINERS], uint32_t *ret_n,
                                 struct gs_diag *diag) GS_WUR;

/* Node → spec: name, labels (mode, placement), status.capacity
 * (aliyun.com/gpu-mem, aliyun.com/gpu-count, aliyun.com/gpu; allocatable used
 * when capacity lacks them), annotations device-resource and topology.
 * ret->topo is pointed at *topo_buf when the topology annotation is valid
 * (an invalid one is ignored: all pairs equal). A bad device-resource or
 * topology annotation is not fatal either: it is ignored, GS_EOK is
 * returned and diag->text holds a warning saying so (callers may log it;
 * a diag that is still empty means nothing was ignored). */
enum gs_err gs_api_node_decode(const json_t *node, struct gs_node_spec *ret,
                               struct gs_topo *topo_buf, struct gs_diag *diag) GS_WUR;

/* A jansson value as compact JSON in insertion order: the one way a
 * document built with jansson is written (util's writer, jw.h, writes the
 * same bytes). Malloc'd; NULL when memory runs out — never a document with
 * a key left out, as jansson's json_dumps returns then. */
char *gs_api_dump(const json_t *value);

/* Pod metadata helpers (borrowed strings, NULL when absent). */
const char *gs_api_pod_ns(const json_t *pod);   /* "default" when absent */
const char *gs_api_pod_name(const json_t *pod);
const char *gs_api_pod_uid(const json_t *pod);
const char *gs_api_pod_node(const json_t *pod);  /* spec.nodeName */
const char *gs_api_pod_phase(const json_t *pod); /* status.phase */
int32_t gs_api_pod_priority(const json_t *pod);  /* spec.priority, 0 when absent */
/* True for status.phase Succeeded or Failed. */
bool gs_api_pod_is_terminal(const json_t *pod);

/* ---- extender v1 ------------------------------------------------------- */

/* Decoded ExtenderArgs. Holds a reference to the parsed document. */
struct gs_api_args {
  json_t *root;
  const json_t *pod;   /* Pod object */
  bool by_names;       /* NodeNames form (else Nodes form) */
  size_t nnodes;
  const char **names;  /* nnodes names (borrowed from root) */
  const json_t **nodes; /* Nodes form: the node objects, else NULLs */
};
/* Parses and validates a filter/prioritize body. Pod must be an object
 * with metadata.name; exactly one of NodeNames (array of strings) and
 * Nodes (object with items array of objects with metadata.name) must be
 * non-null. On error nothing is allocated and diag says why. */
enum gs_err gs_api_args_decode(const char *body, size_t len, struct gs_api_args *ret,
                               struct gs_diag *diag) GS_WUR;
void gs_api_args_release(struct gs_api_args *args);

/* ExtenderFilterResult builder. Error texts (filter and bind) have '%'
 * replaced by U+FF05 '％': kube-scheduler passes Error to fmt.Errorf as a
 * format in some versions (docs/kube-protocol.md §A.8). */
struct gs_api_filter_result;
struct gs_api_filter_result *gs_api_filter_result_new(bool by_names);
void gs_api_filter_result_free(struct gs_api_filter_result *r);
/* Room for the answer over nnodes names, made once: the refused nodes' index
 * is not grown (and rehashed) as they come (docs/benchmarks.md §10). Only
 * a size: the answer is the same without it. */
enum gs_err gs_api_filter_result_expect(struct gs_api_filter_result *r, size_t nnodes) GS_WUR;
/* Adds a passing node (node object copied by reference in Nodes form). */
enum gs_err gs_api_filter_result_pass(struct gs_api_filter_result *r, const char *name,
                                      const json_t *node_obj) GS_WUR;
enum gs_err gs_api_filter_result_fail(struct gs_api_filter_result *r, const char *name,
                                      const char *reason, bool unresolvable) GS_WUR;
enum gs_err gs_api_filter_result_error(struct gs_api_filter_result *r, const char *error) GS_WUR;
/* Serialises: {"Nodes":..,"NodeNames":..,"FailedNodes":{..},
 * "FailedAndUnresolvableNodes":{..},"Error":""}. The pass list is in the
 * field matching the request form, the other is null. Malloc'd string. */
char *gs_api_filter_result_dump(const struct gs_api_filter_result *r);
/* A whole filter answer carrying only Error (decode failures). */
char *gs_api_filter_error_dump(const char *error);

/* HostPriorityList: [{"Host":..,"Score":n},...] (integers). */
char *gs_api_priorities_dump(const char *const *hosts, const int64_t *scores, size_t n);

/* ExtenderBindingArgs. */
struct gs_api_bind_args {
  char pod_name[GS_NAME_MAX + 1];
  char pod_ns[GS_NS_MAX + 1];
  char pod_uid[GS_UID_MAX + 1];
  char node[GS_NAME_MAX + 1];
};
/* All four keys must be strings; PodName, PodNamespace and Node non-empty. */
enum gs_err gs_api_bind_args_decode(const char *body, size_t len, struct gs_api_bind_args *ret,
                                    struct gs_diag *diag) GS_WUR;
/* {"Error":"..."} ("" for success). */
char *gs_api_bind_result_dump(const char *error);
/* {"Error":"..."}: the body of an HTTP 400/404/405/413. */
char *gs_api_error_dump(const char *error);

/* ExtenderPreemptionArgs: the preemptor and, per node kube-scheduler
 * offers, its proposed victims' UIDs (full Pods in NodeNameToVictims when
 * nodeCacheCapable is false, MetaPods in NodeNameToMetaVictims when true;
 * both null: no node). */
struct gs_api_preempt_node {
  const char *node;     /* borrowed from root */
  size_t nvictims;
  const char **uids;    /* nvictims UIDs (borrowed from root) */
  int64_t pdb_violations;
};
struct gs_api_preempt_args {
  json_t *root;
  const json_t *pod;
  bool meta; /* the MetaVictims form */
  size_t nnodes;
  struct gs_api_preempt_node *nodes;
  const char **store; /* every UID; nodes point into it */
};
enum gs_err gs_api_preempt_args_decode(const char *body, size_t len,
                                       struct gs_api_preempt_args *ret,
                                       struct gs_diag *diag) GS_WUR;
void gs_api_preempt_args_release(struct gs_api_preempt_args *args);
/* ExtenderPreemptionResult, always the Meta form:
 * {"NodeNameToMetaVictims":{"<node>":{"Pods":[{"UID":".."}],"NumPDBViolations":n}}}.
 * Malloc'd string, NULL when out of memory. */
char *gs_api_preempt_result_dump(const struct gs_api_preempt_node *nodes, size_t n);

/* ---- annotations (docs/contract.md §4) ----------------------------------------- */

/* The bind annotations are formatted by the core (gpushare/annot.h), so
 * plugins can write them; this layer only reads them back. */

/* An allocation read back from a pod's annotations. */
struct gs_api_alloc {
  enum gs_alloc_kind kind;
  uint32_t unit_mib;      /* gpushare.io/unit-mib, else default_unit_mib */
  bool unit_recorded;     /* gpushare.io/unit-mib was there */
  uint64_t dev_units;     /* ALIYUN_COM_GPU_MEM_DEV when a decimal number, else 0 */
  int64_t assume_time_ns;
  bool assigned;
  uint32_t nparts;
  struct gs_alloc_part parts[GS_MAX_PARTS];
};
/* Reads V2 first, legacy ALIYUN_COM_* otherwise, topology allocation for
 * whole GPUs. default_unit_mib applies when gpushare.io/unit-mib is absent.
 * GS_ENOTFOUND when the pod carries no allocation; a malformed one →
 * GS_EPARSE (or GS_ETOOBIG past GS_MAX_PARTS) with diag. Parts come out
 * sorted by (container, GPU). Legacy keys are per pod: ALIYUN_COM_GPU_MEM_POD
 * units go to container 0, split evenly over the ALIYUN_COM_GPU_MEM_IDX GPUs
 * with the remainder on the lowest GPU. assigned = the assigned key is
 * "true" (topology: "assigned":true). Without gpushare.io/unit-mib the
 * service infers a memory pod's unit from dev_units (gs_ledger_restore). */
enum gs_err gs_api_alloc_from_pod(const json_t *pod, uint32_t default_unit_mib,
                                  struct gs_api_alloc *ret, struct gs_diag *diag) GS_WUR;

/* ---- topology annotation (docs/contract.md §7) ---------------------------------- */

/* {"links":[["X","NV1",...],...]} ↔ struct gs_topo. */
enum gs_err gs_api_topo_decode(const char *json_text, struct gs_topo *ret,
                               struct gs_diag *diag) GS_WUR;
char *gs_api_topo_encode(const struct gs_topo *topo);

/* ---- ledger views (docs/contract.md §5) ----------------------------------------- */

/* Extra state shown beside the ledger. */
struct gs_api_ledger_view {
  uint32_t pending_unit_mib; /* 0 = none */
  json_t *gangs;             /* borrowed array for "gangs", NULL → [] */
  const char *config_error;  /* "configError" when not NULL */
};
/* The /debug/ledger object; node NULL = all nodes, else only that node
 * (GS_ENOTFOUND if unknown). New reference. */
enum gs_err gs_api_ledger_json(const struct gs_ledger *ledger, const char *node,
                               const struct gs_api_ledger_view *view, json_t **ret) GS_WUR;
/* Appends a gang plan to the "gangs" array of the ledger view:
 * {"job":"ns/job","replicas":R,"placed":P,"nodes":{"<node>":[gpu,...]}}. */
void gs_api_plan_append(json_t *gangs, const struct gs_plan_view *plan);
/* The Aliyun-compatible inspect object (amounts in the active unit, each
 * GPU's and each pod's MiB divided by the unit and rounded down; a node's
 * figures are the sums of its GPUs'). Nodes with mode NONE are left out;
 * asking for one by name → GS_ENOTFOUND. New reference. */
enum gs_err gs_api_inspect_json(const struct gs_ledger *ledger, const char *node,
                                json_t **ret) GS_WUR;

/* ---- disruption budgets (docs/preemption.md) ------------------------------------ */

#define GS_API_SELECTOR_MAX 4096 /* a budget's selector in gs_selector_matches' form */
#define GS_API_LABELS_MAX 8192   /* a pod's labels as "key=value" lines */

/* A policy/v1 PodDisruptionBudget: ns/name, spec.selector in
 * gs_selector_matches' text form (selector_null: no selector, which selects
 * nothing), status.disruptionsAllowed (0 when absent: the disruption
 * controller has not counted it yet). An unknown operator, a value
 * holding '=', ',' or a newline, or a selector over GS_API_SELECTOR_MAX:
 * GS_EPARSE / GS_ETOOBIG with diag. */
struct gs_api_pdb {
  char ns[GS_NS_MAX + 1], name[GS_NAME_MAX + 1];
  char selector[GS_API_SELECTOR_MAX];
  bool selector_null;
  int32_t allowed;
};
enum gs_err gs_api_pdb_decode(const json_t *pdb, struct gs_api_pdb *ret,
                              struct gs_diag *diag) GS_WUR;
/* A pod's metadata.labels as "key=value" lines into buf (cap bytes);
 * GS_ETOOBIG past cap, GS_EPARSE for a label gs_selector_matches could not
 * read back. */
enum gs_err gs_api_pod_labels_text(const json_t *pod, char *buf, size_t cap) GS_WUR;

#endif
