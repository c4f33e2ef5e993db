/* gpushare — the per-GPU memory ledger.
 *
 * The ledger holds every known node, its GPUs, and every pod allocation.
 * Amounts are kept in MiB; each allocation records the unit it was counted
 * in, so a restart with another unit never disorders existing allocations.
 *
 * The ledger never locks: the framework holds one lock around it.
 * Pointers returned by lookups are borrowed and valid until the next call
 * that mutates the ledger.
 */
#ifndef GPUSHARE_LEDGER_H
#define GPUSHARE_LEDGER_H

#include <gpushare/types.h>

struct gs_ledger;

/* One GPU of a node (read-only view). */
struct gs_gpu {
  uint32_t index;
  uint64_t total_mib;
  uint64_t used_mib;
  uint32_t npods;  /* allocations touching this GPU */
  bool healthy;    /* false when listed in unhealthy-gpu-<node> */
  /* Topology mode: the pod owning this whole GPU, or NULL. */
  const struct gs_alloc *owner;
};

/* A node in the ledger (read-only view). */
struct gs_node {
  char *name;
  enum gs_mode mode;
  enum gs_placement placement;
  uint32_t ngpus;
  struct gs_gpu *gpus;      /* ngpus entries, by index */
  struct gs_topo *topo;     /* NULL when the node has no topology */
  uint64_t unhealthy_mask;  /* bit i: GPU i unhealthy */
  /* For a topology of at most GS_TOPO_TABLE_GPUS GPUs: what
   * gs_topo_choose(topo, mask, k) answers, computed once per distinct
   * matrix, at [(k - 1) * 256 + mask] as a GPU mask (0: not computed, ask
   * gs_topo_choose). Placement runs for every node of every request; the
   * search behind it is not cheap. NULL otherwise. */
  const uint8_t *topo_choice;
  /* Likewise gs_topo_set_score(topo, mask) at [mask], or NULL. */
  const uint8_t *topo_set_score;
  bool single_card; /* gs_node_spec.single_card */
  struct gs_host host; /* gs_ledger_node_set_host; zero until then */
};
#define GS_TOPO_TABLE_GPUS 8u

enum gs_alloc_kind {
  GS_ALLOC_MEM = 0, /* aliyun.com/gpu-mem share */
  GS_ALLOC_WHOLE,   /* aliyun.com/gpu whole GPUs (topology mode) */
  /* A DRA ResourceClaim's charge (docs/dra.md): memory another allocator
   * gave out on these GPUs. unit_mib is GS_CLAIM_UNIT_MIB (parts count MiB)
   * and a part's units may be GS_CLAIM_WHOLE (the whole device). It is used
   * memory to every placement, bind and preemption, and never a preemption
   * victim. Appended. */
  GS_ALLOC_CLAIM,
};
#define GS_CLAIM_UNIT_MIB 1u
#define GS_CLAIM_WHOLE UINT64_MAX

enum gs_alloc_state {
  GS_ALLOC_ASSUMED = 0, /* reserved by us, bind not confirmed */
  GS_ALLOC_BOUND,       /* the apiserver has the pod on the node */
};

/* One (container, GPU) share of an allocation. */
struct gs_alloc_part {
  uint32_t container; /* index in spec.containers */
  uint32_t gpu;       /* GPU index on the node */
  uint64_t units;     /* amount in the allocation's unit (0 for WHOLE) */
};

/* A pod's allocation. As input (reserve/restore) strings and parts are
 * borrowed; the ledger keeps its own copies. */
struct gs_alloc {
  const char *ns, *name, *uid, *node;
  enum gs_alloc_kind kind;
  enum gs_alloc_state state;
  uint32_t unit_mib;      /* unit the part amounts are counted in; 0 in
                             gs_ledger_restore only: not recorded on the pod */
  int64_t assume_time_ns; /* unix ns of the reservation */
  uint32_t nparts;
  const struct gs_alloc_part *parts;
  /* With unit_mib 0: the GPU's capacity in the pod's unit as the pod says
   * (ALIYUN_COM_GPU_MEM_DEV), 0 when it does not. Appended. */
  uint64_t dev_units;
  int32_t priority; /* the pod's spec.priority: preemption takes only lower ones */
};

