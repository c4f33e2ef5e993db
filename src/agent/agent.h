/* gpushare — the node agent's decisions (gpushare-node, docs/node-agent.md).
 *
 * gpushare-node is a kubelet device plugin; its gRPC plumbing is Go
 * (plugins/node/), and every decision is here: what capacity to advertise,
 * which fake devices ListAndWatch lists and whether they are healthy, which
 * pod and container an Allocate call is for, what that container receives
 * (env, mounts), what is patched on the pod afterwards, the node's topology
 * annotation and the unhealthy-gpu-<node> ConfigMap's data.
 *
 * The node's GPUs come in a struct gs_agent_inventory: filled from NVML
 * (gs_agent_inventory_nvml, src/node's reader: the default) or from an
 * inventory file (gs_agent_inventory_decode, the --inventory flag); XID
 * events mark its GPUs unhealthy (gs_agent_inventory_xid).
 *
 * Memory: nothing passed in is kept; strings returned are malloc'd and the
 * caller frees them with free(). No function keeps state: safe from any
 * thread. */
#ifndef GPUSHARE_AGENT_H
#define GPUSHARE_AGENT_H

#include <gpushare/err.h>
#include <gpushare/nvml.h>
#include <gpushare/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_AGENT_UUID_MAX 95      /* "GPU-" + 36; NVML's buffer is 96 */
#define GS_AGENT_PATH_MAX 255     /* the MPS pipe directory */
#define GS_AGENT_INVENTORY_MAX (1u << 20) /* inventory file bytes */

/* Resource names the agent serves (one device-plugin server each). */
#define GS_AGENT_RES_MEM "aliyun.com/gpu-mem"
#define GS_AGENT_RES_COUNT "aliyun.com/gpu-count"
#define GS_AGENT_RES_WHOLE "aliyun.com/gpu"

/* Env keys the agent sets (docs/node-agent.md). */
#define GS_AGENT_ENV_VISIBLE "NVIDIA_VISIBLE_DEVICES"
#define GS_AGENT_ENV_IDX "ALIYUN_COM_GPU_MEM_IDX"
#define GS_AGENT_ENV_POD "ALIYUN_COM_GPU_MEM_POD"
#define GS_AGENT_ENV_CONTAINER "ALIYUN_COM_GPU_MEM_CONTAINER"
#define GS_AGENT_ENV_DEV "ALIYUN_COM_GPU_MEM_DEV"
#define GS_AGENT_ENV_LIMIT "GPUSHARE_GPU_MEM_LIMIT_MIB"
#define GS_AGENT_ENV_UNIT "GPUSHARE_GPU_MEM_UNIT_MIB"
#define GS_AGENT_ENV_MPS_LIMIT "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
#define GS_AGENT_ENV_MPS_PIPE "CUDA_MPS_PIPE_DIRECTORY"
/* cgpu nodes: the GPUs Aliyun's cGPU kernel module isolates (its memory cap
 * is ALIYUN_COM_GPU_MEM_CONTAINER of ALIYUN_COM_GPU_MEM_DEV, in GiB there) */
#define GS_AGENT_ENV_CGPU_VISIBLE "ALIYUN_COM_GPU_VISIBLE_DEVICES"

/* Annotations the agent patches on a pod after Allocate. */
#define GS_AGENT_ANN_CONTAINERS "gpushare.io/allocated-containers"
#define GS_AGENT_ANN_INIT_CONTAINERS "gpushare.io/allocated-init-containers"
#define GS_AGENT_ANN_ASSIGN_TIME "ALIYUN_COM_GPU_MEM_ASSIGN_TIME"

/* One GPU of the node; its index is its position in the inventory (NVML's
 * device index). */
struct gs_agent_gpu {
  char uuid[GS_AGENT_UUID_MAX + 1];
  uint32_t minor;   /* /dev/nvidia<minor> */
  uint64_t mem_mib; /* total memory */
  bool healthy;
};

/* What the node has. has_topo: topo holds the GPU-by-GPU link matrix
 * (topo.n == n). */
struct gs_agent_inventory {
  uint32_t n;
  struct gs_agent_gpu gpu[GS_MAX_GPUS];
  bool has_topo;
  struct gs_topo topo;
};

/* The agent's settings: the ConfigMap's unit (GS_UNIT_GIB or
 * GS_UNIT_128MIB), the node's mode (label ack.node.gpu.schedule) and, on
 * mps nodes, the MPS pipe directory (host path, mounted at the same path). */
struct gs_agent_config {
  uint32_t unit_mib;
  enum gs_mode mode;
  char mps_pipe_dir[GS_AGENT_PATH_MAX + 1];
};

/* Reads an inventory (docs/node-agent.md):
 *   {"gpus":[{"uuid":"GPU-…","memoryMiB":16384,"minor":0,"healthy":true},…],
 *    "links":[["X","NV1"],["NV1","X"]]}
 * ("minor" defaults to the index, "healthy" to true, "links" is optional
 * and is the topology annotation's matrix). Bad input: GS_EPARSE (or
 * GS_ETOOBIG) with diag; ret is written only on success. */
