package config

import (
	"k8s.io/apimachinery/pkg/runtime"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// SchemeGroupVersion is kube-scheduler's internal config version: the args
// sit beside its own plugins' (kubescheduler.config.k8s.io, internal).
var SchemeGroupVersion = schedconfig.SchemeGroupVersion

var (
	// localSchemeBuilder is kube-scheduler's own: every scheme it builds
	// from it (the config scheme, the plugin args' conversion scheme)
	// knows GpuShareArgs.
	localSchemeBuilder = &schedconfig.SchemeBuilder
	// AddToScheme adds the internal type to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &GpuShareArgs{})
	return nil
}

func init() {
	localSchemeBuilder.Register(addKnownTypes)
}
