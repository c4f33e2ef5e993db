"""Shared set-up of the real control-plane tests: one control plane per test
module (started in setUpModule), one extender, a namespace per test, and the
checks every scenario makes (docs/contract.md §4 annotations, ledger == truth, RBAC
seen in the audit log)."""
import json
import os
import re
import signal
import tempfile
import threading
import time
import unittest

import yaml

import kcluster
from kcluster import ControlPlane, Extender, KubeError, wait_for

# Annotation keys a memory pod's Binding carries (docs/api.md, "What bind writes").
MEM_KEYS = {
    "scheduler.framework.gpushare.allocation", "scheduler.framework.gpushare.assigned",
    "scheduler.framework.gpushare.assume-time", "gpushare.alibabacloud.com/device-resource",
    "ALIYUN_COM_GPU_MEM_IDX", "ALIYUN_COM_GPU_MEM_POD", "ALIYUN_COM_GPU_MEM_DEV",
    "ALIYUN_COM_GPU_MEM_ASSIGNED", "ALIYUN_COM_GPU_MEM_ASSUME_TIME", "gpushare.io/unit-mib",
}
TOPO_KEY = "gputopology.alibabacloud.com/allocation"
BIND_TIMEOUT = float(os.environ.get("GS_K8S_BIND_TIMEOUT", "120"))

DGX1_LINKS = kcluster.gsutil.DGX1_LINKS


class PluginView:
    """The in-process plugin's side of what the tests read from the
    extender: /debug/ledger on the plugin's debug listener, and the
    scheduler's log (docs/plugin.md)."""

    def __init__(self, cp):
        self.cp = cp
        self.base = f"http://127.0.0.1:{cp.plugin_debug}"
        self.proc = cp.procs["kube-scheduler"]

    def ledger(self, node=None):
        st, body = kcluster.gsutil.http_status(self.base, "/debug/ledger")
        led = json.loads(body)
        if node is not None:
            led["nodes"] = [n for n in led["nodes"] if n["name"] == node]
        return led

    def kill(self, sig=signal.SIGKILL):
        """Stops gpushare-scheduler (OwnExtenders.start_ext starts it again)."""
        return self.proc.stop(sig)

    def get(self, path):
        """(status, body text) of GET path on the plugin's debug listener."""
        st, body = kcluster.gsutil.http_status(self.base, path)
        return st, body.decode()

    def metrics(self):
        return self.get("/metrics")[1]

    def wait_ready(self):
        def up():
            if not self.proc.alive():
                raise AssertionError("gpushare-scheduler exited:\n" + self.proc.tail())
            return kcluster.gsutil.http_status(self.base, "/debug/ledger")[0] == 200
        wait_for(up, 60, "the plugin's /debug/ledger")
        return self


