package gpushare

import (
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"
)

// Every object of the list is found at its position; a copy of one, and
// an object not in the list, are not; an empty list finds nothing.
func TestPtrIndex(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 100, 5000} {
		infos := make([]fwk.NodeInfo, n)
		for i := range infos {
			infos[i] = schedfw.NewNodeInfo()
		}
		ix := newPtrIndex(infos)
		for i, info := range infos {
			if pos, ok := ix.get(info); !ok || pos != i {
				t.Fatalf("n=%d: node %d at %d, %v", n, i, pos, ok)
			}
		}
		if _, ok := ix.get(schedfw.NewNodeInfo()); ok {
			t.Fatalf("n=%d: an object not listed was found", n)
		}
		if n > 0 {
			if _, ok := ix.get(infos[0].(*schedfw.NodeInfo).Snapshot()); ok {
				t.Fatalf("n=%d: a copy was found", n)
			}
		}
	}
}
