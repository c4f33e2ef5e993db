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

// gibShim is a service counting GiB, without a ConfigMap.
func gibShim(t *testing.T) *Shim {
	s, err := New([]byte(`{"gpuMemoryUnit":"1GiB"}`), nil, "kube-system", "gpushare-config", false)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The shim's answers are the core's: filter reasons, scores, reserve's
// annotations, the ledger, and bad input refused with a reason.
func TestVerbs(t *testing.T) {
	s := gibShim(t)
	s.Node(node("a", 2, 32))
	s.Node(node("b", 1, 8))
	rc, vs := s.Filter(pod("p", 10), []string{"a", "b", "zz"}, nil, 1, false)
	if rc != OK || vs.Code(0) != OK || vs.Code(1) != Unschedulable || vs.Code(2) != Unschedulable {
		t.Fatalf("filter: %d %+v", rc, vs)
	}
	if vs.Reason(0) != "" || vs.Reason(1) != "insufficient GPU memory on any single GPU" ||
		vs.Reason(2) != "node unknown to gpushare" || vs.AllPass() {
		t.Fatalf("reasons %q %q %q", vs.Reason(0), vs.Reason(1), vs.Reason(2))
	}
	if rc, vs = s.Filter(pod("p", 10), []string{"a"}, nil, 1, false); rc != OK || !vs.AllPass() ||
		vs.Len() != 1 || vs.Code(0) != OK {
		t.Fatalf("filter over a: %d %d", rc, vs.Code(0))
	}
	rc, vs = s.Filter(pod("p", 10), []string{"a"}, nil, 1, true)
	// binpack: 10 of a 16 GiB GPU, round(6.25) = 6 on the extender's scale,
	// 60 on the framework's
	if rc != OK || vs.Score(0) != 60 {
		t.Fatalf("prioritize: %d %+v", rc, vs)
	}
	rc, annots, reason := s.Reserve(pod("p", 10), "a", 1)
	// every annotation of docs/contract.md §4, key for key (the pairs the C
	// side hands over, decoded into the Binding's map)
	want := map[string]string{
		"ALIYUN_COM_GPU_MEM_ASSIGNED": "false", "ALIYUN_COM_GPU_MEM_ASSUME_TIME": "1",
		"ALIYUN_COM_GPU_MEM_DEV": "16", "ALIYUN_COM_GPU_MEM_IDX": "0", "ALIYUN_COM_GPU_MEM_POD": "10",
		"gpushare.alibabacloud.com/device-resource": `{"0":16,"1":16}`, "gpushare.io/unit-mib": "1024",
		"scheduler.framework.gpushare.allocation": `{"0":{"0":10}}`,
		"scheduler.framework.gpushare.assigned":   "false", "scheduler.framework.gpushare.assume-time": "1",
	}
	if rc != OK || len(annots) != len(want) {
		t.Fatalf("reserve: %d %q %q", rc, annots, reason)
	}
	for k, v := range want {
		if annots[k] != v {
			t.Fatalf("reserve: %s = %q, want %q (all: %q)", k, annots[k], v, annots)
		}
	}
	s.Confirm("uid-p")
	led, ok := s.Ledger()
	if !ok || !strings.Contains(led, `"usedMiB":10240`) {
		t.Fatalf("ledger: %s", led)
	}
	if rc, _ := s.Filter([]byte("{"), []string{"a"}, nil, 1, false); rc != Error {
		t.Fatalf("bad pod: %d", rc)
	}
	if rc, _ := s.Filter([]byte(`{"metadata":{"name":"x"}}`), []string{"a"}, nil, 1, false); rc != Skip {
		t.Fatalf("unmanaged pod: %d", rc)
	}
	if _, err := New([]byte(`{"gpuMemoryUnit":"2GiB"}`), nil, "kube-system", "gpushare-config", false); err == nil {
		t.Fatal("a bad unit was accepted")
	}
}

// Filter keeps its C arrays between calls: the same list again, the same
// names in another order, a longer list and a shorter one each get the
// answers of their own nodes; a reason repeated from node to node is the
// same text, an empty one stays empty.
func TestFilterKeepsNoStaleList(t *testing.T) {
	s := gibShim(t)
	s.Node(node("big", 1, 32))
	s.Node(node("small1", 1, 8))
	s.Node(node("small2", 1, 8))
	want := map[string]int{"big": OK, "small1": Unschedulable, "small2": Unschedulable,
		"none": Unschedulable}
	for _, names := range [][]string{
		{"big", "small1", "small2"},
		{"big", "small1", "small2"},
		{"small2", "small1", "big"},
		{"small1", "none", "small2", "big", "big"},
		{"big"},
		{},
		{"small1"},
	} {
		rc, vs := s.Filter(pod("p", 10), names, nil, 1, true)
		if rc != OK || vs.Len() != len(names) {
			t.Fatalf("%v: %d %+v", names, rc, vs)
		}
		for i, n := range names {
			if vs.Code(i) != want[n] {
				t.Fatalf("%v: node %s got %d %q %d", names, n, vs.Code(i), vs.Reason(i), vs.Score(i))
			}
			if want[n] == OK && (vs.Reason(i) != "" || vs.Score(i) != 30) { // 10 of 32 GiB: round(3.1) × 10
				t.Fatalf("%v: node %s got %d %q %d", names, n, vs.Code(i), vs.Reason(i), vs.Score(i))
			}
			if n == "small1" || n == "small2" {
				if vs.Reason(i) != "insufficient GPU memory on any single GPU" {
					t.Fatalf("%v: node %s reason %q", names, n, vs.Reason(i))
				}
			}
		}
	}
}

// Over the kept list, a pod signed as the last one is evaluated again only
// on the nodes whose ledger changed (shim.h gs_shim_set_list), and sees
// their new state: a reservation, a node's new capacity, a pod gone; a
// node that comes has every node evaluated.
func TestFilterMemo(t *testing.T) {
	s := gibShim(t)
	for _, n := range []string{"a", "b", "c"} {
		s.Node(node(n, 1, 16))
	}
	names := []string{"a", "b", "c", "d"}
	step := func(p string, evaluated int, want ...int) {
		t.Helper()
		rc, vs := s.Filter(pod(p, 16), names, nil, 1, true)
		if rc != OK || s.Evaluated() != evaluated {
			t.Fatalf("%s: rc %d, %d nodes evaluated, want %d", p, rc, s.Evaluated(), evaluated)
		}
		for i, w := range want {
			reason := ""
			if w != OK {
				reason = "insufficient GPU memory on any single GPU"
				if names[i] == "d" && w != OK {
					reason = "node unknown to gpushare"
				}
			}
			if vs.Code(i) != w || vs.Reason(i) != reason {
				t.Fatalf("%s: node %s: %d %q, want %d %q", p, names[i], vs.Code(i), vs.Reason(i), w, reason)
			}
		}
	}
	step("p1", 4, OK, OK, OK, Unschedulable)
	if rc, _, reason := s.Reserve(pod("p1", 16), "b", 1); rc != OK {
		t.Fatalf("reserve: %d %s", rc, reason)
	}
	step("p2", 1, OK, Unschedulable, OK, Unschedulable)
	step("p3", 0, OK, Unschedulable, OK, Unschedulable)
	s.Node(node("a", 1, 8)) // a's GPU now has 8 GiB
	step("p4", 1, Unschedulable, Unschedulable, OK, Unschedulable)
	// a pod gpushare does not manage writes no verdicts (its skip clears
	// the first reason slot, a's): the next answers are all written again
	if rc, _ := s.Filter(cpuPod("cpu", "1"), names, nil, 1, true); rc != Skip {
		t.Fatalf("cpu pod: %d", rc)
	}
	step("p4b", 0, Unschedulable, Unschedulable, OK, Unschedulable)
	s.PodDelete("uid-p1")
	step("p5", 1, Unschedulable, OK, OK, Unschedulable)
	s.Node(node("d", 1, 16))
	step("p6", 4, Unschedulable, OK, OK, OK)
	if rc, vs := s.Filter(pod("p7", 4), names, nil, 1, true); rc != OK || s.Evaluated() != 4 ||
		vs.Code(0) != OK {
		t.Fatalf("another shape: %d, %d evaluated", rc, s.Evaluated())
	}
}

// Many goroutines at once, as kube-scheduler calls the plugin (scheduling
// cycle, binding goroutines, informers): run with -race in the test
// command. No GPU is over-committed: each reserve that succeeds fits.
func TestConcurrent(t *testing.T) {
	s, err := New(nil, nil, "kube-system", "gpushare-config", false)
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
				_, vs := s.Filter(p, names, nil, 1, true)
				for j := 0; j < vs.Len(); j++ {
					if vs.Code(j) != OK {
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

func configMap(ns, name string, data map[string]string) []byte {
	b, _ := json.Marshal(map[string]interface{}{
		"metadata": map[string]interface{}{"name": name, "namespace": ns}, "data": data})
	return b
}

// The ConfigMap read at start-up under the args (args win key by key); its
// later unit change is pendingUnit in the ledger and the metrics; a bad
// value names the ConfigMap and the key.
func TestConfig(t *testing.T) {
	s, err := New([]byte(`{"nodePolicy":"spread"}`),
		[]byte(`{"gpuMemoryUnit":"128MiB","nodePolicy":"binpack"}`), "kube-system", "gpushare-config", false)
	if err != nil {
		t.Fatal(err)
	}
	s.Node(node("a", 1, 64)) // 64 × 128 MiB
	led, _ := s.Ledger()
	if !strings.Contains(led, `"unit":"128MiB"`) || !strings.Contains(led, `"totalMiB":8192`) {
		t.Fatalf("the ConfigMap's unit is not in force: %s", led)
	}
	b, _ := New(nil, []byte(`{"gpuMemoryUnit":"128MiB","nodePolicy":"binpack"}`), "kube-system", "gpushare-config", false)
	b.Node(node("a", 1, 64))
	s.Reserve(pod("r", 32), "a", 1)
	b.Reserve(pod("r", 32), "a", 1)
	_, spread := s.Filter(pod("p", 8), []string{"a"}, nil, 1, true)
	_, binpack := b.Filter(pod("p", 8), []string{"a"}, nil, 1, true)
	if spread.Score(0) >= binpack.Score(0) {
		t.Fatalf("args' spread not in force over the ConfigMap's binpack: %+v %+v", spread, binpack)
	}
	if strings.Contains(led, "pendingUnit") {
		t.Fatalf("pendingUnit before any change: %s", led)
	}
	s.ConfigMap(configMap("kube-system", "gpushare-config", map[string]string{"gpuMemoryUnit": "1GiB"}), false)
	s.ConfigMap(configMap("default", "gpushare-config", map[string]string{"gpuMemoryUnit": "128MiB"}), false)
	led, _ = s.Ledger()
	if !strings.Contains(led, `"pendingUnit":"1GiB"`) {
		t.Fatalf("no pendingUnit: %s", led)
	}
	m, ok := s.Metrics()
	if !ok || !strings.Contains(m, "gpushare_pending_unit_mib 1024\n") ||
		!strings.Contains(m, `gpushare_gpu_memory_total_mib{node="a",gpu="0"} 8192`) {
		t.Fatalf("metrics: %s", m)
	}
	s.ConfigMap(configMap("kube-system", "gpushare-config", nil), true)
	if led, _ = s.Ledger(); strings.Contains(led, "pendingUnit") {
		t.Fatalf("pendingUnit after the ConfigMap left: %s", led)
	}
	_, err = New(nil, []byte(`{"nodePolicy":"bogus"}`), "kube-system", "gpushare-config", false)
	if err == nil || !strings.Contains(err.Error(), "ConfigMap kube-system/gpushare-config") ||
		!strings.Contains(err.Error(), "nodePolicy") {
		t.Fatalf("bad ConfigMap value: %v", err)
	}
	// ignored at start-up: the valid keys apply; while running: reported
	// once, in the ledger and the metrics, cleared when fixed
	g, err := New(nil, []byte(`{"nodePolicy":"bogus","gpuMemoryUnit":"128MiB"}`), "kube-system",
		"gpushare-config", true)
	if err != nil {
		t.Fatal(err)
	}
	if led, _ := g.Ledger(); !strings.Contains(led, `"unit":"128MiB"`) {
		t.Fatalf("the valid key not applied: %s", led)
	}
	bad := configMap("kube-system", "gpushare-config", map[string]string{"gpuMemoryUnit": "128MiB",
		"cgpuMaxPodsPerGPU": "0"})
	if text := g.ConfigMap(bad, false); !strings.Contains(text, "cgpuMaxPodsPerGPU") {
		t.Fatalf("no error reported: %q", text)
	}
	if text := g.ConfigMap(bad, false); text != "" {
		t.Fatalf("reported twice: %q", text)
	}
	led, _ = g.Ledger()
	m, _ = g.Metrics()
	if !strings.Contains(led, `"configError":"ConfigMap kube-system/gpushare-config: `) ||
		!strings.Contains(m, "gpushare_config_invalid 1\n") {
		t.Fatalf("not shown: %s\n%s", led, m)
	}
	g.ConfigMap(configMap("kube-system", "gpushare-config", map[string]string{"gpuMemoryUnit": "128MiB"}), false)
	if led, _ = g.Ledger(); strings.Contains(led, "configError") {
		t.Fatalf("not cleared: %s", led)
	}
}

// Unhealthy GPUs from their ConfigMap; inspect and the ledger of one node
// (404 for a node gpushare does not know) as the extender serves them.
func TestViews(t *testing.T) {
	s, _ := New(nil, nil, "kube-system", "gpushare-config", false)
	s.Node(node("a", 2, 32))
	s.ConfigMap(configMap("kube-system", "unhealthy-gpu-a", map[string]string{"gpus": "0"}), false)
	if rc, _, _ := s.Reserve(pod("p", 4), "a", 1); rc != OK {
		t.Fatal("reserve")
	}
	out, status := s.View("a", true)
	want := `{"nodes":[{"name":"a","totalGPU":32,"usedGPU":4,"devs":[{"id":0,"totalGPU":16,"usedGPU":0,"pods":[]},{"id":1,"totalGPU":16,"usedGPU":4,"pods":[{"name":"p","namespace":"default","usedGPU":4}]}]}]}`
	if status != 200 || out != want {
		t.Fatalf("inspect a: %d %s", status, out)
	}
	if out, status = s.View("zz", false); status != 404 || out != `{"error":"node zz is unknown to gpushare"}` {
		t.Fatalf("unknown node: %d %s", status, out)
	}
	s.ConfigMap(configMap("kube-system", "unhealthy-gpu-a", nil), true)
	if rc, vs := s.Filter(pod("q", 16), []string{"a"}, nil, 1, false); rc != OK || vs.Code(0) != OK {
		t.Fatalf("GPU 0 still unhealthy: %+v", vs)
	}
}

// DRA (docs/dra.md): a claim allocated on a GPU published in a
// ResourceSlice is charged in the ledger (inspect lists it, a gpu-mem pod
// no longer fits there) and freed when the claim is deleted.
func TestDRA(t *testing.T) {
	s, _ := New(nil, nil, "kube-system", "gpushare-config", false)
	s.Node(node("a", 1, 16))
	claim := []byte(`{"metadata":{"name":"c","namespace":"t","uid":"cu"},"status":{"allocation":` +
		`{"devices":{"results":[{"request":"gpu","driver":"gpu.gpushare.io","pool":"a",` +
		`"device":"gpu-0","consumedCapacity":{"memory":"12Gi"}}]}}}}`)
	s.DRA(claim, true, false)
	s.DRA([]byte(`{"metadata":{"name":"a-gpus"},"spec":{"driver":"gpu.gpushare.io","nodeName":"a",`+
		`"pool":{"name":"a"},"devices":[{"name":"gpu-0","allowMultipleAllocations":true,`+
		`"attributes":{"gpushare.io/index":{"int":0}}}]}}`), false, false)
	out, status := s.View("a", true)
	want := `{"nodes":[{"name":"a","totalGPU":16,"usedGPU":12,"devs":[{"id":0,"totalGPU":16,"usedGPU":12,"pods":[],"claims":[{"name":"c","namespace":"t","usedGPU":12}]}]}]}`
	if status != 200 || out != want {
		t.Fatalf("inspect a: %d %s", status, out)
	}
	if rc, vs := s.Filter(pod("q", 5), []string{"a"}, nil, 1, false); rc != OK || vs.Code(0) == OK {
		t.Fatalf("5 GiB fit beside a 12 GiB claim: %+v", vs)
	}
	s.DRA(claim, true, true)
	if rc, vs := s.Filter(pod("q", 16), []string{"a"}, nil, 1, false); rc != OK || vs.Code(0) != OK {
		t.Fatalf("the claim's memory not freed: %+v", vs)
	}
}

// A gang not complete within gangTimeoutSeconds: the notices name the job
// and each member not bound, once.
func TestNotices(t *testing.T) {
	s, _ := New([]byte(`{"gangTimeoutSeconds":"1"}`), nil, "kube-system", "gpushare-config", false)
	if s.GangTimeoutSeconds() != 1 {
		t.Fatalf("gangTimeoutSeconds %d", s.GangTimeoutSeconds())
	}
	topo, _ := json.Marshal(map[string]interface{}{
		"metadata": map[string]interface{}{"name": "a",
			"labels": map[string]string{"ack.node.gpu.schedule": "topology"}},
		"status": map[string]interface{}{"capacity": map[string]string{"aliyun.com/gpu": "2"}},
	})
	s.Node(topo)
	member := func(name string) []byte {
		b, _ := json.Marshal(map[string]interface{}{
			"metadata": map[string]interface{}{"name": name, "namespace": "default", "uid": "uid-" + name,
				"labels": map[string]string{"gpu-topology": "job", "gpu-topology-replica": "2"}},
			"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{
				"name": "c", "resources": map[string]interface{}{
					"limits": map[string]string{"aliyun.com/gpu": "1"}}}}},
		})
		return b
	}
	s.Pod(member("m0"))
	s.Pod(member("m1"))
	if _, ok := s.Notices(); ok {
		t.Fatal("notices before any timeout")
	}
	rc, vs := s.Filter(member("m0"), []string{"a"}, nil, 1e9, false)
	if rc != OK || vs.Code(0) != OK {
		t.Fatalf("gang plan: %d %+v", rc, vs)
	}
	s.Tick(5e9)
	text, ok := s.Notices()
	var ns []Notice
	if !ok || json.Unmarshal([]byte(text), &ns) != nil || len(ns) != 3 || ns[0].Pod != "" ||
		ns[0].Job != "job" || ns[1].UID == "" || !strings.Contains(ns[1].Message, "gangTimeoutSeconds") {
		t.Fatalf("notices: %s", text)
	}
	if _, ok := s.Notices(); ok {
		t.Fatal("notices given twice")
	}
}

func cpuPod(name, cpu string) []byte {
	b, _ := json.Marshal(map[string]interface{}{
		"metadata": map[string]interface{}{"name": name, "namespace": "default", "uid": "uid-" + name},
		"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{
			"name": "c", "resources": map[string]interface{}{
				"requests": map[string]string{"cpu": cpu}}}}},
	})
	return b
}

