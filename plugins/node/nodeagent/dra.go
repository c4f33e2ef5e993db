// gpushare-node as a DRA kubelet plugin (docs/node-agent.md "DRA"): the
// node's GPUs published in a ResourceSlice of driver gpu.gpushare.io, and
// each allocated claim prepared as a CDI device whose env C decides, and
// every GPU's health told to the kubelet (WatchHealthStatus). The
// upstream helper (k8s.io/dynamic-resource-allocation/kubeletplugin)
// serves the kubelet's gRPC, registers and publishes the slice; this file
// converts C's answers into its types and the CDI spec.
package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"gpushare.io/node/cagent"
)

// CDIKind is the CDI kind of the devices gpushare-node prepares: one CDI
// device per claim, named by the claim's UID.
const CDIKind = "gpushare.io/gpu"

// DRAOptions enable the DRA kubelet plugin (Options.DRA).
type DRAOptions struct {
	CDIDir string // where the CDI specs go (the runtime's cdi_spec_dirs; /var/run/cdi)
}

type draPlugin struct{ a *Agent }

// cdiPath is the CDI spec file of one claim.
func (a *Agent) cdiPath(uid types.UID) string {
	return filepath.Join(a.o.DRA.CDIDir, "gpushare.io-gpu_"+string(uid)+".json")
}

// draResources are the node's devices as C publishes them.
func (a *Agent) draResources() (resourceslice.DriverResources, error) {
	a.mu.Lock()
	devs, err := cagent.DRADevices(a.inv)
	a.mu.Unlock()
	if err != nil {
		return resourceslice.DriverResources{}, err
	}
	var out []resourceapi.Device
	for _, d := range devs {
		out = append(out, resourceapi.Device{
			Name: d.Name,
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				cagent.DRAAttrIndex: {IntValue: ptr.To(d.Index)},
				cagent.DRAAttrUUID:  {StringValue: ptr.To(d.UUID)},
			},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"memory": {Value: *resource.NewQuantity(d.MemoryBytes, resource.BinarySI)},
			},
			AllowMultipleAllocations: ptr.To(true),
		})
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		a.o.Node: {Slices: []resourceslice.Slice{{Devices: out}}},
	}}, nil
}

