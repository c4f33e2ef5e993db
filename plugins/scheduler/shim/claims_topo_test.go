package shim

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// dgx1Links: the DGX-1 V100's `nvidia-smi topo -m` GPU block
// (test/data/topologies/dgx1_v100_topo-m.txt) as gpushare-topo prints it.
var dgx1Links = [][]string{
	{"X", "NV1", "NV1", "NV2", "NV2", "SYS", "SYS", "SYS"},
	{"NV1", "X", "NV2", "NV1", "SYS", "NV2", "SYS", "SYS"},
	{"NV1", "NV2", "X", "NV2", "SYS", "SYS", "NV1", "SYS"},
	{"NV2", "NV1", "NV2", "X", "SYS", "SYS", "SYS", "NV1"},
	{"NV2", "SYS", "SYS", "SYS", "X", "NV1", "NV1", "NV2"},
	{"SYS", "NV2", "SYS", "SYS", "NV1", "X", "NV2", "NV1"},
	{"SYS", "SYS", "NV1", "SYS", "NV1", "NV2", "X", "NV2"},
	{"SYS", "SYS", "SYS", "NV1", "NV2", "NV1", "NV2", "X"},
}

// A topology node of 8 whole GPUs with the DGX-1 interconnect, and its
// slice of 8 exclusive devices.
func dgx1Node(s *Shim, name string) {
	topo, _ := json.Marshal(map[string]interface{}{"links": dgx1Links})
	b, _ := json.Marshal(map[string]interface{}{
		"metadata": map[string]interface{}{"name": name,
			"labels":      map[string]string{"ack.node.gpu.schedule": "topology"},
			"annotations": map[string]string{"gpushare.io/topology": string(topo)}},
		"status": map[string]interface{}{"capacity": map[string]string{"aliyun.com/gpu": "8"}},
	})
	s.Node(b)
	devs := []string{}
	for i := 0; i < 8; i++ {
		devs = append(devs, fmt.Sprintf(`{"name":"gpu-%d","attributes":{"gpushare.io/index":{"int":%d}}}`, i, i))
	}
	s.DRA([]byte(fmt.Sprintf(`{"metadata":{"name":"%[1]s-gpus"},"spec":{"driver":"gpu.gpushare.io",`+
		`"nodeName":"%[1]s","pool":{"name":"%[1]s"},"devices":[%[2]s]}}`, name, strings.Join(devs, ","))),
		false, false)
}

// Whole-device claims on a topology node (docs/dra.md): the shim answers
// the devices of the NVLink set the whole-GPU pod gets — on the free
// DGX-1 the NV2 pair gpu-0, gpu-3, exclusive (no memory, not shared) —
// and the filter refuses a node without two free GPUs with the pod's
// reason.
func TestClaimsTopology(t *testing.T) {
	s := gibShim(t)
	dgx1Node(s, "t")
	two := `{"deviceClassName":"gpushare.io","count":2}`
	rc, reason, c := s.ClaimReserve(nil, claimJSON("w0", two), "t", 1)
	want := ClaimChoice{Node: "t", Request: "gpu", Results: []ClaimDevice{
		{Driver: "gpu.gpushare.io", Pool: "t", Device: "gpu-0"},
		{Driver: "gpu.gpushare.io", Pool: "t", Device: "gpu-3"}}}
	if rc != OK || fmt.Sprint(c) != fmt.Sprint(want) {
		t.Fatalf("reserve: %d %q %+v", rc, reason, c)
	}
	six := `{"deviceClassName":"gpushare.io","count":6}`
	if rc, reason, _ := s.ClaimReserve(nil, claimJSON("w1", six), "t", 1); rc != OK {
		t.Fatalf("six: %d %q", rc, reason)
	}
	rc, reason, v := s.ClaimFilter(nil, claimJSON("w2", two), []string{"t"})
	if rc != OK || v.Codes[0] != Unschedulable || v.Reasons[0] != "fewer than 2 free whole GPUs" {
		t.Fatalf("full node: %d %q %+v", rc, reason, v)
	}
}
