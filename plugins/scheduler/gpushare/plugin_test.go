package gpushare

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"gpushare.io/scheduler/shim"
)

// The extension points below are driven the way kube-scheduler's framework
// drives them (a CycleState per cycle, the snapshot's NodeInfo objects),
// without an apiserver: Bind and the informers are covered by the real
// control-plane tier (test/realk8s).

func gibPlugin(t testing.TB) *Plugin {
	t.Helper()
	s, err := shim.New([]byte(`{"gpuMemoryUnit":"1GiB"}`), nil, "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	return &Plugin{core: s}
}

// shareNode is a share node of gpus GPUs with units GiB in all, fed to the
// core as the informer would, and its NodeInfo.
func shareNode(t testing.TB, p *Plugin, name string, gpus, units int) fwk.NodeInfo {
	t.Helper()
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"ack.node.gpu.schedule": "share"}},
		Status: v1.NodeStatus{Capacity: v1.ResourceList{
			"aliyun.com/gpu-mem":   resource.MustParse(fmt.Sprint(units)),
			"aliyun.com/gpu-count": resource.MustParse(fmt.Sprint(gpus)),
		}},
	}
	b, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	p.core.Node(b)
	ni := framework.NewNodeInfo()
	ni.SetNode(n)
	return ni
}

// share is a share node of gpus GPUs with units GiB in all.
type share struct {
	name        string
	gpus, units int
}

// gibCluster is a fresh plugin (gibPlugin) and its share nodes, in order.
func gibCluster(t testing.TB, nodes ...share) (*Plugin, []fwk.NodeInfo) {
	p := gibPlugin(t)
	infos := make([]fwk.NodeInfo, len(nodes))
	for i, n := range nodes {
		infos[i] = shareNode(t, p, n.name, n.gpus, n.units)
	}
	return p, infos
}

func gpuPod(name string, units int) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Limits: v1.ResourceList{"aliyun.com/gpu-mem": resource.MustParse(fmt.Sprint(units))}}}}},
	}
}

// preFiltered is a cycle's state after PreFilter, which must answer want
// (fwk.Success or fwk.Skip).
func preFiltered(t *testing.T, p *Plugin, pod *v1.Pod, nodes []fwk.NodeInfo, want fwk.Code) fwk.CycleState {
	t.Helper()
	state := framework.NewCycleState()
	if _, st := p.PreFilter(context.Background(), state, pod, nodes); st.Code() != want {
		t.Fatalf("PreFilter: %v, want %v", st, want)
	}
	return state
}

// wantScores checks Score's answer for each node.
// ok fails t unless st is Success; what names the call.
func ok(t *testing.T, what string, st *fwk.Status) {
	t.Helper()
	if !st.IsSuccess() {
		t.Fatalf("%s: %v", what, st)
	}
}

// wantCode fails t unless st has code; what names the call.
func wantCode(t *testing.T, what string, st *fwk.Status, code fwk.Code) {
	t.Helper()
	if st.Code() != code {
		t.Fatalf("%s: %v, want %v", what, st, code)
	}
}

func wantScores(t *testing.T, p *Plugin, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo, want ...int64) {
	t.Helper()
	for i, n := range nodes {
		if s, st := p.Score(context.Background(), state, pod, n); !st.IsSuccess() || s != want[i] {
			t.Fatalf("Score %s: %d %v, want %d", n.Node().Name, s, st, want[i])
		}
	}
}

// A pod every node fits: PreFilter answers Skip, so the framework calls no
// Filter of this plugin, and the cycle still scores and reserves.
func TestPreFilterSkipsFilterWhenEveryNodeFits(t *testing.T) {
	ctx := context.Background()
	p, nodes := gibCluster(t, share{"a", 2, 32}, share{"b", 1, 16})
	pod := gpuPod("p", 10)
	state := preFiltered(t, p, pod, nodes, fwk.Skip)
	// binpack over 16 GiB GPUs: 10 of 16 on either node, so PreScore
	// skips (a score the same on every node ranks nothing); Score, were it
	// called, would say so
	wantCode(t, "PreScore", p.PreScore(ctx, state, pod, nodes), fwk.Skip)
	wantScores(t, p, state, pod, nodes, 60, 60)
	ok(t, "Reserve", p.Reserve(ctx, state, pod, "b"))
	ledger, _ := p.core.View("b", false)
	if want := `"pods":[{"namespace":"default","name":"p","uid":"uid-p","container":0,"usedMiB":10240}]`; !contains(ledger, want) {
		t.Fatalf("ledger of b after Reserve: %s, want %s", ledger, want)
	}
}