// startDRA registers the plugin with the kubelet and publishes the slice.
func (a *Agent) startDRA(ctx context.Context) (*kubeletplugin.Helper, error) {
	dataDir := filepath.Join(a.o.RootDir, "plugins", cagent.DRADriver)
	for _, d := range []string{dataDir, filepath.Join(a.o.RootDir, "plugins_registry"), a.o.DRA.CDIDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	h, err := kubeletplugin.Start(ctx, draPlugin{a},
		kubeletplugin.DriverName(cagent.DRADriver),
		kubeletplugin.KubeClient(a.o.Client),
		kubeletplugin.NodeName(a.o.Node),
		kubeletplugin.RegistrarDirectoryPath(filepath.Join(a.o.RootDir, "plugins_registry")),
		kubeletplugin.PluginDataDirectoryPath(dataDir))
	if err != nil {
		return nil, fmt.Errorf("DRA kubelet plugin: %w", err)
	}
	if err := a.publishDRA(ctx, h); err != nil {
		h.Stop()
		return nil, err
	}
	a.o.Logf("level=info msg=\"DRA kubelet plugin started\" driver=%s socket=%s cdi=%s",
		cagent.DRADriver, filepath.Join(dataDir, "dra.sock"), a.o.DRA.CDIDir)
	return h, nil
}

func (a *Agent) publishDRA(ctx context.Context, h *kubeletplugin.Helper) error {
	res, err := a.draResources()
	if err == nil {
		err = h.PublishResources(ctx, res)
	}
	if err != nil {
		return fmt.Errorf("publishing the ResourceSlice: %w", err)
	}
	return nil
}

// prepare is one claim: C's answer written as the claim's CDI spec.
func (a *Agent) prepare(claim *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	data, err := json.Marshal(claim)
	if err != nil {
		return kubeletplugin.PrepareResult{Err: err}
	}
	a.mu.Lock()
	p, err := cagent.DRAPrepare(a.o.Config, a.inv, a.o.Node, data)
	a.mu.Unlock()
	if err != nil {
		a.o.Logf("level=warn msg=\"claim refused\" claim=%s/%s error=%q", claim.Namespace, claim.Name, err.Error())
		return kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s: %w", claim.Namespace, claim.Name, err)}
	}
	keys := make([]string, 0, len(p.Envs))
	for k := range p.Envs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	edits := cdispec.ContainerEdits{}
	for _, k := range keys {
		edits.Env = append(edits.Env, k+"="+p.Envs[k])
	}
	for _, m := range p.Mounts {
		opts := []string{"rbind", "rw"}
		if m.ReadOnly {
			opts[1] = "ro"
		}
		edits.Mounts = append(edits.Mounts, &cdispec.Mount{HostPath: m.HostPath, ContainerPath: m.ContainerPath,
			Type: "bind", Options: opts})
	}
	spec := &cdispec.Spec{Kind: CDIKind, Devices: []cdispec.Device{{Name: p.Claim, ContainerEdits: edits}}}
	if spec.Version, err = cdispec.MinimumRequiredVersion(spec); err != nil {
		return kubeletplugin.PrepareResult{Err: err}
	}
	if err := writeAtomically(a.cdiPath(claim.UID), spec); err != nil {
		return kubeletplugin.PrepareResult{Err: fmt.Errorf("writing the CDI spec: %w", err)}
	}
	id := CDIKind + "=" + p.Claim
	var out kubeletplugin.PrepareResult
	for _, d := range p.Devices {
		dev := kubeletplugin.Device{Requests: []string{d.Request}, PoolName: d.Pool, DeviceName: d.Device,
			CDIDeviceIDs: []string{id}}
		if d.ShareID != "" {
			dev.ShareID = ptr.To(types.UID(d.ShareID))
		}
		out.Devices = append(out.Devices, dev)
	}
	a.o.Logf("level=info msg=\"claim prepared\" claim=%s/%s cdi=%s env=%q", claim.Namespace, claim.Name, id,
		fmt.Sprint(p.Envs))
	return out
}

func writeAtomically(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (p draPlugin) PrepareResourceClaims(_ context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, c := range claims {
		out[c.UID] = p.a.prepare(c)
	}
	return out, nil
}

func (p draPlugin) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		err := os.Remove(p.a.cdiPath(c.UID))
		if errors.Is(err, os.ErrNotExist) {
			err = nil // unprepared already: the call is idempotent
		}
		out[c.UID] = err
		if err == nil {
			p.a.o.Logf("level=info msg=\"claim unprepared\" claim=%s/%s", c.Namespace, c.Name)
		}
	}
	return out, nil
}

func (p draPlugin) HandleError(_ context.Context, err error, msg string) {
	p.a.o.Logf("level=warn msg=%q error=%q", msg, err.Error())
}

// healthResend is how often WatchHealthStatus repeats an unchanged report:
// the kubelet reads a device's health as unknown after 30 s without one.
var healthResend = 10 * time.Second

// WatchHealthStatus tells the kubelet every GPU's health as C words it
// (pool = the node), again at once when the inventory or an XID event
// changes it, and every healthResend otherwise, until ctx ends.
func (p draPlugin) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	tick := time.NewTicker(healthResend)
	defer tick.Stop()
	for {
		p.a.mu.Lock()
		gpus, err := cagent.DRAHealthReport(p.a.inv)
		changed := p.a.changed
		p.a.mu.Unlock()
		if err != nil {
			return err
		}
		now := time.Now()
		r := kubeletplugin.DeviceHealthReport{Devices: make([]kubeletplugin.DeviceHealth, 0, len(gpus))}
		for _, g := range gpus {
			r.Devices = append(r.Devices, kubeletplugin.DeviceHealth{PoolName: p.a.o.Node, DeviceName: g.Device,
				Health: kubeletplugin.HealthStatus(g.Health), LastUpdated: now})
		}
		select {
		case <-ctx.Done():
			return nil
		case reports <- r:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-tick.C:
		}
	}
}
