// Package scheme registers the GpuShare plugin's args in kube-scheduler's
// config scheme. The plugin (package gpushare) imports it, so its init runs
// before kube-scheduler reads its configuration.
package scheme

import (
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

	"gpushare.io/scheduler/apis/config"
	configv1 "gpushare.io/scheduler/apis/config/v1"
)

// Scheme is kube-scheduler's config scheme, with GpuShareArgs.
var Scheme = schedscheme.Scheme

func init() {
	// The builders are kube-scheduler's own (register.go in config and
	// v1), so schemes built from them after this init know GpuShareArgs;
	// kube-scheduler's config scheme was built at its own init, which may
	// run first: add the types to it here (adding twice is a no-op).
	utilruntime.Must(config.AddToScheme(Scheme))
	utilruntime.Must(configv1.AddToScheme(Scheme))
}
