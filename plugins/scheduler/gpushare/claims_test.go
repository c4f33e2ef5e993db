package gpushare

import (
	"testing"

	"gpushare.io/scheduler/shim"
)

// The allocation written for the core's choice is DynamicResources' shape:
// a result per device, consumedCapacity memory and a fresh shareID on a
// shared device, none on a whole one, the node selector of the node.
func TestAllocation(t *testing.T) {
	a, err := allocation(&shim.ClaimChoice{Node: "n1", Request: "gpu", Results: []shim.ClaimDevice{
		{Driver: "gpu.gpushare.io", Pool: "n1", Device: "gpu-0", Memory: "4Gi", Shared: true},
		{Driver: "gpu.gpushare.io", Pool: "n1", Device: "gpu-1", Memory: "4Gi", Shared: true},
		{Driver: "gpu.gpushare.io", Pool: "n1", Device: "gpu-2"}}})
	if err != nil {
		t.Fatal(err)
	}
	r := a.Devices.Results
	if len(r) != 3 || r[0].Request != "gpu" || r[0].Pool != "n1" || r[1].Device != "gpu-1" {
		t.Fatalf("results: %+v", r)
	}
	if r[0].ShareID == nil || r[1].ShareID == nil || *r[0].ShareID == *r[1].ShareID || r[2].ShareID != nil {
		t.Fatalf("shareIDs: %v %v %v", r[0].ShareID, r[1].ShareID, r[2].ShareID)
	}
	if q := r[0].ConsumedCapacity["memory"]; q.Value() != 4<<30 || r[2].ConsumedCapacity != nil {
		t.Fatalf("consumedCapacity: %+v", r)
	}
	f := a.NodeSelector.NodeSelectorTerms[0].MatchFields[0]
	if f.Key != "metadata.name" || string(f.Operator) != "In" || len(f.Values) != 1 || f.Values[0] != "n1" {
		t.Fatalf("nodeSelector: %+v", a.NodeSelector)
	}
	if _, err := allocation(&shim.ClaimChoice{Results: []shim.ClaimDevice{{Memory: "x"}}}); err == nil {
		t.Fatal("a bad quantity accepted")
	}
}
