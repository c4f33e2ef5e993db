// Package gpushare is the scheduling-framework plugin (docs/plugin.md): Go
// converts objects (json.Marshal) and calls; every decision — filter,
// score, reserve, permit, preemption, the annotations the Binding carries —
// is made by the C core, reached only through package shim (the cgo
// boundary).
package gpushare

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	apipod "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"

	"gpushare.io/scheduler/apis/config"
	"gpushare.io/scheduler/apis/config/scheme"
	configv1 "gpushare.io/scheduler/apis/config/v1"
	"gpushare.io/scheduler/apis/config/validation"
	"gpushare.io/scheduler/shim"
)

// Name is the plugin's name in KubeSchedulerConfiguration.
const Name = "GpuShare"

const stateKey fwk.StateKey = "gpushare.io/cycle"

// Plugin implements PreFilter, Filter, PreScore, Score, Reserve, Permit and
// Bind over one C service.
type Plugin struct {
	core  *shim.Shim
	nodes atomic.Pointer[nodeIndex] // the last node list PreFilter saw
	last  atomic.Pointer[lastCycle] // the last CycleState PreFilter wrote, with its cycle
	h     fwk.Handle
	wait  time.Duration
	mu    sync.Mutex // orders the Allow calls of waiting gang members
	bound sync.Map   // UIDs this plugin bound: their informer updates carry nothing new

	claimKind    sync.Map    // claim UID → whether gpushare places it (claims.go)
	anyClaims    atomic.Bool // a pod with claims gpushare places was seen: Filter and Score look for them
	claimVictims sync.Map    // preemptor UID → *claimVictims (claims_preempt.go)
}

// cycle is what one scheduling cycle carries between extension points:
// written by PreFilter (pod, managed, nodes, verdict, then never changed)
// and by Reserve (annots).
type cycle struct {
	pod     []byte            // the pod as the core's verbs read it (cycleJSON)
	managed bool              // gpushare manages the pod
	shaped  bool              // scored as the gpu-mem pod its one claim is placed as
	nodes   *nodeIndex        // the nodes PreFilter answered for (nil: no verdicts, nothing scored)
	verdict shim.Verdicts     // PreFilter's answer per node (nodes' order), with its score
	annots  map[string]string // Reserve's annotations for the Binding
}

// lastCycle is the CycleState PreFilter last wrote a cycle into, and that
// cycle. Filter and Score, called once per node, find their cycle by
// comparing the state object with it instead of reading the state (a hash
// of the key and a map probe per call: ≈ +70 ns per node for Filter and
// Score, BenchmarkFilterScore5000, ≈ 0.35 ms a pod at 5,000 nodes). Exact, not a
// guess: kube-scheduler makes a CycleState per cycle; PreFilter replaces
// lastCycle on every call (nil when it writes no cycle), so a state that
// matches holds that very cycle; any other state (a clone, an older cycle's)
// is read (TestCycleFoundByItsState).
type lastCycle struct {
	state fwk.CycleState
	c     *cycle
}

// cycleOf is the cycle PreFilter wrote into state.
func (p *Plugin) cycleOf(state fwk.CycleState) *cycle {
	if l := p.last.Load(); l != nil && l.state == state {
		return l.c
	}
	return read(state)
}

// at is node i's code, reason and score.
func (c *cycle) at(i int) (int, string, int64) {
	return c.verdict.Code(i), c.verdict.Reason(i), c.verdict.Score(i)
}

// nodeIndex is a node list and each name's position in it. Made when the
// list kube-scheduler passes to PreFilter changes (it passes the same one
// pod after pod), then shared, read-only, by every cycle over that list.
type nodeIndex struct {
	infos  []fwk.NodeInfo
	names  []string
	at     map[string]int
	byPtr  map[*framework.NodeInfo]int32 // the same positions by object: no name to hash and compare
	byInfo map[fwk.NodeInfo]int          // another NodeInfo type's (none in kube-scheduler today)
}

