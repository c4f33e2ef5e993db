"""Kubernetes' Workload API under gpushare-scheduler (issue 34;
docs/gangs.md "Kubernetes' Workload API"): the control plane runs with the
GenericWorkload feature gate on (apiserver, controller-manager and
gpushare-scheduler; scheduling.k8s.io/v1beta1 served). A Workload with a
PodGroup of four memory-shared pods (4 GiB each, gang minCount 4) is
placed by kube-scheduler's pod-group cycle, with gpushare's Reserve and
Unreserve exact inside it: none bound until all four fit, all bound
together, nothing held meanwhile; a member deleted is replaced and placed.
Unit 1GiB; one node of one 16 GiB GPU."""
import time
import unittest

import kcluster
from realcase import Env, RealCase, alloc_gpus, wait_for


def setUpModule():
    Env.up(unit="1GiB", form="plugin", feature_gates={"GenericWorkload": True})


def tearDownModule():
    Env.down()


class WorkloadGangs(RealCase):
    def workload(self, name, min_count):
        """A Workload with one gang template, and its PodGroup."""
        gang = {"gang": {"minCount": min_count}}
        self.create({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
                     "metadata": {"name": name},
                     "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": gang}]}})
        self.create({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": name},
                     "spec": {"workloadRef": {"workloadName": name, "templateName": "workers"},
                              "schedulingPolicy": gang}})

    def member(self, name, group, gib, labels=None):
        p = kcluster.gpu_pod(name, ns=self.ns, units=gib, labels=dict(labels or {}, job=group),
                             node_selector={"gpushare-test": self.ns})
        p["spec"]["schedulingGroup"] = {"podGroupName": group}
        return self.k.create(p)

    def condition(self, group):
        pg = self.k.get("podgroups", self.ns, group)
        for c in pg.get("status", {}).get("conditions", []):
            if c["type"] == "PodGroupInitiallyScheduled":
                return c
        return None

    def used(self, node):
        led = Env.ext.ledger(node)
        return {g["index"]: g["usedMiB"] // 1024 for g in led["nodes"][0]["gpus"]}

    def binding_times(self, pods):
        times = []
        for p in pods:
            (b,) = self.cp.audit_bindings(p["metadata"]["name"])
            times.append(time.mktime(time.strptime(b["stageTimestamp"][:19], "%Y-%m-%dT%H:%M:%S")))
        return times

    def test_a_pod_group_of_four_memory_pods_binds_all_or_none(self):
        """12 GiB free for four 4 GiB members: the pod group is judged
        unschedulable, no member is bound and the ledger holds the blocker's
        4 GiB only (every Reserve of the pod-group cycle undone, no gang plan
        of gpushare's: the members' gpu-topology labels are left to the pod
        group). The blocker gone, all four bind within seconds of each other
        and fill the GPU. A member deleted is replaced and placed."""
        self.node("gpu-wl", "share", gpus=1, units=16)
        self.pod("blocker", units=4)
        self.wait_bound(1)
        self.workload("infer", 4)
        # gpushare's own gang labels too: with the gate on the pod group wins
        labels = {"gpu-topology": "infer", "gpu-topology-replica": "4"}
        for i in range(4):
            self.member(f"w-{i}", "infer", 4, labels)
        cond = wait_for(lambda: (lambda c: c if c and c["status"] == "False" else None)(
            self.condition("infer")), 180, "the pod group judged unschedulable", 0.5)
        self.assertEqual(cond["reason"], "Unschedulable")
        self.assertEqual([p["metadata"]["name"] for p in self.pods("job=infer")
                          if p["spec"].get("nodeName")], [])
        self.assertEqual(self.used("gpu-wl"), {0: 4})
        self.assertFalse(Env.ext.ledger().get("gangs"))

        self.k.delete("pods", self.ns, "blocker", grace=0)
        bound = self.wait_bound(4, "job=infer", timeout=240)
        self.assertEqual(sorted(alloc_gpus(p) for p in bound), [[0]] * 4)
        times = self.binding_times(bound)
        self.assertLessEqual(max(times) - min(times), 10, times)
        wait_for(lambda: self.used("gpu-wl") == {0: 16}, 60, "the GPU full of the group")
        self.assertFalse(Env.ext.ledger().get("gangs"))
        cond = wait_for(lambda: (lambda c: c if c and c["status"] == "True" else None)(
            self.condition("infer")), 60, "the pod group scheduled", 0.5)
        self.assert_ledger_is_truth()

        # one member ends; its replacement (same group) is placed
        self.k.delete("pods", self.ns, "w-2", grace=0)
        wait_for(lambda: self.used("gpu-wl") == {0: 12}, 60, "w-2's memory free")
        self.member("w-4", "infer", 4, labels)
        bound = self.wait_bound(4, "job=infer", timeout=240)
        self.assertEqual(sorted(p["metadata"]["name"] for p in bound), ["w-0", "w-1", "w-3", "w-4"])
        wait_for(lambda: self.used("gpu-wl") == {0: 16}, 60, "the GPU full again")
        self.assert_ledger_is_truth()


if __name__ == "__main__":
    unittest.main()
