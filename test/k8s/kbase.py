"""The base of the real control-plane harness (kcluster.py): paths, the wait loop, a small
Kubernetes REST client, PKI and kubeconfigs, and child processes stopped by PID."""

import copy
import ctypes
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("GS_SOURCE_DIR", os.path.abspath(os.path.join(HERE, "..", "..")))
BUILD = os.environ.get("GS_BUILD_DIR", os.path.join(SOURCE, "build"))
sys.path.insert(0, os.path.join(SOURCE, "test", "integration"))
import gsutil  # noqa: E402,F401  (the integration tests' helpers, re-exported by kcluster)
EXTENDER_SA = "system:serviceaccount:kube-system:gpushare-extender"
# Generous: the test command also runs at load 10 on 2 cores.
START_TIMEOUT = float(os.environ.get("GS_K8S_START_TIMEOUT", "180"))


def k8s_bin_dir():
    d = os.environ.get("GS_K8S_BIN")
    if d:
        return d
    return os.path.join(SOURCE, "build", "k8s", "bin")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Fatal(AssertionError):
    """Raised inside a wait_for condition: stop waiting at once (a process died)."""


def wait_for(cond, timeout, what, interval=0.05):
    """Polls cond() until it returns a true value; fails naming what."""
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


class KubeError(Exception):
    def __init__(self, code, body):
        self.code = code
        self.body = body
        try:
            self.status = json.loads(body)
        except ValueError:
            self.status = {"message": body.decode(errors="replace") if isinstance(body, bytes) else body}
        super().__init__(f"HTTP {code}: {self.status.get('message', body)}")


