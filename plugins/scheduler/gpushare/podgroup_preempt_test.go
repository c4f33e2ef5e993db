package gpushare

import (
	"context"
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	fwk "k8s.io/kube-scheduler/framework"
)

// pgInfo is a pod group as the pod-group cycle hands it to PodGroupPostFilter.
type pgInfo struct {
	fwk.PodGroupInfo
	name  string
	pods  []*v1.Pod
	group *schedulingv1beta1.PodGroup
}

func (g pgInfo) GetUnscheduledPods() []*v1.Pod            { return g.pods }
func (g pgInfo) GetName() string                          { return g.name }
func (g pgInfo) GetNamespace() string                     { return "default" }
func (g pgInfo) GetPodGroup() *schedulingv1beta1.PodGroup { return g.group }

// The member the core is asked about carries gpushare's gang labels — the
// group's name, the replicas it needs — even with the gate on and the pod
// naming its group (whose own labels the core never sees), and the member
// itself is not changed.
func TestGroupPodIsAJobOfTheMembersNeeded(t *testing.T) {
	defer workloads.Store(workloads.Load())
	workloads.Store(true)
	group := "serve"
	pod := gpuPod("s-0", 6)
	pod.Labels = map[string]string{labelGangJob: "other", "app": "serve"}
	pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
	b, err := groupPod(pgInfo{name: group}, pod, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got v1.Pod
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{labelGangJob: "podgroup.serve", labelGangReplicas: "3", "app": "serve"}
	if len(got.Labels) != len(want) {
		t.Fatalf("labels %v, want %v", got.Labels, want)
	}
	for k, v := range want {
		if got.Labels[k] != v {
			t.Fatalf("labels %v, want %v", got.Labels, want)
		}
	}
	if pod.Labels[labelGangJob] != "other" || len(pod.Labels) != 2 || pod.Spec.SchedulingGroup == nil {
		t.Fatalf("the member was changed: %v", pod)
	}
}

// A group whose members ask for no GPU, or for different GPUs, is left to
// the next plugin (DefaultPreemption): Unschedulable, nothing asked of the
// core or the apiserver (the plugin has neither here).
func TestPodGroupPostFilterLeavesGroupsItCannotSlot(t *testing.T) {
	p := &Plugin{}
	plain := gpuPod("a", 1)
	plain.Spec.Containers[0].Resources.Limits = nil
	for name, pods := range map[string][]*v1.Pod{
		"no GPU":           {plain},
		"different asks":   {gpuPod("a", 4), gpuPod("b", 6)},
		"no member queued": nil,
	} {
		res, st := p.PodGroupPostFilter(context.Background(), nil, pgInfo{name: "g", pods: pods}, nil)
		if res != nil || st.Code() != fwk.Unschedulable {
			t.Fatalf("%s: %v %v", name, res, st)
		}
	}
	if gpuAsk(gpuPod("a", 4)) != gpuAsk(gpuPod("b", 4)) || gpuAsk(gpuPod("a", 4)) == "" {
		t.Fatal("equal asks differ")
	}
}
