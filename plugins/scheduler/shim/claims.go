package shim

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"unsafe"
)

// ClaimVerdicts is ClaimFilter's answer per node of its list.
type ClaimVerdicts struct {
	Codes   []int
	Reasons []string // "" where the node passed
	Scores  []int64  // 0..100
}

// ClaimFilter: the core's verdict for the ResourceClaim claim (its JSON) on
// each node (shim.h gs_shim_claim_filter): Skip when the claim is not
// gpushare's (no request of DeviceClass gpushare.io); Unresolvable with the
// reason when gpushare cannot place it; else OK and a verdict per node.
// pod (its JSON, or nil) is the claim's consumer: GPUs held for pods
// nominated by preemption are not its.
func (s *Shim) ClaimFilter(pod, claim []byte, names []string) (int, string, ClaimVerdicts) {
	n := len(names)
	arr := s.nameArray(names)
	defer C.free(unsafe.Pointer(arr))
	m := n
	if m == 0 {
		m = 1
	}
	codes := (*C.int)(C.calloc(C.size_t(m), C.size_t(unsafe.Sizeof(C.int(0)))))
	reasons := (*C.char)(C.calloc(C.size_t(m), C.size_t(reasonMax)))
	scores := (*C.int64_t)(C.calloc(C.size_t(m), C.size_t(unsafe.Sizeof(C.int64_t(0)))))
	defer C.free(unsafe.Pointer(codes))
	defer C.free(unsafe.Pointer(reasons))
	defer C.free(unsafe.Pointer(scores))
	var rc int
	withBytes(pod, func(pb *C.char, pl C.size_t) {
		withBytes(claim, func(b *C.char, l C.size_t) {
			rc = int(C.gs_shim_claim_filter(s.c, pb, pl, b, l, arr, C.size_t(n), codes, reasons, scores))
		})
	})
	if rc != OK {
		return rc, C.GoString(reasons), ClaimVerdicts{}
	}
	v := ClaimVerdicts{Codes: make([]int, n), Reasons: make([]string, n), Scores: make([]int64, n)}
	cs, ss := unsafe.Slice(codes, n), unsafe.Slice(scores, n)
	for i := 0; i < n; i++ {
		v.Codes[i], v.Scores[i] = int(cs[i]), int64(ss[i])
		if v.Codes[i] != OK {
			v.Reasons[i] = C.GoString((*C.char)(unsafe.Add(unsafe.Pointer(reasons), i*reasonMax)))
		}
	}
	return OK, "", v
}

// ClaimDevice is one device the core chose for a claim.
type ClaimDevice struct {
	Driver string `json:"driver"`
	Pool   string `json:"pool"`
	Device string `json:"device"`
	Memory string `json:"memory"` // a quantity; "" for a whole device
	Shared bool   `json:"shared"` // the device allows multiple allocations
}

// ClaimChoice is ClaimReserve's answer: the node, the claim's request name
// and the devices, one per GPU.
type ClaimChoice struct {
	Node    string        `json:"node"`
	Request string        `json:"request"`
	Results []ClaimDevice `json:"results"`
}

// ClaimReserve: the core chooses the claim's GPUs on node and charges them
// until the allocation is seen or ClaimUnreserve (shim.h
// gs_shim_claim_reserve). A retry answers the same GPUs. pod (or nil) is
// the consumer, as for ClaimFilter; its own hold ends.
func (s *Shim) ClaimReserve(pod, claim []byte, node string, nowNs int64) (int, string, ClaimChoice) {
	var rc int
	var reason string
	var out *C.char
	withBytes(pod, func(pb *C.char, pl C.size_t) {
		rc, reason, out = reserveOn(claim, node, func(b *C.char, l C.size_t, cn *C.char, o **C.char, r *C.char) C.int {
			return C.gs_shim_claim_reserve(s.c, pb, pl, b, l, cn, C.int64_t(nowNs), o, r)
		})
	})
	if rc != OK {
		return rc, reason, ClaimChoice{}
	}
	defer C.gs_shim_free_string(out)
	var c ClaimChoice
	if err := json.Unmarshal([]byte(C.GoString(out)), &c); err != nil {
		return Error, fmt.Sprintf("the core's claim choice: %v", err), ClaimChoice{}
	}
	return OK, "", c
}

// ClaimUnreserve gives the claim's charge back.
func (s *Shim) ClaimUnreserve(uid string) {
	withString(uid, func(c *C.char) { C.gs_shim_claim_unreserve(s.c, c) })
}

// ClaimGangPermit: Permit for a pod whose GPUs are claims gpushare placed
// (shim.h gs_shim_claim_gang_permit): Skip (no gang member), Wait with the
// reason, OK (its job is complete) or Error.
func (s *Shim) ClaimGangPermit(pod []byte) (int, string) {
	return withReason(func(r *C.char) (rc C.int) {
		withBytes(pod, func(b *C.char, l C.size_t) { rc = C.gs_shim_claim_gang_permit(s.c, b, l, r) })
		return rc
	})
}

// ClaimGangLeave: the member's reservation was given back.
func (s *Shim) ClaimGangLeave(uid string) {
	withString(uid, func(c *C.char) { C.gs_shim_claim_gang_leave(s.c, c) })
}

// ClaimConsumer is a claim gpushare placed whose one consumer pod may stand
// in for it as a preemption victim (shim.h gs_shim_claim_preempt).
type ClaimConsumer struct {
	Claim     string `json:"claim"` // the claim's UID
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Priority  int32  `json:"priority"`
}

// ClaimPreempt: the core's victims for the pod's unallocated claims (their
// JSON; 1..8) on one of names (host: 4 per node as Filter's, or nil), claims
// standing in for their consumers as consumers says: the answer's JSON, or
// "" and why not. The pod's GPUs are then held on the node (one claim of
// memory: shim.h gs_shim_claim_preempt).
func (s *Shim) ClaimPreempt(claims [][]byte, pod []byte, names []string, host []int64, consumers []ClaimConsumer) (string, string) {
	cons, err := json.Marshal(consumers)
	if err != nil {
		return "", err.Error()
	}
	raws := make([]json.RawMessage, len(claims))
	for i, c := range claims {
		raws[i] = c
	}
	claim, err := json.Marshal(raws)
	if err != nil {
		return "", "the ResourceClaims: " + err.Error()
	}
	if consumers == nil {
		cons = []byte("[]")
	}
	arr := s.nameArray(names)
	defer C.free(unsafe.Pointer(arr))
	reason := (*C.char)(C.calloc(1, C.size_t(reasonMax)))
	defer C.free(unsafe.Pointer(reason))
	var h *C.int64_t
	if len(names) > 0 && len(host) >= 4*len(names) {
		h = (*C.int64_t)(C.malloc(C.size_t(len(host)) * C.size_t(unsafe.Sizeof(C.int64_t(0)))))
		defer C.free(unsafe.Pointer(h))
		copy(unsafe.Slice((*int64)(unsafe.Pointer(h)), len(host)), host)
	}
	var res *C.char
	withBytes(claim, func(cb *C.char, cl C.size_t) {
		withBytes(pod, func(pb *C.char, pl C.size_t) {
			withBytes(cons, func(sb *C.char, sl C.size_t) {
				res = C.gs_shim_claim_preempt(s.c, cb, cl, pb, pl, arr, C.size_t(len(names)), h, sb, sl, reason)
			})
		})
	})
	if out, ok := take(res); ok {
		return out, ""
	}
	return "", C.GoString(reason)
}
