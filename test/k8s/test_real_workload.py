"""Kubernetes' Workload API under gpushare-scheduler (issue 34;
docs/gangs.md "Kubernetes' Workload API"): the control plane runs with the
GenericWorkload feature gate on (apiserver, controller-manager and
gpushare-scheduler; scheduling.k8s.io/v1beta1 served). A Workload with a
PodGroup of four memory-shared pods (4 GiB each, gang minCount 4) is
placed by kube-scheduler's pod-group cycle, with gpushare's Reserve and
Unreserve exact inside it: none bound until all four fit, all bound
together, nothing held meanwhile; a member deleted is replaced and placed.
Unit 1GiB; one node of one 16 GiB GPU."""
import re
import unittest

import kcluster
from realcase import Env, MemoryGang, alloc_gpus, topo_alloc, wait_for


def setUpModule():
    Env.up(unit="1GiB", form="plugin", feature_gates={"GenericWorkload": True})
    Env.priority_classes({"low": 10, "high": 1000, "top": 2000})


def tearDownModule():
    Env.down()


class Workloads(MemoryGang):
    """Helpers: a Workload with its PodGroup, its members."""

    def workload(self, name, min_count, priority_class=None):
        """A Workload with one gang template, and its PodGroup (of
        priority_class: kube-scheduler wants its members' priority)."""
        gang = {"gang": {"minCount": min_count}}
        prio = {"priorityClassName": priority_class} if priority_class else {}
        self.create({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
                     "metadata": {"name": name},
                     "spec": {"podGroupTemplates": [dict({"name": "workers", "schedulingPolicy": gang}, **prio)]}})
        self.create({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": name},
                     "spec": dict({"workloadRef": {"workloadName": name, "templateName": "workers"},
                                   "schedulingPolicy": gang}, **prio)})

    def member(self, name, group, gib, labels=None, priority_class=None):
        p = kcluster.gpu_pod(name, ns=self.ns, units=gib, labels=dict(labels or {}, job=group),
                             node_selector={"gpushare-test": self.ns}, priority_class=priority_class)
        p["spec"]["schedulingGroup"] = {"podGroupName": group}
        return self.k.create(p)

    def condition(self, group):
        pg = self.k.get("podgroups", self.ns, group)
        for c in pg.get("status", {}).get("conditions", []):
            if c["type"] == "PodGroupInitiallyScheduled":
                return c
        return None


class WorkloadGangs(Workloads):
    def test_a_pod_group_of_four_memory_pods_binds_all_or_none(self):
        """12 GiB free for four 4 GiB members: the pod group is judged
        unschedulable, no member is bound and the ledger holds the blocker's
        4 GiB only (every Reserve of the pod-group cycle undone, no gang plan
        of gpushare's: the members' gpu-topology labels are left to the pod
        group). The blocker gone, all four bind within seconds of each other
        and fill the GPU. A member deleted is replaced and placed."""
        self.blocked_gpu("gpu-wl")
        self.workload("infer", 4)
        # gpushare's own gang labels too: with the gate on the pod group wins
        labels = {"gpu-topology": "infer", "gpu-topology-replica": "4"}
        for i in range(4):
            self.member(f"w-{i}", "infer", 4, labels)
        cond = wait_for(lambda: (lambda c: c if c and c["status"] == "False" else None)(
            self.condition("infer")), 180, "the pod group judged unschedulable", 0.5)
        self.assertEqual(cond["reason"], "Unschedulable")
        self.assert_nothing_held("infer", "gpu-wl")

        def scheduled():
            self.assertFalse(Env.ext.ledger().get("gangs"))
            wait_for(lambda: (lambda c: c if c and c["status"] == "True" else None)(
                self.condition("infer")), 60, "the pod group scheduled", 0.5)

        # the blocker gone: all four together; one member ends, its
        # replacement (same group) is placed
        self.blocker_gone_all_bind("infer", "gpu-wl",
                                   lambda name: self.member(name, "infer", 4, labels), scheduled)


