package shim

import (
	"testing"
)

// A pod group's preemption through the shim (gs_shim_preempt_group): the
// victims, every member's slot node, and the slots held against another
// pod; bad input refused with a reason, the ledger unchanged.
func TestPreemptGroup(t *testing.T) {
	s := gibShim(t)
	s.Node(node("a", 2, 32))
	for _, v := range []string{"va", "vb"} {
		if rc, _, reason := s.Reserve(labelled(v, 16, 0, "", nil), "a", 1); rc != OK {
			t.Fatalf("reserve %s: %d %s", v, rc, reason)
		}
		s.Confirm("uid-" + v)
	}
	before, _ := s.Ledger()
	group := labelled("m0", 8, 100, "", map[string]string{"gpu-topology": "podgroup.g", "gpu-topology-replica": "3"})
	members := [][]byte{labelled("m0", 8, 100, "", nil), labelled("m1", 8, 100, "", nil),
		labelled("m2", 8, 100, "", nil), labelled("m3", 8, 100, "", nil)}
	for _, bad := range []struct {
		pod     []byte
		members [][]byte
		want    string
	}{
		{[]byte("{"), members, "invalid Pod: not JSON"},
		{group, nil, "invalid members: a JSON array of 1 to 1024 Pods"},
		{group, [][]byte{members[0], []byte(`{"metadata":{"name":7}}`)}, "invalid member 1: "},
	} {
		if c, reason := s.PreemptGroup(bad.pod, bad.members, []string{"a"}, 1); c != nil ||
			len(reason) < len(bad.want) || reason[:len(bad.want)] != bad.want {
			t.Fatalf("bad input: %+v %q, want %q...", c, reason, bad.want)
		}
	}
	if after, _ := s.Ledger(); after != before {
		t.Fatalf("the ledger changed:\n%s\n%s", before, after)
	}
	// three slots of 8 GiB on two full GPUs: both pods go; four members,
	// the fourth without a slot
	c, reason := s.PreemptGroup(group, members, []string{"a"}, 1)
	if c == nil || len(c.Victims) != 2 || len(c.Members) != 4 || c.Held != "" {
		t.Fatalf("preempt: %+v %q", c, reason)
	}
	for i, m := range c.Members {
		want := "a"
		if i == 3 {
			want = ""
		}
		if m.Name != "m"+string(rune('0'+i)) || m.Namespace != "default" || m.Node != want {
			t.Fatalf("member %d: %+v", i, m)
		}
	}
	// the victims gone: a pod of the group's priority finds 8 GiB free
	// outside the three slots, not 16
	s.PodDelete("uid-va")
	s.PodDelete("uid-vb")
	rc, vs := s.Filter(labelled("q", 16, 100, "", nil), []string{"a"}, nil, 1, false)
	if rc != OK || vs.Code(0) != Unschedulable ||
		vs.Reason(0) != "GPUs held for pod default/m0, nominated here by preemption" {
		t.Fatalf("q: %d %q", vs.Code(0), vs.Reason(0))
	}
	if rc, vs = s.Filter(labelled("q", 8, 100, "", nil), []string{"a"}, nil, 1, false); rc != OK || vs.Code(0) != OK {
		t.Fatalf("q of 8 GiB: %d %q", vs.Code(0), vs.Reason(0))
	}
}
