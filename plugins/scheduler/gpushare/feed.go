// The core's feed and views: the scheduler's informers hand it nodes and
// pods, ConfigMap informers its configuration and unhealthy GPUs, a ticker
// its gang time-outs; a side listener serves its ledger, inspect and
// metrics (docs/plugin.md). Kept apart from plugin.go, the extension points.
package gpushare

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"gpushare.io/scheduler/shim"
)

// ---- the informers -------------------------------------------------------

// watch adds the core's handlers to the scheduler's Node and Pod
// informers; an informer that refuses a handler (it was stopped) fails the
// plugin's start.
func (p *Plugin) watch() error {
	f := p.h.SharedInformerFactory()
	nodeGone := func(o interface{}) {
		if n, ok := o.(*v1.Node); ok {
			p.core.NodeDelete(n.Name)
		}
	}
	if _, err := f.Core().V1().Nodes().Informer().AddEventHandler(feedHandlers(p.node, nodeGone)); err != nil {
		return fmt.Errorf("gpushare: node informer: %w", err)
	}
	podGone := func(o interface{}) { p.forget(o) }
	pods := feedHandlers(p.pod, podGone)
	pods.AddFunc = func(o interface{}) { p.pod(o); p.nomination(nil, o) }
	pods.UpdateFunc = func(old, o interface{}) { p.pod(o); p.nomination(old, o) }
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(pods); err != nil {
		return fmt.Errorf("gpushare: pod informer: %w", err)
	}
	// PodDisruptionBudgets: preemption ranks sets that violate none first
	// and counts violations (docs/preemption.md); DefaultPreemption reads
	// the same informer, so kube-scheduler's RBAC already allows it.
	pdb := func(o interface{}, deleted bool) {
		d, ok := final(o).(*policyv1.PodDisruptionBudget)
		if !ok {
			return
		}
		b, err := coreJSON(d)
		if err != nil {
			klog.ErrorS(err, "gpushare: PodDisruptionBudget not fed to the core", "pdb", klog.KObj(d))
			return
		}
		p.core.PDB(b, deleted)
	}
	if _, err := f.Policy().V1().PodDisruptionBudgets().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o interface{}) { pdb(o, false) },
		UpdateFunc: func(_, o interface{}) { pdb(o, false) },
		DeleteFunc: func(o interface{}) { pdb(o, true) },
	}); err != nil {
		return fmt.Errorf("gpushare: PodDisruptionBudget informer: %w", err)
	}
	return nil
}

// watchDRA feeds the core the scheduler's ResourceSlices and
// ResourceClaims (resource.k8s.io/v1, the informers kube-scheduler's
// DynamicResources plugin shares): the claims allocated on gpushare's GPUs
// are charged in the ledger (docs/dra.md).
func (p *Plugin) watchDRA() error {
	f := p.h.SharedInformerFactory()
	slices := func(deleted bool) func(interface{}) {
		return func(o interface{}) {
			if s, ok := final(o).(*resourcev1.ResourceSlice); ok {
				if b, err := coreJSON(s); err == nil {
					p.core.DRA(b, false, deleted)
				}
			}
		}
	}
	claims := func(deleted bool) func(interface{}) {
		return func(o interface{}) {
			if c, ok := final(o).(*resourcev1.ResourceClaim); ok {
				if b, err := coreJSON(c); err == nil {
					p.core.DRA(b, true, deleted)
				}
				if deleted {
					p.claimKind.Delete(c.UID) // whether gpushare places it (claims.go)
				}
			}
		}
	}
	if _, err := f.Resource().V1().ResourceSlices().Informer().AddEventHandler(
		feedHandlers(slices(false), slices(true))); err != nil {
		return fmt.Errorf("gpushare: ResourceSlice informer: %w", err)
	}
	if _, err := f.Resource().V1().ResourceClaims().Informer().AddEventHandler(
		feedHandlers(claims(false), claims(true))); err != nil {
		return fmt.Errorf("gpushare: ResourceClaim informer: %w", err)
	}
	return nil
}

