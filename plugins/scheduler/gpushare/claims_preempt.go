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
	"encoding/json"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"gpushare.io/scheduler/shim"
)

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
// node the preemptor is nominated to, a claim of gpushare's class whose
// consumer is gone or terminating, or reserved for nobody, still holds its
// memory — the victims of an earlier preemption, not yet deallocated.
func (p *Plugin) consumers(preemptor *v1.Pod) (out []shim.ClaimConsumer, waiting string, err error) {
	claims, err := p.h.SharedInformerFactory().Resource().V1().ResourceClaims().Lister().List(labels.Everything())
	if err != nil {
		return nil, "", err
	}
	pods := p.h.SharedInformerFactory().Core().V1().Pods().Lister()
	nominated := preemptor.Status.NominatedNodeName
	for _, c := range claims {
		if c.Status.Allocation == nil || !p.claimOurs(c) {
			continue
		}
		var pod *v1.Pod
		if rf := c.Status.ReservedFor; len(rf) == 1 && rf[0].APIGroup == "" && rf[0].Resource == "pods" {
			if q, err := pods.Pods(c.Namespace).Get(rf[0].Name); err == nil && q.UID == rf[0].UID {
				pod = q
			}
		}
		gone := pod == nil || pod.DeletionTimestamp != nil
		if gone && len(c.Status.ReservedFor) <= 1 && nominated != "" && allocatedOn(c, nominated) {
			waiting = fmt.Sprintf("gpushare: ResourceClaim %s on node %s is not freed yet", klog.KObj(c), nominated)
		}
		if gone || pod.UID == preemptor.UID || pod.Spec.SchedulerName != preemptor.Spec.SchedulerName ||
			pod.Labels["gpu-topology"] != "" {
			continue
		}
		out = append(out, shim.ClaimConsumer{Claim: string(c.UID), Namespace: pod.Namespace,
			Name: pod.Name, UID: string(pod.UID), Priority: podPriority(pod)})
	}
	return out, waiting, nil
}

// claimsPostFilter: preemption for a pod whose one unallocated gpushare
// claim fits on none of the nodes its claims' verdicts refused as
// unschedulable (and no other plugin refused for good).
func (p *Plugin) claimsPostFilter(ctx context.Context, cc *claimCycle, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return nil, fwk.NewStatus(fwk.Unschedulable, "preemptionPolicy: Never")
	}
	var open *podClaim
	for _, pc := range cc.claims {
		if pc.claim.Status.Allocation == nil {
			if open != nil {
				return nil, fwk.NewStatus(fwk.Unschedulable, "gpushare: preemption for one unallocated claim per pod only")
			}
			open = pc
		}
	}
	if open == nil {
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
		// as DefaultPreemption: no new victims while the last ones still
		// hold the nominated node (their claims deallocate shortly)
		return nil, fwk.NewStatus(fwk.Unschedulable, waiting)
	}
	b, err := cycleJSON(pod)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	res, why := p.core.ClaimPreempt(open.raw, b, names, p.hostOf(names), cons)
	if res == "" {
		return nil, fwk.NewStatus(fwk.Unschedulable, "gpushare: "+why)
	}
	var choice struct {
		Node          string `json:"node"`
		PDBViolations int    `json:"pdbViolations"`
		Victims       []struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
			UID       string `json:"uid"`
		} `json:"victims"`
	}
	if err := json.Unmarshal([]byte(res), &choice); err != nil {
		return nil, fwk.AsStatus(err)
	}
	lister := p.h.SharedInformerFactory().Core().V1().Pods().Lister()
	for _, v := range choice.Victims {
		victim, err := lister.Pods(v.Namespace).Get(v.Name)
		if apierrors.IsNotFound(err) || (err == nil && string(victim.UID) != v.UID) {
			continue
		}
		if err != nil {
			return nil, fwk.AsStatus(fmt.Errorf("preempting %s/%s: %w", v.Namespace, v.Name, err))
		}
		if err := p.evict(ctx, pod, victim, choice.Node); err != nil {
			return nil, fwk.AsStatus(fmt.Errorf("preempting %s/%s: %w", v.Namespace, v.Name, err))
		}
		klog.InfoS("gpushare: preempted", "preemptor", klog.KObj(pod), "victim",
			klog.KRef(v.Namespace, v.Name), "node", choice.Node, "pdbViolations", choice.PDBViolations)
	}
	return &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{
		NominatedNodeName: choice.Node, NominatingMode: fwk.ModeOverride}}, fwk.NewStatus(fwk.Success)
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
