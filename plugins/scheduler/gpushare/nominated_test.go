package gpushare

import (
	"context"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// nominatedPod is a pending pod of priority prio asking units GiB,
// nominated to node ("" none).
func nominatedPod(name string, units int, prio int32, node string) *v1.Pod {
	pod := gpuPod(name, units)
	pod.Spec.Priority = &prio
	pod.Status.NominatedNodeName = node
	return pod
}

// filterOn is the framework's answer for pod on node in a fresh cycle:
// PreFilter's Skip (the node fits) or Filter's.
func filterOn(p *Plugin, pod *v1.Pod, node fwk.NodeInfo) *fwk.Status {
	state := framework.NewCycleState()
	_, st := p.PreFilter(context.Background(), state, pod, []fwk.NodeInfo{node})
	if st.Code() == fwk.Skip {
		return nil // success
	}
	if !st.IsSuccess() {
		return st
	}
	return p.Filter(context.Background(), state, pod, node)
}

// The plugin holds a nominated pod's GPUs from the informer's update that
// sets status.nominatedNodeName, and ends the hold on the update that
// clears it (the framework clears it when the pod is unschedulable again
// and no preemption helps), not only at Reserve, Bind or deletion.
func TestNominationClearedEndsTheHold(t *testing.T) {
	p := gibPlugin(t)
	a := shareNode(t, p, "a", 1, 16)
	q := nominatedPod("q", 8, 0, "")
	if st := filterOn(p, q, a); !st.IsSuccess() {
		t.Fatalf("before any nomination: %v", st)
	}
	pending := nominatedPod("big", 12, 100, "")
	nominated := nominatedPod("big", 12, 100, "a")
	p.nomination(pending, nominated)
	st := filterOn(p, q, a)
	if st.Code() != fwk.Unschedulable || st.Message() != "insufficient GPU memory on any single GPU" {
		t.Fatalf("while big is nominated to a (12 of its 16 GiB held): %v", st)
	}
	// the same nomination seen again (a resync): still held
	p.nomination(nominated, nominated.DeepCopy())
	if st := filterOn(p, q, a); st.IsSuccess() {
		t.Fatal("a resync ended the hold")
	}
	// a pod of higher priority than big is not held back
	if st := filterOn(p, nominatedPod("top", 8, 1000, ""), a); !st.IsSuccess() {
		t.Fatalf("a pod above big's priority: %v", st)
	}
	// cleared: the hold ends
	p.nomination(nominated, pending)
	if st := filterOn(p, q, a); !st.IsSuccess() {
		t.Fatalf("after the nomination was cleared: %v", st)
	}
	// a pod listed with its nomination (the scheduler restarted) is held
	p.nomination(nil, nominated)
	if st := filterOn(p, q, a); st.IsSuccess() {
		t.Fatal("a pod listed nominated is not held")
	}
	// a bound pod's updates are not nominations
	bound := nominated.DeepCopy()
	bound.Spec.NodeName = "a"
	bound.Status.NominatedNodeName = ""
	p.nomination(nominated, bound)
	if st := filterOn(p, q, a); st.IsSuccess() {
		t.Fatal("an update of a bound pod was taken as the nomination cleared")
	}
}

// Nominations set and cleared from the informer's goroutine while cycles
// filter from others: the core's lock keeps the hold consistent (run under
// -race by build.sh --test).
func TestNominationsBesideCycles(t *testing.T) {
	p := gibPlugin(t)
	a := shareNode(t, p, "a", 1, 16)
	pending := nominatedPod("big", 12, 100, "")
	nominated := nominatedPod("big", 12, 100, "a")
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			p.nomination(pending, nominated)
			p.nomination(nominated, pending)
		}
	}()
	go func() {
		defer wg.Done()
		q := nominatedPod("q", 8, 0, "")
		for i := 0; i < 200; i++ {
			if st := filterOn(p, q, a); !st.IsSuccess() && st.Code() != fwk.Unschedulable {
				t.Errorf("Filter: %v", st)
				return
			}
		}
	}()
	wg.Wait()
	// the last update cleared it
	if st := filterOn(p, nominatedPod("q", 8, 0, ""), a); !st.IsSuccess() {
		t.Fatalf("after the last clearing: %v", st)
	}
}

// The queueing hint of a pod deletion answers Queue after taking the pod
// out of the core: the pod it requeues is retried against a ledger
// without it, whichever of the queue and the informer's handler gets the
// deletion first. A pod the event names that is still in the informer's
// cache (an assumed pod forgotten, a nomination changed: kube-scheduler
// raises the same event) is left in the core.
func TestPodDeletedHintFreesTheGPUsFirst(t *testing.T) {
	p := gibPlugin(t)
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	p.h = informerHandle{f: f} // the deletion hint reads the pod informer's cache
	a := shareNode(t, p, "a", 1, 16)
	gone := gpuPod("d8", 12)
	gone.Spec.NodeName = "a"
	gone.Annotations = map[string]string{"scheduler.framework.gpushare.allocation": `{"0":{"0":12}}`}
	p.pod(gone)
	q := nominatedPod("q", 8, 0, "")
	if st := filterOn(p, q, a); st.IsSuccess() {
		t.Fatal("q fits beside d8's 12 GiB")
	}
	// still in the cache: not gone, kept
	if err := f.Core().V1().Pods().Informer().GetIndexer().Add(gone); err != nil {
		t.Fatal(err)
	}
	if h, err := p.podDeleted(klog.Background(), q, gone, nil); err != nil || h != fwk.Queue {
		t.Fatalf("hint: %v %v", h, err)
	}
	if st := filterOn(p, q, a); st.IsSuccess() {
		t.Fatal("a pod still in the informer's cache was taken out of the core")
	}
	// gone from the cache (its tombstone in the event): out of the core
	if err := f.Core().V1().Pods().Informer().GetIndexer().Delete(gone); err != nil {
		t.Fatal(err)
	}
	h, err := p.podDeleted(klog.Background(), q, cache.DeletedFinalStateUnknown{Key: "default/d8", Obj: gone}, nil)
	if err != nil || h != fwk.Queue {
		t.Fatalf("hint: %v %v", h, err)
	}
	if st := filterOn(p, q, a); !st.IsSuccess() {
		t.Fatalf("after the hint: %v", st)
	}
	p.forget(gone) // the informer's handler, later: nothing left to do
	if st := filterOn(p, q, a); !st.IsSuccess() {
		t.Fatalf("after the handler: %v", st)
	}
}