// feedHandlers hands an informer's adds and updates to upsert, and a
// deletion's final state (final) to gone.
func feedHandlers(upsert, gone func(interface{})) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    upsert,
		UpdateFunc: func(_, o interface{}) { upsert(o) },
		DeleteFunc: func(o interface{}) { gone(final(o)) },
	}
}

// final is a deleted object as its informer last knew it: the object, or
// the last state a tombstone (a deletion the watch missed) carries.
func final(o interface{}) interface{} {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return o
}

func (p *Plugin) node(o interface{}) {
	if n, ok := o.(*v1.Node); ok {
		b, err := coreJSON(n)
		if err != nil {
			klog.ErrorS(err, "gpushare: node not fed to the core", "node", n.Name)
			return
		}
		p.core.Node(b)
	}
}

// coreJSON is an object as the core reads it, without its managedFields:
// no decoder of the core reads them, and on an object a client wrote they
// are a good part of its bytes, written here and parsed again in C (a pod
// every cycle: docs/plugin.md). The object itself is not changed.
func coreJSON[T any, P interface {
	*T
	metav1.Object
}](o P) ([]byte, error) {
	if len(o.GetManagedFields()) > 0 {
		cp := *o
		P(&cp).SetManagedFields(nil)
		o = &cp
	}
	return json.Marshal(o)
}

// podJSON is the pod as the core reads it (coreJSON).
func podJSON(pod *v1.Pod) ([]byte, error) { return coreJSON(withCoreLabels(pod)) }

// cycleJSON is the pod as the core's verbs read it (filter, sign, reserve,
// permit, preempt: gs_api_pod_decode in src/api/pod.c): its name,
// namespace, UID and labels, every container's resources, every init
// container's resources and restartPolicy (sidecars), the overhead and the
// priority. Nothing else of the pod is written: marshalling the whole pod
// took ≈ 90 µs of PreFilter's ≈ 200 in the live process (docs/benchmarks.md
// §9), and the C side parsed all of it again. A test holds the core's
// answers for both forms equal (TestCycleJSON). The informers still hand
// the core whole pods (podJSON): a bound pod's annotations are read there.
func cycleJSON(pod *v1.Pod) ([]byte, error) {
	q := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace,
		UID: pod.UID, Labels: coreLabels(pod)}}
	q.Spec.Priority = pod.Spec.Priority
	q.Spec.Overhead = pod.Spec.Overhead
	q.Spec.Containers = make([]v1.Container, len(pod.Spec.Containers))
	for i := range pod.Spec.Containers {
		q.Spec.Containers[i].Resources = pod.Spec.Containers[i].Resources
	}
	if n := len(pod.Spec.InitContainers); n > 0 {
		q.Spec.InitContainers = make([]v1.Container, n)
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			q.Spec.InitContainers[i] = v1.Container{Resources: c.Resources, RestartPolicy: c.RestartPolicy}
		}
	}
	return json.Marshal(&q)
}

// pod hands a pod to the core when it can matter there: bound (an
// allocation to restore, or GPUs to free when it ends), or a member of a
// distributed job (counted while pending). A pending pod outside any job is
// only ever read by the verbs, so its events are not sent (half of all pod
// events on a busy cluster).
func (p *Plugin) pod(o interface{}) {
	pod, ok := o.(*v1.Pod)
	if !ok || (pod.Spec.NodeName == "" && !gangMember(pod)) {
		return
	}
	// A pod this plugin bound (Reserve and Bind put it in the ledger) that
	// is still running: its update carries nothing the ledger lacks, and
	// marshalling it costs the scheduler CPU (docs/benchmarks.md §9). Ends
	// (Succeeded, Failed, deleted) and gang members are always sent.
	if !gangMember(pod) && pod.DeletionTimestamp == nil &&
		pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed {
		if _, mine := p.bound.Load(pod.UID); mine {
			return
		}
	}
	p.send(pod, "pod")
}

