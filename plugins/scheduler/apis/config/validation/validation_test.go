package validation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"gpushare.io/scheduler/apis/config"
)

func TestValidateGpuShareArgs(t *testing.T) {
	valid := config.GpuShareArgs{ConfigMap: "kube-system/gpushare-config", OnInvalidConfig: "exit"}
	cases := []struct {
		name string
		edit func(*config.GpuShareArgs)
		want string // "" valid; else the whole error
	}{
		{"defaults", func(*config.GpuShareArgs) {}, ""},
		{"shipped", func(a *config.GpuShareArgs) { a.OnInvalidConfig, a.DebugAddress = "ignore", "127.0.0.1:32767" }, ""},
		{"no ConfigMap", func(a *config.GpuShareArgs) { a.ConfigMap = "-" }, ""},
		{"any port", func(a *config.GpuShareArgs) { a.DebugAddress = ":0" }, ""},
		{"ConfigMap without namespace", func(a *config.GpuShareArgs) { a.ConfigMap = "gpushare-config" },
			`gpuShareArgs.configMap: Invalid value: "gpushare-config": must be NS/NAME, or "-" for none`},
		{"ConfigMap with an empty name", func(a *config.GpuShareArgs) { a.ConfigMap = "kube-system/" },
			`gpuShareArgs.configMap: Invalid value: "kube-system/": must be NS/NAME, or "-" for none`},
		{"ConfigMap namespace not a label", func(a *config.GpuShareArgs) { a.ConfigMap = "Kube_System/x" },
			`gpuShareArgs.configMap: Invalid value: "Kube_System/x": namespace: a lowercase RFC 1123 label`},
		{"onInvalidConfig", func(a *config.GpuShareArgs) { a.OnInvalidConfig = "warn" },
			`gpuShareArgs.onInvalidConfig: Unsupported value: "warn": supported values: "exit", "ignore"`},
		{"debugAddress without port", func(a *config.GpuShareArgs) { a.DebugAddress = "127.0.0.1" },
			`gpuShareArgs.debugAddress: Invalid value: "127.0.0.1": must be HOST:PORT`},
		{"debugAddress port", func(a *config.GpuShareArgs) { a.DebugAddress = "127.0.0.1:70000" },
			`gpuShareArgs.debugAddress: Invalid value: "127.0.0.1:70000": port must be a number 0..65535`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := valid
			c.edit(&a)
			err := ValidateGpuShareArgs(field.NewPath("gpuShareArgs"), &a)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
				t.Fatalf("got %v\nwant %s...", err, c.want)
			}
		})
	}
	// every field wrong: one error for each, each naming its field
	bad := config.GpuShareArgs{ConfigMap: "x", OnInvalidConfig: "warn", DebugAddress: "nope"}
	err := ValidateGpuShareArgs(field.NewPath("args"), &bad)
	for _, f := range []string{"args.configMap:", "args.onInvalidConfig:", "args.debugAddress:"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("%s not named in %v", f, err)
		}
	}
}
