"""NetworkPolicy enforced on a real node (knode.Node): kube-router's
network-policy controller alone (test/k8s/netpol/, built by
test/k8s/build.sh), iptables and ipset in the machine's network namespace.
Test-only: never shipped in deploy/ (docs/real-cluster.md, "NetworkPolicy:
kube-router's firewall").

    enforcer = knetpol.KubeRouter(cp, node).start()
    enforcer.programmed(pod_ip)      # True once the pod's firewall is in place
    enforcer.stop()                  # its chains, rules and ipsets gone

Only `--run-firewall`: no routing (no BGP, no gRPC admin port) and no service
proxy (kube-proxy stays the proxy: kproxy.py); kube-router's reported flaws
are in those two (docs/real-cluster.md). Its chains and ipsets have fixed
names (KUBE-ROUTER-INPUT, KUBE-POD-FW-*, KUBE-SRC-*, ...), so one runs on a
machine at a time (LOCK, held from start to stop).

stop() removes what the controller made itself: its jumps from INPUT,
FORWARD and OUTPUT, its chains (CHAINS), its ipsets (IPSETS). v2.1.0's own
`--cleanup-config` does not serve here: it also flushes the machine's IPVS
table and every ipset (the routing controller's cleanup), and its
network-policy part runs on a controller without iptables handlers.
"""
import os
import shlex
import subprocess

from kbase import Fatal, free_port
import kdaemon

LOCK = kdaemon.lock_path("kube-router")
LOCK_TIMEOUT = float(os.environ.get("GS_KUBE_ROUTER_LOCK_TIMEOUT", "1800"))
USER = "system:kube-router"
ROLE = "gpushare-test:kube-router"
# what the network-policy controller names (pkg/controllers/netpol)
CHAINS = ("KUBE-ROUTER-", "KUBE-POD-FW-", "KUBE-NWPLCY-")
IPSETS = ("KUBE-SRC-", "KUBE-DST-")
BUILTIN = ("INPUT", "FORWARD", "OUTPUT")


def rbac(cp):
    """Read access to what kube-router's informers list and watch (it waits
    for all of them, whichever controller runs), for USER."""
    cp.admin.apply({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": ROLE},
        "rules": [{"apiGroups": [""], "resources": ["pods", "namespaces", "nodes", "services", "endpoints"],
                   "verbs": ["get", "list", "watch"]},
                  {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
                   "verbs": ["get", "list", "watch"]},
                  {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"],
                   "verbs": ["get", "list", "watch"]}]})
    cp.admin.apply({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": ROLE},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}]})


def filter_rules(cmd="iptables"):
    return subprocess.run([cmd, "-w", "-t", "filter", "-S"], capture_output=True, text=True).stdout


def ipsets():
    r = subprocess.run(["ipset", "list", "-n"], capture_output=True, text=True)
    return r.stdout.split() if r.returncode == 0 else []


def leftovers():
    """kube-router's rules, chains and ipsets on the machine now
    (["iptables: -A ...", "ipset: KUBE-SRC-..."]): empty after stop()."""
    out = []
    for cmd in ("iptables", "ip6tables"):
        out += [f"{cmd}: {r}" for r in filter_rules(cmd).splitlines() if any(c in r for c in CHAINS)]
    return out + [f"ipset: {s}" for s in ipsets() if s.startswith(IPSETS)]


def clean():
    """Removes the controller's jumps, chains and ipsets (CHAINS, IPSETS), for
    iptables and ip6tables; the chains flushed first, then deleted, then the
    ipsets they referenced."""
    for cmd in ("iptables", "ip6tables"):
        chains = []
        for r in filter_rules(cmd).splitlines():
            args = shlex.split(r)
            if args[:1] == ["-N"] and args[1].startswith(CHAINS):
                chains.append(args[1])
            elif args[:1] == ["-A"] and args[1] in BUILTIN and "-j" in args \
                    and args[args.index("-j") + 1].startswith(CHAINS):
                subprocess.run([cmd, "-w", "-t", "filter", "-D", *args[1:]], capture_output=True)
        for flag in ("-F", "-X"):
            for c in chains:
                subprocess.run([cmd, "-w", "-t", "filter", flag, c], capture_output=True)
    for s in ipsets():
        if s.startswith(IPSETS):
            subprocess.run(["ipset", "destroy", s], capture_output=True)


class KubeRouter(kdaemon.Daemon):
    """kube-router --run-firewall as USER (a client certificate of the
    cluster CA, bound to ROLE), beside node, in the machine's network
    namespace."""
    NAME = "kube-router"
    LOCK = LOCK
    LOCK_TIMEOUT = LOCK_TIMEOUT
    READY = "kube-router's controllers healthy (/healthz)"

    def __init__(self, cp, node, service_range="10.0.0.0/24"):
        super().__init__(cp, node)
        self.service_range = service_range

    def check(self):
        for tool in ("ipset", "iptables-restore"):
            if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode:
                raise Fatal(f"{tool}: not installed (tools/dev.sh setup installs it)")

    def launch(self):
        clean()  # what a killed run may have left
        rbac(self.cp)
        kubeconfig = self.node.client_kubeconfig("kube-router", USER)
        self.health = free_port()
        return self.node.run("kube-router", [
            self.binary, f"--kubeconfig={kubeconfig}", f"--hostname-override={self.node.name}",
            "--run-firewall=true", "--run-router=false", "--run-service-proxy=false",
            "--enable-cni=false", "--enable-ipv4=true", "--enable-ipv6=false",
            f"--service-cluster-ip-range={self.service_range}",
            f"--health-port={self.health}", "--metrics-port=0", "--v=1"], in_ns=False)

    def programmed(self, ip):
        """The pod at ip has its firewall chain: its inbound traffic is
        decided by the policies that select it."""
        self.alive()
        return any(r.startswith("-A KUBE-ROUTER-FORWARD") and f"-d {ip}/32" in r and "KUBE-POD-FW-" in r
                   for r in filter_rules().splitlines())

    def cleanup(self, started):
        clean()
