"""Issue 33 item 1, DRA coexistence, on the real control plane: GPUs
published as DRA devices (ResourceSlices written by the test, the shipped
DeviceClass deploy/dra/deviceclass.yaml), claims allocated by kube-scheduler's
own DRA allocator (a pod using the claim) or written into status by the test
(as an allocator that sees the ledger would place them), and gpu-mem pods on
the same GPUs. Whatever arrives first, the ledger equals the truth computed
from the pods' annotations and the claims' allocations, and no GPU holds more
than it has. Shared by test_real_dra.py (the extender) and
test_real_plugin_dra.py (gpushare-scheduler); docs/dra.md."""
import json
import os
import uuid

import yaml

import kcluster
from realcase import Env, RealCase, metric, wait_for

DRIVER = "gpu.gpushare.io"
CLASS = "gpushare.io"
GIB = 1024


def device_class():
    with open(os.path.join(kcluster.SOURCE, "deploy", "dra", "deviceclass.yaml")) as f:
        return yaml.safe_load(f)


def mib(q):
    """A memory quantity ("4Gi", "1500Mi") in MiB, rounded up."""
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}
    for suffix, f in units.items():
        if q.endswith(suffix):
            return int(-(-float(q[:-len(suffix)]) * f // 1))
    return int(-(-int(q) // (1024 * 1024)))


class DraBase(RealCase):
    """The DRA cluster of a test: the DeviceClass, slices, claims, the truth."""

    def setUp(self):
        super().setUp()
        self.k.apply(device_class())
        self.slices = []

    def tearDown(self):
        for c in self.k.list("resourceclaims", self.ns):
            self.k.delete("resourceclaims", self.ns, c["metadata"]["name"])
        for s in self.slices:
            self.k.delete("resourceslices", None, s)
        super().tearDown()

    # -- the cluster ---------------------------------------------------------
    def gpu_node(self, name, gpus=2, gib=16):
        return self.node(name, "share", gpus=gpus, units=gpus * gib)

    def publish(self, node, gpus=2, gib=16, extra=()):
        """The node's GPUs as one ResourceSlice of the gpushare driver."""
        name = f"{node}-{DRIVER}"
        devices = [{"name": f"gpu-{i}", "allowMultipleAllocations": True,
                    "attributes": {"gpushare.io/index": {"int": i}},
                    "capacity": {"memory": {"value": f"{gib}Gi"}}} for i in range(gpus)]
        devices += list(extra)
        self.slices.append(name)
        return self.k.apply({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                             "metadata": {"name": name},
                             "spec": {"driver": DRIVER, "nodeName": node,
                                      "pool": {"name": node, "generation": 1,
                                               "resourceSliceCount": 1},
                                      "devices": devices}})

    def claim(self, name, memory=None):
        """A claim of one device of the DeviceClass, asking memory (None: the
        whole device)."""
        req = {"deviceClassName": CLASS}
        if memory:
            req["capacity"] = {"requests": {"memory": memory}}
        return self.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                            "metadata": {"name": name},
                            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": req}]}}})

    def claim_pod(self, name, claim):
        """A pod using claim (no gpu-mem: kube-scheduler's DRA allocator
        places it), kept on the test's nodes."""
        p = kcluster.gpu_pod(name, ns=self.ns, node_selector={"gpushare-test": self.ns})
        for c in p["spec"]["containers"]:
            c["resources"] = {"claims": [{"name": "gpu"}]}
        p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
        return self.k.create(p)

    def allocate(self, name, node, gpu, memory=None):
        """Writes the claim's allocation into its status, as an allocator
        would: device gpu-<gpu> of node's pool, consumedCapacity memory (None:
        the whole device, no share)."""
        c = self.k.get("resourceclaims", self.ns, name)
        result = {"request": "gpu", "driver": DRIVER, "pool": node, "device": f"gpu-{gpu}"}
        if memory:
            result["consumedCapacity"] = {"memory": memory}
            result["shareID"] = str(uuid.uuid4())
        c["status"] = {"allocation": {
            "devices": {"results": [result]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
        return self.k.call("PUT", self.k.path("resourceclaims", self.ns, name, sub="status"), c)

    # -- the truth -------------------------------------------------------------
    def truth(self):
        """(node, gpu) → MiB: the pods' annotations plus the claims'
        allocations on the gpushare driver's devices (gpu-<i> is GPU i)."""
        nodes = {n["metadata"]["name"] for n in self.k.list("nodes")}
        used = {k: v for k, v in kcluster.truth_from_pods(self.k.list("pods")).items()
                if k[0] in nodes}
        sizes = {}
        for s in self.k.list("resourceslices"):
            for d in s["spec"].get("devices") or []:
                cap = ((d.get("capacity") or {}).get("memory") or {}).get("value")
                sizes[(s["spec"]["pool"]["name"], d["name"])] = mib(cap) if cap else 0
        for c in self.k.list("resourceclaims"):
            alloc = (c.get("status") or {}).get("allocation") or {}
            for r in (alloc.get("devices") or {}).get("results") or []:
                if r["driver"] != DRIVER or r["pool"] not in nodes:
                    continue
                key = (r["pool"], int(r["device"].split("-")[1]))
                mem = (r.get("consumedCapacity") or {}).get("memory")
                used[key] = used.get(key, 0) + (mib(mem) if mem else sizes[(r["pool"], r["device"])])
        return {k: v for k, v in used.items() if v}

    def assert_ledger_is_dra_truth(self, bounded=True):
        last = {}

        def equal():
            last["ledger"], last["truth"] = kcluster.ledger_used(Env.ext.ledger()), self.truth()
            return last["ledger"] == last["truth"]
        try:
            wait_for(equal, 60, "the ledger to equal the pods' annotations and the claims' allocations")
        except AssertionError as e:
            raise AssertionError(f"{e}; last ledger {last.get('ledger')}, truth {last.get('truth')}") from None
        for n in Env.ext.ledger()["nodes"] if bounded else []:
            for g in n["gpus"]:
                self.assertLessEqual(g["usedMiB"], g["totalMiB"], (n["name"], g["index"]))

    def gpu_mem_then_claim(self):
        """The over-commit case's start (both front ends): on dra-d, one
        GPU of 16 GiB, pod m0 holds 12 GiB (bound), then pod cp asks claim
        "late" of 8 GiB."""
        self.node("dra-d", "share", gpus=1, units=16)
        self.publish("dra-d", gpus=1)
        self.pod("m0", units=12)
        self.wait_bound(1)
        self.claim("late", "8Gi")
        self.claim_pod("cp", "late")

    def ledger_claims(self, node):
        led = Env.ext.ledger(node)
        return {(g["index"], c["name"]): c["usedMiB"] for n in led["nodes"] for g in n["gpus"]
                for c in g.get("claims", [])}



class DraCases(DraBase):
    """The coexistence cases, run by each form."""

    def test_claims_allocated_by_kube_scheduler_first_then_gpu_mem_pods(self):
        """kube-scheduler's DRA allocator places two 12 GiB claims (one per
        GPU: 12 + 12 > 16); then gpu-mem pods of 4 GiB fill what is left:
        exactly two fit, the third is refused for memory."""
        self.gpu_node("dra-a")
        self.publish("dra-a")
        for i in range(2):
            self.claim(f"c{i}", "12Gi")
            self.claim_pod(f"cp{i}", f"c{i}")
        self.wait_bound(2)
        wait_for(lambda: len(self.ledger_claims("dra-a")) == 2, 60, "both claims in the ledger")
        self.assertEqual(sorted(self.ledger_claims("dra-a").values()), [12 * GIB, 12 * GIB])
        for i in range(3):
            self.pod(f"m{i}", units=4)
        self.wait_bound(4)
        self.wait_event("m2", "insufficient GPU memory")
        self.assertEqual(len([p for p in self.pods() if p["spec"].get("nodeName")]), 4)
        self.assert_ledger_is_dra_truth()
        # the claim's pod and the claim deleted: its memory is free again and a
        # new 8 GiB pod fits on GPU 0 (m2 may be retried there too)
        self.k.delete("pods", self.ns, "cp0")
        self.k.delete("resourceclaims", self.ns, "c0")
        wait_for(lambda: not self.k.try_get("resourceclaims", self.ns, "c0"), 120, "c0 gone")
        wait_for(lambda: len(self.ledger_claims("dra-a")) == 1, 60, "c0 out of the ledger")
        self.pod("m3", units=8)
        wait_for(lambda: self.k.get("pods", self.ns, "m3")["spec"].get("nodeName"), 120, "m3 bound")
        self.assert_ledger_is_dra_truth()

    def test_gpu_mem_pods_first_then_claims_written_into_status(self):
        """gpu-mem pods first (10 GiB on GPU 0), then claims allocated into
        the free memory by a writer of status: 6 GiB on GPU 0 (exactly full)
        and the whole GPU 1; a later gpu-mem pod finds no room anywhere."""
        self.gpu_node("dra-b")
        self.publish("dra-b")
        self.pod("m0", units=10)
        self.wait_bound(1)
        self.claim("c-share", "6Gi")
        self.allocate("c-share", "dra-b", 0, "6Gi")
        self.claim("c-whole")
        self.allocate("c-whole", "dra-b", 1)
        wait_for(lambda: self.ledger_claims("dra-b") == {(0, "c-share"): 6 * GIB,
                                                         (1, "c-whole"): 16 * GIB},
                 60, "both claims in the ledger")
        self.assert_ledger_is_dra_truth()
        self.pod("m1", units=1)
        self.wait_event("m1", "insufficient GPU memory")
        self.assert_ledger_is_dra_truth()
        # the whole-device claim deallocated: a new pod goes to GPU 1 (the
        # only one with room; m1 may be retried there too)
        c = self.k.get("resourceclaims", self.ns, "c-whole")
        c["status"] = {}
        self.k.call("PUT", self.k.path("resourceclaims", self.ns, "c-whole", sub="status"), c)
        wait_for(lambda: (1, "c-whole") not in self.ledger_claims("dra-b"), 60,
                 "the deallocated claim out of the ledger")
        self.pod("m2", units=2)
        wait_for(lambda: self.k.get("pods", self.ns, "m2")["spec"].get("nodeName"), 120, "m2 bound")
        ann = json.loads(self.k.get("pods", self.ns, "m2")["metadata"]["annotations"]
                         ["scheduler.framework.gpushare.allocation"])
        self.assertEqual(ann, {"0": {"1": 2}})
        self.assert_ledger_is_dra_truth()

    def test_claim_before_its_slice_and_bad_input(self):
        """A claim allocated on a device of a slice not yet published is
        charged when the slice comes; a claim on a device that is not
        gpushare's (no gpushare.io/index) is reported and not charged; the
        slice deleted while the claim holds the device keeps the charge."""
        self.gpu_node("dra-c")
        self.claim("early", "8Gi")
        self.allocate("early", "dra-c", 1, "8Gi")
        self.claim("nic")
        c = self.k.get("resourceclaims", self.ns, "nic")
        c["status"] = {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": DRIVER, "pool": "dra-c", "device": "nic-0"}]}}}
        self.k.call("PUT", self.k.path("resourceclaims", self.ns, "nic", sub="status"), c)
        wait_for(lambda: (metric(Env.ext.metrics(), "gpushare_dra_claims", state="unresolved")
                          or 0) >= 2, 60, "two unresolved claims")
        self.assertEqual(self.ledger_claims("dra-c"), {})
        self.publish("dra-c", extra=[{"name": "nic-0", "attributes": {"kind": {"string": "nic"}}}])
        wait_for(lambda: self.ledger_claims("dra-c") == {(1, "early"): 8 * GIB}, 60,
                 "the early claim charged once its slice came")
        m = Env.ext.metrics()
        self.assertGreaterEqual(metric(m, "gpushare_dra_problems", reason="device_not_managed"), 1)
        self.assertEqual(metric(m, "gpushare_gpu_memory_claimed_mib", node="dra-c", gpu="1"), 8 * GIB)
        self.assert_ledger_is_dra_truth()
        # the slice goes: the charge stays (stale), nothing is given away
        self.k.delete("resourceslices", None, self.slices.pop())
        wait_for(lambda: (metric(Env.ext.metrics(), "gpushare_dra_problems", reason="stale") or 0)
                 >= 1, 60, "the stale charge reported")
        self.assertEqual(self.ledger_claims("dra-c"), {(1, "early"): 8 * GIB})
        # GPU 1 keeps 8 GiB free: 12 GiB go to GPU 0, 9 GiB fit nowhere, 8 on GPU 1
        self.pod("a", units=12)
        self.wait_bound(1)
        self.pod("b", units=9)
        self.pod("c", units=8)
        self.wait_bound(2)
        self.wait_event("b", "insufficient GPU memory")
        gpus = {p["metadata"]["name"]: json.loads(p["metadata"]["annotations"]
                                                   ["scheduler.framework.gpushare.allocation"])
                for p in self.pods() if p["spec"].get("nodeName")}
        self.assertEqual(gpus, {"a": {"0": {"0": 12}}, "c": {"0": {"1": 8}}})
        # inspect lists the claim beside the pods (units of 1 GiB)
        st, body = kcluster.gsutil.http_status(Env.ext.base, "/gpushare-scheduler/inspect/dra-c")
        self.assertEqual(st, 200, body)
        dev1 = json.loads(body)["nodes"][0]["devs"][1]
        self.assertEqual(dev1["claims"], [{"name": "early", "namespace": self.ns, "usedGPU": 8}])
        self.assertEqual(dev1["usedGPU"], 16)

    def test_kube_scheduler_allocator_beside_gpu_mem_pods_is_reported(self):
        """What kube-scheduler's DRA allocator cannot see (docs/dra.md): a
        gpu-mem pod holds 12 of GPU 0's 16 GiB, then a claim of 8 GiB is
        allocated by kube-scheduler onto the same GPU. gpushare charges the
        truth, reports the GPU over-committed, and gives it to no further
        gpu-mem pod."""
        self.gpu_mem_then_claim()
        self.wait_bound(2)
        wait_for(lambda: self.ledger_claims("dra-d") == {(0, "late"): 8 * GIB}, 60,
                 "the claim in the ledger")
        wait_for(lambda: (metric(Env.ext.metrics(), "gpushare_dra_problems", reason="over_committed")
                          or 0) >= 1, 60, "the over-commit reported")
        self.assert_ledger_is_dra_truth(bounded=False)
        self.pod("m1", units=1)
        self.wait_event("m1", "insufficient GPU memory")
