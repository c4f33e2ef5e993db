package scheme

import (
	"os"
	"strings"
	"testing"

	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"sigs.k8s.io/yaml"

	"gpushare.io/scheduler/apis/config"
)

// decode reads a KubeSchedulerConfiguration as kube-scheduler's --config
// does (its scheme's universal decoder: versioned, defaulted, internal).
func decode(t *testing.T, data []byte) *schedconfig.KubeSchedulerConfiguration {
	t.Helper()
	obj, _, err := schedscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		t.Fatalf("decoded a %T", obj)
	}
	return cfg
}

// gpuShareArgs is the GpuShare args of the profile gpushare-scheduler.
func gpuShareArgs(t *testing.T, cfg *schedconfig.KubeSchedulerConfiguration) *config.GpuShareArgs {
	t.Helper()
	for _, prof := range cfg.Profiles {
		if prof.SchedulerName != "gpushare-scheduler" {
			continue
		}
		for _, pc := range prof.PluginConfig {
			if pc.Name == "GpuShare" {
				args, ok := pc.Args.(*config.GpuShareArgs)
				if !ok {
					t.Fatalf("GpuShare args decoded as %T", pc.Args)
				}
				return args
			}
		}
	}
	t.Fatal("no GpuShare args in profile gpushare-scheduler")
	return nil
}

// shipped is the args both shipped configurations set.
func wantShipped(t *testing.T, args *config.GpuShareArgs) {
	t.Helper()
	if args.ConfigMap != "kube-system/gpushare-config" || args.OnInvalidConfig != config.OnInvalidConfigIgnore ||
		args.DebugAddress != "127.0.0.1:32767" || args.GpuMemoryUnit != "" || args.NodePolicy != "" ||
		args.CgpuMaxPodsPerGPU != nil || args.GangTimeoutSeconds != nil {
		t.Fatalf("args: %+v", args)
	}
}

// deploy/scheduler's file, as a node's kube-scheduler reads it.
func TestShippedConfigFileDecodes(t *testing.T) {
	data, err := os.ReadFile("../../../../../deploy/scheduler/gpushare-scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wantShipped(t, gpuShareArgs(t, decode(t, data)))
}

// deploy/plugin's ConfigMap gpushare-scheduler-config, as the Deployment
// mounts it.
func TestShippedDeploymentConfigDecodes(t *testing.T) {
	data, err := os.ReadFile("../../../../../deploy/plugin/gpushare-scheduler.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var found string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var cm struct {
			Kind     string
			Metadata struct{ Name string }
			Data     map[string]string
		}
		if err := yaml.Unmarshal([]byte(doc), &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Kind == "ConfigMap" && cm.Metadata.Name == "gpushare-scheduler-config" {
			found = cm.Data["config.yaml"]
		}
	}
	if found == "" {
		t.Fatal("no ConfigMap gpushare-scheduler-config with config.yaml")
	}
	wantShipped(t, gpuShareArgs(t, decode(t, []byte(found))))
}

// A KubeSchedulerConfiguration whose one profile enables GpuShare; a test
// appends the profile's pluginConfig.
const enableGpuShare = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: gpushare-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: GpuShare
`

// A profile enabling GpuShare without pluginConfig gets the defaults, as
// kube-scheduler's own plugins do; args set are kept, typed.
func TestArgsDefaultedAndTyped(t *testing.T) {
	cfg := decode(t, []byte(enableGpuShare))
	args := gpuShareArgs(t, cfg)
	if args.ConfigMap != "kube-system/gpushare-config" || args.OnInvalidConfig != config.OnInvalidConfigExit ||
		args.DebugAddress != "" {
		t.Fatalf("defaults: %+v", args)
	}
	cfg = decode(t, []byte(enableGpuShare+`  pluginConfig:
  - name: GpuShare
    args:
      configMap: "-"
      gpuMemoryUnit: 128MiB
      nodePolicy: spread
      cgpuMaxPodsPerGPU: 4
      gangTimeoutSeconds: 30
`))
	args = gpuShareArgs(t, cfg)
	if args.ConfigMap != config.NoConfigMap || args.OnInvalidConfig != config.OnInvalidConfigExit ||
		args.GpuMemoryUnit != "128MiB" || args.NodePolicy != "spread" ||
		args.CgpuMaxPodsPerGPU == nil || *args.CgpuMaxPodsPerGPU != 4 ||
		args.GangTimeoutSeconds == nil || *args.GangTimeoutSeconds != 30 {
		t.Fatalf("args: %+v", args)
	}
}
