package gpushare

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	fwk "k8s.io/kube-scheduler/framework"
)

// victimRef is one victim the core chose.
type victimRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// preemptChoice is the core's answer to a preemption (shim.h): the node,
// the victims, and how many disruption budgets the set violates.
type preemptChoice struct {
	Node          string      `json:"node"`
	PDBViolations int         `json:"pdbViolations"`
	Victims       []victimRef `json:"victims"`
	// Waiting: the victims of its last preemption still hold their GPUs
	// (not every deletion fed yet): no new victims (shim.h)
	Waiting string `json:"waiting"`
}

func decodeChoice(res string) (*preemptChoice, *fwk.Status) {
	var c preemptChoice
	if err := json.Unmarshal([]byte(res), &c); err != nil {
		return nil, fwk.AsStatus(err)
	}
	return &c, nil
}

// evictAll ends each victim still there for preemptor (evict), the node
// each was chosen on given by nodeOf, and calls done after each; a victim
// gone already, or another pod of its name now, is skipped. The first
// failure stops it.
func (p *Plugin) evictAll(ctx context.Context, preemptor *v1.Pod, victims []victimRef,
	nodeOf func(*v1.Pod) string, done func(victimRef, *v1.Pod)) error {
	pods := p.h.SharedInformerFactory().Core().V1().Pods().Lister()
	for _, v := range victims {
		victim, err := pods.Pods(v.Namespace).Get(v.Name)
		if apierrors.IsNotFound(err) || (err == nil && string(victim.UID) != v.UID) {
			continue // gone already (or another pod of that name now)
		}
		if err == nil {
			err = p.evict(ctx, preemptor, victim, nodeOf(victim))
		}
		if err != nil {
			return fmt.Errorf("preempting %s/%s: %w", v.Namespace, v.Name, err)
		}
		done(v, victim)
	}
	return nil
}
