"""nodePolicy frag through the in-process plugin (issue 17, docs/placement.md):
kube-scheduler's NodeInfo (allocatable and requested CPU) reaches the core,
and a pod asking only CPU is scored by gpushare, so it does not take the CPU
that a node's free GPUs need.

The cluster (unit 1GiB, ConfigMap nodePolicy frag + fragmentationAware):
  gpu-teach  share, 2 × 16 GiB, 64 CPUs: where the GPU pods that teach the
             workload run (4 GiB and 2 CPUs each, pinned by hostname)
  gpu-x      share, 2 × 16 GiB, 8 CPUs, nothing on it
  gpu-z      share, 2 × 16 GiB, 8 CPUs, both GPUs taken by 16 GiB pods
             asking 100m CPU each
A CPU-only pod asking 6 CPUs may go to gpu-x or gpu-z (label pool).
kube-scheduler's own scores prefer gpu-x, the less used (checked with
nodePolicy binpack, where gpushare has no opinion on such a pod: it landed
on gpu-x). On gpu-x it would leave 2 CPUs: room for one 2-CPU pod where the
two free GPUs could take two, so half of gpu-x's 32 GiB is stranded for
the 4 GiB class (gpushare's score 2); on gpu-z, whose GPUs are full, it
strands nothing (5). gpushare's 3 × 10 × weight 5 outweighs the default
plugins: the pod lands on gpu-z. Without the NodeInfo host view both
nodes would score 5 and the default plugins would choose gpu-x."""
import unittest

import kcluster
from realcase import Env, RealCase, wait_for


def setUpModule():
    Env.up(unit="1GiB", form="plugin",
           config={"nodePolicy": "frag", "fragmentationAware": "true"})


def tearDownModule():
    Env.down()


def with_requests(p, cpu):
    for c in p["spec"]["containers"]:
        c["resources"].setdefault("requests", {})["cpu"] = cpu
    return p


class PluginFrag(RealCase):
    def create_pod(self, name, cpu, units=0, selector=None):
        p = kcluster.gpu_pod(name, ns=self.ns, units=units, node_selector=selector)
        return self.k.create(with_requests(p, cpu))

    def node_of(self, name):
        return wait_for(lambda: self.k.get("pods", self.ns, name)["spec"].get("nodeName"), 180,
                        f"{name} bound", 0.2)

    def cpu8_node(self, name, pool):
        self.nodes.append(name)
        self.cp.add_node(name, labels=dict(pool, **{"gpushare-test": self.ns,
                                                    "ack.node.gpu.schedule": "share"}),
                         capacity=dict(kcluster.gpu_node_capacity(2, 32), cpu="8"))

    def test_cpu_only_pod_keeps_off_the_cpu_free_gpus_need(self):
        pool = {"pool": f"frag-{self.ns}"[:63]}
        self.node("gpu-teach", "share", gpus=2, units=32)
        self.cpu8_node("gpu-x", pool)
        self.cpu8_node("gpu-z", pool)
        # the workload: 4 GiB pods asking 2 CPUs
        for i in range(3):
            self.create_pod(f"teach-{i}", "2", units=4,
                            selector={"kubernetes.io/hostname": "gpu-teach"})
        for i in range(3):
            self.assertEqual(self.node_of(f"teach-{i}"), "gpu-teach")
        # gpu-z's GPUs full
        for i in range(2):
            self.create_pod(f"full-{i}", "100m", units=16,
                            selector={"kubernetes.io/hostname": "gpu-z"})
        for i in range(2):
            self.assertEqual(self.node_of(f"full-{i}"), "gpu-z")
        self.create_pod("cpu-job", "6", selector=pool)
        self.assertEqual(self.node_of("cpu-job"), "gpu-z")
        p = self.k.get("pods", self.ns, "cpu-job")
        # a CPU-only pod: bound by kube-scheduler's DefaultBinder, no GPU
        # annotations, nothing in the ledger
        annots = p["metadata"].get("annotations") or {}
        self.assertFalse([k for k in annots if "gpushare" in k or "aliyun" in k], annots)
        x = Env.ext.ledger("gpu-x")
        self.assertEqual([g["usedMiB"] for n in x["nodes"] for g in n["gpus"]], [0, 0])
        self.assert_ledger_is_truth()
        # a 4 GiB, 2-CPU GPU pod still finds gpu-x's free GPUs and CPUs
        self.create_pod("gpu-after", "2", units=4, selector=pool)
        self.assertEqual(self.node_of("gpu-after"), "gpu-x")


if __name__ == "__main__":
    unittest.main()
