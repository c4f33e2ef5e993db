// Package validation checks the GpuShare plugin's args (defaulted, in the
// internal type) field by field, each error naming its field path, as
// kube-scheduler's own args' validation does.
package validation

import (
	"net"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"gpushare.io/scheduler/apis/config"
)

// ValidateGpuShareArgs checks what the plugin itself reads: configMap,
// onInvalidConfig and debugAddress. The ConfigMap's keys (gpuMemoryUnit,
// nodePolicy, cgpuMaxPodsPerGPU, gangTimeoutSeconds) are checked by the
// core's parser, the one the ConfigMap and the extender's flags go through
// (src/config/policy.c): its error names the key, and one list of accepted
// values is kept, in C.
func ValidateGpuShareArgs(path *field.Path, args *config.GpuShareArgs) error {
	var errs field.ErrorList
	if args.ConfigMap != config.NoConfigMap {
		ns, name, ok := strings.Cut(args.ConfigMap, "/")
		switch {
		case !ok || ns == "" || name == "":
			errs = append(errs, field.Invalid(path.Child("configMap"), args.ConfigMap,
				`must be NS/NAME, or "-" for none`))
		default:
			for _, msg := range validation.IsDNS1123Label(ns) {
				errs = append(errs, field.Invalid(path.Child("configMap"), args.ConfigMap, "namespace: "+msg))
			}
			for _, msg := range validation.IsDNS1123Subdomain(name) {
				errs = append(errs, field.Invalid(path.Child("configMap"), args.ConfigMap, "name: "+msg))
			}
		}
	}
	switch args.OnInvalidConfig {
	case config.OnInvalidConfigExit, config.OnInvalidConfigIgnore:
	default:
		errs = append(errs, field.NotSupported(path.Child("onInvalidConfig"), args.OnInvalidConfig,
			[]string{config.OnInvalidConfigExit, config.OnInvalidConfigIgnore}))
	}
	if args.DebugAddress != "" {
		if _, port, err := net.SplitHostPort(args.DebugAddress); err != nil {
			errs = append(errs, field.Invalid(path.Child("debugAddress"), args.DebugAddress,
				"must be HOST:PORT: "+err.Error()))
		} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			errs = append(errs, field.Invalid(path.Child("debugAddress"), args.DebugAddress,
				"port must be a number 0..65535"))
		}
	}
	return errs.ToAggregate()
}