// PreScore keeps Score when the feasible nodes score differently, and
// skips it when those it is given score alike, whatever the other nodes
// score.
func TestPreScoreSkipsOnlyWhenEveryNodeScoresAlike(t *testing.T) {
	ctx := context.Background()
	p, nodes := gibCluster(t, share{"a", 2, 32}, share{"b", 1, 20}, share{"c", 1, 16})
	pod := gpuPod("p", 10)
	state := preFiltered(t, p, pod, nodes, fwk.Skip)
	ok(t, "PreScore over a, b, c", p.PreScore(ctx, state, pod, nodes))
	wantScores(t, p, state, pod, nodes, 60, 50, 60)
	// b filtered out by another plugin: a and c are left, alike
	wantCode(t, "PreScore over a, c", p.PreScore(ctx, state, pod, []fwk.NodeInfo{nodes[0], nodes[2]}), fwk.Skip)
	// a copy of b (nominated pods added) still scores as b
	ok(t, "PreScore over a and a copy of b", p.PreScore(ctx, state, pod, []fwk.NodeInfo{nodes[0], nodes[1].Snapshot()}))
}

// Once a node is refused, PreFilter answers Success and Filter gives each
// node its verdict, the refused one with the core's reason.
func TestFilterAnswersWhenANodeIsRefused(t *testing.T) {
	ctx := context.Background()
	p, nodes := gibCluster(t, share{"a", 2, 32}, share{"b", 1, 8})
	pod := gpuPod("p", 10)
	state := preFiltered(t, p, pod, nodes, fwk.Success)
	ok(t, "Filter a", p.Filter(ctx, state, pod, nodes[0]))
	st := p.Filter(ctx, state, pod, nodes[1])
	if st.Code() != fwk.Unschedulable || st.Message() != "insufficient GPU memory on any single GPU" {
		t.Fatalf("Filter b: %v", st)
	}
	// a copy of the NodeInfo (kube-scheduler adds nominated pods to one) is
	// answered by its name
	wantCode(t, "Filter on a copy of b", p.Filter(ctx, state, pod, nodes[1].Snapshot()), fwk.Unschedulable)
}

// otherInfo is a NodeInfo of another type than kube-scheduler's own.
type otherInfo struct{ *framework.NodeInfo }

// Nodes of another NodeInfo type are found by identity too, and a copy of
// one by its name.
func TestFilterAnswersForAnotherNodeInfoType(t *testing.T) {
	ctx := context.Background()
	p := gibPlugin(t)
	a := shareNode(t, p, "a", 2, 32)
	b := otherInfo{shareNode(t, p, "b", 1, 8).(*framework.NodeInfo)}
	nodes := []fwk.NodeInfo{a, b}
	pod := gpuPod("p", 10)
	state := preFiltered(t, p, pod, nodes, fwk.Success)
	if i, ok := read(state).nodes.byInfo[b]; !ok || i != 1 {
		t.Fatalf("b's position by object: %d %v, want 1", i, ok)
	}
	wantCode(t, "Filter b", p.Filter(ctx, state, pod, b), fwk.Unschedulable)
	wantCode(t, "Filter on a copy of b", p.Filter(ctx, state, pod, otherInfo{b.Snapshot().(*framework.NodeInfo)}), fwk.Unschedulable)
	ok(t, "Filter on a copy of a", p.Filter(ctx, state, pod, otherInfo{a.Snapshot().(*framework.NodeInfo)}))
	if _, ok := read(state).nodes.byPtr[a.(*framework.NodeInfo)]; !ok {
		t.Fatal("a not indexed by its pointer")
	}
}

