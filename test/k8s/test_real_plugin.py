"""The in-process plugin (issue 15, docs/plugin.md): the seed scenarios and
refusals of test_real_scenarios.py, unchanged in what they assert, with
gpushare-scheduler (kube-scheduler v1.37.2 + the GpuShare plugin over the C
core) as the cluster's scheduler and no extender. Unit 128MiB."""
import json
import re
import time
import unittest

import kcluster
import test_real_scenarios as scenarios
from realcase import Env, RealCase, alloc_gpus, metric, topo_alloc, wait_for

GPU16 = scenarios.GPU16  # a 16 GiB GPU in 128 MiB units


FINALIZER = "gpushare.io/test-keep"  # keeps a victim Terminating until the test removes it
TIMEOUT_S = 20  # gangTimeoutSeconds in the ConfigMap
PLUGIN_SA = "system:serviceaccount:kube-system:gpushare-scheduler"


def setUpModule():
    # the configuration is the ConfigMap's only (the args as shipped carry
    # none of its keys)
    Env.up(unit="128MiB", form="plugin", config={"gangTimeoutSeconds": str(TIMEOUT_S)})
    Env.priority_classes({"low": 10, "high": 1000}, preempting=False)


def tearDownModule():
    Env.down()


class PluginSeedScenarios(scenarios.SeedScenarios):
    """Every seed scenario through the plugin."""


class PluginRefusals(scenarios.Refusals):
    """Every refusal through the plugin: the reasons reach the pod's event."""


class PluginOnly(RealCase):
    """What only the in-process form can do."""

    def bound_pod(self, name):
        return wait_for(lambda: (lambda q: q if q["spec"].get("nodeName") else None)(
            self.k.get("pods", self.ns, name)), 180, f"{name} bound", 0.2)

    def test_gang_members_wait_in_permit_and_bind_together(self):
        """A 4-replica job whose 4th member comes later: no member is bound
        before it exists; then all four are reserved, wait in Permit and bind
        together (Binding times from the audit log: under 2 s apart on a quiet
        machine; the bound allows 10 s so that the test holds at load 10)."""
        self.topo_node("gpu-topo-p")
        labels = {"gpu-topology": "quad", "gpu-topology-replica": "4", "job": "quad"}
        for i in range(3):
            self.pod(f"m{i}", whole=1, labels=labels)
            self.wait_event(f"m{i}", rf"gang [a-z-]+/quad: {i + 1} of 4 members present")
        self.assertEqual([p for p in self.pods() if p["spec"].get("nodeName")], [])
        t_last = time.time()
        self.pod("m3", whole=1, labels=labels)
        bound = self.wait_bound(4, "job=quad")
        gpus = sorted(int(topo_alloc(p)["allocatedGPUs"]["0"][0]) for p in bound)
        self.assertEqual(len(set(gpus)), 4)
        times = []
        for p in bound:
            (b,) = self.cp.audit_bindings(p["metadata"]["name"])
            times.append(time.mktime(time.strptime(b["stageTimestamp"][:19], "%Y-%m-%dT%H:%M:%S"))
                         - time.timezone)
        self.assertLessEqual(max(times) - min(times), 10, times)
        self.assertGreaterEqual(min(times), int(t_last) - 1)
        self.assert_ledger_is_truth()

    def test_preemption_where_the_extender_cannot(self):
        """Two 16 GiB GPUs: 4 + 4 + 4 GiB of low priority on one, 8 GiB on the
        other; a 12 GiB high-priority pod fits by node totals (12 free) but on
        no GPU, so kube-scheduler's own preemption finds no victims and never
        offers the node to an extender. The plugin's PostFilter asks the core:
        the 8 GiB pod goes (one pod, the cheaper GPU) and the preemptor is
        bound there; nothing else is evicted."""
        self.node("gpu-pf", "share", gpus=2, units=2 * GPU16, labels={"pf": "x"})
        for name, units in [("a4", 32), ("b4", 32), ("c4", 32), ("d8", 64)]:
            self.pod(name, units=units, priority_class="low", node_selector={"pf": "x"})
            self.bound_pod(name)
        gpu_of = {p["metadata"]["name"]: alloc_gpus(p) for p in self.pods()}
        self.assertEqual(gpu_of, {"a4": [0], "b4": [0], "c4": [0], "d8": [1]})
        # the victim's updates until it is deleted; the preemptor's until it
        # is bound (issue 30: the victim is marked as DefaultPreemption marks
        # its victims before it is deleted, and the preemptor is nominated)
        d8, d8_events = self.watch_pod("d8", lambda e: e["type"] == "DELETED")
        bigw, big_events = self.watch_pod("big", lambda e: e["object"]["spec"].get("nodeName"))
        self.pod("big", units=96, priority_class="high", node_selector={"pf": "x"})
        big = self.bound_pod("big")
        self.assertEqual(alloc_gpus(big), [1])
        self.assertEqual(sorted(p["metadata"]["name"] for p in self.pods()), ["a4", "b4", "big", "c4"])
        self.assert_ledger_is_truth()
        for t in (d8, bigw):
            t.join(170)
        self.assertEqual(d8_events[-1]["type"], "DELETED", [e["type"] for e in d8_events])

        def disruption(e):
            return [c for c in e["object"]["status"].get("conditions", []) if c["type"] == "DisruptionTarget"]
        marked = [i for i, e in enumerate(d8_events) if disruption(e)]
        ending = [i for i, e in enumerate(d8_events)
                  if e["type"] == "DELETED" or e["object"]["metadata"].get("deletionTimestamp")]
        self.assertTrue(marked, "d8 never carried DisruptionTarget")
        self.assertLess(marked[0], ending[0], "DisruptionTarget set only after the deletion began")
        (cond,) = disruption(d8_events[marked[0]])
        self.assertEqual((cond["status"], cond["reason"], cond["message"]),
                         ("True", "PreemptionByScheduler",  # DefaultPreemption's words
                          f"{big['spec']['schedulerName']}: preempting to accommodate a higher priority pod"))
        self.assertIn("gpu-pf", [e["object"]["status"].get("nominatedNodeName") for e in big_events],
                      "big was never nominated to gpu-pf")


