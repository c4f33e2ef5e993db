package nodeagent

// gpushare-node beside a test kubelet: the real device-plugin API's
// Registration service implemented here on <root>/device-plugins/kubelet.sock,
// the agent's own gRPC servers called as the kubelet calls them, and a fake
// clientset holding the node, its pods and the ConfigMaps. Run under -race
// by plugins/node/build.sh --test.

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"gpushare.io/node/cagent"
)

const (
	node  = "gpu-a"
	uuid0 = "GPU-00000000-0000-0000-0000-000000000000"
	uuid1 = "GPU-11111111-1111-1111-1111-111111111111"
	now   = int64(1800000000000000000)
)

func inventory(healthy1 bool) string {
	h := "true"
	if !healthy1 {
		h = "false"
	}
	return `{"gpus":[{"uuid":"` + uuid0 + `","memoryMiB":16384},{"uuid":"` + uuid1 +
		`","memoryMiB":16384,"healthy":` + h + `}],"links":[["X","NV2"],["NV2","X"]]}`
}

// testKubelet is the kubelet's Registration service.
type testKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	reqs chan *pluginapi.RegisterRequest
	srv  *grpc.Server
}

func (k *testKubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.reqs <- r
	return &pluginapi.Empty{}, nil
}

// listenKubelet listens on root/api/kubelet.sock, the kubelet's socket of
// that API (device-plugins, pod-resources).
func listenKubelet(t *testing.T, root, api string) net.Listener {
	t.Helper()
	dir := filepath.Join(root, api)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func startKubelet(t *testing.T, root string) *testKubelet {
	t.Helper()
	l := listenKubelet(t, root, "device-plugins")
	k := &testKubelet{reqs: make(chan *pluginapi.RegisterRequest, 16), srv: grpc.NewServer()}
	pluginapi.RegisterRegistrationServer(k.srv, k)
	go func() { _ = k.srv.Serve(l) }()
	t.Cleanup(k.srv.Stop)
	return k
}

// registrations waits for n registrations; resource name → request.
func (k *testKubelet) registrations(t *testing.T, n int) map[string]*pluginapi.RegisterRequest {
	t.Helper()
	got := map[string]*pluginapi.RegisterRequest{}
	for len(got) < n {
		select {
		case r := <-k.reqs:
			got[r.ResourceName] = r
		case <-time.After(60 * time.Second):
			t.Fatalf("%d of %d registrations after 60 s: %v", len(got), n, got)
		}
	}
	return got
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not so after 60 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func gpuNode(mode string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{ModeLabel: mode}}}
}

// memPod is a pending pod on the node: one container asking units of
// gpu-mem and, when alloc != "", gpushare's allocation annotations.
func memPod(name string, units int64, alloc string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name + "-0000"),
			Annotations: map[string]string{}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				cagent.ResourceMem: *resource.NewQuantity(units, resource.DecimalSI)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if alloc != "" {
		for k, v := range map[string]string{
			"scheduler.framework.gpushare.allocation":  alloc,
			"scheduler.framework.gpushare.assigned":    "false",
			"scheduler.framework.gpushare.assume-time": "100",
			"ALIYUN_COM_GPU_MEM_ASSIGNED":              "false",
			"ALIYUN_COM_GPU_MEM_ASSUME_TIME":           "100",
		} {
			p.Annotations[k] = v
		}
	}
	return p
}

type rig struct {
	root, invPath string
	kubelet       *testKubelet
	client        *fake.Clientset
	cancel        context.CancelFunc
	done          chan struct{}
}

func start(t *testing.T, mode string, unit uint32, objs ...runtime.Object) *rig {
	t.Helper()
	root := t.TempDir()
	invPath := filepath.Join(root, "inventory.json")
	if err := os.WriteFile(invPath, []byte(inventory(true)), 0o644); err != nil {
		t.Fatal(err)
	}
	return startOn(t, root, invPath, "", unit, objs...)
}