// nodePolicy frag: the nodes' host resources cross the boundary and a pod
// asking only CPU is scored (ScoreOnly), lower where it takes the CPU the
// GPUs' pods need; under another policy it is not gpushare's (Skip).
func TestFragHost(t *testing.T) {
	s, err := New([]byte(`{"nodePolicy":"frag"}`), nil, "kube-system", "gpushare-config", false)
	if err != nil {
		t.Fatal(err)
	}
	if !s.WantsHost() {
		t.Fatal("frag does not want the hosts")
	}
	s.Node(node("a", 2, 32))
	s.Node(node("b", 2, 32))
	// The workload: 4 GiB pods asking 2 CPUs.
	gpuPod := func(name string) []byte {
		b, _ := json.Marshal(map[string]interface{}{
			"metadata": map[string]interface{}{"name": name, "namespace": "default", "uid": "uid-" + name},
			"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{
				"name": "c", "resources": map[string]interface{}{
					"limits":   map[string]string{"aliyun.com/gpu-mem": "4"},
					"requests": map[string]string{"cpu": "2"}}}}},
		})
		return b
	}
	names := []string{"a", "b"}
	// a: 8 CPUs, 5 requested; b: 64 CPUs, none requested; 64 GiB memory each.
	host := []int64{8000, 5000, 64 << 30, 0, 64000, 0, 64 << 30, 0}
	if rc, vs := s.Filter(gpuPod("g"), names, host, 1, true); rc != OK || vs.Code(0) != OK {
		t.Fatalf("gpu pod: %d %+v", rc, vs)
	}
	rc, vs := s.Filter(cpuPod("c", "2"), names, host, 1, true)
	if rc != ScoreOnly || vs.Code(0) != OK || vs.Code(1) != OK {
		t.Fatalf("cpu pod: %d %+v", rc, vs)
	}
	// On a, 2 of 3 CPUs leave room for none of the GPUs' pods: all 64 GiB
	// stranded → 0; b keeps room → 50 (the framework's 0..100).
	if vs.Score(0) != 0 || vs.Score(1) != 50 {
		t.Fatalf("cpu pod scores: %+v", vs)
	}
	if rc, _ := s.Filter(cpuPod("c", "2"), names, host, 1, false); rc != Skip {
		t.Fatalf("filter of a cpu pod: %d", rc)
	}
	b, _ := New(nil, nil, "kube-system", "gpushare-config", false)
	if b.WantsHost() {
		t.Fatal("binpack wants the hosts")
	}
	if rc, _ := b.Filter(cpuPod("c", "2"), names, nil, 1, true); rc != Skip {
		t.Fatalf("binpack scores a cpu pod: %d", rc)
	}
}

