"""The in-process plugin (issue 15, docs/plugin.md): the seed scenarios and
refusals of test_real_scenarios.py, unchanged in what they assert, with
gpushare-scheduler (kube-scheduler v1.37.2 + the GpuShare plugin over the C
core) as the cluster's scheduler and no extender. Unit 128MiB."""
import time
import unittest

import test_real_scenarios as scenarios
from realcase import Env, RealCase, alloc_gpus, topo_alloc, wait_for

GPU16 = scenarios.GPU16  # a 16 GiB GPU in 128 MiB units


def setUpModule():
    Env.up(unit="128MiB", form="plugin")
    for name, value in {"low": 10, "high": 1000}.items():
        Env.cp.admin.apply({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                            "metadata": {"name": name}, "value": value})


def tearDownModule():
    Env.down()


class PluginSeedScenarios(scenarios.SeedScenarios):
    """Every seed scenario through the plugin."""


class PluginRefusals(scenarios.Refusals):
    """Every refusal through the plugin: the reasons reach the pod's event."""


class PluginOnly(RealCase):
    """What only the in-process form can do."""

    def bound_pod(self, name):
        return wait_for(lambda: (lambda q: q if q["spec"].get("nodeName") else None)(
            self.k.get("pods", self.ns, name)), 180, f"{name} bound", 0.2)

    def test_gang_members_wait_in_permit_and_bind_together(self):
        """A 4-replica job whose 4th member comes later: no member is bound
        before it exists; then all four are reserved, wait in Permit and bind
        together (Binding times from the audit log: under 2 s apart on a quiet
        machine; the bound allows 10 s so that the test holds at load 10)."""
        self.topo_node("gpu-topo-p")
        labels = {"gpu-topology": "quad", "gpu-topology-replica": "4", "job": "quad"}
        for i in range(3):
            self.pod(f"m{i}", whole=1, labels=labels)
            self.wait_event(f"m{i}", rf"gang [a-z-]+/quad: {i + 1} of 4 members present")
        self.assertEqual([p for p in self.pods() if p["spec"].get("nodeName")], [])
        t_last = time.time()
        self.pod("m3", whole=1, labels=labels)
        bound = self.wait_bound(4, "job=quad")
        gpus = sorted(int(topo_alloc(p)["allocatedGPUs"]["0"][0]) for p in bound)
        self.assertEqual(len(set(gpus)), 4)
        times = []
        for p in bound:
            (b,) = self.cp.audit_bindings(p["metadata"]["name"])
            times.append(time.mktime(time.strptime(b["stageTimestamp"][:19], "%Y-%m-%dT%H:%M:%S"))
                         - time.timezone)
        self.assertLessEqual(max(times) - min(times), 10, times)
        self.assertGreaterEqual(min(times), int(t_last) - 1)
        self.assert_ledger_is_truth()

    def test_preemption_where_the_extender_cannot(self):
        """Two 16 GiB GPUs: 4 + 4 + 4 GiB of low priority on one, 8 GiB on the
        other; a 12 GiB high-priority pod fits by node totals (12 free) but on
        no GPU, so kube-scheduler's own preemption finds no victims and never
        offers the node to an extender. The plugin's PostFilter asks the core:
        the 8 GiB pod goes (one pod, the cheaper GPU) and the preemptor is
        bound there; nothing else is evicted."""
        self.node("gpu-pf", "share", gpus=2, units=2 * GPU16, labels={"pf": "x"})
        for name, units in [("a4", 32), ("b4", 32), ("c4", 32), ("d8", 64)]:
            self.pod(name, units=units, priority_class="low", node_selector={"pf": "x"})
            self.bound_pod(name)
        gpu_of = {p["metadata"]["name"]: alloc_gpus(p) for p in self.pods()}
        self.assertEqual(gpu_of, {"a4": [0], "b4": [0], "c4": [0], "d8": [1]})
        self.pod("big", units=96, priority_class="high", node_selector={"pf": "x"})
        big = self.bound_pod("big")
        self.assertEqual(alloc_gpus(big), [1])
        self.assertEqual(sorted(p["metadata"]["name"] for p in self.pods()), ["a4", "b4", "big", "c4"])
        self.assert_ledger_is_truth()


if __name__ == "__main__":
    unittest.main()
