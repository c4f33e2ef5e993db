package gpushare

import (
	"unsafe"

	fwk "k8s.io/kube-scheduler/framework"
)

// ptrIndex finds a NodeInfo's position in a node list by the object's
// address: Filter and Score ask once per node and call, and a Go map keyed
// by the interface hashed it through the runtime's generic path (≈ 150 ns
// a lookup at 5,000 nodes, 3.6 % of kube-scheduler's CPU in a profile,
// docs/benchmarks.md §9). Open addressing over (address, position) pairs:
// one multiply and, mostly, one cache line. The addresses are not pointers
// to the garbage collector; the nodeIndex that owns the table keeps the
// objects alive in its infos, and Go's heap does not move objects.
type ptrIndex struct {
	shift uint
	slots []ptrSlot
}

type ptrSlot struct {
	addr uintptr
	pos  int
}

// addrOf is the address an interface value holds (its data word): the
// NodeInfo object itself, for kube-scheduler's pointer implementation.
func addrOf(n fwk.NodeInfo) uintptr {
	return (*[2]uintptr)(unsafe.Pointer(&n))[1]
}

func (t *ptrIndex) home(a uintptr) uintptr {
	return uintptr((uint64(a) * 0x9E3779B97F4A7C15) >> t.shift)
}

func newPtrIndex(infos []fwk.NodeInfo) ptrIndex {
	bits := uint(1)
	for 1<<bits < 2*len(infos) {
		bits++
	}
	t := ptrIndex{shift: 64 - bits, slots: make([]ptrSlot, 1<<bits)}
	mask := uintptr(len(t.slots) - 1)
	for i, n := range infos {
		a := addrOf(n)
		if a == 0 {
			continue
		}
		for h := t.home(a); ; h = (h + 1) & mask {
			if t.slots[h].addr == 0 {
				t.slots[h] = ptrSlot{a, i}
				break
			}
			if t.slots[h].addr == a {
				break // listed twice: the first position answers
			}
		}
	}
	return t
}

// get is n's position, false when n is not one of the list's objects.
func (t *ptrIndex) get(n fwk.NodeInfo) (int, bool) {
	a := addrOf(n)
	if a == 0 || len(t.slots) == 0 {
		return 0, false
	}
	mask := uintptr(len(t.slots) - 1)
	for h := t.home(a); ; h = (h + 1) & mask {
		s := t.slots[h]
		if s.addr == a {
			return s.pos, true
		}
		if s.addr == 0 {
			return 0, false
		}
	}
}
