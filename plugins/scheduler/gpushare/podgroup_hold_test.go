package gpushare

import (
	"context"
	"fmt"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// groupHandle is the part of the framework's Handle PodGroupPostFilter
// uses: the snapshot's nodes, the pod informer's cache, the clientset and
// the event recorder (evict).
type groupHandle struct {
	fwk.Handle
	nodes []fwk.NodeInfo
	f     informers.SharedInformerFactory
	cs    *fake.Clientset
	rec   *events.FakeRecorder
}

type nodeLister struct {
	fwk.NodeInfoLister
	nodes []fwk.NodeInfo
}

func (l nodeLister) List() ([]fwk.NodeInfo, error) { return l.nodes, nil }

type sharedLister struct {
	fwk.SharedLister
	nodes []fwk.NodeInfo
}

func (l sharedLister) NodeInfos() fwk.NodeInfoLister { return nodeLister{nodes: l.nodes} }

func (h groupHandle) SnapshotSharedLister() fwk.SharedLister                 { return sharedLister{nodes: h.nodes} }
func (h groupHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.f }
func (h groupHandle) ClientSet() clientset.Interface                         { return h.cs }
func (h groupHandle) EventRecorder() events.EventRecorderLogger              { return h.rec }
func (h groupHandle) GetWaitingPod(types.UID) fwk.WaitingPod                 { return nil }

// boundPod is pod name bound to node a with units GiB on GPU gpu, of
// priority prio, as its annotations say.
func boundPod(name string, units, gpu int, prio int32) *v1.Pod {
	pod := gpuPod(name, units)
	pod.Spec.NodeName = "a"
	pod.Spec.Priority = &prio
	pod.Annotations = map[string]string{"scheduler.framework.gpushare.allocation": fmt.Sprintf(`{"0":{"%d":%d}}`, gpu, units)}
	return pod
}

// groupCluster: node a of four 16 GiB GPUs, a 1 GiB pod of low priority
// on GPUs 0 and 1 (v-a, v-b), 11 GiB of top priority on GPUs 2 and 3:
// four 8 GiB members of the pod group g (priority 1000) fit only once
// v-a and v-b go. The victims are in the informer's cache and the
// clientset.
func groupCluster(t *testing.T) (*Plugin, groupHandle, fwk.NodeInfo, []*v1.Pod) {
	p := gibPlugin(t)
	a := shareNode(t, p, "a", 4, 64)
	pods := []*v1.Pod{boundPod("v-a", 1, 0, 10), boundPod("v-b", 1, 1, 10),
		boundPod("t-c", 11, 2, 2000), boundPod("t-d", 11, 3, 2000)}
	objs := make([]runtime.Object, len(pods))
	for i, pod := range pods {
		p.pod(pod)
		objs[i] = pod.DeepCopy()
	}
	h := groupHandle{nodes: []fwk.NodeInfo{a}, cs: fake.NewClientset(objs...), rec: events.NewFakeRecorder(16)}
	h.f = informers.NewSharedInformerFactory(h.cs, 0)
	for _, pod := range pods {
		if err := h.f.Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
			t.Fatal(err)
		}
	}
	p.h = h
	members := make([]*v1.Pod, 4)
	for i := range members {
		members[i] = nominatedPod(fmt.Sprintf("s-%d", i), 8, 1000, "")
	}
	return p, h, a, members
}