class WorkloadPreemption(Workloads):
    """A PodGroup that does not fit preempts lower-priority pods as a whole
    (gpushare's PodGroupPostFilter, docs/gangs.md "Preemption"): victims for
    every member, or none."""

    def fill(self, layout):
        """Pods bound one after another: (name, GiB, priority class) → their GPUs."""
        for name, gib, prio in layout:
            self.pod(name, units=gib, priority_class=prio)
            wait_for(lambda n=name: self.k.get("pods", self.ns, n)["spec"].get("nodeName"), 120,
                     f"{name} bound", 0.2)
        return {p["metadata"]["name"]: alloc_gpus(p) for p in self.pods()}

    def test_a_pod_group_evicts_for_all_four_members(self):
        """Two 16 GiB GPUs full of 4 GiB pods of low priority; a PodGroup of
        four 6 GiB members of high priority (minCount 4): two members fit a
        GPU once three of its four pods go, so exactly six are evicted (each
        with DisruptionTarget), and all four members are bound, the GPUs
        full."""
        self.node("gpu-wp", "share", gpus=2, units=32)
        gpus = self.fill([(f"low-{i}", 4, "low") for i in range(8)])
        self.assertEqual(sorted(gpus.values()), [[0]] * 4 + [[1]] * 4)
        self.workload("serve", 4, "high")
        for i in range(4):
            self.member(f"s-{i}", "serve", 6, priority_class="high")
        bound = self.wait_bound(4, "job=serve", timeout=240)
        self.assertEqual(sorted(alloc_gpus(p) for p in bound), [[0], [0], [1], [1]])
        left = wait_for(lambda: (lambda ps: ps if len(ps) == 2 else None)(
            [p for p in self.pods() if p["metadata"]["name"].startswith("low-")]), 120, "six evicted", 0.2)
        self.assertEqual(sorted(alloc_gpus(p) for p in left), [[0], [1]])
        wait_for(lambda: self.used("gpu-wp") == {0: 16, 1: 16}, 60, "both GPUs full")
        events = [e for e in self.k.list("events", self.ns) if e.get("reason") == "Preempted"]
        self.assertEqual(len({e["involvedObject"]["name"] for e in events}), 6,
                         [e["involvedObject"]["name"] for e in events])
        # gpushare's PodGroupPostFilter chose them (not DefaultPreemption's)
        logged = set(re.findall(rf'"gpushare: preempted for a pod group" podGroup="{self.ns}/serve" '
                                rf'victim="{self.ns}/(low-\d)"', Env.ext.proc.tail(4000000)))
        self.assertEqual(logged, {e["involvedObject"]["name"] for e in events})
        self.assert_ledger_is_truth()

    def test_a_pod_group_that_cannot_be_freed_evicts_nothing(self):
        """The same GPUs, each with 4 GiB of top priority (above the group's)
        and three 4 GiB pods of low priority; four 8 GiB members: at most one
        member per GPU can be freed, 2 of 4, so nothing is evicted and no
        member is bound."""
        self.node("gpu-wn", "share", gpus=2, units=32)
        layout = [("top-a", 4, "top")] + [(f"low-{i}", 4, "low") for i in range(3)] + \
            [("top-b", 4, "top")] + [(f"low-{i}", 4, "low") for i in range(3, 6)]
        gpus = self.fill(layout)
        self.assertEqual({n: g for n, g in gpus.items() if n.startswith("top")}, {"top-a": [0], "top-b": [1]})
        self.workload("big", 4, "high")
        for i in range(4):
            self.member(f"b-{i}", "big", 8, priority_class="high")
        # gpushare's PodGroupPostFilter answered: its reason is in the
        # PodGroup's condition (the members' events carry their own FitErrors)
        cond = wait_for(lambda: (lambda c: c if c and "cannot free room" in c.get("message", "") else None)(
            self.condition("big")), 180, "gpushare's answer in the PodGroup's condition", 0.5)
        self.assertEqual((cond["status"], cond["reason"]), ("False", "Unschedulable"))
        self.assertIn(f"gpushare: lower-priority pods cannot free room for 4 members of pod group {self.ns}/big; "
                      "none is evicted", cond["message"])
        self.assertEqual(sorted(p["metadata"]["name"] for p in self.pods()
                                if not p["metadata"].get("deletionTimestamp") and p["spec"].get("nodeName")),
                         sorted(gpus))
        self.assertEqual([e for e in self.k.list("events", self.ns) if e.get("reason") == "Preempted"], [])
        self.assertEqual(self.used("gpu-wn"), {0: 16, 1: 16})
        self.assert_ledger_is_truth()

    def whole_member(self, name, group, gpus):
        p = kcluster.gpu_pod(name, ns=self.ns, whole=gpus, labels={"job": group},
                             node_selector={"gpushare-test": self.ns}, priority_class="high")
        p["spec"]["schedulingGroup"] = {"podGroupName": group}
        return self.k.create(p)

    def test_a_pod_group_of_whole_gpus_evicts_for_all_four_members_or_nothing(self):
        """One 8-GPU topology node full of eight 1-GPU pods of low priority.
        A PodGroup of four 3-GPU members (minCount 4) cannot be freed whole
        (two slots of 3 GPUs in 8 at most): nothing is evicted, the
        PodGroup's condition says why. A PodGroup of four 2-GPU members:
        all eight pods are evicted (by gpushare's PodGroupPostFilter), the
        four members bound on the eight GPUs."""
        self.topo_node("gpu-ww")
        for i in range(8):
            self.pod(f"low-{i}", whole=1, priority_class="low", labels={"job": "low"})
        self.wait_bound(8, "job=low")
        self.workload("tri", 4, "high")
        for i in range(4):
            self.whole_member(f"tri-{i}", "tri", 3)
        cond = wait_for(lambda: (lambda c: c if c and "cannot free room" in c.get("message", "") else None)(
            self.condition("tri")), 180, "gpushare's answer in the PodGroup's condition", 0.5)
        self.assertIn(f"gpushare: lower-priority pods cannot free room for 4 members of pod group {self.ns}/tri; "
                      "none is evicted", cond["message"])
        self.assertEqual([e for e in self.k.list("events", self.ns) if e.get("reason") == "Preempted"], [])
        self.assertEqual(len(self.bound("job=low")), 8)
        for i in range(4):
            self.k.delete("pods", self.ns, f"tri-{i}", grace=0)
        wait_for(lambda: not self.pods("job=tri"), 60, "the 3-GPU members gone")

        self.workload("pair", 4, "high")
        for i in range(4):
            self.whole_member(f"pair-{i}", "pair", 2)
        bound = self.wait_bound(4, "job=pair", timeout=300)
        wait_for(lambda: not self.pods("job=low"), 120, "every low pod gone")
        gpus = sorted(int(g) for p in bound for g in topo_alloc(p)["allocatedGPUs"]["0"])
        self.assertEqual(gpus, list(range(8)))
        logged = set(re.findall(rf'"gpushare: preempted for a pod group" podGroup="{self.ns}/pair" '
                                rf'victim="{self.ns}/(low-\d)"', Env.ext.proc.tail(4000000)))
        self.assertEqual(logged, {f"low-{i}" for i in range(8)})
        self.assert_ledger_is_truth()


