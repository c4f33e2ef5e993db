// Package nodeagent is gpushare-node's plumbing (docs/node-agent.md): one
// kubelet device-plugin server per resource, registered with the kubelet
// and registered again when the kubelet restarts; the node's GPUs read
// from NVML and its XID events watched for health changes (or an
// inventory file, polled); the node's topology annotation and the
// unhealthy-gpu-<node> ConfigMap written; Allocate's pod patched. Every
// decision comes from C (package cagent); this package converts and calls.
package nodeagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"gpushare.io/node/cagent"
)

// Keys the agent writes beside C's answers.
const (
	TopologyAnnotation = "gpushare.io/topology"
	UnhealthyNamespace = "kube-system"
	UnhealthyPrefix    = "unhealthy-gpu-"
	ModeLabel          = "ack.node.gpu.schedule"
)

// Options configure an Agent.
type Options struct {
	Node          string        // this node's name (spec.nodeName of its pods)
	RootDir       string        // the kubelet's root directory (/var/lib/kubelet)
	InventoryPath string        // an inventory file (docs/node-agent.md); "" = NVML
	NVMLLibrary   string        // libnvidia-ml.so.1's path; "" = the loader's search path
	Config        cagent.Config // unit, mode ("" = the node's label), MPS pipe directory
	Client        kubernetes.Interface
	Poll          time.Duration        // how often the kubelet socket (and an inventory file) are checked
	Logf          func(string, ...any) // one line per event
	Now           func() time.Time     // the assign time (tests)
	DRA           *DRAOptions          // also a DRA kubelet plugin (dra.go); nil = not
}

// Agent is gpushare-node.
type Agent struct {
	o Options

	mu      sync.Mutex
	inv     *cagent.Inventory
	invText []byte
	changed chan struct{} // closed and replaced when the inventory changes

	nv       *cagent.NVML  // nil with an inventory file
	watching bool          // nv reports XID events
	health   chan struct{} // a GPU turned unhealthy (buffered: one pending is enough)

	allocMu sync.Mutex    // one Allocate at a time: a pod's patch lands before the next match
	podres  *podResources // the kubelet's pod-resources service: which pod it admits
}