class Env:
    """One control plane and its extender (or, with GS_K8S_FORM=plugin or
    form="plugin", gpushare-scheduler with the in-process plugin and no
    extender) for a test module."""
    cp = None
    ext = None
    tmp = None
    form = "extender"

    @classmethod
    def up(cls, unit="1GiB", ext_args=(), start_extender=True, config=None, form=None, **cp_kw):
        cls.form = form or os.environ.get("GS_K8S_FORM", "extender")
        cls.tmp = tempfile.TemporaryDirectory(prefix="gs-k8s-")
        if cls.form == "plugin":
            cp_kw.setdefault("scheduler_config", os.path.join(
                kcluster.SOURCE, "deploy", "scheduler", "gpushare-scheduler-config.yaml"))
            cp_kw.setdefault("scheduler_binary",
                             os.path.join(kcluster.k8s_bin_dir(), "gpushare-scheduler"))
        cls.cp = ControlPlane(cls.tmp.name, **cp_kw)
        if cls.form == "plugin":
            # as shipped: the configuration is the ConfigMap's, read at
            # start-up (so it exists first), the plugin runs as its own
            # ServiceAccount
            cls.cp.before_scheduler.append(cls.configmap(unit, config))
            cls.cp.scheduler_sa = "gpushare-scheduler"
        try:
            cls.cp.start()
            cls.set_unit(unit, config)
            if cls.form == "plugin":
                cls.ext = PluginView(cls.cp).wait_ready()
            elif start_extender:
                cls.ext = Extender(cls.cp, args=ext_args).wait_ready()
        except BaseException:
            print(cls.cp.dump_logs(), flush=True)
            cls.down()
            raise

    @staticmethod
    def configmap(unit, config=None):
        """The ConfigMap: gpuMemoryUnit and any other keys (config)."""
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "gpushare-config", "namespace": "kube-system"},
                "data": {"gpuMemoryUnit": unit, **(config or {})}}

    @classmethod
    def set_unit(cls, unit, config=None):
        cls.cp.admin.apply(cls.configmap(unit, config))

    @classmethod
    def priority_classes(cls, classes, preempting=True):
        """A PriorityClass of each name → value in classes; preempting: with
        preemptionPolicy PreemptLowerPriority (else the field left out)."""
        for name, value in classes.items():
            obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                   "metadata": {"name": name}, "value": value}
            if preempting:
                obj["preemptionPolicy"] = "PreemptLowerPriority"
            cls.cp.admin.apply(obj)

    @classmethod
    def down(cls):
        problems = []
        if cls.cp:
            for key, p in list(cls.cp.procs.items()):
                if key.startswith("gpushare-extender") and p.alive():
                    p.stop()
            if os.environ.get("GS_K8S_KEEP_LOGS"):
                keep = os.environ["GS_K8S_KEEP_LOGS"]
                os.makedirs(keep, exist_ok=True)
                for name in os.listdir(cls.cp.dir):
                    if name.endswith(".log"):
                        os.replace(os.path.join(cls.cp.dir, name), os.path.join(keep, name))
            cls.cp.stop()
        if cls.tmp:
            cls.tmp.cleanup()
        cls.cp = cls.ext = cls.tmp = None
        return problems


def rbac_rules():
    """(namespace or None, apiGroup, resource, verb, resourceName or None) the
    shipped deploy/rbac.yaml grants the extender."""
    with open(os.path.join(kcluster.SOURCE, "deploy", "rbac.yaml")) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    grants = []
    for d in docs:
        if d["kind"] not in ("ClusterRole", "Role"):
            continue
        ns = d["metadata"].get("namespace") if d["kind"] == "Role" else None
        for r in d["rules"]:
            for g in r["apiGroups"]:
                for res in r["resources"]:
                    for v in r["verbs"]:
                        for rn in r.get("resourceNames") or [None]:
                            grants.append((ns, g, res, v, rn))
    return grants


def audit_problems(cp):
    """Every request of the extender's ServiceAccount in the audit log: none
    denied, each one a verb/resource the shipped role grants."""
    grants = rbac_rules()
    seen, problems = set(), []
    for e in cp.audit():
        # a watch is logged when its response starts (it completes only
        # when it ends)
        if e.get("stage") not in ("ResponseStarted", "ResponseComplete"):
            continue
        code = e.get("responseStatus", {}).get("code")
        ref = e.get("objectRef")
        if code == 403:
            problems.append(f"denied: {e.get('verb')} {e.get('requestURI')}")
        if not ref:
            continue  # non-resource URLs (/version, /api): discovery roles
        res = ref.get("resource", "") + ("/" + ref["subresource"] if ref.get("subresource") else "")
        key = (ref.get("namespace"), ref.get("apiGroup", ""), res, e.get("verb"), ref.get("name"))
        seen.add(key)
        ok = any((g_ns is None or g_ns == key[0]) and g_grp == key[1] and g_res == key[2]
                 and g_verb == key[3] and (g_name is None or g_name == key[4])
                 for g_ns, g_grp, g_res, g_verb, g_name in grants)
        if not ok:
            problems.append(f"not granted by deploy/rbac.yaml: {key}")
    return problems, seen