// answer is where PreFilter's verdict for a node is, false when it did
// not answer for the node. Filter and Score are mostly handed the very
// NodeInfo objects PreFilter was (found by identity: one probe of a
// pointer-keyed map, the node's name never read — an interface key cost
// twice as much, 1.4 % of kube-scheduler's CPU at 500 nodes); a copy
// (kube-scheduler's view with nominated pods added) is found by its name.
func (c *cycle) answer(n fwk.NodeInfo) (int, bool) {
	if p, ok := n.(*framework.NodeInfo); ok {
		if i, ok := c.nodes.byPtr[p]; ok {
			return int(i), true
		}
	} else if i, ok := c.nodes.byInfo[n]; ok {
		return i, true
	}
	i, ok := c.nodes.at[n.Node().Name]
	return i, ok
}

// Clone is a copy of the cycle (kube-scheduler clones the CycleState for
// preemption's dry runs and for each pod of a batch): what PreFilter wrote
// is read-only from then on and shared (the pod's bytes, the node index,
// the verdicts); what a later point writes (Reserve's annotations) is the
// copy's own.
func (c *cycle) Clone() fwk.StateData {
	cp := *c
	cp.annots = maps.Clone(c.annots)
	return &cp
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.PermitPlugin      = &Plugin{}
	_ fwk.BindPlugin        = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.PostFilterPlugin  = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
	_ fwk.PreBindPlugin     = &Plugin{}
)

// New makes the plugin: the C service from the args, fed by the scheduler's
// own informers (no second watch).
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := decodeArgs(obj)
	if err != nil {
		return nil, err
	}
	if err := validation.ValidateGpuShareArgs(nil, args); err != nil {
		return nil, fmt.Errorf("gpushare args: %w", err)
	}
	raw, err := json.Marshal(coreArgs(args))
	if err != nil {
		return nil, fmt.Errorf("gpushare args: %w", err)
	}
	cmNs, cmName, cmData, err := readConfigMap(ctx, h, args.ConfigMap)
	if err != nil {
		return nil, err
	}
	readWorkloadGate() // a PodGroup's pods are kube-scheduler's gang (podgroup.go)
	core, err := shim.New(raw, cmData, cmNs, cmName, args.OnInvalidConfig == config.OnInvalidConfigIgnore)
	if err != nil {
		return nil, err
	}
	// Permit waits as long as the core keeps a gang's plan (gangTimeoutSeconds
	// as the core read it from the ConfigMap and the args)
	p := &Plugin{core: core, h: h, wait: time.Duration(core.GangTimeoutSeconds()) * time.Second}
	plugins.Store(h, p) // for the profile's DynamicResources wrapper (dynres.go)
	if err := p.watch(); err != nil {
		return nil, err
	}
	if err := p.watchDRA(); err != nil {
		return nil, err
	}
	if cmNs != "" {
		if err := p.watchConfigMaps(ctx, cmNs); err != nil {
			return nil, err
		}
	}
	go p.tick(ctx)
	if args.DebugAddress != "" {
		go p.serve(args.DebugAddress)
	}
	return p, nil
}

// decodeArgs is the args as kube-scheduler hands them: decoded, defaulted
// and converted by its config scheme (the types are registered there:
// apis/config/scheme), or raw (a caller that did not decode them; nil:
// none), then decoded and defaulted here the same way.
func decodeArgs(obj runtime.Object) (*config.GpuShareArgs, error) {
	if args, ok := obj.(*config.GpuShareArgs); ok {
		return args, nil
	}
	return versionedArgs[configv1.GpuShareArgs, *configv1.GpuShareArgs, config.GpuShareArgs](obj, "gpushare")
}

// versionedArgs reads a plugin's args as kube-scheduler reads its own
// plugins': obj (nil: none) decoded as the versioned V, defaulted, and
// converted to the internal I (kube-scheduler's scheme, which knows
// gpushare's types too); name starts the errors' text.
func versionedArgs[V any, PV interface {
	*V
	runtime.Object
}, I any](obj runtime.Object, name string) (*I, error) {
	in := PV(new(V))
	if err := frameworkruntime.DecodeInto(obj, in); err != nil {
		return nil, fmt.Errorf("%s args: %w", name, err)
	}
	scheme.Scheme.Default(in)
	out := new(I)
	if err := scheme.Scheme.Convert(in, out, nil); err != nil {
		return nil, fmt.Errorf("%s args: %w", name, err)
	}
	return out, nil
}

