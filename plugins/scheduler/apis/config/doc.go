// Package config holds the GpuShare plugin's args as kube-scheduler keeps
// its own plugins' args: an internal type (this package), a versioned one
// with its defaults (v1), their validation (validation), registered in
// kube-scheduler's scheme (scheme) so that a KubeSchedulerConfiguration's
// pluginConfig args decode into them (docs/plugin.md, "Configuration").
//
// +k8s:deepcopy-gen=package
// +groupName=kubescheduler.config.k8s.io
package config
