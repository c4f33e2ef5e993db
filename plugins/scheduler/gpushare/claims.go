package gpushare

// gpushare placing DRA claims (docs/dra.md, issue 33 item 2): a pod's
// ResourceClaims of the DeviceClass gpushare.io are placed by the C core —
// Filter and Score per node from gs_sched_claim_filter, the GPUs chosen and
// charged in Reserve (gs_sched_claim_reserve) — and written in PreBind as
// kube-scheduler's DynamicResources would: status.allocation (device
// results with driver, pool, device, consumedCapacity, shareID; the node
// selector) and reservedFor, through the status subresource. Which claims
// are gpushare's, and what of them it places, the core says (the shim's
// answer Skip: not gpushare's). kube-scheduler's DynamicResources sees the
// pod without them (dynres.go). Go converts and calls.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/util/retry"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"gpushare.io/scheduler/shim"
)

const claimsKey fwk.StateKey = "gpushare.io/claims"

// plugins: the GpuShare plugin of each profile, by its handle, for the
// DynamicResources wrapper of the same profile (dynres.go).
var plugins sync.Map // fwk.Handle → *Plugin

// podClaim is one of the pod's claims gpushare places.
type podClaim struct {
	claim   *resourcev1.ResourceClaim // as PreFilter read it
	raw     []byte                    // its JSON, as the core reads it
	choice  *shim.ClaimChoice         // Reserve's (nil: allocated before, or not reserved)
	written *resourcev1.ResourceClaim // PreBind's update (nil: none)
}

// claimCycle is what the claims carry between extension points.
type claimCycle struct {
	claims  []*podClaim
	at      map[string]int // node → position in the verdicts
	codes   []int
	reasons []string
	scores  []int64
	shape   []byte // the pod's one claim to place, whose gpu-mem shape scores the pod (nil: none)
	pod     []byte // the pod as the core reads it (cycleJSON): holds are weighed for it
}

// Clone: a copy whose Reserve and PreBind write their own.
func (c *claimCycle) Clone() fwk.StateData {
	cp := *c
	cp.claims = make([]*podClaim, len(c.claims))
	for i, pc := range c.claims {
		x := *pc
		cp.claims[i] = &x
	}
	return &cp
}

func readClaims(state fwk.CycleState) *claimCycle { return readAs[claimCycle](state, claimsKey) }

// ours: whether the core places the claim (its spec is immutable: the
// answer is kept by UID).
func (p *Plugin) ours(claim *resourcev1.ResourceClaim) (bool, []byte, error) {
	raw, err := json.Marshal(claim)
	if err != nil {
		return false, nil, err
	}
	if v, ok := p.claimKind.Load(claim.UID); ok {
		return v.(bool), raw, nil
	}
	rc, _, _ := p.core.ClaimFilter(nil, raw, nil)
	mine := rc != shim.Skip
	p.claimKind.Store(claim.UID, mine)
	return mine, raw, nil
}

// claimGetter reads claims as kube-scheduler's DRA manager has them (with
// its own assumed writes), else from the informer.
func (p *Plugin) getClaim(ns, name string) (*resourcev1.ResourceClaim, error) {
	if m := p.h.SharedDRAManager(); m != nil {
		return m.ResourceClaims().Get(ns, name)
	}
	return p.h.SharedInformerFactory().Resource().V1().ResourceClaims().Lister().ResourceClaims(ns).Get(name)
}

// podClaims is the pod's claims gpushare places, and the names (the pod's
// spec.resourceClaims entries) they were found under. A claim not created
// yet is not gpushare's here (DynamicResources waits for it).
func (p *Plugin) podClaims(pod *v1.Pod) ([]*podClaim, map[string]bool, error) {
	var out []*podClaim
	names := map[string]bool{}
	for i := range pod.Spec.ResourceClaims {
		pr := &pod.Spec.ResourceClaims[i]
		name, checkOwner, err := resourceclaim.Name(pod, pr)
		if err != nil || name == nil {
			continue // not generated yet, or not needed: DynamicResources' business
		}
		claim, err := p.getClaim(pod.Namespace, *name)
		if err != nil {
			continue
		}
		if checkOwner && resourceclaim.IsForPod(pod, claim, false) != nil {
			continue
		}
		mine, raw, err := p.ours(claim)
		if err != nil {
			return nil, nil, err
		}
		if mine {
			out = append(out, &podClaim{claim: claim, raw: raw})
			names[pr.Name] = true
		}
	}
	return out, names, nil
}