// coreArgs is the args' ConfigMap keys as the core reads them
// ({"key":"value"}, docs/contract.md §6): only those set.
func coreArgs(args *config.GpuShareArgs) map[string]string {
	data := map[string]string{}
	if args.GpuMemoryUnit != "" {
		data["gpuMemoryUnit"] = args.GpuMemoryUnit
	}
	if args.NodePolicy != "" {
		data["nodePolicy"] = args.NodePolicy
	}
	if args.CgpuMaxPodsPerGPU != nil {
		data["cgpuMaxPodsPerGPU"] = fmt.Sprint(*args.CgpuMaxPodsPerGPU)
	}
	if args.GangTimeoutSeconds != nil {
		data["gangTimeoutSeconds"] = fmt.Sprint(*args.GangTimeoutSeconds)
	}
	return data
}

// Name is the plugin's name.
func (p *Plugin) Name() string { return Name }

// ---- the extension points ------------------------------------------------

func status(code int, reason string) *fwk.Status {
	switch code {
	case shim.OK:
		return nil
	case shim.Unschedulable:
		return fwk.NewStatus(fwk.Unschedulable, reason)
	case shim.Unresolvable:
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason)
	case shim.Skip:
		return fwk.NewStatus(fwk.Skip)
	case shim.Wait:
		return fwk.NewStatus(fwk.Wait, reason)
	default:
		return fwk.AsStatus(fmt.Errorf("%s", reason))
	}
}

// signKey names the plugin's signature fragment (kube-scheduler's naming:
// the state it is made from, then what is done to it).
const signKey = "v1.Pod.Spec.Containers.GpuShareRequest()"

// SignPod tells kube-scheduler's opportunistic batching which pods are the
// same to gpushare, as the core decides (gs_place_signature): a pod asking
// no GPU adds nothing; a member of a distributed job, a pod under
// nodePolicy frag or one the core refuses is not signable, and kube-scheduler
// schedules it on its own. Without this, every pod of the profile would
// lose batching (docs/plugin.md).
func (p *Plugin) SignPod(ctx context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	if len(pod.Spec.ResourceClaims) > 0 {
		if claims, _, _ := p.podClaims(pod); len(claims) > 0 {
			return nil, fwk.NewStatus(fwk.Unschedulable, "gpushare: a pod with claims gpushare places")
		}
	}
	b, err := cycleJSON(pod)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	switch rc, sig := p.core.Sign(b); rc {
	case shim.OK:
		return []fwk.SignFragment{{Key: signKey, Value: sig}}, nil
	case shim.Skip:
		return nil, nil
	case shim.Unschedulable:
		return nil, fwk.NewStatus(fwk.Unschedulable, "gpushare: "+sig)
	default:
		return nil, fwk.AsStatus(fmt.Errorf("gpushare: %s", sig))
	}
}

