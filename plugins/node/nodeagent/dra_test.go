package nodeagent

// The DRA kubelet plugin's conversions (dra.go): the ResourceSlice's devices
// from C's list, a claim's CDI spec from C's answer (env, the MPS mount), a
// refusal returned per claim, and Unprepare removing the spec (twice: the
// call is idempotent). The kubelet's gRPC and the slice controller are the
// upstream helper's, run on the real node by test/k8s/test_real_dranode.py.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"gpushare.io/node/cagent"
)

func draAgent(t *testing.T, mode string) *Agent {
	t.Helper()
	root := t.TempDir()
	invPath := filepath.Join(root, "inventory.json")
	if err := os.WriteFile(invPath, []byte(inventory(false)), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Node: node, RootDir: root, InventoryPath: invPath,
		Config: cagent.Config{UnitMiB: 1024, Mode: mode, MPSPipeDir: "/run/nvidia/mps"},
		DRA:    &DRAOptions{CDIDir: root}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func claimOf(uid, device, mem string) *resourceapi.ResourceClaim {
	r := resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: cagent.DRADriver, Pool: node,
		Device: device}
	if mem != "" {
		r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse(mem)}
		share := types.UID("share-" + uid)
		r.ShareID = &share
	}
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "c-" + uid, Namespace: "ml", UID: types.UID(uid)},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{r}}}}}
}

func TestDRASliceDevices(t *testing.T) {
	a := draAgent(t, "share")
	res, err := a.draResources()
	if err != nil {
		t.Fatal(err)
	}
	devs := res.Pools[node].Slices[0].Devices
	// GPU 1 is unhealthy in this inventory: only GPU 0 is offered
	if len(res.Pools) != 1 || len(devs) != 1 || devs[0].Name != "gpu-0" {
		t.Fatalf("devices %+v", res)
	}
	d := devs[0]
	memory := d.Capacity["memory"].Value
	if *d.Attributes["gpushare.io/index"].IntValue != 0 || *d.Attributes["gpushare.io/uuid"].StringValue != uuid0 ||
		memory.Value() != 16<<30 || !*d.AllowMultipleAllocations {
		t.Fatalf("device %+v", d)
	}
}

func TestDRAPrepareUnprepare(t *testing.T) {
	a := draAgent(t, "mps")
	p := draPlugin{a}
	got, err := p.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{
		claimOf("u1", "gpu-0", "4Gi"), claimOf("u2", "gpu-1", "")})
	if err != nil {
		t.Fatal(err)
	}
	share := types.UID("share-u1")
	want := kubeletplugin.PrepareResult{Devices: []kubeletplugin.Device{{Requests: []string{"gpu"}, PoolName: node,
		DeviceName: "gpu-0", CDIDeviceIDs: []string{"gpushare.io/gpu=u1"}, ShareID: &share}}}
	if !reflect.DeepEqual(got["u1"], want) {
		t.Fatalf("u1: %+v", got["u1"])
	}
	// an exclusive result (no consumedCapacity): the whole GPU
	if e := got["u2"].Err; e != nil || got["u2"].Devices[0].DeviceName != "gpu-1" {
		t.Fatalf("u2: %+v", got["u2"])
	}
	if data, err := os.ReadFile(a.cdiPath("u2")); err != nil || !strings.Contains(string(data), "GPUSHARE_GPU_MEM_LIMIT_MIB=16384") {
		t.Fatalf("u2 spec: %s %v", data, err)
	}
	data, err := os.ReadFile(a.cdiPath("u1"))
	if err != nil {
		t.Fatal(err)
	}
	var spec cdispec.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	edits := spec.Devices[0].ContainerEdits
	if spec.Kind != CDIKind || spec.Devices[0].Name != "u1" || spec.Version == "" {
		t.Fatalf("spec %s", data)
	}
	wantEnv := []string{"ALIYUN_COM_GPU_MEM_CONTAINER=4", "ALIYUN_COM_GPU_MEM_DEV=16", "ALIYUN_COM_GPU_MEM_IDX=0",
		"ALIYUN_COM_GPU_MEM_POD=4", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M",
		"CUDA_MPS_PIPE_DIRECTORY=/run/nvidia/mps", "GPUSHARE_GPU_MEM_LIMIT_MIB=4096",
		"GPUSHARE_GPU_MEM_UNIT_MIB=1024", "NVIDIA_VISIBLE_DEVICES=" + uuid0}
	if !reflect.DeepEqual(edits.Env, wantEnv) {
		t.Fatalf("env %q", edits.Env)
	}
	if len(edits.Mounts) != 1 || !reflect.DeepEqual(*edits.Mounts[0], cdispec.Mount{HostPath: "/run/nvidia/mps",
		ContainerPath: "/run/nvidia/mps", Type: "bind", Options: []string{"rbind", "rw"}}) {
		t.Fatalf("mounts %+v", edits.Mounts)
	}
	for i := 0; i < 2; i++ {
		res, err := p.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{
			{UID: "u1", NamespacedName: types.NamespacedName{Namespace: "ml", Name: "c-u1"}}})
		if err != nil || res["u1"] != nil {
			t.Fatalf("unprepare %d: %v %v", i, err, res)
		}
		if _, err := os.Stat(a.cdiPath("u1")); !os.IsNotExist(err) {
			t.Fatalf("spec still there: %v", err)
		}
	}
}

func TestDRAPrepareRefusal(t *testing.T) {
	a := draAgent(t, "share")
	got, err := draPlugin{a}.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{
		claimOf("u3", "gpu-7", "4Gi")})
	if err != nil {
		t.Fatal(err)
	}
	if e := got["u3"].Err; e == nil || e.Error() != "claim ml/c-u3: status.allocation.devices.results[0]: "+
		"device gpu-7: node gpu-a has 2 GPUs (gpu-0…)" {
		t.Fatalf("u3: %v", e)
	}
	if _, err := os.Stat(a.cdiPath("u3")); !os.IsNotExist(err) {
		t.Fatalf("a refused claim has a spec: %v", err)
	}
}

func TestDRAHealthReports(t *testing.T) {
	a := draAgent(t, "share")
	ctx, cancel := context.WithCancel(context.Background())
	reports := make(chan kubeletplugin.DeviceHealthReport)
	done := make(chan error, 1)
	go func() { done <- draPlugin{a}.WatchHealthStatus(ctx, reports) }()
	health := func() map[string]kubeletplugin.HealthStatus {
		r := <-reports
		out := map[string]kubeletplugin.HealthStatus{}
		for _, d := range r.Devices {
			if d.PoolName != node || d.LastUpdated.IsZero() {
				t.Errorf("device %+v: pool %q, want %q, and a time", d, d.PoolName, node)
			}
			out[d.DeviceName] = d.Health
		}
		return out
	}
	// every GPU, the unhealthy one too (the slice no longer offers it; a
	// claim prepared on it before still runs there)
	want := map[string]kubeletplugin.HealthStatus{"gpu-0": kubeletplugin.HealthStatusHealthy,
		"gpu-1": kubeletplugin.HealthStatusUnhealthy}
	if got := health(); !reflect.DeepEqual(got, want) {
		t.Fatalf("first report %v, want %v", got, want)
	}
	// GPU 1 healthy again: reported at once, not at the next resend
	if err := os.WriteFile(a.o.InventoryPath, []byte(inventory(true)), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, err := a.reload(); !changed || err != nil {
		t.Fatalf("reload: %v %v", changed, err)
	}
	want["gpu-1"] = kubeletplugin.HealthStatusHealthy
	if got := health(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the change %v, want %v", got, want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("WatchHealthStatus returned %v after its context ended", err)
	}
}
