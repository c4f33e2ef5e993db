package gpushare

// GPU-aware preemption for a Workload's PodGroup (docs/gangs.md
// "Preemption"). kube-scheduler's pod-group cycle runs no per-pod
// PostFilter (v1.37.2, schedule_one.go: a pod of a pod-group cycle that
// does not fit returns before PostFilter); when the group does not fit it
// runs the PodGroupPostFilter plugins once for the whole group
// (schedule_one_podgroup.go, podGroupCycle). DefaultPreemption's there
// removes victims from the snapshot and re-runs the group's algorithm,
// whose Filter (gpushare's) reads the ledger, not the snapshot, so it
// finds no GPU victims. gpushare's answers instead: the core's gang
// preemption (gs_sched_preempt_gang) for the group as one job of equal
// members — victims freeing a slot for every member the group still
// needs, or none — ended as PostFilter ends a victim (evict). Each
// member gets the slot the core chose for it, held in the core until it
// binds (docs/preemption.md "Pod groups' slots are held"), and is
// nominated to its slot's node; the members go back to the queue waiting
// on preemption and are retried when the victims are gone.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"gpushare.io/scheduler/shim"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

var _ fwk.PodGroupPostFilterPlugin = &Plugin{}

// gpuAsk is a pod's GPU requests (aliyun.com/* limits and requests, per
// container and init container) as text: "" when it asks for none.
func gpuAsk(pod *v1.Pod) string {
	var parts []string
	add := func(kind string, i int, c *v1.Container) {
		for _, rl := range []v1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
			for name, q := range rl {
				if strings.HasPrefix(string(name), "aliyun.com/") {
					parts = append(parts, fmt.Sprintf("%s%d:%s=%s", kind, i, name, q.String()))
				}
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		add("i", i, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		add("c", i, &pod.Spec.Containers[i])
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// groupNeed is how many members of the pod group the victims must make
// room for: its gang's minCount less the members bound already, at least
// one and at most the members being scheduled; every member being
// scheduled when the group has no gang policy.
func (p *Plugin) groupNeed(pgInfo fwk.PodGroupInfo, members []*v1.Pod) (int, error) {
	need := len(members)
	pg := pgInfo.GetPodGroup()
	if pg == nil || pg.Spec.SchedulingPolicy.Gang == nil {
		return need, nil
	}
	pods, err := p.h.SharedInformerFactory().Core().V1().Pods().Lister().Pods(pgInfo.GetNamespace()).List(labels.Everything())
	if err != nil {
		return 0, err
	}
	bound := 0
	for _, q := range pods {
		if q.Spec.NodeName != "" && q.DeletionTimestamp == nil && podGroupOf(q) == pgInfo.GetName() {
			bound++
		}
	}
	if m := int(pg.Spec.SchedulingPolicy.Gang.MinCount) - bound; m < need {
		need = max(m, 1)
	}
	return need, nil
}

// groupPod is the member the core is asked about: the group's first
// member, named a gpushare job of need replicas (the gang labels the core
// reads; the pod's own are left to the pod group, podgroup.go), outside
// any pod group so that its labels are kept.
func groupPod(pgInfo fwk.PodGroupInfo, first *v1.Pod, need int) ([]byte, error) {
	q := first.DeepCopy()
	l := make(map[string]string, len(q.Labels)+2)
	for k, v := range q.Labels {
		l[k] = v
	}
	l[labelGangJob] = "podgroup." + pgInfo.GetName()
	l[labelGangReplicas] = strconv.Itoa(need)
	q.Labels = l
	q.Spec.SchedulingGroup = nil
	return cycleJSON(q)
}

// PodGroupPostFilter: the pod group does not fit; victims of lower priority
// than its members on any node, freeing a slot for each member it needs,
// or nothing (docs/gangs.md "Preemption"). Members that differ in what GPU
// they ask are not preempted for (the core's slots are alike). Unschedulable
// lets the next plugin (DefaultPreemption) try.
func (p *Plugin) PodGroupPostFilter(ctx context.Context, _ fwk.PodGroupCycleState, pgInfo fwk.PodGroupInfo, _ fwk.PodGroupSchedulingFunc) (*fwk.PodGroupPostFilterResult, *fwk.Status) {
	members := pgInfo.GetUnscheduledPods()
	if len(members) == 0 || gpuAsk(members[0]) == "" {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	first := members[0]
	for _, m := range members[1:] {
		if gpuAsk(m) != gpuAsk(first) {
			return nil, fwk.NewStatus(fwk.Unschedulable, "gpushare: the pod group's members ask for different GPUs: no gang preemption")
		}
		if m.Spec.Priority != nil && (first.Spec.Priority == nil || *m.Spec.Priority < *first.Spec.Priority) {
			first = m // the lowest priority of the group: no member preempts above its own
		}
	}
	if first.Spec.PreemptionPolicy != nil && *first.Spec.PreemptionPolicy == v1.PreemptNever {
		return nil, fwk.NewStatus(fwk.Unschedulable, "preemptionPolicy: Never")
	}
	need, err := p.groupNeed(pgInfo, members)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	b, err := groupPod(pgInfo, first, need)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	infos, err := p.h.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	names := make([]string, 0, len(infos))
	for _, ni := range infos {
		if n := ni.Node(); n != nil {
			names = append(names, n.Name)
		}
	}
	sort.Strings(names)
	mjs := make([][]byte, len(members))
	for i, m := range members {
		if mjs[i], err = cycleJSON(m); err != nil {
			return nil, fwk.AsStatus(err)
		}
	}
	// the core chooses the victims and every member's slot, and holds each
	// slot for its member from now until it binds (gs_sched_preempt_group)
	choice, why := p.core.PreemptGroup(b, mjs, names, time.Now().UnixNano())
	if choice == nil {
		klog.V(4).InfoS("gpushare: no preemption for a pod group", "podGroup", klog.KRef(pgInfo.GetNamespace(), pgInfo.GetName()), "reason", why)
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
			"gpushare: lower-priority pods cannot free room for %d members of pod group %s/%s; none is evicted",
			need, pgInfo.GetNamespace(), pgInfo.GetName()))
	}
	if choice.Held != "" {
		klog.InfoS("gpushare: pod group's slots", "podGroup", klog.KRef(pgInfo.GetNamespace(), pgInfo.GetName()), "held", choice.Held)
	}
	victims := make([]victimRef, len(choice.Victims))
	for i, v := range choice.Victims {
		victims[i] = victimRef{Namespace: v.Namespace, Name: v.Name, UID: v.UID}
	}
	if err := p.evictAll(ctx, first, victims, func(v *v1.Pod) string { return v.Spec.NodeName },
		func(v victimRef, victim *v1.Pod) {
			klog.InfoS("gpushare: preempted for a pod group", "podGroup", klog.KRef(pgInfo.GetNamespace(), pgInfo.GetName()),
				"victim", klog.KRef(v.Namespace, v.Name), "node", victim.Spec.NodeName)
		}); err != nil {
		return nil, fwk.AsStatus(err)
	}
	return &fwk.PodGroupPostFilterResult{NominatingInfos: nominations(choice)}, fwk.NewStatus(fwk.Success,
		fmt.Sprintf("gpushare: preempting %d pods for pod group %s/%s", len(choice.Victims), pgInfo.GetNamespace(), pgInfo.GetName()))
}

// nominations: each member with a slot nominated to its slot's node, as
// DefaultPreemption's workload-aware preemption nominates a group's
// members (kube-scheduler sets their status.nominatedNodeName and counts
// them on the node for pods of no higher priority meanwhile).
func nominations(c *shim.GroupChoice) map[types.NamespacedName]*fwk.NominatingInfo {
	n := make(map[types.NamespacedName]*fwk.NominatingInfo, len(c.Members))
	for _, m := range c.Members {
		if m.Node != "" {
			n[types.NamespacedName{Namespace: m.Namespace, Name: m.Name}] = &fwk.NominatingInfo{
				NominatedNodeName: m.Node, NominatingMode: fwk.ModeOverride}
		}
	}
	return n
}
