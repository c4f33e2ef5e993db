package gpushare

// DynamicResources as gpushare-scheduler runs it (docs/dra.md): kube-
// scheduler's own plugin, one instance, handed each pod without the claims
// gpushare places (claims.go), so that it allocates every other claim as
// upstream does and never one of gpushare's DeviceClass — two allocators of
// one claim would each write status.allocation, and the second write
// fails the pod's binding. The profile disables DynamicResources and
// enables this plugin in its place (deploy/scheduler/
// gpushare-scheduler-config.yaml); a pod without gpushare claims is handed
// over unchanged.

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
)

// DynResName is the wrapper's name in KubeSchedulerConfiguration.
const DynResName = "GpuShareDynamicResources"

// dynRes is upstream's plugin behind the pod filter.
type dynRes struct {
	h     fwk.Handle
	inner *dynamicresources.DynamicResources
}

var (
	_ fwk.PreEnqueuePlugin  = &dynRes{}
	_ fwk.PreFilterPlugin   = &dynRes{}
	_ fwk.FilterPlugin      = &dynRes{}
	_ fwk.PostFilterPlugin  = &dynRes{}
	_ fwk.ScorePlugin       = &dynRes{}
	_ fwk.ReservePlugin     = &dynRes{}
	_ fwk.PreBindPlugin     = &dynRes{}
	_ fwk.EnqueueExtensions = &dynRes{}
	_ fwk.SignPlugin        = &dynRes{}
)

// NewDynRes makes upstream's DynamicResources with its args (those of
// DynamicResourcesArgs, defaulted as kube-scheduler defaults them) and the
// process' feature gates.
func NewDynRes(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := versionedArgs[configv1.DynamicResourcesArgs, *configv1.DynamicResourcesArgs, config.DynamicResourcesArgs](obj, DynResName)
	if err != nil {
		return nil, err
	}
	pl, err := dynamicresources.New(ctx, args, h, feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))
	if err != nil {
		return nil, err
	}
	return &dynRes{h: h, inner: pl.(*dynamicresources.DynamicResources)}, nil
}

func (d *dynRes) Name() string { return DynResName }

// strip is pod without the claims gpushare places (the same pod when it has
// none, or the profile has no GpuShare).
func (d *dynRes) strip(pod *v1.Pod) *v1.Pod {
	if len(pod.Spec.ResourceClaims) == 0 {
		return pod
	}
	v, ok := plugins.Load(d.h)
	if !ok {
		return pod
	}
	claims, names, err := v.(*Plugin).podClaims(pod)
	if err != nil || len(claims) == 0 {
		return pod
	}
	cp := pod.DeepCopy()
	cp.Spec.ResourceClaims = cp.Spec.ResourceClaims[:0]
	for _, c := range pod.Spec.ResourceClaims {
		if !names[c.Name] {
			cp.Spec.ResourceClaims = append(cp.Spec.ResourceClaims, c)
		}
	}
	cp.Status.ResourceClaimStatuses = cp.Status.ResourceClaimStatuses[:0]
	for _, s := range pod.Status.ResourceClaimStatuses {
		if !names[s.Name] {
			cp.Status.ResourceClaimStatuses = append(cp.Status.ResourceClaimStatuses, s)
		}
	}
	return cp
}

func (d *dynRes) PreEnqueue(ctx context.Context, pod *v1.Pod) *fwk.Status {
	return d.inner.PreEnqueue(ctx, d.strip(pod))
}

func (d *dynRes) SignPod(ctx context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return d.inner.SignPod(ctx, d.strip(pod))
}

func (d *dynRes) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	return d.inner.EventsToRegister(ctx)
}

func (d *dynRes) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	return d.inner.PreFilter(ctx, state, d.strip(pod), nodes)
}

func (d *dynRes) PreFilterExtensions() fwk.PreFilterExtensions { return d.inner.PreFilterExtensions() }

func (d *dynRes) Filter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, n fwk.NodeInfo) *fwk.Status {
	return d.inner.Filter(ctx, state, d.strip(pod), n)
}

func (d *dynRes) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	return d.inner.PostFilter(ctx, state, d.strip(pod), m)
}

func (d *dynRes) Score(ctx context.Context, state fwk.CycleState, pod *v1.Pod, n fwk.NodeInfo) (int64, *fwk.Status) {
	return d.inner.Score(ctx, state, d.strip(pod), n)
}

func (d *dynRes) ScoreExtensions() fwk.ScoreExtensions { return d.inner.ScoreExtensions() }

func (d *dynRes) Reserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	return d.inner.Reserve(ctx, state, d.strip(pod), node)
}

func (d *dynRes) Unreserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, node string) {
	d.inner.Unreserve(ctx, state, d.strip(pod), node)
}

func (d *dynRes) PreBindPreFlight(ctx context.Context, state fwk.CycleState, pod *v1.Pod, node string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	return d.inner.PreBindPreFlight(ctx, state, d.strip(pod), node)
}

func (d *dynRes) PreBind(ctx context.Context, state fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	return d.inner.PreBind(ctx, state, d.strip(pod), node)
}