// send hands pod's JSON to the core; what names the pod in the log line
// when it cannot be marshalled.
func (p *Plugin) send(pod *v1.Pod, what string) {
	b, err := podJSON(pod)
	if err != nil {
		klog.ErrorS(err, "gpushare: "+what+" not fed to the core", "pod", klog.KObj(pod))
		return
	}
	p.core.Pod(b)
}

// gangMember: the pod is a member of one of gpushare's jobs (the label
// gpu-topology as the core reads it: a pod group's member is the pod
// group's, podgroup.go), which the core is sent on every event.
func gangMember(pod *v1.Pod) bool {
	return pod.Labels[labelGangJob] != "" && podGroupOf(pod) == ""
}

// forget takes a deleted pod (o, its final state) out of the core. Twice
// is harmless: the pod informer's handler calls it, and so does the
// queueing hint of a pod deletion (podDeleted, plugin.go), whichever comes
// first.
func (p *Plugin) forget(o interface{}) {
	if pod, ok := final(o).(*v1.Pod); ok {
		p.bound.Delete(pod.UID)
		p.core.PodDelete(string(pod.UID))
	}
}

// nomination hands the core a pending pod whose status.nominatedNodeName
// kube-scheduler set, changed or cleared (old nil: the pod was just listed),
// as the extender's feed does: the GPUs it will take on its node are held
// from then (gs_sched_nominate), and the hold ends when the nomination is
// cleared — the framework clears it when the pod is unschedulable again
// and no preemption helps (DefaultPreemption's answer), or on an error —
// not only when the pod is reserved, bound or deleted (docs/preemption.md).
// Members of a distributed job are sent by pod on every event already (a
// pod group's member is none: its gang labels are the pod group's).
func (p *Plugin) nomination(old, o interface{}) {
	pod, ok := o.(*v1.Pod)
	if !ok || pod.Spec.NodeName != "" || gangMember(pod) {
		return
	}
	was := ""
	if q, ok := old.(*v1.Pod); ok {
		was = q.Status.NominatedNodeName
	}
	if was == pod.Status.NominatedNodeName {
		return
	}
	p.send(pod, "nominated pod")
}

func (p *Plugin) tick(ctx context.Context) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			p.core.Tick(now.UnixNano())
			p.notices()
		}
	}
}

// readConfigMap reads the configuration's ConfigMap at start-up, as the
// extender does: the unit must be known before the ledger exists. A
// missing ConfigMap is no configuration; other failures are retried with
// backoff until the scheduler stops.
func readConfigMap(ctx context.Context, h fwk.Handle, ref string) (string, string, []byte, error) {
	if ref == "-" {
		return "", "", nil, nil
	}
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" {
		return "", "", nil, fmt.Errorf("gpushare plugin args: configMap: %q is not NS/NAME", ref)
	}
	delay := 800 * time.Millisecond
	for {
		cm, err := h.ClientSet().CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			b, err := json.Marshal(cm.Data)
			if err != nil {
				return "", "", nil, fmt.Errorf("gpushare: ConfigMap %s: %w", ref, err)
			}
			klog.InfoS("gpushare: configuration read", "configmap", ref)
			return ns, name, b, nil
		}
		if apierrors.IsNotFound(err) {
			klog.InfoS("gpushare: no ConfigMap: defaults", "configmap", ref)
			return ns, name, nil, nil
		}
		klog.ErrorS(err, "gpushare: cannot read the ConfigMap; retrying", "configmap", ref)
		select {
		case <-ctx.Done():
			return "", "", nil, ctx.Err()
		case <-time.After(delay):
		}
		if delay *= 2; delay > 30*time.Second {
			delay = 30 * time.Second
		}
	}
}

