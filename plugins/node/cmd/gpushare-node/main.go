// Command gpushare-node is gpushare's node agent: a kubelet device plugin
// for aliyun.com/gpu-mem, aliyun.com/gpu-count and, on topology nodes,
// aliyun.com/gpu, honouring gpushare's allocations (docs/node-agent.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"gpushare.io/node/cagent"
	"gpushare.io/node/nodeagent"
)

// version is the project's (CMakeLists.txt), set by build.sh.
var version = "dev"

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func main() {
	fs := flag.NewFlagSet("gpushare-node", flag.ContinueOnError)
	node := fs.String("node-name", os.Getenv("NODE_NAME"), "this node's name (default $NODE_NAME)")
	root := fs.String("kubelet-root-dir", "/var/lib/kubelet", "the kubelet's root directory; sockets in its device-plugins/")
	inventory := fs.String("inventory", os.Getenv("GPUSHARE_INVENTORY"),
		"the node's GPUs from a JSON file instead of NVML (docs/node-agent.md; default $GPUSHARE_INVENTORY, unset: NVML)")
	nvml := fs.String("nvml-library", os.Getenv("GPUSHARE_NVML_LIBRARY"),
		"the path of libnvidia-ml.so.1 (default $GPUSHARE_NVML_LIBRARY, unset: the loader's search path, e.g. LD_LIBRARY_PATH)")
	unit := fs.String("unit", envOr("GPUSHARE_GPU_MEMORY_UNIT", "1GiB"),
		"gpu-mem unit, the ConfigMap's gpuMemoryUnit: 1GiB or 128MiB (default $GPUSHARE_GPU_MEMORY_UNIT)")
	mode := fs.String("mode", "", "share|cgpu|mps|topology (default: the node's label ack.node.gpu.schedule)")
	mps := fs.String("mps-pipe-dir", "/tmp/nvidia-mps", "the MPS pipe directory on mps nodes (mounted at the same path)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: in-cluster configuration)")
	poll := fs.Duration("poll-interval", time.Second, "how often the kubelet socket (and an --inventory file) are checked")
	dra := fs.Bool("dra", false, "also run as the DRA kubelet plugin of driver gpu.gpushare.io (docs/node-agent.md \"DRA\")")
	cdiDir := fs.String("cdi-dir", "/var/run/cdi", "with --dra: where the claims' CDI specs are written (the runtime's CDI spec directory)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *showVersion {
		fmt.Println("gpushare-node", version)
		return
	}
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "gpushare-node: %v\n", err)
		os.Exit(1)
	}
	unitMiB, err := cagent.UnitMiB(*unit)
	if err != nil {
		fail(err)
	}
	var cfg *rest.Config
	if *kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		fail(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fail(err)
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "ts=%s "+format+"\n", append([]any{time.Now().UTC().Format(time.RFC3339Nano)}, args...)...)
	}
	var draOpts *nodeagent.DRAOptions
	if *dra {
		draOpts = &nodeagent.DRAOptions{CDIDir: *cdiDir}
	}
	a, err := nodeagent.New(nodeagent.Options{DRA: draOpts, Node: *node, RootDir: *root, InventoryPath: *inventory,
		NVMLLibrary: *nvml,
		Config:      cagent.Config{UnitMiB: unitMiB, Mode: *mode, MPSPipeDir: *mps},
		Client:      client, Poll: *poll, Logf: logf})
	if err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	source := "nvml"
	if *inventory != "" {
		source = "inventory " + *inventory
	}
	logf("level=info msg=\"gpushare-node starting\" node=%s unit=%s gpus=%q", *node, *unit, source)
	if err := a.Run(ctx); err != nil {
		fail(err)
	}
}
