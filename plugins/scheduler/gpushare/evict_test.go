package gpushare

import (
	"context"
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	fwk "k8s.io/kube-scheduler/framework"
)

// evictHandle is the part of the framework's Handle that evict uses.
type evictHandle struct {
	fwk.Handle
	cs  *fake.Clientset
	rec *events.FakeRecorder
}

func (h evictHandle) ClientSet() clientset.Interface            { return h.cs }
func (h evictHandle) EventRecorder() events.EventRecorderLogger { return h.rec }
func (h evictHandle) GetWaitingPod(types.UID) fwk.WaitingPod    { return nil }

// A victim gets DefaultPreemption's DisruptionTarget condition through its
// status, then is deleted with its UID as precondition, then a Normal
// Event Preempted names the preemptor; one already gone is no error.
func TestEvictSetsDisruptionTargetThenDeletes(t *testing.T) {
	victim := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "low", UID: "u-low", Generation: 3},
		Spec: v1.PodSpec{NodeName: "n1"}, Status: v1.PodStatus{Phase: v1.PodRunning}}
	preemptor := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "high", UID: "u-high"},
		Spec: v1.PodSpec{SchedulerName: "gpushare-scheduler"}}
	h := evictHandle{cs: fake.NewClientset(victim.DeepCopy()), rec: events.NewFakeRecorder(4)}
	p := &Plugin{h: h}
	if err := p.evict(context.Background(), preemptor, victim, "n1"); err != nil {
		t.Fatal(err)
	}
	acts := h.cs.Actions()
	if len(acts) != 2 || acts[0].GetVerb() != "patch" || acts[0].GetSubresource() != "status" ||
		acts[1].GetVerb() != "delete" {
		t.Fatalf("actions: %v", acts)
	}
	var patched struct {
		Status struct{ Conditions []v1.PodCondition }
	}
	if err := json.Unmarshal(acts[0].(k8stesting.PatchAction).GetPatch(), &patched); err != nil {
		t.Fatal(err)
	}
	want := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, ObservedGeneration: 3,
		Reason:  v1.PodReasonPreemptionByScheduler,
		Message: "gpushare-scheduler: preempting to accommodate a higher priority pod"}
	if len(patched.Status.Conditions) != 1 {
		t.Fatalf("patch: %s", acts[0].(k8stesting.PatchAction).GetPatch())
	}
	got := patched.Status.Conditions[0]
	got.LastTransitionTime = metav1.Time{}
	if got != want {
		t.Fatalf("condition: %+v\nwant %+v", got, want)
	}
	if pre := acts[1].(k8stesting.DeleteAction).GetDeleteOptions().Preconditions; pre == nil || *pre.UID != "u-low" {
		t.Fatalf("delete preconditions: %+v", pre)
	}
	if _, err := h.cs.CoreV1().Pods("ns").Get(context.Background(), "low", metav1.GetOptions{}); err == nil {
		t.Fatal("victim not deleted")
	}
	if ev := <-h.rec.Events; ev != "Normal Preempted Preempted by pod u-high on node n1" {
		t.Fatalf("event: %q", ev)
	}
	// gone in between: nothing to do, no error
	if err := p.evict(context.Background(), preemptor, victim, "n1"); err != nil {
		t.Fatalf("evict of a victim gone: %v", err)
	}
}