/* Creates an empty ledger whose new allocations use unit_mib (1024 or 128).
 * Returns NULL on allocation failure or an invalid unit. Owned by caller. */
struct gs_ledger *gs_ledger_new(uint32_t unit_mib);
/* Frees the ledger and everything in it. Accepts NULL. */
void gs_ledger_free(struct gs_ledger *ledger);
/* The unit new allocations are counted in. */
uint32_t gs_ledger_unit_mib(const struct gs_ledger *ledger);

/* Adds or updates a node. Per-GPU capacity = per_gpu_units when given,
 * else floor(gpu_mem_units / gpu_count), times the ledger's unit. If the GPU
 * count or a capacity changes, the GPUs are rebuilt and existing allocations
 * re-applied; an allocation on a GPU that no longer exists stays recorded
 * (never lost) and is reported by gs_ledger_node_orphans(). */
enum gs_err gs_ledger_node_upsert(struct gs_ledger *ledger,
                                  const struct gs_node_spec *spec) GS_WUR;
/* Removes a node and drops every allocation on it. GS_ENOTFOUND if absent. */
enum gs_err gs_ledger_node_remove(struct gs_ledger *ledger, const char *name) GS_WUR;
/* Marks GPUs unhealthy (bit i = GPU i); replaces the previous mask. */
enum gs_err gs_ledger_node_set_unhealthy(struct gs_ledger *ledger, const char *name,
                                         uint64_t mask) GS_WUR;
/* Sets the node's host resources (types.h struct gs_host); kept across
 * upserts. GS_ENOTFOUND for an unknown node. */
enum gs_err gs_ledger_node_set_host(struct gs_ledger *ledger, const char *name,
                                    const struct gs_host *host) GS_WUR;
/* Borrowed node view, or NULL. */
const struct gs_node *gs_ledger_node_get(const struct gs_ledger *ledger, const char *name);
/* Resolves n names at once into ret[i] (NULL for an unknown name): the
 * same as gs_ledger_node_get for each, with the hash lookups overlapped,
 * for callers that walk every node of a request. */
void gs_ledger_nodes_get(const struct gs_ledger *ledger, const char *const *names, size_t n,
                         const struct gs_node **ret);
/* Number of nodes, and the i-th node in ascending name order. */
size_t gs_ledger_node_count(const struct gs_ledger *ledger);
const struct gs_node *gs_ledger_node_at(const struct gs_ledger *ledger, size_t i);
/* Number of the node's allocations with a part on a GPU index the node no
 * longer has (after it shrank); 0 for an unknown node. Such parts charge
 * nothing but stay recorded until the pod is released. */
size_t gs_ledger_node_orphans(const struct gs_ledger *ledger, const char *name);

/* Records a new allocation. Validates that every part fits (memory, health,
 * cgpu pod cap, whole-GPU ownership) before changing anything: on error the
 * ledger is unchanged. GS_EEXISTS if the UID already has an allocation,
 * GS_ENOTFOUND for an unknown node, GS_ENOFIT when it no longer fits.
 * cgpu_max_pods applies to cgpu nodes only; 0 means no cap. */
enum gs_err gs_ledger_reserve(struct gs_ledger *ledger, const struct gs_alloc *alloc,
                              uint32_t cgpu_max_pods) GS_WUR;
/* Like reserve but never refuses for lack of room: used to rebuild the
 * ledger from the apiserver, where the truth is whatever pods carry.
 * A memory allocation whose unit was not recorded (unit_mib 0: a pod bound
 * by another scheduler) gets the unit in which dev_units is the capacity of
 * its first GPU here (dev_units x 1024 or x 128 MiB = that GPU's MiB); when
 * that does not settle it, 1 GiB, the larger reading, so a GPU is never
 * over-committed by a guess (docs/compatibility.md). */