// PreFilter's call at 500 and 5,000 nodes (8 GPUs of 16 GiB each), warm:
// run with `plugins/scheduler/build.sh --bench BUILD` (docs/benchmarks.md
// §9). The live figure is larger: between two pods kube-scheduler's own
// work evicts the ledger from the caches.
// benchmarkFilter is PreFilter's call as kube-scheduler makes it pod after
// pod: every pod is reserved on a node after its Filter and the one before
// it leaves (two nodes change per pod). alike: pods of one shape, which the
// memo evaluates on the changed nodes only; else two shapes in turn, every
// node evaluated every time.
func benchmarkFilter(b *testing.B, n int, alike bool) {
	s, names, pods := benchCluster(b, n, alike)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := pods[i%len(pods)]
		if rc, vs := s.Filter(p, names, nil, 1, true); rc != OK || vs.Len() != n || vs.Code(0) != OK {
			b.Fatalf("filter: %d", rc)
		}
		if rc, _, reason := s.Reserve(p, names[(i*7)%n], 1); rc != OK {
			b.Fatalf("reserve: %d %s", rc, reason)
		}
		if i > 0 {
			s.PodDelete(fmt.Sprintf("uid-p%d", (i-1)%len(pods)))
		}
	}
}

// benchCluster is a shim with n nodes of 8 GPUs x 16 GiB and 1,024 pods of
// 4 GiB (alike) or of 4 and 5 GiB in turn.
func benchCluster(b *testing.B, n int, alike bool) (*Shim, []string, [][]byte) {
	s, err := New([]byte(`{"gpuMemoryUnit":"1GiB"}`), nil, "kube-system", "gpushare-config", false)
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("gpu-%05d", i)
		s.Node(node(names[i], 8, 128))
	}
	pods := make([][]byte, 1024)
	for i := range pods {
		units := 4
		if !alike {
			units += i % 2
		}
		pods[i] = pod(fmt.Sprintf("p%d", i), units)
	}
	return s, names, pods
}

