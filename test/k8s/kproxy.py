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
import os
import subprocess

import yaml

from kbase import free_port
import kdaemon
import knode

LOCK = kdaemon.lock_path("kube-proxy")
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


class KubeProxy(kdaemon.Daemon):
    """kube-proxy as the user system:kube-proxy (a client certificate of the
    cluster CA: the built-in binding to system:node-proxier), beside node."""
    NAME = "kube-proxy"
    LOCK = LOCK
    LOCK_TIMEOUT = LOCK_TIMEOUT
    READY = "kube-proxy's first sync (/healthz)"

    def __init__(self, cp, node):
        super().__init__(cp, node)
        self.dir = os.path.join(node.dir, "kube-proxy")
        self.saved = None

    def config(self):
        """The KubeProxyConfiguration (dict): iptables mode, NodePorts on
        loopback only, no conntrack tunables, the node's pod subnet as the
        cluster's."""
        self.health = free_port()
        return {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": self.kubeconfig},
            "hostnameOverride": self.node.name,
            "mode": "iptables",
            "bindAddress": "127.0.0.1",
            "healthzBindAddress": f"127.0.0.1:{self.health}",
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

    def launch(self):
        os.makedirs(self.dir, exist_ok=True)
        with open(f"/proc/sys/{ROUTE_LOCALNET}") as f:
            self.saved = f.read().strip()
        with open("/proc/self/oom_score_adj") as f:
            self.oom_score_adj = int(f.read())
        self.kubeconfig = self.node.client_kubeconfig("kube-proxy", "system:kube-proxy")
        path = os.path.join(self.dir, "config.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(self.config(), f)
        kubernetes_endpoint(self.cp, knode.host_ip())
        return self.node.run("kube-proxy", [self.binary, f"--config={path}", "--v=2"], in_ns=False)

    def rules(self):
        """kube-proxy's nat rules now (iptables -t nat -S), for tests."""
        return subprocess.run(["iptables", "-t", "nat", "-S"], capture_output=True, text=True).stdout

    def cleanup(self, started):
        if started:
            subprocess.run([self.binary, "--cleanup", "--v=0"], capture_output=True, timeout=120)
        if self.saved is not None:
            with open(f"/proc/sys/{ROUTE_LOCALNET}", "w") as f:
                f.write(self.saved)