// startOn starts the agent on the inventory file invPath or, when it is
// "", on the NVML library nvml.
func startOn(t *testing.T, root, invPath, nvml string, unit uint32, objs ...runtime.Object) *rig {
	t.Helper()
	r := &rig{root: root, invPath: invPath, done: make(chan struct{})}
	r.kubelet = startKubelet(t, r.root)
	r.client = fake.NewClientset(objs...)
	a, err := New(Options{Node: node, RootDir: r.root, InventoryPath: r.invPath, NVMLLibrary: nvml,
		Config: cagent.Config{UnitMiB: unit, MPSPipeDir: "/run/nvidia/mps"}, Client: r.client,
		Poll: 20 * time.Millisecond, Logf: t.Logf,
		Now: func() time.Time { return time.Unix(0, now) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.done)
		if err := a.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

func (r *rig) plugin(t *testing.T, res string) pluginapi.DevicePluginClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+filepath.Join(r.root, "device-plugins", SocketName(res)),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pluginapi.NewDevicePluginClient(conn)
}

// watchCtx opens ListAndWatch on the agent's server for res, until ctx ends.
func (r *rig) watchCtx(t *testing.T, ctx context.Context, res string) pluginapi.DevicePlugin_ListAndWatchClient {
	t.Helper()
	stream, err := r.plugin(t, res).ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

// watch is watchCtx until the test ends.
func (r *rig) watch(t *testing.T, res string) pluginapi.DevicePlugin_ListAndWatchClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return r.watchCtx(t, ctx, res)
}

// recv is the stream's next list; an error fails the test.
func recv(t *testing.T, stream pluginapi.DevicePlugin_ListAndWatchClient) *pluginapi.ListAndWatchResponse {
	t.Helper()
	l, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// unhealthyGPUs waits for ConfigMap kube-system/unhealthy-gpu-<node> to say gpus=want.
func (r *rig) unhealthyGPUs(t *testing.T, want string) {
	t.Helper()
	eventually(t, "ConfigMap kube-system/unhealthy-gpu-"+node+" gpus="+strconv.Quote(want), func() bool {
		cm, err := r.client.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "unhealthy-gpu-"+node,
			metav1.GetOptions{})
		return err == nil && cm.Data["gpus"] == want
	})
}

func allocate(t *testing.T, c pluginapi.DevicePluginClient, n int) (*pluginapi.ContainerAllocateResponse, error) {
	t.Helper()
	req := &pluginapi.ContainerAllocateRequest{}
	for i := 0; i < n; i++ {
		req.DevicesIds = append(req.DevicesIds, uuid0+"-_-"+string(rune('a'+i)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{req}})
	if err != nil {
		return nil, err
	}
	return resp.ContainerResponses[0], nil
}

func health(devs []*pluginapi.Device) map[string]int {
	out := map[string]int{}
	for _, d := range devs {
		out[d.Health]++
	}
	return out
}

func TestRegistrationListAndWatchAllocate(t *testing.T) {
	r := start(t, "share", 1024, gpuNode("share"),
		memPod("single", 4, `{"0":{"1":4}}`), memPod("multi", 8, `{"0":{"0":4,"1":4}}`),
		memPod("bare", 2, ""))
	regs := r.kubelet.registrations(t, 2)
	for res, sock := range map[string]string{cagent.ResourceMem: "gpushare-gpu-mem.sock",
		cagent.ResourceCount: "gpushare-gpu-count.sock"} {
		if regs[res] == nil || regs[res].Endpoint != sock || regs[res].Version != "v1beta1" {
			t.Fatalf("registration of %s: %v", res, regs[res])
		}
	}
	if _, extra := regs[cagent.ResourceWhole]; extra {
		t.Fatal("aliyun.com/gpu registered on a share node")
	}

	mem := r.plugin(t, cagent.ResourceMem)
	stream := r.watch(t, cagent.ResourceMem)
	first := recv(t, stream)
	if len(first.Devices) != 32 || health(first.Devices)["Healthy"] != 32 ||
		first.Devices[0].ID != uuid0+"-_-0" || first.Devices[31].ID != uuid1+"-_-15" {
		t.Fatalf("devices: %d %v", len(first.Devices), health(first.Devices))
	}
	count := r.watch(t, cagent.ResourceCount)
	if c, err := count.Recv(); err != nil || len(c.Devices) != 2 || c.Devices[1].ID != uuid1 {
		t.Fatalf("gpu-count devices: %v %v", c, err)
	}

	// the topology annotation, gpushare-topo's text; no ConfigMap while all are healthy
	eventually(t, "the node's topology annotation", func() bool {
		n, err := r.client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		return err == nil && n.Annotations[TopologyAnnotation] == `{"links":[["X","NV2"],["NV2","X"]]}`
	})
	if _, err := r.client.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "unhealthy-gpu-"+node,
		metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("unhealthy ConfigMap with every GPU healthy: %v", err)
	}

	// single card
	resp, err := allocate(t, mem, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"NVIDIA_VISIBLE_DEVICES": uuid1, "ALIYUN_COM_GPU_MEM_IDX": "1",
		"ALIYUN_COM_GPU_MEM_POD": "4", "ALIYUN_COM_GPU_MEM_CONTAINER": "4", "ALIYUN_COM_GPU_MEM_DEV": "16",
		"GPUSHARE_GPU_MEM_LIMIT_MIB": "4096", "GPUSHARE_GPU_MEM_UNIT_MIB": "1024"}
	if len(resp.Envs) != len(want) {
		t.Fatalf("envs %v", resp.Envs)
	}
	for k, v := range want {
		if resp.Envs[k] != v {
			t.Fatalf("env %s = %q, want %q (all: %v)", k, resp.Envs[k], v, resp.Envs)
		}
	}
	p, _ := r.client.CoreV1().Pods("default").Get(context.Background(), "single", metav1.GetOptions{})
	if p.Annotations["ALIYUN_COM_GPU_MEM_ASSIGNED"] != "true" ||
		p.Annotations["scheduler.framework.gpushare.assigned"] != "true" ||
		p.Annotations["ALIYUN_COM_GPU_MEM_ASSIGN_TIME"] != "1800000000000000000" ||
		p.Annotations["gpushare.io/allocated-containers"] != "0" {
		t.Fatalf("pod not marked assigned: %v", p.Annotations)
	}
	// the same request again: the pod is assigned, nothing else asks 4
	if _, err := allocate(t, mem, 4); err == nil || !strings.Contains(err.Error(),
		"no pending pod on node gpu-a has a container asking aliyun.com/gpu-mem: 4 with a gpushare allocation not yet assigned") {
		t.Fatalf("second Allocate of 4: %v", err)
	}

	// multi-card: 8 over 2
	resp, err = allocate(t, mem, 8)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Envs["NVIDIA_VISIBLE_DEVICES"] != uuid0+","+uuid1 || resp.Envs["ALIYUN_COM_GPU_MEM_IDX"] != "0,1" ||
		resp.Envs["GPUSHARE_GPU_MEM_LIMIT_MIB"] != "4096,4096" || len(resp.Mounts) != 0 {
		t.Fatalf("multi-card envs %v mounts %v", resp.Envs, resp.Mounts)
	}

	// no allocation annotation: refused, the text naming the pod
	if _, err := allocate(t, mem, 2); err == nil || !strings.Contains(err.Error(),
		"pod default/bare asks aliyun.com/gpu-mem: 2 but carries no gpushare allocation "+
			"(annotation scheduler.framework.gpushare.allocation): it was not placed by gpushare's scheduler") {
		t.Fatalf("Allocate for a pod without allocation: %v", err)
	}

	// GPU 1 turns unhealthy: ListAndWatch sends again, the ConfigMap appears
	if err := os.WriteFile(r.invPath, []byte(inventory(false)), 0o644); err != nil {
		t.Fatal(err)
	}
	next := recv(t, stream)
	if h := health(next.Devices); h["Healthy"] != 16 || h["Unhealthy"] != 16 {
		t.Fatalf("after GPU 1 failed: %v", h)
	}
	r.unhealthyGPUs(t, "1")
	// and healthy again: gpus ""
	if err := os.WriteFile(r.invPath, []byte(inventory(true)), 0o644); err != nil {
		t.Fatal(err)
	}
	r.unhealthyGPUs(t, "")
}

func TestMPSAnd128MiB(t *testing.T) {
	p := memPod("mps", 16, `{"0":{"0":16}}`)
	p.Annotations["gpushare.io/unit-mib"] = "128"
	r := start(t, "", 128, gpuNode("mps"), p) // mode from the node's label
	r.kubelet.registrations(t, 2)
	mem := r.plugin(t, cagent.ResourceMem)
	stream := r.watch(t, cagent.ResourceMem)
	if l, err := stream.Recv(); err != nil || len(l.Devices) != 256 {
		t.Fatalf("128 MiB devices: %v", err)
	}
	resp, err := allocate(t, mem, 16)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Envs["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] != "0=2048M" ||
		resp.Envs["CUDA_MPS_PIPE_DIRECTORY"] != "/run/nvidia/mps" ||
		resp.Envs["ALIYUN_COM_GPU_MEM_DEV"] != "128" || resp.Envs["GPUSHARE_GPU_MEM_LIMIT_MIB"] != "2048" {
		t.Fatalf("mps envs %v", resp.Envs)
	}
	if len(resp.Mounts) != 1 || resp.Mounts[0].HostPath != "/run/nvidia/mps" ||
		resp.Mounts[0].ContainerPath != "/run/nvidia/mps" {
		t.Fatalf("mps mounts %v", resp.Mounts)
	}
}

func TestReregistersWhenTheKubeletRestarts(t *testing.T) {
	r := start(t, "topology", 1024, gpuNode("topology"))
	regs := r.kubelet.registrations(t, 3)
	if regs[cagent.ResourceWhole] == nil || regs[cagent.ResourceWhole].Endpoint != "gpushare-gpu.sock" {
		t.Fatalf("aliyun.com/gpu on a topology node: %v", regs)
	}
	// the kubelet restarts: its socket goes, the directory is cleared, a new socket comes
	r.kubelet.srv.Stop()
	dir := filepath.Join(r.root, "device-plugins")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		_ = os.Remove(filepath.Join(dir, e.Name()))
	}
	k2 := startKubelet(t, r.root)
	regs = k2.registrations(t, 3)
	if len(regs) != 3 {
		t.Fatalf("re-registration: %v", regs)
	}
	stream := r.watch(t, cagent.ResourceWhole)
	if l, err := stream.Recv(); err != nil || len(l.Devices) != 2 || l.Devices[0].ID != uuid0 {
		t.Fatalf("whole GPUs after re-registration: %v %v", l, err)
	}
	// our own socket removed alone (a kubelet cleaning up): served and registered again
	_ = os.Remove(filepath.Join(dir, SocketName(cagent.ResourceMem)))
	k2.registrations(t, 3)
}

// kill -9 leaves the sockets behind; the restarted agent (the DaemonSet's
// next pod) replaces them and registers again.
func TestStartsOverStaleSockets(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "device-plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, res := range []string{cagent.ResourceMem, cagent.ResourceCount} {
		l, err := net.Listen("unix", filepath.Join(dir, SocketName(res)))
		if err != nil {
			t.Fatal(err)
		}
		// a listener closed without unlinking its file: what a killed process leaves
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
	}
	invPath := filepath.Join(root, "inventory.json")
	if err := os.WriteFile(invPath, []byte(inventory(true)), 0o644); err != nil {
		t.Fatal(err)
	}
	k := startKubelet(t, root)
	a, err := New(Options{Node: node, RootDir: root, InventoryPath: invPath,
		Config: cagent.Config{UnitMiB: 1024, Mode: "share"}, Client: fake.NewClientset(gpuNode("share")),
		Poll: 20 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	k.registrations(t, 2)
	r := &rig{root: root}
	stream := r.watch(t, cagent.ResourceMem)
	if l, err := stream.Recv(); err != nil || len(l.Devices) != 32 {
		t.Fatalf("devices after a restart over stale sockets: %v", err)
	}
}
