package shim

import (
	"fmt"
	"strings"
	"testing"
)

func slice(node string) []byte {
	return []byte(fmt.Sprintf(`{"metadata":{"name":"%[1]s-gpus"},"spec":{"driver":"gpu.gpushare.io",`+
		`"nodeName":"%[1]s","pool":{"name":"%[1]s"},"devices":[`+
		`{"name":"gpu-0","allowMultipleAllocations":true,"attributes":{"gpushare.io/index":{"int":0}}},`+
		`{"name":"gpu-1","allowMultipleAllocations":true,"attributes":{"gpushare.io/index":{"int":1}}}]}}`, node))
}

func claimJSON(uid, exactly string) []byte {
	return []byte(fmt.Sprintf(`{"metadata":{"name":"c-%[1]s","namespace":"t","uid":"%[1]s"},`+
		`"spec":{"devices":{"requests":[{"name":"gpu","exactly":%[2]s}]}}}`, uid, exactly))
}

// gpushare placing claims through the shim (docs/dra.md): per-node
// verdicts, the core's GPUs on the node Reserve is given with the devices
// of the published slice, 4 GiB claims binpacked onto one GPU, 8 GiB over
// count 2 as 4 + 4, a claim of another class skipped, a bad one refused,
// and a reservation given back.
func TestClaims(t *testing.T) {
	s := gibShim(t)
	s.Node(node("a", 2, 32))
	s.Node(node("b", 2, 32))
	s.DRA(slice("a"), false, false) // b publishes nothing
	four := `{"deviceClassName":"gpushare.io","capacity":{"requests":{"memory":"4Gi"}}}`
	rc, reason, v := s.ClaimFilter(nil, claimJSON("u0", four), []string{"a", "b"})
	if rc != OK || v.Codes[0] != OK || v.Codes[1] != Unschedulable ||
		!strings.Contains(v.Reasons[1], "no GPU of the node published") {
		t.Fatalf("filter: %d %q %+v", rc, reason, v)
	}
	for i := 0; i < 4; i++ {
		rc, reason, c := s.ClaimReserve(nil, claimJSON(fmt.Sprint("u", i), four), "a", 1)
		want := ClaimChoice{Node: "a", Request: "gpu", Results: []ClaimDevice{
			{Driver: "gpu.gpushare.io", Pool: "a", Device: "gpu-0", Memory: "4Gi", Shared: true}}}
		if rc != OK || fmt.Sprint(c) != fmt.Sprint(want) {
			t.Fatalf("reserve %d: %d %q %+v", i, rc, reason, c)
		}
	}
	// GPU 0 full: 4 GiB on each of 2 GPUs does not fit on a; 4 GiB goes to GPU 1
	pair := `{"deviceClassName":"gpushare.io","count":2,"capacity":{"requests":{"memory":"4Gi"}}}`
	if rc, _, v := s.ClaimFilter(nil, claimJSON("p", pair), []string{"a"}); rc != OK || v.Codes[0] != Unschedulable {
		t.Fatalf("a pair beside a full GPU: %d %+v", rc, v)
	}
	s.DRA(slice("b"), false, false)
	rc, reason, c := s.ClaimReserve(nil, claimJSON("p", pair), "b", 1)
	if rc != OK || len(c.Results) != 2 || c.Results[0].Device != "gpu-0" || c.Results[1].Device != "gpu-1" ||
		c.Results[0].Memory != "4Gi" || c.Results[1].Memory != "4Gi" {
		t.Fatalf("pair: %d %q %+v", rc, reason, c)
	}
	// given back: b's GPUs are free again (a whole device fits on each)
	s.ClaimUnreserve("p")
	whole := `{"deviceClassName":"gpushare.io","count":2}`
	if rc, _, v := s.ClaimFilter(nil, claimJSON("w", whole), []string{"b"}); rc != OK || v.Codes[0] != OK {
		t.Fatalf("b not free after unreserve: %d %+v", rc, v)
	}
	// not gpushare's; refused
	if rc, _, _ := s.ClaimFilter(nil, claimJSON("x", `{"deviceClassName":"other"}`), []string{"a"}); rc != Skip {
		t.Fatalf("another class: %d", rc)
	}
	bad := `{"deviceClassName":"gpushare.io","allocationMode":"All"}`
	if rc, reason, _ := s.ClaimFilter(nil, claimJSON("y", bad), []string{"a"}); rc != Unresolvable ||
		!strings.Contains(reason, "ResourceClaim c-y: spec.devices.requests[0].exactly.allocationMode All: only ExactCount") {
		t.Fatalf("bad: %d %q", rc, reason)
	}
	if rc, reason, _ := s.ClaimReserve(nil, claimJSON("x", `{"deviceClassName":"other"}`), "a", 1); rc != Unresolvable ||
		reason != "the ResourceClaim is not gpushare's" {
		t.Fatalf("reserve another class: %d %q", rc, reason)
	}
}

