package shim

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"unsafe"
)

// GroupVictim is one pod the core chose to evict for a pod group.
type GroupVictim struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// GroupMember is a member of the pod group and the node of the slot held
// for it ("" when it has none).
type GroupMember struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node"`
}

// GroupChoice is the core's answer for a pod group (shim.h
// gs_shim_preempt_group): the victims, each member's slot node, and Held
// saying when not every slot could be held ("" when all are).
type GroupChoice struct {
	Victims []GroupVictim `json:"victims"`
	Members []GroupMember `json:"members"`
	Held    string        `json:"held"`
}

// PreemptGroup: victims freeing a slot for every member the group needs,
// or none (reason says why), over the nodes; pod stands for the group (its
// gang labels), members are the group's pods being scheduled (their cycle
// JSON), each given a slot in order and held there until it binds
// (gs_sched_preempt_group).
func (s *Shim) PreemptGroup(pod []byte, members [][]byte, names []string, nowNs int64) (*GroupChoice, string) {
	list := append(append([]byte{'['}, bytes.Join(members, []byte{','})...), ']')
	arr := s.nameArray(names)
	defer C.free(unsafe.Pointer(arr))
	reason := (*C.char)(C.calloc(1, C.size_t(reasonMax)))
	defer C.free(unsafe.Pointer(reason))
	var res *C.char
	withBytes(pod, func(pb *C.char, pl C.size_t) {
		withBytes(list, func(mb *C.char, ml C.size_t) {
			res = C.gs_shim_preempt_group(s.c, pb, pl, mb, ml, arr, C.size_t(len(names)), C.int64_t(nowNs), reason)
		})
	})
	out, ok := take(res)
	if !ok {
		return nil, C.GoString(reason)
	}
	var c GroupChoice
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		return nil, err.Error()
	}
	return &c, ""
}