// New checks the options and reads the node's GPUs: from NVML, or from
// the inventory file when one is named. With NVML, Run closes it.
func New(o Options) (*Agent, error) {
	if o.Node == "" {
		return nil, errors.New("no node name (--node-name or NODE_NAME)")
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	a := &Agent{o: o, changed: make(chan struct{}), health: make(chan struct{}, 1),
		podres: newPodResources(o.RootDir, o.Logf)}
	if o.InventoryPath != "" {
		if _, err := a.reload(); err != nil {
			return nil, err
		}
		return a, nil
	}
	nv, err := cagent.OpenNVML(o.NVMLLibrary)
	if err != nil {
		return nil, err
	}
	inv, err := nv.Inventory()
	if err == nil {
		err = nv.Watch()
		if errors.Is(err, cagent.ErrUnsupported) {
			o.Logf("level=warn msg=\"no XID events: GPU health is not watched\" error=%q", err.Error())
			err = nil
		} else if err == nil {
			a.watching = true
		}
	}
	if err != nil {
		inv.Free()
		nv.Close()
		return nil, fmt.Errorf("NVML: %w", err)
	}
	a.nv, a.inv = nv, inv
	return a, nil
}

// watchHealth waits for XID events until ctx ends; C decides which make
// their GPU unhealthy. A change re-sends ListAndWatch (a.changed) and asks
// Run to rewrite the ConfigMap (a.health).
func (a *Agent) watchHealth(ctx context.Context) {
	for ctx.Err() == nil {
		ev, ok, err := a.nv.Wait(250 * time.Millisecond)
		if err != nil {
			a.o.Logf("level=warn msg=\"waiting for XID events failed (retrying)\" error=%q", err.Error())
			select {
			case <-ctx.Done():
			case <-time.After(a.o.Poll):
			}
			continue
		}
		if !ok {
			continue
		}
		a.mu.Lock()
		changed := a.inv.ApplyXID(ev)
		if changed {
			close(a.changed)
			a.changed = make(chan struct{})
		}
		a.mu.Unlock()
		a.o.Logf("level=info msg=\"XID event\" gpu=%d xid=%d unhealthy_now=%t", ev.GPU, ev.XID, changed)
		if changed {
			select {
			case a.health <- struct{}{}:
			default:
			}
		}
	}
}

func (a *Agent) pluginDir() string { return filepath.Join(a.o.RootDir, "device-plugins") }

func (a *Agent) kubeletSocket() string { return filepath.Join(a.pluginDir(), "kubelet.sock") }

// reload reads the inventory file; true when its content changed.
func (a *Agent) reload() (bool, error) {
	text, err := os.ReadFile(a.o.InventoryPath)
	if err != nil {
		return false, fmt.Errorf("inventory: %w", err)
	}
	a.mu.Lock()
	same := a.inv != nil && bytes.Equal(text, a.invText)
	a.mu.Unlock()
	if same {
		return false, nil
	}
	inv, err := cagent.DecodeInventory(text)
	if err != nil {
		return false, fmt.Errorf("%s: %w", a.o.InventoryPath, err)
	}
	a.mu.Lock()
	a.inv.Free() // every C call that reads it holds a.mu
	a.inv, a.invText = inv, text
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
	return true, nil
}

// devices lists resource's devices, a channel closed at the next change,
// and a key that differs whenever the list does.
func (a *Agent) devices(resource string) ([]cagent.Device, <-chan struct{}, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	devs, err := cagent.Devices(a.o.Config, a.inv, resource)
	if err != nil {
		return nil, nil, "", err
	}
	key, _ := json.Marshal(devs)
	return devs, a.changed, string(key), nil
}

// allocate is one container's Allocate of n devices of resource.
func (a *Agent) allocate(ctx context.Context, resource string, n uint64) (*pluginapi.ContainerAllocateResponse, error) {
	a.allocMu.Lock()
	defer a.allocMu.Unlock()
	// The kubelet's own view names the pod it is admitting (nil: C takes
	// the assume order); it holds still during the call, the kubelet
	// admitting one pod at a time.
	seen := a.podres.list(ctx)
	// A consistent List, not an informer's cache: the cache can lag the
	// Binding and this agent's own patch of the previous container.
	pods, err := a.o.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + a.o.Node})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of node %s: %w", a.o.Node, err)
	}
	data, err := json.Marshal(pods)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	ans, err := cagent.Allocate(a.o.Config, a.inv, a.o.Node, resource, n, data, seen, a.o.Now().UnixNano())
	a.mu.Unlock()
	if err != nil {
		a.o.Logf("level=warn msg=\"allocate refused\" resource=%s devices=%d error=%q", resource, n, err.Error())
		return nil, err
	}
	if ans.Pod != nil && len(ans.Annotations) > 0 {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid": ans.Pod.UID, "annotations": ans.Annotations}})
		if _, err := a.o.Client.CoreV1().Pods(ans.Pod.Namespace).Patch(ctx, ans.Pod.Name,
			types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return nil, fmt.Errorf("marking pod %s/%s assigned: %w", ans.Pod.Namespace, ans.Pod.Name, err)
		}
		a.o.Logf("level=info msg=\"allocated\" resource=%s devices=%d pod=%s/%s container=%s init=%t by=%s env=%q",
			resource, n, ans.Pod.Namespace, ans.Pod.Name, ans.Container, ans.Init, ans.By, fmt.Sprint(ans.Envs))
	}
	resp := &pluginapi.ContainerAllocateResponse{Envs: ans.Envs}
	for _, m := range ans.Mounts {
		resp.Mounts = append(resp.Mounts, &pluginapi.Mount{HostPath: m.HostPath, ContainerPath: m.ContainerPath, ReadOnly: m.ReadOnly})
	}
	return resp, nil
}