class RealCase(unittest.TestCase):
    """A test in its own namespace; its nodes and pods are removed after it."""

    def setUp(self):
        self.cp = Env.cp
        self.k = Env.cp.admin
        self.ns = re.sub(r"[^a-z0-9-]", "-", self.id().split(".")[-1].lower().replace("_", "-"))[:50].strip("-")
        self.k.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.ns}})
        wait_for(lambda: self.k.try_get("serviceaccounts", self.ns, "default"), 60,
                 f"ServiceAccount {self.ns}/default")
        self.nodes = []

    def tearDown(self):
        # nodes first, so the test's controllers cannot get new pods bound
        for n in self.nodes:
            self.k.delete("nodes", None, n)
        self.k.delete("namespaces", None, self.ns, grace=None)
        for p in self.k.list("pods", self.ns):
            self.k.delete("pods", self.ns, p["metadata"]["name"], grace=0)
        # Job pods carry a finalizer: they stay Terminating (and hold their
        # GPUs, as on a real node) until the Job controller lets them go.
        wait_for(lambda: not self.k.list("pods", self.ns), 120, f"the pods of {self.ns} to be gone", 0.2)
        if Env.ext and Env.ext.proc.alive():
            # the ledger forgets the test's nodes before the next test starts
            wait_for(lambda: not [n for n in Env.ext.ledger()["nodes"] if n["name"] in self.nodes],
                     60, "the extender to drop the test's nodes")

    # -- building the cluster --------------------------------------------
    def node(self, name, mode=None, gpus=0, units=0, whole=0, labels=None, annotations=None):
        lab = dict(labels or {})
        if mode:
            lab["ack.node.gpu.schedule"] = mode
        lab["gpushare-test"] = self.ns
        self.nodes.append(name)
        return self.cp.add_node(name, labels=lab, annotations=annotations,
                                capacity=kcluster.gpu_node_capacity(gpus, units, whole))

    def topo_node(self, name, gpus=8):
        return self.node(name, "topology", gpus=gpus, whole=gpus,
                         annotations={"gpushare.io/topology": json.dumps({"links": DGX1_LINKS})})

    def pod(self, name, **kw):
        kw.setdefault("node_selector", {"gpushare-test": self.ns})
        return self.k.create(kcluster.gpu_pod(name, ns=self.ns, **kw))

    def create(self, obj):
        obj["metadata"]["namespace"] = self.ns
        return self.k.create(obj)

    # -- waiting and reading ----------------------------------------------
    def pods(self, selector=None):
        return self.k.list("pods", self.ns, selector)

    def wait_bound(self, count, selector=None, timeout=BIND_TIMEOUT):
        def done():
            ps = self.pods(selector)
            b = [p for p in ps if p["spec"].get("nodeName")]
            return b if len(b) >= count else None
        try:
            return wait_for(done, timeout, f"{count} pods bound in {self.ns}", 0.2)
        except AssertionError:
            print(self.explain(), flush=True)
            raise

    def wait_event(self, pod, pattern, timeout=BIND_TIMEOUT):
        """The FailedScheduling event of pod whose message matches pattern."""
        def found():
            for e in self.k.events(self.ns, pod):
                if e.get("reason") == "FailedScheduling" and re.search(pattern, e.get("message", "")):
                    return e
            return None
        try:
            return wait_for(found, timeout, f"FailedScheduling of {pod} matching {pattern!r}", 0.2)
        except AssertionError:
            print(self.explain(), flush=True)
            raise

    def explain(self):
        out = []
        for p in self.pods():
            out.append(f"pod {p['metadata']['name']} node={p['spec'].get('nodeName')}")
        for e in self.k.list("events", self.ns):
            out.append(f"event {e['involvedObject'].get('name')} {e.get('reason')}: {e.get('message')}")
        return "\n".join(out)

    def watch_pod(self, name, until):
        """The watch events of pod name from now on, collected by a thread
        until one satisfies until (or the server ends the watch): (thread,
        events)."""
        rv = self.k.call("GET", self.k.path("pods", self.ns))["metadata"]["resourceVersion"]
        path = self.k.path("pods", self.ns, query={
            "watch": "1", "fieldSelector": f"metadata.name={name}", "resourceVersion": rv,
            "allowWatchBookmarks": "false", "timeoutSeconds": "170"})
        seen = []

        def run():
            with self.k.open("GET", path, timeout=180) as r:
                for line in r:
                    seen.append(json.loads(line))
                    if until(seen[-1]):
                        return
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t, seen

    def assert_ledger_is_truth(self, ext=None):
        ext = ext or Env.ext
        nodes = {n["metadata"]["name"] for n in self.k.list("nodes")}
        truth = {k: v for k, v in kcluster.truth_from_pods(self.k.list("pods")).items() if k[0] in nodes}
        wait_for(lambda: kcluster.ledger_used(ext.ledger()) == truth, 30,
                 "the ledger to equal the apiserver's pods")
        for n in ext.ledger()["nodes"]:
            for g in n["gpus"]:
                self.assertLessEqual(g["usedMiB"], g["totalMiB"], (n["name"], g["index"]))

    def assert_memory_annotations(self, p, gpus, units_per_gpu, unit_mib, node_units):
        """docs/contract.md §4 for a one-container memory pod, exactly."""
        ann = p["metadata"].get("annotations") or {}
        self.assertEqual(set(ann) & (MEM_KEYS | {TOPO_KEY}), MEM_KEYS, ann)
        self.assertEqual(json.loads(ann["scheduler.framework.gpushare.allocation"]),
                         {"0": {str(g): units_per_gpu for g in gpus}})
        self.assertEqual(ann["scheduler.framework.gpushare.assigned"], "false")
        self.assertRegex(ann["scheduler.framework.gpushare.assume-time"], r"^\d{19}$")
        self.assertEqual(json.loads(ann["gpushare.alibabacloud.com/device-resource"]),
                         {str(i): u for i, u in enumerate(node_units)})
        self.assertEqual(ann["ALIYUN_COM_GPU_MEM_IDX"], ",".join(str(g) for g in sorted(gpus)))
        self.assertEqual(ann["ALIYUN_COM_GPU_MEM_POD"], str(units_per_gpu * len(gpus)))
        self.assertEqual(ann["ALIYUN_COM_GPU_MEM_DEV"], str(node_units[sorted(gpus)[0]]))
        self.assertEqual(ann["ALIYUN_COM_GPU_MEM_ASSIGNED"], "false")
        self.assertEqual(ann["ALIYUN_COM_GPU_MEM_ASSUME_TIME"], ann["scheduler.framework.gpushare.assume-time"])
        self.assertEqual(ann["gpushare.io/unit-mib"], str(unit_mib))


