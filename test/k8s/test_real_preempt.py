"""GPU-aware preemption under the real kube-scheduler with PriorityClasses
(issue 14, docs/preemption.md): kube-scheduler calls the extender's preempt
verb (deploy/scheduler sets preemptVerb) and deletes the victims gpushare
names. Unit 1GiB; nodes of two 16 GiB GPUs."""
import re
import unittest

from realcase import Env, LeastPrivilege, RealCase, alloc_gpus, wait_for

GPU16 = 16
CLASSES = {"low-10": 10, "low-50": 50, "high": 1000, "top": 2000}


def setUpModule():
    Env.up(unit="1GiB")
    for name, value in CLASSES.items():
        Env.cp.admin.apply({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                            "metadata": {"name": name}, "value": value,
                            "preemptionPolicy": "PreemptLowerPriority"})


def tearDownModule():
    Env.down()


class Preemption(RealCase):
    def place(self, name, node, units, prio, count=None):
        """A pod bound (and checked) on node before the next is created."""
        self.pod(name, units=units, count=count, priority_class=prio,
                 node_selector={"pre": node})
        p = wait_for(lambda: (lambda q: q if q["spec"].get("nodeName") else None)(
            self.k.get("pods", self.ns, name)), 120, f"{name} bound", 0.2)
        return alloc_gpus(p)

    def two_gpu_node(self, name, placement=None):
        labels = {"pre": name}
        if placement:
            labels["ack.node.gpu.placement"] = placement
        self.node(name, "share", gpus=2, units=2 * GPU16, labels=labels)

    def uid_names(self):
        return {p["metadata"]["uid"]: p["metadata"]["name"] for p in self.pods()}

    def victims_line(self, pod, uids):
        """The extender's `preempt: victims` line for pod: (proposed, victims) as names."""
        for line in reversed(Env.ext.proc.tail(200000).splitlines()):
            m = re.search(rf'msg="preempt: victims" pod={self.ns}/{pod} node=\S+ '
                          r'proposed=(\S*) victims=(\S*)', line)
            if m:
                return ([uids.get(u, u) for u in m.group(1).split(",") if u],
                        [uids.get(u, u) for u in m.group(2).split(",") if u])
        return None

    def test_victims_are_on_one_gpu_and_the_cheapest_set(self):
        """The issue's node: 6 + 6 + 4 GiB on each GPU. kube-scheduler's own
        choice is its two lowest-priority pods, 4 GiB on GPU 0 and 6 GiB on
        GPU 1, which frees no GPU; gpushare answers two pods of GPU 0, 10 GiB.
        The preemptor is bound there; a second node whose lower-priority pods
        cannot free a GPU is never chosen; nothing else is evicted."""
        self.two_gpu_node("gpu-pre")
        self.two_gpu_node("gpu-pre2")
        layout = [("g0-6a", 6, "low-50"), ("g0-6b", 6, "low-50"), ("g0-4", 4, "low-10"),
                  ("g1-6a", 6, "low-10"), ("g1-6b", 6, "low-50"), ("g1-4", 4, "low-50")]
        gpu_of = {}
        for name, units, prio in layout:
            gpu_of[name] = self.place(name, "gpu-pre", units, prio)
        self.assertEqual([gpu_of[n] for n, _, _ in layout], [[0]] * 3 + [[1]] * 3)
        # gpu-pre2: 8 GiB of low priority beside 8 GiB the preemptor may not touch, on each GPU
        for name, prio in [("x-low", "low-10"), ("x-top", "top"), ("y-low", "low-10"), ("y-top", "top")]:
            self.place(name, "gpu-pre2", 8, prio)
        uids = self.uid_names()
        self.pod("hi", units=10, priority_class="high")
        hi = wait_for(lambda: (lambda q: q if q["spec"].get("nodeName") else None)(
            self.k.get("pods", self.ns, "hi")), 180, "the preemptor bound", 0.5)
        self.assertEqual(hi["spec"]["nodeName"], "gpu-pre")
        self.assertEqual(alloc_gpus(hi), [0])
        left = {p["metadata"]["name"] for p in self.pods()}
        gone = {n for n, _, _ in layout} - left
        self.assertEqual(len(gone), 2, gone)
        self.assertIn("g0-4", gone)
        self.assertTrue(gone <= {"g0-6a", "g0-6b", "g0-4"}, gone)  # one GPU, 6 + 4 GiB
        self.assertTrue({"x-low", "x-top", "y-low", "y-top"} <= left)  # gpu-pre2 untouched
        proposed, victims = self.victims_line("hi", uids)
        self.assertEqual(sorted(victims), sorted(gone))
        # what kube-scheduler would have evicted by node totals: one pod per
        # GPU (None from the plugin, which is offered nothing)
        if proposed is not None:
            self.assertEqual(sorted(proposed), ["g0-4", "g1-6a"])
        self.assert_ledger_is_truth()

    def test_a_multi_card_preemptor_frees_two_gpus(self):
        self.two_gpu_node("gpu-prem", placement="spread")
        for i in range(4):
            self.place(f"m{i}", "gpu-prem", 8, "low-10")
        self.pod("hi2", units=16, count=2, priority_class="high")
        hi = wait_for(lambda: (lambda q: q if q["spec"].get("nodeName") else None)(
            self.k.get("pods", self.ns, "hi2")), 180, "the preemptor bound", 0.5)
        self.assertEqual(alloc_gpus(hi), [0, 1])
        gone = {f"m{i}" for i in range(4)} - {p["metadata"]["name"] for p in self.pods()}
        self.assertEqual(len(gone), 2, gone)  # one 8 GiB pod from each GPU
        self.assert_ledger_is_truth()

    def test_a_pod_that_fits_elsewhere_evicts_nothing(self):
        self.two_gpu_node("gpu-full")
        self.two_gpu_node("gpu-free")
        for i in range(2):
            self.place(f"f{i}", "gpu-full", 16, "low-10")
        self.pod("hi3", units=10, priority_class="high")
        hi = wait_for(lambda: (lambda q: q if q["spec"].get("nodeName") else None)(
            self.k.get("pods", self.ns, "hi3")), 120, "the pod bound", 0.5)
        self.assertEqual(hi["spec"]["nodeName"], "gpu-free")
        self.assertEqual(len(self.pods()), 3)
        self.assertIsNone(self.victims_line("hi3", {}))

    def test_the_extender_is_never_offered_a_node_that_fits_by_totals(self):
        """The extender's limit (docs/preemption.md): 8 GiB free on each GPU,
        a 10 GiB pod. By node totals it fits, so kube-scheduler's dry run finds
        no victims and never calls preempt; the pod stays Pending and nothing
        is evicted, although one 8 GiB pod would make room."""
        self.two_gpu_node("gpu-lim", placement="spread")
        self.place("l0", "gpu-lim", 8, "low-10")
        self.place("l1", "gpu-lim", 8, "low-10")
        self.pod("hi4", units=10, priority_class="high")
        ev = self.wait_event("hi4", r"insufficient GPU memory on any single GPU")
        # v1.37: "preemption: expected at least one victim pod on node ..."
        # (older releases: "No preemption victims found for incoming pod")
        self.assertRegex(ev["message"], r"preemption: (expected at least one victim pod on node "
                                        r"\"gpu-lim\"|0/\d+ nodes are available: 1 No preemption victims)")
        self.assertEqual(sorted(p["metadata"]["name"] for p in self.pods()), ["hi4", "l0", "l1"])
        self.assertIsNone(self.victims_line("hi4", {}))
        self.assertNotIn(f"pod={self.ns}/hi4 offered", Env.ext.proc.tail(200000))


class ZzLeastPrivilege(LeastPrivilege, RealCase):
    """The module's RBAC check, last (realcase.LeastPrivilege)."""


if __name__ == "__main__":
    unittest.main()