// writeNode writes the node's topology annotation and its
// unhealthy-gpu-<node> ConfigMap, both as C words them.
func (a *Agent) writeNode(ctx context.Context) error {
	a.mu.Lock()
	topo := cagent.Topology(a.inv)
	data, err := cagent.UnhealthyData(a.inv)
	a.mu.Unlock()
	if err != nil {
		return err
	}
	if topo != "" {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"annotations": map[string]string{TopologyAnnotation: topo}}})
		if _, err := a.o.Client.CoreV1().Nodes().Patch(ctx, a.o.Node, types.MergePatchType, patch,
			metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("annotating node %s: %w", a.o.Node, err)
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: UnhealthyNamespace,
		Name: UnhealthyPrefix + a.o.Node, Labels: map[string]string{"app.kubernetes.io/name": "gpushare-node"}},
		Data: data}
	cms := a.o.Client.CoreV1().ConfigMaps(UnhealthyNamespace)
	// No get (RBAC gives create and update only): update, create if absent;
	// with every GPU healthy an absent ConfigMap stays absent.
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		err = nil
		if data["gpus"] != "" {
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("writing ConfigMap %s/%s: %w", UnhealthyNamespace, cm.Name, err)
	}
	return nil
}

// socketID identifies the kubelet's socket file: a kubelet restart
// recreates it (another inode).
func socketID(path string) (uint64, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, true
	}
	return st.Ino, true
}

func (a *Agent) register(ctx context.Context, resource string) error {
	conn, err := grpc.NewClient("unix://"+a.kubeletSocket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: SocketName(resource), ResourceName: resource,
		Options: &pluginapi.DevicePluginOptions{}})
	return err
}

// Run serves until ctx ends: the servers started and registered, then
// every Poll: the kubelet's socket recreated or one of ours removed (a
// kubelet restart clears the directory) → servers restarted and
// registered again; the inventory changed → ListAndWatch streams re-sent
// and the node's annotation and ConfigMap rewritten; with NVML, the same
// at a GPU's critical XID event.
func (a *Agent) Run(ctx context.Context) error {
	defer a.podres.close()
	if a.nv != nil {
		wctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if a.watching {
				a.watchHealth(wctx)
			}
		}()
		defer func() { stop(); <-done; a.nv.Close() }()
	}
	if a.o.Config.Mode == "" {
		node, err := a.o.Client.CoreV1().Nodes().Get(ctx, a.o.Node, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading node %s's label %s: %w", a.o.Node, ModeLabel, err)
		}
		a.o.Config.Mode = node.Labels[ModeLabel]
	}
	if err := a.o.Config.Check(); err != nil {
		return err
	}
	resources, err := cagent.Resources(a.o.Config)
	if err != nil {
		return err
	}
	var dra *kubeletplugin.Helper
	if a.o.DRA != nil {
		if dra, err = a.startDRA(ctx); err != nil {
			return err
		}
		defer dra.Stop()
	}
	nodeDirty := true
	var servers []*server
	stopAll := func() {
		for _, s := range servers {
			s.stop()
		}
		servers = nil
	}
	defer stopAll()
	var kubelet uint64
	registered := false
	tick := time.NewTicker(a.o.Poll)
	defer tick.Stop()
	for {
		if nodeDirty {
			if err := a.writeNode(ctx); err != nil {
				a.o.Logf("level=warn msg=\"node writes failed (retrying)\" error=%q", err.Error())
			} else {
				nodeDirty = false
			}
			if dra != nil {
				if err := a.publishDRA(ctx, dra); err != nil {
					a.o.Logf("level=warn msg=\"DRA publish failed (retrying)\" error=%q", err.Error())
					nodeDirty = true
				}
			}
		}
		id, up := socketID(a.kubeletSocket())
		missing := false
		for _, s := range servers {
			if _, err := os.Stat(s.path); err != nil {
				missing = true
			}
		}
		if up && (!registered || id != kubelet || missing) {
			stopAll()
			registered = true
			kubelet = id
			for _, r := range resources {
				s := newServer(a, r)
				err := s.start()
				if err == nil {
					err = a.register(ctx, r)
				}
				servers = append(servers, s)
				if err != nil {
					a.o.Logf("level=warn msg=\"registration failed (retrying)\" resource=%s error=%q", r, err.Error())
					registered = false
					break
				}
				a.o.Logf("level=info msg=\"registered with the kubelet\" resource=%s socket=%s", r, s.path)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.health:
			nodeDirty = true
			continue
		case <-tick.C:
		}
		if a.o.InventoryPath == "" {
			continue
		}
		if changed, err := a.reload(); err != nil {
			a.o.Logf("level=warn msg=\"inventory unreadable, keeping the last one\" error=%q", err.Error())
		} else if changed {
			a.o.Logf("level=info msg=\"inventory changed\"")
			nodeDirty = true
		}
	}
}
