package gpushare

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"gpushare.io/scheduler/shim"
)

// BenchmarkFilterScore5000 is the per-node part of a cycle as kube-scheduler
// drives it: Filter and Score once per node of 5,000 (a third refused, so
// Filter runs), after one PreFilter. Per op: one node's Filter + Score.
func BenchmarkFilterScore5000(b *testing.B) {
	s, err := shim.New([]byte(`{"gpuMemoryUnit":"1GiB"}`), nil, "", "", false)
	if err != nil {
		b.Fatal(err)
	}
	p := &Plugin{core: s}
	nodes := make([]fwk.NodeInfo, 5000)
	for i := range nodes {
		units := 32
		if i%3 == 0 {
			units = 8
		}
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%04d", i),
			Labels: map[string]string{"ack.node.gpu.schedule": "share"}},
			Status: v1.NodeStatus{Capacity: v1.ResourceList{
				"aliyun.com/gpu-mem":   resource.MustParse(fmt.Sprint(units)),
				"aliyun.com/gpu-count": resource.MustParse(fmt.Sprint(units/16 + units%16/8)),
			}}}
		raw, err := json.Marshal(n)
		if err != nil {
			b.Fatal(err)
		}
		p.core.Node(raw)
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		nodes[i] = ni
	}
	ctx := context.Background()
	state := framework.NewCycleState()
	pod := gpuPod("p", 10)
	if _, st := p.PreFilter(ctx, state, pod, nodes); !st.IsSuccess() {
		b.Fatalf("PreFilter: %v", st)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := nodes[i%len(nodes)]
		p.Filter(ctx, state, pod, n)
		p.Score(ctx, state, pod, n)
	}
}