// A pod asking no GPU: PreFilter skips, and so do PreScore and Bind.
func TestPodWithoutGPUIsSkipped(t *testing.T) {
	ctx := context.Background()
	p, nodes := gibCluster(t, share{"a", 2, 32})
	state := framework.NewCycleState()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default", UID: "uid-c"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	if _, st := p.PreFilter(ctx, state, pod, nodes); !st.IsSkip() {
		t.Fatalf("PreFilter: %v, want Skip", st)
	}
	wantCode(t, "PreScore", p.PreScore(ctx, state, pod, nodes), fwk.Skip)
	wantCode(t, "Bind", p.Bind(ctx, state, pod, "a"), fwk.Skip)
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// The core is handed a pod without its managedFields (no decoder reads
// them); the informer's object is left as it was.
func TestPodJSONLeavesManagedFieldsOut(t *testing.T) {
	pod := gpuPod("p", 4)
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
	b, err := podJSON(pod)
	if err != nil {
		t.Fatal(err)
	}
	var back v1.Pod
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.ManagedFields != nil || back.Name != "p" || back.UID != pod.UID ||
		!back.Spec.Containers[0].Resources.Limits["aliyun.com/gpu-mem"].Equal(resource.MustParse("4")) {
		t.Fatalf("podJSON: %s", b)
	}
	if len(pod.ManagedFields) != 1 {
		t.Fatalf("the pod itself changed: %+v", pod.ManagedFields)
	}
}

// SignPod hands kube-scheduler the core's signature: pods asking the same
// are signed alike (whatever their names), a pod asking no GPU adds no
// fragment, a member of a distributed job is not signable.
func TestSignPod(t *testing.T) {
	ctx := context.Background()
	p := gibPlugin(t)
	sign := func(pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) { return p.SignPod(ctx, pod) }
	a, st := sign(gpuPod("a", 4))
	if !st.IsSuccess() || len(a) != 1 || a[0].Key != signKey ||
		a[0].Value != "mem k=1 mib=4096 prio=0 init=0/0 c=4/0," {
		t.Fatalf("SignPod a: %+v %v", a, st)
	}
	b, _ := sign(gpuPod("b", 4))
	c, _ := sign(gpuPod("c", 8))
	if len(b) != 1 || b[0] != a[0] || len(c) != 1 || c[0] == a[0] {
		t.Fatalf("SignPod: a %+v, b %+v, c %+v", a, b, c)
	}
	cpu := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cpu", Namespace: "default"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	if f, st := sign(cpu); !st.IsSuccess() || f != nil {
		t.Fatalf("SignPod of a pod asking no GPU: %+v %v", f, st)
	}
	member := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "default",
			Labels: map[string]string{"gpu-topology": "job", "gpu-topology-replica": "2"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Limits: v1.ResourceList{"aliyun.com/gpu": resource.MustParse("1")}}}}},
	}
	if f, st := sign(member); st.Code() != fwk.Unschedulable || f != nil ||
		st.Message() != "gpushare: a member of a distributed job is placed by its plan" {
		t.Fatalf("SignPod of a gang member: %+v %v", f, st)
	}
}

