"""A real Kubernetes control plane on loopback, for tests and for people.

etcd + kube-apiserver (TLS, static tokens, --authorization-mode=Node,RBAC, an
audit log of the extender's requests) + kube-controller-manager (Jobs,
StatefulSets and ReplicaSets create real pods; no node-lifecycle controller,
there is no kubelet) + kube-scheduler configured from deploy/scheduler/ (only
the extender URL and the kubeconfig rewritten) + gpushare-extender
authenticated as the ServiceAccount of deploy/rbac.yaml (a token from the
TokenRequest API). Nodes are API objects whose status the harness sets; a
real node (kubelet + containerd) is knode.Node.

The binaries come from test/k8s/build.sh (the pinned release built from the
official Go modules, build/k8s/bin); GS_K8S_BIN names another folder, e.g. the
v1.25 fallback unpacked from ../shared/k8s (docs/real-cluster.md).

    python3 test/k8s/kcluster.py up [--dir D]     start, print how to use it
    python3 test/k8s/kcluster.py down [--dir D]   stop every process by PID

Stdlib + PyYAML only. Every process is stopped by PID at the end, also on
failure (ControlPlane.stop, atexit). One file of a little over 800 lines: every
real-cluster test imports these pieces (ControlPlane, Extender, ServiceProxy,
RealApiServer, the object makers) as one module.
"""
import atexit
import copy
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
# run as a script (`kcluster.py up`) or imported by tools/bench: the shared
# test/lib, which ctest puts on PYTHONPATH
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
from kbase import (AUDIT_POLICY, BUILD, EXTENDER_SA, Fatal, KINDS, Kube, KubeError,
    Proc, RESOURCES, SOURCE, START_TIMEOUT, free_port, gsutil, k8s_bin_dir, make_pki, pid_alive,
    wait_for, write_kubeconfig)  # noqa: F401  (re-exported: tests use kcluster.X)
import kbase  # noqa: E402  (kbase.DIE_WITH_PARENT: `up` leaves its processes running)


