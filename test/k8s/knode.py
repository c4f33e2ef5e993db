"""A real node for the real control plane (kcluster.ControlPlane): containerd
and runc from Debian, the pinned kubelet (test/k8s/build.sh), CNI from Debian's
containernetworking-plugins, images built here (kimages.py).

    node = knode.Node(cp).start()      # registered, Ready, untainted
    node.device_plugin_dir             # ROOT/device-plugins (kubelet.sock in it)
    node.run("gpushare-node", [binary, ...], env={"LD_LIBRARY_PATH": fake_nvml})
    node.set_capacity({"aliyun.com/gpu-mem": "64"})
    node.stop()                        # pods gone, processes gone, no mount left

Everything the node owns lives under one directory (node.dir): containerd's
config, root, state and socket; the kubelet's root dir, pod logs and volume
plugin dir; the CNI config and IPAM state. Host-wide it owns a cgroup subtree
(cgroupRoot /gpushare-NAME-XXXXXX in every v1 hierarchy), a bridge gsbrXXXXXXXX on a
random 10.x.y.0/24, and the kubelet's kernel tunables (set at start as every
kubelet does, restored at stop). No system containerd is touched.

stop() deletes the node's pods and waits for the kubelet to tear them down,
stops the processes started beside it, the kubelet and containerd, then kills
whatever is left in the node's cgroups and every shim of its containerd (found
by its socket), unmounts what is left under node.dir and removes the cgroups
and the bridge. The same teardown runs from a state file (down(dir)) for
`kcluster.py down`.
"""
import atexit
import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import time

import yaml

from kbase import Fatal, Proc, START_TIMEOUT, free_port, k8s_bin_dir, pid_alive, wait_for
import kimages

CGROUP_FS = "/sys/fs/cgroup"
CNI_BIN = "/usr/lib/cni"
SYSCTLS = ("vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
           "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes")
NOT_READY_TAINT = "node.kubernetes.io/not-ready"


def host_ip():
    """The first global IPv4 address: the kubelet refuses a loopback node IP."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True,
                         text=True, check=True).stdout.split()
    return out[out.index("inet") + 1].split("/")[0]


def _free_subnet():
    used = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
    for _ in range(100):
        net = f"10.{random.randint(100, 250)}.{random.randint(0, 255)}"
        if net + "." not in used:
            return net
    raise RuntimeError("no free 10.x.y.0/24 for the node's pod network")


def _mounts_under(d, pid="self"):
    """Mount points under d in the mount namespace of pid."""
    d = os.path.realpath(d).rstrip("/") + "/"
    out = []
    with open(f"/proc/{pid}/mounts") as f:
        for line in f:
            mp = line.split()[1].replace("\\040", " ")
            if (mp + "/").startswith(d):
                out.append(mp)
    return out


def _cgroup_dirs(root):
    """Every directory of the cgroup subtree root, deepest first, in each v1 hierarchy."""
    out = []
    for h in sorted(os.listdir(CGROUP_FS)):
        top = os.path.join(CGROUP_FS, h, root.lstrip("/"))
        if os.path.isdir(top):
            for dirpath, _dirs, _files in os.walk(top, topdown=False):
                out.append(dirpath)
    return out


def _pids_in(dirs):
    pids = set()
    for d in dirs:
        try:
            with open(os.path.join(d, "cgroup.procs")) as f:
                pids.update(int(p) for p in f.read().split())
        except OSError:
            pass
    return pids


def _shims_of(sock):
    """PIDs of the containerd shims serving the containerd at sock."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if args and b"containerd-shim" in args[0] and sock.encode() in args:
            pids.append(int(p))
    return pids


def _kill_and_wait(pids, timeout=20):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.time() + timeout
    while time.time() < deadline and any(os.path.exists(f"/proc/{p}") and pid_alive(p) for p in pids):
        time.sleep(0.05)


