package gpushare

import (
	"context"
	"fmt"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// BenchmarkFilterScore5000 is the per-node part of a cycle as kube-scheduler
// drives it: Filter and Score once per node of 5,000 (a third refused, so
// Filter runs), after one PreFilter. Per op: one node's Filter + Score.
func BenchmarkFilterScore5000(b *testing.B) {
	p := gibPlugin(b)
	nodes := make([]fwk.NodeInfo, 5000)
	for i := range nodes {
		units := 32
		if i%3 == 0 {
			units = 8
		}
		nodes[i] = shareNode(b, p, fmt.Sprintf("n%04d", i), units/16+units%16/8, units)
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
