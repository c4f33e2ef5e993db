/* gpushare — the C side of the scheduling-framework plugin's cgo shim
 * (docs/plugin.md). The Go plugin hands Kubernetes objects over as JSON
 * bytes (what json.Marshal writes); this file decodes them with src/api's
 * decoders, the same the extender uses, and calls the scheduler service
 * (gpushare/sched.h). Every decision is the service's.
 *
 * Memory: nothing passed in is kept (bytes are copied or decoded); strings
 * returned are malloc'd and freed by the caller with gs_shim_free_string.
 * Threads: every function is safe from any goroutine (the service locks). */
#ifndef GPUSHARE_PLUGIN_SHIM_H
#define GPUSHARE_PLUGIN_SHIM_H

#include <gpushare/err.h>

#include <stddef.h>
#include <stdint.h>

struct gs_shim;

/* The configuration (docs/contract.md §6): cm_json, the data of the ConfigMap
 * cm_ns/cm_name as read at start-up (NULL: none), then args_json, the
 * plugin's args as {"key":"value"} with the same keys (gpuMemoryUnit,
 * nodePolicy, cgpuMaxPodsPerGPU, gangTimeoutSeconds), which win key by key.
 * A bad value in the args, or in the ConfigMap unless ignore_invalid: NULL
 * and diag->text saying why (diag arrives empty). With ignore_invalid a bad
 * ConfigMap key is logged and keeps its default (the extender's
 * --on-invalid-config ignore). */
struct gs_shim *gs_shim_new(const char *args_json, size_t len, const char *cm_json,
                            size_t cm_len, const char *cm_ns, const char *cm_name,
                            int ignore_invalid, struct gs_diag *diag);
void gs_shim_free(struct gs_shim *s);
void gs_shim_free_string(char *p);

/* The informers' view. */
void gs_shim_node(struct gs_shim *s, const char *json, size_t len);
void gs_shim_node_delete(struct gs_shim *s, const char *name);
void gs_shim_pod(struct gs_shim *s, const char *json, size_t len);
void gs_shim_pod_delete(struct gs_shim *s, const char *uid);
/* The victims of uid's last preemption answer are not waited for any
 * more (their eviction failed: gs_shim_preempt may choose again). */
void gs_shim_preempt_forget(struct gs_shim *s, const char *uid);
/* A resource.k8s.io/v1 ResourceSlice (claim 0) or ResourceClaim (claim 1)
 * added or changed, or deleted (docs/dra.md). */
void gs_shim_dra(struct gs_shim *s, const char *json, size_t len, int claim, int deleted);
/* ConfigMaps of the namespace the informer watches: the configuration's
 * (checked whole: an invalid value is reported; a gpuMemoryUnit change
 * becomes pendingUnit) and unhealthy-gpu-<node>. Returns the error text
 * (free it) when the configuration's ConfigMap has just become invalid —
 * the caller posts the Event — else NULL. */
char *gs_shim_configmap(struct gs_shim *s, const char *json, size_t len, int deleted);
/* The configuration's gangTimeoutSeconds (how long Permit may hold a gang). */
unsigned gs_shim_gang_timeout_s(const struct gs_shim *s);
/* Time: gang timeouts, reservations never confirmed, pods kept for nodes. */
void gs_shim_tick(struct gs_shim *s, int64_t now_ns);

/* Codes of the verbs below. */
enum { GS_SHIM_OK = 0, GS_SHIM_UNSCHEDULABLE = 1, GS_SHIM_UNRESOLVABLE = 2, GS_SHIM_SKIP = 3,
       GS_SHIM_WAIT = 4, GS_SHIM_ERROR = 5, GS_SHIM_SCORE_ONLY = 6 };
#define GS_SHIM_REASON 256

/* Whether filter wants the nodes' host resources (nodePolicy frag weighs
 * them: docs/placement.md). */
int gs_shim_wants_host(const struct gs_shim *s);
/* Filter (prioritize: with scores 0..100) of pod over n nodes: codes[i],
 * and reasons + i * GS_SHIM_REASON for each node whose code is not OK (a
 * node that passes has no reason: its slot is left as it was). host: NULL,
 * or 4 numbers per node (CPU
 * allocatable and requested in milli, memory allocatable and requested in
 * bytes, as kube-scheduler's NodeInfo has them), recorded first. Returns
 * SKIP when gpushare does not manage the pod, ERROR (reason in reasons[0])
 * when the pod cannot be read, SCORE_ONLY when the verdicts and scores
 * hold but nothing is to be reserved (nodePolicy frag scoring a pod that
 * asks no GPU: gs_place_frag_scores_host), OK. */
int gs_shim_filter(struct gs_shim *s, const char *pod, size_t len, const char *const *nodes,
                   size_t n, const int64_t *host, int64_t now_ns, int *codes, char *reasons,
                   int64_t *scores);