// A pod signed as the one before it (a pod kube-scheduler may batch) is
// evaluated on every node, like any pod: the core's memo re-evaluates only
// the nodes whose ledger changed, and the answers are a fresh
// evaluation's — here after the first pod was reserved on node a.
func TestPodSignedAlikeIsEvaluatedOnEveryNode(t *testing.T) {
	ctx := context.Background()
	p, nodes := gibCluster(t, share{"a", 2, 32}, share{"b", 1, 8}, share{"c", 1, 16})
	first := framework.NewCycleState()
	p1 := gpuPod("p1", 10)
	if _, st := p.PreFilter(ctx, first, p1, nodes); !st.IsSuccess() {
		t.Fatalf("PreFilter p1: %v", st)
	}
	wantScores(t, p, first, p1, nodes, 60, 0, 60) // binpack: 10 of a 16 GiB GPU
	ok(t, "Reserve p1 on a", p.Reserve(ctx, first, p1, "a"))
	state := framework.NewCycleState()
	pod := gpuPod("p2", 10)
	if _, st := p.PreFilter(ctx, state, pod, nodes); !st.IsSuccess() {
		t.Fatalf("PreFilter p2: %v", st)
	}
	if c := read(state); c.verdict.Len() != 3 {
		t.Fatalf("p2 not evaluated on every node: %d verdicts", c.verdict.Len())
	}
	st := p.Filter(ctx, state, pod, nodes[1])
	if st.Code() != fwk.Unschedulable || st.Message() != "insufficient GPU memory on any single GPU" {
		t.Fatalf("Filter b: %v", st)
	}
	// the same pod on a fresh service that reserved f1 on a, then evaluated
	// another shape (so that f2 is evaluated afresh, not through the memo)
	fresh := gibPlugin(t)
	freshNodes := []fwk.NodeInfo{shareNode(t, fresh, "a", 2, 32), shareNode(t, fresh, "b", 1, 8),
		shareNode(t, fresh, "c", 1, 16)}
	fs := framework.NewCycleState()
	if _, st := fresh.PreFilter(ctx, fs, gpuPod("f1", 10), freshNodes); !st.IsSuccess() {
		t.Fatalf("PreFilter f1: %v", st)
	}
	ok(t, "Reserve f1", fresh.Reserve(ctx, fs, gpuPod("f1", 10), "a"))
	if _, st := fresh.PreFilter(ctx, framework.NewCycleState(), gpuPod("f1b", 4), freshNodes); !st.IsSuccess() && !st.IsSkip() {
		t.Fatalf("PreFilter f1b: %v", st)
	}
	fs2 := framework.NewCycleState()
	if _, st := fresh.PreFilter(ctx, fs2, gpuPod("f2", 10), freshNodes); !st.IsSuccess() {
		t.Fatalf("PreFilter f2: %v", st)
	}
	c, want := read(state), read(fs2)
	for i, n := range nodes {
		code, reason, score := c.at(i)
		if code != want.verdict.Code(i) || reason != want.verdict.Reason(i) || score != want.verdict.Score(i) {
			t.Fatalf("node %s: %d %q %d, fresh %d %q %d", n.Node().Name, code, reason, score,
				want.verdict.Code(i), want.verdict.Reason(i), want.verdict.Score(i))
		}
	}
}

// A cloned CycleState (preemption's dry runs) reads PreFilter's answers and
// keeps its own Reserve: a Reserve in the original does not show in the
// copy, nor the copy's in the original.
func TestCloneIsACopy(t *testing.T) {
	ctx := context.Background()
	p, nodes := gibCluster(t, share{"a", 2, 32}, share{"b", 1, 8})
	pod := gpuPod("p", 10)
	state := preFiltered(t, p, pod, nodes, fwk.Success)
	clone := state.Clone()
	wantCode(t, "Filter b in the clone", p.Filter(ctx, clone, pod, nodes[1]), fwk.Unschedulable)
	wantScores(t, p, clone, pod, nodes, 60, 0)
	ok(t, "Reserve", p.Reserve(ctx, state, pod, "a"))
	if got := read(state).annots; len(got) == 0 {
		t.Fatal("Reserve wrote no annotations")
	}
	if got := read(clone).annots; got != nil {
		t.Fatalf("the clone holds the original's annotations: %v", got)
	}
	// a clone of the reserved state starts with the annotations, then
	// keeps its own
	again := state.Clone()
	read(again).annots["x"] = "y"
	if _, ok := read(state).annots["x"]; ok || len(read(again).annots) != len(read(state).annots)+1 {
		t.Fatalf("annotations shared: %v / %v", read(state).annots, read(again).annots)
	}
}

