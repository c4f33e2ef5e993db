package nodeagent

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// SocketName is the file name of resource's device-plugin socket in the
// kubelet's device-plugins directory: "aliyun.com/gpu-mem" →
// "gpushare-gpu-mem.sock".
func SocketName(resource string) string {
	return "gpushare-" + resource[strings.LastIndex(resource, "/")+1:] + ".sock"
}

// server is the device-plugin gRPC server of one resource.
type server struct {
	pluginapi.UnimplementedDevicePluginServer
	agent    *Agent
	resource string
	path     string
	grpc     *grpc.Server
	done     chan struct{}
	stopOnce sync.Once
}

func newServer(a *Agent, resource string) *server {
	return &server{agent: a, resource: resource,
		path: filepath.Join(a.pluginDir(), SocketName(resource)), done: make(chan struct{})}
}

// start listens on the socket (replacing a stale file) and serves.
func (s *server) start() error {
	if err := os.Remove(s.path); err != nil && !os.IsNotExist(err) {
		return err
	}
	l, err := net.Listen("unix", s.path)
	if err != nil {
		return err
	}
	s.grpc = grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(s.grpc, s)
	go func() { _ = s.grpc.Serve(l) }()
	return nil
}

func (s *server) stop() {
	s.stopOnce.Do(func() {
		close(s.done)
		if s.grpc != nil {
			s.grpc.Stop()
		}
		_ = os.Remove(s.path)
	})
}

func (s *server) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the devices, then again whenever the inventory
// changes (a GPU's health), until the kubelet hangs up or the server stops.
func (s *server) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	last := ""
	for {
		devs, changed, key, err := s.agent.devices(s.resource)
		if err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		if key != last {
			resp := &pluginapi.ListAndWatchResponse{}
			for _, d := range devs {
				resp.Devices = append(resp.Devices, &pluginapi.Device{ID: d.ID, Health: d.Health})
			}
			if err := stream.Send(resp); err != nil {
				return err
			}
			last = key
		}
		select {
		case <-changed:
		case <-s.done:
			return nil
		case <-stream.Context().Done():
			return nil
		}
	}
}

// Allocate answers each container request with C's decision (the pod the
// scheduler assigned, the env and mounts); a refusal fails the call with
// C's text, which the kubelet shows in the pod's events.
func (s *server) Allocate(ctx context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, cr := range req.ContainerRequests {
		car, err := s.agent.allocate(ctx, s.resource, uint64(len(cr.DevicesIds)))
		if err != nil {
			return nil, status.Error(codes.FailedPrecondition, err.Error())
		}
		resp.ContainerResponses = append(resp.ContainerResponses, car)
	}
	return resp, nil
}

func (s *server) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}

func (s *server) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}
