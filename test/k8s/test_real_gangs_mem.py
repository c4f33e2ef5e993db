"""Gangs under gpushare-scheduler with the GenericWorkload gate off (issue
34; docs/gangs.md): a job of memory-shared pods through gpushare's labels
(gpu-topology, gpu-topology-replica), all or nothing; and preemption for a
whole gang of whole GPUs: lower-priority pods evicted for all four members,
or nothing. Unit 1GiB."""
import re
import unittest

import kcluster
from realcase import Env, MemoryGang, alloc_gpus, topo_alloc, wait_for

CLASSES = {"low": 10, "high": 1000, "vip": 2000}
FINALIZER = "gpushare.io/test-keep"  # keeps a victim Terminating until the test removes it


def setUpModule():
    Env.up(unit="1GiB", form="plugin", config={"gangTimeoutSeconds": "30"})
    Env.priority_classes(CLASSES)


def tearDownModule():
    Env.down()


class GangsGateOff(MemoryGang):
    def member(self, name, job, replicas, **kw):
        labels = {"gpu-topology": job, "gpu-topology-replica": str(replicas), "job": job}
        return self.pod(name, labels=labels, **kw)

    def big_job_refused(self, what, **size):
        """A high-priority job "big" of four members of size that no set of
        evictions frees whole: it is told so (only 0 of 4 replicas fit
        (what)), the eight low pods stay (none deleted or marked
        DisruptionTarget); then it is deleted."""
        for i in range(4):
            self.member(f"big-{i}", "big", 4, priority_class="high", **size)
        # the event is posted after the attempt's PostFilter, which asked the
        # core for victims for the whole job and was told no
        self.wait_event("big-3", r"gang [a-z0-9-]+/big: only 0 of 4 replicas fit "
                                 + re.escape(f"({what})"))
        low = self.pods("job=low")
        self.assertEqual(len(low), 8)
        for p in low:
            self.assertIsNone(p["metadata"].get("deletionTimestamp"), p["metadata"]["name"])
            self.assertFalse([c for c in p["status"].get("conditions", [])
                              if c["type"] == "DisruptionTarget"], p["metadata"]["name"])
        for i in range(4):
            self.k.delete("pods", self.ns, f"big-{i}", grace=0)

    def test_a_memory_shared_job_through_the_labels(self):
        """The Workload test's job with the gate off: four 4 GiB pods labelled
        as one job on a 16 GiB GPU holding a 4 GiB pod. The members are told
        only 3 of 4 fit; none is bound and nothing is held for them. The
        blocker gone, all four bind within seconds of each other; a member
        deleted is replaced and placed in its 4 GiB."""
        self.blocked_gpu("gpu-mg")
        for i in range(4):
            self.member(f"w-{i}", "infer", 4, units=4)
        self.wait_event("w-3", r"gang [a-z0-9-]+/infer: only 3 of 4 replicas fit "
                               r"\(4 units of GPU memory on 1 GPU each\)")
        self.assert_nothing_held("infer", "gpu-mg")
        self.blocker_gone_all_bind("infer", "gpu-mg",
                                   lambda name: self.member(name, "infer", 4, units=4))

    def test_a_gang_preempts_for_all_members_or_nothing(self):
        """One 8-GPU topology node full of eight 1-GPU pods of priority 10.
        A high-priority job of 4 x 3 GPUs cannot be freed whole (two slots
        of 3 GPUs in 8 at most): nothing is evicted, every low pod stays. A job of 4 x 2 GPUs: all
        eight pods are evicted (each with
        DisruptionTarget) and the four members bind."""
        self.topo_node("gpu-gp")
        for i in range(8):
            self.pod(f"low-{i}", whole=1, priority_class="low", labels={"job": "low"})
        self.wait_bound(8, "job=low")

        self.big_job_refused("3 whole GPUs each", whole=3)

        for i in range(4):
            self.member(f"pair-{i}", "pair", 4, whole=2, priority_class="high")
        bound = self.wait_bound(4, "job=pair", timeout=300)
        wait_for(lambda: not self.pods("job=low"), 120, "every low pod gone")
        gpus = sorted(int(g) for p in bound for g in topo_alloc(p)["allocatedGPUs"]["0"])
        self.assertEqual(gpus, list(range(8)))
        self.assert_ledger_is_truth()
        # exactly the eight, for the pair job only; each marked
        # (DisruptionTarget, a status patch) before its deletion, both by
        # gpushare-scheduler (the audit log)
        victims = set(re.findall(rf'"gpushare: preempted" preemptor="{self.ns}/(\S+?)" '
                                 rf'victim="{self.ns}/(\S+?)"',
                                 Env.cp.procs["kube-scheduler"].tail(400000)))
        self.assertEqual({v for _, v in victims}, {f"low-{i}" for i in range(8)})
        self.assertEqual({m[:5] for m, _ in victims}, {"pair-"})
        sa = "system:serviceaccount:kube-system:gpushare-scheduler"
        done = [e for e in self.cp.audit(user=sa) if e.get("stage") == "ResponseComplete"
                and (e.get("objectRef") or {}).get("namespace") == self.ns]
        for i in range(8):
            ops = [(e["verb"], e["objectRef"].get("subresource")) for e in done
                   if e["objectRef"].get("name") == f"low-{i}" and e["verb"] in ("patch", "delete")]
            self.assertEqual(ops[0], ("patch", "status"), (i, ops))
            self.assertIn(("delete", None), ops, i)

    def test_a_memory_shared_gang_preempts_for_all_members_or_nothing(self):
        """Two 16 GiB GPUs (one node) full of eight 4 GiB pods of priority 10
        (binpack: low-0..3 on GPU 0, low-4..7 on GPU 1), low-0 of priority
        2000. A high-priority job of 4 x 8 GiB cannot be freed whole (GPU 0
        keeps low-0's 4 GiB: one 8 GiB slot there, two on GPU 1): nothing is
        evicted. A job of 4 x 6 GiB: two slots per GPU once three pods of
        each go; exactly six are evicted, low-0 and one pod of GPU 1 stay,
        and the four members fill both GPUs."""
        self.node("gpu-mp", "share", gpus=2, units=32)
        for i in range(8):
            self.pod(f"low-{i}", units=4, priority_class="vip" if i == 0 else "low",
                     labels={"job": "low"})
            self.wait_bound(i + 1, "job=low")  # in order: binpack fills GPU 0 first
        self.assertEqual(self.used("gpu-mp"), {0: 16, 1: 16})
        self.big_job_refused("8 units of GPU memory on 1 GPU each", units=8)

        for i in range(4):
            self.member(f"mid-{i}", "mid", 4, units=6, priority_class="high")
        bound = self.wait_bound(4, "job=mid", timeout=300)
        left = sorted(p["metadata"]["name"] for p in self.pods("job=low"))
        self.assertEqual(len(left), 2, left)
        self.assertEqual(left[0], "low-0")
        self.assertIn(left[1], [f"low-{i}" for i in range(4, 8)])
        self.assertEqual(sorted(alloc_gpus(p)[0] for p in bound), [0, 0, 1, 1])
        wait_for(lambda: self.used("gpu-mp") == {0: 16, 1: 16}, 60, "both GPUs full")
        self.assert_ledger_is_truth()

    def test_the_jobs_slots_are_held_while_the_victims_terminate(self):
        """Four 16 GiB GPUs: v-a and v-b (8 GiB, low) fill GPU 0, v-a kept
        Terminating by a finalizer; 12 GiB of vip on each other GPU. A
        high-priority job of 2 x 8 GiB fits only where v-a and v-b were:
        both are evicted. While v-a terminates, an 8 GiB pod q of the job's
        priority arrives: it fits on GPU 0 (8 GiB free) and by node totals
        (kube-scheduler adds the one nominated member), so only gpushare's
        hold of the job's slots stops it (its text, its event); would it
        land there, the job could never fit. v-a let go, both members bind
        on GPU 0; q is never bound (docs/preemption.md "A label gang's
        slots are held")."""
        self.node("gpu-lh", "share", gpus=4, units=64)
        sel = {"gpushare-test": self.ns}
        for name, gib, prio, keep in [("v-a", 8, "low", True), ("v-b", 8, "low", False),
                                      ("t-1", 12, "vip", False), ("t-2", 12, "vip", False),
                                      ("t-3", 12, "vip", False)]:
            p = kcluster.gpu_pod(name, ns=self.ns, units=gib, priority_class=prio, node_selector=sel)
            if keep:
                p["metadata"]["finalizers"] = [FINALIZER]
            self.k.create(p)
            wait_for(lambda n=name: self.k.get("pods", self.ns, n)["spec"].get("nodeName"), 120,
                     f"{name} bound", 0.2)
        try:
            self.assertEqual(self.used("gpu-lh"), {0: 16, 1: 12, 2: 12, 3: 12})
            for i in range(2):
                self.member(f"lh-{i}", "lh", 2, units=8, priority_class="high")
            wait_for(lambda: self.k.get("pods", self.ns, "v-a")["metadata"].get("deletionTimestamp"),
                     180, "v-a preempted (Terminating)", 0.2)
            wait_for(lambda: not self.k.try_get("pods", self.ns, "v-b"), 120, "v-b gone", 0.2)
            self.pod("q", units=8, priority_class="high")
            self.wait_event("q", re.escape(f"GPUs held for pod {self.ns}/") + r"lh-\d" +
                            re.escape(", nominated here by preemption"))
            self.assertFalse(self.k.get("pods", self.ns, "q")["spec"].get("nodeName"))
        finally:
            if self.k.try_get("pods", self.ns, "v-a"):
                self.k.patch("pods", self.ns, "v-a", {"metadata": {"finalizers": None}})
        bound = self.wait_bound(2, "job=lh", timeout=300)
        self.assertEqual(sorted(alloc_gpus(p)[0] for p in bound), [0, 0])
        self.assertFalse(self.k.get("pods", self.ns, "q")["spec"].get("nodeName"))
        self.assert_ledger_is_truth()

if __name__ == "__main__":
    unittest.main()