class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager + kube-scheduler.

    ext_url is the gpushare extender's base URL the scheduler calls (the
    extender itself is started by the caller: Extender below).
    """

    def __init__(self, workdir, bindir=None, ext_url=None, scheduler_config=None,
                 scheduler=True, controller_manager=True, scheduler_name=None,
                 scheduler_binary=None, extra_scheduler_args=(), scheduler_via=None,
                 ext_scheme="http", feature_gates=None):
        self.dir = workdir
        os.makedirs(self.dir, exist_ok=True)
        self.bindir = bindir or k8s_bin_dir()
        self.ext_port = free_port()
        self.ext_url = ext_url or f"{ext_scheme}://127.0.0.1:{self.ext_port}"
        self.scheduler_config = scheduler_config or os.path.join(
            SOURCE, "deploy", "scheduler", "kube-scheduler-config.yaml")
        self.want_scheduler = scheduler
        self.want_cm = controller_manager
        self.scheduler_binary = scheduler_binary
        self.extra_scheduler_args = list(extra_scheduler_args)
        # Kubernetes feature gates ({"GenericWorkload": True}), passed to the
        # apiserver, the controller-manager and the scheduler alike; a gate
        # whose API group is beta (GenericWorkload: scheduling.k8s.io/v1beta1)
        # also turns the group on in the apiserver (--runtime-config)
        self.feature_gates = dict(feature_gates or {})
        self.plugin_debug = free_port()
        self.plugin_args = {}
        # the plugin form runs as deploy/plugin's ServiceAccount (its RBAC
        # applied from there), as it does in a cluster
        self.scheduler_sa = None
        # objects applied before the scheduler starts (the plugin reads the
        # gpushare ConfigMap at start-up)
        self.before_scheduler = []
        self.lease_name = "kube-scheduler"
        # the address kube-scheduler reaches the apiserver at (None: direct);
        # a function of the apiserver's port, called when the scheduler starts
        self.scheduler_via = scheduler_via
        # the apiserver's audit policy (None: no audit log). The tests read
        # the log; tools/bench/realk8s.py turns it off, as the policy logs
        # every request of gpushare's own ServiceAccounts (blocking writes)
        # and none of kube-scheduler's own user: a cost one mode would pay
        self.audit_policy = AUDIT_POLICY
        # where the apiserver listens: 0.0.0.0 lets pods reach it through
        # the kubernetes Service (kproxy.py)
        self.api_bind = "127.0.0.1"
        self.procs = {}
        self.api_port = None
        self.sched_port = None
        self.admin = None
        self.version = None
        self._stopped = False
        atexit.register(self.stop)

    # -- binaries -------------------------------------------------------
    def binary(self, name):
        p = os.path.join(self.bindir, name)
        if os.access(p, os.X_OK):
            return p
        if name == "etcd":
            found = shutil.which("etcd")
            if found:
                return found
        raise FileNotFoundError(
            f"{p}: missing. Build the pinned control plane with test/k8s/build.sh "
            f"(docs/real-cluster.md), or set GS_K8S_BIN")

    def minor(self):
        out = subprocess.run([self.binary("kube-apiserver"), "--version"], capture_output=True,
                             text=True).stdout.strip()  # "Kubernetes v1.37.2"
        self.version = out.split()[-1] if out else "unknown"
        try:
            return int(self.version.lstrip("v").split(".")[1])
        except (IndexError, ValueError):
            return 99

    # -- start ----------------------------------------------------------
    def start(self):
        d = self.dir
        pki = os.path.join(d, "pki")
        os.makedirs(pki, exist_ok=True)
        make_pki(pki)
        self.ca = os.path.join(pki, "ca.crt")
        minor = self.minor()
        self.tokens = {"admin": "admin-" + os.urandom(12).hex(),
                       "scheduler": "sched-" + os.urandom(12).hex(),
                       "cm": "kcm-" + os.urandom(12).hex()}
        with open(os.path.join(d, "tokens.csv"), "w") as f:
            f.write(f'{self.tokens["admin"]},admin,admin-uid,"system:masters"\n')
            f.write(f'{self.tokens["scheduler"]},system:kube-scheduler,kube-scheduler-uid\n')
            f.write(f'{self.tokens["cm"]},system:kube-controller-manager,kcm-uid\n')
        self.audit_log = os.path.join(d, "audit.log")
        audit = []
        if self.audit_policy:
            with open(os.path.join(d, "audit-policy.yaml"), "w") as f:
                f.write(self.audit_policy)
            audit = [f"--audit-policy-file={d}/audit-policy.yaml",
                     f"--audit-log-path={self.audit_log}",
                     "--audit-log-format=json", "--audit-log-mode=blocking"]

        # etcd
        etcd = self.binary("etcd")
        ep, pp = free_port(), free_port()
        cmd = [etcd, "--name", "default", "--data-dir", os.path.join(d, "etcd"),
               "--listen-client-urls", f"http://127.0.0.1:{ep}",
               "--advertise-client-urls", f"http://127.0.0.1:{ep}",
               "--listen-peer-urls", f"http://127.0.0.1:{pp}",
               "--initial-advertise-peer-urls", f"http://127.0.0.1:{pp}",
               "--initial-cluster", f"default=http://127.0.0.1:{pp}",
               "--log-level", "warn"]
        ev = subprocess.run([etcd, "--version"], capture_output=True, text=True).stdout
        if "Version: 3.4" not in ev:
            cmd.append("--unsafe-no-fsync")  # a test cluster: speed over durability
        self.procs["etcd"] = Proc("etcd", cmd, d)
        wait_for(lambda: self._http_ok(f"http://127.0.0.1:{ep}/health"), START_TIMEOUT, "etcd health")

        # kube-apiserver
        self.api_port = free_port()
        self.server = f"https://127.0.0.1:{self.api_port}"
        cmd = [self.binary("kube-apiserver"),
               f"--etcd-servers=http://127.0.0.1:{ep}",
               f"--bind-address={self.api_bind}", "--advertise-address=127.0.0.1",
               f"--secure-port={self.api_port}",
               f"--tls-cert-file={pki}/apiserver.crt", f"--tls-private-key-file={pki}/apiserver.key",
               f"--client-ca-file={self.ca}",
               f"--service-account-key-file={pki}/sa.pub",
               f"--service-account-signing-key-file={pki}/sa.key",
               "--service-account-issuer=https://kubernetes.default.svc",
               "--api-audiences=https://kubernetes.default.svc",
               f"--token-auth-file={d}/tokens.csv",
               "--authorization-mode=Node,RBAC",
               "--service-cluster-ip-range=10.0.0.0/24",
               # the kubernetes Service's endpoint may not be a loopback address
               "--endpoint-reconciler-type=none",
               # a real node's name does not resolve: /containerLogs goes to its IP
               "--kubelet-preferred-address-types=InternalIP,Hostname",
               f"--requestheader-client-ca-file={pki}/front-proxy-ca.crt",
               "--requestheader-allowed-names=front-proxy-client",
               "--requestheader-extra-headers-prefix=X-Remote-Extra-",
               "--requestheader-group-headers=X-Remote-Group",
               "--requestheader-username-headers=X-Remote-User",
               f"--proxy-client-cert-file={pki}/front-proxy-client.crt",
               f"--proxy-client-key-file={pki}/front-proxy-client.key",
               *self.gate_args(), *self.runtime_config_args(),
               *audit]
        self.procs["kube-apiserver"] = Proc("kube-apiserver", cmd, d)
        self.admin = Kube(self.server, self.tokens["admin"], self.ca)
        wait_for(self._apiserver_ready, START_TIMEOUT, "kube-apiserver /readyz", interval=0.2)
        self.kubeconfig = write_kubeconfig(os.path.join(d, "admin.kubeconfig"), self.server,
                                           self.ca, self.tokens["admin"])

        # what gpushare ships: RBAC and the ConfigMap
        self.admin.apply_file(os.path.join(SOURCE, "deploy", "rbac.yaml"))
        if self.scheduler_sa:
            with open(os.path.join(SOURCE, "deploy", "plugin", "gpushare-scheduler.yaml")) as f:
                for doc in yaml.safe_load_all(f):
                    if doc and doc["kind"] in ("ServiceAccount", "ClusterRoleBinding", "Role",
                                               "RoleBinding"):
                        self.admin.apply(doc)
        for obj in self.before_scheduler:
            self.admin.apply(obj)

        if self.want_cm:
            self.start_controller_manager(minor)
            # ServiceAccount admission needs each namespace's "default" SA
            wait_for(lambda: self._alive("kube-controller-manager")
                     and self.admin.try_get("serviceaccounts", "default", "default"),
                     START_TIMEOUT, "the default ServiceAccount (kube-controller-manager)", 0.2)
        if self.want_scheduler:
            self.start_scheduler(minor)
        return self

    # API groups a feature gate needs served (beta groups are off by default)
    GATE_APIS = {"GenericWorkload": "scheduling.k8s.io/v1beta1"}

    def gate_args(self):
        if not self.feature_gates:
            return []
        gates = ",".join(f"{k}={'true' if v else 'false'}" for k, v in sorted(self.feature_gates.items()))
        return [f"--feature-gates={gates}"]

    def runtime_config_args(self):
        apis = [self.GATE_APIS[k] + "=true" for k, v in sorted(self.feature_gates.items())
                if v and k in self.GATE_APIS]
        return [f"--runtime-config={','.join(apis)}"] if apis else []

    def start_controller_manager(self, minor):
        d = self.dir
        kc = write_kubeconfig(os.path.join(d, "kcm.kubeconfig"), self.server, self.ca, self.tokens["cm"])
        off = "-nodelifecycle" if minor < 28 else "-node-lifecycle-controller"
        cmd = [self.binary("kube-controller-manager"), f"--kubeconfig={kc}",
               f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}",
               f"--controllers=*,{off}", "--leader-elect=false",
               "--use-service-account-credentials=true",
               f"--service-account-private-key-file={d}/pki/sa.key",
               f"--root-ca-file={self.ca}",
               f"--cluster-signing-cert-file={self.ca}", f"--cluster-signing-key-file={d}/pki/ca.key",
               "--bind-address=127.0.0.1", f"--secure-port={free_port()}",
               *self.gate_args()]
        self.procs["kube-controller-manager"] = Proc("kube-controller-manager", cmd, d)

    def scheduler_config_text(self, minor, url_prefix=None):
        """deploy/scheduler's configuration with only the extender URL and the
        kubeconfig rewritten (and v1beta3 for a v1.25 scheduler)."""
        with open(self.scheduler_config) as f:
            cfg = yaml.safe_load(f)
        cfg["clientConnection"]["kubeconfig"] = self.sched_kubeconfig
        for ext in cfg.get("extenders", []):
            ext["urlPrefix"] = url_prefix or (self.ext_url + "/gpushare-scheduler")
        # The plugin form (deploy/scheduler/gpushare-scheduler-config.yaml): in
        # the tests it is the cluster's only scheduler, so it takes the
        # default name (its Lease stays its own); its /debug/ledger listens
        # on plugin_debug.
        self.lease_name = cfg.get("leaderElection", {}).get("resourceName", "kube-scheduler")
        for prof in cfg.get("profiles", []):
            for pc in prof.get("pluginConfig", []):
                if pc.get("name") == "GpuShare":
                    prof["schedulerName"] = "default-scheduler"
                    pc["args"]["debugAddress"] = f"127.0.0.1:{self.plugin_debug}"
                    if self.plugin_args:
                        pc["args"].update(self.plugin_args)
        if minor < 26:
            cfg["apiVersion"] = "kubescheduler.config.k8s.io/v1beta3"
        return yaml.safe_dump(cfg, sort_keys=False)

    def start_scheduler(self, minor=None, name="kube-scheduler"):
        d = self.dir
        minor = minor if minor is not None else self.minor()
        token = (self.service_account_token(name=self.scheduler_sa) if self.scheduler_sa
                 else self.tokens["scheduler"])
        server = self.scheduler_via(self.api_port) if self.scheduler_via else self.server
        self.sched_kubeconfig = write_kubeconfig(os.path.join(d, "scheduler.kubeconfig"), server,
                                                 self.ca, token)
        path = os.path.join(d, name + "-config.yaml")
        with open(path, "w") as f:
            f.write(self.scheduler_config_text(minor))
        self.sched_port = free_port()
        cmd = [self.scheduler_binary or self.binary("kube-scheduler"), f"--config={path}",
               f"--authentication-kubeconfig={self.sched_kubeconfig}",
               f"--authorization-kubeconfig={self.sched_kubeconfig}",
               "--bind-address=127.0.0.1", f"--secure-port={self.sched_port}",
               *self.gate_args(), *self.extra_scheduler_args]
        self.procs[name] = Proc(name, cmd, d)
        wait_for(lambda: self._scheduler_leads(), START_TIMEOUT, "kube-scheduler leadership", 0.2)

    def scheduler_get(self, path, timeout=30):
        """GET path from kube-scheduler's own port (its self-signed serving
        certificate, the admin token): /metrics, /debug/pprof/..."""
        import ssl
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        sched = Kube(f"https://127.0.0.1:{self.sched_port}", self.tokens["admin"], ctx=ctx)
        with sched.open("GET", path, timeout=timeout, accept="*/*") as r:
            return r.read()

    def scheduler_metrics(self):
        """kube-scheduler's own /metrics text."""
        return self.scheduler_get("/metrics").decode()

    def _alive(self, name):
        p = self.procs[name]
        if not p.alive():
            raise Fatal(f"{name} exited:\n" + p.tail())
        return True

    def _scheduler_leads(self):
        p = self.procs["kube-scheduler"]
        if not p.alive():
            raise Fatal("kube-scheduler exited:\n" + p.tail())
        lease = self.admin.try_get("leases", "kube-system", self.lease_name)
        return lease and lease.get("spec", {}).get("holderIdentity")

    def _http_ok(self, url):
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200

    def _apiserver_ready(self):
        p = self.procs["kube-apiserver"]
        if not p.alive():
            raise Fatal("kube-apiserver exited:\n" + p.tail())
        try:
            # /readyz answers text "ok", not JSON: the open response's status
            with self.admin.open("GET", "/readyz", timeout=5, accept="*/*") as r:
                return r.status == 200
        except (KubeError, OSError):
            return False

    # -- helpers for tests ----------------------------------------------
    def service_account_token(self, ns="kube-system", name="gpushare-extender", seconds=86400):
        tr = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
              "spec": {"expirationSeconds": seconds}}
        res = self.admin.call("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token", tr)
        return res["status"]["token"]

    def extender_kubeconfig(self):
        path = os.path.join(self.dir, "gpushare-extender.kubeconfig")
        if not os.path.exists(path):
            write_kubeconfig(path, self.server, self.ca, self.service_account_token())
        return path

    def add_node(self, name, labels=None, annotations=None, capacity=None, taints=None):
        """A Node as an API object, then its status as a kubelet would set it."""
        md = {"name": name, "labels": dict({"kubernetes.io/hostname": name}, **(labels or {}))}
        if annotations:
            md["annotations"] = annotations
        obj = {"apiVersion": "v1", "kind": "Node", "metadata": md, "spec": {}}
        if taints:
            obj["spec"]["taints"] = taints
        self.admin.apply(obj)
        self.set_node_status(name, capacity or {})
        # The TaintNodesByCondition admission plugin taints a new Node
        # not-ready; the node-lifecycle controller (off: no kubelet) would lift
        # it once the node reports Ready. Do what it would.
        self.admin.patch("nodes", None, name, {"spec": {"taints": taints or None}})
        return self.admin.get("nodes", None, name)

    def set_node_status(self, name, capacity):
        cap = dict({"cpu": "64", "memory": "512Gi", "pods": "110"}, **capacity)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        status = {"capacity": cap, "allocatable": dict(cap),
                  "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                  "message": "gpushare test node", "lastHeartbeatTime": now,
                                  "lastTransitionTime": now}]}
        self.admin.patch("nodes", None, name, {"status": status}, sub="status")

    def audit(self, user=EXTENDER_SA):
        """The audit log's entries for user (every entry when user is None)."""
        out = []
        try:
            with open(self.audit_log) as f:
                for line in f:
                    try:
                        e = json.loads(line)
                    except ValueError:
                        continue
                    if user is None or e.get("user", {}).get("username") == user:
                        out.append(e)
        except FileNotFoundError:
            pass
        return out

    def audit_bindings(self, pod_name):
        """The Bindings of pod_name the apiserver answered (audit log)."""
        return [e for e in self.audit(user=None) if e.get("stage") == "ResponseComplete"
                and (e.get("objectRef") or {}).get("subresource") == "binding"
                and (e.get("objectRef") or {}).get("name") == pod_name]

    def stop(self):
        if self._stopped:
            return
        self._stopped = True
        for name in ("kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"):
            for key in [k for k in self.procs if k.startswith(name)]:
                self.procs[key].stop()
        for key, p in self.procs.items():
            if p.alive():
                p.stop()

    def dump_logs(self, n=3000):
        return "\n".join(f"--- {k} ---\n{p.tail(n)}" for k, p in self.procs.items())


