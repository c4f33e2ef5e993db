package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GpuShareArgs are the GpuShare plugin's args (docs/plugin.md).
type GpuShareArgs struct {
	metav1.TypeMeta `json:",inline"`

	// GpuMemoryUnit, NodePolicy, CgpuMaxPodsPerGPU, GangTimeoutSeconds: the
	// ConfigMap's keys; set here they win over the ConfigMap's, key by key.
	GpuMemoryUnit      *string `json:"gpuMemoryUnit,omitempty"`
	NodePolicy         *string `json:"nodePolicy,omitempty"`
	CgpuMaxPodsPerGPU  *int32  `json:"cgpuMaxPodsPerGPU,omitempty"`
	GangTimeoutSeconds *int32  `json:"gangTimeoutSeconds,omitempty"`
	// ConfigMap is NS/NAME of the configuration's ConfigMap, "-" for none
	// (default kube-system/gpushare-config).
	ConfigMap *string `json:"configMap,omitempty"`
	// OnInvalidConfig: exit (default) or ignore.
	OnInvalidConfig *string `json:"onInvalidConfig,omitempty"`
	// DebugAddress: HOST:PORT of the side listener; empty: none (default).
	DebugAddress *string `json:"debugAddress,omitempty"`
}