// The pod group's preemption nominates every member to the node of the
// slot the core chose for it and the core holds each slot: while the
// victims terminate and after they are gone, a pod of the group's
// priority that fits on node a by itself is refused there with the
// hold's reason; kube-scheduler's nominations of the members keep the
// slots as they are; a member bound frees its slot to nobody else.
func TestPodGroupPostFilterNominatesAndHoldsEveryMember(t *testing.T) {
	p, h, a, members := groupCluster(t)
	q := nominatedPod("q", 8, 1000, "")
	if st := filterOn(p, q, a); !st.IsSuccess() {
		t.Fatalf("before the preemption q fits: %v", st)
	}
	res, st := p.PodGroupPostFilter(context.Background(), nil, pgInfo{name: "g", pods: members}, nil)
	if !st.IsSuccess() || res == nil {
		t.Fatalf("PodGroupPostFilter: %v %v", res, st)
	}
	if st.Message() != "gpushare: preempting 2 pods for pod group default/g" {
		t.Fatalf("status: %q", st.Message())
	}
	if len(res.NominatingInfos) != 4 {
		t.Fatalf("nominations: %v", res.NominatingInfos)
	}
	for _, m := range members {
		ni := res.NominatingInfos[types.NamespacedName{Namespace: "default", Name: m.Name}]
		if ni == nil || ni.NominatedNodeName != "a" || ni.NominatingMode != fwk.ModeOverride {
			t.Fatalf("%s nominated: %+v", m.Name, ni)
		}
	}
	deleted := map[string]bool{}
	for _, act := range h.cs.Actions() {
		if act.GetVerb() == "delete" {
			deleted[act.(interface{ GetName() string }).GetName()] = true
		}
	}
	if len(deleted) != 2 || !deleted["v-a"] || !deleted["v-b"] {
		t.Fatalf("deleted: %v", deleted)
	}
	held := "GPUs held for pod default/s-0, nominated here by preemption"
	if st := filterOn(p, q, a); st.Code() != fwk.Unschedulable || st.Message() != held {
		t.Fatalf("q while the victims terminate: %v", st)
	}
	// kube-scheduler nominates the members (their status updates reach the
	// informer): the slots stay exact
	for _, m := range members {
		p.nomination(m, nominatedPod(m.Name, 8, 1000, "a"))
	}
	p.forget(boundPod("v-a", 1, 0, 10))
	p.forget(boundPod("v-b", 1, 1, 10))
	if st := filterOn(p, q, a); st.Code() != fwk.Unschedulable || st.Message() != held {
		t.Fatalf("q after the victims are gone: %v", st)
	}
	// the group's cycle: every member reserved on its own slot and bound
	for i, m := range members {
		state := framework.NewCycleState()
		_, st := p.PreFilter(context.Background(), state, m, []fwk.NodeInfo{a})
		if st.Code() == fwk.Success {
			st = p.Filter(context.Background(), state, m, a)
		}
		if !st.IsSuccess() && st.Code() != fwk.Skip {
			t.Fatalf("member %d's PreFilter or Filter: %v", i, st)
		}
		if st := p.Reserve(context.Background(), state, m, "a"); !st.IsSuccess() {
			t.Fatalf("member %d's Reserve: %v", i, st)
		}
		p.core.Confirm(string(m.UID))
	}
	if st := filterOn(p, q, a); st.Code() != fwk.Unschedulable || st.Message() != "insufficient GPU memory on any single GPU" {
		t.Fatalf("q with the members bound: %v", st)
	}
}

// Nothing to free for every member: Unschedulable with gpushare's reason,
// nothing evicted, nobody nominated, nothing held.
func TestPodGroupPostFilterWithoutVictimsHoldsNothing(t *testing.T) {
	p, h, a, _ := groupCluster(t)
	big := make([]*v1.Pod, 4)
	for i := range big {
		big[i] = nominatedPod(fmt.Sprintf("b-%d", i), 16, 1000, "")
	}
	res, st := p.PodGroupPostFilter(context.Background(), nil, pgInfo{name: "g", pods: big}, nil)
	if res != nil || st.Code() != fwk.Unschedulable ||
		st.Message() != "gpushare: lower-priority pods cannot free room for 4 members of pod group default/g; none is evicted" {
		t.Fatalf("PodGroupPostFilter: %v %v", res, st)
	}
	for _, act := range h.cs.Actions() {
		if act.GetVerb() != "get" && act.GetVerb() != "list" && act.GetVerb() != "watch" {
			t.Fatalf("an action: %v", act)
		}
	}
	if st := filterOn(p, nominatedPod("q", 8, 1000, ""), a); !st.IsSuccess() {
		t.Fatalf("q: %v", st)
	}
}

// Pod-group preemptions and filters of other pods from several goroutines
// (run under -race by build.sh --test): the core's lock keeps the holds
// consistent; a filter sees the slots held or not, never half of them.
func TestPodGroupHoldsBesideCycles(t *testing.T) {
	p, _, a, members := groupCluster(t)
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := nominatedPod("q", 8, 1000, "")
			for i := 0; i < 100; i++ {
				if st := filterOn(p, q, a); !st.IsSuccess() && st.Code() != fwk.Unschedulable {
					t.Errorf("Filter: %v", st)
					return
				}
			}
		}()
	}
	if _, st := p.PodGroupPostFilter(context.Background(), nil, pgInfo{name: "g", pods: members}, nil); !st.IsSuccess() {
		t.Errorf("PodGroupPostFilter: %v", st)
	}
	wg.Wait()
	if st := filterOn(p, nominatedPod("q", 8, 1000, ""), a); st.Code() != fwk.Unschedulable {
		t.Fatalf("q after the preemption: %v", st)
	}
}