class OwnExtenders(RealCase):
    """A RealCase whose tests start their own extenders (on the port
    kube-scheduler calls, unless told another), so a test can restart or kill
    them; every one still alive is stopped after the test."""

    def setUp(self):
        super().setUp()
        self.exts = []

    def tearDown(self):
        try:
            super().tearDown()
        finally:
            for e in self.exts:
                if e.proc.alive():
                    e.kill(signal.SIGTERM)

    def start_ext(self, port=None, args=(), env=None):
        if Env.form == "plugin":
            # the in-process form: "the extender" is gpushare-scheduler, run
            # again if a test stopped it
            if not self.cp.procs["kube-scheduler"].alive():
                self.cp.start_scheduler()
            Env.ext = PluginView(self.cp)
            return Env.ext
        e = Extender(self.cp, port=port, args=args, env=env)
        self.exts.append(e)
        return e


class LeastPrivilege:
    """Mixed into a RealCase named ZzLeastPrivilege in every module of the
    tier, so it runs last there (unittest sorts classes by name) and inside
    that module's control plane: the extender's requests over the whole
    module, from the apiserver's audit log, against deploy/rbac.yaml."""

    def test_the_extender_was_never_denied_and_used_only_what_the_role_grants(self):
        problems, seen = audit_problems(self.cp)
        self.assertEqual(problems, [])
        # the module exercised the extender's real calls
        verbs = {(k[2], k[3]) for k in seen}
        for want in [("pods", "list"), ("pods", "watch"), ("nodes", "list"), ("nodes", "watch"),
                     ("pods/binding", "create"), ("configmaps", "get")]:
            self.assertIn(want, verbs, sorted(verbs))