// PreFilter decides and scores for every node at once, in one call of the
// core's prioritize (its filter and score fused, as the extender's
// prioritize runs them): one decode of the pod per cycle, and PreScore has
// nothing left to ask. The C core plans gangs here.
func (p *Plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	p.last.Store(nil)
	b, err := cycleJSON(pod)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	ix := p.index(nodes)
	claims := false
	if len(pod.Spec.ResourceClaims) > 0 {
		if st := p.claimsPreFilter(state, pod, ix); st != nil {
			return nil, st
		}
		if claims = readClaims(state) != nil; claims {
			p.anyClaims.Store(true)
		}
	}
	var host []int64
	if p.core.WantsHost() { // nodePolicy frag weighs the nodes' CPU and memory
		host = make([]int64, 0, 4*len(nodes))
		for _, n := range nodes {
			a, r := n.GetAllocatable(), n.GetRequested()
			host = append(host, a.GetMilliCPU(), r.GetMilliCPU(), a.GetMemory(), r.GetMemory())
		}
	}
	var rc int
	var vs shim.Verdicts
	shaped := false
	if cc := readClaims(state); claims && cc.shape != nil {
		// one claim of gpushare's to place: the pod is scored as the gpu-mem
		// pod that claim is placed as (the node policy, frag's host view),
		// so claims pack as gpu-mem pods do
		rc, shaped, vs = p.core.FilterClaim(b, cc.shape, ix.names, host, time.Now().UnixNano())
	} else {
		rc, vs = p.core.Filter(b, ix.names, host, time.Now().UnixNano(), true)
	}
	if rc == shim.Skip {
		if claims {
			return nil, nil // Filter answers for the claims
		}
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if rc != shim.OK && rc != shim.ScoreOnly {
		return nil, status(rc, vs.Reason(0))
	}
	c := &cycle{pod: b, managed: rc == shim.OK, shaped: shaped, nodes: ix, verdict: vs} // ScoreOnly: scored, nothing to filter or reserve
	state.Write(stateKey, c)
	p.last.Store(&lastCycle{state, c})
	if vs.AllPass() && !claims {
		// Filter would answer Success for every node: Skip spares the
		// framework a call per node (docs/plugin.md). Score, Reserve, Permit
		// and Bind still run; so does PostFilter, which finds no node where
		// GPU preemption helps, as Filter's answers would have said.
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}

// index is the nodeIndex of nodes: the last one when the list is the same
// (the common case: a map of 5,000 names per pod was measurable), else a
// new one. The same list is the same NodeInfo objects in the same order:
// kube-scheduler's snapshot keeps one NodeInfo per node for the node's life
// and updates it in place, so comparing the objects, not their names, reads
// no node (5,000 of them were cache misses, every pod).
func (p *Plugin) index(nodes []fwk.NodeInfo) *nodeIndex {
	ix := p.nodes.Load()
	if ix != nil && len(ix.infos) == len(nodes) {
		same := true
		for i, n := range nodes {
			if n != ix.infos[i] {
				same = false
				break
			}
		}
		if same {
			return ix
		}
	}
	ix = &nodeIndex{infos: append([]fwk.NodeInfo(nil), nodes...), names: make([]string, len(nodes)),
		at: make(map[string]int, len(nodes)), byPtr: make(map[*framework.NodeInfo]int32, len(nodes))}
	for i, n := range nodes {
		ix.names[i] = n.Node().Name
		ix.at[ix.names[i]] = i
		if p, ok := n.(*framework.NodeInfo); ok {
			ix.byPtr[p] = int32(i)
			continue
		}
		if ix.byInfo == nil {
			ix.byInfo = make(map[fwk.NodeInfo]int)
		}
		ix.byInfo[n] = i
	}
	p.nodes.Store(ix)
	return ix
}

// PreFilterExtensions: none (the C core sees nominated pods in its ledger).
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// readAs is what the cycle state holds under key, as a *T; nil when none.
func readAs[T any](state fwk.CycleState, key fwk.StateKey) *T {
	d, err := state.Read(key)
	if err != nil {
		return nil
	}
	c, _ := any(d).(*T)
	return c
}

func read(state fwk.CycleState) *cycle { return readAs[cycle](state, stateKey) }

// Filter answers from PreFilter's verdicts.
func (p *Plugin) Filter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	if p.anyClaims.Load() {
		if cc := readClaims(state); cc != nil {
			if st := cc.filter(nodeInfo.Node().Name); !st.IsSuccess() {
				return st
			}
		}
	}
	c := p.cycleOf(state)
	if c == nil || !c.managed {
		return nil
	}
	i, ok := c.answer(nodeInfo)
	if !ok {
		return fwk.NewStatus(fwk.Unschedulable, "node unknown to gpushare")
	}
	code, reason, _ := c.at(i)
	return status(code, reason)
}

// PreScore: the scores came with PreFilter's verdicts. Skipped for a pod
// gpushare does not manage, and when Score would give every feasible node
// the same score: kube-scheduler adds each plugin's weighted score and takes
// the highest total (ties at random), so a constant moves no node and no
// tie, and the framework spares its per-node Score loop for this plugin
// (≈ 0.3 µs a node: docs/plugin.md). An empty cluster under either policy,
// or one where binpack has no half-filled GPU to prefer, is such a case.
func (p *Plugin) PreScore(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	if p.anyClaims.Load() && readClaims(state) != nil {
		return nil // Score adds the claims' scores
	}
	c := read(state)
	if c == nil || c.nodes == nil || c.sameScore(nodes) {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil // scored in PreFilter
}

// sameScore: Score would answer the same for every node of nodes.
func (c *cycle) sameScore(nodes []fwk.NodeInfo) bool {
	var first int64
	for k, n := range nodes {
		var s int64
		if i, ok := c.answer(n); ok {
			_, _, s = c.at(i)
		}
		if k == 0 {
			first = s
		} else if s != first {
			return false
		}
	}
	return true
}

// Score is the core's 0..100 (the framework's scale: nodePolicy frag uses all
// of it; binpack and spread give multiples of 10, the extender's 0..10).
func (p *Plugin) Score(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	c := p.cycleOf(state)
	var score int64
	if c != nil && c.nodes != nil {
		if i, ok := c.answer(nodeInfo); ok {
			_, _, score = c.at(i)
		}
	}
	if p.anyClaims.Load() {
		if cc := readClaims(state); cc != nil {
			if c == nil || c.nodes == nil {
				return cc.score(nodeInfo.Node().Name), nil
			}
			if c.shaped {
				return score, nil // the claim's gpu-mem shape, scored by the core
			}
			return (score + cc.score(nodeInfo.Node().Name)) / 2, nil // both 0..100
		}
	}
	return score, nil
}

// ScoreExtensions: none.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// Reserve puts the pod's GPUs in the ledger and keeps the annotations.
func (p *Plugin) Reserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	c := read(state)
	if c != nil && c.managed {
		rc, annots, reason := p.core.Reserve(c.pod, nodeName, time.Now().UnixNano())
		if rc != shim.OK {
			return status(rc, reason)
		}
		c.annots = annots
	}
	if cc := readClaims(state); cc != nil {
		if st := p.claimsReserve(cc, nodeName); st != nil {
			if c != nil && c.managed {
				p.core.Unreserve(c.pod, nodeName)
			}
			return st
		}
	}
	return nil
}

// Unreserve gives the reservation back.
func (p *Plugin) Unreserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) {
	if cc := readClaims(state); cc != nil {
		p.claimsUnreserve(ctx, cc)
		p.core.ClaimGangLeave(string(pod.UID))
	}
	c := read(state)
	if c == nil || !c.managed {
		return
	}
	p.core.Unreserve(c.pod, nodeName)
}

