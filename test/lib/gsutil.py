"""Helpers shared by the Python test tiers (test/integration, test/k8s,
test/apiserver): build paths, free ports, the wait loops, objects, the
ledger recomputed from pods, starting the extender on a demo cluster, and a
small HTTP client of the extender (stdlib only)."""
import importlib
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SOURCE = os.environ.get("GS_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")))
BUILD = os.environ.get("GS_BUILD_DIR", os.path.join(SOURCE, "build"))
EXTENDER = os.path.join(BUILD, "src", "gpushare-extender")
INSPECT = os.path.join(BUILD, "tools", "inspect", "gpushare-inspect")



def bench_module(name):
    """tools/bench/NAME.py imported (the benchmark scripts whose reading of
    a run the integration tier tests on hand-made lists)."""
    path = os.path.join(SOURCE, "tools", "bench")
    if path not in sys.path:
        sys.path.insert(0, path)
    return importlib.import_module(name)

# DGX-1 (V100) NVLink: the GPU block of nvidia-smi topo -m
# (test/data/topologies/dgx1_v100_topo-m.txt), as gpushare-topo prints it.
DGX1_LINKS = [["X", "NV1", "NV1", "NV2", "NV2", "SYS", "SYS", "SYS"],
              ["NV1", "X", "NV2", "NV1", "SYS", "NV2", "SYS", "SYS"],
              ["NV1", "NV2", "X", "NV2", "SYS", "SYS", "NV1", "SYS"],
              ["NV2", "NV1", "NV2", "X", "SYS", "SYS", "SYS", "NV1"],
              ["NV2", "SYS", "SYS", "SYS", "X", "NV1", "NV1", "NV2"],
              ["SYS", "NV2", "SYS", "SYS", "NV1", "X", "NV2", "NV1"],
              ["SYS", "SYS", "NV1", "SYS", "NV1", "NV2", "X", "NV2"],
              ["SYS", "SYS", "SYS", "NV1", "NV2", "NV1", "NV2", "X"]]


def http_status(base, path, timeout=5):
    """(status, body) of GET base+path; (0, b"") when nothing answers."""
    try:
        with urllib.request.urlopen(base + path, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return 0, b""


def truth_from_pods(pods, unit_default=1024):
    """The ledger recomputed from the apiserver's pods (docs/contract.md §4):
    (node, gpu) → MiB of every bound, non-terminal pod's allocation."""
    used = {}
    for p in pods:
        ann = p["metadata"].get("annotations") or {}
        if not p["spec"].get("nodeName") or p.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            continue
        alloc = ann.get("scheduler.framework.gpushare.allocation")
        unit = int(ann.get("gpushare.io/unit-mib", unit_default))
        if not alloc and ann.get("ALIYUN_COM_GPU_MEM_IDX") and ann.get("ALIYUN_COM_GPU_MEM_POD"):
            # bound by Aliyun's extender: the legacy keys only, the pod total
            # split evenly over the listed GPUs, the remainder on the lowest
            # (docs/compatibility.md)
            gpus = sorted(int(g) for g in ann["ALIYUN_COM_GPU_MEM_IDX"].split(","))
            total = int(ann["ALIYUN_COM_GPU_MEM_POD"])
            for i, g in enumerate(gpus):
                units = total // len(gpus) + (total % len(gpus) if i == 0 else 0)
                key = (p["spec"]["nodeName"], g)
                used[key] = used.get(key, 0) + units * unit
            continue
        if not alloc:
            continue
        for _c, gpus in json.loads(alloc).items():
            for g, units in gpus.items():
                key = (p["spec"]["nodeName"], int(g))
                used[key] = used.get(key, 0) + units * unit
    return used


class Fatal(AssertionError):
    """Raised inside a wait_for condition: stop waiting at once (a process died)."""


def wait_until(cond, timeout, what, interval=0.05):
    """Polls cond() until true; a generous deadline, never a fixed sleep
    (the test command also runs at load 10 on 2 cores, and under valgrind)."""
    if os.environ.get("GS_VALGRIND"):
        timeout *= 6
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def wait_for(cond, timeout, what, interval=0.05):
    """wait_until for a real control plane: an exception from cond() is
    retried (the apiserver may not answer yet) and named on timeout; Fatal
    stops at once."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            v = cond()
            if v:
                return v
        except Fatal:
            raise
        except Exception as e:  # noqa: BLE001 - reported on timeout
            last = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}"
                         + (f" (last error: {last!r})" if last else ""))


# Ports handed out for servers the tests start: below the kernel's ephemeral
# range (net.ipv4.ip_local_port_range, 32768-60999 by default), so that no
# outgoing connection takes one between free_port() and the server's bind
# (seen: a module whose delay proxy opened many connections lost its plugin's
# debug port to one), and below the NodePort range (30000-32767)
_PORTS = (10000, 29999)


def free_port():
    """A TCP port free on 127.0.0.1 now, outside the ephemeral range."""
    rng = random.Random()
    for _ in range(200):
        port = rng.randint(*_PORTS)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # all taken: whatever the kernel gives
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gpu_capacity(gpus=0, units=0, whole=0):
    """A node's GPU resources as the device plugins advertise them."""
    cap = {}
    if gpus:
        cap["aliyun.com/gpu-count"] = str(gpus)
    if units:
        cap["aliyun.com/gpu-mem"] = str(units)
    if whole:
        cap["aliyun.com/gpu"] = str(whole)
    return cap


def node(name, mode=None, gpus=0, units=0, placement=None, whole=0, annotations=None):
    labels = {"kubernetes.io/hostname": name}
    if mode:
        labels["ack.node.gpu.schedule"] = mode
    if placement:
        labels["ack.node.gpu.placement"] = placement
    cap = {"cpu": "32", "pods": "110", **gpu_capacity(gpus, units, whole)}
    md = {"name": name, "labels": labels}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Node", "metadata": md,
            "status": {"capacity": cap, "allocatable": dict(cap)}}


