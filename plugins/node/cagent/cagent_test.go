package cagent

import (
	"errors"
	"strings"
	"testing"
)

// The boundary's conversions: C's texts and codes arrive intact.
func TestBoundary(t *testing.T) {
	if _, err := DecodeInventory([]byte(`{"gpus":[{"uuid":"a","memoryMiB":-1}]}`)); err == nil ||
		err.Error() != "inventory: gpus[0]: memoryMiB must be an integer from 1 to 1073741824" {
		t.Fatalf("bad inventory: %v", err)
	}
	inv, err := DecodeInventory([]byte(`{"gpus":[{"uuid":"GPU-a","memoryMiB":16384,"healthy":false}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer inv.Free()
	if g := inv.GPUs(); len(g) != 1 || g[0].UUID != "GPU-a" || g[0].MemMiB != 16384 || g[0].Healthy {
		t.Fatalf("GPUs %+v", g)
	}
	for text, want := range map[string]uint32{"1GiB": 1024, "128MiB": 128, "1Gi": 1024} {
		if got, err := UnitMiB(text); err != nil || got != want {
			t.Fatalf("UnitMiB(%q) = %d, %v", text, got, err)
		}
	}
	if _, err := UnitMiB("512MiB"); err == nil {
		t.Fatal("512MiB accepted")
	}
	if err := (Config{UnitMiB: 1024, Mode: "mps"}).Check(); err == nil ||
		!strings.Contains(err.Error(), "an mps node needs the MPS pipe directory") {
		t.Fatalf("mps without a pipe directory: %v", err)
	}
	cfg := Config{UnitMiB: 1024, Mode: "share"}
	if n := MemUnits(cfg, inv); n != 16 {
		t.Fatalf("MemUnits %d", n)
	}
	_, err = Allocate(cfg, inv, "gpu-a", ResourceMem, 4, []byte(`[]`), nil, 1)
	var r *Refusal
	if !errors.Is(err, ErrNotFound) || !errors.As(err, &r) || !strings.HasPrefix(err.Error(), "no pending pod on node gpu-a") {
		t.Fatalf("refusal: %v", err)
	}
	if _, err := Allocate(cfg, inv, "gpu-a", ResourceMem, 4, []byte(`{}`), nil, 1); !errors.Is(err, ErrRefused) {
		t.Fatalf("malformed pods: %v", err)
	}
	if d, _ := UnhealthyData(inv); d["gpus"] != "0" {
		t.Fatalf("unhealthy %v", d)
	}
}
