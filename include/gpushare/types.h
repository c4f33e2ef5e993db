/* gpushare — core value types: units, node model, pod request model.
 *
 * These structs are plain values. The core never learns about Kubernetes:
 * src/api turns Node and Pod JSON into them. Ownership: every struct here is
 * caller-owned; functions borrow them unless a name says _take.
 */
#ifndef GPUSHARE_TYPES_H
#define GPUSHARE_TYPES_H

#include <gpushare/err.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Named caps. Exceeding one is an error (GS_ETOOBIG), never a crash. */
#define GS_NS_MAX 63          /* namespace: DNS label */
#define GS_NAME_MAX 253       /* object name: DNS subdomain */
#define GS_UID_MAX 63         /* UIDs are 36 chars; leave room */
#define GS_MAX_GPUS 64        /* GPUs per node; sets are uint64_t masks */
#define GS_MAX_CONTAINERS 64  /* app containers per pod */
#define GS_REASON_MAX 256     /* filter reason text */
#define GS_MAX_PARTS 256      /* (container, GPU) shares per allocation */
#define GS_LABEL_TEXT_MAX 31  /* a label value quoted back in a reason */

/* Allocation unit, in MiB. Only these two exist. */
#define GS_UNIT_GIB 1024u
#define GS_UNIT_128MIB 128u

/* Parses "1GiB", "1Gi", "128MiB", "128Mi" into MiB (1024 or 128).
 * Returns GS_EUNIT for anything else; *ret_mib written only on success. */
enum gs_err gs_unit_parse(const char *text, uint32_t *ret_mib) GS_WUR;
/* "1GiB" or "128MiB" for a valid unit, "?" otherwise. */
const char *gs_unit_name(uint32_t unit_mib);

/* Node label ack.node.gpu.schedule. */
enum gs_mode {
  GS_MODE_NONE = 0, /* default, absent or unknown: not a gpushare node */
  GS_MODE_SHARE,    /* memory sharing */
  GS_MODE_CGPU,     /* memory sharing with isolation: pod cap per GPU */
  GS_MODE_MPS,      /* memory-only sharing */
  GS_MODE_TOPOLOGY, /* whole GPUs, NVLink-aware, gangs */
};
/* "share", "cgpu", "mps", "topology", "default". */
const char *gs_mode_name(enum gs_mode mode);
/* Maps a label value; NULL, "default" and unknown values give GS_MODE_NONE. */
enum gs_mode gs_mode_parse(const char *label);
/* True for share, cgpu and mps: modes serving aliyun.com/gpu-mem pods. */
bool gs_mode_is_memory(enum gs_mode mode);

/* Node label ack.node.gpu.placement: which GPU inside a node; and the
 * ConfigMap key nodePolicy: how prioritize ranks nodes. */
enum gs_placement {
  GS_PLACE_BINPACK = 0, /* fullest GPU that fits, lowest index on ties */
  GS_PLACE_SPREAD,      /* emptiest GPU, lowest index on ties */
  GS_PLACE_FRAG,        /* nodePolicy only: least growth of stranded memory
                           (place.h "fragmentation-aware placement") */
};
/* "binpack", "spread", "frag". */
const char *gs_placement_name(enum gs_placement p);
/* The node label: NULL or unknown → binpack ("frag" is not a label value:
 * inside a node, fragmentation awareness is the policy's frag_aware). */
enum gs_placement gs_placement_parse(const char *label);

/* GPU interconnect class between two GPUs (nvidia-smi topo -m), worst
 * first. NVLink bonds carry a link count in gs_topo.nvlinks. */
enum gs_link {
  GS_LINK_UNKNOWN = 0, /* no topology: all pairs count as equal */
  GS_LINK_SYS,
  GS_LINK_NODE,
  GS_LINK_PHB,
  GS_LINK_PXB,
  GS_LINK_PIX,
  GS_LINK_NV, /* NVLink, see nvlinks for the bond width */
  GS_LINK_SELF,
};

/* A node's GPU-by-GPU link matrix (row-major, n × n, packed: the pair
 * (i, j) is at [i * n + j]). Zero the unused tail: the ledger shares one
 * copy among nodes whose matrices are byte-identical. */
struct gs_topo {
  uint32_t n;
  uint8_t link[GS_MAX_GPUS * GS_MAX_GPUS];    /* enum gs_link */
  uint8_t nvlinks[GS_MAX_GPUS * GS_MAX_GPUS]; /* NV<k>: k, else 0 */
};

