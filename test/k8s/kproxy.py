"""kube-proxy of the pinned release (test/k8s/build.sh) on a real node
(knode.Node), in iptables mode, so that Services work as in a cluster:
ClusterIPs from the pods (the `kubernetes` Service: in-cluster clients such as
gpushare's pods reach the apiserver) and NodePorts on 127.0.0.1 (what
kube-scheduler calls, deploy/scheduler/).

    proxy = kproxy.KubeProxy(cp, node).start()   # cp.api_bind must be "0.0.0.0"
    proxy.stop()                                 # its rules gone, sysctls restored

The machine's network namespace is shared: kube-proxy's iptables chains
(KUBE-SERVICES, KUBE-NODEPORTS, ...) have fixed names, so one kube-proxy at a
time runs on a machine (a lock file, LOCK, held from start to stop; a second
test run waits for it). While it runs, its NodePorts on 127.0.0.1 answer for
every process of the machine. stop() runs `kube-proxy --cleanup` (every
KUBE-* rule of kube-proxy removed) and restores route_localnet, the one
kernel tunable it sets here (the conntrack ones are turned off in its
configuration). docs/real-cluster.md, "Services: kube-proxy".
"""
import atexit
import fcntl
import os
import subprocess
import time
import urllib.request

import yaml

from kbase import Fatal, free_port, k8s_bin_dir, wait_for
import knode

LOCK = "/run/lock/gpushare-kube-proxy.lock" if os.path.isdir("/run/lock") else "/tmp/gpushare-kube-proxy.lock"
ROUTE_LOCALNET = "net/ipv4/conf/all/route_localnet"
LOCK_TIMEOUT = float(os.environ.get("GS_KUBE_PROXY_LOCK_TIMEOUT", "1800"))


def kubernetes_endpoint(cp, address):
    """The `kubernetes` Service's EndpointSlice: address:api_port. The
    control plane runs with --endpoint-reconciler-type=none (its advertised
    address is loopback, which an EndpointSlice may not hold), so the harness
    writes what the reconciler would, with the machine's address."""
    return cp.admin.apply({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"kubernetes.io/service-name": "kubernetes",
                                "endpointslice.kubernetes.io/managed-by": "gpushare-test"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "port": cp.api_port, "protocol": "TCP"}]})


class KubeProxy:
    """kube-proxy as the user system:kube-proxy (a client certificate of the
    cluster CA: the built-in binding to system:node-proxier), beside node."""

    def __init__(self, cp, node):
        self.cp = cp
        self.node = node
        self.dir = os.path.join(node.dir, "kube-proxy")
        self.binary = os.path.join(k8s_bin_dir(), "kube-proxy")
        self.proc = None
        self.lock = None
        self.saved = None
        self.healthz = None

    def config(self):
        """The KubeProxyConfiguration (dict): iptables mode, NodePorts on
        loopback only, no conntrack tunables, the node's pod subnet as the
        cluster's."""
        self.healthz = free_port()
        return {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": self.kubeconfig},
            "hostnameOverride": self.node.name,
            "mode": "iptables",
            "bindAddress": "127.0.0.1",
            "healthzBindAddress": f"127.0.0.1:{self.healthz}",
            "metricsBindAddress": f"127.0.0.1:{free_port()}",
            # kube-scheduler calls the NodePort at 127.0.0.1 (deploy/scheduler/)
            "nodePortAddresses": ["127.0.0.0/8"],
            "iptables": {"localhostNodePorts": True, "syncPeriod": "30s", "minSyncPeriod": "0s"},
            "clusterCIDR": self.node.pod_subnet,
            "detectLocalMode": "ClusterCIDR",
            # the machine's conntrack table is not ours to resize
            "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s",
                          "tcpCloseWaitTimeout": "0s"},
            # lowering it needs CAP_SYS_RESOURCE, which this container lacks
            "oomScoreAdj": self.oom_score_adj,
        }

    def start(self, timeout=180):
        if not os.access(self.binary, os.X_OK):
            raise FileNotFoundError(f"{self.binary}: missing. Build it with test/k8s/build.sh "
                                    "(docs/real-cluster.md), or set GS_K8S_BIN")
        os.makedirs(self.dir, exist_ok=True)
        self.lock = open(LOCK, "w")
        deadline = time.time() + LOCK_TIMEOUT
        while True:
            try:
                fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.time() > deadline:
                    raise Fatal(f"{LOCK}: another kube-proxy holds the machine's iptables for "
                                f"{LOCK_TIMEOUT:.0f} s")
                time.sleep(1)
        with open(f"/proc/sys/{ROUTE_LOCALNET}") as f:
            self.saved = f.read().strip()
        with open("/proc/self/oom_score_adj") as f:
            self.oom_score_adj = int(f.read())
        try:
            self.kubeconfig = self.node.client_kubeconfig("kube-proxy", "system:kube-proxy")
            path = os.path.join(self.dir, "config.yaml")
            with open(path, "w") as f:
                yaml.safe_dump(self.config(), f)
            kubernetes_endpoint(self.cp, knode.host_ip())
            self.proc = self.node.run("kube-proxy", [self.binary, f"--config={path}", "--v=2"],
                                      in_ns=False)
            atexit.register(self.stop)  # before the node's own stop (atexit: last in, first out)
            wait_for(self.ready, timeout, "kube-proxy's first sync (/healthz)", 0.2)
        except BaseException:
            self.stop()
            raise
        return self

    def ready(self):
        if not self.proc.alive():
            raise Fatal("kube-proxy exited:\n" + self.proc.tail())
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.healthz}/healthz", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def rules(self):
        """kube-proxy's nat rules now (iptables -t nat -S), for tests."""
        return subprocess.run(["iptables", "-t", "nat", "-S"], capture_output=True, text=True).stdout

    def stop(self):
        if self.lock is None:
            return
        try:
            if self.proc is not None:
                self.proc.stop()
                if self.proc.name in self.node.procs:
                    self.node.beside.remove(self.proc.name)
                    del self.node.procs[self.proc.name]
                subprocess.run([self.binary, "--cleanup", "--v=0"], capture_output=True, timeout=120)
            if self.saved is not None:
                with open(f"/proc/sys/{ROUTE_LOCALNET}", "w") as f:
                    f.write(self.saved)
        finally:
            fcntl.flock(self.lock, fcntl.LOCK_UN)
            self.lock.close()
            self.lock = None