// PreBindPreFlight: PreBind writes only for a pod with claims gpushare places.
func (p *Plugin) PreBindPreFlight(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	if readClaims(state) == nil {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return &fwk.PreBindPreFlightResult{AllowParallel: true}, nil
}

// PreBind writes the allocations of the pod's claims gpushare placed
// (claims.go).
func (p *Plugin) PreBind(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	if cc := readClaims(state); cc != nil {
		return p.claimsPreBind(ctx, cc, pod)
	}
	return nil
}

func (p *Plugin) permit(pod []byte, nodeName string) (int, string) {
	return p.core.Permit(pod, nodeName, time.Now().UnixNano())
}

// Permit holds a gang member until every member of its job is reserved,
// then lets the waiting ones go together.
func (p *Plugin) Permit(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) (*fwk.Status, time.Duration) {
	c := read(state)
	if c == nil || !c.managed {
		if readClaims(state) != nil {
			return p.claimsPermit(ctx, pod)
		}
		return nil, 0
	}
	rc, reason := p.permit(c.pod, nodeName)
	if st, d, ok := p.permitAnswer(ctx, pod, rc, reason); ok {
		return st, d
	}
	return status(rc, reason), 0
}

// permitAnswer is Permit's answer to the core's Wait (the job incomplete:
// the pod waits, its siblings go back to the active queue) or OK (the job
// complete: the waiting ones go together); ok false for any other code.
func (p *Plugin) permitAnswer(ctx context.Context, pod *v1.Pod, rc int, reason string) (st *fwk.Status, d time.Duration, ok bool) {
	switch rc {
	case shim.Wait:
		p.activateSiblings(ctx, pod)
		return fwk.NewStatus(fwk.Wait, reason), p.wait, true
	case shim.OK:
		p.allowWaiting()
		return nil, 0, true
	}
	return nil, 0, false
}

// activateSiblings moves the job's other pending members back to the
// active queue: they were refused while the job was incomplete, and nothing
// else would retry them now that its plan holds a slot for each (a member
// waiting in Permit is not bound, so no pod event comes).
func (p *Plugin) activateSiblings(ctx context.Context, pod *v1.Pod) {
	job := pod.Labels["gpu-topology"]
	if job == "" {
		return
	}
	sel := labels.SelectorFromSet(labels.Set{"gpu-topology": job})
	pods, err := p.h.SharedInformerFactory().Core().V1().Pods().Lister().Pods(pod.Namespace).List(sel)
	if err != nil {
		klog.FromContext(ctx).Error(err, "gpushare: the job's other members not activated", "pod", klog.KObj(pod), "job", job)
		return
	}
	m := map[string]*v1.Pod{}
	for _, o := range pods {
		if o.UID != pod.UID && o.Spec.NodeName == "" {
			m[o.Namespace+"/"+o.Name] = o
		}
	}
	if len(m) > 0 {
		p.h.Activate(klog.FromContext(ctx), m)
	}
}

// allowWaiting asks the core again for every waiting pod: those whose job
// is now all reserved may bind.
func (p *Plugin) allowWaiting() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.h.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		pod := wp.GetPod()
		b, err := cycleJSON(pod)
		if err != nil {
			klog.ErrorS(err, "gpushare: waiting pod not asked again", "pod", klog.KObj(pod))
			return
		}
		if p.claimPod(pod) {
			if rc, _ := p.core.ClaimGangPermit(b); rc == shim.OK {
				wp.Allow(Name)
			}
			return
		}
		// a refusal here is the member's own Permit answer already given:
		// it keeps waiting, or times out, as the core decides
		if rc, _ := p.permit(b, nominated(pod)); rc == shim.OK {
			wp.Allow(Name)
		}
	})
}