def pod(name, units=0, count=None, ns="default", whole=0, labels=None, uid=None):
    res = {}
    if units:
        res["aliyun.com/gpu-mem"] = str(units)
    if whole:
        res["aliyun.com/gpu"] = str(whole)
    lab = dict(labels or {})
    if count is not None:
        lab["aliyun.com/gpu-count"] = str(count)
    md = {"name": name, "namespace": ns, "uid": uid or f"uid-{ns}-{name}"}
    if lab:
        md["labels"] = lab
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"limits": res, "requests": dict(res)}}]},
            "status": {"phase": "Pending"}}


def configmap(unit):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "gpushare-config", "namespace": "kube-system"},
            "data": {"gpuMemoryUnit": unit}}


class Extender:
    """gpushare-extender --demo on a generated cluster file."""

    def __init__(self, items, args=()):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "cluster.json")
        with open(self.path, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(self.dir.name, "extender.log"), "w+")
        self.vglog = None
        cmd = [EXTENDER, "--demo", self.path, "--listen", f"127.0.0.1:{self.port}", *args]
        if os.environ.get("GS_VALGRIND"):
            # memcheck: any error or definite leak makes close() fail
            self.vglog = os.path.join(self.dir.name, "valgrind.log")
            cmd = ["valgrind", "--error-exitcode=99", "--leak-check=full",
                   "--errors-for-leak-kinds=definite", f"--log-file={self.vglog}", *cmd]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + (120 if self.vglog else 20)
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("extender exited: " + self.logtext())
            try:
                if self.get("/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("extender not ready")

    def logtext(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def request(self, method, path, body=None, headers=None):
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers=headers or {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60 if self.vglog else 10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def get(self, path):
        return self.request("GET", path)

    def post(self, verb, body):
        status, raw = self.request("POST", "/gpushare-scheduler/" + verb, body)
        return status, json.loads(raw) if raw else None, raw

    def ledger(self, node=None):
        status, raw = self.get("/debug/ledger" + (f"?node={node}" if node else ""))
        return json.loads(raw)

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60 if self.vglog else 10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        report = ""
        if self.vglog and os.path.exists(self.vglog):
            with open(self.vglog) as f:
                report = f.read()
        self.log.close()
        self.dir.cleanup()
        if self.vglog and (self.proc.returncode == 99 or "ERROR SUMMARY: 0 errors" not in report):
            raise AssertionError("valgrind found errors:\n" + report[-6000:])
