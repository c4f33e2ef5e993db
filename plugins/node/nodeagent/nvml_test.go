package nodeagent

// gpushare-node on the fake NVML (docs/fake-nvml.md, BUILD_DIR/fakenvml,
// GS_BUILD_DIR set by plugins/node/build.sh --test): ListAndWatch's
// devices are the fake GPUs' memory in 1 GiB and in 128 MiB units, the
// topology annotation is what gpushare-topo --nvml prints for the same
// inventory, and an "unhealthy GPU-…" line appended to the inventory →
// ListAndWatch re-sent with that GPU's devices Unhealthy and the
// ConfigMap unhealthy-gpu-<node> written.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"gpushare.io/node/cagent"
)

const (
	fakeUUID0 = "GPU-fa4e0000-0000-0000-0000-000000000000"
	fakeUUID1 = "GPU-fa4e1111-1111-1111-1111-111111111111"
	// a V100 16 GB reports a little under 16 GiB: floor in either unit
	fakeInventory = "gpu mem=16160 uuid=" + fakeUUID0 + " minor=3 name=Tesla V100-SXM2-16GB\n" +
		"gpu mem=32768 uuid=" + fakeUUID1 + " minor=1 name=Tesla V100-SXM2-32GB\n" +
		"row X NV2\nrow NV2 X\n"
	fakeTopology = `{"links":[["X","NV2"],["NV2","X"]]}`
)

func buildDir(t *testing.T) string {
	t.Helper()
	d := os.Getenv("GS_BUILD_DIR")
	if d == "" {
		t.Fatal("GS_BUILD_DIR unset: run plugins/node/build.sh --test")
	}
	return d
}

// startNVML writes the fake inventory and starts the agent on the fake NVML.
func startNVML(t *testing.T, unit uint32) (*rig, string) {
	t.Helper()
	root := t.TempDir()
	inv := filepath.Join(root, "node.inv")
	if err := os.WriteFile(inv, []byte(fakeInventory), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GS_FAKE_NVML_INVENTORY", inv)
	lib := filepath.Join(buildDir(t), "fakenvml", "libnvidia-ml.so.1")
	return startOn(t, root, "", lib, unit, gpuNode("share")), inv
}

func ids(devs []*pluginapi.Device) (first, last string) {
	return devs[0].ID, devs[len(devs)-1].ID
}

func TestNVMLDevicesInBothUnits(t *testing.T) {
	for _, c := range []struct {
		unit       uint32
		per0, per1 int // floor(16160 / unit), floor(32768 / unit)
	}{{1024, 15, 32}, {128, 126, 256}} {
		r, _ := startNVML(t, c.unit)
		r.kubelet.registrations(t, 2)
		ctx, cancel := context.WithCancel(context.Background())
		resp := recv(t, r.watchCtx(t, ctx, cagent.ResourceMem))
		n := c.per0 + c.per1
		first, last := ids(resp.Devices)
		if len(resp.Devices) != n || health(resp.Devices)["Healthy"] != n ||
			first != fakeUUID0+"-_-0" || resp.Devices[c.per0-1].ID != fakeUUID0+"-_-"+strconv.Itoa(c.per0-1) ||
			resp.Devices[c.per0].ID != fakeUUID1+"-_-0" || last != fakeUUID1+"-_-"+strconv.Itoa(c.per1-1) {
			t.Fatalf("unit %d: %d devices %v, %s … %s", c.unit, len(resp.Devices), health(resp.Devices), first, last)
		}
		count := r.watchCtx(t, ctx, cagent.ResourceCount)
		if got, err := count.Recv(); err != nil || len(got.Devices) != 2 ||
			got.Devices[0].ID != fakeUUID0 || got.Devices[1].ID != fakeUUID1 {
			t.Fatalf("gpu-count devices: %v %v", got, err)
		}
		cancel()
		r.cancel()
		<-r.done // NVML closed: the next agent reads the inventory afresh
	}
}

func TestNVMLTopologyAndHealth(t *testing.T) {
	r, inv := startNVML(t, 1024)
	r.kubelet.registrations(t, 2)

	// the annotation is gpushare-topo --nvml's output for the same inventory
	cmd := exec.Command(filepath.Join(buildDir(t), "tools", "topo", "gpushare-topo"), "--nvml")
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+filepath.Join(buildDir(t), "fakenvml"),
		"GS_FAKE_NVML_INVENTORY="+inv)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gpushare-topo --nvml: %v", err)
	}
	topo := strings.TrimSuffix(string(out), "\n")
	if topo != fakeTopology {
		t.Fatalf("gpushare-topo --nvml printed %q", topo)
	}
	eventually(t, "the node's topology annotation = gpushare-topo --nvml", func() bool {
		n, err := r.client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		return err == nil && n.Annotations[TopologyAnnotation] == topo
	})

	stream := r.watch(t, cagent.ResourceMem)
	if first, err := stream.Recv(); err != nil || health(first.Devices)["Healthy"] != 47 {
		t.Fatalf("first list: %v", err)
	}

	// an application XID (13) changes nothing; a double-bit ECC error on GPU 1 does
	f, err := os.OpenFile(inv, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("xid 0 13\nunhealthy " + fakeUUID1 + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	next := recv(t, stream)
	for _, d := range next.Devices {
		want := pluginapi.Healthy
		if strings.HasPrefix(d.ID, fakeUUID1) {
			want = pluginapi.Unhealthy
		}
		if d.Health != want {
			t.Fatalf("after GPU 1's XID 48: %s is %s", d.ID, d.Health)
		}
	}
	if h := health(next.Devices); h["Healthy"] != 15 || h["Unhealthy"] != 32 {
		t.Fatalf("after GPU 1's XID 48: %v", h)
	}
	r.unhealthyGPUs(t, "1")
}

func TestNVMLMissing(t *testing.T) {
	_, err := New(Options{Node: node, RootDir: t.TempDir(), NVMLLibrary: "/nonexistent/libnvidia-ml.so.1"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/libnvidia-ml.so.1") ||
		!strings.Contains(err.Error(), "cannot load NVML") {
		t.Fatalf("New without NVML: %v", err)
	}
}