def teardown(state):
    """The host-side cleanup of a node whose processes are stopped (or gone):
    cgroup processes and shims killed, mounts under its dir unmounted, its
    cgroups, bridge and kernel tunables restored. Idempotent."""
    dirs = _cgroup_dirs(state["cgroup_root"])
    _kill_and_wait(sorted(_pids_in(dirs) | set(_shims_of(state["containerd_sock"]))))
    for mp in sorted(_mounts_under(state["dir"]), key=len, reverse=True):
        if subprocess.run(["umount", mp], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", mp], capture_output=True)
    for d in _cgroup_dirs(state["cgroup_root"]):
        try:
            os.rmdir(d)
        except OSError:
            pass
    subprocess.run(["ip", "link", "del", state["bridge"]], capture_output=True)
    for key, val in state.get("sysctls", {}).items():
        try:
            with open(f"/proc/sys/{key}", "w") as f:
                f.write(val)
        except OSError:
            pass


class Node:
    """One kubelet + containerd registered as Node `name` of cp's apiserver.

    Attributes a test uses: name, dir, root_dir (the kubelet's --root-dir),
    device_plugin_dir (root_dir/device-plugins: kubelet.sock, where a device
    plugin puts its socket), plugins_registry_dir, pod_resources_socket,
    kubeconfig (the node's own identity, system:node:NAME), containerd_sock,
    ctr (the ctr command line for this containerd), procs (name -> kbase.Proc).
    """

    def __init__(self, cp, name=None, workdir=None, labels=None, images=("busybox",),
                 containerd_dir=None, cdi_dirs=()):
        """containerd_dir: a folder holding another containerd and its
        containerd-shim-runc-v2 (e.g. 2.x, built by tools/containerd2.sh),
        used instead of Debian's 1.6; cdi_dirs: with it, CDI on
        (enable_cdi, cdi_spec_dirs: containerd >= 1.7 only)."""
        self.cp = cp
        self.containerd_dir, self.cdi_dirs = containerd_dir, list(cdi_dirs)
        self.name = name or f"gs-node-{os.urandom(3).hex()}"
        self.dir = workdir or os.path.join(cp.dir, self.name)
        self.labels = dict(labels or {})
        self.images = images
        self.runc = shutil.which("runc") or "runc"  # a wrapper may stand in (debugging)
        self.root_dir = os.path.join(self.dir, "kubelet")
        self.device_plugin_dir = os.path.join(self.root_dir, "device-plugins")
        # in the node's mount namespace: host path -> the node's own directory
        self.ns_binds = {"/var/lib/kubelet/device-plugins": self.device_plugin_dir,
                         "/var/lib/kubelet/pod-resources": os.path.join(self.root_dir, "pod-resources"),
                         "/var/log/containers": os.path.join(self.dir, "container-logs")}
        self.plugins_registry_dir = os.path.join(self.root_dir, "plugins_registry")
        self.pod_resources_socket = os.path.join(self.root_dir, "pod-resources", "kubelet.sock")
        self.containerd_sock = os.path.join(self.dir, "containerd", "containerd.sock")
        self.ctr = ["ctr", "--address", self.containerd_sock]
        self.kubeconfig = os.path.join(self.dir, "kubelet.kubeconfig")
        self.procs = {}
        self.beside = []  # names of processes started with run(), stopped first
        self.state = {"dir": self.dir, "containerd_sock": self.containerd_sock,
                      # unique per start: two runs on one machine may use
                      # one node name (gpu-real-a: test_real_gpunode and
                      # `tools/dev.sh cluster`), and teardown kills every
                      # process of the subtree
                      "cgroup_root": f"/gpushare-{self.name}-{os.urandom(3).hex()}",
                      "bridge": "gsbr" + os.urandom(4).hex(), "sysctls": {}}
        self._stopped = False
        atexit.register(self.stop)

    # -- start ----------------------------------------------------------
    def start(self, timeout=START_TIMEOUT):
        os.makedirs(self.dir, exist_ok=True)
        for key in SYSCTLS:
            with open(f"/proc/sys/{key}") as f:
                self.state["sysctls"][key] = f.read().strip()
        with open(os.path.join(self.dir, "node-state.json"), "w") as f:
            json.dump(self.state, f)
        try:
            self._make_cgroup_root()
            self._start_containerd(timeout)
            for img in ("pause", *self.images):
                kimages.import_image(self.ctr, kimages.build_image(img))
            self._start_kubelet(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _make_cgroup_root(self):
        for h in sorted(os.listdir(CGROUP_FS)):
            if h == "unified" or not os.path.isdir(os.path.join(CGROUP_FS, h)):
                continue
            d = os.path.join(CGROUP_FS, h, self.state["cgroup_root"].lstrip("/"))
            os.makedirs(d, exist_ok=True)
            if "cpuset" in h.split(","):  # a cpuset takes no task until it has cpus and mems
                for f in ("cpuset.cpus", "cpuset.mems"):
                    with open(os.path.join(CGROUP_FS, h, f)) as src, open(os.path.join(d, f), "w") as dst:
                        dst.write(src.read())

    def _start_containerd(self, timeout):
        cd = os.path.join(self.dir, "containerd")
        net = _free_subnet()
        cni_conf = os.path.join(self.dir, "cni", "net.d")
        os.makedirs(cni_conf, exist_ok=True)
        self.pod_subnet = f"{net}.0/24"
        with open(os.path.join(cni_conf, "10-gpushare.conflist"), "w") as f:
            json.dump({"cniVersion": "1.0.0", "name": f"gpushare-{self.name}", "plugins": [
                {"type": "bridge", "bridge": self.state["bridge"], "isGateway": True, "ipMasq": False,
                 "hairpinMode": True,
                 # a default route through the bridge: Service addresses
                 # (kproxy.py) are off the pod subnet
                 "ipam": {"type": "host-local", "ranges": [[{"subnet": self.pod_subnet}]],
                          "routes": [{"dst": "0.0.0.0/0"}],
                          "dataDir": os.path.join(self.dir, "cni", "ipam")}},
            ]}, f)
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        cdi = ""
        if self.cdi_dirs:
            cdi = "  enable_cdi = true\n  cdi_spec_dirs = [%s]\n" % ", ".join(
                json.dumps(d) for d in self.cdi_dirs)
        config = f"""version = 2
root = "{cd}/root"
state = "{cd}/state"
[grpc]
  address = "{self.containerd_sock}"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "{cd}/opt"
[{cri}]
  sandbox_image = "{kimages.PAUSE}"
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  # no CAP_SYS_RESOURCE here: a pod's oom_score_adj may not go below ours
  restrict_oom_score_adj = true
{cdi}  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"
[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
  BinaryName = "{self.runc}"
  Root = "{cd}/runc"
[{cri}.cni]
  bin_dir = "{CNI_BIN}"
  conf_dir = "{cni_conf}"
"""
        os.makedirs(cd, exist_ok=True)
        path = os.path.join(cd, "config.toml")
        with open(path, "w") as f:
            f.write(config)
        # The node's own mount namespace (slave: the machine's mounts show in
        # it, none of its mounts show outside), where its directories stand at
        # the paths the kubelet hard-codes: /var/lib/kubelet/device-plugins
        # (the device plugins' kubelet.sock, not under --root-dir) and
        # /var/log/containers. Two nodes on one machine, of one test run or of
        # several, never share them. The kubelet and what run() starts join it.
        binds = []
        for host, own in self.ns_binds.items():
            os.makedirs(host, exist_ok=True)
            os.makedirs(own, exist_ok=True)
            binds.append(f"mount --bind {shlex.quote(own)} {shlex.quote(host)}")
        self.procs["containerd"] = Proc("containerd", [
            "unshare", "--mount", "--propagation", "slave", "sh", "-c",
            " && ".join([*binds, f"exec containerd --config {shlex.quote(path)}"])], self.dir,
            env=dict(os.environ, PATH=f"{self.containerd_dir}:{os.environ['PATH']}")
            if self.containerd_dir else None)

        def up():
            if not self.procs["containerd"].alive():
                raise Fatal("containerd exited:\n" + self.procs["containerd"].tail())
            return subprocess.run([*self.ctr, "version"], capture_output=True, timeout=10).returncode == 0
        wait_for(up, timeout, "containerd's socket", 0.1)

    def _node_credentials(self):
        """A client certificate of the cluster CA for system:node:NAME in
        system:nodes: the Node authorizer and NodeRestriction see a kubelet."""
        self.client_kubeconfig("kubelet", f"system:node:{self.name}", "system:nodes", self.kubeconfig)

    def client_kubeconfig(self, name, user, group=None, path=None):
        """A kubeconfig (path, default node.dir/NAME.kubeconfig) with a
        client certificate of the cluster CA for user (CN) in group (O): the
        identity of a process beside the kubelet (kube-proxy:
        system:kube-proxy). Returns its path."""
        pki = os.path.join(self.cp.dir, "pki")
        path = path or os.path.join(self.dir, name + ".kubeconfig")
        key, csr, crt = (os.path.join(self.dir, f"{name}-client." + e) for e in ("key", "csr", "crt"))
        ext = os.path.join(self.dir, f"{name}-client.ext")
        subj = (f"/O={group}" if group else "") + f"/CN={user}"
        with open(ext, "w") as f:
            f.write("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                    "extendedKeyUsage=clientAuth\n")
        for cmd in (["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                     "-nodes", "-keyout", key, "-out", csr, "-subj", subj],
                    ["openssl", "x509", "-req", "-in", csr, "-CA", os.path.join(pki, "ca.crt"),
                     "-CAkey", os.path.join(pki, "ca.key"), "-CAcreateserial", "-out", crt,
                     "-days", "30", "-extfile", ext]):
            subprocess.run(cmd, check=True, capture_output=True)
        cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "node",
               "clusters": [{"name": "cp", "cluster": {"server": self.cp.server,
                                                       "certificate-authority": self.cp.ca}}],
               "users": [{"name": "node", "user": {"client-certificate": crt, "client-key": key}}],
               "contexts": [{"name": "node", "context": {"cluster": "cp", "user": "node"}}]}
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f)
        return path

    def kubelet_config(self):
        """The KubeletConfiguration (dict): cgroup v1 with cgroupfs, the test's
        containerd, everything under node.dir, no eviction, no image GC."""
        zero = {"memory.available": "0%", "nodefs.available": "0%", "nodefs.inodesFree": "0%",
                "imagefs.available": "0%"}
        return {
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "failCgroupV1": False, "cgroupDriver": "cgroupfs", "cgroupRoot": self.state["cgroup_root"],
            "containerRuntimeEndpoint": "unix://" + self.containerd_sock,
            "address": self.node_ip, "port": self.port, "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1", "healthzPort": self.healthz_port,
            # the apiserver reaches /containerLogs with no client certificate
            # (no --kubelet-client-certificate): anonymous, always allowed; the
            # kubelet listens on this machine's address only
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False},
                               "x509": {"clientCAFile": self.cp.ca}},
            "authorization": {"mode": "AlwaysAllow"},
            "failSwapOn": False,
            "evictionHard": zero, "evictionSoft": {}, "evictionPressureTransitionPeriod": "0s",
            "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
            "podLogsDir": os.path.join(self.dir, "pod-logs"),
            "volumePluginDir": os.path.join(self.dir, "volume-plugins"),
            "resolvConf": "/etc/resolv.conf",
            "nodeStatusUpdateFrequency": "2s", "nodeStatusReportFrequency": "10s",
            "syncFrequency": "10s", "fileCheckFrequency": "10s",
            "serializeImagePulls": False, "registerNode": True,
            "rotateCertificates": False, "serverTLSBootstrap": False,
        }

    def _start_kubelet(self, timeout):
        self._node_credentials()
        self.node_ip = host_ip()
        self.port, self.healthz_port = free_port(), free_port()
        os.makedirs(self.root_dir, exist_ok=True)
        path = os.path.join(self.dir, "kubelet-config.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(self.kubelet_config(), f)
        labels = ",".join(f"{k}={v}" for k, v in self.labels.items())
        kubelet = os.path.join(k8s_bin_dir(), "kubelet")
        if not os.access(kubelet, os.X_OK):
            raise FileNotFoundError(f"{kubelet}: missing. Build it with test/k8s/build.sh "
                                    "(docs/real-cluster.md), or set GS_K8S_BIN")
        cmd = [kubelet, f"--config={path}",
               f"--kubeconfig={self.kubeconfig}", f"--root-dir={self.root_dir}",
               f"--cert-dir={os.path.join(self.dir, 'kubelet-pki')}",
               f"--hostname-override={self.name}", f"--node-ip={self.node_ip}", "--v=2"]
        if labels:
            cmd.append(f"--node-labels={labels}")
        self.procs["kubelet"] = Proc("kubelet", self.in_ns(cmd), self.dir)
        self.wait_ready(timeout)
        # TaintNodesByCondition taints a new Node not-ready; the node-lifecycle
        # controller is off in these control planes (its fake nodes send no
        # heartbeats), so lift the taint as it would for a Ready node
        node = self.cp.admin.get("nodes", None, self.name)
        taints = [t for t in node["spec"].get("taints", []) if t["key"] != NOT_READY_TAINT]
        self.cp.admin.patch("nodes", None, self.name, {"spec": {"taints": taints or None}})

    # -- for tests --------------------------------------------------------
    def ready(self):
        node = self.cp.admin.try_get("nodes", None, self.name)
        conds = {c["type"]: c for c in ((node or {}).get("status") or {}).get("conditions", [])}
        return conds.get("Ready", {}).get("status") == "True" and node

    def wait_ready(self, timeout=START_TIMEOUT):
        def ok():
            for name in ("containerd", "kubelet"):
                if not self.procs[name].alive():
                    raise Fatal(f"{name} exited:\n" + self.procs[name].tail())
            return self.ready()
        return wait_for(ok, timeout, f"node {self.name} Ready", 0.2)

    def env(self, extra=None):
        """The environment of a process beside the kubelet: ours plus NODE_NAME
        and the kubelet's socket directories."""
        env = dict(os.environ, NODE_NAME=self.name, KUBELET_ROOT_DIR=self.root_dir,
                   DEVICE_PLUGIN_DIR=self.device_plugin_dir)
        env.update(extra or {})
        return env

    def in_ns(self, cmd):
        """cmd run in the node's mount namespace (nsenter execs it: same PID)."""
        return ["nsenter", "-t", str(self.procs["containerd"].pid), "-m", "--", *cmd]

    def run(self, name, cmd, env=None, in_ns=True):
        """Starts cmd beside the kubelet (its log: node.dir/NAME.log), stopped
        by stop() before the kubelet, in the node's mount namespace (so
        /var/lib/kubelet/device-plugins is this node's, as a DaemonSet's
        hostPath would be; in_ns=False: the machine's, where the same
        directory is node.device_plugin_dir). env: added to node.env()."""
        if name in self.procs:
            raise ValueError(f"{name}: already running beside node {self.name}")
        self.procs[name] = Proc(name, self.in_ns(cmd) if in_ns else cmd, self.dir, env=self.env(env))
        self.beside.append(name)
        return self.procs[name]

    def set_capacity(self, capacity):
        """Extended resources in the Node's status, as a device plugin would
        advertise them (the kubelet keeps what it does not own and copies it to
        allocatable); a value None removes one."""
        patch = {"status": {"capacity": capacity, "allocatable": capacity}}
        return self.cp.admin.patch("nodes", None, self.name, patch, sub="status")

    def import_image(self, tar):
        """An OCI archive into this containerd's k8s.io namespace."""
        return kimages.import_image(self.ctr, tar)

    def pods(self):
        return self.cp.admin.call("GET", f"/api/v1/pods?fieldSelector=spec.nodeName%3D{self.name}")["items"]

    def tasks(self):
        """The containers running in this containerd (ctr tasks ls)."""
        out = subprocess.run([*self.ctr, "-n", "k8s.io", "tasks", "ls", "-q"], capture_output=True,
                             text=True, timeout=30).stdout
        return out.split()

    # -- stop -------------------------------------------------------------
    def stop(self):
        if self._stopped:
            return
        self._stopped = True
        kubelet = self.procs.get("kubelet")
        if kubelet and kubelet.alive() and not self.cp._stopped:
            # the kubelet tears its pods down: containers, sandboxes, volumes
            try:
                for p in self.pods():
                    self.cp.admin.delete("pods", p["metadata"]["namespace"], p["metadata"]["name"], grace=0)
                wait_for(lambda: not self.pods() and not self.tasks() and not self._pod_mounts(),
                         60, "the node's pods torn down", 0.2)
            except (AssertionError, OSError) as e:
                print(f"knode: {self.name}: pods not torn down by the kubelet ({e}): pods "
                      f"{[p['metadata']['name'] for p in self.pods()]}, tasks {self.tasks()}, "
                      f"mounts {self._pod_mounts()}; killing them", flush=True)
        for name in [*reversed(self.beside), "kubelet", "containerd"]:
            if name in self.procs:
                self.procs[name].stop()
        teardown(self.state)
        if not self.cp._stopped:
            self.cp.admin.delete("nodes", None, self.name)

    def _pod_mounts(self):
        # the kubelet bind-mounts its root dir on itself (rshared) while it runs
        pid = self.procs["kubelet"].pid
        return [m for m in _mounts_under(self.dir, pid) if m != self.root_dir]

    def mounts(self):
        """The mounts under node.dir in the node's mount namespace (while it runs)."""
        return _mounts_under(self.dir, self.procs["containerd"].pid)

    def dump_logs(self, n=3000):
        return "\n".join(f"--- {k} ---\n{p.tail(n)}" for k, p in self.procs.items())


def down(dirpath):
    """kcluster.py down: the host-side teardown of the node whose state file is
    in dirpath (its processes already stopped by PID)."""
    path = os.path.join(dirpath, "node-state.json")
    if not os.path.exists(path):
        return False
    with open(path) as f:
        teardown(json.load(f))
    os.remove(path)
    return True


def remove_dir(d):
    """Removes d unless something is still mounted under it (never follows a
    mount into what it does not own)."""
    if _mounts_under(d):
        raise RuntimeError(f"{d}: still mounted: {_mounts_under(d)}")
    shutil.rmtree(d, ignore_errors=True)
