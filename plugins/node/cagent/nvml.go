package cagent

// The node's GPUs from NVML (struct gs_nvml, src/node) into an Inventory
// (gs_agent_inventory_nvml), and XID events applied to it
// (gs_agent_inventory_xid): which XID makes a GPU unhealthy is C's.

/*
#cgo CFLAGS: -I${SRCDIR}/../../../src/agent -I${SRCDIR}/../../../src/api -I${SRCDIR}/../../../include
#include <stdlib.h>
#include "agent.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"time"
	"unsafe"
)

// ErrUnsupported: no GPU of the node reports XID events (gs_nvml_watch).
var ErrUnsupported = errors.New("unsupported")

// NVML is libnvidia-ml loaded and initialized. Inventory and Watch before
// any Wait; then one goroutine may Wait while others read Inventory
// values; Close only when no Wait runs.
type NVML struct {
	c *C.struct_gs_nvml
}

// Event is one XID event: the GPU's NVML index and the XID.
type Event struct {
	GPU uint32
	XID uint64
}

// OpenNVML loads NVML from path ("" = libnvidia-ml.so.1 through the
// loader's search path) and initializes it.
func OpenNVML(path string) (*NVML, error) {
	var cp *C.char
	if path != "" {
		cp = C.CString(path)
		defer C.free(unsafe.Pointer(cp))
	}
	var nv *C.struct_gs_nvml
	var diag C.struct_gs_diag
	if C.gs_nvml_open(cp, &nv, &diag) != C.GS_EOK {
		return nil, fmt.Errorf("%s%s", where(&diag), C.GoString(&diag.text[0]))
	}
	return &NVML{c: nv}, nil
}

// Close shuts NVML down.
func (nv *NVML) Close() {
	if nv != nil && nv.c != nil {
		C.gs_nvml_close(nv.c)
		nv.c = nil
	}
}

// Inventory reads the node's GPUs and link matrix, every GPU healthy.
func (nv *NVML) Inventory() (*Inventory, error) {
	inv := (*C.struct_gs_agent_inventory)(C.calloc(1, C.sizeof_struct_gs_agent_inventory))
	if inv == nil {
		return nil, errNoMemory
	}
	var diag C.struct_gs_diag
	if C.gs_agent_inventory_nvml(nv.c, inv, &diag) != C.GS_EOK {
		C.free(unsafe.Pointer(inv))
		return nil, fmt.Errorf("NVML: %s%s", where(&diag), C.GoString(&diag.text[0]))
	}
	return &Inventory{c: inv}, nil
}

// Watch starts listening for XID events; an error wrapping ErrUnsupported
// when no GPU reports them.
func (nv *NVML) Watch() error {
	var diag C.struct_gs_diag
	switch C.gs_nvml_watch(nv.c, &diag) {
	case C.GS_EOK:
		return nil
	case C.GS_EUNSUPPORTED:
		return fmt.Errorf("%w: %s%s", ErrUnsupported, where(&diag), C.GoString(&diag.text[0]))
	default:
		return fmt.Errorf("%s%s", where(&diag), C.GoString(&diag.text[0]))
	}
}

// Wait blocks up to timeout for the next XID event; false when none came.
func (nv *NVML) Wait(timeout time.Duration) (Event, bool, error) {
	var ev C.struct_gs_nvml_event
	var diag C.struct_gs_diag
	switch C.gs_nvml_wait(nv.c, C.uint32_t(timeout.Milliseconds()), &ev, &diag) {
	case C.GS_EOK:
		return Event{GPU: uint32(ev.gpu), XID: uint64(ev.xid)}, true, nil
	case C.GS_ETIMEOUT:
		return Event{}, false, nil
	default:
		return Event{}, false, fmt.Errorf("%s%s", where(&diag), C.GoString(&diag.text[0]))
	}
}

// ApplyXID applies an XID event to the inventory: true when a GPU turned
// unhealthy (C decides which XIDs are critical).
func (inv *Inventory) ApplyXID(ev Event) bool {
	cev := C.struct_gs_nvml_event{gpu: C.uint32_t(ev.GPU), xid: C.uint64_t(ev.XID)}
	return bool(C.gs_agent_inventory_xid(inv.c, &cev))
}