// A gang of claim pods (labels gpu-topology): Permit waits until every
// member asked; a pod of no job is skipped; a member that left stops counting.
func TestClaimGang(t *testing.T) {
	s := gibShim(t)
	member := func(uid string) []byte {
		return []byte(fmt.Sprintf(`{"metadata":{"name":"%[1]s","namespace":"t","uid":"%[1]s",`+
			`"labels":{"gpu-topology":"j","gpu-topology-replica":"2"}},"spec":{"containers":[{"name":"c"}]}}`, uid))
	}
	if rc, reason := s.ClaimGangPermit(member("a")); rc != Wait || reason != "waiting for the job t/j: 1 of 2 members reserved" {
		t.Fatalf("a: %d %q", rc, reason)
	}
	s.ClaimGangLeave("a")
	if rc, _ := s.ClaimGangPermit(member("b")); rc != Wait {
		t.Fatalf("b after a left: %d", rc)
	}
	if rc, _ := s.ClaimGangPermit(member("a")); rc != OK {
		t.Fatalf("a again: %d", rc)
	}
	if rc, _ := s.ClaimGangPermit(member("b")); rc != OK {
		t.Fatalf("b released: %d", rc)
	}
	if rc, _ := s.ClaimGangPermit([]byte(`{"metadata":{"name":"x","uid":"x"},"spec":{"containers":[{"name":"c"}]}}`)); rc != Skip {
		t.Fatalf("no job: %d", rc)
	}
}

// Preemption for a claim pod (docs/dra.md "Preempting for claim pods"):
// the claims named as consumers stand in for their pods; the answer names
// the pods; an unnamed claim never goes; bad consumers are refused.
func TestClaimPreempt(t *testing.T) {
	s := gibShim(t)
	s.Node(node("a", 2, 32))
	s.DRA(slice("a"), false, false)
	four := `{"deviceClassName":"gpushare.io","capacity":{"requests":{"memory":"4Gi"}}}`
	var cons []ClaimConsumer
	for i := 0; i < 8; i++ { // four on each GPU
		uid := fmt.Sprint("u", i)
		if rc, reason, _ := s.ClaimReserve(nil, claimJSON(uid, four), "a", 1); rc != OK {
			t.Fatalf("reserve %d: %d %q", i, rc, reason)
		}
		cons = append(cons, ClaimConsumer{Claim: uid, Namespace: "t", Name: fmt.Sprint("p", i),
			UID: fmt.Sprint("pod-", i), Priority: 10})
	}
	big := claimJSON("big", `{"deviceClassName":"gpushare.io","capacity":{"requests":{"memory":"16Gi"}}}`)
	pod := []byte(`{"metadata":{"name":"bp","namespace":"t","uid":"bp"},"spec":{"priority":1000,"containers":[{"name":"c"}]}}`)
	res, why := s.ClaimPreempt([][]byte{big}, pod, []string{"a"}, nil, cons)
	want := `{"node":"a","victims":[{"namespace":"t","name":"p0","uid":"pod-0"},` +
		`{"namespace":"t","name":"p1","uid":"pod-1"},{"namespace":"t","name":"p2","uid":"pod-2"},` +
		`{"namespace":"t","name":"p3","uid":"pod-3"}],"pdbViolations":0}`
	if res != want {
		t.Fatalf("preempt: %s %q", res, why)
	}
	// p0's claim named by nobody: GPU 0 cannot be freed, GPU 1's four go
	res, _ = s.ClaimPreempt([][]byte{big}, pod, []string{"a"}, nil, cons[1:])
	if !strings.Contains(res, `"name":"p4"`) || strings.Contains(res, `"name":"p1"`) {
		t.Fatalf("unnamed claim: %s", res)
	}
	if res, why := s.ClaimPreempt([][]byte{big}, pod, []string{"a"}, nil, nil); res != "" ||
		why != "no lower-priority pods free one GPU for the pod" {
		t.Fatalf("no consumers: %q %q", res, why)
	}
	if res, why := s.ClaimPreempt([][]byte{big}, pod, []string{"a"}, nil, []ClaimConsumer{{Claim: "u0"}}); res != "" ||
		!strings.Contains(why, "consumers[0]: claim, namespace, name, uid") {
		t.Fatalf("bad consumer: %q %q", res, why)
	}
	if res, why := s.ClaimPreempt([][]byte{claimJSON("x", `{"deviceClassName":"other"}`)}, pod, []string{"a"}, nil, cons); res != "" ||
		why != "ResourceClaim c-x: not gpushare's" {
		t.Fatalf("another class: %q %q", res, why)
	}
}