# kind -> (api prefix, resource, namespaced)
KINDS = {
    "Pod": ("/api/v1", "pods", True),
    "Node": ("/api/v1", "nodes", False),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Namespace": ("/api/v1", "namespaces", False),
    "Service": ("/api/v1", "services", True),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "Event": ("/api/v1", "events", True),
    "Job": ("/apis/batch/v1", "jobs", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True),
    "ReplicaSet": ("/apis/apps/v1", "replicasets", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "Lease": ("/apis/coordination.k8s.io/v1", "leases", True),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
}
RESOURCES = {res: (prefix, kind, nsd) for kind, (prefix, res, nsd) in KINDS.items()}


class Kube:
    """A small REST client for kube-apiserver: TLS with our CA, a bearer token."""

    def __init__(self, server, token, ca_file):
        self.server = server
        self.token = token
        self.ctx = ssl.create_default_context(cafile=ca_file)

    def open(self, method, path, body=None, ctype="application/json", timeout=30,
             accept="application/json"):
        """The open response, to read or to stream (a watch); KubeError on an
        HTTP error."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        req.add_header("Accept", accept)
        if data is not None:
            req.add_header("Content-Type", ctype)
        try:
            return urllib.request.urlopen(req, context=self.ctx, timeout=timeout)
        except urllib.error.HTTPError as e:
            raise KubeError(e.code, e.read()) from None

    def call(self, method, path, body=None, ctype="application/json", timeout=30):
        with self.open(method, path, body, ctype, timeout) as r:
            raw = r.read()
        return json.loads(raw) if raw else None

    @staticmethod
    def path(resource, namespace=None, name=None, sub=None, query=None):
        prefix, _kind, nsd = RESOURCES[resource]
        p = prefix
        if nsd and namespace:
            p += f"/namespaces/{namespace}"
        p += f"/{resource}"
        if name:
            p += f"/{name}"
        if sub:
            p += f"/{sub}"
        if query:
            p += "?" + urllib.parse.urlencode(query)
        return p

    def create(self, obj):
        kind = obj["kind"]
        _prefix, res, nsd = KINDS[kind]
        ns = obj["metadata"].get("namespace", "default") if nsd else None
        return self.call("POST", self.path(res, ns), obj)

    def get(self, resource, namespace, name):
        return self.call("GET", self.path(resource, namespace, name))

    def try_get(self, resource, namespace, name):
        try:
            return self.get(resource, namespace, name)
        except KubeError as e:
            if e.code == 404:
                return None
            raise

    def list(self, resource, namespace=None, selector=None):
        q = {"labelSelector": selector} if selector else None
        return self.call("GET", self.path(resource, namespace, query=q))["items"]

    def update(self, obj):
        _prefix, res, nsd = KINDS[obj["kind"]]
        ns = obj["metadata"].get("namespace") if nsd else None
        return self.call("PUT", self.path(res, ns, obj["metadata"]["name"]), obj)

    def patch(self, resource, namespace, name, patch, sub=None):
        return self.call("PATCH", self.path(resource, namespace, name, sub), patch,
                         ctype="application/merge-patch+json")

    def delete(self, resource, namespace, name, grace=0):
        q = {"gracePeriodSeconds": str(grace)} if grace is not None else None
        try:
            return self.call("DELETE", self.path(resource, namespace, name, query=q))
        except KubeError as e:
            if e.code != 404:
                raise
            return None

    def apply(self, obj):
        """Creates obj, or replaces it when it exists (kubectl apply, roughly)."""
        try:
            return self.create(obj)
        except KubeError as e:
            if e.code != 409:
                raise
        _prefix, res, nsd = KINDS[obj["kind"]]
        ns = obj["metadata"].get("namespace", "default") if nsd else None
        cur = self.get(res, ns, obj["metadata"]["name"])
        new = copy.deepcopy(obj)
        new["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
        return self.update(new)

    def apply_file(self, path, namespace=None):
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        out = []
        for d in docs:
            items = d["items"] if d.get("kind") == "List" else [d]
            for obj in items:
                if namespace and KINDS[obj["kind"]][2]:
                    obj.setdefault("metadata", {}).setdefault("namespace", namespace)
                out.append(self.apply(obj))
        return out

    def events(self, namespace, involved=None):
        evs = self.list("events", namespace)
        if involved:
            evs = [e for e in evs if e.get("involvedObject", {}).get("name") == involved]
        return evs


def _run(cmd, **kw):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)


def make_pki(d):
    """A cluster CA with the apiserver's serving cert, a front-proxy CA and its
    client, and the ServiceAccount signing key (openssl, EC P-256 / RSA)."""
    def ca(name, cn):
        _run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
              "-nodes", "-keyout", f"{d}/{name}.key", "-out", f"{d}/{name}.crt", "-days", "30",
              "-subj", f"/CN={cn}"])

    def leaf(name, ca_name, cn, san=None, client=False):
        _run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
              "-nodes", "-keyout", f"{d}/{name}.key", "-out", f"{d}/{name}.csr", "-subj", f"/CN={cn}"])
        ext = f"{d}/{name}.ext"
        with open(ext, "w") as f:
            f.write("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n")
            f.write("extendedKeyUsage=" + ("clientAuth" if client else "serverAuth,clientAuth") + "\n")
            if san:
                f.write("subjectAltName=" + san + "\n")
        _run(["openssl", "x509", "-req", "-in", f"{d}/{name}.csr", "-CA", f"{d}/{ca_name}.crt",
              "-CAkey", f"{d}/{ca_name}.key", "-CAcreateserial", "-out", f"{d}/{name}.crt",
              "-days", "30", "-extfile", ext])

    ca("ca", "gpushare-test-ca")
    leaf("apiserver", "ca", "kube-apiserver",
         san="IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
             "DNS:kubernetes.default.svc,IP:10.0.0.1")
    ca("front-proxy-ca", "gpushare-test-front-proxy-ca")
    leaf("front-proxy-client", "front-proxy-ca", "front-proxy-client", client=True)
    _run(["openssl", "genrsa", "-out", f"{d}/sa.key", "2048"])
    _run(["openssl", "rsa", "-in", f"{d}/sa.key", "-pubout", "-out", f"{d}/sa.pub"])


def write_kubeconfig(path, server, ca_file, token, name="gpushare-test"):
    cfg = {
        "apiVersion": "v1", "kind": "Config", "current-context": name,
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority": ca_file}}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
    }
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    return path


PLUGIN_SA = "system:serviceaccount:kube-system:gpushare-scheduler"
AUDIT_POLICY = f"""apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["{EXTENDER_SA}", "{PLUGIN_SA}"]
- level: Metadata
  verbs: ["create"]
  resources:
  - group: ""
    resources: ["pods/binding", "pods/eviction"]
- level: Metadata
  verbs: ["delete"]
  resources:
  - group: ""
    resources: ["pods"]
- level: None
"""


# Children die with the harness (prctl PR_SET_PDEATHSIG): a test runner that
# kills a timed-out test leaves no control plane behind. `kcluster.py up`
# turns it off: its processes outlive it until `down`.
DIE_WITH_PARENT = True


_LIBC = ctypes.CDLL(None, use_errno=True)  # loaded now: the child runs no import


def _die_with_parent():
    _LIBC.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Proc:
    """One child process with its log; stopped by PID."""

    def __init__(self, name, cmd, logdir, env=None):
        self.name = name
        self.cmd = cmd
        self.logpath = os.path.join(logdir, name + ".log")
        self.log = open(self.logpath, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                                     preexec_fn=_die_with_parent if DIE_WITH_PARENT else None)
        self.pid = self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def tail(self, n=4000):
        try:
            with open(self.logpath, "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - n))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(sig)
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            except ProcessLookupError:
                pass
        self.log.close()
        return self.proc.returncode
