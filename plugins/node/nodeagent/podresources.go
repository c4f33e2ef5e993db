package nodeagent

import (
	"context"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// podResourcesTimeout bounds one List of the kubelet's pod-resources
// service during an Allocate.
const podResourcesTimeout = 5 * time.Second

// podResources reads the kubelet's pod-resources service
// (<root-dir>/pod-resources/kubelet.sock): during an Allocate, the pod the
// kubelet is admitting is the one it lists whose container holds no
// device of the resource yet (C decides: agent.h, struct gs_agent_call).
type podResources struct {
	path string
	logf func(string, ...any)

	mu     sync.Mutex
	conn   *grpc.ClientConn
	client podresourcesapi.PodResourcesListerClient
	failed bool // the last List failed (logged once until one succeeds)
}

func newPodResources(rootDir string, logf func(string, ...any)) *podResources {
	return &podResources{path: filepath.Join(rootDir, "pod-resources", "kubelet.sock"), logf: logf}
}

// list is the kubelet's pod-resources List as protobuf's JSON, or nil when
// it cannot be had (then C falls back to the assume order).
func (p *podResources) list(ctx context.Context) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client == nil {
		conn, err := grpc.NewClient("unix://"+p.path, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			p.fail(err)
			return nil
		}
		p.conn, p.client = conn, podresourcesapi.NewPodResourcesListerClient(conn)
	}
	ctx, cancel := context.WithTimeout(ctx, podResourcesTimeout)
	defer cancel()
	resp, err := p.client.List(ctx, &podresourcesapi.ListPodResourcesRequest{})
	if err != nil {
		p.fail(err)
		return nil
	}
	data, err := protojson.Marshal(resp)
	if err != nil {
		p.fail(err)
		return nil
	}
	if p.failed {
		p.logf("level=info msg=\"the kubelet's pod-resources service answers again: Allocate follows the kubelet's admission\" socket=%s", p.path)
		p.failed = false
	}
	return data
}

func (p *podResources) fail(err error) {
	if !p.failed {
		p.logf("level=warn msg=\"the kubelet's pod-resources service cannot be read: Allocate takes the oldest assume time, as Aliyun's plugin (docs/node-agent.md)\" socket=%s error=%q", p.path, err.Error())
	}
	p.failed = true
}

func (p *podResources) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		p.conn.Close()
		p.conn, p.client = nil, nil
	}
}
