package gpushare

// Preemption for claim pods (docs/dra.md "Preempting for claim pods", issue
// 33): a pod whose unallocated claim of gpushare's DeviceClass fits nowhere
// gets victims from the C core (gs_sched_claim_preempt): gpu-mem pods, and
// claims gpushare placed, each standing in for its one consumer pod at that
// pod's priority. Go only says which claims may stand in (consumers: the
// rule below), ends the victims as PostFilter ends gpu-mem ones (evict) and
// nominates the node; once kube-controller-manager's resourceclaim
// controller has deallocated the victims' claims, the preemptor's claim is
// placed by the ordinary cycle (a ResourceClaim update requeues it).

import (
	"context"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"gpushare.io/scheduler/shim"
)

// claimVictims: a preemptor's last victims (pod UIDs) and node, until their
// claims are freed. kube-scheduler nominates the preemptor after PostFilter
// and its status reaches the informer later: a retry in between would not
// see the nomination and choose a second set (the real test saw eight pods
// go for one GPU). Kept per preemptor UID; an entry goes when no claim of
// its victims is allocated any more, or when an eviction failed.
type claimVictims struct {
	node   string
	pods   map[types.UID]bool
	claims map[types.UID]bool // their claims: kube-controller-manager empties reservedFor before it deallocates
}

func podPriority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// claimOurs: whether the core places the claim, from the cache when known
// (a claim's spec is immutable), else asked.
func (p *Plugin) claimOurs(c *resourcev1.ResourceClaim) bool {
	if v, ok := p.claimKind.Load(c.UID); ok {
		return v.(bool)
	}
	mine, _, err := p.ours(c)
	return err == nil && mine
}

// consumers is the claims that may stand in for their pod as victims of
// preemptor: a claim of gpushare's DeviceClass, allocated, whose
// status.reservedFor names exactly one pod — a pod that exists (same UID,
// not terminating), is scheduled by the preemptor's scheduler (so gpushare,
// not another allocator, placed the claim) and is no gang member (those are
// never victims). Every other claim (allocated by someone else, shared by
// several pods, reserved for nothing) stays a never-victim. waiting: on the
// node the preemptor is nominated to, a claim of gpushare's class still
// reserved for its one pod, now gone or terminating, still holds its
// memory — the victims of an earlier preemption, not yet deallocated.
func (p *Plugin) consumers(preemptor *v1.Pod) (out []shim.ClaimConsumer, waiting string, err error) {
	claims, err := p.h.SharedInformerFactory().Resource().V1().ResourceClaims().Lister().List(labels.Everything())
	if err != nil {
		return nil, "", err
	}
	pods := p.h.SharedInformerFactory().Core().V1().Pods().Lister()
	nominated := preemptor.Status.NominatedNodeName
	var last *claimVictims
	if v, ok := p.claimVictims.Load(preemptor.UID); ok {
		last = v.(*claimVictims)
	}
	for _, c := range claims {
		if c.Status.Allocation == nil || !p.claimOurs(c) {
			continue
		}
		if last != nil && last.claims[c.UID] {
			// a victim's claim, reserved for nobody now, not deallocated yet
			waiting = fmt.Sprintf("gpushare: ResourceClaim %s of a preempted pod on node %s is not freed yet",
				klog.KObj(c), last.node)
			continue
		}
		rf := c.Status.ReservedFor
		if len(rf) != 1 || rf[0].APIGroup != "" || rf[0].Resource != "pods" {
			continue // shared, reserved for nobody, or not for a pod
		}
		if last != nil && last.pods[rf[0].UID] {
			// evicted (the pod informer may not have seen it yet)
			waiting = fmt.Sprintf("gpushare: ResourceClaim %s of a preempted pod on node %s is not freed yet",
				klog.KObj(c), last.node)
			continue
		}
		pod, err := pods.Pods(c.Namespace).Get(rf[0].Name)
		if err != nil || pod.UID != rf[0].UID || pod.DeletionTimestamp != nil {
			// its pod is gone or ending: the claim is freed shortly
			if nominated != "" && allocatedOn(c, nominated) {
				waiting = fmt.Sprintf("gpushare: ResourceClaim %s on node %s is not freed yet", klog.KObj(c), nominated)
			}
			continue
		}
		if pod.UID == preemptor.UID || pod.Spec.SchedulerName != preemptor.Spec.SchedulerName ||
			pod.Labels["gpu-topology"] != "" {
			continue
		}
		out = append(out, shim.ClaimConsumer{Claim: string(c.UID), Namespace: pod.Namespace,
			Name: pod.Name, UID: string(pod.UID), Priority: podPriority(pod)})
	}
	if last != nil && waiting == "" {
		p.claimVictims.Delete(preemptor.UID) // every victim's claim freed
	}
	return out, waiting, nil
}