class Extender:
    """gpushare-extender against the control plane, as its ServiceAccount."""

    def __init__(self, cp, port=None, args=(), name="gpushare-extender", binary=None,
                 ssl_context=None, env=None):
        self.cp = cp
        self.port = port or cp.ext_port
        # HTTPS when given the context that verifies it (and, for the verbs,
        # presents a client certificate)
        self.ctx = ssl_context
        self.base = f"{'https' if ssl_context else 'http'}://127.0.0.1:{self.port}"
        binary = binary or os.path.join(BUILD, "src", "gpushare-extender")
        cmd = [binary, "--kubeconfig", cp.extender_kubeconfig(),
               "--listen", f"127.0.0.1:{self.port}", *args]
        self.vglog = None
        if os.environ.get("GS_VALGRIND"):
            self.vglog = os.path.join(cp.dir, f"{name}-{self.port}.valgrind")
            cmd = ["valgrind", "--error-exitcode=99", "--leak-check=full",
                   "--errors-for-leak-kinds=definite", f"--log-file={self.vglog}", *cmd]
        self.proc = Proc(f"{name}-{self.port}-{int(time.time() * 1000) % 100000}", cmd, cp.dir,
                         env=dict(os.environ, **env) if env else None)
        cp.procs[self.proc.name] = self.proc

    def status(self, path):
        if self.ctx is None:
            return gsutil.http_status(self.base, path)
        try:
            with urllib.request.urlopen(self.base + path, context=self.ctx, timeout=5) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
        except OSError:
            return 0, b""

    def ready(self):
        return self.status("/readyz")[0] == 200

    def wait_ready(self, timeout=60):
        def ok():
            if not self.proc.alive():
                raise Fatal("extender exited:\n" + self.proc.tail())
            return self.ready()
        wait_for(ok, timeout * (6 if self.vglog else 1), "gpushare-extender /readyz")
        return self

    def ledger(self, node=None):
        return json.loads(self.status("/debug/ledger" + (f"?node={node}" if node else ""))[1])

    def metrics(self):
        return self.status("/metrics")[1].decode()

    def post(self, verb, body):
        req = urllib.request.Request(f"{self.base}/gpushare-scheduler/{verb}",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30, context=self.ctx) as r:
            return json.loads(r.read())

    def kill(self, sig=signal.SIGKILL):
        rc = self.proc.stop(sig, timeout=60 if self.vglog else 20)
        if self.vglog and sig != signal.SIGKILL:
            with open(self.vglog) as f:
                report = f.read()
            if rc == 99 or "ERROR SUMMARY: 0 errors" not in report:
                raise AssertionError("valgrind found errors:\n" + report[-6000:])
        return rc