class MemoryGang(RealCase):
    """A job of four 4 GiB members (label job=<job>, named w-0..w-3) kept
    off one 16 GiB GPU by a 4 GiB "blocker" pod (test_real_gangs_mem.py,
    test_real_workload.py): what holds while it waits, and what follows the
    blocker's going. Unit 1GiB. The subclass makes a member (member)."""

    def used(self, node):
        """GPU index -> GiB in use, of the GPUs in use, in the extender's ledger."""
        led = Env.ext.ledger(node)
        return {g["index"]: g["usedMiB"] // 1024 for g in led["nodes"][0]["gpus"] if g["usedMiB"]}

    def bound(self, selector=None):
        return [p for p in self.pods(selector) if p["spec"].get("nodeName")]

    def binding_times(self, pods):
        """Each pod's Binding time (the audit log's, whole seconds)."""
        times = []
        for p in pods:
            (b,) = self.cp.audit_bindings(p["metadata"]["name"])
            times.append(time.mktime(time.strptime(b["stageTimestamp"][:19], "%Y-%m-%dT%H:%M:%S")))
        return times

    def blocked_gpu(self, node):
        """node: one GPU of 16 GiB, its blocker bound."""
        self.node(node, "share", gpus=1, units=16)
        self.pod("blocker", units=4)
        self.wait_bound(1)

    def assert_nothing_held(self, job, node):
        """No member bound, only the blocker's 4 GiB used, no gang of gpushare's."""
        self.assertEqual(self.bound(f"job={job}"), [])
        self.assertEqual(self.used(node), {0: 4})
        self.assertFalse(Env.ext.ledger().get("gangs"))

    def blocker_gone_all_bind(self, job, node, new_member, check=None):
        """The blocker deleted: the four bind within 10 s of each other on the
        GPU and fill it (then check(), if given), ledger = truth. w-2 deleted
        and new_member("w-4") made: it is placed in w-2's 4 GiB."""
        self.k.delete("pods", self.ns, "blocker", grace=0)
        bound = self.wait_bound(4, f"job={job}", timeout=240)
        self.assertEqual(sorted(alloc_gpus(p) for p in bound), [[0]] * 4)
        times = self.binding_times(bound)
        self.assertLessEqual(max(times) - min(times), 10, times)
        wait_for(lambda: self.used(node) == {0: 16}, 60, "the GPU full of the job")
        if check is not None:
            check()
        self.assert_ledger_is_truth()

        self.k.delete("pods", self.ns, "w-2", grace=0)
        wait_for(lambda: self.used(node) == {0: 12}, 60, "w-2's memory free")
        new_member("w-4")
        bound = self.wait_bound(4, f"job={job}", timeout=240)
        self.assertEqual(sorted(p["metadata"]["name"] for p in bound), ["w-0", "w-1", "w-3", "w-4"])
        wait_for(lambda: self.used(node) == {0: 16}, 60, "the GPU full again")
        self.assert_ledger_is_truth()


def alloc_gpus(p):
    a = json.loads(p["metadata"]["annotations"]["scheduler.framework.gpushare.allocation"])
    return sorted(int(g) for c in a.values() for g in c)


def topo_alloc(p):
    return json.loads(p["metadata"]["annotations"][TOPO_KEY])


def metric(text, name, **labels):
    """The value of one sample of /metrics text, or None."""
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)", line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        if all(got.get(k) == v for k, v in labels.items()):
            return float(m.group(3))
    return None


__all__ = ["Env", "RealCase", "MemoryGang", "KubeError", "alloc_gpus", "topo_alloc", "audit_problems", "metric",
           "MEM_KEYS", "TOPO_KEY", "wait_for", "time", "LeastPrivilege"]