func BenchmarkFilter500(b *testing.B)       { benchmarkFilter(b, 500, true) }
func BenchmarkFilter5000(b *testing.B)      { benchmarkFilter(b, 5000, true) }
func BenchmarkFilter500Mixed(b *testing.B)  { benchmarkFilter(b, 500, false) }
func BenchmarkFilter5000Mixed(b *testing.B) { benchmarkFilter(b, 5000, false) }

// Reserve's call (its annotations included) and the pod's deletion, on one
// of 500 nodes: the C call kube-scheduler's profile shows as the plugin's
// largest (docs/benchmarks.md §9, fifth session).
func BenchmarkReserve500(b *testing.B) {
	s, names, pods := benchCluster(b, 500, true)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if rc, _, reason := s.Reserve(pods[i%len(pods)], names[(i*7)%len(names)], 1); rc != OK {
			b.Fatalf("reserve: %d %s", rc, reason)
		}
		s.PodDelete(fmt.Sprintf("uid-p%d", i%len(pods)))
	}
}

// labelled is a pod with labels, a priority and a CPU request.
func labelled(name string, units, prio int, cpu string, labels map[string]string) []byte {
	res := map[string]interface{}{"limits": map[string]string{"aliyun.com/gpu-mem": fmt.Sprint(units)}}
	if cpu != "" {
		res["requests"] = map[string]string{"cpu": cpu}
	}
	b, _ := json.Marshal(map[string]interface{}{
		"metadata": map[string]interface{}{"name": name, "namespace": "default", "uid": "uid-" + name,
			"labels": labels},
		"spec": map[string]interface{}{"priority": prio, "containers": []interface{}{
			map[string]interface{}{"name": "c", "resources": res}}},
	})
	return b
}