enum gs_err gs_agent_inventory_decode(const char *text, size_t len,
                                      struct gs_agent_inventory *ret,
                                      struct gs_diag *diag) GS_WUR;

/* Fills ret from NVML (nv open, gs_nvml_open): the GPUs by NVML index
 * (UUID, minor, memory MiB), all healthy, and the link matrix gs_nvml_topo
 * reads, has_topo set: the topology annotation is then byte for byte what
 * `gpushare-topo --nvml` prints. GS_ENOTFOUND no GPU; GS_EPARSE a UUID
 * over GS_AGENT_UUID_MAX; the reader's errors (GS_EIO, GS_ETOOBIG) with
 * diag. ret is written only on success. Not beside gs_nvml_watch or
 * gs_nvml_close (gpushare/nvml.h). */
enum gs_err gs_agent_inventory_nvml(struct gs_nvml *nv, struct gs_agent_inventory *ret,
                                    struct gs_diag *diag) GS_WUR;

/* One XID event (gs_nvml_wait) on inv: a critical XID
 * (gs_nvml_xid_is_critical) marks its GPU unhealthy, for good: as NVIDIA's
 * device plugin, only a restart of the agent reads the GPU healthy again.
 * True when a GPU's health changed (ListAndWatch to re-send, the ConfigMap
 * to rewrite); false for an application XID, a GPU already unhealthy or an
 * index the inventory lacks. */
bool gs_agent_inventory_xid(struct gs_agent_inventory *inv, const struct gs_nvml_event *ev);

/* Checks cfg: unit 1024 or 128, mps_pipe_dir an absolute path on mps nodes. */
enum gs_err gs_agent_config_check(const struct gs_agent_config *cfg, struct gs_diag *diag) GS_WUR;

/* The resources to serve on this node as a JSON array of names, in the
 * order to register: gpu-mem and gpu-count always, aliyun.com/gpu on
 * topology nodes. */
char *gs_agent_resources(const struct gs_agent_config *cfg);

/* The devices ListAndWatch sends for resource: a JSON array of
 * {"id":"…","health":"Healthy"|"Unhealthy"}. gpu-mem: one per unit of each
 * GPU (units per GPU = floor(memory MiB / unit MiB)), id "<uuid>-_-<k>";
 * gpu-count and aliyun.com/gpu: one per GPU, id "<uuid>". A GPU's devices
 * carry its health. NULL for an unknown resource (or out of memory). */
char *gs_agent_devices(const struct gs_agent_config *cfg, const struct gs_agent_inventory *inv,
                       const char *resource);
/* Units the node advertises for aliyun.com/gpu-mem: the sum over GPUs of
 * floor(memory MiB / unit MiB). */
uint64_t gs_agent_mem_units(const struct gs_agent_config *cfg,
                            const struct gs_agent_inventory *inv);

/* The data of ConfigMap kube-system/unhealthy-gpu-<node> (contract §3):
 * {"gpus":"0,2"}, unhealthy indices ascending; {"gpus":""} when all are
 * healthy. */
char *gs_agent_unhealthy_data(const struct gs_agent_inventory *inv);
/* The node annotation gpushare.io/topology (contract §7), byte for byte
 * what gpushare-topo prints for the same matrix (without its newline);
 * NULL when the inventory has no matrix. */
char *gs_agent_topology(const struct gs_agent_inventory *inv);

/* One Allocate call's inputs: the kubelet asks n devices of resource for
 * one container of a pod it does not name.
 *
 * pods: the node's pods (a JSON array of v1.Pod, or a PodList object with
 * "items"), read consistently from the apiserver.
 *
 * kubelet: the kubelet's own view at the moment of the call, its
 * pod-resources List (k8s.io/kubelet podresources v1
 * ListPodResourcesResponse as protobuf's canonical JSON prints it:
 * {"podResources":[{"name","namespace","containers":[{"name","devices":
 * [{"resourceName","deviceIds":[…]}]}]}]}); NULL when it cannot be had
 * (the socket is not mounted). The kubelet adds a pod to the pods it lists
 * before admitting it, admits one pod at a time, and records a
 * container's devices only once Allocate has answered: so the pod the
 * call is for is the listed pod whose container holds no device of
 * resource yet (docs/node-agent.md, "Which pod an Allocate is for"). */
struct gs_agent_call {
  const char *node;
  const char *resource;
  uint64_t n;
  const char *pods;
  size_t pods_len;
  const char *kubelet;
  size_t kubelet_len;
  int64_t now_ns; /* the assign time written once the pod is served */
};

