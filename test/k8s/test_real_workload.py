"""Kubernetes' Workload API under gpushare-scheduler (issue 34;
docs/gangs.md "Kubernetes' Workload API"): the control plane runs with the
GenericWorkload feature gate on (apiserver, controller-manager and
gpushare-scheduler; scheduling.k8s.io/v1beta1 served). A Workload with a
PodGroup of four memory-shared pods (4 GiB each, gang minCount 4) is
placed by kube-scheduler's pod-group cycle, with gpushare's Reserve and
Unreserve exact inside it: none bound until all four fit, all bound
together, nothing held meanwhile; a member deleted is replaced and placed.
Unit 1GiB; one node of one 16 GiB GPU."""
import unittest

import kcluster
from realcase import Env, MemoryGang, wait_for


def setUpModule():
    Env.up(unit="1GiB", form="plugin", feature_gates={"GenericWorkload": True})


def tearDownModule():
    Env.down()


class WorkloadGangs(MemoryGang):
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


if __name__ == "__main__":
    unittest.main()
