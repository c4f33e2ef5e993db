package shim

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func node(name string, gpus, units int) []byte {
	b, _ := json.Marshal(map[string]interface{}{
		"metadata": map[string]interface{}{"name": name,
			"labels": map[string]string{"ack.node.gpu.schedule": "share"}},
		"status": map[string]interface{}{"capacity": map[string]string{
			"aliyun.com/gpu-mem": fmt.Sprint(units), "aliyun.com/gpu-count": fmt.Sprint(gpus)}},
	})
	return b
}

func pod(name string, units int) []byte {
	b, _ := json.Marshal(map[string]interface{}{
		"metadata": map[string]interface{}{"name": name, "namespace": "default", "uid": "uid-" + name},
		"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{
			"name": "c", "resources": map[string]interface{}{
				"limits": map[string]string{"aliyun.com/gpu-mem": fmt.Sprint(units)}}}}},
	})
	return b
}

// The shim's answers are the core's: filter reasons, scores, reserve's
// annotations, the ledger, and bad input refused with a reason.
func TestVerbs(t *testing.T) {
	s, err := New([]byte(`{"gpuMemoryUnit":"1GiB"}`))
	if err != nil {
		t.Fatal(err)
	}
	s.Node(node("a", 2, 32))
	s.Node(node("b", 1, 8))
	rc, vs := s.Filter(pod("p", 10), []string{"a", "b", "zz"}, 1, false)
	if rc != OK || vs[0].Code != OK || vs[1].Code != Unschedulable || vs[2].Code != Unschedulable {
		t.Fatalf("filter: %d %+v", rc, vs)
	}
	if vs[1].Reason != "insufficient GPU memory on any single GPU" {
		t.Fatalf("reason %q", vs[1].Reason)
	}
	rc, vs = s.Filter(pod("p", 10), []string{"a"}, 1, true)
	if rc != OK || vs[0].Score <= 0 || vs[0].Score > 10 {
		t.Fatalf("prioritize: %d %+v", rc, vs)
	}
	rc, annots, reason := s.Reserve(pod("p", 10), "a", 1)
	if rc != OK || !strings.Contains(annots, `"scheduler.framework.gpushare.allocation":"{\"0\":{\"0\":10}}"`) {
		t.Fatalf("reserve: %d %q %q", rc, annots, reason)
	}
	s.Confirm("uid-p")
	led, ok := s.Ledger()
	if !ok || !strings.Contains(led, `"usedMiB":10240`) {
		t.Fatalf("ledger: %s", led)
	}
	if rc, _ := s.Filter([]byte("{"), []string{"a"}, 1, false); rc != Error {
		t.Fatalf("bad pod: %d", rc)
	}
	if rc, _ := s.Filter([]byte(`{"metadata":{"name":"x"}}`), []string{"a"}, 1, false); rc != Skip {
		t.Fatalf("unmanaged pod: %d", rc)
	}
	if _, err := New([]byte(`{"gpuMemoryUnit":"2GiB"}`)); err == nil {
		t.Fatal("a bad unit was accepted")
	}
}

// Many goroutines at once, as kube-scheduler calls the plugin (scheduling
// cycle, binding goroutines, informers): run with -race in the test
// command. No GPU is over-committed: each reserve that succeeds fits.
func TestConcurrent(t *testing.T) {
	s, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for i := 0; i < 8; i++ {
		n := fmt.Sprintf("n%d", i)
		names = append(names, n)
		s.Node(node(n, 2, 32))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	reserved := 0
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				name := fmt.Sprintf("p-%d-%d", g, i)
				p := pod(name, 4)
				_, vs := s.Filter(p, names, 1, true)
				for j, v := range vs {
					if v.Code != OK {
						continue
					}
					if rc, _, _ := s.Reserve(p, names[j], 1); rc == OK {
						if i%3 == 0 {
							s.Unreserve(p, names[j])
						} else {
							s.Confirm("uid-" + name)
							mu.Lock()
							reserved++
							mu.Unlock()
						}
					}
					break
				}
				if i%10 == 0 {
					s.Node(node(names[g], 2, 32))
					s.Tick(int64(i))
					_, _ = s.Ledger()
				}
			}
		}(g)
	}
	wg.Wait()
	// 8 nodes x 2 GPUs x 16 GiB = 64 pods of 4 GiB at most
	if reserved > 64 || reserved == 0 {
		t.Fatalf("reserved %d pods of 4 GiB on 256 GiB", reserved)
	}
}
