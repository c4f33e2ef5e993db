package config

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GpuShareArgs are the GpuShare plugin's args, defaulted.
type GpuShareArgs struct {
	metav1.TypeMeta

	// The ConfigMap's keys (docs/contract.md §6); set, each wins over the
	// ConfigMap's value. Empty or nil: the ConfigMap's (or the default).
	// Their values are checked by the core's parser, the ConfigMap's own.
	GpuMemoryUnit      string
	NodePolicy         string
	CgpuMaxPodsPerGPU  *int32
	GangTimeoutSeconds *int32

	// ConfigMap is NS/NAME of the configuration's ConfigMap, "-" for none.
	ConfigMap string
	// OnInvalidConfig: a ConfigMap value invalid at start-up stops the
	// scheduler (OnInvalidConfigExit) or keeps its default, reported
	// (OnInvalidConfigIgnore).
	OnInvalidConfig string
	// DebugAddress is where /debug/ledger, inspect and /metrics are served
	// (HOST:PORT); empty: not served.
	DebugAddress string
}

// The values of OnInvalidConfig.
const (
	OnInvalidConfigExit   = "exit"
	OnInvalidConfigIgnore = "ignore"
)

// NoConfigMap is ConfigMap's value for "read none".
const NoConfigMap = "-"
