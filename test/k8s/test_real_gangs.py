"""Gangs and their lifecycles under the real kube-scheduler and the real
controllers (issue 13, items 1-4; docs/gangs.md). Each test starts its own
extender on the port kube-scheduler calls, so a test can restart it."""
import datetime
import os
import re
import signal
import sys
import time
import unittest

from realcase import Env, LeastPrivilege, OwnExtenders, RealCase, metric, topo_alloc, wait_for

TIMEOUT_S = 20  # gangTimeoutSeconds of this module


def setUpModule():
    Env.up(unit="1GiB", start_extender=False, config={"gangTimeoutSeconds": str(TIMEOUT_S)})


def tearDownModule():
    Env.down()


class Gangs(OwnExtenders):
    def start_ext(self):
        return super().start_ext().wait_ready()

    def member(self, name, job, replicas, gpus, **kw):
        labels = {"gpu-topology": job, "gpu-topology-replica": str(replicas), "job": job}
        return self.pod(name, whole=gpus, labels=labels, **kw)

    def bound(self, selector=None):
        return [p for p in self.pods(selector) if p["spec"].get("nodeName")]

    def owned(self, ext, node):
        """GPU index -> owner name in the extender's ledger."""
        led = ext.ledger(node)
        return {g["index"]: (g.get("owner") or {}).get("name") for g in led["nodes"][0]["gpus"]
                if g.get("owner")}

    def extender_events(self, pod, reason):
        return [e for e in self.k.events(self.ns, pod) if e.get("reason") == reason]

    def test_no_member_is_bound_before_all_members_exist(self):
        """Item 1: one member of three alone stays Pending with how many are
        present and holds nothing; the last one's arrival binds all three
        within seconds of each other."""
        ext = self.start_ext()
        self.topo_node("gpu-topo-g")
        self.member("trainer-0", "trio", 3, 1)
        self.wait_event("trainer-0", r"0/1 nodes are available: 1 gang [a-z-]+/trio: 1 of 3 members present")
        self.member("trainer-1", "trio", 3, 1)
        self.wait_event("trainer-1", r"gang [a-z-]+/trio: 2 of 3 members present")
        # waiting: nothing bound, nothing held, no plan
        self.assertEqual(self.bound(), [])
        self.assertEqual(self.owned(ext, "gpu-topo-g"), {})
        self.assertFalse(ext.ledger().get("gangs"))
        self.member("trainer-2", "trio", 3, 1)
        bound = self.wait_bound(3, "job=trio")
        gpus = sorted(int(topo_alloc(p)["allocatedGPUs"]["0"][0]) for p in bound)
        self.assertEqual(len(set(gpus)), 3)
        self.assertEqual(sorted(self.owned(ext, "gpu-topo-g")), gpus)
        # bound together: the Bindings within seconds of each other
        times = []
        for p in bound:
            (b,) = self.cp.audit_bindings(p["metadata"]["name"])
            times.append(time.mktime(time.strptime(b["stageTimestamp"][:19], "%Y-%m-%dT%H:%M:%S")))
        self.assertLessEqual(max(times) - min(times), 15, times)
        # measured (docs/gangs.md "The extender's limit"): how far apart the
        # members reach bind, to the microsecond
        exact = [datetime.datetime.fromisoformat(self.cp.audit_bindings(p["metadata"]["name"])[0]
                                                 ["stageTimestamp"].replace("Z", "+00:00")) for p in bound]
        print(f"\nmeasured: the trio's Bindings within {(max(exact) - min(exact)).total_seconds():.3f} s "
              f"(load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
        self.assert_ledger_is_truth(ext)

    def test_a_replaced_member_of_a_running_job_is_planned_into_the_free_gpus(self):
        """Item 2: 2 x 4 GPUs on an 8-GPU node; a member deleted and created
        again gets the 4 free GPUs; the same after an extender restart."""
        ext = self.start_ext()
        self.topo_node("gpu-topo-r")
        self.member("w-0", "pair", 2, 4)
        self.member("w-1", "pair", 2, 4)
        self.wait_bound(2, "job=pair")
        self.assertEqual(len(self.owned(ext, "gpu-topo-r")), 8)
        # complete: listed as running (every member placed), no longer waiting
        wait_for(lambda: [(g["job"], g["placed"]) for g in ext.ledger()["gangs"]] ==
                 [(f"{self.ns}/pair", 2)] and metric(ext.metrics(), "gpushare_gangs_waiting") == 0,
                 30, "the complete gang to be listed as running")
        # one member ends; its replacement arrives
        self.k.delete("pods", self.ns, "w-1", grace=0)
        wait_for(lambda: len(self.owned(ext, "gpu-topo-r")) == 4, 30, "w-1's GPUs to be free")
        self.member("w-2", "pair", 2, 4)
        (p,) = [p for p in self.wait_bound(2, "job=pair") if p["metadata"]["name"] == "w-2"]
        self.assertEqual(p["spec"]["nodeName"], "gpu-topo-r")
        self.assertEqual(len(self.owned(ext, "gpu-topo-r")), 8)
        # the extender restarts; another member is replaced
        ext.kill(signal.SIGTERM)
        ext = self.start_ext()
        self.assertEqual(len(self.owned(ext, "gpu-topo-r")), 8)
        self.k.delete("pods", self.ns, "w-0", grace=0)
        wait_for(lambda: len(self.owned(ext, "gpu-topo-r")) == 4, 30, "w-0's GPUs to be free")
        self.member("w-3", "pair", 2, 4)
        bound = self.wait_bound(2, "job=pair")
        self.assertEqual(sorted(p["metadata"]["name"] for p in bound), ["w-2", "w-3"])
        gpus = [sorted(topo_alloc(p)["allocatedGPUs"]["0"]) for p in bound]
        self.assertEqual(sorted(g for gs in gpus for g in gs), [str(i) for i in range(8)])
        self.assert_ledger_is_truth(ext)

    def test_members_that_disagree_are_refused_before_any_binds(self):
        """Item 3: a member asking 2 GPUs and one asking 4: neither binds, both
        are told why, as unresolvable; with the odd one replaced the job runs."""
        ext = self.start_ext()
        self.topo_node("gpu-topo-m")
        self.member("ask-2", "mixed", 2, 2)
        self.wait_event("ask-2", r"gang [a-z-]+/mixed: 1 of 2 members present")
        self.member("ask-4", "mixed", 2, 4)
        want = (r"gang [a-z-]+/mixed: members disagree: pod ask-2 asks 2 GPUs x 2 replicas, "
                r"pod ask-4 asks 4 GPUs x 2 replicas")
        ev = self.wait_event("ask-4", want)
        self.assertIn("Preemption is not helpful", ev["message"])  # unresolvable
        self.assertEqual(self.bound(), [])
        self.assertEqual(self.owned(ext, "gpu-topo-m"), {})
        self.k.delete("pods", self.ns, "ask-4", grace=0)
        self.member("ask-2b", "mixed", 2, 2)
        bound = self.wait_bound(2, "job=mixed")
        self.assertEqual(sorted(p["metadata"]["name"] for p in bound), ["ask-2", "ask-2b"])
        self.assert_ledger_is_truth(ext)

    def test_a_plan_not_bound_in_time_is_released_with_events(self):
        """Item 4: a member kube-scheduler cannot put on its slot's node (its
        nodeSelector excludes it) keeps the plan from completing; after
        gangTimeoutSeconds the reserved GPUs are released, the member gets a
        Warning Event, the extender logs it and counts it."""
        ext = self.start_ext()
        self.topo_node("gpu-topo-t")
        # the stuck one first: the member that comes last must reach the
        # extender's filter to start the job (docs/gangs.md)
        self.member("stuck-1", "late", 2, 4, node_selector={"no-such-label": "x"})
        self.wait_event("stuck-1", r"didn't match Pod's node affinity/selector")
        self.member("ok-0", "late", 2, 4)
        (p,) = self.wait_bound(1, "job=late")
        self.assertEqual(p["metadata"]["name"], "ok-0")
        # the plan holds the other slot meanwhile
        self.assertEqual(len(self.owned(ext, "gpu-topo-t")), 8)
        self.assertEqual(metric(ext.metrics(), "gpushare_gangs_waiting"), 1)
        ev = wait_for(lambda: self.extender_events("stuck-1", "GangTimeout"), TIMEOUT_S + 60,
                      "the GangTimeout event", 0.5)[0]
        self.assertEqual(ev["type"], "Warning")
        self.assertRegex(ev["message"], r"^gang [a-z-]+/late: 1 of 2 members bound within "
                                        rf"gangTimeoutSeconds \({TIMEOUT_S} s\)")
        self.assertEqual(self.extender_events("ok-0", "GangTimeout"), [])  # bound: not told
        self.assertEqual(sorted(self.owned(ext, "gpu-topo-t").values()), ["ok-0"] * 4)
        self.assertEqual(metric(ext.metrics(), "gpushare_gang_timeouts_total"), 1)
        self.assertEqual(metric(ext.metrics(), "gpushare_gangs_waiting"), 0)
        self.assertTrue(re.search(r'msg="gang timed out" job=[a-z-]+/late', ext.proc.tail(20000)),
                        ext.proc.tail(2000))
        self.assert_ledger_is_truth(ext)


class ZzLeastPrivilege(LeastPrivilege, RealCase):
    """The module's RBAC check, last (realcase.LeastPrivilege). Its own
    extender has made the module's calls; start one so the role is checked
    against a running process too."""


if __name__ == "__main__":
    unittest.main()