// nominated: the node a waiting pod was assumed on (the scheduler sets
// spec.nodeName on its assumed copy).
func nominated(pod *v1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	return pod.Status.NominatedNodeName
}

// Bind writes the Binding with the allocation annotations (docs/contract.md §4),
// then records it.
func (p *Plugin) Bind(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	c := read(state)
	if c == nil || !c.managed {
		return fwk.NewStatus(fwk.Skip)
	}
	b := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			Annotations: c.annots},
		Target: v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	// its labels and requests before the Binding (its updates are not fed
	// again, feed.go): the next cycle's PostFilter may weigh it as a victim
	// under a budget as soon as the Binding is written (docs/preemption.md
	// "Bound before the watch")
	p.core.PodMeta(c.pod)
	if err := p.h.ClientSet().CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		return fwk.AsStatus(err)
	}
	p.core.Confirm(string(pod.UID))
	p.bound.Store(pod.UID, struct{}{})
	return nil
}

// PostFilter: GPU-aware preemption from the core, on every node the pod
// was refused on as unschedulable (not only where node totals say victims
// exist, the extender's limit: docs/preemption.md). The core picks the node
// and the victims in one call; Go ends each victim as DefaultPreemption
// does (evict: the DisruptionTarget condition, then the deletion) and
// nominates the node. kube-scheduler's preemption Evaluator is not used:
// it picks the node in Go (its own ordering over a sample of candidates,
// each from a per-node dry run), where the core decides per GPU over every
// refused node at once (docs/preemption.md).
func (p *Plugin) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	c := read(state)
	if c == nil || !c.managed {
		if cc := readClaims(state); cc != nil {
			return p.claimsPostFilter(ctx, cc, pod, m) // claims_preempt.go
		}
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return nil, fwk.NewStatus(fwk.Unschedulable, "preemptionPolicy: Never")
	}
	names := []string{}
	for i := 0; i < c.verdict.Len(); i++ {
		if c.verdict.Code(i) == shim.Unschedulable {
			names = append(names, c.nodes.names[i])
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, fwk.NewStatus(fwk.Unschedulable, "gpushare: no node where preemption helps")
	}
	// the nodes' host resources (claims_preempt.go): victims that free a GPU
	// but leave the preemptor's CPU or memory short are not chosen
	res, ok := p.core.PreemptHost(c.pod, names, p.hostOf(names))
	if !ok {
		return nil, fwk.NewStatus(fwk.Unschedulable, "gpushare: no lower-priority pods free a GPU on any node")
	}
	choice, st := decodeChoice(res)
	if st != nil {
		return nil, st
	}
	if choice.Waiting != "" {
		return nil, fwk.NewStatus(fwk.Unschedulable, choice.Waiting)
	}
	if err := p.evictAll(ctx, pod, choice.Victims, func(*v1.Pod) string { return choice.Node },
		func(v victimRef, _ *v1.Pod) {
			klog.InfoS("gpushare: preempted", "preemptor", klog.KObj(pod), "victim",
				klog.KRef(v.Namespace, v.Name), "node", choice.Node, "pdbViolations", choice.PDBViolations)
		}); err != nil {
		p.core.PreemptForget(string(pod.UID)) // the next try chooses again
		return nil, fwk.AsStatus(err)
	}
	return &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{
		NominatedNodeName: choice.Node, NominatingMode: fwk.ModeOverride}}, fwk.NewStatus(fwk.Success)
}

