// Package v1 is the GpuShare plugin's args as written in a
// KubeSchedulerConfiguration of kubescheduler.config.k8s.io/v1, with their
// defaults.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=gpushare.io/scheduler/apis/config
// +k8s:defaulter-gen=TypeMeta
// +groupName=kubescheduler.config.k8s.io
package v1