/* The node list the plugin keeps from pod to pod (the same array,
 * unchanged, until the next call): gs_shim_filter's prioritize over it
 * remembers its results, and a pod signed as the last one is evaluated
 * again only on the nodes whose ledger changed since
 * (gs_sched_prioritize_memo). Call it whenever the array changes (its
 * address may be reused), NULL to keep none. */
void gs_shim_set_list(struct gs_shim *s, const char *const *nodes, size_t n);
/* Nodes the last prioritize over the kept list evaluated (tests). */
size_t gs_shim_evaluated(struct gs_shim *s);

/* kube-scheduler's pod signature (SignPod): what makes pods the same to
 * gpushare (gs_place_signature), written to sig (GS_SHIM_REASON bytes).
 * OK with the text; SKIP: the pod asks for nothing gpushare manages (no
 * fragment); UNSCHEDULABLE: it cannot be signed, sig saying why; ERROR: the
 * pod cannot be read. */
int gs_shim_sign(struct gs_shim *s, const char *pod, size_t len, char *sig);

/* Reserve pod on node: *ret_annots is the Binding's annotations as
 * key NUL value NUL pairs, ended by an empty key (free it with
 * gs_shim_free_string). OK, or a failure code with reason. */
int gs_shim_reserve(struct gs_shim *s, const char *pod, size_t len, const char *node,
                    int64_t now_ns, char **ret_annots, char *reason);
void gs_shim_unreserve(struct gs_shim *s, const char *pod, size_t len, const char *node);
/* PostBind: the plugin's Bind wrote the Binding; the reservation is the
 * pod's allocation. */
void gs_shim_post_bind(struct gs_shim *s, const char *uid);
/* Permit: OK, WAIT (a gang not all reserved; reason), or a rejection. */
int gs_shim_permit(struct gs_shim *s, const char *pod, size_t len, const char *node,
                   int64_t now_ns, char *reason);

/* GPU-aware preemption over the n nodes (PostFilter; no victims proposed:
 * the core looks at every lower-priority pod of each node). The cheapest
 * node — lowest highest victim priority, then fewest victims, then least
 * GPU memory, then the order given — as JSON
 * {"node":"n","victims":[{"namespace":..,"name":..,"uid":..}]}, or NULL when
 * no node can be made to fit (or out of memory); {"waiting":"text"} while
 * the victims of the pod's last answer are not all gone (gs_shim_pod_delete)
 * on one of the nodes: no new victims then. Free the string. */
char *gs_shim_preempt(struct gs_shim *s, const char *pod, size_t len, const char *const *nodes,
                      size_t n);
/* gs_shim_preempt with the n nodes' host resources first (host: 4 per node,
 * as gs_shim_filter's): a set of victims that frees GPUs but not the pod's
 * CPU and memory is not chosen (docs/preemption.md). */
char *gs_shim_preempt_host(struct gs_shim *s, const char *pod, size_t len,
                           const char *const *nodes, size_t n, const int64_t *host);
/* Preemption for a Workload's PodGroup (PodGroupPostFilter; docs/gangs.md
 * "Preemption"): pod stands for the group (a member with the gang labels
 * gpu-topology and gpu-topology-replica: the slots it needs), members is a
 * JSON array of the group's Pods being scheduled. Victims for every slot
 * or none; each slot held for a member until it binds
 * (gs_sched_preempt_group). Returns {"victims":[{namespace,name,uid}],
 * "members":[{namespace,name,node}],"held":""} — node "" for a member
 * without a slot, held saying when not every slot could be held — (free
 * with gs_shim_free_string), or NULL with reason (GS_SHIM_REASON bytes)
 * saying why not. */
char *gs_shim_preempt_group(struct gs_shim *s, const char *pod, size_t len, const char *members,
                            size_t mlen, const char *const *nodes, size_t n, int64_t now_ns,
                            char *reason);
/* The labels and host requests of a pod the plugin bound (its cycle's
 * JSON): preemption's budgets and host check read them. */
void gs_shim_pod_meta(struct gs_shim *s, const char *json, size_t len);
/* A policy/v1 PodDisruptionBudget added or changed (deleted 0) or deleted. */
void gs_shim_pdb(struct gs_shim *s, const char *json, size_t len, int deleted);

/* /debug/ledger (inspect 0) or /gpushare-scheduler/inspect (inspect 1) of
 * every node or of node (NULL), byte for byte as the extender serves them;
 * *status is 200, 404 (unknown node: {"error":..}) or 500. */
char *gs_shim_view(struct gs_shim *s, const char *node, int inspect, int *status);
/* /metrics: the ledger's gauges, gang timeouts, pendingUnit (Prometheus
 * text). NULL when out of memory. */
char *gs_shim_metrics(struct gs_shim *s);
/* The notices since the last call (gangs timed out), as a JSON array of
 * {"namespace","job","pod","uid","message"} ("pod" "" for the gang's own
 * line); NULL when there are none. */
