"""Issue 33 item 2 on the real control plane: gpushare-scheduler places the
claims of its DeviceClass (gpushare.io) and writes their allocation as
kube-scheduler's DynamicResources would (docs/dra.md). ResourceSlices are
published by the test for two fake nodes of 2 × 16 GiB; the apiserver must
accept every allocation, and the plugin's ledger must equal the truth
computed from the claims' allocations."""
import collections
import json
import unittest

import dracase
import kcluster
from dracase import CLASS, DRIVER, GIB, mib
from realcase import DGX1_LINKS, TOPO_KEY, Env, metric, wait_for


def setUpModule():
    Env.up(unit="1GiB", form="plugin")
    Env.priority_classes({"claim-low": 10, "claim-high": 1000})


def tearDownModule():
    Env.down()


class PlacedClaims(dracase.DraBase):

    def cluster(self):
        for n in ("pc-a", "pc-b"):
            self.gpu_node(n)
            self.publish(n)

    def exact(self, memory=None, count=None, **extra):
        req = {"deviceClassName": CLASS, **extra}
        if memory:
            req["capacity"] = {"requests": {"memory": memory}}
        if count:
            req["count"] = count
        return {"devices": {"requests": [{"name": "gpu", "exactly": req}]}}

    def claim_of(self, name, memory=None, count=None, **extra):
        return self.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                            "metadata": {"name": name}, "spec": self.exact(memory, count, **extra)})

    def claim_pod(self, name, claim=None, template=None, labels=None, node_selector=None):
        p = kcluster.gpu_pod(name, ns=self.ns, node_selector=node_selector or {"gpushare-test": self.ns},
                             labels=labels)
        for c in p["spec"]["containers"]:
            c["resources"] = {"claims": [{"name": "gpu"}]}
        ref = {"resourceClaimName": claim} if claim else {"resourceClaimTemplateName": template}
        p["spec"]["resourceClaims"] = [{"name": "gpu", **ref}]
        return self.k.create(p)

    def allocated(self, name):
        return wait_for(lambda: (self.k.get("resourceclaims", self.ns, name).get("status") or {})
                        .get("reservedFor") and self.k.get("resourceclaims", self.ns, name),
                        120, f"claim {name} allocated and reserved")

    def assert_allocation(self, claim, pod, memory_each, ngpus):
        """The claim's status as DynamicResources writes one: results on the
        pod's node, the driver's devices, memory and a shareID each; the
        node selector; the pod in reservedFor. The GPUs' indexes."""
        pod = self.k.get("pods", self.ns, pod)
        node = pod["spec"]["nodeName"]
        st = claim["status"]
        alloc = st["allocation"]
        res = alloc["devices"]["results"]
        self.assertEqual(len(res), ngpus, res)
        for r in res:
            self.assertEqual((r["request"], r["driver"], r["pool"]), ("gpu", DRIVER, node), r)
            self.assertRegex(r["device"], r"^gpu-[01]$")
            self.assertEqual(mib(r["consumedCapacity"]["memory"]), memory_each, r)
            self.assertRegex(r["shareID"], r"^[0-9a-f-]{36}$")
        self.assertEqual(len({r["device"] for r in res}), ngpus, "one result per GPU")
        self.assertEqual(alloc["nodeSelector"], {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]})
        self.assertEqual(st["reservedFor"], [{"resource": "pods", "name": pod["metadata"]["name"],
                                              "uid": pod["metadata"]["uid"]}])
        self.assertIn("resource.kubernetes.io/delete-protection", claim["metadata"]["finalizers"])
        return node, sorted(int(r["device"].split("-")[1]) for r in res)

    def test_4gib_claims_binpack_onto_one_gpu_and_count_2_splits_evenly(self):
        """Four 4 GiB claims, one pod each, arriving one after the other: all
        on one GPU (binpack). Then 8 GiB over two GPUs — count 2 with 4Gi, a
        capacity request being per device in DRA: 4 + 4 on two GPUs of one
        node, which here is the other node (the first has one GPU with room).
        Every shareID is distinct."""
        self.cluster()
        places = set()
        for i in range(4):
            self.claim_of(f"c{i}", "4Gi")
            self.claim_pod(f"p{i}", f"c{i}")
            self.wait_bound(i + 1)
            node, gpus = self.assert_allocation(self.allocated(f"c{i}"), f"p{i}", 4 * GIB, 1)
            places.add((node, gpus[0]))
        self.assertEqual(len(places), 1, places)
        (full_node, _), = places
        self.claim_of("pair", "4Gi", count=2)
        self.claim_pod("pp", "pair")
        self.wait_bound(5)
        node, gpus = self.assert_allocation(self.allocated("pair"), "pp", 4 * GIB, 2)
        self.assertEqual(gpus, [0, 1])
        self.assertNotEqual(node, full_node)
        ids = [r["shareID"] for c in self.k.list("resourceclaims", self.ns)
               for r in c["status"]["allocation"]["devices"]["results"]]
        self.assertEqual(len(ids), 6)
        self.assertEqual(len(set(ids)), 6)
        self.assert_ledger_is_dra_truth()
        # a fifth 4 GiB claim: the full GPU has no room, binpack takes the
        # fullest GPU that has (one of pp's, 4 of 16 GiB used)
        self.claim_of("c4", "4Gi")
        self.claim_pod("p4", "c4")
        self.wait_bound(6)
        n4, g4 = self.assert_allocation(self.allocated("c4"), "p4", 4 * GIB, 1)
        self.assertEqual(n4, node)
        self.assert_ledger_is_dra_truth()

    def test_claim_from_a_template(self):
        """A ResourceClaimTemplate: kube-controller-manager generates the
        pod's claim; gpushare allocates it (found through
        status.resourceClaimStatuses)."""
        self.cluster()
        self.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                     "metadata": {"name": "t"}, "spec": {"spec": self.exact("6Gi")}})
        self.claim_pod("tp", template="t")
        self.wait_bound(1)
        pod = self.k.get("pods", self.ns, "tp")
        name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
        self.assert_allocation(self.allocated(name), "tp", 6 * GIB, 1)
        self.assert_ledger_is_dra_truth()

    def test_bad_requests_are_refused_and_nothing_is_over_committed(self):
        """A claim gpushare cannot place is refused with its reason (a CEL
        selector it cannot honour; more memory than a GPU has); a claim that
        fits nowhere any more waits; the ledger never holds more than a GPU
        has, and equals the truth."""
        self.cluster()
        self.claim_of("sel", "1Gi", selectors=[{"cel": {"expression": "true"}}])
        self.claim_pod("ps", "sel")
        self.wait_event("ps", "selectors: not supported")
        self.claim_of("huge", "20Gi")
        self.claim_pod("ph", "huge")
        self.wait_event("ph", "insufficient GPU memory")
        for i in range(4):
            self.claim_of(f"f{i}", "16Gi")
            self.claim_pod(f"pf{i}", f"f{i}")
        self.wait_bound(4)
        self.claim_of("late", "1Gi")
        self.claim_pod("pl", "late")
        self.wait_event("pl", "insufficient GPU memory")
        for name in ("sel", "huge", "late"):
            st = self.k.get("resourceclaims", self.ns, name).get("status") or {}
            self.assertNotIn("allocation", st, name)
        self.assert_ledger_is_dra_truth()
        self.assertEqual(sorted(kcluster.ledger_used(Env.ext.ledger()).values()), [16 * GIB] * 4)
        self.assertEqual(metric(Env.ext.metrics(), "gpushare_dra_problems",
                                reason="over_committed") or 0, 0)

    def test_a_gang_of_claim_pods_waits_in_permit_and_binds_together(self):
        """Three claim pods of one job (gpu-topology, replica 3): the first
        two are reserved (their claims charged in the ledger) and wait in
        Permit, unbound and unallocated; the third completes the job and all
        three bind, their claims allocated."""
        self.cluster()
        job = {"gpu-topology": "job1", "gpu-topology-replica": "3"}
        for i in range(2):
            self.claim_of(f"g{i}", "4Gi")
            self.claim_pod(f"gp{i}", f"g{i}", labels=job)
        wait_for(lambda: len([c for n in ("pc-a", "pc-b") for c in self.ledger_claims(n)]) == 2,
                 120, "both members reserved")
        self.assertEqual([p["metadata"]["name"] for p in self.pods() if p["spec"].get("nodeName")], [])
        for i in range(2):
            self.assertNotIn("allocation", self.k.get("resourceclaims", self.ns, f"g{i}").get("status") or {})
        self.claim_of("g2", "4Gi")
        third = self.claim_pod("gp2", "g2", labels=job)["metadata"]["creationTimestamp"]
        self.wait_bound(3)
        for i in range(3):
            claim = self.allocated(f"g{i}")
            self.assert_allocation(claim, f"gp{i}", 4 * GIB, 1)
            # written in PreBind, after Permit let it go: not before the
            # third member existed
            written = [m["time"] for m in claim["metadata"]["managedFields"]
                       if m.get("subresource") == "status"]
            self.assertTrue(written and min(written) >= third, (written, third))
        self.assert_ledger_is_dra_truth()

    def test_preemption_of_claim_pods_frees_one_gpu_and_nothing_else(self):
        """Both nodes full: 16 pods of low priority, each with its own 4 GiB
        claim, four on every GPU. A high-priority pod whose claim asks
        16 GiB fits nowhere; GpuShare's PostFilter asks the core, where the
        claims gpushare placed stand in for their one consumer pod at its
        priority: exactly the four pods of one GPU are evicted (Preempted,
        by gpushare-scheduler), nothing else; kube-controller-manager's
        resourceclaim controller deallocates their claims; the preemptor's
        claim is then allocated on that GPU, whole. The ledger equals the
        truth computed from the claims' allocations throughout; the
        preemptor was nominated to the node before it was bound."""
        self.cluster()
        where = {}
        for i in range(16):
            self.claim_of(f"l{i}", "4Gi")
            self.prio_claim_pod(f"lp{i}", f"l{i}", "claim-low")
        self.wait_bound(16)
        for i in range(16):
            node, (gpu,) = self.assert_allocation(self.allocated(f"l{i}"), f"lp{i}", 4 * GIB, 1)
            where[f"lp{i}"] = (node, gpu)
        self.assertEqual(sorted(collections.Counter(where.values()).values()), [4, 4, 4, 4])
        self.assert_ledger_is_dra_truth()
        before = {c["metadata"]["name"]: c["status"]["allocation"]
                  for c in self.k.list("resourceclaims", self.ns)}
        self.claim_of("big", "16Gi")
        # the preemptor's updates until it is bound: it is nominated first
        bpw, bp_events = self.watch_pod("bp", lambda e: e["object"]["spec"].get("nodeName"))
        self.prio_claim_pod("bp", "big", "claim-high")
        claim = self.allocated("big")
        node, gpus = self.assert_allocation(claim, "bp", 16 * GIB, 1)
        self.assertEqual(self.k.get("pods", self.ns, "bp")["spec"]["nodeName"], node)
        bpw.join(170)
        self.assertIn(node, [e["object"]["status"].get("nominatedNodeName") for e in bp_events],
                      "bp was never nominated to the node of its GPU")
        victims = sorted(p for p, at in where.items() if at == (node, gpus[0]))
        self.assertEqual(len(victims), 4, (where, node, gpus))
        left = sorted(p["metadata"]["name"] for p in self.pods())
        self.assertEqual(left, sorted(["bp"] + [p for p in where if p not in victims]))
        for p in self.pods():
            self.assertIsNone(p["metadata"].get("deletionTimestamp"), p["metadata"]["name"])
        # evicted by gpushare-scheduler, as DefaultPreemption evicts
        def preempted():
            return sorted(e["involvedObject"]["name"] for e in self.k.events(self.ns)
                          if e.get("reason") == "Preempted")
        wait_for(lambda: preempted() == victims, 60, "a Preempted event on each victim")
        self.assertEqual(preempted(), victims)
        # the victims' claims deallocated; every other claim as it was
        for c in self.k.list("resourceclaims", self.ns):
            name, st = c["metadata"]["name"], c.get("status") or {}
            if name == "big":
                continue
            if f"lp{name[1:]}" in victims:
                self.assertNotIn("allocation", st, name)
                self.assertFalse(st.get("reservedFor"), name)
            else:
                self.assertEqual(st["allocation"], before[name], name)
        self.assert_ledger_is_dra_truth()
        self.assertEqual(sorted(kcluster.ledger_used(Env.ext.ledger()).values()), [16 * GIB] * 4)

    def test_whole_devices_on_a_topology_node_get_the_pods_nvlink_set(self):
        """Two DGX-1 topology nodes (the gpushare.io/topology of `nvidia-smi
        topo -m`, 8 GPUs of 16 GiB), each published as a ResourceSlice of 8
        exclusive devices. Round by round a whole-GPU pod (aliyun.com/gpu)
        goes to one node and a claim of as many whole devices to the other:
        the claim's devices are the GPUs the pod got — first the NV2 pair
        {0,3}, then the next NVLink pair, then the four left — and the
        apiserver accepts each allocation (exclusive results: no
        consumedCapacity, no shareID). A claim that no longer finds two free
        GPUs is refused with the pod's reason. The ledger equals the truth."""
        for n in ("pc-tp", "pc-tc"):
            self.node(n, "topology", gpus=8, units=8 * 16, whole=8, labels={"pc-side": n},
                      annotations={"gpushare.io/topology": json.dumps({"links": DGX1_LINKS})})
            self.publish(n, gpus=0, extra=[
                {"name": f"gpu-{i}", "attributes": {"gpushare.io/index": {"int": i}},
                 "capacity": {"memory": {"value": "16Gi"}}} for i in range(8)])
        for i, k in enumerate((2, 2, 4)):
            self.pod(f"w{i}", whole=k, node_selector={"pc-side": "pc-tp"})
            self.wait_bound(2 * i + 1)
            ann = json.loads(self.k.get("pods", self.ns, f"w{i}")["metadata"]["annotations"][TOPO_KEY])
            pod_gpus = sorted(int(g) for g in ann["visibleGPUs"])
            self.claim_of(f"d{i}", count=k)
            self.claim_pod(f"c{i}", f"d{i}", node_selector={"pc-side": "pc-tc"})
            self.wait_bound(2 * i + 2)
            claim = self.allocated(f"d{i}")
            st = claim["status"]
            res = st["allocation"]["devices"]["results"]
            for r in res:
                self.assertEqual((r["request"], r["driver"], r["pool"]), ("gpu", DRIVER, "pc-tc"), r)
                self.assertNotIn("consumedCapacity", r)
                self.assertNotIn("shareID", r)
            gpus = sorted(int(r["device"].split("-")[1]) for r in res)
            self.assertEqual(gpus, pod_gpus, f"round {i}: the claim's devices are the pod's GPUs")
            self.assertEqual(st["reservedFor"], [{"resource": "pods", "name": f"c{i}", "uid": self.k.get(
                "pods", self.ns, f"c{i}")["metadata"]["uid"]}])
            self.assertEqual(st["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]
                             ["values"], ["pc-tc"])
            if k == 2:
                self.assertEqual(DGX1_LINKS[gpus[0]][gpus[1]], "NV2", gpus)
            if i == 0:
                self.assertEqual(gpus, [0, 3])
            self.assert_ledger_is_dra_truth()
        held = self.ledger_claims("pc-tc")
        self.assertEqual(sorted(g for g, _ in held), list(range(8)))
        self.assertEqual(set(held.values()), {16 * GIB})
        # all eight held: a 2-device claim is refused as the pod would be
        self.claim_of("late", count=2)
        self.claim_pod("cl", "late", node_selector={"pc-side": "pc-tc"})
        self.wait_event("cl", "fewer than 2 free whole GPUs")
        self.assertNotIn("allocation", self.k.get("resourceclaims", self.ns, "late").get("status") or {})
        self.assert_ledger_is_dra_truth()

    def prio_claim_pod(self, name, claim, priority_class):
        p = kcluster.gpu_pod(name, ns=self.ns, node_selector={"gpushare-test": self.ns},
                             priority_class=priority_class)
        for c in p["spec"]["containers"]:
            c["resources"] = {"claims": [{"name": "gpu"}]}
        p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
        return self.k.create(p)


if __name__ == "__main__":
    unittest.main()
