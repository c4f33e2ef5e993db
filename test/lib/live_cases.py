"""The live-cluster cases (issue 3): gpushare-extender against an apiserver —
binding with annotations, restart recovery, unit changes, deletions, apiserver
outages and leader election — the real binary, over the real wire format; and
the helpers the fault and monitoring tests share (Ext, kubeconfig).
test/integration/test_live_cluster.py runs LiveCluster against the test
kube-apiserver, test/k8s/test_real_fidelity.py its fault-free cases against
the real one."""
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

from gsutil import (EXTENDER, SOURCE, configmap, free_port, http_status, node, pod, truth_from_pods,
                    wait_until)
from kube_apiserver import FakeApiServer


def kubeconfig(dirname, url):
    path = os.path.join(dirname, "kubeconfig")
    with open(path, "w") as f:
        f.write(f"""apiVersion: v1
kind: Config
current-context: test
clusters:
- name: fake
  cluster:
    server: {url}
users:
- name: admin
  user:
    token: test-token
contexts:
- name: test
  context:
    cluster: fake
    user: admin
""")
    return path


class Ext:
    """One gpushare-extender process talking to the fake apiserver."""

    def __init__(self, kcfg, logdir, args=(), name="ext"):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.logpath = os.path.join(logdir, f"{name}-{self.port}.log")
        self.log = open(self.logpath, "w")
        self.vglog = None
        cmd = [EXTENDER, "--kubeconfig", kcfg, "--listen", f"127.0.0.1:{self.port}", *args]
        if os.environ.get("GS_VALGRIND"):
            self.vglog = os.path.join(logdir, f"{name}-{self.port}.valgrind")
            cmd = ["valgrind", "--error-exitcode=99", "--leak-check=full",
                   "--errors-for-leak-kinds=definite", f"--log-file={self.vglog}", *cmd]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)

    def status(self, path):
        return http_status(self.base, path)

    def ready(self):
        return self.status("/readyz")[0] == 200

    def wait_ready(self, timeout=20):
        deadline = time.time() + (timeout * 6 if self.vglog else timeout)
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("extender exited:\n" + open(self.logpath).read())
            if self.ready():
                return
            time.sleep(0.05)
        raise AssertionError("extender not ready:\n" + open(self.logpath).read()[-3000:])

    def post(self, verb, body):
        req = urllib.request.Request(f"{self.base}/gpushare-scheduler/{verb}",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def bind(self, p, node_name):
        return self.post("bind", {"PodName": p["metadata"]["name"],
                                  "PodNamespace": p["metadata"]["namespace"],
                                  "PodUID": p["metadata"]["uid"], "Node": node_name})

    def ledger(self):
        return json.loads(self.status("/debug/ledger")[1])

    def kill(self, sig=signal.SIGKILL):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(timeout=60 if self.vglog else 15)
        self.log.close()
        if self.vglog and self.proc.returncode != -signal.SIGKILL:
            with open(self.vglog) as f:
                report = f.read()
            if self.proc.returncode == 99 or "ERROR SUMMARY: 0 errors" not in report:
                raise AssertionError("valgrind found errors:\n" + report[-6000:])



def used_by_gpu(ledger):
    return {(n["name"], g["index"]): g["usedMiB"] for n in ledger["nodes"] for g in n["gpus"]}


def expected_from_pods(server, unit_default=1024):
    """The ledger recomputed from the apiserver's pods (docs/contract.md §4)."""
    return truth_from_pods(server.list("pods"), unit_default)


class ExtenderCase(unittest.TestCase):
    """A test with extenders (self.exts, stopped at the end: valgrind's
    report fails the test) against an apiserver (self.server), in a
    temporary folder (self.tmp)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.exts = []
        self.server = None

    def tearDown(self):
        problems = []
        for e in self.exts:
            try:
                e.kill(signal.SIGTERM)
            except AssertionError as err:  # valgrind's report (GS_VALGRIND)
                problems.append(str(err))
            except Exception:
                pass
        if self.server:
            self.server.stop()
        self.tmp.cleanup()
        if problems:
            self.fail("\n".join(problems))


class LiveCluster(ExtenderCase):
    def start_server(self, items, **kw):
        self.server = FakeApiServer(state=items, token="test-token", **kw)
        self.server.start()
        self.kcfg = kubeconfig(self.tmp.name, self.server.url)
        return self.server

    def start_ext(self, *args, wait=True, name="ext"):
        e = Ext(self.kcfg, self.tmp.name, args, name)
        self.exts.append(e)
        if wait:
            e.wait_ready()
        return e

    def test_bind_writes_the_contract_annotations(self):
        srv = self.start_server([configmap("128MiB"), node("gpu-a", "share", gpus=1, units=128),
                                 pod("p1", units=16)])
        ext = self.start_ext()
        res = ext.post("filter", {"Pod": srv.get("pods", "default", "p1"), "NodeNames": ["gpu-a"]})
        self.assertEqual(res["NodeNames"], ["gpu-a"])
        self.assertEqual(ext.bind(srv.get("pods", "default", "p1"), "gpu-a"), {"Error": ""})
        p = srv.get("pods", "default", "p1")
        self.assertEqual(p["spec"]["nodeName"], "gpu-a")
        ann = p["metadata"]["annotations"]
        self.assertEqual(ann["scheduler.framework.gpushare.allocation"], '{"0":{"0":16}}')
        self.assertEqual(ann["scheduler.framework.gpushare.assigned"], "false")
        self.assertRegex(ann["scheduler.framework.gpushare.assume-time"], r"^\d{19}$")
        self.assertEqual(ann["gpushare.alibabacloud.com/device-resource"], '{"0":128}')
        self.assertEqual(ann["ALIYUN_COM_GPU_MEM_IDX"], "0")
        self.assertEqual(ann["ALIYUN_COM_GPU_MEM_POD"], "16")
        self.assertEqual(ann["ALIYUN_COM_GPU_MEM_DEV"], "128")
        self.assertEqual(ann["ALIYUN_COM_GPU_MEM_ASSIGNED"], "false")
        self.assertEqual(ann["ALIYUN_COM_GPU_MEM_ASSUME_TIME"],
                         ann["scheduler.framework.gpushare.assume-time"])
        self.assertEqual(ann["gpushare.io/unit-mib"], "128")
        # one Binding carried everything: exactly one POST, to pods/p1/binding
        posts = [r for r in srv.requests(method="POST") if "/binding" in r["path"]]
        self.assertEqual(len(posts), 1)
        # and one log line for it, with the allocation
        ext.log.flush()
        with open(ext.logpath) as f:
            bound_lines = [line for line in f if 'msg="bound"' in line or "msg=bound " in line]
        self.assertEqual(len(bound_lines), 1, bound_lines)
        self.assertIn('allocation={"0":{"0":16}}', bound_lines[0])
        self.assertEqual(used_by_gpu(ext.ledger()), {("gpu-a", 0): 2048})
        # bind again: idempotent, no second charge
        self.assertEqual(ext.bind(srv.get("pods", "default", "p1"), "gpu-a"), {"Error": ""})
        self.assertEqual(used_by_gpu(ext.ledger()), {("gpu-a", 0): 2048})
        # a wrong UID is refused and writes nothing
        srv.add(pod("p2", units=16))
        bad = dict(srv.get("pods", "default", "p2"))
        bad["metadata"] = dict(bad["metadata"], uid="not-the-uid")
        self.assertNotEqual(ext.bind(bad, "gpu-a")["Error"], "")
        self.assertFalse(srv.get("pods", "default", "p2")["spec"].get("nodeName"))
        self.assertEqual(used_by_gpu(ext.ledger()), {("gpu-a", 0): 2048})

    def test_bind_repeated_after_a_restart_is_idempotent(self):
        # A restarted extender keeps a bound pod compact in its cache, without
        # its containers: a repeated bind (kube-scheduler retries when a reply
        # is lost) reads the pod again and answers success, writing nothing.
        srv = self.start_server([node("gpu-r", "share", gpus=2, units=32), pod("rp", units=3, count=1)])
        ext = self.start_ext()
        live = srv.get("pods", "default", "rp")
        self.assertEqual(ext.bind(live, "gpu-r"), {"Error": ""})
        ext.kill(signal.SIGTERM)
        again = self.start_ext(name="restarted")
        binds = len([r for r in srv.requests(method="POST") if r["path"].endswith("/binding")])
        self.assertEqual(again.bind(live, "gpu-r"), {"Error": ""})
        self.assertEqual(len([r for r in srv.requests(method="POST") if r["path"].endswith("/binding")]), binds)
        self.assertEqual(used_by_gpu(again.ledger())[("gpu-r", 0)], 3072)

    def test_multi_card_annotation_shape(self):
        srv = self.start_server([node("gpu-b", "share", gpus=4, units=64),
                                 pod("m", units=8, count=2)])
        ext = self.start_ext()
        self.assertEqual(ext.bind(srv.get("pods", "default", "m"), "gpu-b"), {"Error": ""})
        ann = srv.get("pods", "default", "m")["metadata"]["annotations"]
        self.assertEqual(ann["scheduler.framework.gpushare.allocation"], '{"0":{"0":4,"1":4}}')
        self.assertEqual(ann["ALIYUN_COM_GPU_MEM_IDX"], "0,1")
        self.assertEqual(ann["ALIYUN_COM_GPU_MEM_POD"], "8")
        self.assertEqual(ann["gpushare.io/unit-mib"], "1024")

    def test_deleted_pod_frees_memory_within_a_second(self):
        srv = self.start_server([node("n", "share", gpus=1, units=16), pod("d", units=4)])
        ext = self.start_ext()
        self.assertEqual(ext.bind(srv.get("pods", "default", "d"), "n"), {"Error": ""})
        self.assertEqual(used_by_gpu(ext.ledger())[("n", 0)], 4096)
        srv.delete("pods", "default", "d")
        deadline = time.time() + 1.0
        while time.time() < deadline and used_by_gpu(ext.ledger())[("n", 0)] != 0:
            time.sleep(0.02)
        self.assertEqual(used_by_gpu(ext.ledger())[("n", 0)], 0)

    def test_terminal_pod_frees_memory(self):
        srv = self.start_server([node("n", "share", gpus=1, units=16), pod("t", units=4)])
        ext = self.start_ext()
        ext.bind(srv.get("pods", "default", "t"), "n")
        srv.set_pod_phase("default", "t", "Succeeded")
        wait_until(lambda: used_by_gpu(ext.ledger())[("n", 0)] == 0, 2.0,
                   "the terminal pod's memory freed", 0.02)
        self.assertEqual(used_by_gpu(ext.ledger())[("n", 0)], 0)

    def test_pod_seen_before_its_node_is_restored_when_the_node_comes(self):
        p = pod("early", units=3)
        p["spec"]["nodeName"] = "late"
        p["metadata"]["annotations"] = {"scheduler.framework.gpushare.allocation": '{"0":{"1":3}}',
                                        "gpushare.io/unit-mib": "1024"}
        srv = self.start_server([p])
        srv.set_pod_phase("default", "early", "Running")
        ext = self.start_ext()
        self.assertEqual(ext.ledger()["nodes"], [])
        srv.add(node("late", "share", gpus=2, units=32))
        wait_until(lambda: ext.ledger()["nodes"], 3, "the node in the ledger")
        self.assertEqual(used_by_gpu(ext.ledger()), {("late", 0): 0, ("late", 1): 3072})

    def test_kill_9_mid_binds_then_restart_rebuilds_exactly(self):
        nodes = [node(f"n{i}", "share", gpus=2, units=32) for i in range(4)]
        pods = [pod(f"w{i}", units=1 + i % 5) for i in range(120)]
        srv = self.start_server(nodes + pods)
        ext = self.start_ext()
        names = [n["metadata"]["name"] for n in nodes]
        stop = threading.Event()

        def storm():
            for p in pods:
                if stop.is_set():
                    return
                try:
                    live = srv.get("pods", "default", p["metadata"]["name"])
                    res = ext.post("filter", {"Pod": live, "NodeNames": names})
                    if res["NodeNames"]:
                        ext.bind(live, res["NodeNames"][0])
                except OSError:
                    return

        t = threading.Thread(target=storm)
        t.start()
        wait_until(lambda: sum(1 for p in srv.list("pods") if p["spec"].get("nodeName")) >= 5, 60,
                   "the first binds")
        ext.kill(signal.SIGKILL)
        stop.set()
        t.join(timeout=20)
        bound = sum(1 for p in srv.list("pods") if p["spec"].get("nodeName"))
        self.assertGreater(bound, 0)
        again = self.start_ext(name="restarted")
        want = expected_from_pods(srv)
        got = {k: v for k, v in used_by_gpu(again.ledger()).items() if v}
        self.assertEqual(got, want)
        for n in again.ledger()["nodes"]:
            for g in n["gpus"]:
                self.assertLessEqual(g["usedMiB"], g["totalMiB"], (n["name"], g["index"]))

    def test_a_bad_configmap_value_never_stops_scheduling(self):
        """Issue 16 item 1: at start-up (--on-invalid-config ignore, as
        shipped) the bad key keeps its default, the rest applies and the
        extender serves; a bad value at runtime is reported (log, Warning
        Event on the ConfigMap, metric, configError) while the running
        configuration stays; fixing it clears the report. Without the flag
        the start-up error stays docs/contract.md §6's: exit 2 naming the key."""
        cm = configmap("128MiB")
        cm["data"]["nodePolicy"] = "bogus"
        srv = self.start_server([cm, node("c", "share", gpus=1, units=128), pod("p", units=8)])
        strict = self.start_ext(wait=False, name="strict")
        self.assertEqual(strict.proc.wait(timeout=60), 2)
        with open(strict.logpath) as f:
            self.assertIn('ConfigMap kube-system/gpushare-config: invalid nodePolicy "bogus"', f.read())
        ext = self.start_ext("--on-invalid-config", "ignore")
        with open(ext.logpath) as f:
            log = f.read()
        self.assertIn('msg="invalid configuration ignored; its default stays" '
                      'configmap=kube-system/gpushare-config key=nodePolicy', log)
        self.assertEqual(ext.ledger()["unit"], "128MiB")  # the valid key applied
        wait_until(lambda: "configError" in ext.ledger(), 10, "configError")
        self.assertIn('invalid nodePolicy "bogus"', ext.ledger()["configError"])
        self.assertIn("gpushare_config_invalid 1", ext.status("/metrics")[1].decode())
        self.assertEqual(ext.bind(srv.get("pods", "default", "p"), "c"), {"Error": ""})

        def warnings():
            return [e["object"] for e in srv.events()
                    if e["object"].get("reason") == "InvalidConfiguration"]
        wait_until(warnings, 10, "the InvalidConfiguration event")
        ev = warnings()[0]
        self.assertEqual((ev["type"], ev["involvedObject"]["kind"], ev["involvedObject"]["name"]),
                         ("Warning", "ConfigMap", "gpushare-config"))
        # fixed: the report clears
        cm = srv.get("configmaps", "kube-system", "gpushare-config")
        cm["data"]["nodePolicy"] = "spread"
        srv.update(cm)
        wait_until(lambda: "configError" not in ext.ledger(), 10, "configError cleared")
        self.assertIn("gpushare_config_invalid 0", ext.status("/metrics")[1].decode())
        # broken again while running: reported once more, the running policy stays
        cm = srv.get("configmaps", "kube-system", "gpushare-config")
        cm["data"]["cgpuMaxPodsPerGPU"] = "0"
        srv.update(cm)
        wait_until(lambda: "cgpuMaxPodsPerGPU" in ext.ledger().get("configError", ""), 10,
                   "configError for cgpuMaxPodsPerGPU")
        wait_until(lambda: len(warnings()) == 2, 10, "a second event")
        self.assertEqual(ext.ledger()["unit"], "128MiB")
        self.assertNotIn("pendingUnit", ext.ledger())

    def test_unit_change_applies_at_restart_and_keeps_exact_mib(self):
        srv = self.start_server([configmap("1GiB"), node("u", "share", gpus=1, units=16),
                                 pod("old", units=2)])
        ext = self.start_ext()
        self.assertEqual(ext.bind(srv.get("pods", "default", "old"), "u"), {"Error": ""})
        self.assertEqual(used_by_gpu(ext.ledger())[("u", 0)], 2048)
        cm = srv.get("configmaps", "kube-system", "gpushare-config")
        cm["data"]["gpuMemoryUnit"] = "128MiB"
        srv.update(cm)
        wait_until(lambda: ext.ledger().get("pendingUnit") == "128MiB", 2, "the pending unit")
        self.assertEqual(ext.ledger().get("pendingUnit"), "128MiB")
        self.assertEqual(ext.ledger()["unit"], "1GiB")
        ext.kill(signal.SIGTERM)
        # the device plugin now advertises the same 16 GiB in 128 MiB units
        n = srv.get("nodes", None, "u")
        n["status"]["capacity"]["aliyun.com/gpu-mem"] = "128"
        n["status"]["allocatable"]["aliyun.com/gpu-mem"] = "128"
        srv.update(n)
        srv.add(pod("new", units=16))
        again = self.start_ext(name="restarted")
        led = again.ledger()
        self.assertEqual(led["unit"], "128MiB")
        self.assertNotIn("pendingUnit", led)
        self.assertEqual(used_by_gpu(led)[("u", 0)], 2048)  # the old pod, exact
        self.assertEqual(again.bind(srv.get("pods", "default", "new"), "u"), {"Error": ""})
        self.assertEqual(used_by_gpu(again.ledger())[("u", 0)], 4096)
        ann = srv.get("pods", "default", "new")["metadata"]["annotations"]
        self.assertEqual(ann["gpushare.io/unit-mib"], "128")
        self.assertEqual(ann["scheduler.framework.gpushare.allocation"], '{"0":{"0":16}}')

    def test_apiserver_down_at_start_then_ready_when_back(self):
        srv = self.start_server([node("n", "share", gpus=1, units=16)])
        srv.down()
        ext = self.start_ext(wait=False)
        # alive and answering /healthz while the apiserver is down, not ready
        wait_until(lambda: ext.status("/healthz")[0] == 200, 30, "/healthz")
        self.assertIsNone(ext.proc.poll())
        self.assertEqual(ext.status("/readyz")[0], 503)
        srv.up()
        ext.wait_ready(timeout=40)
        self.assertEqual([n["name"] for n in ext.ledger()["nodes"]], ["n"])

    def test_bind_of_a_pod_the_watch_has_not_delivered_reads_it(self):
        # kube-scheduler can bind a pod before the extender's watch delivers
        # it: bind reads the pod from the apiserver instead of answering
        # "not found". The pods watch is held back to make that certain.
        srv = self.start_server([node("gpu-w", "share", gpus=1, units=16)])
        ext = self.start_ext()
        srv.inject_fault(method="GET", path=r"^/api/v1/pods$", action="delay", delay=5.0, count=None,
                         query=r"watch=")
        srv.drop_watches(mode="end", resource="pods")
        p = srv.add(pod("fresh", units=2))
        self.assertEqual(ext.bind(p, "gpu-w"), {"Error": ""})
        self.assertEqual(srv.get("pods", "default", "fresh")["spec"]["nodeName"], "gpu-w")
        self.assertEqual(used_by_gpu(ext.ledger())[("gpu-w", 0)], 2048)
        srv.clear_faults()

    def test_leader_election_failover(self):
        srv = self.start_server([node("n", "share", gpus=1, units=16), pod("lp", units=1)])
        a = self.start_ext("--leader-elect", wait=False, name="a")
        b = self.start_ext("--leader-elect", wait=False, name="b")
        wait_until(lambda: a.ready() or b.ready(), 30, "a leader")
        # both have tried the Lease: it names its holder, the other answers
        # /healthz but is not ready
        wait_until(lambda: a.status("/healthz")[0] == 200 and b.status("/healthz")[0] == 200, 30,
                   "both replicas up")
        holder = wait_until(lambda: (srv.get("leases", "kube-system", "gpushare-extender") or {})
                            .get("spec", {}).get("holderIdentity"), 30, "the Lease's holder")
        self.assertTrue(holder)
        ready = [e for e in (a, b) if e.ready()]
        self.assertEqual(len(ready), 1)
        leader, standby = (a, b) if ready[0] is a else (b, a)
        # both are Ready as replicas (the Deployment's readiness probe): a
        # rollout can complete; /readyz stays the leader's (docs/contract.md)
        wait_until(lambda: standby.status("/readyz/replica") == (200, b"ok\n"), 30,
                   "the standby ready as a replica")
        self.assertEqual(leader.status("/readyz/replica"), (200, b"ok\n"))
        self.assertEqual(standby.status("/readyz"), (503, b"not leader\n"))
        # the standby answers the verbs with "not leader"
        self.assertEqual(standby.bind(srv.get("pods", "default", "lp"), "n")["Error"], "not leader")
        leader.kill(signal.SIGKILL)
        # lease duration 15 s + retry period
        wait_until(standby.ready, 25, "the standby leading", 0.2)
        self.assertTrue(standby.ready())
        self.assertEqual(standby.bind(srv.get("pods", "default", "lp"), "n"), {"Error": ""})
        self.assertEqual(used_by_gpu(standby.ledger())[("n", 0)], 1024)