char *gs_shim_notices(struct gs_shim *s);

/* ---- gpushare placing DRA claims (docs/dra.md, issue 33 item 2) ----------
 * claim: a ResourceClaim's JSON. A claim is gpushare's when a request names
 * the DeviceClass gpushare.io (gs__dra_request says which shapes it places). */

/* gs_shim_filter (with scores) for a pod using the claim: the pod scored
 * as the gpu-mem pod the claim is placed as (count GPUs × its memory, the
 * pod's own CPU and memory for nodePolicy frag's host view), so a claim
 * packs exactly as a gpu-mem pod would; *ret_shaped 1 and
 * GS_SHIM_SCORE_ONLY then (the claim is reserved, not the pod:
 * gs_shim_claim_reserve). A claim not gpushare's, or of whole devices:
 * *ret_shaped 0 and gs_shim_filter's answer for the pod alone. */
int gs_shim_filter_claim(struct gs_shim *s, const char *pod, size_t len, const char *claim,
                         size_t claim_len, const char *const *nodes, size_t n,
                         const int64_t *host, int64_t now_ns, int *codes, char *reasons,
                         int64_t *scores, int *ret_shaped);

/* The per-node verdicts for the claim: GS_SHIM_SKIP (reasons[0] empty) when
 * the claim is not gpushare's; GS_SHIM_UNRESOLVABLE with reasons[0] when it
 * is but gpushare cannot place it (an unsupported or bad field); else
 * GS_SHIM_OK and, for node i, codes[i], reasons + i*GS_SHIM_REASON when not
 * OK, scores[i] in 0..100. A node with no device of gpu.gpushare.io
 * published is unschedulable. Charges nothing. pod (its JSON; NULL or
 * plen 0: none) is the claim's consumer: GPUs held for pods nominated by
 * preemption are not its (gs_sched_claim_filter); GS_SHIM_ERROR with
 * reasons[0] when it is no Pod. */
int gs_shim_claim_filter(struct gs_shim *s, const char *pod, size_t plen, const char *claim,
                         size_t len, const char *const *nodes, size_t n, int *codes,
                         char *reasons, int64_t *scores);
/* Chooses the claim's GPUs on node and charges them (ASSUMED, as
 * gs_sched_claim_reserve; a retry answers the same GPUs): GS_SHIM_OK with
 * *ret_json (free it) = {"node","request","results":[{"driver","pool",
 * "device","memory"(a quantity, absent for a whole device),"shared"}]},
 * the devices of gpu.gpushare.io holding the GPUs. Else the code and reason;
 * nothing stays charged. pod (NULL or plen 0: none) is the consumer, as for
 * gs_shim_claim_filter: held GPUs are not its, and its own hold ends. */
int gs_shim_claim_reserve(struct gs_shim *s, const char *pod, size_t plen, const char *claim,
                          size_t len, const char *node, int64_t now_ns, char **ret_json,
                          char *reason);
/* The reservation of claim uid given back (its ASSUMED or recorded charge). */
void gs_shim_claim_unreserve(struct gs_shim *s, const char *uid);

/* A pod whose GPUs are claims gpushare placed, in Permit: GS_SHIM_SKIP when
 * it is no gang member (no gpu-topology label); else the gang barrier's
 * answer (gs_sched_claim_gang_permit): GS_SHIM_WAIT with the reason,
 * GS_SHIM_OK when its job is complete; GS_SHIM_ERROR for a pod that is not
 * one (reason). */
int gs_shim_claim_gang_permit(struct gs_shim *s, const char *pod, size_t len, char *reason);
/* The member's reservation given back (Unreserve). */
void gs_shim_claim_gang_leave(struct gs_shim *s, const char *uid);
/* Preemption for a claim pod (PostFilter; docs/dra.md "Preempting for
 * claim pods"): pod's unallocated claims (a ResourceClaim's JSON, or a list
 * of 1..GS_CLAIM_PREEMPT_MAX) fit on none of the n nodes; host: 4 per node as gs_shim_filter's (NULL: not checked);
 * consumers: a JSON list of {"claim","namespace","name","uid","priority"},
 * the claims gpushare placed whose one consumer pod may stand in as a
 * victim (gs_sched_claim_preempt). Returns {"node","victims":[{namespace,
 * name,uid}],"pdbViolations"} (free with gs_shim_free_string), or NULL with
 * reason (GS_SHIM_REASON bytes) saying why not. The pod is then held on the
 * node (gs_sched_claim_nominate). */
char *gs_shim_claim_preempt(struct gs_shim *s, const char *claims, size_t clen, const char *pod,
                            size_t plen, const char *const *nodes, size_t n,
                            const int64_t *host, const char *consumers, size_t conslen,
                            char *reason);

#endif