// A preemptor with several claims (issue 33): two 16 GiB claims free both
// GPUs of the node, eight pods named once each; whole devices too; more
// than eight claims refused.
func TestClaimPreemptSeveral(t *testing.T) {
	s := gibShim(t)
	s.Node(node("a", 2, 32))
	s.DRA(slice("a"), false, false)
	four := `{"deviceClassName":"gpushare.io","capacity":{"requests":{"memory":"4Gi"}}}`
	var cons []ClaimConsumer
	for i := 0; i < 8; i++ {
		uid := fmt.Sprint("u", i)
		if rc, reason, _ := s.ClaimReserve(nil, claimJSON(uid, four), "a", 1); rc != OK {
			t.Fatalf("reserve %d: %d %q", i, rc, reason)
		}
		cons = append(cons, ClaimConsumer{Claim: uid, Namespace: "t", Name: fmt.Sprint("p", i),
			UID: fmt.Sprint("pod-", i), Priority: 10})
	}
	pod := []byte(`{"metadata":{"name":"bp","namespace":"t","uid":"bp"},"spec":{"priority":1000,"containers":[{"name":"c"}]}}`)
	sixteen := `{"deviceClassName":"gpushare.io","capacity":{"requests":{"memory":"16Gi"}}}`
	res, why := s.ClaimPreempt([][]byte{claimJSON("c1", sixteen), claimJSON("c2", sixteen)}, pod, []string{"a"}, nil, cons)
	for i := 0; i < 8; i++ {
		if strings.Count(res, fmt.Sprintf(`"name":"p%d"`, i)) != 1 {
			t.Fatalf("two claims: p%d not named once: %s %q", i, res, why)
		}
	}
	whole := claimJSON("w", `{"deviceClassName":"gpushare.io"}`)
	res, why = s.ClaimPreempt([][]byte{whole}, pod, []string{"a"}, nil, cons)
	want := `{"node":"a","victims":[{"namespace":"t","name":"p0","uid":"pod-0"},` +
		`{"namespace":"t","name":"p1","uid":"pod-1"},{"namespace":"t","name":"p2","uid":"pod-2"},` +
		`{"namespace":"t","name":"p3","uid":"pod-3"}],"pdbViolations":0}`
	if res != want {
		t.Fatalf("whole device: %s %q", res, why)
	}
	nine := make([][]byte, 9)
	for i := range nine {
		nine[i] = claimJSON(fmt.Sprint("n", i), four)
	}
	if res, why := s.ClaimPreempt(nine, pod, []string{"a"}, nil, cons); res != "" ||
		why != "preemption for 1..8 unallocated claims per pod" {
		t.Fatalf("nine claims: %q %q", res, why)
	}
}

