package v1

import "k8s.io/apimachinery/pkg/runtime"

// The defaults: the extender's (its --configmap and its exit on an invalid
// ConfigMap value at start-up).
const (
	DefaultConfigMap       = "kube-system/gpushare-config"
	DefaultOnInvalidConfig = "exit"
)

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_GpuShareArgs fills what the args leave out. The ConfigMap's
// keys have no default here: unset, the ConfigMap's value (or the core's
// default) applies.
func SetDefaults_GpuShareArgs(obj *GpuShareArgs) { //nolint:revive // the defaulter-gen name
	if obj.ConfigMap == nil || *obj.ConfigMap == "" {
		s := DefaultConfigMap
		obj.ConfigMap = &s
	}
	if obj.OnInvalidConfig == nil || *obj.OnInvalidConfig == "" {
		s := DefaultOnInvalidConfig
		obj.OnInvalidConfig = &s
	}
}