// watchConfigMaps feeds the core the ConfigMaps it reads (the
// configuration's, for pendingUnit; kube-system/unhealthy-gpu-<node>) from
// an informer on their namespaces only.
func (p *Plugin) watchConfigMaps(ctx context.Context, cmNs string) error {
	namespaces := []string{"kube-system"}
	if cmNs != "kube-system" {
		namespaces = append(namespaces, cmNs)
	}
	send := func(o interface{}, deleted bool) {
		cm, ok := final(o).(*v1.ConfigMap)
		if !ok {
			return
		}
		b, err := json.Marshal(cm)
		if err != nil {
			klog.ErrorS(err, "gpushare: ConfigMap not fed to the core", "configmap", klog.KObj(cm))
			return
		}
		if text := p.core.ConfigMap(b, deleted); text != "" {
			// as the extender: a Warning Event on the ConfigMap
			p.h.EventRecorder().Eventf(cm, nil, v1.EventTypeWarning, "InvalidConfiguration",
				"Configuration", "%s", text)
		}
	}
	for _, ns := range namespaces {
		f := informers.NewSharedInformerFactoryWithOptions(p.h.ClientSet(), 0, informers.WithNamespace(ns))
		if _, err := f.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o interface{}) { send(o, false) },
			UpdateFunc: func(_, o interface{}) { send(o, false) },
			DeleteFunc: func(o interface{}) { send(o, true) },
		}); err != nil {
			return fmt.Errorf("gpushare: ConfigMap informer on %s: %w", ns, err)
		}
		f.Start(ctx.Done())
	}
	return nil
}

// serve answers /debug/ledger[?node=N], /gpushare-scheduler/inspect[/N]
// and /metrics with the extender's bytes and statuses (docs/api.md).
func (p *Plugin) serve(addr string) {
	mux := http.NewServeMux()
	view := func(w http.ResponseWriter, node string, inspect bool) {
		body, code := p.core.View(node, inspect)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		written(w.Write([]byte(body)))
	}
	mux.HandleFunc("/debug/ledger", func(w http.ResponseWriter, r *http.Request) {
		view(w, r.URL.Query().Get("node"), false)
	})
	mux.HandleFunc("/gpushare-scheduler/inspect", func(w http.ResponseWriter, _ *http.Request) {
		view(w, "", true)
	})
	mux.HandleFunc("/gpushare-scheduler/inspect/", func(w http.ResponseWriter, r *http.Request) {
		view(w, strings.TrimPrefix(r.URL.Path, "/gpushare-scheduler/inspect/"), true)
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		text, ok := p.core.Metrics()
		if !ok {
			http.Error(w, "out of memory", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		written(w.Write([]byte(text)))
	})
	klog.InfoS("gpushare: serving /debug/ledger, inspect and /metrics", "address", addr)
	if err := http.ListenAndServe(addr, mux); err != nil {
		klog.ErrorS(err, "gpushare: debug listener stopped", "address", addr)
	}
}

// written logs an answer the client did not take (it went away: nothing
// else to do).
func written(_ int, err error) {
	if err != nil {
		klog.V(2).InfoS("gpushare: debug answer not written", "err", err)
	}
}

// notices logs what the core reported from its tick (a gang timed out) and
// posts a Warning Event GangTimeout on each member not bound, as the
// extender does (docs/gangs.md).
func (p *Plugin) notices() {
	text, ok := p.core.Notices()
	if !ok {
		return
	}
	var ns []shim.Notice
	if err := json.Unmarshal([]byte(text), &ns); err != nil {
		klog.ErrorS(err, "gpushare: the core's notices not read", "notices", text)
		return
	}
	for _, n := range ns {
		if n.Pod == "" {
			klog.InfoS("gpushare: gang timed out", "job", n.Namespace+"/"+n.Job, "message", n.Message)
			continue
		}
		ref := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: n.Namespace, Name: n.Pod, UID: types.UID(n.UID)}}
		p.h.EventRecorder().Eventf(ref, nil, v1.EventTypeWarning, "GangTimeout", "Scheduling", "%s", n.Message)
	}
}
