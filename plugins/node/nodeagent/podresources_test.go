package nodeagent

// Allocate follows the kubelet's admission: a pod-resources service on
// <root>/pod-resources/kubelet.sock (the real API, served here) lists the
// pod the kubelet admits, and the agent answers for it even when another
// pending pod asking the same amount has the older assume time.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"

	"gpushare.io/node/cagent"
)

// testPodResources is the kubelet's pod-resources List.
type testPodResources struct {
	podresourcesapi.UnimplementedPodResourcesListerServer
	mu    sync.Mutex
	pods  []*podresourcesapi.PodResources
	calls int
}

func (s *testPodResources) List(context.Context, *podresourcesapi.ListPodResourcesRequest) (*podresourcesapi.ListPodResourcesResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return &podresourcesapi.ListPodResourcesResponse{PodResources: s.pods}, nil
}

func (s *testPodResources) set(pods ...*podresourcesapi.PodResources) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods = pods
}

func startPodResources(t *testing.T, root string) *testPodResources {
	t.Helper()
	l := listenKubelet(t, root, "pod-resources")
	s := &testPodResources{}
	srv := grpc.NewServer()
	podresourcesapi.RegisterPodResourcesListerServer(srv, s)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return s
}

// listed is one pod as the kubelet lists it; devices: the gpu-mem device
// ids its container "main" holds.
func listed(name string, devices ...string) *podresourcesapi.PodResources {
	c := &podresourcesapi.ContainerResources{Name: "main"}
	if len(devices) > 0 {
		c.Devices = []*podresourcesapi.ContainerDevices{{ResourceName: cagent.ResourceMem, DeviceIds: devices}}
	}
	return &podresourcesapi.PodResources{Namespace: "default", Name: name,
		Containers: []*podresourcesapi.ContainerResources{c}}
}

func TestAllocateFollowsTheKubeletsAdmission(t *testing.T) {
	root := t.TempDir()
	invPath := filepath.Join(root, "inventory.json")
	if err := os.WriteFile(invPath, []byte(inventory(true)), 0o644); err != nil {
		t.Fatal(err)
	}
	kubelet := startPodResources(t, root)
	early, late := memPod("early", 4, `{"0":{"0":4}}`), memPod("late", 4, `{"0":{"1":4}}`)
	late.Annotations["scheduler.framework.gpushare.assume-time"] = "200"
	late.Annotations["ALIYUN_COM_GPU_MEM_ASSUME_TIME"] = "200"
	r := startOn(t, root, invPath, "", 1024, gpuNode("share"), early, late)
	r.kubelet.registrations(t, 2)
	mem := r.plugin(t, cagent.ResourceMem)

	// the kubelet admits "late" first (its binding reached it first): the
	// older assume time of "early" does not take late's Allocate
	kubelet.set(listed("late"))
	resp, err := allocate(t, mem, 4)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Envs["NVIDIA_VISIBLE_DEVICES"] != uuid1 || resp.Envs["ALIYUN_COM_GPU_MEM_IDX"] != "1" {
		t.Fatalf("late's container got %v, want GPU 1 (its allocation)", resp.Envs)
	}
	// then "early": "late" is listed holding its devices
	kubelet.set(listed("late", uuid0+"-_-a"), listed("early"))
	if resp, err = allocate(t, mem, 4); err != nil {
		t.Fatal(err)
	}
	if resp.Envs["NVIDIA_VISIBLE_DEVICES"] != uuid0 {
		t.Fatalf("early's container got %v, want GPU 0", resp.Envs)
	}
	// a pod the kubelet does not list is never the one asking: refused, said so
	other := memPod("other", 4, `{"0":{"0":4}}`)
	if _, err := r.client.CoreV1().Pods("default").Create(context.Background(), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubelet.set(listed("late", uuid0+"-_-a"), listed("early", uuid0+"-_-b"))
	_, err = allocate(t, mem, 4)
	if err == nil || !strings.Contains(err.Error(), "no pending pod on node gpu-a that the kubelet is admitting "+
		"has a container asking aliyun.com/gpu-mem: 4 with a gpushare allocation not yet assigned (1 other pod "+
		"matches: the kubelet's pod-resources list shows it not yet admitted or already holding the devices)") {
		t.Fatalf("Allocate for a pod the kubelet is not admitting: %v", err)
	}
	kubelet.mu.Lock()
	defer kubelet.mu.Unlock()
	if kubelet.calls != 3 {
		t.Fatalf("%d pod-resources Lists for 3 Allocates", kubelet.calls)
	}
}
