// Package config holds the GpuShare plugin's args as kube-scheduler keeps
// its own plugins' args: an internal type (this package), a versioned one
// with its defaults (v1), their validation (validation), registered in
// kube-scheduler's scheme (scheme) so that a KubeSchedulerConfiguration's
// pluginConfig args decode into them (docs/plugin.md, "Configuration").
//
// The zz_generated files are k8s.io/code-generator v0.37.2's, remade from
// plugins/scheduler after a change of the types with
//
//	go install k8s.io/code-generator/cmd/{deepcopy,defaulter,conversion}-gen@v0.37.2
//	deepcopy-gen --output-file zz_generated.deepcopy.go ./apis/config ./apis/config/v1
//	defaulter-gen --output-file zz_generated.defaults.go ./apis/config/v1
//	conversion-gen --output-file zz_generated.conversion.go ./apis/config/v1
//
// +k8s:deepcopy-gen=package
// +groupName=kubescheduler.config.k8s.io
package config