// claimsPostFilter: preemption for a pod whose unallocated gpushare claims
// (one or several, memory or whole devices) fit on none of the nodes its
// claims' verdicts refused as unschedulable (and no other plugin refused
// for good). The core holds the pod's GPUs on the node it answers (one
// claim of memory) until the pod's claim is reserved, the pod goes or its
// nomination is cleared (feed.go's nomination hands the core the cleared
// one).
func (p *Plugin) claimsPostFilter(ctx context.Context, cc *claimCycle, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return nil, fwk.NewStatus(fwk.Unschedulable, "preemptionPolicy: Never")
	}
	var open [][]byte
	for _, pc := range cc.claims {
		if pc.claim.Status.Allocation == nil {
			open = append(open, pc.raw)
		}
	}
	if len(open) == 0 {
		return nil, fwk.NewStatus(fwk.Unschedulable, "gpushare: the pod's claims are allocated already")
	}
	names := []string{}
	for name, i := range cc.at {
		if cc.codes[i] != shim.Unschedulable {
			continue
		}
		if st := m.Get(name); st != nil && st.Code() == fwk.UnschedulableAndUnresolvable {
			continue // another plugin refused the node for good
		}
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, fwk.NewStatus(fwk.Unschedulable, "gpushare: no node where preemption helps")
	}
	cons, waiting, err := p.consumers(pod)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	if waiting != "" {
		return p.keepNomination(pod, waiting)
	}
	b, err := cycleJSON(pod)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	res, why := p.core.ClaimPreempt(open, b, names, p.hostOf(names), cons)
	if res == "" {
		return nil, fwk.NewStatus(fwk.Unschedulable, "gpushare: "+why)
	}
	choice, st := decodeChoice(res)
	if st != nil {
		return nil, st
	}
	chosen := &claimVictims{node: choice.Node, pods: map[types.UID]bool{}, claims: map[types.UID]bool{}}
	for _, v := range choice.Victims {
		chosen.pods[types.UID(v.UID)] = true
	}
	for _, c := range cons {
		if chosen.pods[types.UID(c.UID)] {
			chosen.claims[types.UID(c.Claim)] = true
		}
	}
	p.claimVictims.Store(pod.UID, chosen) // before the first eviction: a retry waits for them
	if err := p.evictAll(ctx, pod, choice.Victims, func(*v1.Pod) string { return choice.Node },
		func(v victimRef, _ *v1.Pod) {
			klog.InfoS("gpushare: preempted", "preemptor", klog.KObj(pod), "victim",
				klog.KRef(v.Namespace, v.Name), "node", choice.Node, "pdbViolations", choice.PDBViolations)
		}); err != nil {
		p.claimVictims.Delete(pod.UID) // the next PostFilter chooses again
		return nil, fwk.AsStatus(err)
	}
	return &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{
		NominatedNodeName: choice.Node, NominatingMode: fwk.ModeOverride}}, fwk.NewStatus(fwk.Success)
}

// keepNomination: as DefaultPreemption does for a pod whose victims still
// terminate, no new victims while the last ones hold the node (their claims
// deallocate shortly), and the pod stays nominated there — so its GPUs stay
// held (gs_sched_claim_nominate). Answered as a success with the node:
// an Unschedulable answer would let DefaultPreemption, after this plugin,
// look for victims of its own, find none and clear the nomination (which
// ends the hold: seen on the real control plane, where a low-priority pod
// then took the freed GPU and was preempted in turn). Unschedulable when no
// node is known.
func (p *Plugin) keepNomination(pod *v1.Pod, waiting string) (*fwk.PostFilterResult, *fwk.Status) {
	node := pod.Status.NominatedNodeName
	if v, ok := p.claimVictims.Load(pod.UID); ok {
		node = v.(*claimVictims).node
	}
	if node == "" {
		return nil, fwk.NewStatus(fwk.Unschedulable, waiting)
	}
	return &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{
		NominatedNodeName: node, NominatingMode: fwk.ModeOverride}}, fwk.NewStatus(fwk.Success, waiting)
}

// hostOf: the nodes' allocatable and requested CPU and memory, 4 per node
// (0s: unknown, not checked), as PostFilter hands them to the core.
func (p *Plugin) hostOf(names []string) []int64 {
	host := make([]int64, 0, 4*len(names))
	for _, name := range names {
		var a, r fwk.Resource
		if ni, err := p.h.SnapshotSharedLister().NodeInfos().Get(name); err == nil {
			a, r = ni.GetAllocatable(), ni.GetRequested()
		}
		if a == nil || r == nil {
			host = append(host, 0, 0, 0, 0)
			continue
		}
		host = append(host, a.GetMilliCPU(), r.GetMilliCPU(), a.GetMemory(), r.GetMemory())
	}
	return host
}