enum gs_err gs_ledger_restore(struct gs_ledger *ledger, const struct gs_alloc *alloc) GS_WUR;
/* Frees a pod's allocation. GS_ENOTFOUND if the UID has none. */
enum gs_err gs_ledger_release(struct gs_ledger *ledger, const char *uid) GS_WUR;
/* Marks an allocation as bound. GS_ENOTFOUND if the UID has none. */
enum gs_err gs_ledger_confirm(struct gs_ledger *ledger, const char *uid) GS_WUR;
/* Borrowed view of a pod's allocation, or NULL. */
const struct gs_alloc *gs_ledger_alloc_get(const struct gs_ledger *ledger, const char *uid);
/* Iterates allocations on a node (any order): the i-th, or NULL past end. */
size_t gs_ledger_node_alloc_count(const struct gs_ledger *ledger, const char *node);
const struct gs_alloc *gs_ledger_node_alloc_at(const struct gs_ledger *ledger,
                                               const char *node, size_t i);
/* Total number of allocations. */
size_t gs_ledger_alloc_count(const struct gs_ledger *ledger);
/* Change tracking, for a caller that keeps per-node results between calls
 * (the framework's memo of the last prioritize). gs_ledger_gen counts the
 * changes of node views (an allocation recorded or freed, health, host,
 * mode, GPUs, topology) and of the node set. gs_ledger_changed_since
 * writes to ret the nodes whose views changed after generation gen, each
 * once, and returns how many; it returns SIZE_MAX when it cannot tell: a
 * node was added or removed since gen, more than GS_LEDGER_CHANGES_MAX
 * changes were made since, or more than max (changes, counted before
 * the repeats are dropped). Pointers as node views
 * (borrowed). */
#define GS_LEDGER_CHANGES_MAX 256u
uint64_t gs_ledger_gen(const struct gs_ledger *ledger);
size_t gs_ledger_changed_since(const struct gs_ledger *ledger, uint64_t gen,
                               const struct gs_node **ret, size_t max);

/* MiB of a part: units × the allocation's unit. */
uint64_t gs_alloc_part_mib(const struct gs_alloc *alloc, const struct gs_alloc_part *part);

/* ---- DRA claims (docs/dra.md) ----------------------------------------------
 * A claim's charge is an allocation of kind GS_ALLOC_CLAIM keyed by the
 * claim's UID; gs_ledger_release frees it like a pod's. */

/* Records a claim's charge, replacing the one the UID had (one step: no
 * caller ever sees the GPUs free in between). Like restore it never refuses
 * for lack of room: the claim is the cluster's truth. GS_EEXISTS when the
 * UID is a pod's allocation, GS_ENOTFOUND for an unknown node (nothing
 * changed then), GS_EINVAL for a shape that is not a claim's. */
enum gs_err gs_ledger_claim_set(struct gs_ledger *ledger, const struct gs_alloc *claim) GS_WUR;
/* MiB a part of alloc charges on gpu: a whole-device claim part is the
 * GPU's total; otherwise gs_alloc_part_mib. */
uint64_t gs_ledger_part_charge_mib(const struct gs_gpu *gpu, const struct gs_alloc *alloc,
                                   const struct gs_alloc_part *part);
/* Whether a claim (kind GS_ALLOC_CLAIM, parts in MiB or GS_CLAIM_WHOLE)
 * fits on its node now, as gs_ledger_reserve would check it: memory parts
 * within each GPU's free memory, whole parts on GPUs nothing touches,
 * healthy GPUs only. GS_EOK, GS_ENOFIT, GS_ENOTFOUND (node), GS_EINVAL. */
enum gs_err gs_ledger_claim_fits(const struct gs_ledger *ledger, const struct gs_alloc *claim) GS_WUR;

#endif
