package gpushare

// Kubernetes' Workload API (scheduling.k8s.io/v1beta1 Workload and
// PodGroup, feature gate GenericWorkload, beta and off by default in
// v1.37): a pod names its group in spec.schedulingGroup.podGroupName, and
// kube-scheduler's pod-group cycle schedules the group's queued pods in one
// go: each member's PreFilter, Filter, Score and Reserve in turn, so each
// sees the ones before it in gpushare's ledger; every Reserve undone
// (Unreserve, in reverse) once the group is judged; then, if it fits,
// Reserve and Permit again for each member, GangScheduling's Permit
// holding them until the PodGroup's minCount are reserved
// (docs/gangs.md "Kubernetes' Workload API"). The group is kube-scheduler's
// gang: gpushare's own (the labels gpu-topology and gpu-topology-replica)
// would plan the same GPUs a second time, so a pod of a group is handed to
// the core without those labels. With the gate off the apiserver drops
// spec.schedulingGroup and the labels work as before.

import (
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/features"
)

const (
	labelGangJob      = "gpu-topology"
	labelGangReplicas = "gpu-topology-replica"
)

// workloads: the GenericWorkload gate, as kube-scheduler's --feature-gates
// set it (read by New).
var workloads atomic.Bool

func readWorkloadGate() {
	workloads.Store(utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload))
}

// podGroupOf is the PodGroup the pod names ("" when none, or the gate is off).
func podGroupOf(pod *v1.Pod) string {
	if !workloads.Load() || pod.Spec.SchedulingGroup == nil || pod.Spec.SchedulingGroup.PodGroupName == nil {
		return ""
	}
	return *pod.Spec.SchedulingGroup.PodGroupName
}

// coreLabels are the pod's labels as the core reads them: a PodGroup
// member's gang labels left out (the pod-group cycle is its gang).
func coreLabels(pod *v1.Pod) map[string]string {
	_, job := pod.Labels[labelGangJob]
	_, replicas := pod.Labels[labelGangReplicas]
	if (!job && !replicas) || podGroupOf(pod) == "" {
		return pod.Labels
	}
	l := make(map[string]string, len(pod.Labels))
	for k, v := range pod.Labels {
		if k != labelGangJob && k != labelGangReplicas {
			l[k] = v
		}
	}
	return l
}

// withCoreLabels is pod with coreLabels (pod itself when they are its own;
// else a shallow copy: the pod is not changed).
func withCoreLabels(pod *v1.Pod) *v1.Pod {
	l := coreLabels(pod)
	if len(l) == len(pod.Labels) {
		return pod
	}
	cp := *pod
	cp.Labels = l
	return &cp
}