class ServiceProxy:
    """What a Service does for kube-scheduler: each new TCP connection goes to
    a backend that is Ready (/readyz 200), checked at connect time."""

    def __init__(self, port, backends):
        self.port = port
        self.backends = list(backends)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(64)
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _pick(self):
        for b in self.backends:
            if b.proc.alive() and b.ready():
                return b
        return None

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        b = self._pick()
        if b is None:
            c.close()
            return
        try:
            u = socket.create_connection(("127.0.0.1", b.port), timeout=5)
            u.settimeout(None)
        except OSError:
            c.close()
            return

        def pump(src, dst):
            try:
                while True:
                    data = src.recv(65536)
                    if not data:
                        break
                    dst.sendall(data)
            except OSError:
                pass
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        threading.Thread(target=pump, args=(u, c), daemon=True).start()
        pump(c, u)

    def close(self):
        self.closed = True
        self.sock.close()


class RealApiServer:
    """The FakeApiServer interface (test/apiserver) over a real control plane,
    so one test body runs against both (issue 11, item 6). Objects the tests
    build carry no server-set fields; the real apiserver assigns uid,
    resourceVersion and defaults. requests() reads the audit log."""

    def __init__(self, cp):
        self.cp = cp
        self.k = cp.admin
        self.url = cp.server
        self._since = 0

    def stop(self):
        """The control plane outlives a test: nothing to stop."""

    def add(self, obj):
        obj = copy.deepcopy(obj)
        md = obj["metadata"]
        for key in ("uid", "resourceVersion", "creationTimestamp"):
            md.pop(key, None)
        status = obj.pop("status", None)
        if obj["kind"] == "Pod":
            obj["spec"].setdefault("terminationGracePeriodSeconds", 0)
        out = self.k.create(obj)
        res = KINDS[obj["kind"]][1]
        ns = md.get("namespace", "default") if KINDS[obj["kind"]][2] else None
        if obj["kind"] == "Node":
            self.cp.set_node_status(md["name"], (status or {}).get("capacity", {}))
            out = self.k.get(res, ns, md["name"])
        elif status and status.get("phase") and status["phase"] != "Pending":
            out = self.k.patch(res, ns, md["name"], {"status": {"phase": status["phase"]}}, sub="status")
        return out

    def upsert(self, obj):
        if self.get(KINDS[obj["kind"]][1], obj["metadata"].get("namespace"), obj["metadata"]["name"]):
            return self.update(obj)
        return self.add(obj)

    def update(self, obj):
        obj = copy.deepcopy(obj)
        kind = obj["kind"]
        res, nsd = KINDS[kind][1], KINDS[kind][2]
        ns = obj["metadata"].get("namespace", "default") if nsd else None
        cur = self.k.get(res, ns, obj["metadata"]["name"])
        obj["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
        status = obj.get("status")
        out = self.k.update(obj)
        if kind == "Node" and status and status.get("capacity") != cur.get("status", {}).get("capacity"):
            self.cp.set_node_status(obj["metadata"]["name"], {k: v for k, v in status["capacity"].items()})
            out = self.k.get(res, ns, obj["metadata"]["name"])
        return out

    def get(self, resource, namespace, name):
        nsd = RESOURCES[resource][2]
        return self.k.try_get(resource, (namespace or "default") if nsd else None, name)

    def list(self, resource=None, namespace=None):
        return self.k.list(resource, namespace)

    def patch(self, resource, namespace, name, patch):
        nsd = RESOURCES[resource][2]
        return self.k.patch(resource, (namespace or "default") if nsd else None, name, patch)

    def events(self):
        """Events in every namespace, as FakeApiServer.events() gives them
        ({"namespace", "name", "object"})."""
        return [{"namespace": e["metadata"].get("namespace"), "name": e["metadata"]["name"],
                 "object": e} for e in self.k.list("events")]

    def set_pod_phase(self, namespace, name, phase, **status):
        st = dict(status)
        st["phase"] = phase
        return self.k.patch("pods", namespace, name, {"status": st}, sub="status")

    def delete(self, resource, namespace, name):
        nsd = RESOURCES[resource][2]
        return self.k.delete(resource, (namespace or "default") if nsd else None, name, grace=0)

    def requests(self, since=0, method=None, path=None):
        """The extender's requests and every Binding, from the audit log:
        dicts with method, path, status (as FakeApiServer.requests)."""
        verbs = {"create": "POST", "update": "PUT", "patch": "PATCH", "delete": "DELETE",
                 "get": "GET", "list": "GET", "watch": "GET"}
        out = []
        for e in self.cp.audit(user=None)[self._since:]:
            if e.get("stage") != "ResponseComplete":
                continue
            m = verbs.get(e.get("verb"), e.get("verb"))
            uri = e.get("requestURI", "")
            if method and m != method:
                continue
            if path and not __import__("re").search(path, uri.split("?")[0]):
                continue
            out.append({"method": m, "path": uri.split("?")[0], "status": e.get("responseStatus", {}).get("code"),
                        "user": e.get("user", {}).get("username")})
        return out[since:]

    def _audit_len(self):
        return len(self.cp.audit(user=None))

    def reset(self, keep_namespaces=("default", "kube-system")):
        """Removes what a test made: pods (at once), nodes, the gpushare
        ConfigMaps, the extender's Lease."""
        for p in self.k.list("pods"):
            if p["metadata"]["namespace"] in keep_namespaces:
                self.k.delete("pods", p["metadata"]["namespace"], p["metadata"]["name"], grace=0)
        for n in self.k.list("nodes"):
            self.k.delete("nodes", None, n["metadata"]["name"])
        for cm in self.k.list("configmaps", "kube-system"):
            name = cm["metadata"]["name"]
            if name == "gpushare-config" or name.startswith("unhealthy-gpu-"):
                self.k.delete("configmaps", "kube-system", name)
        self.k.delete("leases", "kube-system", "gpushare-extender")
        wait_for(lambda: not [p for p in self.k.list("pods")
                              if p["metadata"]["namespace"] in keep_namespaces],
                 60, "the test's pods to be gone")
        self._since = self._audit_len()


# -- objects as their users write them ---------------------------------
gpu_node_capacity = gsutil.gpu_capacity


def no_default_spread(config, scheduler_name):
    """A KubeSchedulerConfiguration (dict) whose first profile's
    PodTopologySpread has no default constraints (defaultingType List, none
    listed): with them no pod is signable, and kube-scheduler's opportunistic
    batching never runs (docs/plugin.md)."""
    profiles = config.setdefault("profiles", [{"schedulerName": scheduler_name}])
    profiles[0].setdefault("pluginConfig", []).append(
        {"name": "PodTopologySpread", "args": {"defaultingType": "List"}})
    return config


def gpu_pod(name, ns="default", units=0, whole=0, count=None, labels=None, node_selector=None,
            priority_class=None, host_network=False, containers=1):
    """gsutil.pod as a user would create it: no uid or status (the apiserver
    sets them), restartPolicy Never, no grace period (no kubelet to wait for)."""
    p = gsutil.pod(name, units=units, count=count, ns=ns, whole=whole, labels=labels)
    for key in ("uid",):
        p["metadata"].pop(key, None)
    p["metadata"].setdefault("labels", {})
    p.pop("status", None)
    spec = p["spec"]
    c = spec["containers"][0]
    c["image"] = "registry.k8s.io/pause:3.10"
    c["resources"].pop("requests", None)
    spec["containers"] = [dict(c, name=f"c{i}") for i in range(containers)]
    spec.update({"restartPolicy": "Never", "terminationGracePeriodSeconds": 0})
    if node_selector:
        spec["nodeSelector"] = node_selector
    if priority_class:
        spec["priorityClassName"] = priority_class
    if host_network:
        spec["hostNetwork"] = True
    return p


truth_from_pods = gsutil.truth_from_pods


def ledger_used(ledger):
    return {(n["name"], g["index"]): g["usedMiB"] for n in ledger["nodes"] for g in n["gpus"]
            if g["usedMiB"]}


# -- command line: tools/dev.sh cluster ----------------------------------
def _demo_objects(cp, path, fake_nodes):
    """The gpushare ConfigMap of path (deploy/demo/cluster.yaml), and its
    kubelet-less Nodes when fake_nodes. Returns the ConfigMap's unit."""
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    items = [i for d in docs for i in (d["items"] if d.get("kind") == "List" else [d])]
    unit = "1GiB"
    for obj in items:
        if obj["kind"] == "ConfigMap":
            obj["metadata"].pop("resourceVersion", None)
            cp.admin.apply(obj)
            unit = obj.get("data", {}).get("gpuMemoryUnit", unit)
    for obj in items:
        if obj["kind"] == "Node" and fake_nodes:
            md = obj["metadata"]
            cp.add_node(md["name"], labels=md.get("labels"), annotations=md.get("annotations"),
                        capacity={k: v for k, v in obj.get("status", {}).get("capacity", {}).items()
                                  if k.startswith("aliyun.com/")})
    return unit


def cmd_up(args):
    kbase.DIE_WITH_PARENT = False
    d = os.path.abspath(args.dir)
    if os.path.exists(os.path.join(d, "pids")):
        print(f"cluster: already running in {d} (tools/dev.sh cluster --down stops it)", file=sys.stderr)
        return 1
    os.makedirs(d, exist_ok=True)
    cp = ControlPlane(d, ext_url=f"http://127.0.0.1:{args.port}")
    cp.ext_port = args.port
    nodes = []
    try:
        cp.start()
        unit = _demo_objects(cp, args.nodes, args.fake_nodes)
        ext = Extender(cp, port=args.port, args=("--log-level", "info"))
        ext.wait_ready()
        # the real nodes (kgpunode.py): kubelet + containerd, GPUs of the
        # fake NVML advertised by gpushare-node in the ConfigMap's unit
        import kgpunode
        nodes = kgpunode.dev_nodes(cp, d, unit)
        for n in nodes:
            cp.procs.update({f"{n.name}-{k}": p for k, p in n.procs.items()})
            atexit.unregister(n.node.stop)
    except BaseException:
        print(cp.dump_logs(), file=sys.stderr)
        for n in nodes:
            n.stop()
        cp.stop()
        raise
    with open(os.path.join(d, "pids"), "w") as f:
        for p in cp.procs.values():
            f.write(f"{p.pid} {p.name}\n")
    atexit.unregister(cp.stop)
    cp._stopped = True  # leave them running
    kubectl = os.path.join(cp.bindir, "kubectl")
    import kimages
    real = "\n".join(f"                   {n.name}: {n.mode}, {n.gpus} x 16 GiB "
                     f"({n.want()['aliyun.com/gpu-mem']} units), containerd at {n.node.containerd_sock}"
                     for n in nodes)
    fake = ("  fake nodes       as deploy/demo/cluster.yaml, no kubelet: pods bound there stay Pending\n"
            if args.fake_nodes else "")
    print(f"""
gpushare on a real control plane ({cp.version}), all on loopback:
  kube-apiserver   {cp.server}
  kube-scheduler   with the extender stanza of deploy/scheduler/
  gpushare         {ext.base}  (ledger: {ext.base}/debug/ledger), unit {unit}
  real nodes       kubelet + containerd + gpushare-node over the fake NVML (GPUs without GPUs):
{real}
{fake}  images           {kimages.BUSYBOX} is on the nodes (no registry): use it, or import
                   one: ctr --address CONTAINERD_SOCK -n k8s.io images import IMAGE.tar
  logs             {d}/*.log, {d}/nodes/*/*.log

  export KUBECONFIG={cp.kubeconfig}
  export PATH={os.path.dirname(kubectl)}:$PATH
  kubectl apply -f deploy/samples/      # written for this cluster's {unit} unit: all Running
  kubectl get pods -o wide
  kubectl logs share-2gib               # the env gpushare-node gave it
  build/tools/inspect/gpushare-inspect --url {ext.base} -d

  tools/dev.sh cluster --down     stops it""")
    return 0


def cmd_down(args):
    d = os.path.abspath(args.dir)
    pidfile = os.path.join(d, "pids")
    if not os.path.exists(pidfile):
        print(f"cluster: nothing running in {d}")
        return 0
    with open(pidfile) as f:
        entries = [line.split(None, 1) for line in f if line.strip()]
    for pid, name in reversed(entries):
        try:
            os.killpg(int(pid), signal.SIGTERM)
        except ProcessLookupError:
            continue
        deadline = time.time() + 20
        while time.time() < deadline:
            if not pid_alive(int(pid)):
                break
            time.sleep(0.1)
        else:
            try:
                os.killpg(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        print(f"cluster: stopped {name.strip()} (pid {pid})")
    import kgpunode
    for name in kgpunode.down(d):  # shims, mounts, cgroups, bridge
        print(f"cluster: node {name} torn down")
    os.remove(pidfile)
    return 0


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up")
    up.add_argument("--dir", default=os.path.join(SOURCE, "build", "cluster"))
    up.add_argument("--port", type=int, default=32766)
    up.add_argument("--nodes", default=os.path.join(SOURCE, "deploy", "demo", "cluster.yaml"),
                    help="the gpushare ConfigMap (and, with --fake-nodes, Nodes) to apply")
    up.add_argument("--fake-nodes", action="store_true",
                    help="also the kubelet-less Nodes of --nodes (pods bound there stay Pending)")
    down = sub.add_parser("down")
    down.add_argument("--dir", default=os.path.join(SOURCE, "build", "cluster"))
    args = ap.parse_args(argv)
    return cmd_up(args) if args.cmd == "up" else cmd_down(args)


if __name__ == "__main__":
    sys.exit(main())
