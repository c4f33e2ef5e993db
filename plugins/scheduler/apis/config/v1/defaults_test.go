package v1

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestDefaults(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	str := func(v string) *string { return &v }
	cases := []struct {
		name          string
		in            GpuShareArgs
		configMap, on string
	}{
		{"empty", GpuShareArgs{}, DefaultConfigMap, DefaultOnInvalidConfig},
		{"empty strings", GpuShareArgs{ConfigMap: str(""), OnInvalidConfig: str("")}, DefaultConfigMap, DefaultOnInvalidConfig},
		{"set", GpuShareArgs{ConfigMap: str("-"), OnInvalidConfig: str("ignore")}, "-", "ignore"},
	}
	for _, c := range cases {
		a := c.in
		s.Default(&a)
		if *a.ConfigMap != c.configMap || *a.OnInvalidConfig != c.on || a.DebugAddress != nil ||
			a.GpuMemoryUnit != nil || a.NodePolicy != nil || a.CgpuMaxPodsPerGPU != nil || a.GangTimeoutSeconds != nil {
			t.Errorf("%s: %+v", c.name, a)
		}
	}
}