// evict ends a victim as kube-scheduler's DefaultPreemption does: a pod
// waiting in Permit (a gang member) is rejected there, in memory; another
// first gets the DisruptionTarget condition (reason PreemptionByScheduler,
// DefaultPreemption's message) through its status, so that its controller
// and the kubelet know why it ends, then is deleted (its UID as
// precondition); a Normal Event Preempted is posted on it. A victim gone in
// between is no error.
func (p *Plugin) evict(ctx context.Context, preemptor, victim *v1.Pod, node string) error {
	if wp := p.h.GetWaitingPod(victim.UID); wp != nil && wp.Preempt(Name, "preempted") {
		p.h.EventRecorder().Eventf(victim, preemptor, v1.EventTypeNormal, "Preempted", "Preempting",
			"Preempted by pod %v on node %v (in kube-scheduler memory).", preemptor.UID, node)
		return nil
	}
	cs := p.h.ClientSet()
	cond := &v1.PodCondition{
		Type:               v1.DisruptionTarget,
		ObservedGeneration: apipod.CalculatePodConditionObservedGeneration(&victim.Status, victim.Generation, v1.DisruptionTarget),
		Status:             v1.ConditionTrue,
		Reason:             v1.PodReasonPreemptionByScheduler,
		Message: fmt.Sprintf("%s: preempting to accommodate a higher priority %s",
			preemptor.Spec.SchedulerName, fwk.PodKeyType),
	}
	st := victim.Status.DeepCopy()
	if apipod.UpdatePodCondition(st, cond) {
		err := schedutil.PatchPodStatus(ctx, cs, victim.Name, victim.Namespace, &victim.Status, st)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("DisruptionTarget condition: %w", err)
		}
	}
	uid := victim.UID
	err := cs.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	p.h.EventRecorder().Eventf(victim, preemptor, v1.EventTypeNormal, "Preempted", "Preempting",
		"Preempted by pod %v on node %v", preemptor.UID, node)
	return nil
}

// podDeleted is the queueing hint of a pod deletion: always Queue, after
// taking the pod out of the core when it is really gone. kube-scheduler's
// queue and the plugin's informer handler (feed.go) get the deletion on
// goroutines of their own, so a pod requeued by it could otherwise be
// retried against a ledger that still holds the deleted pod's GPUs, fail,
// and wait for the next event (a preemptor whose last victim just went:
// seen on the real control plane, test_real_plugin.py PluginNominatedHold).
// The hint runs before the pod is requeued. kube-scheduler also raises the
// event for pods that are not gone (an assumed pod forgotten after a failed
// binding cycle, a nominated pod's nomination changed): those are still in
// the pod informer's cache (updated before any handler runs), and are left
// to the handlers.
func (p *Plugin) podDeleted(_ klog.Logger, _ *v1.Pod, oldObj, _ interface{}) (fwk.QueueingHint, error) {
	pod, ok := final(oldObj).(*v1.Pod)
	if !ok {
		return fwk.Queue, nil
	}
	cur, err := p.h.SharedInformerFactory().Core().V1().Pods().Lister().Pods(pod.Namespace).Get(pod.Name)
	if apierrors.IsNotFound(err) || (err == nil && cur.UID != pod.UID) {
		p.forget(pod)
	}
	return fwk.Queue, nil
}

// EventsToRegister: a pod leaving frees GPUs; a node added or changed may
// bring some; a pod added may complete a gang.
func (p *Plugin) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: p.podDeleted},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add}},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.Update}},
		// claims gpushare places: a slice published, a claim freed
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceSlice, ActionType: fwk.Add | fwk.Update}},
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceClaim, ActionType: fwk.Update | fwk.Delete}},
	}, nil
}