// Issue 34 through the shim: a PodDisruptionBudget moves PostFilter's
// choice to the node whose victim it does not protect; a host whose victim
// frees no CPU is passed over and the protected victim's violation counted;
// the chosen node's GPU is then held for the preemptor against a
// lower-priority pod.
func TestPreemptBudgetsHostAndHold(t *testing.T) {
	s := gibShim(t)
	s.Node(node("a", 1, 16))
	s.Node(node("b", 1, 16))
	for _, v := range []struct{ name, node, app string }{{"va", "a", "db"}, {"vb", "b", "web"}} {
		p := labelled(v.name, 16, 0, "", map[string]string{"app": v.app})
		if rc, _, reason := s.Reserve(p, v.node, 1); rc != OK {
			t.Fatalf("reserve %s: %d %s", v.name, rc, reason)
		}
		s.Confirm("uid-" + v.name)
		s.PodMeta(p)
	}
	s.PDB([]byte(`{"metadata":{"name":"db","namespace":"default"},`+
		`"spec":{"maxUnavailable":0,"selector":{"matchLabels":{"app":"db"}}}}`), false)
	hi := labelled("hi", 16, 100, "8", nil)
	var choice struct {
		Node          string `json:"node"`
		PDBViolations int    `json:"pdbViolations"`
		Victims       []struct {
			Name string `json:"name"`
		} `json:"victims"`
	}
	res, ok := s.PreemptHost(hi, []string{"a", "b"}, nil)
	s.PreemptForget("uid-hi") // vb not evicted: hi may choose again
	if err := json.Unmarshal([]byte(res), &choice); !ok || err != nil || choice.Node != "b" ||
		choice.PDBViolations != 0 || len(choice.Victims) != 1 || choice.Victims[0].Name != "vb" {
		t.Fatalf("with the budget: %v %s", ok, res)
	}
	// b's host: 8 CPUs all requested, and vb frees none of them; a's unknown
	host := []int64{0, 0, 0, 0, 8000, 8000, 64 << 30, 1 << 30}
	res, ok = s.PreemptHost(hi, []string{"a", "b"}, host)
	if err := json.Unmarshal([]byte(res), &choice); !ok || err != nil || choice.Node != "a" ||
		choice.PDBViolations != 1 || choice.Victims[0].Name != "va" {
		t.Fatalf("with the host: %v %s", ok, res)
	}
	// hi is nominated to a: while va is there the node takes no pod of lower
	// priority; once va is gone its GPU is hi's; with hi gone, lo fits
	lo := labelled("lo", 8, 0, "", nil)
	rc, vs := s.Filter(lo, []string{"a"}, nil, 1, false)
	if rc != OK || vs.Code(0) != Unschedulable ||
		vs.Reason(0) != "GPUs held for pod default/hi, nominated here by preemption" {
		t.Fatalf("held: %d %d %q", rc, vs.Code(0), vs.Reason(0))
	}
	s.PodDelete("uid-va")
	if rc, vs = s.Filter(lo, []string{"a"}, nil, 1, false); rc != OK || vs.Code(0) != Unschedulable {
		t.Fatalf("held after the victim: %d %d %q", rc, vs.Code(0), vs.Reason(0))
	}
	if rc, vs = s.Filter(hi, []string{"a"}, nil, 1, false); rc != OK || vs.Code(0) != OK {
		t.Fatalf("hi itself: %d %d %q", rc, vs.Code(0), vs.Reason(0))
	}
	s.PodDelete("uid-hi")
	if rc, vs = s.Filter(lo, []string{"a"}, nil, 1, false); rc != OK || vs.Code(0) != OK {
		t.Fatalf("hi gone: %d %d %q", rc, vs.Code(0), vs.Reason(0))
	}
}

