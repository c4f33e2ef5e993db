package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	kubeschedv1 "k8s.io/kube-scheduler/config/v1"
)

// SchemeGroupVersion is kubescheduler.config.k8s.io/v1, the version of the
// KubeSchedulerConfiguration the args are written in.
var SchemeGroupVersion = kubeschedv1.SchemeGroupVersion

var (
	// localSchemeBuilder is kube-scheduler's v1 builder: the schemes it
	// builds (its config scheme, the plugin args' conversion scheme) decode,
	// default and convert GpuShareArgs like its own plugins' args.
	localSchemeBuilder = &kubeschedv1.SchemeBuilder
	// AddToScheme adds the versioned type, its defaults and conversions.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &GpuShareArgs{})
	return nil
}

func init() {
	localSchemeBuilder.Register(addKnownTypes, addDefaultingFuncs) // conversions: zz_generated.conversion.go
}
