"""The seed scenarios and refusals, created as users create them and
scheduled by the real kube-scheduler through gpushare-extender (issue 11,
items 1-3). Unit 128MiB, as in deploy/demo/."""
import json
import unittest

import kcluster
from realcase import (MEM_KEYS, Env, LeastPrivilege, RealCase, alloc_gpus,
                      topo_alloc, wait_for)

UNIT_MIB = 128
GPU16 = 16 * 1024 // UNIT_MIB  # a 16 GiB GPU in units


def setUpModule():
    Env.up(unit="128MiB")


def tearDownModule():
    Env.down()


class SeedScenarios(RealCase):
    def test_statefulset_16_pods_of_2gib_on_a_share_node(self):
        self.node("gpu-share-b", "share", gpus=4, units=4 * GPU16)
        self.create({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "share-2gib"},
            "spec": {
                "replicas": 16, "serviceName": "share-2gib",
                # No kubelet: a pod never becomes Ready, so OrderedReady
                # would stop at the first one.
                "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": {"app": "share-2gib"}},
                "template": {
                    "metadata": {"labels": {"app": "share-2gib"}},
                    "spec": {"nodeSelector": {"gpushare-test": self.ns},
                             "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                             "resources": {"limits": {"aliyun.com/gpu-mem": "16"}}}]}}}})
        bound = self.wait_bound(16, "app=share-2gib")
        per_gpu = {}
        for p in bound:
            self.assertEqual(p["spec"]["nodeName"], "gpu-share-b")
            gpus = alloc_gpus(p)
            self.assertEqual(len(gpus), 1)
            self.assert_memory_annotations(p, gpus, 16, UNIT_MIB, [GPU16] * 4)
            per_gpu[gpus[0]] = per_gpu.get(gpus[0], 0) + 16
        # binpack: the fullest GPU first, so two full GPUs and two empty ones
        self.assertEqual(per_gpu, {0: GPU16, 1: GPU16})
        self.assert_ledger_is_truth()

    def test_job_8gib_over_two_cards(self):
        self.node("gpu-share-b", "share", gpus=4, units=4 * GPU16)
        self.create({
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "multi-gpu-8gib"},
            "spec": {"backoffLimit": 0, "template": {
                "metadata": {"labels": {"app": "multi", "aliyun.com/gpu-count": "2"}},
                "spec": {"restartPolicy": "Never", "nodeSelector": {"gpushare-test": self.ns},
                         "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                         "resources": {"limits": {"aliyun.com/gpu-mem": str(8 * 1024 // UNIT_MIB)}}}]}}}})
        (p,) = self.wait_bound(1, "app=multi")
        self.assertEqual(alloc_gpus(p), [0, 1])
        self.assert_memory_annotations(p, [0, 1], 4 * 1024 // UNIT_MIB, UNIT_MIB, [GPU16] * 4)
        self.assert_ledger_is_truth()
        if Env.form == "plugin":
            return  # the rest drives the extender's bind verb
        # kube-scheduler repeats a Binding whose answer it lost: the same bind
        # again, once the extender's cache holds the pod bound (compact), is
        # success, writes nothing and re-picks nothing
        wait_for(lambda: any(pp["uid"] == p["metadata"]["uid"]
                             for n in Env.ext.ledger("gpu-share-b")["nodes"] for g in n["gpus"]
                             for pp in g["pods"]), 30, "the bound pod in the ledger")
        binds = len(self.cp.audit_bindings(p["metadata"]["name"]))
        again = Env.ext.post("bind", {"PodName": p["metadata"]["name"], "PodNamespace": self.ns,
                                      "PodUID": p["metadata"]["uid"], "Node": "gpu-share-b"})
        self.assertEqual(again, {"Error": ""})
        self.assertEqual(len(self.cp.audit_bindings(p["metadata"]["name"])), binds)
        self.assertEqual(self.k.get("pods", self.ns, p["metadata"]["name"])["metadata"]["annotations"],
                         p["metadata"]["annotations"])
        self.assert_ledger_is_truth()

    def test_topology_job_of_two_replicas_lands_on_an_nvlink_pair(self):
        self.topo_node("gpu-topo-a")
        self.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "pytorch-dist"},
                     "spec": {"clusterIP": "None", "selector": {"job-name": "pytorch-dist"},
                              "ports": [{"name": "rdzv", "port": 29500}]}})
        self.create({
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pytorch-dist"},
            "spec": {"completions": 2, "parallelism": 2, "completionMode": "Indexed", "backoffLimit": 0,
                     "template": {
                         "metadata": {"labels": {"gpu-topology": "pytorch-dist", "gpu-topology-replica": "2"}},
                         "spec": {"restartPolicy": "Never", "hostNetwork": True, "subdomain": "pytorch-dist",
                                  "nodeSelector": {"gpushare-test": self.ns},
                                  "containers": [{"name": "trainer", "image": "registry.k8s.io/pause:3.10",
                                                  "resources": {"limits": {"aliyun.com/gpu": "1"}}}]}}}})
        bound = self.wait_bound(2, "gpu-topology=pytorch-dist")
        gpus = []
        for p in bound:
            self.assertEqual(p["spec"]["nodeName"], "gpu-topo-a")
            ann = p["metadata"]["annotations"]
            self.assertFalse(set(ann) & MEM_KEYS, ann)
            a = topo_alloc(p)
            self.assertEqual(set(a), {"allocatedGPUs", "visibleGPUs", "assumeTime", "assigned"})
            self.assertEqual(a["assigned"], False)
            self.assertIsInstance(a["assumeTime"], int)
            self.assertEqual(len(a["allocatedGPUs"]["0"]), 1)
            self.assertEqual(a["visibleGPUs"], a["allocatedGPUs"]["0"])
            gpus.append(int(a["allocatedGPUs"]["0"][0]))
        gpus.sort()
        # the two GPUs are joined by NVLink (NV1 or NV2 in the DGX-1 table)
        from realcase import DGX1_LINKS
        self.assertTrue(DGX1_LINKS[gpus[0]][gpus[1]].startswith("NV"), gpus)
        # the ledger shows each GPU owned by its member
        led = Env.ext.ledger("gpu-topo-a")
        owners = {g["index"]: (g.get("owner") or {}).get("name") for g in led["nodes"][0]["gpus"]}
        self.assertEqual(sorted(i for i, o in owners.items() if o), gpus)
        # complete: listed as running while its members exist, no longer a waiting plan
        job = f"{self.ns}/pytorch-dist"
        wait_for(lambda: [(g["placed"], {n: sorted(v) for n, v in g["nodes"].items()})
                               for g in Env.ext.ledger()["gangs"] if g["job"] == job]
                 == [(2, {"gpu-topo-a": gpus})], 30, "the completed gang to be listed as running")

    def test_cgpu_node_refuses_the_17th_pod(self):
        self.node("gpu-cgpu-a", "cgpu", gpus=1, units=GPU16)
        for i in range(17):
            self.pod(f"small-{i:02d}", units=1, labels={"app": "cgpu"})
        bound = self.wait_bound(16, "app=cgpu")
        self.assertEqual(len(bound), 16)
        pending = [p for p in self.pods("app=cgpu") if not p["spec"].get("nodeName")]
        self.assertEqual(len(pending), 1)
        # kube-scheduler binds asynchronously: a pod that passed filter
        # before the 16th bind is refused at bind ("GPU pod limit reached")
        # and tried again; the one left is refused by filter.
        self.wait_event(pending[0]["metadata"]["name"], r"^0/1 nodes are available: 1 GPU pod limit reached \(cgpu\)")
        for p in bound:
            self.assert_memory_annotations(p, [0], 1, UNIT_MIB, [GPU16])
        self.assert_ledger_is_truth()

    def test_mps_node_shares_memory(self):
        self.node("gpu-mps-a", "mps", gpus=2, units=2 * 2 * GPU16, labels={"ack.node.gpu.placement": "spread"})
        self.pod("mps-a", units=40)
        self.pod("mps-b", units=40)
        bound = self.wait_bound(2)
        # spread inside the node: one pod on each GPU
        self.assertEqual(sorted(alloc_gpus(p)[0] for p in bound), [0, 1])
        for p in bound:
            self.assert_memory_annotations(p, alloc_gpus(p), 40, UNIT_MIB, [2 * GPU16] * 2)
        self.assert_ledger_is_truth()

    def test_default_node_is_never_used(self):
        self.node("gpu-default-a", "default", gpus=1, units=GPU16)
        self.pod("never", units=1)
        ev = self.wait_event("never", r"not a GPU-sharing node")
        self.assertIn("0/1 nodes are available", ev["message"])
        self.assertFalse(self.k.get("pods", self.ns, "never")["spec"].get("nodeName"))
        for n in Env.ext.ledger()["nodes"]:
            if n["name"] == "gpu-default-a":
                self.assertEqual(n["mode"], "default")
                self.assertEqual([g["usedMiB"] for g in n["gpus"]], [0])

    def test_a_legacy_pod_keeps_its_unit_after_a_unit_change(self):
        """Issue 13 item 7: a pod bound by Aliyun's extender under 1 GiB units
        carries only the legacy keys (POD=8, DEV=16, no gpushare.io/unit-mib).
        This module runs in 128 MiB units over 16 GiB GPUs: the pod is 8 GiB
        (DEV=16 is the GPU in GiB), so a 12.5 GiB pod goes to the other GPU,
        not beside it."""
        self.node("gpu-legacy", "share", gpus=2, units=2 * GPU16)
        old = kcluster.gpu_pod("aliyun-bound", ns=self.ns, units=8)
        old["spec"]["nodeName"] = "gpu-legacy"
        old["metadata"]["annotations"] = {
            "ALIYUN_COM_GPU_MEM_IDX": "0", "ALIYUN_COM_GPU_MEM_POD": "8",
            "ALIYUN_COM_GPU_MEM_DEV": "16", "ALIYUN_COM_GPU_MEM_ASSIGNED": "true",
            "ALIYUN_COM_GPU_MEM_ASSUME_TIME": "1700000000000000000"}
        self.k.create(old)
        wait_for(lambda: Env.ext.ledger("gpu-legacy")["nodes"][0]["gpus"][0]["usedMiB"] == 8 * 1024,
                 30, "the legacy pod read as 8 GiB")
        self.pod("big", units=100)  # 12.5 GiB
        (p,) = [p for p in self.wait_bound(2) if p["metadata"]["name"] == "big"]
        self.assertEqual(alloc_gpus(p), [1])
        used = [g["usedMiB"] for g in Env.ext.ledger("gpu-legacy")["nodes"][0]["gpus"]]
        self.assertEqual(used, [8 * 1024, 100 * UNIT_MIB])

    def test_a_bind_right_after_the_pod_was_created_never_answers_not_found(self):
        """Issue 13 item 6: a bind that races the extender's informer (the pod
        created a moment before) reads the pod from the apiserver. Pods of
        another schedulerName, so only these direct binds touch them; each is
        bound the instant its create returns."""
        if Env.form == "plugin":
            self.skipTest("the extender's bind verb; the plugin binds from kube-scheduler's own cache")
        self.node("gpu-share-race", "share", gpus=4, units=4 * GPU16)
        for i in range(20):
            spec = kcluster.gpu_pod(f"race-{i:02d}", ns=self.ns, units=8)
            spec["spec"]["schedulerName"] = "nobody"
            p = self.k.create(spec)
            got = Env.ext.post("bind", {"PodName": p["metadata"]["name"], "PodNamespace": self.ns,
                                        "PodUID": p["metadata"]["uid"], "Node": "gpu-share-race"})
            self.assertEqual(got, {"Error": ""}, p["metadata"]["name"])
        bound = self.wait_bound(20)
        for p in bound:
            self.assertEqual(p["spec"]["nodeName"], "gpu-share-race")
            self.assertEqual(len(alloc_gpus(p)), 1)
        self.assert_ledger_is_truth()


class Refusals(RealCase):
    def test_a_pod_that_fits_on_no_single_gpu_stays_pending_with_the_reason(self):
        self.node("gpu-share-x", "share", gpus=2, units=2 * GPU16)
        self.pod("too-big", units=GPU16 + 8)
        ev = self.wait_event("too-big", r"insufficient GPU memory on any single GPU")
        self.assertIn("0/1 nodes are available", ev["message"])
        self.assertEqual(Env.ext.ledger("gpu-share-x")["nodes"][0]["gpus"][0]["usedMiB"], 0)

    def test_an_uneven_split_stays_pending_with_the_reason(self):
        self.node("gpu-share-y", "share", gpus=2, units=2 * GPU16)
        self.pod("uneven", units=9, count=2)
        ev = self.wait_event("uneven", r"9 is not divisible by aliyun.com/gpu-count 2")
        self.assertIn("0/1 nodes are available", ev["message"])

    def test_a_bad_gpu_count_label_refuses_only_that_pod(self):
        """Issue 13 item 8: 0, 65 and two refuse the pod on every node as
        unresolvable with the documented reason; the filter call does not
        fail, and a good pod beside them is placed. (-1 is not a valid label
        value: the real apiserver refuses the pod; the unit tests send it.)"""
        self.node("gpu-share-z", "share", gpus=2, units=2 * GPU16)
        bad = {"zero": "0", "big": "65", "word": "two"}
        for name, value in bad.items():
            self.pod(f"count-{name}", units=4, labels={"aliyun.com/gpu-count": value})
        self.pod("good", units=4)
        self.wait_bound(1)
        for name, value in bad.items():
            want = (rf"aliyun.com/gpu-count {value} is out of range 1..64" if value in ("0", "65")
                    else rf'aliyun.com/gpu-count "{value}" is not a number from 1 to 64')
            ev = self.wait_event(f"count-{name}", want)
            self.assertIn("0/1 nodes are available", ev["message"])
            # unresolvable: kube-scheduler tries no preemption for it
            self.assertIn("preemption: 0/1 nodes are available: 1 Preemption is not helpful",
                          ev["message"])
        self.assertEqual([p["metadata"]["name"] for p in self.pods() if p["spec"].get("nodeName")],
                         ["good"])
        self.assert_ledger_is_truth()

    def test_a_node_whose_device_plugin_runs_one_gpu_refuses_multi_card_pods(self):
        """Issue 16 item 6: gpushare.io/multi-card=false (Aliyun's open-source
        device plugin reads ALIYUN_COM_GPU_MEM_IDX as one number): a 2-card
        pod stays Pending with the reason; a one-card pod is placed there;
        the 2-card pod goes to a node without the label once there is one."""
        self.node("gpu-one-card", "share", gpus=2, units=2 * GPU16,
                  labels={"gpushare.io/multi-card": "false", "mc": "x"})
        self.pod("split", units=8, count=2)
        ev = self.wait_event("split", r"1 node's device plugin runs one GPU per pod "
                                      r"\(label gpushare.io/multi-card=false\)")
        self.assertIn("0/1 nodes are available", ev["message"])
        self.pod("single", units=8, node_selector={"mc": "x"})
        (p,) = self.wait_bound(1)
        self.assertEqual((p["metadata"]["name"], p["spec"]["nodeName"]), ("single", "gpu-one-card"))
        self.node("gpu-any-card", "share", gpus=2, units=2 * GPU16)
        bound = {q["metadata"]["name"]: q["spec"]["nodeName"] for q in self.wait_bound(2)}
        self.assertEqual(bound["split"], "gpu-any-card")
        self.assert_ledger_is_truth()


class ZzLeastPrivilege(LeastPrivilege, RealCase):
    """The module's RBAC check, last (realcase.LeastPrivilege)."""


if __name__ == "__main__":
    unittest.main()
