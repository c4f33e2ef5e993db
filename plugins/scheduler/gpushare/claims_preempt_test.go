package gpushare

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"

	"gpushare.io/scheduler/shim"
)

// informerHandle is the part of the framework's Handle consumers reads.
type informerHandle struct {
	fwk.Handle
	f informers.SharedInformerFactory
}

func (h informerHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.f }

// The rule of docs/dra.md "Preempting for claim pods": only a claim of
// gpushare's class, allocated and reserved for exactly one live pod of the
// preemptor's scheduler outside any gang, stands in for its pod; a claim
// of an ending pod on the nominated node, or of the preemptor's last
// victims, makes PostFilter wait.
func TestConsumers(t *testing.T) {
	p := gibPlugin(t)
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	p.h = informerHandle{f: f}
	prio := func(v int32) *int32 { return &v }
	pods := f.Core().V1().Pods().Informer().GetIndexer()
	claims := f.Resource().V1().ResourceClaims().Informer().GetIndexer()
	pod := func(name string, mod func(*v1.Pod)) {
		q := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: name, UID: types.UID("u-" + name)},
			Spec: v1.PodSpec{SchedulerName: "gpushare-scheduler", Priority: prio(10)}}
		if mod != nil {
			mod(q)
		}
		if err := pods.Add(q); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(name, class string, allocated bool, users ...string) {
		c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: name, UID: types.UID("c-" + name)},
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
				Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class}}}}}}
		if allocated {
			c.Status.Allocation = &resourcev1.AllocationResult{}
		}
		for _, u := range users {
			c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{
				Resource: "pods", Name: u, UID: types.UID("u-" + u)})
		}
		if err := claims.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	pod("one", nil)
	pod("two", nil)
	pod("other", func(q *v1.Pod) { q.Spec.SchedulerName = "default-scheduler" })
	pod("member", func(q *v1.Pod) { q.Labels = map[string]string{"gpu-topology": "j"} })
	pod("ending", func(q *v1.Pod) { q.DeletionTimestamp = &metav1.Time{} })
	claim("mine", "gpushare.io", true, "one")
	claim("shared", "gpushare.io", true, "one", "two")
	claim("foreign", "gpushare.io", true, "other")
	claim("gang", "gpushare.io", true, "member")
	claim("class", "other.example.com", true, "two")
	claim("pending", "gpushare.io", false, "two")
	claim("ending", "gpushare.io", true, "ending")
	claim("nobody", "gpushare.io", true)

	preemptor := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "big", UID: "u-big"},
		Spec: v1.PodSpec{SchedulerName: "gpushare-scheduler", Priority: prio(1000)}}
	got, waiting, err := p.consumers(preemptor)
	want := []shim.ClaimConsumer{{Claim: "c-mine", Namespace: "t", Name: "one", UID: "u-one", Priority: 10}}
	if err != nil || waiting != "" || len(got) != 1 || got[0] != want[0] {
		t.Fatalf("consumers: %+v %q %v", got, waiting, err)
	}
	// nominated (the ending pod's claim has no node selector: anywhere)
	preemptor.Status.NominatedNodeName = "n1"
	if _, waiting, _ := p.consumers(preemptor); waiting != "gpushare: ResourceClaim t/ending on node n1 is not freed yet" {
		t.Fatalf("nominated: %q", waiting)
	}
	// its last victims' claims, whatever the pod informer says yet
	preemptor.Status.NominatedNodeName = ""
	p.claimVictims.Store(preemptor.UID, &claimVictims{node: "n2", pods: map[types.UID]bool{"u-one": true}})
	got, waiting, _ = p.consumers(preemptor)
	if len(got) != 0 || !strings.Contains(waiting, "ResourceClaim t/mine of a preempted pod on node n2") {
		t.Fatalf("last victims: %+v %q", got, waiting)
	}
	// a victim's claim the resourceclaim controller reserved for nobody
	// before deallocating it: still waited for (seen on the real control
	// plane: PostFilter found no victims and the nomination was cleared)
	p.claimVictims.Store(preemptor.UID, &claimVictims{node: "n2", pods: map[types.UID]bool{},
		claims: map[types.UID]bool{"c-nobody": true}})
	if _, waiting, _ := p.consumers(preemptor); waiting != "gpushare: ResourceClaim t/nobody of a preempted pod on node n2 is not freed yet" {
		t.Fatalf("reserved for nobody: %q", waiting)
	}
	p.claimVictims.Store(preemptor.UID, &claimVictims{node: "n2", pods: map[types.UID]bool{"u-one": true}})
	// freed: the record goes
	_ = claims.Delete(&resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "mine"}})
	if _, waiting, _ := p.consumers(preemptor); waiting != "" {
		t.Fatalf("freed: %q", waiting)
	}
	if _, ok := p.claimVictims.Load(preemptor.UID); ok {
		t.Fatal("the victims' record stays")
	}
}

// While the last victims' claims are not freed, PostFilter keeps the pod
// nominated (a success naming the node: DefaultPreemption, run after an
// Unschedulable answer, would clear the nomination and end the hold):
// the node of the last victims, else the pod's nomination; none known,
// Unschedulable with the reason.
func TestKeepNomination(t *testing.T) {
	p := gibPlugin(t)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "big", UID: "u-big"}}
	why := "gpushare: ResourceClaim t/d on node n1 is not freed yet"
	if r, st := p.keepNomination(pod, why); r != nil || st.Code() != fwk.Unschedulable || st.Message() != why {
		t.Fatalf("no node: %+v %v", r, st)
	}
	pod.Status.NominatedNodeName = "n1"
	r, st := p.keepNomination(pod, why)
	if !st.IsSuccess() || r == nil || r.NominatingInfo.NominatedNodeName != "n1" ||
		r.NominatingInfo.NominatingMode != fwk.ModeOverride {
		t.Fatalf("nominated: %+v %v", r, st)
	}
	p.claimVictims.Store(pod.UID, &claimVictims{node: "n2", pods: map[types.UID]bool{"v": true}})
	if r, st := p.keepNomination(pod, why); !st.IsSuccess() || r.NominatingInfo.NominatedNodeName != "n2" {
		t.Fatalf("last victims: %+v %v", r, st)
	}
}
