// Package shim is the cgo boundary of the GpuShare plugin: Go values in,
// the C service's answers out (shim.h). Nothing else in the plugin touches
// C. No Go pointer is kept by C (bytes are copied with C.CBytes and freed
// before each call returns); C memory returned is copied and freed here.
// Every method is safe from any goroutine (the C service locks); the race
// detector runs this package's tests (shim_test.go) in the test command.
package shim

/*
#cgo CFLAGS: -I${SRCDIR}/../../../src/shim -I${SRCDIR}/../../../include
#include <stdlib.h>
#include <string.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// Codes of the verbs (shim.h).
const (
	OK            = int(C.GS_SHIM_OK)
	Unschedulable = int(C.GS_SHIM_UNSCHEDULABLE)
	Unresolvable  = int(C.GS_SHIM_UNRESOLVABLE)
	Skip          = int(C.GS_SHIM_SKIP)
	Wait          = int(C.GS_SHIM_WAIT)
	Error         = int(C.GS_SHIM_ERROR)
	ScoreOnly     = int(C.GS_SHIM_SCORE_ONLY)
)

const reasonMax = int(C.GS_SHIM_REASON)

// services holds every Shim made: a service lives as long as the process
// (the plugin makes one, for kube-scheduler's life; the tests make several),
// so its C memory is never freed while a C call might still use it, and it
// stays reachable to the leak checker of the -asan tests.
var services sync.Map

// Shim is one C scheduler service.
type Shim struct {
	c     *C.struct_gs_shim
	names sync.Map // node name → *C.char, made once (each verb names every node)

	// Filter's buffers, kept between calls (kube-scheduler filters one pod
	// at a time over the same nodes): the C array of the last node list and
	// the answers' arrays. mu guards them for the length of a call.
	mu        sync.Mutex
	lastNames []string
	lastArr   **C.char
	codes     *C.int
	reasons   *C.char
	scores    *C.int64_t
	capacity  int // entries in codes, reasons and scores
}

// New makes the service from the ConfigMap cmNs/cmName's data as read at
// start-up (nil: none) and args over it, both {"key":"value"} with the
// ConfigMap's keys (docs/contract.md §6); args win key by key.
// With ignoreInvalid a bad ConfigMap value is logged and keeps its default.
func New(args, cmData []byte, cmNs, cmName string, ignoreInvalid bool) (*Shim, error) {
	var diag C.struct_gs_diag
	cargs := C.CBytes(args)
	defer C.free(cargs)
	var ccm unsafe.Pointer
	if len(cmData) > 0 {
		ccm = C.CBytes(cmData)
		defer C.free(ccm)
	}
	ns, name := C.CString(cmNs), C.CString(cmName)
	defer C.free(unsafe.Pointer(ns))
	defer C.free(unsafe.Pointer(name))
	ign := C.int(0)
	if ignoreInvalid {
		ign = 1
	}
	c := C.gs_shim_new((*C.char)(cargs), C.size_t(len(args)), (*C.char)(ccm), C.size_t(len(cmData)),
		ns, name, ign, &diag)
	if c == nil {
		return nil, fmt.Errorf("%s", C.GoString(&diag.text[0]))
	}
	sh := &Shim{c: c}
	services.Store(sh, struct{}{})
	return sh, nil
}

// withBytes calls fn with a C copy of b, freed when fn returns.
func withBytes(b []byte, fn func(*C.char, C.size_t)) {
	c := C.CBytes(b)
	defer C.free(c)
	fn((*C.char)(c), C.size_t(len(b)))
}

func withString(s string, fn func(*C.char)) {
	c := C.CString(s)
	defer C.free(unsafe.Pointer(c))
	fn(c)
}

// withBytesOn calls fn with a C copy of b (a pod or a claim) and one of node,
// freed when fn returns.
func withBytesOn(b []byte, node string, fn func(*C.char, C.size_t, *C.char)) {
	withBytes(b, func(cb *C.char, l C.size_t) { withString(node, func(cn *C.char) { fn(cb, l, cn) }) })
}

// withReason calls fn with a zeroed reason buffer of reasonMax bytes (shim.h
// GS_SHIM_REASON): fn's code and the text C wrote there.
func withReason(fn func(reason *C.char) C.int) (int, string) {
	reason := (*C.char)(C.calloc(1, C.size_t(reasonMax)))
	defer C.free(unsafe.Pointer(reason))
	rc := int(fn(reason))
	return rc, C.GoString(reason)
}

// reserveOn runs one of the shim's reserve calls (call: the C function over
// b's bytes, node, where C writes its answer, and the reason buffer): the
// code, the reason and the answer (free it with gs_shim_free_string; NULL
// unless OK).
func reserveOn(b []byte, node string, call func(b *C.char, l C.size_t, node *C.char, out **C.char, reason *C.char) C.int) (int, string, *C.char) {
	var out *C.char
	rc, reason := withReason(func(r *C.char) (rc C.int) {
		withBytesOn(b, node, func(cb *C.char, l C.size_t, cn *C.char) { rc = call(cb, l, cn, &out, r) })
		return rc
	})
	return rc, reason, out
}

// cname is a node name as a C string kept for the shim's life (node names
// are few and stable; a verb over 5,000 nodes would otherwise copy every
// name twice per pod).
func (s *Shim) cname(name string) *C.char {
	if v, ok := s.names.Load(name); ok {
		return v.(*C.char)
	}
	c := C.CString(name)
	if v, loaded := s.names.LoadOrStore(name, c); loaded {
		C.free(unsafe.Pointer(c))
		return v.(*C.char)
	}
	return c
}

// nameArray is a C array of the names' C strings; free it with C.free.
func (s *Shim) nameArray(names []string) **C.char {
	arr := (**C.char)(C.malloc(C.size_t(len(names)+1) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	slice := unsafe.Slice(arr, len(names)+1)
	for i, n := range names {
		slice[i] = s.cname(n)
	}
	slice[len(names)] = nil
	return arr
}

// Node: a node added or changed (its JSON).
func (s *Shim) Node(node []byte) {
	withBytes(node, func(b *C.char, l C.size_t) { C.gs_shim_node(s.c, b, l) })
}

// NodeDelete: a node left.
func (s *Shim) NodeDelete(name string) {
	withString(name, func(c *C.char) { C.gs_shim_node_delete(s.c, c) })
}

// Pod: a pod added or changed (its JSON).
func (s *Shim) Pod(pod []byte) {
	withBytes(pod, func(b *C.char, l C.size_t) { C.gs_shim_pod(s.c, b, l) })
}

// PodDelete: a pod deleted.
func (s *Shim) PodDelete(uid string) {
	withString(uid, func(c *C.char) { C.gs_shim_pod_delete(s.c, c) })
}

// PreemptForget: the victims of uid's last preemption are not waited for
// (their eviction failed; Preempt may choose again).
func (s *Shim) PreemptForget(uid string) {
	withString(uid, func(c *C.char) { C.gs_shim_preempt_forget(s.c, c) })
}

// DRA: a resource.k8s.io/v1 ResourceSlice (claim false) or ResourceClaim
// (claim true) added or changed, or deleted (its JSON; docs/dra.md).
func (s *Shim) DRA(obj []byte, claim, deleted bool) {
	withBytes(obj, func(b *C.char, l C.size_t) {
		C.gs_shim_dra(s.c, b, l, cbool(claim), cbool(deleted))
	})
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Tick lets time pass (unix ns).
func (s *Shim) Tick(nowNs int64) { C.gs_shim_tick(s.c, C.int64_t(nowNs)) }

// Verdicts is a verb's answer for each node of its list. Nothing in it
// points anywhere per node (the garbage collector scans none of it, and
// kube-scheduler keeps a cycle's answers until the pod's binding ends), and
// a list where every node passed carries no codes or reasons at all.
type Verdicts struct {
	n       int
	code    []uint8  // per node; nil when every node passed
	reason  []uint32 // per node, an index in reasons; nil with code
	reasons []string // the distinct reasons, in the order first met
	score   []uint8  // 0..100 per node; nil when not scored
}

// Len is the number of nodes answered for.
func (v *Verdicts) Len() int { return v.n }

// AllPass: every node passed.
func (v *Verdicts) AllPass() bool { return v.code == nil }

// Code is node i's code (OK, Unschedulable, Unresolvable).
func (v *Verdicts) Code(i int) int {
	if v.code == nil {
		return OK
	}
	return int(v.code[i])
}

// Reason is why node i was refused ("" when it passed).
func (v *Verdicts) Reason(i int) string {
	if v.code == nil || int(v.code[i]) == OK {
		return ""
	}
	return v.reasons[v.reason[i]]
}

// Score is node i's score, 0..100 (0 when not scored).
func (v *Verdicts) Score(i int) int64 {
	if v.score == nil {
		return 0
	}
	return int64(v.score[i])
}

// failed is the answer of a verb that could not run: one entry, code rc.
func failed(rc int, reason string) Verdicts {
	return Verdicts{n: 1, code: []uint8{uint8(rc)}, reason: []uint32{0}, reasons: []string{reason}}
}

// WantsHost: whether Filter wants the nodes' host resources (nodePolicy frag).
func (s *Shim) WantsHost() bool { return C.gs_shim_wants_host(s.c) != 0 }

// sameNames: whether a and b list the same names in the same order; the
// same slice is (Filter's callers do not change a list they passed).
func sameNames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// buffers readies Filter's arrays for n nodes (under s.mu): the C array of
// names, rebuilt only when the list changed, and room for n answers.
func (s *Shim) buffers(names []string) {
	n := len(names)
	if s.lastArr == nil || !sameNames(names, s.lastNames) {
		old := s.lastArr
		s.lastArr = s.nameArray(names)
		// the C side remembers results over this list until told of the next
		C.gs_shim_set_list(s.c, s.lastArr, C.size_t(n))
		if old != nil {
			C.free(unsafe.Pointer(old))
		}
	}
	s.lastNames = names // kept: the next call with this slice compares nothing
	if n+1 > s.capacity {
		C.free(unsafe.Pointer(s.codes))
		C.free(unsafe.Pointer(s.reasons))
		C.free(unsafe.Pointer(s.scores))
		s.capacity = 2 * (n + 1)
		s.codes = (*C.int)(C.calloc(C.size_t(s.capacity), C.size_t(unsafe.Sizeof(C.int(0)))))
		s.reasons = (*C.char)(C.calloc(C.size_t(s.capacity), C.size_t(reasonMax)))
		s.scores = (*C.int64_t)(C.calloc(C.size_t(s.capacity), 8))
		if s.codes == nil || s.reasons == nil || s.scores == nil {
			panic("gpushare: out of memory")
		}
	}
}

// Filter (score false) or prioritize (score true) of pod over the nodes.
// names is kept until a call with another list: the caller must not change
// it (the plugin passes its node index's names, never changed). host is nil
// or 4 numbers per node: CPU allocatable and requested
// (milli), memory allocatable and requested (bytes). rc is OK, Skip (not
// managed), ScoreOnly (scored, nothing to reserve: nodePolicy frag and a
// pod asking no GPU) or Error (reason in the first verdict).
func (s *Shim) Filter(pod []byte, names []string, host []int64, nowNs int64, score bool) (int, Verdicts) {
	return s.filter(pod, nil, nil, names, host, nowNs, score)
}

// FilterClaim is Filter with scores for a pod using claim, one of
// gpushare's ResourceClaims: shaped, the pod scored as the gpu-mem pod the
// claim is placed as (shim.h gs_shim_filter_claim), rc ScoreOnly, the claim
// being what is reserved; not shaped (whole devices), Filter's answer.
func (s *Shim) FilterClaim(pod, claim []byte, names []string, host []int64, nowNs int64) (int, bool, Verdicts) {
	var shaped C.int
	rc, v := s.filter(pod, claim, &shaped, names, host, nowNs, true)
	return rc, shaped != 0, v
}

func (s *Shim) filter(pod, claim []byte, shaped *C.int, names []string, host []int64, nowNs int64, score bool) (int, Verdicts) {
	n := len(names)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buffers(names)
	var scores *C.int64_t
	if score {
		scores = s.scores
	}
	var rc int
	withBytes(pod, func(b *C.char, l C.size_t) {
		var h *C.int64_t
		if len(host) >= 4*n && n > 0 {
			// Go memory without Go pointers, read by C during the call only
			// (the shim copies it into the ledger): no copy needed.
			h = (*C.int64_t)(unsafe.Pointer(&host[0]))
		}
		if claim == nil {
			rc = int(C.gs_shim_filter(s.c, b, l, s.lastArr, C.size_t(n), h, C.int64_t(nowNs), s.codes,
				s.reasons, scores))
			return
		}
		withBytes(claim, func(cb *C.char, cl C.size_t) {
			rc = int(C.gs_shim_filter_claim(s.c, b, l, cb, cl, s.lastArr, C.size_t(n), h, C.int64_t(nowNs),
				s.codes, s.reasons, scores, shaped))
		})
	})
	if rc != OK && rc != ScoreOnly {
		return rc, failed(rc, C.GoString(s.reasons))
	}
	v := Verdicts{n: n}
	if score {
		v.score = make([]uint8, n)
		for i, sc := range unsafe.Slice(s.scores, n) {
			v.score[i] = uint8(sc) // 0..100 (shim.h)
		}
	}
	cs := unsafe.Slice(s.codes, n)
	first := -1
	for i, c := range cs {
		if int(c) != OK {
			first = i
			break
		}
	}
	if first < 0 {
		return rc, v
	}
	v.code = make([]uint8, n)
	v.reason = make([]uint32, n)
	last := ""
	for i := first; i < n; i++ {
		if v.code[i] = uint8(cs[i]); int(cs[i]) == OK {
			continue // a node that passes has no reason (its slot is not written)
		}
		// Most refused nodes fail for the reason the node before them did:
		// such a reason is neither copied nor stored again.
		r := (*C.char)(unsafe.Add(unsafe.Pointer(s.reasons), i*reasonMax))
		view := unsafe.String((*byte)(unsafe.Pointer(r)), int(C.strlen(r)))
		if len(v.reasons) == 0 || view != last {
			last = C.GoString(r)
			v.reasons = append(v.reasons, last)
		}
		v.reason[i] = uint32(len(v.reasons) - 1)
	}
	return rc, v
}

// Evaluated is how many nodes the last Filter with scores over the kept
// list evaluated (the others' verdicts were the last pod's: shim.h
// gs_shim_set_list).
func (s *Shim) Evaluated() int { return int(C.gs_shim_evaluated(s.c)) }

// Sign: kube-scheduler's pod signature for gpushare (shim.h
// gs_shim_sign): OK with the text, Skip (nothing to sign), Unschedulable
// (not signable: the text says why) or Error.
func (s *Shim) Sign(pod []byte) (int, string) {
	return withReason(func(sig *C.char) (rc C.int) {
		withBytes(pod, func(b *C.char, l C.size_t) { rc = C.gs_shim_sign(s.c, b, l, sig) })
		return rc
	})
}

// Reserve pod on node: the annotations its Binding carries.
func (s *Shim) Reserve(pod []byte, node string, nowNs int64) (int, map[string]string, string) {
	rc, reason, annots := reserveOn(pod, node, func(b *C.char, l C.size_t, cn *C.char, out **C.char, r *C.char) C.int {
		return C.gs_shim_reserve(s.c, b, l, cn, C.int64_t(nowNs), out, r)
	})
	if rc != OK {
		return rc, nil, reason
	}
	defer C.gs_shim_free_string(annots)
	// key NUL value NUL ..., ended by an empty key (shim.h)
	out := map[string]string{}
	p := unsafe.Pointer(annots)
	for *(*C.char)(p) != 0 {
		k := C.GoString((*C.char)(p))
		p = unsafe.Add(p, len(k)+1)
		v := C.GoString((*C.char)(p))
		p = unsafe.Add(p, len(v)+1)
		out[k] = v
	}
	return OK, out, ""
}

// Unreserve undoes a reservation.
func (s *Shim) Unreserve(pod []byte, node string) {
	withBytesOn(pod, node, func(b *C.char, l C.size_t, cn *C.char) { C.gs_shim_unreserve(s.c, b, l, cn) })
}

// Confirm records the Binding as done.
func (s *Shim) Confirm(uid string) {
	withString(uid, func(c *C.char) { C.gs_shim_post_bind(s.c, c) })
}

// Permit: OK, Wait (a gang not all reserved) or a rejection, with a reason.
func (s *Shim) Permit(pod []byte, node string, nowNs int64) (int, string) {
	return withReason(func(r *C.char) (rc C.int) {
		withBytesOn(pod, node, func(b *C.char, l C.size_t, cn *C.char) {
			rc = C.gs_shim_permit(s.c, b, l, cn, C.int64_t(nowNs), r)
		})
		return rc
	})
}

// Preempt: the core's choice of node and victims over the nodes, as JSON
// {"node":..,"victims":[{"namespace","name","uid"}]}; false when none.
func (s *Shim) Preempt(pod []byte, names []string) (string, bool) {
	arr := s.nameArray(names)
	defer C.free(unsafe.Pointer(arr))
	var res *C.char
	withBytes(pod, func(b *C.char, l C.size_t) {
		res = C.gs_shim_preempt(s.c, b, l, arr, C.size_t(len(names)))
	})
	if res == nil {
		return "", false
	}
	out := C.GoString(res)
	C.gs_shim_free_string(res)
	return out, true
}

// PreemptHost is Preempt with the nodes' host resources (4 per node, as
// Filter's): the core does not choose victims that free GPUs but leave the
// preemptor's CPU or memory short.
func (s *Shim) PreemptHost(pod []byte, names []string, host []int64) (string, bool) {
	if len(names) == 0 || len(host) < 4*len(names) {
		return s.Preempt(pod, names)
	}
	arr := s.nameArray(names)
	defer C.free(unsafe.Pointer(arr))
	// Go memory without Go pointers, read by C during the call only
	h := (*C.int64_t)(unsafe.Pointer(&host[0]))
	var res *C.char
	withBytes(pod, func(b *C.char, l C.size_t) {
		res = C.gs_shim_preempt_host(s.c, b, l, arr, C.size_t(len(names)), h)
	})
	return take(res)
}

// PodMeta records the labels and host requests of a pod the plugin bound
// (its cycle's JSON), which its informer's updates no longer carry to the
// core.
func (s *Shim) PodMeta(pod []byte) {
	withBytes(pod, func(b *C.char, l C.size_t) { C.gs_shim_pod_meta(s.c, b, l) })
}

// PDB feeds a policy/v1 PodDisruptionBudget (its JSON) added, changed or
// deleted.
func (s *Shim) PDB(pdb []byte, deleted bool) {
	d := C.int(0)
	if deleted {
		d = 1
	}
	withBytes(pdb, func(b *C.char, l C.size_t) { C.gs_shim_pdb(s.c, b, l, d) })
}

// GangTimeoutSeconds is the configuration's gangTimeoutSeconds.
func (s *Shim) GangTimeoutSeconds() int { return int(C.gs_shim_gang_timeout_s(s.c)) }

// ConfigMap: a ConfigMap added, changed or deleted (its JSON). Returns the
// configuration's error when it has just become invalid ("" otherwise).
func (s *Shim) ConfigMap(cm []byte, deleted bool) string {
	d := C.int(0)
	if deleted {
		d = 1
	}
	var res *C.char
	withBytes(cm, func(b *C.char, l C.size_t) { res = C.gs_shim_configmap(s.c, b, l, d) })
	out, _ := take(res)
	return out
}

// take copies and frees a string the C side returned.
func take(c *C.char) (string, bool) {
	if c == nil {
		return "", false
	}
	out := C.GoString(c)
	C.gs_shim_free_string(c)
	return out, true
}

// View: /debug/ledger (inspect false) or inspect's JSON, of every node
// (node "") or one, with the HTTP status the extender answers (200, 404, 500).
func (s *Shim) View(node string, inspect bool) (string, int) {
	var status C.int
	var res *C.char
	in := C.int(0)
	if inspect {
		in = 1
	}
	if node == "" {
		res = C.gs_shim_view(s.c, nil, in, &status)
	} else {
		withString(node, func(c *C.char) { res = C.gs_shim_view(s.c, c, in, &status) })
	}
	out, ok := take(res)
	if !ok {
		return `{"error":"out of memory"}`, 500
	}
	return out, int(status)
}

// Ledger: /debug/ledger's JSON; false when out of memory.
func (s *Shim) Ledger() (string, bool) {
	out, status := s.View("", false)
	return out, status == 200
}

// Metrics: the gpushare metrics (Prometheus text); false when out of memory.
func (s *Shim) Metrics() (string, bool) { return take(C.gs_shim_metrics(s.c)) }

// Notice is what the service reports from its tick: a gang timed out (Pod
// "" for the gang's own line, else a member not bound).
type Notice struct {
	Namespace string `json:"namespace"`
	Job       string `json:"job"`
	Pod       string `json:"pod"`
	UID       string `json:"uid"`
	Message   string `json:"message"`
}

// Notices: the notices since the last call, as JSON (false: none).
func (s *Shim) Notices() (string, bool) { return take(C.gs_shim_notices(s.c)) }