// Filter and Score find the cycle PreFilter last wrote by its state object,
// and any other state's by reading it: a clone, the state of an earlier
// cycle, a state whose PreFilter wrote no cycle.
func TestCycleFoundByItsState(t *testing.T) {
	ctx := context.Background()
	p, nodes := gibCluster(t, share{"a", 2, 32}, share{"b", 1, 8})
	pod := gpuPod("p", 10)
	first := preFiltered(t, p, pod, nodes, fwk.Success)
	if p.cycleOf(first) != read(first) || p.last.Load() == nil {
		t.Fatal("the last state's cycle not kept")
	}
	clone := first.Clone()
	if c := p.cycleOf(clone); c == read(first) || c != read(clone) {
		t.Fatal("a clone answered with the original's cycle")
	}
	second := preFiltered(t, p, gpuPod("q", 4), nodes, fwk.Skip) // every node fits
	if p.cycleOf(first) != read(first) || p.cycleOf(second) != read(second) {
		t.Fatal("a state's cycle is not its own")
	}
	// a PreFilter that writes no cycle (a pod asking no GPU) forgets the last
	none := preFiltered(t, p, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cpu", Namespace: "default", UID: "u-cpu"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}, nodes, fwk.Skip)
	if p.last.Load() != nil || p.cycleOf(none) != nil {
		t.Fatal("a state without a cycle answered with one")
	}
	wantCode(t, "Filter b from the first state", p.Filter(ctx, first, pod, nodes[1]), fwk.Unschedulable)
}

// kube-scheduler filters and scores nodes from 16 goroutines at once: the
// answers read from one cycle from many goroutines (run under the race
// detector) are PreFilter's, node for node.
func TestFilterAndScoreFromManyGoroutines(t *testing.T) {
	ctx := context.Background()
	p := gibPlugin(t)
	var nodes []fwk.NodeInfo
	for i := 0; i < 24; i++ {
		units := 32
		if i%3 == 0 {
			units = 8 // one 8 GiB GPU: a 10 GiB pod does not fit
		}
		nodes = append(nodes, shareNode(t, p, fmt.Sprintf("n%02d", i), units/16+units%16/8, units))
	}
	full := framework.NewCycleState()
	if _, st := p.PreFilter(ctx, full, gpuPod("q1", 10), nodes); !st.IsSuccess() {
		t.Fatalf("PreFilter q1: %v", st)
	}
	state := framework.NewCycleState()
	pod := gpuPod("q2", 10) // signed as q1: evaluated through the memo
	if _, st := p.PreFilter(ctx, state, pod, nodes); !st.IsSuccess() {
		t.Fatalf("PreFilter q2: %v", st)
	}
	want := read(full)
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(nodes))
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := range nodes {
				i := (k + 3*g) % len(nodes)
				st := p.Filter(ctx, state, pod, nodes[i])
				s, _ := p.Score(ctx, state, pod, nodes[i])
				if st.IsSuccess() != (want.verdict.Code(i) == shim.OK) || (st.IsSuccess() && s != want.verdict.Score(i)) ||
					(!st.IsSuccess() && st.Message() != want.verdict.Reason(i)) {
					errs <- fmt.Sprintf("node %d: %v %d, want %d %q %d", i, st, s,
						want.verdict.Code(i), want.verdict.Reason(i), want.verdict.Score(i))
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// cyclePods are pods in the shapes the core's decoder tells apart: several
// containers, init containers with a sidecar, overhead, host requests, the
// gpu-count label, a distributed job's labels, a priority, whole GPUs, a
// request too large for any GPU, an invalid label, and kube-scheduler's
// defaulted fields (volumes, tolerations) that the core never reads.
func cyclePods(t *testing.T) []*v1.Pod {
	t.Helper()
	q := resource.MustParse
	prio := int32(1000)
	exp := int64(300)
	always := v1.ContainerRestartPolicyAlways
	mem := func(n string) v1.ResourceList { return v1.ResourceList{"aliyun.com/gpu-mem": q(n)} }
	pods := []*v1.Pod{gpuPod("one", 4)}
	multi := gpuPod("multi", 2)
	multi.Labels = map[string]string{"aliyun.com/gpu-count": "2", "app": "x"}
	multi.Spec.Containers = append(multi.Spec.Containers, v1.Container{Name: "d",
		Resources: v1.ResourceRequirements{Limits: mem("6"),
			Requests: v1.ResourceList{"cpu": q("1500m"), "memory": q("3Gi")}}})
	multi.Spec.InitContainers = []v1.Container{
		{Name: "side", RestartPolicy: &always, Resources: v1.ResourceRequirements{Limits: mem("2")}},
		{Name: "init", Resources: v1.ResourceRequirements{Limits: mem("12"),
			Requests: v1.ResourceList{"cpu": q("2")}}}}
	multi.Spec.Overhead = v1.ResourceList{"cpu": q("250m"), "memory": q("120Mi")}
	multi.Spec.Priority = &prio
	multi.Spec.Tolerations = []v1.Toleration{{Key: "node.kubernetes.io/not-ready",
		Operator: "Exists", Effect: "NoExecute", TolerationSeconds: &exp}}
	multi.Spec.Volumes = []v1.Volume{{Name: "token", VolumeSource: v1.VolumeSource{
		Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{
			ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}}}}}}}
	multi.Annotations = map[string]string{"scheduler.framework.gpushare.allocation": `{"0":{"0":9}}`}
	multi.Status.Phase = v1.PodPending
	gang := gpuPod("gang", 0)
	gang.Labels = map[string]string{"gpu-topology": "job", "gpu-topology-replica": "2"}
	gang.Spec.Containers[0].Resources.Limits = v1.ResourceList{"aliyun.com/gpu": q("1")}
	big := gpuPod("big", 99)
	bad := gpuPod("bad", 4)
	bad.Labels = map[string]string{"aliyun.com/gpu-count": "two"}
	cpu := gpuPod("cpu", 0)
	cpu.Spec.Containers[0].Resources.Limits = v1.ResourceList{"cpu": q("1")}
	pods = append(pods, multi, gang, big, bad, cpu)
	// the fuzzed round-trip Pod of the Kubernetes API tests (every field set)
	raw, err := os.ReadFile("../../../test/data/reference/kube-fixtures/api-roundtrip-v1.34.0-core.v1.Pod.json")
	if err != nil {
		t.Fatal(err)
	}
	var fuzzed v1.Pod
	if err := json.Unmarshal(raw, &fuzzed); err != nil {
		t.Fatal(err)
	}
	return append(pods, &fuzzed)
}

