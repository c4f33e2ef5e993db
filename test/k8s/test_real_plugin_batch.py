"""kube-scheduler's opportunistic batching with the in-process plugin
(docs/plugin.md, "Opportunistic batching"): gpushare-scheduler as shipped
but with PodTopologySpread's default constraints off, the one change that
lets kube-scheduler v1.37 batch. GpuShare signs its pods (SignPod, from the
core's gs_place_signature), so identical GPU pods are batched: kube-scheduler
reuses the last pod's ranking and filters each pod on the hinted node only,
and the plugin evaluates such a pod through the core's memo (only the nodes
whose ledger changed are evaluated again). What must hold all the same: the binpack placement of a full
evaluation, exact annotations, no GPU over-committed, the ledger equal to
the truth. Unit 1GiB."""
import concurrent.futures
import os
import tempfile
import unittest

import yaml

import kcluster
from realcase import Env, RealCase, alloc_gpus, metric

CONFIG = None


def setUpModule():
    global CONFIG
    with open(os.path.join(kcluster.SOURCE, "deploy", "scheduler", "gpushare-scheduler-config.yaml")) as f:
        c = kcluster.no_default_spread(yaml.safe_load(f), "gpushare-scheduler")
    CONFIG = tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="gs-batch-", delete=False)
    yaml.safe_dump(c, CONFIG)
    CONFIG.close()
    Env.up(unit="1GiB", form="plugin", scheduler_config=CONFIG.name)


def tearDownModule():
    Env.down()
    if CONFIG:
        os.unlink(CONFIG.name)


class PluginBatching(RealCase):
    def hints(self):
        return metric(self.cp.scheduler_metrics(), "scheduler_batch_attempts_total",
                      result="hint_used") or 0

    def not_batchable(self):
        return metric(self.cp.scheduler_metrics(), "scheduler_batch_cache_flushed_total",
                      reason="pod_not_batchable") or 0

    def test_identical_pods_are_batched_and_binpacked(self):
        """Three nodes of 2 × 16 GiB; 16 pods of 4 GiB held by a scheduling
        gate, then released together, so kube-scheduler takes them one after
        the other: they are batched (hints used, none refused a signature),
        and binpack still fills a GPU before it starts another, as evaluating
        every node would: four GPUs used, four pods on each (which node gets
        a new GPU is kube-scheduler's tie-break)."""
        for n in ("gpu-b1", "gpu-b2", "gpu-b3"):
            self.node(n, "share", gpus=2, units=32)
        hints0, refused0 = self.hints(), self.not_batchable()
        names = [f"b{i:02d}" for i in range(16)]
        for name in names:
            p = kcluster.gpu_pod(name, ns=self.ns, units=4, node_selector={"gpushare-test": self.ns})
            p["spec"]["schedulingGates"] = [{"name": "gpushare.io/test-hold"}]
            self.k.create(p)
        with concurrent.futures.ThreadPoolExecutor(16) as ex:
            list(ex.map(lambda n: self.k.patch("pods", self.ns, n, {"spec": {"schedulingGates": None}}),
                        names))
        bound = self.wait_bound(16)
        per_node = {}
        for p in bound:
            node = p["spec"]["nodeName"]
            (gpu,) = alloc_gpus(p)
            per_node.setdefault(node, {}).setdefault(gpu, 0)
            per_node[node][gpu] += 1
            self.assert_memory_annotations(p, [gpu], 4, 1024, [16, 16])
        self.assertEqual(sorted(c for g in per_node.values() for c in g.values()), [4, 4, 4, 4], per_node)
        batch = [line for line in self.cp.scheduler_metrics().splitlines()
                 if line.startswith("scheduler_batch_")]
        self.assertGreaterEqual(self.hints() - hints0, 1, "no pod was batched:\n" + "\n".join(batch))
        self.assertEqual(self.not_batchable() - refused0, 0, "a pod could not be signed")
        self.assert_ledger_is_truth()

    def test_a_pod_that_no_longer_fits_the_hint_is_placed_by_a_full_evaluation(self):
        """One node of 2 × 16 GiB and one of 1 × 8 GiB. Pods of 8 GiB, released
        together: binpack fills the 8 GiB GPU first (the fullest fit), then
        the 16 GiB GPUs; once a hinted node is full the plugin's verdict
        refuses it and kube-scheduler evaluates every node again. Five pods:
        every GPU full; the sixth is refused."""
        self.node("gpu-h1", "share", gpus=2, units=32)
        self.node("gpu-h2", "share", gpus=1, units=8)
        names = [f"h{i}" for i in range(6)]
        for name in names:
            p = kcluster.gpu_pod(name, ns=self.ns, units=8, node_selector={"gpushare-test": self.ns})
            p["spec"]["schedulingGates"] = [{"name": "gpushare.io/test-hold"}]
            self.k.create(p)
        for n in names:
            self.k.patch("pods", self.ns, n, {"spec": {"schedulingGates": None}})
        bound = self.wait_bound(5)
        used = {}
        for p in bound:
            for g in alloc_gpus(p):
                used[(p["spec"]["nodeName"], g)] = used.get((p["spec"]["nodeName"], g), 0) + 8
        self.assertEqual(used, {("gpu-h1", 0): 16, ("gpu-h1", 1): 16, ("gpu-h2", 0): 8}, used)
        (left,) = [p["metadata"]["name"] for p in self.pods() if not p["spec"].get("nodeName")]
        # kube-scheduler's own node totals or gpushare's GPU check refuses it
        self.wait_event(left, r"Insufficient aliyun.com/gpu-mem|insufficient GPU memory on any single GPU")
        self.assert_ledger_is_truth()


if __name__ == "__main__":
    unittest.main()
