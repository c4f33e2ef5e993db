"""tools/bench/fgd_claims.py's objects and reading of a run (issue 33): the
claims and slices it creates, the scaled protocol, and the integrity check
over pods and claims, which must catch every kind of over-commitment. The
run itself needs the real control plane (docs/benchmarks.md §12)."""
import unittest

import gsutil

fgd_claims = gsutil.bench_module("fgd_claims")

NODES = [("a", 4000, 8192, 1), ("b", 32000, 65536, 2)]
PODS = [("p00000", 1000, 1024, 1, 500), ("p00001", 3000, 1024, 0, 0),
        ("p00002", 1000, 1024, 1, 500), ("p00003", 1000, 1024, 2, 1000)]


def pod(name, node=None):
    return {"metadata": {"name": name}, "spec": {"nodeName": node} if node else {}}


def claim(name, results, reserved=None):
    """results: (pool, device, consumed memory or None) each."""
    res = [{"request": "gpu", "driver": fgd_claims.DRIVER, "pool": p, "device": d,
            **({"consumedCapacity": {"memory": m}} if m else {})} for p, d, m in results]
    st = {"allocation": {"devices": {"results": res}},
          "reservedFor": [{"resource": "pods", "name": reserved or name, "uid": "u"}]}
    return {"metadata": {"name": name}, "status": st}


class Reading(unittest.TestCase):
    def test_a_clean_run(self):
        items = [pod("p00000", "a"), pod("p00001", "b"), pod("p00002", "a"), pod("p00003", "b")]
        claims = [claim("p00000", [("a", "gpu-0", "64000Mi")]),
                  claim("p00002", [("a", "gpu-0", "64000Mi")]),
                  claim("p00003", [("b", "gpu-0", "128000Mi"), ("b", "gpu-1", None)])]
        placed, errors = fgd_claims.check(NODES, PODS, items, claims)
        self.assertEqual(errors, [])
        self.assertEqual(placed, {"p00000": 500, "p00001": 0, "p00002": 500, "p00003": 2000})

    def test_integrity_errors(self):
        half = [("a", "gpu-0", "64000Mi")]
        cases = [
            # one device holding 1500 of 1000 units (an exclusive result is the whole device)
            ([pod("p00000", "a"), pod("p00002", "a")],
             [claim("p00000", half), claim("p00002", [("a", "gpu-0", None)])],
             "a gpu-0: 1500 units of 1000 allocated"),
            ([pod("p00000", "a")], [], "bound without its claim allocated"),
            ([pod("p00000", "a")], [claim("p00000", [("b", "gpu-0", "64000Mi")])],
             "device b/gpu-0 on node a"),
            ([pod("p00000", "a")], [claim("p00000", [("a", "gpu-0", "50000Mi")])],
             "consumes 50000Mi, asks 500"),
            ([pod("p00000", "a")], [claim("p00000", half, reserved="other")], "reserved for ['other']"),
            ([pod("p00003", "b")], [claim("p00003", [("b", "gpu-0", None)])],
             "1 devices allocated, asks 2"),
            ([pod("p00000", "a")], [claim("p00000", [("a", "gpu-1", "64000Mi")])],
             "gpu-1 on a of 1 GPUs"),
            # a node's CPU over-committed (4 CPUs: 1 + 3 + 1)
            ([pod("p00000", "a"), pod("p00001", "a"), pod("p00002", "a")],
             [claim("p00000", half), claim("p00002", half)], "a: host over-committed"),
        ]
        for items, claims, want in cases:
            _, errors = fgd_claims.check(NODES, PODS, items, claims)
            self.assertTrue(any(want in e for e in errors), (want, errors))

    def test_objects(self):
        c = fgd_claims.claim_object(("p00007", 8000, 30517, 2, 1000))
        self.assertEqual(c["spec"]["devices"]["requests"], [{"name": "gpu", "exactly": {
            "deviceClassName": "gpushare.io", "allocationMode": "ExactCount", "count": 2,
            "capacity": {"requests": {"memory": "128000Mi"}}}}])
        p = fgd_claims.pod_object(("p00007", 8000, 30517, 2, 1000))
        self.assertEqual(p["spec"]["resourceClaims"], [{"name": "gpu", "resourceClaimName": "p00007"}])
        self.assertEqual(p["spec"]["containers"][0]["resources"],
                         {"requests": {"cpu": "8000m", "memory": "30517Mi"}, "claims": [{"name": "gpu"}]})
        s = fgd_claims.slice_object(("n1", 1000, 1024, 2))["spec"]
        self.assertEqual((s["driver"], s["nodeName"], s["pool"]), ("gpu.gpushare.io", "n1",
                         {"name": "n1", "generation": 1, "resourceSliceCount": 1}))
        self.assertEqual([(d["name"], d["attributes"]["gpushare.io/index"], d["capacity"])
                          for d in s["devices"]],
                         [(f"gpu-{i}", {"int": i}, {"memory": {"value": "128000Mi"}}) for i in (0, 1)])

    def test_scaled(self):
        nodes = [(f"n{i}", 1000, 1024, 1) for i in range(10)]
        pods = [(f"p{i:05d}", 100, 0, 1, 500) for i in range(100)]
        n, p = fgd_claims.scaled(nodes, pods, 5)
        self.assertEqual([x[0] for x in n], ["n0", "n5"])
        # 2000 milli of GPUs: pods of 500 until more than 131% arrived (2620): 6 pods
        self.assertEqual(len(p), 6)
        self.assertEqual(fgd_claims.scaled(nodes, pods, 1), (nodes, pods))


if __name__ == "__main__":
    unittest.main()
