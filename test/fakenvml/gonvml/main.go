// gonvml-probe: reads the node's GPUs through NVIDIA's go-nvml binding and
// prints what it got as one JSON document, so that test_fake_nvml.py can
// hold the fake NVML to a second, independent client built against
// NVIDIA's own nvml.h (go-nvml's cgo types): struct layouts, versioned
// symbols (go-nvml picks _v2/_v3 when the library has them) and codes.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

type link struct {
	Link      int    `json:"link"`
	RemoteBus string `json:"remote_bus"`
	Type      int    `json:"type"`
}

type gpu struct {
	Index     int    `json:"index"`
	UUID      string `json:"uuid"`
	Name      string `json:"name"`
	Minor     int    `json:"minor"`
	MemTotal  uint64 `json:"mem_total"`
	Mem2Total uint64 `json:"mem2_total"`
	BusID     string `json:"bus_id"`
	Arch      int    `json:"arch"`
	CC        [2]int `json:"cc"`
	Mig       [2]int `json:"mig"`
	ByUUID    bool   `json:"by_uuid"`
	ByBus     bool   `json:"by_bus"`
	Links     []link `json:"links"`
}

type out struct {
	Driver    string  `json:"driver"`
	Cuda      int     `json:"cuda"`
	GPUs      []gpu   `json:"gpus"`
	Ancestors [][]int `json:"ancestors"`
	EventGPU  int     `json:"event_gpu"`
	EventXID  uint64  `json:"event_xid"`
	EventType uint64  `json:"event_type"`
	NextWait  int     `json:"next_wait"`
}

func must(what string, ret nvml.Return) {
	if ret != nvml.SUCCESS {
		fmt.Fprintf(os.Stderr, "gonvml-probe: %s: %v (%d)\n", what, nvml.ErrorString(ret), int(ret))
		os.Exit(1)
	}
}

func busString(b [32]int8) string {
	s := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}

func main() {
	var o out
	var ret nvml.Return
	if ret = nvml.Init(); ret != nvml.SUCCESS {
		fmt.Fprintf(os.Stderr, "gonvml-probe: Init: %v (%d)\n", nvml.ErrorString(ret), int(ret))
		os.Exit(2)
	}
	defer nvml.Shutdown()
	o.Driver, ret = nvml.SystemGetDriverVersion()
	must("SystemGetDriverVersion", ret)
	o.Cuda, ret = nvml.SystemGetCudaDriverVersion()
	must("SystemGetCudaDriverVersion", ret)
	n, ret := nvml.DeviceGetCount()
	must("DeviceGetCount", ret)
	devs := make([]nvml.Device, n)
	set, ret := nvml.EventSetCreate()
	must("EventSetCreate", ret)
	defer set.Free()
	for i := 0; i < n; i++ {
		var g gpu
		d, ret := nvml.DeviceGetHandleByIndex(i)
		must("DeviceGetHandleByIndex", ret)
		devs[i] = d
		g.Index, ret = d.GetIndex()
		must("GetIndex", ret)
		g.UUID, ret = d.GetUUID()
		must("GetUUID", ret)
		g.Name, ret = d.GetName()
		must("GetName", ret)
		g.Minor, ret = d.GetMinorNumber()
		must("GetMinorNumber", ret)
		mem, ret := d.GetMemoryInfo()
		must("GetMemoryInfo", ret)
		g.MemTotal = mem.Total
		mem2, ret := d.GetMemoryInfo_v2()
		must("GetMemoryInfo_v2", ret)
		g.Mem2Total = mem2.Total
		pci, ret := d.GetPciInfo()
		must("GetPciInfo", ret)
		g.BusID = busString(pci.BusId)
		arch, ret := d.GetArchitecture()
		must("GetArchitecture", ret)
		g.Arch = int(arch)
		g.CC[0], g.CC[1], ret = d.GetCudaComputeCapability()
		must("GetCudaComputeCapability", ret)
		g.Mig[0], g.Mig[1], ret = d.GetMigMode()
		must("GetMigMode", ret)
		byUUID, ret := nvml.DeviceGetHandleByUUID(g.UUID)
		must("DeviceGetHandleByUUID", ret)
		byBus, ret := nvml.DeviceGetHandleByPciBusId(g.BusID)
		must("DeviceGetHandleByPciBusId", ret)
		g.ByUUID = byUUID == d
		g.ByBus = byBus == d
		g.Links = []link{}
		for l := 0; l < nvml.NVLINK_MAX_LINKS; l++ {
			state, ret := d.GetNvLinkState(l)
			if ret == nvml.ERROR_NOT_SUPPORTED {
				continue
			}
			must("GetNvLinkState", ret)
			if state != nvml.FEATURE_ENABLED {
				continue
			}
			remote, ret := d.GetNvLinkRemotePciInfo(l)
			must("GetNvLinkRemotePciInfo", ret)
			typ, ret := d.GetNvLinkRemoteDeviceType(l)
			must("GetNvLinkRemoteDeviceType", ret)
			g.Links = append(g.Links, link{l, busString(remote.BusId), int(typ)})
		}
		must("RegisterEvents", d.RegisterEvents(nvml.EventTypeXidCriticalError, set))
		o.GPUs = append(o.GPUs, g)
	}
	for i := 0; i < n; i++ {
		row := make([]int, n)
		for j := 0; j < n; j++ {
			level, ret := nvml.DeviceGetTopologyCommonAncestor(devs[i], devs[j])
			must("DeviceGetTopologyCommonAncestor", ret)
			row[j] = int(level)
		}
		o.Ancestors = append(o.Ancestors, row)
	}
	ev, ret := set.Wait(10000)
	must("EventSetWait", ret)
	o.EventGPU = -1
	for i, d := range devs {
		if ev.Device == d {
			o.EventGPU = i
		}
	}
	o.EventXID = ev.EventData
	o.EventType = ev.EventType
	_, ret = set.Wait(50)
	o.NextWait = int(ret)
	if err := json.NewEncoder(os.Stdout).Encode(o); err != nil {
		os.Exit(1)
	}
}
