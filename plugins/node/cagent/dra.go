package cagent

/*
#include <stdlib.h>
#include "agent.h"
*/
import "C"

import (
	"encoding/json"
	"unsafe"
)

// The DRA driver and the device attributes of each GPU (agent.h).
const (
	DRADriver    = C.GS_AGENT_DRA_DRIVER
	DRAAttrIndex = C.GS_AGENT_DRA_ATTR_INDEX
	DRAAttrUUID  = C.GS_AGENT_DRA_ATTR_UUID
)

// DRADevice is one GPU to publish in the node's ResourceSlice.
type DRADevice struct {
	Name        string `json:"name"`
	Index       int64  `json:"index"`
	UUID        string `json:"uuid"`
	MemoryBytes int64  `json:"memoryBytes"`
}

// DRADevices are the devices C publishes for inv (its healthy GPUs).
func DRADevices(inv *Inventory) ([]DRADevice, error) {
	return takeJSON[[]DRADevice](C.gs_agent_dra_devices(inv.c), errNoMemory)
}

// DRAHealth is one GPU's health as the kubelet is told it.
type DRAHealth struct {
	Device string `json:"device"` // gpu-<index>, in the pool named after the node
	Health string `json:"health"` // "Healthy" or "Unhealthy"
}

// DRAHealthReport is every GPU's health (gs_agent_dra_health).
func DRAHealthReport(inv *Inventory) ([]DRAHealth, error) {
	return takeJSON[[]DRAHealth](C.gs_agent_dra_health(inv.c), errNoMemory)
}

// DRAResult is one of a claim's allocation results C prepared.
type DRAResult struct {
	Request string `json:"request"`
	Pool    string `json:"pool"`
	Device  string `json:"device"`
	ShareID string `json:"shareID,omitempty"`
}

// DRAPrepared is what a claim's containers receive.
type DRAPrepared struct {
	Claim   string            `json:"claim"`
	Devices []DRAResult       `json:"devices"`
	Envs    map[string]string `json:"envs"`
	Mounts  []Mount           `json:"mounts"`
}

// DRAPrepare asks C what the containers of claimJSON (a resource.k8s.io/v1
// ResourceClaim as JSON) receive on node; a Refusal when C refuses.
func DRAPrepare(c Config, inv *Inventory, node string, claimJSON []byte) (*DRAPrepared, error) {
	cc, err := c.toC()
	if err != nil {
		return nil, err
	}
	cn := C.CString(node)
	defer C.free(unsafe.Pointer(cn))
	cp := cBytes(claimJSON)
	defer C.free(cp)
	var diag C.struct_gs_diag
	var out *C.char
	rc := C.gs_agent_dra_prepare(&cc, inv.c, cn, (*C.char)(cp), C.size_t(len(claimJSON)), &out, &diag)
	if rc != C.GS_EOK {
		return nil, refusal(rc, where(&diag)+C.GoString(&diag.text[0]))
	}
	s, _ := take(out)
	var p DRAPrepared
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return nil, err
	}
	return &p, nil
}