// A preemptor requeued by its first victim's deletion, before the second
// victim's is fed, is not given new victims (a third pod evicted, seen in
// test_real_plugin_lifecycle's multi-card preemption): the answer is
// "waiting" until both are gone; then the pod fits the freed GPU.
func TestPreemptWaitsForItsVictims(t *testing.T) {
	s := gibShim(t)
	s.Node(node("a", 2, 32))
	for _, name := range []string{"v1", "v2", "w1", "w2"} {
		if rc, _, reason := s.Reserve(labelled(name, 8, 0, "", nil), "a", 1); rc != OK {
			t.Fatalf("reserve %s: %d %s", name, rc, reason)
		}
		s.Confirm("uid-" + name)
	}
	hi := labelled("hi", 16, 100, "", nil)
	var choice struct {
		Node    string `json:"node"`
		Waiting string `json:"waiting"`
		Victims []struct {
			UID string `json:"uid"`
		} `json:"victims"`
	}
	res, ok := s.Preempt(hi, []string{"a"})
	if err := json.Unmarshal([]byte(res), &choice); !ok || err != nil || choice.Node != "a" ||
		len(choice.Victims) != 2 || choice.Waiting != "" {
		t.Fatalf("first: %v %s", ok, res)
	}
	first := choice.Victims
	s.PodDelete(first[0].UID)
	choice.Victims, choice.Node = nil, ""
	res, ok = s.Preempt(hi, []string{"a"})
	if err := json.Unmarshal([]byte(res), &choice); !ok || err != nil || len(choice.Victims) != 0 ||
		choice.Waiting != "gpushare: the victims of its last preemption still hold their GPUs" {
		t.Fatalf("one victim left: %v %s", ok, res)
	}
	s.PodDelete(first[1].UID)
	if rc, vs := s.Filter(hi, []string{"a"}, nil, 1, false); rc != OK || vs.Code(0) != OK {
		t.Fatalf("both gone: %d %d %q", rc, vs.Code(0), vs.Reason(0))
	}
}