// claimsPreFilter: the verdicts of the pod's gpushare claims on every node,
// in the cycle state; nil when it has none.
func (p *Plugin) claimsPreFilter(state fwk.CycleState, pod *v1.Pod, ix *nodeIndex) *fwk.Status {
	claims, _, err := p.podClaims(pod)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if len(claims) == 0 {
		return nil
	}
	n := len(ix.names)
	b, err := cycleJSON(pod)
	if err != nil {
		return fwk.AsStatus(err)
	}
	cc := &claimCycle{claims: claims, at: ix.at, codes: make([]int, n), reasons: make([]string, n),
		scores: make([]int64, n), pod: b}
	for _, pc := range claims {
		c := pc.claim
		if c.Status.Allocation != nil {
			if !resourceclaim.CanBeReserved(c) && !resourceclaim.IsReservedForPod(pod, c, false) {
				return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gpushare: ResourceClaim %s is in use", klog.KObj(c)))
			}
			// allocated: the pod goes where its devices are
			for i, name := range ix.names {
				if cc.codes[i] == shim.OK && !allocatedOn(c, name) {
					cc.codes[i], cc.reasons[i] = shim.Unschedulable,
						fmt.Sprintf("ResourceClaim %s is allocated on another node", c.Name)
				}
			}
			continue
		}
		rc, reason, v := p.core.ClaimFilter(cc.pod, pc.raw, ix.names)
		if rc != shim.OK {
			return status(rc, "gpushare: "+reason)
		}
		if len(claims) == 1 {
			cc.shape = pc.raw
		}
		for i := range ix.names {
			if cc.codes[i] == shim.OK && v.Codes[i] != shim.OK {
				cc.codes[i], cc.reasons[i] = v.Codes[i], "gpushare: "+v.Reasons[i]
			}
			cc.scores[i] += v.Scores[i] / int64(len(claims))
		}
	}
	state.Write(claimsKey, cc)
	return nil
}

// allocatedOn: the claim's node selector names node (gpushare writes one
// matchFields metadata.name term; the pools are the nodes).
func allocatedOn(c *resourcev1.ResourceClaim, node string) bool {
	sel := c.Status.Allocation.NodeSelector
	if sel == nil {
		return true // network-attached: anywhere
	}
	for _, t := range sel.NodeSelectorTerms {
		for _, f := range t.MatchFields {
			if f.Key == "metadata.name" && f.Operator == v1.NodeSelectorOpIn && slices.Contains(f.Values, node) {
				return true
			}
		}
	}
	return false
}

func (cc *claimCycle) filter(node string) *fwk.Status {
	i, ok := cc.at[node]
	if !ok {
		return fwk.NewStatus(fwk.Unschedulable, "node unknown to gpushare")
	}
	return status(cc.codes[i], cc.reasons[i])
}

func (cc *claimCycle) score(node string) int64 {
	if i, ok := cc.at[node]; ok {
		return cc.scores[i]
	}
	return 0
}

// claimsReserve: the core chooses and charges each unallocated claim's GPUs
// on node.
func (p *Plugin) claimsReserve(cc *claimCycle, node string) *fwk.Status {
	for _, pc := range cc.claims {
		if pc.claim.Status.Allocation != nil {
			continue
		}
		rc, reason, choice := p.core.ClaimReserve(cc.pod, pc.raw, node, time.Now().UnixNano())
		if rc != shim.OK {
			p.claimsUnreserve(context.Background(), cc)
			return status(rc, "gpushare: "+reason)
		}
		pc.choice = &choice
	}
	return nil
}

// claimsUnreserve gives back what Reserve charged, and an allocation PreBind
// wrote (DynamicResources' Unreserve does the same with its own).
func (p *Plugin) claimsUnreserve(ctx context.Context, cc *claimCycle) {
	for _, pc := range cc.claims {
		if pc.choice == nil {
			continue
		}
		if pc.written != nil {
			c := pc.written.DeepCopy()
			c.Status.Allocation = nil
			c.Status.ReservedFor = nil
			if _, err := p.h.ClientSet().ResourceV1().ResourceClaims(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
				klog.FromContext(ctx).Error(err, "gpushare: claim allocation not undone", "claim", klog.KObj(c))
			}
			pc.written = nil
		}
		p.core.ClaimUnreserve(string(pc.claim.UID))
		pc.choice = nil
	}
}

