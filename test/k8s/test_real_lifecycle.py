"""Restart, failover, unit change and outage recovery under the real
kube-scheduler (issue 11, items 4 and 5). Each test starts its own
extender(s) on the port kube-scheduler calls."""
import os
import signal
import threading
import time
import unittest

import kcluster
from kcluster import ServiceProxy, free_port
from realcase import Env, LeastPrivilege, OwnExtenders, RealCase, alloc_gpus, metric, wait_for

GPU16 = 16  # a 16 GiB GPU in 1GiB units


def setUpModule():
    # kube-scheduler calls cp.ext_port; each test puts an extender (or a
    # Service-like proxy in front of two) there.
    Env.up(unit="1GiB", start_extender=False)


def tearDownModule():
    Env.down()


class Lifecycle(OwnExtenders):
    def setUp(self):
        super().setUp()
        self.proxy = None

    def tearDown(self):
        if self.proxy:
            self.proxy.close()
        super().tearDown()

    def test_kill_9_mid_binds_then_restart_rebuilds_exactly(self):
        for i in range(4):
            self.node(f"gpu-k{i}", "share", gpus=2, units=2 * GPU16)
        ext = self.start_ext().wait_ready()
        sizes = [1 + i % 3 for i in range(48)]  # 96 GiB of 128
        creator = threading.Thread(target=lambda: [self.pod(f"w-{i:02d}", units=u, labels={"app": "storm"})
                                                   for i, u in enumerate(sizes)])
        creator.start()
        # kill -9 while kube-scheduler is binding and pods keep coming
        wait_for(lambda: len([p for p in self.pods() if p["spec"].get("nodeName")]) >= 8, 120,
                 "the first binds", 0.02)
        ext.kill(signal.SIGKILL)
        creator.join()
        bound_at_kill = len([p for p in self.pods() if p["spec"].get("nodeName")])
        self.assertLess(bound_at_kill, 48, "the kill came too late to test anything")
        again = self.start_ext().wait_ready()
        # the restarted ledger is the apiserver's truth, then every pod gets bound
        self.assert_ledger_is_truth(again)
        self.wait_bound(48, "app=storm", timeout=300)
        self.assert_ledger_is_truth(again)
        total = sum(g["usedMiB"] for n in again.ledger()["nodes"] for g in n["gpus"])
        self.assertEqual(total, sum(sizes) * 1024)

    def test_two_replicas_on_a_real_lease_standby_takes_over(self):
        self.node("gpu-l0", "share", gpus=1, units=GPU16)
        a = self.start_ext(port=free_port(), args=("--leader-elect",))
        b = self.start_ext(port=free_port(), args=("--leader-elect",))
        self.proxy = ServiceProxy(self.cp.ext_port, [a, b])
        wait_for(lambda: a.ready() or b.ready(), 60, "a leader")
        leader, standby = (a, b) if a.ready() else (b, a)
        self.assertFalse(standby.ready())
        lease = self.k.get("leases", "kube-system", "gpushare-extender")
        self.assertTrue(lease["spec"]["holderIdentity"])
        self.pod("before", units=2)
        self.wait_bound(1)
        leader.kill(signal.SIGKILL)
        self.pod("after", units=3)
        # lease duration 15 s + retry period, then the new leader relists
        wait_for(standby.ready, 90, "the standby to take over")
        self.wait_bound(2)
        self.assertNotEqual(self.k.get("leases", "kube-system", "gpushare-extender")["spec"]["holderIdentity"],
                            lease["spec"]["holderIdentity"])
        self.assert_ledger_is_truth(standby)
        used = standby.ledger("gpu-l0")["nodes"][0]["gpus"][0]["usedMiB"]
        self.assertEqual(used, 5 * 1024)

    def test_every_replica_is_ready_and_the_leader_labels_its_pod(self):
        """Issue 16 item 2: both replicas are Ready as replicas
        (/readyz/replica: the Deployment's probe, so rollouts complete); the
        leader labels its own Pod gpushare.io/leader=true (the Service's
        selector) and only its Pod carries it; after a kill -9 the new leader
        labels its Pod and takes the label off the dead one's."""
        names = ("gpushare-extender-a", "gpushare-extender-b")
        for n in names:  # the replicas' Pods, as API objects nobody schedules
            p = kcluster.gpu_pod(n, ns="kube-system")
            p["spec"]["schedulerName"] = "nobody"
            self.k.create(p)
        try:
            exts = {n: self.start_ext(port=free_port(), args=("--leader-elect",),
                                      env={"POD_NAME": n, "POD_NAMESPACE": "kube-system"})
                    for n in names}

            def labelled():
                return sorted(n for n in names if (self.k.get("pods", "kube-system", n)["metadata"]
                                                   .get("labels") or {}).get("gpushare.io/leader") == "true")
            wait_for(lambda: any(e.ready() for e in exts.values()), 60, "a leader")
            for n, e in exts.items():
                wait_for(lambda: e.status("/readyz/replica")[0] == 200, 60, f"{n} ready as a replica")
            leader = next(n for n, e in exts.items() if e.ready())
            standby = next(n for n in names if n != leader)
            self.assertEqual(exts[standby].status("/readyz")[0], 503)
            wait_for(lambda: labelled() == [leader], 30, "the leader's Pod labelled")
            exts[leader].kill(signal.SIGKILL)
            wait_for(exts[standby].ready, 90, "the standby to take over")
            wait_for(lambda: labelled() == [standby], 30,
                     "the label on the new leader's Pod only (the dead one's taken off)")
        finally:
            for n in names:
                self.k.delete("pods", "kube-system", n, grace=0)

    def test_a_configmap_unit_change_shows_pending_unit(self):
        ext = self.start_ext().wait_ready()
        try:
            Env.set_unit("128MiB")
            wait_for(lambda: ext.ledger().get("pendingUnit") == "128MiB", 60, "pendingUnit")
            self.assertEqual(ext.ledger()["unit"], "1GiB")
        finally:
            Env.set_unit("1GiB")
        wait_for(lambda: "pendingUnit" not in ext.ledger(), 60, "pendingUnit cleared")

    def test_pods_created_while_the_extender_is_down_are_scheduled_soon_after(self):
        self.node("gpu-o0", "share", gpus=2, units=2 * GPU16)
        for i in range(4):
            self.pod(f"o-{i}", units=2)
        # kube-scheduler tries each pod, the extender is unreachable: an error
        wait_for(lambda: any(e.get("reason") == "FailedScheduling" for e in self.k.list("events", self.ns)),
                 120, "a failed attempt while the extender is down", 0.2)
        ext = self.start_ext()
        t0 = time.time()
        ext.wait_ready()
        self.wait_bound(4, timeout=float(os.environ.get("GS_K8S_OUTAGE_LIMIT", "60")))
        took = time.time() - t0
        print(f"\noutage recovery: 4 pods bound {took:.1f} s after the extender started", flush=True)
        self.assert_ledger_is_truth(ext)
        self.assertIsNotNone(metric(ext.metrics(), "gpushare_requests_total", verb="bind"))

    def test_taking_over_from_aliyuns_extender(self):
        """Issue 16 item 8, docs/migration.md: the cluster's GPU pods were
        bound by Aliyun's extender (legacy annotations only; one not yet
        started by the device plugin, ASSIGNED=false). During the switch no
        extender answers, and new GPU pods wait rather than bind without an
        allocation. gpushare starts, reads the old pods from their legacy
        annotations, and places the waiting pods around them: never over a
        GPU, the ledger equal to the truth."""
        if Env.form == "plugin":
            self.skipTest("the extender's migration; the plugin form reads the same annotations")
        for n in ("gpu-m0", "gpu-m1"):
            self.node(n, "share", gpus=2, units=2 * GPU16, labels={"mig": "x"})
        legacy = [("old-a", "gpu-m0", 0, 8, "true"), ("old-b", "gpu-m0", 0, 4, "false"),
                  ("old-c", "gpu-m0", 1, 14, "true"), ("old-d", "gpu-m1", 0, 16, "true"),
                  ("old-e", "gpu-m1", 1, 2, "true")]
        for name, node, gpu, units, assigned in legacy:
            old = kcluster.gpu_pod(name, ns=self.ns, units=units)
            old["spec"]["nodeName"] = node
            old["metadata"]["annotations"] = {  # what Aliyun's extender writes
                "ALIYUN_COM_GPU_MEM_IDX": str(gpu), "ALIYUN_COM_GPU_MEM_POD": str(units),
                "ALIYUN_COM_GPU_MEM_DEV": str(GPU16), "ALIYUN_COM_GPU_MEM_ASSIGNED": assigned,
                "ALIYUN_COM_GPU_MEM_ASSUME_TIME": "1700000000000000000"}
            self.k.create(old)
        for name, units in [("new-12", 12), ("new-4", 4), ("new-2", 2)]:
            self.pod(name, units=units, node_selector={"mig": "x"})
        wait_for(lambda: len([e for e in self.k.list("events", self.ns)
                              if e.get("reason") == "FailedScheduling"]) >= 3,
                 120, "the new pods refused while no extender answers", 0.2)
        self.assertEqual(sorted(p["metadata"]["name"] for p in self.pods() if p["spec"].get("nodeName")),
                         ["old-a", "old-b", "old-c", "old-d", "old-e"])
        ext = self.start_ext().wait_ready()
        bound = self.wait_bound(8)
        self.assert_ledger_is_truth(ext)
        used = kcluster.truth_from_pods(bound)
        for key, mib in used.items():
            self.assertLessEqual(mib, GPU16 * 1024, key)
        # the old pods were read at their legacy amounts
        self.assertEqual(used[("gpu-m0", 0)] >= 12 * 1024 and used[("gpu-m0", 1)] >= 14 * 1024
                         and used[("gpu-m1", 0)] == 16 * 1024, True, used)
        # the 12 GiB pod fits only on gpu-m1's GPU 1
        (p,) = [q for q in bound if q["metadata"]["name"] == "new-12"]
        self.assertEqual((p["spec"]["nodeName"], alloc_gpus(p)), ("gpu-m1", [1]))


class ZzLeastPrivilege(LeastPrivilege, RealCase):
    """The module's RBAC check, last (realcase.LeastPrivilege)."""


if __name__ == "__main__":
    unittest.main()
