"""Issue 33's preemption for claim pods on the real control plane, beyond
one memory claim per pod (test_real_plugin_claims.py has that case):
a preemptor whose claim takes a whole device, a victim holding two
claims, and issue 34's hold for a nominated claim preemptor while its
victims terminate (docs/dra.md "Preempting for claim pods",
docs/preemption.md). gpushare-scheduler places the claims of its
DeviceClass; the slices are published by the test for fake nodes of
2 × 16 GiB; the ledger must equal the truth from the claims' allocations."""
import collections
import re
import unittest

import dracase
import kcluster
import test_real_plugin_claims as placed
from dracase import GIB
from realcase import Env, wait_for

FINALIZER = "gpushare.io/test-keep"  # keeps a victim Terminating until the test removes it


def setUpModule():
    Env.up(unit="1GiB", form="plugin")
    Env.priority_classes({"claim-low": 10, "claim-high": 1000})


def tearDownModule():
    Env.down()


class ClaimPreemption(dracase.DraBase):
    # the claims module's helpers (its test methods are not taken)
    cluster = placed.PlacedClaims.cluster
    exact = placed.PlacedClaims.exact
    claim_of = placed.PlacedClaims.claim_of
    allocated = placed.PlacedClaims.allocated
    assert_allocation = placed.PlacedClaims.assert_allocation
    prio_claim_pod = placed.PlacedClaims.prio_claim_pod

    def pod_of(self, name, claims, priority_class, finalizer=False):
        """A pod using each of claims, on the test's nodes."""
        p = kcluster.gpu_pod(name, ns=self.ns, node_selector={"gpushare-test": self.ns},
                             priority_class=priority_class)
        for c in p["spec"]["containers"]:
            c["resources"] = {"claims": [{"name": f"g{i}"} for i in range(len(claims))]}
        p["spec"]["resourceClaims"] = [{"name": f"g{i}", "resourceClaimName": c}
                                       for i, c in enumerate(claims)]
        if finalizer:
            p["metadata"]["finalizers"] = [FINALIZER]
        return self.k.create(p)

    def gpus_of(self, claim):
        """(node, [gpu]) of an allocated claim."""
        res = self.k.get("resourceclaims", self.ns, claim)["status"]["allocation"]["devices"]["results"]
        return res[0]["pool"], sorted(int(r["device"].split("-")[1]) for r in res)

    def preempted(self):
        return sorted(e["involvedObject"]["name"] for e in self.k.events(self.ns)
                      if e.get("reason") == "Preempted")

    def claims_now(self):
        return {c["metadata"]["name"]: c.get("status") or {} for c in self.k.list("resourceclaims", self.ns)}

    def test_a_whole_device_claim_evicts_exactly_one_gpus_pods(self):
        """Both nodes full: 16 low-priority pods with a 4 GiB claim each,
        four on every GPU. A high-priority pod whose claim takes a whole
        device (no memory asked): exactly the four pods of one GPU are
        evicted, their claims deallocated, every other claim unchanged; the
        preemptor's claim holds that device whole (no consumedCapacity)."""
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
        before = {n: st["allocation"] for n, st in self.claims_now().items()}
        self.claim_of("dev")  # a whole device
        self.prio_claim_pod("bp", "dev", "claim-high")
        self.allocated("dev")
        node, gpus = self.gpus_of("dev")
        res = self.k.get("resourceclaims", self.ns, "dev")["status"]["allocation"]["devices"]["results"]
        self.assertEqual(len(res), 1, res)
        self.assertNotIn("consumedCapacity", res[0])
        bp = wait_for(lambda: (lambda p: p if p["spec"].get("nodeName") else None)(
            self.k.get("pods", self.ns, "bp")), 120, "bp bound", 0.2)
        self.assertEqual(bp["spec"]["nodeName"], node)
        victims = sorted(p for p, at in where.items() if at == (node, gpus[0]))
        self.assertEqual(len(victims), 4, (where, node, gpus))
        wait_for(lambda: self.preempted() == victims, 60, "a Preempted event on each victim")
        self.assertEqual(sorted(p["metadata"]["name"] for p in self.pods()),
                         sorted(["bp"] + [p for p in where if p not in victims]))
        for name, st in self.claims_now().items():
            if name == "dev":
                continue
            if f"lp{name[1:]}" in victims:
                self.assertNotIn("allocation", st, name)
            else:
                self.assertEqual(st["allocation"], before[name], name)
        self.assert_ledger_is_dra_truth()
        self.assertEqual(sorted(kcluster.ledger_used(Env.ext.ledger()).values()), [16 * GIB] * 4)

    def test_a_victim_holding_two_claims_is_one_victim_and_both_are_freed(self):
        """One node: pod q (low priority) uses two 8 GiB claims, both on one
        GPU (binpack); four low-priority 4 GiB claim pods fill the other GPU.
        A 16 GiB high-priority claim pod: q alone is evicted (one victim, one
        Preempted event, rather than four pods), both its claims are
        deallocated, the four others keep theirs, and the preemptor's claim
        takes q's GPU."""
        self.gpu_node("pc-a")
        self.publish("pc-a")
        self.claim_of("qa", "8Gi")
        self.claim_of("qb", "8Gi")
        self.pod_of("q", ["qa", "qb"], "claim-low")
        self.wait_bound(1)
        self.allocated("qa")
        self.allocated("qb")
        q_gpu = self.gpus_of("qa")
        self.assertEqual(self.gpus_of("qb"), q_gpu)
        for i in range(4):
            self.claim_of(f"r{i}", "4Gi")
            self.prio_claim_pod(f"rp{i}", f"r{i}", "claim-low")
        self.wait_bound(5)
        for i in range(4):
            self.allocated(f"r{i}")
            self.assertNotEqual(self.gpus_of(f"r{i}"), q_gpu)
        before = {n: st["allocation"] for n, st in self.claims_now().items()}
        self.claim_of("big", "16Gi")
        self.prio_claim_pod("bp", "big", "claim-high")
        claim = self.allocated("big")
        self.assertEqual(self.assert_allocation(claim, "bp", 16 * GIB, 1), q_gpu)
        wait_for(lambda: self.preempted() == ["q"], 60, "a Preempted event on q")
        self.assertEqual(self.preempted(), ["q"])
        now = self.claims_now()
        for name in ("qa", "qb"):
            self.assertNotIn("allocation", now[name], name)
            self.assertFalse(now[name].get("reservedFor"), name)
        for i in range(4):
            self.assertEqual(now[f"r{i}"]["allocation"], before[f"r{i}"])
        self.assertEqual(sorted(p["metadata"]["name"] for p in self.pods()),
                         ["bp", "rp0", "rp1", "rp2", "rp3"])
        self.assert_ledger_is_dra_truth()

    def test_a_second_pod_cannot_take_the_held_gpu_while_the_victims_terminate(self):
        """One node of two 16 GiB GPUs: a high-priority 16 GiB claim pod on
        one, a low-priority 8 GiB claim pod d8 (with a finalizer: it stays
        Terminating, its claim allocated, until the test lets it go) on the
        other. A 12 GiB high-priority claim pod fits on no GPU: d8 is
        evicted and the preemptor nominated. While d8 terminates, a
        low-priority 8 GiB claim pod and a low-priority 8 GiB gpu-mem pod
        arrive; both fit on d8's GPU right now (8 GiB free) — only the hold
        of the nominated claim preemptor stops them, with the text a gpu-mem
        hold gives. d8 let go, its claim is deallocated, the preemptor's
        claim takes that GPU; the two pods are refused for memory and never
        bound."""
        self.gpu_node("pc-a")
        self.publish("pc-a")
        self.claim_of("h", "16Gi")
        self.prio_claim_pod("hp", "h", "claim-high")
        self.wait_bound(1)
        self.allocated("h")
        self.claim_of("d", "8Gi")
        self.pod_of("d8", ["d"], "claim-low", finalizer=True)
        try:
            self._while_the_victim_terminates()
        finally:
            if self.k.try_get("pods", self.ns, "d8"):
                self.k.patch("pods", self.ns, "d8", {"metadata": {"finalizers": None}})

    def _while_the_victim_terminates(self):
        self.wait_bound(2)
        self.allocated("d")
        d_gpu = self.gpus_of("d")
        self.assertNotEqual(self.gpus_of("h"), d_gpu)
        self.claim_of("big", "12Gi")
        self.prio_claim_pod("big", "big", "claim-high")
        wait_for(lambda: self.k.get("pods", self.ns, "d8")["metadata"].get("deletionTimestamp"), 120,
                 "d8 to be preempted (Terminating)", 0.2)
        wait_for(lambda: self.k.get("pods", self.ns, "big")["status"].get("nominatedNodeName") == "pc-a",
                 120, "big nominated to pc-a", 0.2)
        self.claim_of("qc", "8Gi")
        self.prio_claim_pod("q", "qc", "claim-low")
        self.k.create(kcluster.gpu_pod("m", ns=self.ns, units=8, priority_class="claim-low",
                                       node_selector={"gpushare-test": self.ns}))
        held = re.escape(f"GPUs held for pod {self.ns}/big, nominated here by preemption")
        self.wait_event("q", held)
        self.wait_event("m", held)
        for p in ("q", "m"):
            self.assertFalse(self.k.get("pods", self.ns, p)["spec"].get("nodeName"), p)
        self.assertNotIn("allocation", self.claims_now()["qc"])
        # the ledger: d8's claim still holds its 8 GiB, nothing of q or m
        self.assertEqual(kcluster.ledger_used(Env.ext.ledger()),
                         {("pc-a", self.gpus_of("h")[1][0]): 16 * GIB, ("pc-a", d_gpu[1][0]): 8 * GIB})
        self.assert_ledger_is_dra_truth()
        # d8 goes: its claim is deallocated, the preemptor takes its GPU
        self.k.patch("pods", self.ns, "d8", {"metadata": {"finalizers": None}})
        claim = self.allocated("big")
        self.assertEqual(self.assert_allocation(claim, "big", 12 * GIB, 1), d_gpu)
        wait_for(lambda: self.k.get("pods", self.ns, "big")["spec"].get("nodeName"), 120, "big bound", 0.2)
        self.assertNotIn("allocation", self.claims_now()["d"])
        # q and m tried again once big took the GPU: no room, never bound.
        # q may have been nominated meanwhile with no victims (it fitted
        # when d8 was gone, before big's Reserve), holding its GPU against m
        # (equal priority) until its next failure clears the nomination; no
        # cluster event requeues m when a hold ends (docs/preemption.md), so
        # once q's is gone the node is touched to try m again. Seen once at
        # load (docs/preemption.md "Known gap: the hold lost before the
        # preemptor binds"): m was bound on the freed GPU before big took
        # it, and big preempted m — the only other outcome accepted here.
        self.wait_event("q", "insufficient GPU memory on any single GPU")
        wait_for(lambda: not self.k.get("pods", self.ns, "q")["status"].get("nominatedNodeName"),
                 120, "q not nominated", 0.2)
        self.cp.admin.patch("nodes", None, "pc-a", {"metadata": {"labels": {"gpushare-test-retry": "1"}}})

        def m_outcome():
            if not self.k.try_get("pods", self.ns, "m"):
                return "preempted"
            msgs = [e.get("message", "") for e in self.k.events(self.ns, "m")
                    if e.get("reason") == "FailedScheduling"]
            return "refused" if any("insufficient GPU memory on any single GPU" in t for t in msgs) else None
        outcome = wait_for(m_outcome, 120, "m refused for memory, or preempted by big", 0.2)
        if outcome == "preempted":
            wait_for(lambda: any(e.get("reason") == "Preempted" for e in self.k.events(self.ns, "m")),
                     60, "m's Preempted event", 0.2)
        else:
            self.assertFalse(self.k.get("pods", self.ns, "m")["spec"].get("nodeName"), "m")
        self.assertFalse(self.k.get("pods", self.ns, "q")["spec"].get("nodeName"), "q")
        self.assertEqual(sorted(p["metadata"]["name"] for p in self.pods()),
                         sorted(["big", "hp", "q"] + ([] if outcome == "preempted" else ["m"])))
        self.assert_ledger_is_dra_truth()


if __name__ == "__main__":
    unittest.main()