/* One Allocate call (call above). The matching rule (docs/node-agent.md):
 * candidates are the pods with spec.nodeName == node, phase Pending, not
 * being deleted, carrying a gpushare allocation not yet assigned; a
 * candidate's next container is, in the kubelet's order, its first init
 * container (spec.initContainers) asking resource not listed in
 * gpushare.io/allocated-init-containers, else its first app container
 * (spec.containers) asking resource not listed in
 * gpushare.io/allocated-containers; it matches when that container asks
 * exactly n. With the kubelet's view, only the pod the kubelet is
 * admitting can match (a pod it has not listed yet, or whose container
 * already holds devices of resource, is not the one asking); among matches
 * the first by (assume time, namespace, name, UID) wins — without the
 * view this order alone decides, as Aliyun's plugin does. An init
 * container gets its own request over the pod's GPUs (all of them, n/M
 * each, for memory; the first n for whole GPUs): it runs before the app
 * containers, on memory the scheduler reserved as max(init, sum of app).
 * On cgpu nodes the Aliyun amount keys count in GiB (what the cGPU module
 * reads) and ALIYUN_COM_GPU_MEM_CONTAINER is the cap per GPU; an amount
 * that is not whole GiB is refused (GS_ERANGE).
 * On success *ret_json (free it) is
 *   {"pod":{"namespace","name","uid"},"container":"<name>","containerIndex":i,
 *    "init":false,"by":"kubelet"|"assume","envs":{…},
 *    "mounts":[{"hostPath","containerPath","readOnly"}],"annotations":{…}}
 * where "by" says which rule chose the pod (the kubelet's view, or the
 * assume order without it) and "annotations" is what to merge-patch on the
 * pod (the container recorded; once every container is served the pod
 * marked assigned and its assign time now_ns). gpu-count asks nothing of a
 * pod: {"envs":{}}.
 * Refusals (GS_ENOTFOUND no matching pod or no annotation, GS_ERANGE a GPU
 * the node lacks or units over its memory, GS_EPARSE a malformed
 * annotation or kubelet view, GS_EINVAL bad arguments) with diag->text
 * saying which pod and why. */
enum gs_err gs_agent_allocate(const struct gs_agent_config *cfg,
                              const struct gs_agent_inventory *inv,
                              const struct gs_agent_call *call, char **ret_json,
                              struct gs_diag *diag) GS_WUR;

/* ---- DRA (docs/node-agent.md "DRA") ------------------------------------ */

/* The DRA driver gpushare-node runs as, and the device attributes of each
 * GPU (docs/dra.md: the DeviceClass gpushare.io selects them). */
#define GS_AGENT_DRA_DRIVER "gpu.gpushare.io"
#define GS_AGENT_DRA_ATTR_INDEX "gpushare.io/index"
#define GS_AGENT_DRA_ATTR_UUID "gpushare.io/uuid"
#define GS_AGENT_DRA_DEVICE_PREFIX "gpu-" /* device gpu-<index> */

/* The devices to publish in the node's ResourceSlice (pool = the node's
 * name): a JSON array of {"name":"gpu-<i>","index":i,"uuid":"…",
 * "memoryBytes":N}, one per healthy GPU, by index; each is published with
 * allowMultipleAllocations and capacity memory = memoryBytes. NULL out of
 * memory. */
char *gs_agent_dra_devices(const struct gs_agent_inventory *inv);

/* The health the kubelet is told of each GPU (its DRAResourceHealth
 * service; pool = the node's name): a JSON array of
 * {"device":"gpu-<i>","health":"Healthy"|"Unhealthy"}, every GPU by index —
 * the unhealthy ones too: the ResourceSlice no longer offers them, but a
 * claim prepared before still holds one, and the kubelet shows that pod's
 * containers the device's health (status.containerStatuses[].
 * allocatedResourcesStatus). NULL out of memory. */
char *gs_agent_dra_health(const struct gs_agent_inventory *inv);

/* One NodePrepareResources claim (claim_json: a resource.k8s.io/v1
 * ResourceClaim). Its allocation results of driver GS_AGENT_DRA_DRIVER
 * (others are skipped) must name pool node and a device gpu-<i> of inv; the
 * memory each holds is consumedCapacity.memory (bytes, floored to MiB),
 * or the whole GPU when absent (an exclusive allocation); two results on
 * one GPU add up. On success *ret_json (free it) is
 *   {"claim":"<uid>","devices":[{"request","pool","device"[,"shareID"]}],
 *    "envs":{…},"mounts":[…]}
 * envs being the device-plugin path's keys for the same GPUs and memory
 * (NVIDIA_VISIBLE_DEVICES the UUIDs in result order,
 * GPUSHARE_GPU_MEM_LIMIT_MIB the MiB per GPU, the Aliyun keys, MPS limits
 * and pipe on mps nodes). Refusals: GS_EPARSE not JSON, no uid, not
 * allocated, a malformed result or quantity; GS_ERANGE another node's pool,
 * a device the node lacks, memory over the GPU's; GS_ENOTFOUND no result of
 * this driver; with diag. */
enum gs_err gs_agent_dra_prepare(const struct gs_agent_config *cfg,
                                 const struct gs_agent_inventory *inv, const char *node,
                                 const char *claim_json, size_t len, char **ret_json,
                                 struct gs_diag *diag) GS_WUR;

#endif
