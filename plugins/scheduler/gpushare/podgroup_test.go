package gpushare

import (
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pod of a PodGroup reaches the core without gpushare's gang labels when
// the GenericWorkload gate is on (the pod-group cycle is its gang), and
// with them when it is off or the pod names no group; the pod itself is
// never changed.
func TestPodGroupMembersLeaveTheirGangToThePodGroup(t *testing.T) {
	group := "infer"
	mk := func(inGroup bool) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w-0", Namespace: "ns", UID: "u",
			Labels: map[string]string{labelGangJob: "infer", labelGangReplicas: "4", "job": "infer"}}}
		if inGroup {
			p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
		}
		return p
	}
	labelsOf := func(b []byte) map[string]string {
		var p v1.Pod
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		return p.Labels
	}
	defer workloads.Store(workloads.Load())
	for _, c := range []struct {
		gate, inGroup, gang bool
	}{{true, true, false}, {true, false, true}, {false, true, true}, {false, false, true}} {
		workloads.Store(c.gate)
		pod := mk(c.inGroup)
		for name, enc := range map[string]func(*v1.Pod) ([]byte, error){"cycleJSON": cycleJSON, "podJSON": podJSON} {
			b, err := enc(pod)
			if err != nil {
				t.Fatal(err)
			}
			l := labelsOf(b)
			_, job := l[labelGangJob]
			_, replicas := l[labelGangReplicas]
			if job != c.gang || replicas != c.gang || l["job"] != "infer" {
				t.Fatalf("%s gate=%v inGroup=%v: labels %v", name, c.gate, c.inGroup, l)
			}
		}
		if len(pod.Labels) != 3 {
			t.Fatalf("the pod was changed: %v", pod.Labels)
		}
	}
}