// A nominated claim preemptor's GPUs are held (docs/dra.md): another claim
// pod's filter and reserve get the hold's text while the victims' claims
// are charged, and no room after; the preemptor's own claim is reserved on
// the freed GPU, and the hold ends with it.
func TestClaimPreemptHolds(t *testing.T) {
	s := gibShim(t)
	s.Node(node("a", 2, 32))
	s.DRA(slice("a"), false, false)
	four := `{"deviceClassName":"gpushare.io","capacity":{"requests":{"memory":"4Gi"}}}`
	var cons []ClaimConsumer
	for i := 0; i < 8; i++ {
		uid := fmt.Sprint("u", i)
		if rc, reason, _ := s.ClaimReserve(nil, claimJSON(uid, four), "a", 1); rc != OK {
			t.Fatalf("reserve %d: %d %q", i, rc, reason)
		}
		cons = append(cons, ClaimConsumer{Claim: uid, Namespace: "t", Name: fmt.Sprint("p", i),
			UID: fmt.Sprint("pod-", i), Priority: 10})
	}
	big := claimJSON("big", `{"deviceClassName":"gpushare.io","capacity":{"requests":{"memory":"16Gi"}}}`)
	pod := []byte(`{"metadata":{"name":"bp","namespace":"t","uid":"bp"},"spec":{"priority":1000,"containers":[{"name":"c"}]}}`)
	late := []byte(`{"metadata":{"name":"late","namespace":"t","uid":"late"},"spec":{"priority":10,"containers":[{"name":"c"}]}}`)
	if res, why := s.ClaimPreempt([][]byte{big}, pod, []string{"a"}, nil, cons); !strings.Contains(res, `"name":"p3"`) {
		t.Fatalf("preempt: %s %q", res, why)
	}
	held := "GPUs held for pod t/bp, nominated here by preemption"
	if rc, _, v := s.ClaimFilter(late, claimJSON("l", four), []string{"a"}); rc != OK || v.Reasons[0] != held {
		t.Fatalf("late while the victims hold GPU 0: %d %+v", rc, v)
	}
	if rc, reason, _ := s.ClaimReserve(late, claimJSON("l", four), "a", 1); rc != Unschedulable || reason != held {
		t.Fatalf("late's reserve: %d %q", rc, reason)
	}
	for i := 0; i < 4; i++ { // the victims' claims deallocated
		s.ClaimUnreserve(fmt.Sprint("u", i))
	}
	if rc, _, v := s.ClaimFilter(late, claimJSON("l", four), []string{"a"}); rc != OK || v.Codes[0] != Unschedulable ||
		v.Reasons[0] != "insufficient GPU memory on any single GPU" {
		t.Fatalf("late once GPU 0 is free: %d %+v", rc, v)
	}
	if rc, _, v := s.ClaimFilter(pod, big, []string{"a"}); rc != OK || v.Codes[0] != OK {
		t.Fatalf("the preemptor: %d %+v", rc, v)
	}
	if rc, reason, c := s.ClaimReserve(pod, big, "a", 1); rc != OK || c.Results[0].Device != "gpu-0" {
		t.Fatalf("the preemptor's reserve: %d %q %+v", rc, reason, c)
	}
	s.ClaimUnreserve("big") // given back: no hold is left either
	if rc, _, v := s.ClaimFilter(late, claimJSON("l", four), []string{"a"}); rc != OK || v.Codes[0] != OK {
		t.Fatalf("late after the hold ended: %d %+v", rc, v)
	}
	if rc, reason, _ := s.ClaimFilter([]byte(`{"x":1}`), claimJSON("l", four), []string{"a"}); rc != Error ||
		!strings.Contains(reason, "invalid Pod") {
		t.Fatalf("not a pod: %d %q", rc, reason)
	}
}