// The core answers the cycle's short form of a pod (cycleJSON) exactly as
// the whole pod: signature, verdicts and scores on every node, the
// reservation's annotations, Permit; errors alike, text for text.
func TestCycleJSON(t *testing.T) {
	for _, pod := range cyclePods(t) {
		short, err := cycleJSON(pod)
		if err != nil {
			t.Fatal(err)
		}
		whole, err := podJSON(pod)
		if err != nil {
			t.Fatal(err)
		}
		if len(short) >= len(whole) && pod.Name != "one" {
			t.Fatalf("%s: the short form is %d bytes, the whole pod %d", pod.Name, len(short), len(whole))
		}
		type answers struct {
			signRC                 int
			sig                    string
			filterRC               int
			codes, reasons, scores []string
			reserveRC              int
			annots                 map[string]string
			reason                 string
			permitRC               int
			permitWhy              string
		}
		ask := func(b []byte) answers {
			p := gibPlugin(t)
			for _, n := range []string{"a", "b"} {
				shareNode(t, p, n, 2, 32)
			}
			var a answers
			a.signRC, a.sig = p.core.Sign(b)
			rc, vs := p.core.Filter(b, []string{"a", "b", "none"}, nil, 1, true)
			a.filterRC = rc
			for i := 0; rc == shim.OK && i < vs.Len(); i++ {
				a.codes = append(a.codes, fmt.Sprint(vs.Code(i)))
				a.reasons = append(a.reasons, vs.Reason(i))
				a.scores = append(a.scores, fmt.Sprint(vs.Score(i)))
			}
			if rc != shim.OK {
				a.reasons = append(a.reasons, vs.Reason(0))
			}
			a.reserveRC, a.annots, a.reason = p.core.Reserve(b, "a", 7)
			a.permitRC, a.permitWhy = p.core.Permit(b, "a", 7)
			return a
		}
		s, w := ask(short), ask(whole)
		if fmt.Sprintf("%#v", s) != fmt.Sprintf("%#v", w) {
			t.Fatalf("%s:\nshort %#v\nwhole %#v", pod.Name, s, w)
		}
	}
}
