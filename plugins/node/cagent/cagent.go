// Package cagent is gpushare-node's cgo boundary: Go values in, the C
// agent's answers out (src/agent/agent.h). Every decision — capacity,
// devices, which pod an Allocate is for, the container's env, what to patch,
// the topology annotation, the unhealthy-GPU ConfigMap — is C's; this
// package converts. No Go pointer is kept by C; C strings returned are
// copied and freed here. Safe from any goroutine (the C side keeps no state).
package cagent

/*
#cgo CFLAGS: -I${SRCDIR}/../../../src/agent -I${SRCDIR}/../../../src/api -I${SRCDIR}/../../../include
#include <stdlib.h>
#include <string.h>
#include "agent.h"

static enum gs_mode cagent_mode(const char *label) { return gs_mode_parse(label); }
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"
)

// Resource names the agent serves.
const (
	ResourceMem   = C.GS_AGENT_RES_MEM
	ResourceCount = C.GS_AGENT_RES_COUNT
	ResourceWhole = C.GS_AGENT_RES_WHOLE
)

// ErrNotFound is the C side's GS_ENOTFOUND (no matching pod, or no
// allocation annotation); Allocate's errors wrap it or ErrRefused.
var (
	ErrNotFound = errors.New("not found")
	ErrRefused  = errors.New("refused")
	// errNoMemory: C answered NULL where only its allocation fails
	errNoMemory = errors.New("out of memory")
)

// Refusal is C's refusal of an Allocate: its text alone (what the kubelet
// shows in the pod's events), and ErrNotFound or ErrRefused to errors.Is.
type Refusal struct {
	kind error
	Text string
}

func (r *Refusal) Error() string { return r.Text }
func (r *Refusal) Unwrap() error { return r.kind }

// Inventory is the node's GPUs (struct gs_agent_inventory), owned by C
// memory for the life of the value.
type Inventory struct {
	c *C.struct_gs_agent_inventory
}

// DecodeInventory reads an inventory file's bytes (docs/node-agent.md).
func DecodeInventory(text []byte) (*Inventory, error) {
	inv := (*C.struct_gs_agent_inventory)(C.calloc(1, C.sizeof_struct_gs_agent_inventory))
	if inv == nil {
		return nil, errNoMemory
	}
	var diag C.struct_gs_diag
	ct := C.CBytes(text)
	defer C.free(ct)
	if err := C.gs_agent_inventory_decode((*C.char)(ct), C.size_t(len(text)), inv, &diag); err != C.GS_EOK {
		C.free(unsafe.Pointer(inv))
		return nil, fmt.Errorf("inventory: %s%s", where(&diag), C.GoString(&diag.text[0]))
	}
	return &Inventory{c: inv}, nil
}

// Free releases the C memory.
func (inv *Inventory) Free() {
	if inv != nil && inv.c != nil {
		C.free(unsafe.Pointer(inv.c))
		inv.c = nil
	}
}

// GPU is one GPU as the inventory has it.
type GPU struct {
	UUID    string
	Minor   uint32
	MemMiB  uint64
	Healthy bool
}

// GPUs lists the inventory's GPUs by index.
func (inv *Inventory) GPUs() []GPU {
	out := make([]GPU, int(inv.c.n))
	for i := range out {
		g := &inv.c.gpu[i]
		out[i] = GPU{C.GoString(&g.uuid[0]), uint32(g.minor), uint64(g.mem_mib), bool(g.healthy)}
	}
	return out
}

// Config is the agent's settings (struct gs_agent_config).
type Config struct {
	UnitMiB    uint32 // 1024 or 128
	Mode       string // node label ack.node.gpu.schedule
	MPSPipeDir string // mps nodes
}

func (c Config) toC() (C.struct_gs_agent_config, error) {
	var cc C.struct_gs_agent_config
	cc.unit_mib = C.uint32_t(c.UnitMiB)
	mode := C.CString(c.Mode)
	cc.mode = C.cagent_mode(mode)
	C.free(unsafe.Pointer(mode))
	if len(c.MPSPipeDir) > int(C.GS_AGENT_PATH_MAX) {
		return cc, fmt.Errorf("mps-pipe-dir: over %d bytes", int(C.GS_AGENT_PATH_MAX))
	}
	for i := 0; i < len(c.MPSPipeDir); i++ {
		cc.mps_pipe_dir[i] = C.char(c.MPSPipeDir[i])
	}
	var diag C.struct_gs_diag
	if C.gs_agent_config_check(&cc, &diag) != C.GS_EOK {
		return cc, fmt.Errorf("%s%s", where(&diag), C.GoString(&diag.text[0]))
	}
	return cc, nil
}

// Check reports a bad configuration (unit, MPS pipe directory).
func (c Config) Check() error {
	_, err := c.toC()
	return err
}

func where(d *C.struct_gs_diag) string {
	if w := C.GoString(&d.where[0]); w != "" {
		return w + ": "
	}
	return ""
}

// cBytes is b copied into C memory, or nil when b is empty (C.free takes
// either).
func cBytes(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return C.CBytes(b)
}

// refusal is C's answer rc with text: ErrNotFound for GS_ENOTFOUND, else
// ErrRefused.
func refusal(rc C.enum_gs_err, text string) *Refusal {
	kind := ErrRefused
	if rc == C.GS_ENOTFOUND {
		kind = ErrNotFound
	}
	return &Refusal{kind: kind, Text: text}
}

func take(s *C.char) (string, bool) {
	if s == nil {
		return "", false
	}
	defer C.free(unsafe.Pointer(s))
	return C.GoString(s), true
}

// takeJSON decodes (and frees) C's JSON answer s into a T; s NULL is
// missing (C's out of memory, or its "none").
func takeJSON[T any](s *C.char, missing error) (T, error) {
	var out T
	js, ok := take(s)
	if !ok {
		return out, missing
	}
	err := json.Unmarshal([]byte(js), &out)
	return out, err
}

// Resources are the resource names to serve, in registration order.
func Resources(c Config) ([]string, error) {
	cc, err := c.toC()
	if err != nil {
		return nil, err
	}
	return takeJSON[[]string](C.gs_agent_resources(&cc), errNoMemory)
}

// Device is one fake device of ListAndWatch.
type Device struct {
	ID     string `json:"id"`
	Health string `json:"health"`
}

// Devices are the devices to list for resource.
func Devices(c Config, inv *Inventory, resource string) ([]Device, error) {
	cc, err := c.toC()
	if err != nil {
		return nil, err
	}
	cr := C.CString(resource)
	defer C.free(unsafe.Pointer(cr))
	return takeJSON[[]Device](C.gs_agent_devices(&cc, inv.c, cr),
		fmt.Errorf("no devices for resource %q", resource))
}

// MemUnits is the aliyun.com/gpu-mem capacity in the configured unit.
func MemUnits(c Config, inv *Inventory) uint64 {
	cc, err := c.toC()
	if err != nil {
		return 0
	}
	return uint64(C.gs_agent_mem_units(&cc, inv.c))
}

// UnhealthyData is the data of ConfigMap kube-system/unhealthy-gpu-<node>.
func UnhealthyData(inv *Inventory) (map[string]string, error) {
	return takeJSON[map[string]string](C.gs_agent_unhealthy_data(inv.c), errNoMemory)
}

// Topology is the node annotation gpushare.io/topology; "" when the
// inventory has no link matrix.
func Topology(inv *Inventory) string {
	s, _ := take(C.gs_agent_topology(inv.c))
	return s
}

// Mount is a host path the container receives.
type Mount struct {
	HostPath      string `json:"hostPath"`
	ContainerPath string `json:"containerPath"`
	ReadOnly      bool   `json:"readOnly"`
}

// PodRef names a pod.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// Answer is C's answer to one Allocate: the pod and container it is for,
// what the container receives and what to merge-patch on the pod.
type Answer struct {
	Pod            *PodRef           `json:"pod"`
	Container      string            `json:"container"`
	ContainerIndex int               `json:"containerIndex"`
	Init           bool              `json:"init"` // an init container (spec.initContainers)
	By             string            `json:"by"`   // "kubelet": its pod-resources list named the pod; "assume": the assume order did
	Envs           map[string]string `json:"envs"`
	Mounts         []Mount           `json:"mounts"`
	Annotations    map[string]string `json:"annotations"`
}

// Allocate asks C which pod of podsJSON (the node's pods: a PodList or an
// array of v1.Pod as JSON) an Allocate of n devices of resource is for;
// kubeletJSON is the kubelet's pod-resources List as protobuf's JSON, nil
// when it cannot be had (agent.h, struct gs_agent_call).
func Allocate(c Config, inv *Inventory, node, resource string, n uint64, podsJSON, kubeletJSON []byte,
	nowNs int64) (*Answer, error) {
	cc, err := c.toC()
	if err != nil {
		return nil, err
	}
	cn, cr := C.CString(node), C.CString(resource)
	defer C.free(unsafe.Pointer(cn))
	defer C.free(unsafe.Pointer(cr))
	cp, ck := cBytes(podsJSON), cBytes(kubeletJSON)
	defer C.free(cp)
	defer C.free(ck)
	call := C.struct_gs_agent_call{node: cn, resource: cr, n: C.uint64_t(n),
		pods: (*C.char)(cp), pods_len: C.size_t(len(podsJSON)),
		kubelet: (*C.char)(ck), kubelet_len: C.size_t(len(kubeletJSON)), now_ns: C.int64_t(nowNs)}
	var diag C.struct_gs_diag
	var out *C.char
	rc := C.gs_agent_allocate(&cc, inv.c, &call, &out, &diag)
	if rc != C.GS_EOK {
		return nil, refusal(rc, C.GoString(&diag.text[0]))
	}
	s, _ := take(out)
	var a Answer
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// UnitMiB parses a unit as the ConfigMap's gpuMemoryUnit spells it.
func UnitMiB(text string) (uint32, error) {
	ct := C.CString(text)
	defer C.free(unsafe.Pointer(ct))
	var mib C.uint32_t
	if C.gs_unit_parse(ct, &mib) != C.GS_EOK {
		return 0, fmt.Errorf("unit %q: must be 1GiB or 128MiB", text)
	}
	return uint32(mib), nil
}