class PluginOperations(RealCase):
    """The extender's operator surface, from the plugin: the ConfigMap read
    at start-up and watched (pendingUnit, unhealthy GPUs), /debug/ledger,
    inspect and /metrics on the debug listener, GangTimeout Events."""

    def set_configmap(self, name, data):
        self.k.apply({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": name, "namespace": "kube-system"}, "data": data})

    def test_the_configmap_is_the_configuration_and_a_unit_change_is_pending(self):
        self.assertEqual(Env.ext.ledger()["unit"], "128MiB")
        try:
            Env.set_unit("1GiB", {"gangTimeoutSeconds": str(TIMEOUT_S)})
            wait_for(lambda: Env.ext.ledger().get("pendingUnit") == "1GiB", 60, "pendingUnit 1GiB")
            self.assertEqual(metric(Env.ext.metrics(), "gpushare_pending_unit_mib"), 1024)
            self.assertEqual(Env.ext.ledger()["unit"], "128MiB")  # until a restart
        finally:
            Env.set_unit("128MiB", {"gangTimeoutSeconds": str(TIMEOUT_S)})
        wait_for(lambda: "pendingUnit" not in Env.ext.ledger(), 60, "pendingUnit gone")
        self.assertEqual(metric(Env.ext.metrics(), "gpushare_pending_unit_mib"), 0)

    def test_a_bad_configmap_value_is_reported_and_changes_nothing(self):
        """Issue 16 item 1 through the plugin: the running configuration
        stays; configError, the metric and a Warning Event on the ConfigMap
        say why; fixed, they clear."""
        try:
            Env.set_unit("128MiB", {"gangTimeoutSeconds": str(TIMEOUT_S), "nodePolicy": "bogus"})
            wait_for(lambda: "nodePolicy" in Env.ext.ledger().get("configError", ""), 60, "configError")
            self.assertEqual(metric(Env.ext.metrics(), "gpushare_config_invalid"), 1)
            ev = wait_for(lambda: [e for e in self.k.events("kube-system", "gpushare-config")
                                   if e.get("reason") == "InvalidConfiguration"], 60,
                          "the InvalidConfiguration Event")[0]
            self.assertEqual((ev["type"], ev["involvedObject"]["kind"]), ("Warning", "ConfigMap"))
            self.assertIn('invalid nodePolicy "bogus"', ev["message"])
            self.assertEqual(Env.ext.ledger()["unit"], "128MiB")
        finally:
            Env.set_unit("128MiB", {"gangTimeoutSeconds": str(TIMEOUT_S)})
        wait_for(lambda: "configError" not in Env.ext.ledger(), 60, "configError cleared")
        self.assertEqual(metric(Env.ext.metrics(), "gpushare_config_invalid"), 0)

    def test_unhealthy_gpus_inspect_and_metrics(self):
        self.node("gpu-ops", "share", gpus=2, units=2 * GPU16, labels={"ops": "x"})
        self.set_configmap("unhealthy-gpu-gpu-ops", {"gpus": "0"})
        try:
            wait_for(lambda: Env.ext.ledger("gpu-ops")["nodes"] and any(
                not g["healthy"] for g in Env.ext.ledger("gpu-ops")["nodes"][0]["gpus"]),
                60, "GPU 0 of gpu-ops unhealthy")
            self.pod("small", units=8, node_selector={"ops": "x"})
            p = wait_for(lambda: (lambda q: q if q["spec"].get("nodeName") else None)(
                self.k.get("pods", self.ns, "small")), 120, "small bound", 0.2)
            self.assertEqual(alloc_gpus(p), [1])  # binpack would take GPU 0
        finally:
            self.k.delete("configmaps", "kube-system", "unhealthy-gpu-gpu-ops")
        st, body = Env.ext.get("/gpushare-scheduler/inspect/gpu-ops")
        self.assertEqual(st, 200, body)
        self.assertEqual(json.loads(body), {"nodes": [{
            "name": "gpu-ops", "totalGPU": 2 * GPU16, "usedGPU": 8, "devs": [
                {"id": 0, "totalGPU": GPU16, "usedGPU": 0, "pods": []},
                {"id": 1, "totalGPU": GPU16, "usedGPU": 8,
                 "pods": [{"name": "small", "namespace": self.ns, "usedGPU": 8}]}]}]})
        st, body = Env.ext.get("/gpushare-scheduler/inspect/no-such-node")
        self.assertEqual((st, json.loads(body)), (404, {"error": "node no-such-node is unknown to gpushare"}))
        st, body = Env.ext.get("/debug/ledger?node=gpu-ops")
        self.assertEqual([n["name"] for n in json.loads(body)["nodes"]], ["gpu-ops"])
        text = Env.ext.metrics()
        self.assertEqual(metric(text, "gpushare_gpu_memory_used_mib", node="gpu-ops", gpu="1"), 1024)
        self.assertEqual(metric(text, "gpushare_gpu_memory_total_mib", node="gpu-ops", gpu="0"), 16384)
        self.assertEqual(metric(text, "gpushare_gpu_pods", node="gpu-ops", gpu="1"), 1)

    def test_a_gang_not_complete_in_time_is_released_with_events(self):
        """A member kube-scheduler's own filters keep off every node: its
        sibling, reserved, waits in Permit; after gangTimeoutSeconds the core
        releases the plan and the plugin posts GangTimeout on each member not
        bound and logs the job. Nothing is bound."""
        self.topo_node("gpu-topo-pt")
        labels = {"gpu-topology": "late", "gpu-topology-replica": "2", "job": "late"}
        self.pod("stuck-1", whole=4, labels=labels, node_selector={"no-such-label": "x"})
        self.pod("ok-0", whole=4, labels=labels)

        def timeout_event(pod):
            return [e for e in self.k.events(self.ns, pod) if e.get("reason") == "GangTimeout"]
        ev = wait_for(lambda: timeout_event("stuck-1"), TIMEOUT_S + 60, "GangTimeout on stuck-1", 0.5)[0]
        self.assertEqual(ev["type"], "Warning")
        self.assertRegex(ev["message"], r"^gang [a-z-]+/late: 0 of 2 members bound within "
                                        rf"gangTimeoutSeconds \({TIMEOUT_S} s\)")
        self.assertEqual([p for p in self.pods() if p["spec"].get("nodeName")], [])
        self.assertTrue(re.search(r'gang timed out.*job="[a-z-]+/late"',
                                  Env.ext.proc.tail(200000)), Env.ext.proc.tail(2000))
        self.assertGreaterEqual(metric(Env.ext.metrics(), "gpushare_gang_timeouts_total"), 1)


class PluginNominatedHold(RealCase):
    """A nominated preemptor's GPUs are held while its victims terminate
    (docs/preemption.md "Nominated pods' GPUs are held")."""

    def test_a_second_pod_cannot_take_the_nominated_gpu_while_the_victims_terminate(self):
        """Four 16 GiB GPUs: 12 GiB of high priority on three, an 8 GiB
        low-priority pod (with a finalizer, so that it stays Terminating
        until the test lets it go) on the fourth. A 12 GiB high-priority
        preemptor fits by node totals but on no GPU: the plugin evicts the
        8 GiB pod and the preemptor is nominated. While the victim
        terminates, an 8 GiB pod of low priority arrives: it fits on the
        victim's GPU now (8 GiB free) and by node totals even with the
        preemptor added (kube-scheduler's own hold of nominated pods passes
        it), so only gpushare's hold stops it — and would it land there, the
        preemptor would never fit. The victim let go, the preemptor is bound
        on that GPU; the second pod stays pending, never bound."""
        self.node("gpu-nh", "share", gpus=4, units=4 * GPU16, labels={"nh": "x"})
        sel = {"nh": "x"}
        for name in ("h0", "h1", "h2"):
            self.pod(name, units=96, priority_class="high", node_selector=sel)
            wait_for(lambda n=name: self.k.get("pods", self.ns, n)["spec"].get("nodeName"), 120,
                     f"{name} bound", 0.2)
        victim = kcluster.gpu_pod("d8", ns=self.ns, units=64, priority_class="low", node_selector=sel)
        victim["metadata"]["finalizers"] = [FINALIZER]
        self.k.create(victim)
        try:
            self._while_the_victim_terminates(sel)
        finally:
            if self.k.try_get("pods", self.ns, "d8"):
                self.k.patch("pods", self.ns, "d8", {"metadata": {"finalizers": None}})

    def _while_the_victim_terminates(self, sel):
        wait_for(lambda: self.k.get("pods", self.ns, "d8")["spec"].get("nodeName"), 120, "d8 bound", 0.2)
        gpu_of = {p["metadata"]["name"]: alloc_gpus(p) for p in self.pods()}
        self.assertEqual(gpu_of, {"h0": [0], "h1": [1], "h2": [2], "d8": [3]})
        self.pod("big", units=96, priority_class="high", node_selector=sel)
        wait_for(lambda: self.k.get("pods", self.ns, "d8")["metadata"].get("deletionTimestamp"), 120,
                 "d8 to be preempted (Terminating)", 0.2)
        wait_for(lambda: self.k.get("pods", self.ns, "big")["status"].get("nominatedNodeName") == "gpu-nh",
                 120, "big nominated to gpu-nh", 0.2)
        self.pod("q", units=64, priority_class="low", node_selector=sel)
        self.wait_event("q", re.escape(f"GPUs held for pod {self.ns}/big, nominated here by preemption"))
        self.assertFalse(self.k.get("pods", self.ns, "q")["spec"].get("nodeName"))
        # the ledger: the victim still holds its 8 GiB on GPU 3, nothing of q
        self.assertEqual({g["index"]: g["usedMiB"] for n in Env.ext.ledger()["nodes"] if n["name"] == "gpu-nh"
                          for g in n["gpus"]}, {0: 12288, 1: 12288, 2: 12288, 3: 8192})
        self.assert_ledger_is_truth()
        # the victim goes: the preemptor takes GPU 3, q never does
        self.k.patch("pods", self.ns, "d8", {"metadata": {"finalizers": None}})
        try:
            big = wait_for(lambda: (lambda b: b if b["spec"].get("nodeName") else None)(
                self.k.get("pods", self.ns, "big")), 120, "big bound", 0.2)
        except AssertionError:
            print(self.explain(), "\n", json.dumps(Env.ext.ledger("gpu-nh")), flush=True)
            raise
        self.assertEqual((big["spec"]["nodeName"], alloc_gpus(big)), ("gpu-nh", [3]))
        # q was tried again after big took GPU 3 (big's binding requeues it)
        self.wait_event("q", "insufficient GPU memory on any single GPU")
        self.assertFalse(self.k.get("pods", self.ns, "q")["spec"].get("nodeName"))
        self.assertEqual(sorted(p["metadata"]["name"] for p in self.pods()), ["big", "h0", "h1", "h2", "q"])
        self.assertEqual({g["index"]: g["usedMiB"] for n in Env.ext.ledger()["nodes"] if n["name"] == "gpu-nh"
                          for g in n["gpus"]}, {0: 12288, 1: 12288, 2: 12288, 3: 12288})
        self.assert_ledger_is_truth()


class ZzPluginLeastPrivilege(RealCase):
    """Last in the module: gpushare-scheduler ran as deploy/plugin's
    ServiceAccount (kube-scheduler's roles plus gpushare's) and the
    apiserver never denied it anything."""

    def test_the_plugin_was_never_denied(self):
        entries = [e for e in self.cp.audit(user=PLUGIN_SA)
                   if e.get("stage") in ("ResponseStarted", "ResponseComplete")]
        # an Event for a pod whose test namespace is being deleted is refused
        # by the NamespaceLifecycle admission (403 too), not by RBAC
        denied = [f"{e.get('verb')} {e.get('requestURI')}: {e['responseStatus'].get('message')}"
                  for e in entries if e.get("responseStatus", {}).get("code") == 403
                  and "because it is being terminated" not in e["responseStatus"].get("message", "")]
        self.assertEqual(denied, [])
        used = {("/".join(filter(None, [(e.get("objectRef") or {}).get("resource"),
                                        (e.get("objectRef") or {}).get("subresource")])),
                 e.get("verb")) for e in entries}
        # (v1.37's informers list by watching: WatchList)
        for want in [("pods", "watch"), ("nodes", "watch"), ("pods/binding", "create"),
                     ("configmaps", "get"), ("configmaps", "watch"), ("leases", "update")]:
            self.assertIn(want, used, sorted(map(str, used)))


if __name__ == "__main__":
    unittest.main()