/* A node's host resources, as kube-scheduler's NodeResourcesFit counts
 * them: allocatable CPU and memory, and the sum of the requests of the
 * pods on the node. The front end fills it (the in-process plugin from
 * kube-scheduler's NodeInfo, a replay from its own accounting); the ledger
 * only keeps it. cpu_milli 0: unknown, so nothing weighs it. Only the
 * fragmentation policy reads it (place.h): a node whose CPU or memory is
 * exhausted strands its free GPUs (docs/placement.md). */
struct gs_host {
  uint64_t cpu_milli, mem_mib;           /* allocatable */
  uint64_t cpu_used_milli, mem_used_mib; /* requested by the node's pods */
};

/* A node as gpushare sees it. Built by src/api from a v1.Node. */
struct gs_node_spec {
  char name[GS_NAME_MAX + 1];
  enum gs_mode mode;
  enum gs_placement placement;
  uint32_t gpu_count;     /* capacity aliyun.com/gpu-count (or aliyun.com/gpu) */
  uint64_t gpu_mem_units; /* capacity aliyun.com/gpu-mem, in the active unit */
  bool has_per_gpu;       /* annotation gpushare.alibabacloud.com/device-resource */
  uint64_t per_gpu_units[GS_MAX_GPUS];
  uint64_t whole_gpus;       /* capacity aliyun.com/gpu (topology nodes) */
  bool has_topo;             /* annotation gpushare.io/topology present & valid */
  const struct gs_topo *topo; /* borrowed; ledger copies it */
  /* Node label gpushare.io/multi-card=false: the node's device plugin
   * gives a pod one GPU only (Aliyun's open-source plugin reads
   * ALIYUN_COM_GPU_MEM_IDX as one number), so pods split over several GPUs
   * are refused here (docs/compatibility.md). */
  bool single_card;
};

/* A pod's GPU request. Built by src/api from a v1.Pod. */
struct gs_pod_request {
  char ns[GS_NS_MAX + 1];
  char name[GS_NAME_MAX + 1];
  char uid[GS_UID_MAX + 1];
  uint32_t ncontainers;                       /* len(spec.containers) */
  uint64_t mem_units[GS_MAX_CONTAINERS];      /* limits aliyun.com/gpu-mem */
  uint64_t init_mem_units;                    /* max over init containers */
  uint64_t whole_gpus[GS_MAX_CONTAINERS];     /* limits aliyun.com/gpu */
  uint64_t init_whole_gpus;                   /* max over init containers */
  uint32_t gpu_count;                         /* label aliyun.com/gpu-count, 1 if absent;
                                                 0 when the label is 0 or not a number */
  char gpu_count_text[GS_LABEL_TEXT_MAX + 1]; /* the label when it is not a decimal
                                                 number (truncated), else "" */
  char gang_job[GS_NAME_MAX + 1];             /* label gpu-topology, "" if none */
  uint32_t gang_replicas;                     /* label gpu-topology-replica */
  int32_t priority;                           /* spec.priority, 0 when absent */
  /* Host requests (effective: max(sum(app), max(init))), 0 when unknown;
   * weighed by the fragmentation policy only. */
  uint64_t cpu_milli;
  uint64_t mem_mib;
};

/* Sum of app containers' gpu-mem units. */
uint64_t gs_pod_request_mem_sum(const struct gs_pod_request *req);
/* Kubernetes' effective request: max(sum(app), max(init)), in units. */
uint64_t gs_pod_request_mem_effective(const struct gs_pod_request *req);
/* Same for whole GPUs (aliyun.com/gpu). */
uint64_t gs_pod_request_whole_effective(const struct gs_pod_request *req);
/* True when the pod asks for aliyun.com/gpu-mem. */
bool gs_pod_request_is_memory(const struct gs_pod_request *req);
/* True when the pod asks for aliyun.com/gpu (whole GPUs). */
bool gs_pod_request_is_whole(const struct gs_pod_request *req);
/* A member of a distributed job (labels gpu-topology and
 * gpu-topology-replica) asking whole GPUs or GPU memory (a memory-shared
 * gang): the gang plugin places it; the one place that decides
 * membership. */
bool gs_pod_request_is_gang_member(const struct gs_pod_request *req);

#endif
