"""tools/bench/fgd_real.py's reading of a run (issue 32): the allocation
curve from the bound pods of each arrival prefix, and the pod-by-pod
integrity check, which must catch every kind of over-commitment. The run
itself needs the real control plane (docs/benchmarks.md §5c); what it
concludes from the pods is tested here on hand-made lists."""
import json
import unittest

import gsutil

fgd_real = gsutil.bench_module("fgd_real")

# two nodes of one GPU each (2000 milli-GPU in all)
NODES = [("a", 4000, 8192, 1), ("b", 32000, 65536, 1)]
# name, cpu milli, memory MiB, GPUs, milli per GPU
PODS = [("p00000", 1000, 1024, 1, 500), ("p00001", 3000, 1024, 0, 0),
        ("p00002", 1000, 1024, 1, 500), ("p00003", 1000, 1024, 1, 1000)]


def item(name, node=None, alloc=None, unit="128"):
    ann = {}
    if alloc is not None:
        ann = {fgd_real.ALLOC: json.dumps(alloc), fgd_real.UNIT_KEY: unit}
    return {"metadata": {"name": name, "annotations": ann}, "spec": {"nodeName": node} if node else {}}


class Reading(unittest.TestCase):
    def test_curve_from_the_bound_prefix(self):
        items = [item("p00000", "a", {"0": {"0": 500}}), item("p00001", "b"),
                 item("p00002", "a", {"0": {"0": 500}}), item("p00003")]
        placed, errors = fgd_real.check(NODES, PODS, items)
        self.assertEqual(errors, [])
        self.assertEqual(placed, {"p00000": 500, "p00001": 0, "p00002": 500})
        at = fgd_real.curve(NODES, PODS, placed)
        # arrived: 25% (p0), 25% (p1), 50% (p2), 100% (p3, not placed)
        self.assertEqual((at[24], at[25], at[49], at[50], at[100], at[130]),
                         (0.0, 25.0, 25.0, 50.0, 50.0, 50.0))

    def test_integrity_errors(self):
        cases = [
            # one GPU holding 1500 of 1000 units
            ([item("p00000", "a", {"0": {"0": 500}}), item("p00003", "a", {"0": {"0": 1000}})],
             "a GPU 0: 1500 units of 1000 allocated"),
            # a node's CPU over-committed (4 CPUs: 1 + 3 + 1)
            ([item("p00000", "a", {"0": {"0": 500}}), item("p00001", "a"),
              item("p00002", "b", {"0": {"0": 500}}), item("p00003", "a", {"0": {"0": 1000}})],
             "a: host over-committed"),
            # an allocation that is not the pod's request
            ([item("p00000", "a", {"0": {"0": 400}})], "is not 1 GPU(s) x 500"),
            # a GPU pod bound without an allocation, or in another unit
            ([item("p00000", "a")], "without an allocation"),
            ([item("p00000", "a", {"0": {"0": 500}}, unit="1024")], "without an allocation"),
            # a CPU-only pod with one; a GPU the node does not have
            ([item("p00001", "a", {"0": {"0": 1}})], "CPU-only pod with an allocation"),
            ([item("p00000", "a", {"0": {"1": 500}})], "GPU 1 on a of 1 GPUs"),
        ]
        for items, want in cases:
            _, errors = fgd_real.check(NODES, PODS, items)
            self.assertTrue(any(want in e for e in errors), (want, errors))

    def test_pod_objects(self):
        p = fgd_real.pod_object(("p00007", 8000, 30517, 2, 1000))
        c = p["spec"]["containers"][0]["resources"]
        self.assertEqual(c["requests"], {"cpu": "8000m", "memory": "30517Mi"})
        self.assertEqual(c["limits"], {"aliyun.com/gpu-mem": "2000"})
        self.assertEqual(p["metadata"]["labels"]["aliyun.com/gpu-count"], "2")
        p = fgd_real.pod_object(("p00008", 500, 0, 0, 0))
        self.assertEqual(p["spec"]["containers"][0]["resources"], {"requests": {"cpu": "500m"}})


if __name__ == "__main__":
    unittest.main()