FINALIZER = "gpushare.io/test-keep"  # keeps a victim Terminating until the test removes it


class WorkloadPreemptionHold(Workloads):
    """After a PodGroup's preemption every member's slot is held while the
    victims terminate (docs/preemption.md "Pod groups' slots are held")."""

    def test_a_second_pod_cannot_take_a_members_slot_while_the_victims_terminate(self):
        """Four 16 GiB GPUs (spread placement): a 1 GiB low-priority pod on
        GPUs 0 and 1, each with a finalizer (it stays Terminating until the
        test lets it go), 11 GiB of top priority on GPUs 2 and 3. A PodGroup
        of four 8 GiB high-priority members (minCount 4): two fit, four need
        both 1 GiB pods gone. gpushare's PodGroupPostFilter evicts exactly
        those two and every member is nominated to the node. While they
        terminate, an 8 GiB pod of the group's priority arrives: it fits on
        GPU 0 now (15 GiB free) and by node totals even with the four
        nominated members added (1 + 1 + 22 + 32 + 8 = 64 GiB), so
        kube-scheduler's own hold passes it; only gpushare's holds of the
        members' slots stop it (their reason, its event) — would it land on
        GPU 0, the group could never fit. Only the slots are held, not the
        node: a 4 GiB pod of the same priority is bound on GPU 2 meanwhile.
        The victims let go, all four
        members are bound, two per GPU, both full; the second pod is never
        bound; the ledger equals the pods."""
        self.node("gpu-wh", "share", gpus=4, units=64, labels={"ack.node.gpu.placement": "spread"})
        sel = {"gpushare-test": self.ns}
        for name, gib, prio, keep in [("v-a", 1, "low", True), ("v-b", 1, "low", True),
                                      ("t-c", 11, "top", False), ("t-d", 11, "top", False)]:
            p = kcluster.gpu_pod(name, ns=self.ns, units=gib, priority_class=prio, node_selector=sel)
            if keep:
                p["metadata"]["finalizers"] = [FINALIZER]
            self.k.create(p)
            wait_for(lambda n=name: self.k.get("pods", self.ns, n)["spec"].get("nodeName"), 120,
                     f"{name} bound", 0.2)
        try:
            self._while_the_victims_terminate()
        finally:
            for name in ("v-a", "v-b"):
                if self.k.try_get("pods", self.ns, name):
                    self.k.patch("pods", self.ns, name, {"metadata": {"finalizers": None}})

    def _while_the_victims_terminate(self):
        gpus = {p["metadata"]["name"]: alloc_gpus(p) for p in self.pods()}
        self.assertEqual(gpus, {"v-a": [0], "v-b": [1], "t-c": [2], "t-d": [3]})
        self.workload("hold", 4, "high")
        members = [f"s-{i}" for i in range(4)]
        for name in members:
            self.member(name, "hold", 8, priority_class="high")
        for name in ("v-a", "v-b"):
            wait_for(lambda n=name: self.k.get("pods", self.ns, n)["metadata"].get("deletionTimestamp"), 180,
                     f"{name} preempted (Terminating)", 0.2)
        for name in members:
            wait_for(lambda n=name: self.k.get("pods", self.ns, n)["status"].get("nominatedNodeName") == "gpu-wh",
                     120, f"{name} nominated to gpu-wh", 0.2)
        self.pod("q", units=8, priority_class="high")
        self.wait_event("q", re.escape(f"GPUs held for pod {self.ns}/") + r"s-\d" +
                        re.escape(", nominated here by preemption"))
        self.assertFalse(self.k.get("pods", self.ns, "q")["spec"].get("nodeName"))
        # only the slots' GPUs are held, not the node: a 4 GiB pod of the
        # same priority is bound beside the top pods meanwhile (GPU 2)
        self.pod("r", units=4, priority_class="high")
        r = wait_for(lambda: (lambda p: p if p["spec"].get("nodeName") else None)(
            self.k.get("pods", self.ns, "r")), 120, "r bound", 0.2)
        self.assertEqual(alloc_gpus(r), [2])
        # the ledger: the victims still hold their GiB, nothing of q or the members
        wait_for(lambda: self.used("gpu-wh") == {0: 1, 1: 1, 2: 15, 3: 11}, 60, "r in the ledger")
        self.assertEqual(self.bound("job=hold"), [])
        self.assert_ledger_is_truth()
        # the victims go: the four members take GPUs 0 and 1, q never does
        for name in ("v-a", "v-b"):
            self.k.patch("pods", self.ns, name, {"metadata": {"finalizers": None}})
        bound = self.wait_bound(4, "job=hold", timeout=240)
        self.assertEqual(sorted(alloc_gpus(p) for p in bound), [[0], [0], [1], [1]])
        wait_for(lambda: self.used("gpu-wh") == {0: 16, 1: 16, 2: 15, 3: 11}, 60, "GPUs 0 and 1 full of the group")
        # q never took a slot (GPUs 0 and 1 are the members'); with r's
        # 4 GiB beside them it no longer fits even by node totals
        self.assertFalse(self.k.get("pods", self.ns, "q")["spec"].get("nodeName"))
        # exactly the two were evicted, chosen by gpushare's PodGroupPostFilter
        self.assertEqual(sorted(p["metadata"]["name"] for p in self.pods()), sorted(members + ["q", "r", "t-c", "t-d"]))
        logged = set(re.findall(rf'"gpushare: preempted for a pod group" podGroup="{self.ns}/hold" '
                                rf'victim="{self.ns}/(v-[ab])"', Env.ext.proc.tail(4000000)))
        self.assertEqual(logged, {"v-a", "v-b"})
        self.assert_ledger_is_truth()


if __name__ == "__main__":
    unittest.main()