// allocation is the claim's status.allocation for the core's choice, as
// kube-scheduler's DynamicResources writes one: a result per device with a
// fresh shareID on a shared device and the memory consumed, and the node
// selector of the node (the device pools are nodes).
func allocation(c *shim.ClaimChoice) (*resourcev1.AllocationResult, error) {
	a := &resourcev1.AllocationResult{NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn,
			Values: []string{c.Node}}}}}}}
	for _, d := range c.Results {
		r := resourcev1.DeviceRequestAllocationResult{Request: c.Request, Driver: d.Driver, Pool: d.Pool, Device: d.Device}
		if d.Shared {
			id := types.UID(uuid.NewUUID())
			r.ShareID = &id
		}
		if d.Memory != "" {
			q, err := resource.ParseQuantity(d.Memory)
			if err != nil {
				return nil, fmt.Errorf("the core's memory %q: %w", d.Memory, err)
			}
			r.ConsumedCapacity = map[resourcev1.QualifiedName]resource.Quantity{"memory": q}
		}
		a.Devices.Results = append(a.Devices.Results, r)
	}
	return a, nil
}

// claimsPreBind writes each claim's allocation (the ones Reserve chose) and
// the pod into reservedFor, through the status subresource, as
// DynamicResources' PreBind does (the finalizer first, by an update).
func (p *Plugin) claimsPreBind(ctx context.Context, cc *claimCycle, pod *v1.Pod) *fwk.Status {
	cs := p.h.ClientSet().ResourceV1()
	for _, pc := range cc.claims {
		if resourceclaim.IsReservedForPod(pod, pc.claim, false) {
			continue
		}
		var alloc *resourcev1.AllocationResult
		if pc.choice != nil {
			a, err := allocation(pc.choice)
			if err != nil {
				return fwk.AsStatus(err)
			}
			alloc = a
		}
		claim := pc.claim.DeepCopy()
		refresh := false
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if refresh {
				c, err := cs.ResourceClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				claim = c
			}
			refresh = true
			if claim.DeletionTimestamp != nil {
				return fmt.Errorf("ResourceClaim %s deleted meanwhile", klog.KObj(claim))
			}
			if alloc != nil {
				if claim.Status.Allocation != nil {
					return fmt.Errorf("ResourceClaim %s allocated by another meanwhile", klog.KObj(claim))
				}
				if !slices.Contains(claim.Finalizers, resourcev1.Finalizer) {
					claim.Finalizers = append(claim.Finalizers, resourcev1.Finalizer)
					c, err := cs.ResourceClaims(claim.Namespace).Update(ctx, claim, metav1.UpdateOptions{})
					if err != nil {
						return err
					}
					claim = c
				}
				claim.Status.Allocation = alloc
			} else if claim.Status.Allocation == nil {
				return fmt.Errorf("ResourceClaim %s deallocated meanwhile", klog.KObj(claim))
			}
			claim.Status.ReservedFor = append(claim.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{
				Resource: "pods", Name: pod.Name, UID: pod.UID})
			c, err := cs.ResourceClaims(claim.Namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{})
			if err != nil {
				return err
			}
			claim = c
			return nil
		})
		if err != nil {
			return fwk.AsStatus(fmt.Errorf("gpushare: writing ResourceClaim %s: %w", klog.KObj(claim), err))
		}
		if alloc != nil {
			pc.written = claim
		}
		if m := p.h.SharedDRAManager(); m != nil {
			// the DRA manager (DynamicResources' allocator for the other
			// claims) counts the devices at once, not when the informer tells
			_ = m.ResourceClaims().AssumeClaimAfterAPICall(claim)
		}
		p.core.DRA(mustJSON(claim), true, false) // charged as allocated, not as reserved
	}
	p.claimVictims.Delete(pod.UID) // placed: its preemption, if any, is done (claims_preempt.go)
	return nil
}

func mustJSON(o interface{}) []byte {
	b, _ := json.Marshal(o)
	return b
}

// claimPod: a pod whose GPUs are claims gpushare places (and no gpu-mem).
func (p *Plugin) claimPod(pod *v1.Pod) bool {
	if len(pod.Spec.ResourceClaims) == 0 {
		return false
	}
	claims, _, _ := p.podClaims(pod)
	return len(claims) > 0
}

// claimsPermit: a gang member among claim pods (gpu-topology labels) waits
// until every member of its job is reserved (gs_sched_claim_gang_permit),
// then the waiting ones go together.
func (p *Plugin) claimsPermit(ctx context.Context, pod *v1.Pod) (*fwk.Status, time.Duration) {
	b, err := cycleJSON(pod)
	if err != nil {
		return fwk.AsStatus(err), 0
	}
	rc, reason := p.core.ClaimGangPermit(b)
	if rc == shim.Skip {
		return nil, 0
	}
	if st, d, ok := p.permitAnswer(ctx, pod, rc, reason); ok {
		return st, d
	}
	return fwk.AsStatus(fmt.Errorf("gpushare: %s", reason)), 0
}
