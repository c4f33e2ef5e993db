"""gpushare end to end on a real node (issue 31, "What must be shown", real
node tier): the pinned kubelet with containerd (knode.Node), two 16 GiB GPUs
of the fake NVML (docs/fake-nvml.md), gpushare-node beside the kubelet on the
node's device-plugin directory (docs/node-agent.md), and the extender form as
the other real tiers run it (realcase.Env: kube-scheduler configured from
deploy/scheduler/ calling gpushare-extender). Each GPU pod's container is
busybox `env`; what it prints is compared with the pod's allocation
annotation (contract §4): the GPUs' UUIDs, Aliyun's keys, the memory limits
(and on an mps node the MPS limits). Also: the same pod through
gpushare-scheduler (PluginForm), and Aliyun's device plugin on a second node
(AliyunPlugin: docs/compatibility.md's table, run). docs/real-cluster.md,
"gpushare on the node".

GS_GPUNODE_ROUNDS: rounds of the ten-pods test (default 5)."""
import contextlib
import json
import os
import signal
import subprocess
import time
import unittest

import yaml

import kbase
import kcluster
import kimages
import knode
from aliyun import aliyun_binary
from delayproxy import DelayProxy
from kcluster import BUILD, Extender, Fatal, wait_for
from realcase import Env, PluginView, RealCase

NODE = "gpu-real-a"
SELECTOR = {"gpushare.io/test": "gpunode"}
UUIDS = ["GPU-5eed0000-aaaa-4000-8000-000000000000", "GPU-5eed0001-bbbb-4000-8000-000000000001"]
INVENTORY = "".join(f"gpu mem=16384 uuid={u} minor={i} name=Tesla V100-SXM2-16GB\n"
                    for i, u in enumerate(UUIDS)) + "row X NV2\nrow NV2 X\n"
FAKE_NVML = os.path.join(BUILD, "fakenvml", "libnvidia-ml.so.1")
ALLOC = "scheduler.framework.gpushare.allocation"
ROUNDS = int(os.environ.get("GS_GPUNODE_ROUNDS", "5"))

node = None


class Agent:
    """gpushare-node beside the kubelet: its flags, (re)starts and kills."""
    n = 0
    proc = None
    inventory = None
    mps_dir = None

    @classmethod
    def start(cls, unit="1GiB", mode=None, kubeconfig=None):
        cls.n += 1
        name = f"gpushare-node-{cls.n}"
        cmd = [os.path.join(kcluster.k8s_bin_dir(), "gpushare-node"),
               "--kubeconfig", kubeconfig or cls.kubeconfig, "--kubelet-root-dir", node.root_dir,
               "--unit", unit, "--nvml-library", FAKE_NVML, "--poll-interval", "200ms",
               "--mps-pipe-dir", cls.mps_dir]
        if mode:
            cmd += ["--mode", mode]
        cls.proc = node.run(name, cmd, env={"GS_FAKE_NVML_INVENTORY": cls.inventory}, in_ns=False)

        def registered():
            if not cls.proc.alive():
                raise Fatal("gpushare-node exited:\n" + cls.proc.tail())
            log = cls.proc.tail(20000)
            return all(f"registered with the kubelet\" resource=aliyun.com/{r}" in log
                       for r in ("gpu-mem", "gpu-count"))
        wait_for(registered, 60, "gpushare-node registered with the kubelet", 0.1)
        return cls.proc

    @classmethod
    def stop(cls, sig=signal.SIGTERM):
        """Stops it and waits for the kubelet to see its devices gone
        (allocatable 0): a pod admitted later is the next agent's."""
        cls.proc.stop(sig)
        node.beside.remove(cls.proc.name)
        del node.procs[cls.proc.name]
        wait_allocatable(0, 0)

    @classmethod
    def restart(cls, mem, unit="1GiB", mode=None, kubeconfig=None):
        cls.stop()
        cls.start(unit, mode, kubeconfig)
        wait_allocatable(mem, 2)


def allocatable():
    st = Env.cp.admin.get("nodes", None, NODE)["status"]
    a = st.get("allocatable", {})
    return a.get("aliyun.com/gpu-mem"), a.get("aliyun.com/gpu-count")


def wait_allocatable(mem, count, timeout=120):
    want = (str(mem), str(count))
    return wait_for(lambda: allocatable() == want, timeout,
                    f"node {NODE} allocatable gpu-mem/gpu-count {want} (have {allocatable()})", 0.2)


def restart_extender(unit):
    """The unit in the ConfigMap, and the extender restarted to take it."""
    Env.set_unit(unit)
    Env.ext.kill(signal.SIGTERM)
    Env.ext = Extender(Env.cp).wait_ready()
    wait_for(lambda: Env.ext.ledger()["unit"] == unit, 60, f"the extender in {unit} units", 0.2)


def setUpModule():
    global node
    Env.up(unit="1GiB")
    try:
        node = knode.Node(Env.cp, name=NODE, labels={"ack.node.gpu.schedule": "share", **SELECTOR})
        node.start()
        Agent.inventory = os.path.join(node.dir, "gpus.inv")
        Agent.mps_dir = os.path.join(node.dir, "nvidia-mps")
        os.makedirs(Agent.mps_dir, exist_ok=True)
        with open(Agent.inventory, "w") as f:
            f.write(INVENTORY)
        # as deploy/node/ runs it: its ServiceAccount and least-privilege RBAC
        Env.cp.admin.apply_file(os.path.join(kcluster.SOURCE, "deploy", "node", "rbac.yaml"))
        Agent.token = Env.cp.service_account_token(ns="kube-system", name="gpushare-node")
        Agent.kubeconfig = kcluster.write_kubeconfig(os.path.join(node.dir, "agent.kubeconfig"),
                                                     Env.cp.server, Env.cp.ca, Agent.token)
        Agent.start()
        wait_allocatable(32, 2)
    except BaseException:
        print(Env.cp.dump_logs(), node and node.dump_logs(), flush=True)
        tearDownModule()
        raise


def tearDownModule():
    if node:
        node.stop()
    Env.down()


def gpu_pod(name, units, gpus=None, script="env", node_name=None):
    """busybox running script, asking aliyun.com/gpu-mem: units (over gpus
    cards: the label aliyun.com/gpu-count)."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": {"app": "gpunode"}},
           "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "main", "image": kimages.BUSYBOX,
                                    "command": ["sh", "-c", script],
                                    "resources": {"limits": {"aliyun.com/gpu-mem": str(units)}}}]}}
    if gpus:
        pod["metadata"]["labels"]["aliyun.com/gpu-count"] = str(gpus)
    if node_name:
        pod["spec"]["nodeName"] = node_name
    else:
        pod["spec"]["nodeSelector"] = dict(SELECTOR)
    return pod


def expected_env(p, unit_mib=1024, mps=False):
    """What gpushare-node gives the pod's one container, from its allocation
    annotation (docs/node-agent.md, "What the container receives")."""
    ann = p["metadata"]["annotations"]
    alloc = json.loads(ann[ALLOC])
    per_gpu = {int(g): u for g, u in alloc["0"].items()}
    gpus = sorted(per_gpu)
    total = sum(per_gpu.values())
    env = {"NVIDIA_VISIBLE_DEVICES": ",".join(UUIDS[g] for g in gpus),
           "ALIYUN_COM_GPU_MEM_IDX": ",".join(str(g) for g in gpus),
           "ALIYUN_COM_GPU_MEM_POD": str(total),
           "ALIYUN_COM_GPU_MEM_CONTAINER": str(total),
           "ALIYUN_COM_GPU_MEM_DEV": str(16384 // unit_mib),
           "GPUSHARE_GPU_MEM_LIMIT_MIB": ",".join(str(per_gpu[g] * unit_mib) for g in gpus),
           "GPUSHARE_GPU_MEM_UNIT_MIB": str(unit_mib)}
    if mps:
        env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = ",".join(
            f"{i}={per_gpu[g] * unit_mib}M" for i, g in enumerate(gpus))
        env["CUDA_MPS_PIPE_DIRECTORY"] = Agent.mps_dir
    return env


GS_ENV = ("NVIDIA_VISIBLE_DEVICES", "ALIYUN_COM_", "GPUSHARE_", "CUDA_MPS_")


class PodCase(RealCase):
    """A RealCase whose pods really run: their phase, their log, the
    gpushare keys of the env they print."""

    def pod_log(self, name, container=None):
        q = f"?container={container}" if container else ""
        return self.k.open("GET", f"/api/v1/namespaces/{self.ns}/pods/{name}/log{q}",
                           accept="*/*").read().decode()

    def wait_phase(self, name, want, timeout=180):
        return kbase.wait_pod_phase(self.k, self.ns, name, want, timeout, self.explain)

    def gs_env(self, name, container=None):
        """The gpushare keys of the env the container printed."""
        out = {}
        for line in self.pod_log(name, container).splitlines():
            k, _, v = line.partition("=")
            if k.startswith(GS_ENV):
                out[k] = v
        return out


class GpuNode(PodCase):
    """gpushare-node on gpu-real-a; the tests run in the issue's order of
    importance (1, 2, 8, 3, 7, 6, 5, 4, then init containers and cgpu) and
    leave the agent as they found it."""

    def assert_env_is_allocation(self, name, unit_mib=1024, mps=False):
        """The container's env equals its allocation annotation, and the
        agent marked the pod assigned. Returns the pod's GPU indices."""
        p = self.k.get("pods", self.ns, name)
        self.assertEqual(self.gs_env(name), expected_env(p, unit_mib, mps), name)
        ann = p["metadata"]["annotations"]
        self.assertEqual(ann["scheduler.framework.gpushare.assigned"], "true")
        self.assertEqual(ann["ALIYUN_COM_GPU_MEM_ASSIGNED"], "true")
        self.assertEqual(p["spec"]["nodeName"], NODE)
        return sorted(int(g) for g in json.loads(ann[ALLOC])["0"])

    def run_env_pod(self, name, units, gpus=None, **kw):
        self.create(gpu_pod(name, units, gpus))
        self.wait_phase(name, "Succeeded")
        return self.assert_env_is_allocation(name, **kw)

    # 1
    def test_1_one_card_pod_gets_its_allocation(self):
        gpus = self.run_env_pod("one-card", 4)
        self.assertEqual(len(gpus), 1)
        p = self.k.get("pods", self.ns, "one-card")
        self.assertEqual(json.loads(p["metadata"]["annotations"][ALLOC]), {"0": {str(gpus[0]): 4}})
        self.assertEqual(self.gs_env("one-card")["GPUSHARE_GPU_MEM_LIMIT_MIB"], "4096")
        self.assertIn("allocated\" resource=aliyun.com/gpu-mem devices=4 pod=" + self.ns + "/one-card",
                      Agent.proc.tail(20000))

    # 2
    def test_2_eight_units_over_two_cards(self):
        gpus = self.run_env_pod("two-cards", 8, gpus=2)
        self.assertEqual(gpus, [0, 1])
        env = self.gs_env("two-cards")
        self.assertEqual(env["NVIDIA_VISIBLE_DEVICES"], ",".join(UUIDS))
        self.assertEqual(env["GPUSHARE_GPU_MEM_LIMIT_MIB"], "4096,4096")

    # 8
    def test_3_a_pod_without_allocation_is_refused_visibly(self):
        """Bound with spec.nodeName, past the scheduler: no allocation
        annotation, so Allocate refuses; the pod fails with the agent's
        text in its events. Then one whose hand-written allocation names
        GPU 3 of a 2-GPU node. A GPU pod after them runs."""
        self.create(gpu_pod("unplaced", 4, node_name=NODE))
        p = self.wait_phase("unplaced", "Failed")
        self.assertEqual(p["status"]["reason"], "UnexpectedAdmissionError")
        why = (f"pod {self.ns}/unplaced asks aliyun.com/gpu-mem: 4 but carries no gpushare allocation "
               f"(annotation {ALLOC}): it was not placed by gpushare's scheduler")
        self.assertIn(why, p["status"]["message"])
        ev = wait_for(lambda: [e for e in self.k.events(self.ns, "unplaced")
                               if e["reason"] == "UnexpectedAdmissionError"], 60, "the event", 0.2)
        self.assertEqual(ev[0]["type"], "Warning")
        self.assertIn(why, ev[0]["message"])
        self.assertFalse(set(p["metadata"].get("annotations") or {}) & {
            "gpushare.io/allocated-containers", "ALIYUN_COM_GPU_MEM_ASSIGNED"})
        self.assertEqual(p["status"].get("containerStatuses"), None)
        # an allocation naming a GPU the node lacks (written by hand, bound
        # past the scheduler): refused with the agent's text
        forged = gpu_pod("gpu-three", 4, node_name=NODE)
        forged["metadata"]["annotations"] = {
            ALLOC: json.dumps({"0": {"3": 4}}), "scheduler.framework.gpushare.assigned": "false",
            "scheduler.framework.gpushare.assume-time": str(time.time_ns()), "gpushare.io/unit-mib": "1024"}
        self.create(forged)
        p = self.wait_phase("gpu-three", "Failed")
        self.assertEqual(p["status"]["reason"], "UnexpectedAdmissionError")
        self.assertIn(f"pod {self.ns}/gpu-three: its allocation names GPU 3, but node {NODE} has 2 GPUs (0-1)",
                      p["status"]["message"])
        self.assertNotIn("gpushare.io/allocated-containers", p["metadata"]["annotations"])
        # nothing else affected: the next GPU pod runs with its allocation
        self.run_env_pod("after-refusal", 4)
        self.assert_ledger_is_truth()

    # 3
    def test_4_ten_pods_at_once_each_see_their_own(self):
        sizes = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]  # 30 of 32 units
        for r in range(ROUNDS):
            names = [f"r{r}-p{i}-{u}u" for i, u in enumerate(sizes)]
            for name, u in zip(names, sizes):
                self.create(gpu_pod(name, u))
            for name in names:
                self.wait_phase(name, "Succeeded")
            seen = set()
            for name, u in zip(names, sizes):
                self.assert_env_is_allocation(name)
                env = self.gs_env(name)
                self.assertEqual(env["ALIYUN_COM_GPU_MEM_CONTAINER"], str(u), name)
                seen.add(env["NVIDIA_VISIBLE_DEVICES"])
            self.assertTrue(seen <= set(UUIDS), seen)
            for name in names:
                self.k.delete("pods", self.ns, name, grace=0)
            wait_for(lambda: not self.pods(), 120, "the round's pods gone", 0.2)

    # 7
    def test_5_kill_9_of_the_agent(self):
        self.create(gpu_pod("long-running", 2, script="env; exec sleep 600"))
        before = self.wait_phase("long-running", "Running")
        cid = before["status"]["containerStatuses"][0]["containerID"]
        Agent.stop(signal.SIGKILL)  # the kubelet sees its devices gone
        self.assertEqual(Agent.proc.proc.returncode, -signal.SIGKILL)
        # a pod created meanwhile waits: no node offers aliyun.com/gpu-mem
        self.create(gpu_pod("pending", 4))
        wait_for(lambda: [e for e in self.k.events(self.ns, "pending") if e["reason"] == "FailedScheduling"],
                 120, "FailedScheduling of the pending pod", 0.2)
        self.assertIsNone(self.k.get("pods", self.ns, "pending")["spec"].get("nodeName"))
        # restarted, as its DaemonSet would: registered again, the pending pod runs
        Agent.start()
        wait_allocatable(32, 2)
        self.wait_phase("pending", "Succeeded")
        self.assert_env_is_allocation("pending")
        # the running pod is unaffected: same container, never restarted, its env
        p = self.k.get("pods", self.ns, "long-running")
        st = p["status"]["containerStatuses"][0]
        self.assertEqual((p["status"]["phase"], st["containerID"], st["restartCount"]),
                         ("Running", cid, 0))
        self.assertEqual(self.gs_env("long-running"), expected_env(p))
        self.assert_ledger_is_truth()

    # 6
    def test_6_unhealthy_gpu_and_topology_annotation(self):
        topo = subprocess.run([os.path.join(BUILD, "tools", "topo", "gpushare-topo"), "--nvml"],
                              capture_output=True, text=True, check=True,
                              env=dict(os.environ, GS_FAKE_NVML_INVENTORY=Agent.inventory,
                                       LD_LIBRARY_PATH=os.path.dirname(FAKE_NVML))).stdout
        self.assertEqual(json.loads(topo), {"links": [["X", "NV2"], ["NV2", "X"]]})
        ann = self.k.get("nodes", None, NODE)["metadata"]["annotations"]
        self.assertEqual(ann["gpushare.io/topology"], topo.rstrip("\n"))
        # a pod on the GPU binpacking fills first, then that GPU breaks
        self.create(gpu_pod("holder", 2, script="exec sleep 600"))
        self.wait_phase("holder", "Running")
        (bad,) = json.loads(self.k.get("pods", self.ns, "holder")["metadata"]["annotations"][ALLOC])["0"]
        bad = int(bad)
        good = 1 - bad
        try:
            with open(Agent.inventory, "a") as f:
                f.write(f"unhealthy {UUIDS[bad]}\n")
            cm = wait_for(lambda: self.k.try_get("configmaps", "kube-system", f"unhealthy-gpu-{NODE}"),
                          60, "the unhealthy-gpu ConfigMap", 0.2)
            self.assertEqual(cm["data"], {"gpus": str(bad)})
            wait_allocatable(16, 1)
            # binpacking would take the fuller GPU: the scheduler takes the other
            gpus = self.run_env_pod("after-xid", 4)
            self.assertEqual(gpus, [good])
            self.assertEqual(self.gs_env("after-xid")["NVIDIA_VISIBLE_DEVICES"], UUIDS[good])
            self.assert_ledger_is_truth()
        finally:
            with open(Agent.inventory, "w") as f:
                f.write(INVENTORY)
            self.pods_gone_agent_back()
        # healthy again after the restart: the ConfigMap says so
        wait_for(lambda: self.k.get("configmaps", "kube-system", f"unhealthy-gpu-{NODE}")["data"]
                 == {"gpus": ""}, 60, "the ConfigMap cleared", 0.2)

    # 5
    def test_7_capacity_in_128mib_units(self):
        """The unit changed to 128 MiB (agent and extender restarted): the
        capacity is advertised in 128 MiB units, a pod placed in 1 GiB units
        keeps running and its memory in the ledger, a new pod gets its
        allocation in the new unit beside it."""
        self.create(gpu_pod("before-change", 4, script="env; exec sleep 600"))
        old = self.wait_phase("before-change", "Running")
        wait_for(lambda: "NVIDIA_VISIBLE_DEVICES=" in self.pod_log("before-change"), 60, "its env", 0.2)
        self.assertEqual(self.gs_env("before-change"), expected_env(old))
        cid = old["status"]["containerStatuses"][0]["containerID"]
        try:
            Agent.restart(256, unit="128MiB")
            cap = self.k.get("nodes", None, NODE)["status"]["capacity"]
            self.assertEqual((cap["aliyun.com/gpu-mem"], cap["aliyun.com/gpu-count"]), ("256", "2"))
            restart_extender("128MiB")
            self.assertEqual(Env.ext.ledger()["unit"], "128MiB")
            self.assert_ledger_is_truth()
            gpus = self.run_env_pod("after-change", 32, unit_mib=128)
            env = self.gs_env("after-change")
            self.assertEqual((env["GPUSHARE_GPU_MEM_LIMIT_MIB"], env["ALIYUN_COM_GPU_MEM_DEV"]),
                             ("4096", "128"))
            # binpacking: on the GPU of the running pod, whose 4 GiB it counts
            self.assertEqual(gpus, self.gpus_of("before-change"))
            used = {g["index"]: g["usedMiB"] for g in Env.ext.ledger(NODE)["nodes"][0]["gpus"]}
            self.assertEqual(used[gpus[0]], 4096)  # after-change has ended: only before-change's
            p = self.k.get("pods", self.ns, "before-change")
            st = p["status"]["containerStatuses"][0]
            self.assertEqual((p["status"]["phase"], st["containerID"], st["restartCount"]),
                             ("Running", cid, 0))
            self.assert_ledger_is_truth()
        finally:
            self.pods_gone_agent_back()
            restart_extender("1GiB")

    def pods_gone_agent_back(self):
        """A case's end: the test's pods deleted and gone, gpushare-node
        restarted as the module runs it (32 units of 1 GiB)."""
        for p in self.pods():
            self.k.delete("pods", self.ns, p["metadata"]["name"], grace=0)
        wait_for(lambda: not self.pods(), 120, "the test's pods gone", 0.2)
        Agent.restart(32)

    @contextlib.contextmanager
    def node_mode(self, mode):
        """The node labelled ack.node.gpu.schedule=mode and gpushare-node
        restarted --mode mode; after: share again, pods_gone_agent_back()."""
        self.k.patch("nodes", None, NODE, {"metadata": {"labels": {"ack.node.gpu.schedule": mode}}})
        try:
            Agent.restart(32, mode=mode)
            yield
        finally:
            self.k.patch("nodes", None, NODE, {"metadata": {"labels": {"ack.node.gpu.schedule": "share"}}})
            self.pods_gone_agent_back()

    def gpus_of(self, name):
        p = self.k.get("pods", self.ns, name)
        return sorted(int(g) for g in json.loads(p["metadata"]["annotations"][ALLOC])["0"])

    # 4
    def test_8_mps_node_gets_the_mps_limits(self):
        with self.node_mode("mps"):
            gpus = self.run_env_pod("mps-one", 4, mps=True)
            self.assertEqual(self.gs_env("mps-one")["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"], "0=4096M")
            self.assertEqual(len(gpus), 1)
            self.run_env_pod("mps-two", 8, gpus=2, mps=True)
            self.assertEqual(self.gs_env("mps-two")["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"],
                             "0=4096M,1=4096M")

    def test_9_init_container(self):
        """An init container asking more than the app container (6 > 4):
        the scheduler reserves 6 and charges the excess to the app
        container's annotation; the kubelet calls Allocate for the init
        container first, and each container prints its own amount on the
        same GPU (docs/node-agent.md, "Init containers")."""
        pod = gpu_pod("with-init", 4)
        pod["spec"]["initContainers"] = [{
            "name": "prepare", "image": kimages.BUSYBOX, "command": ["sh", "-c", "env"],
            "resources": {"limits": {"aliyun.com/gpu-mem": "6"}}}]
        self.create(pod)
        p = self.wait_phase("with-init", "Succeeded")
        ann = p["metadata"]["annotations"]
        (gpu, units), = json.loads(ann[ALLOC])["0"].items()
        self.assertEqual(units, 6)
        self.assertEqual((ann["gpushare.io/allocated-init-containers"],
                          ann["gpushare.io/allocated-containers"],
                          ann["scheduler.framework.gpushare.assigned"]), ("0", "0", "true"))
        init = self.gs_env("with-init", container="prepare")
        app = self.gs_env("with-init")
        for env, mine in ((init, 6), (app, 4)):
            self.assertEqual(env, {"NVIDIA_VISIBLE_DEVICES": UUIDS[int(gpu)], "ALIYUN_COM_GPU_MEM_IDX": gpu,
                                   "ALIYUN_COM_GPU_MEM_POD": "6", "ALIYUN_COM_GPU_MEM_CONTAINER": str(mine),
                                   "ALIYUN_COM_GPU_MEM_DEV": "16",
                                   "GPUSHARE_GPU_MEM_LIMIT_MIB": str(mine * 1024),
                                   "GPUSHARE_GPU_MEM_UNIT_MIB": "1024"})
        self.assertIn(f"pod={self.ns}/with-init container=prepare init=true", Agent.proc.tail(20000))
        self.assert_ledger_is_truth()

    def test_9b_cgpu_node_gets_the_cgpu_env(self):
        """A cgpu node: the Aliyun amounts in GiB with the cap per GPU, and
        the GPUs for the cGPU module (docs/node-agent.md, "cgpu nodes")."""
        with self.node_mode("cgpu"):
            self.create(gpu_pod("cgpu-two", 8, gpus=2))
            self.wait_phase("cgpu-two", "Succeeded")
            p = self.k.get("pods", self.ns, "cgpu-two")
            self.assertEqual(json.loads(p["metadata"]["annotations"][ALLOC]), {"0": {"0": 4, "1": 4}})
            self.assertEqual(self.gs_env("cgpu-two"), {
                "NVIDIA_VISIBLE_DEVICES": ",".join(UUIDS), "ALIYUN_COM_GPU_VISIBLE_DEVICES": ",".join(UUIDS),
                "ALIYUN_COM_GPU_MEM_IDX": "0,1", "ALIYUN_COM_GPU_MEM_POD": "8",
                "ALIYUN_COM_GPU_MEM_CONTAINER": "4", "ALIYUN_COM_GPU_MEM_DEV": "16",
                "GPUSHARE_GPU_MEM_LIMIT_MIB": "4096,4096", "GPUSHARE_GPU_MEM_UNIT_MIB": "1024"})

    def test_9c_the_pod_the_kubelet_admits_gets_its_own_gpu(self):
        """Two pods asking the same amount, bound in the order opposite to
        their assume times (what a gang's members bound within milliseconds
        of each other do): the kubelet admits the later-assumed one first,
        and each container gets its own GPU (docs/node-agent.md, "Which pod
        an Allocate is for"; the defect a rehearsal found on 2026-11-28).
        The agent's apiserver connection goes through a gate that holds its
        List during the first Allocate while the second pod is bound, so the
        agent sees both pods pending when it answers. The pods carry their
        allocations by hand and a scheduler name no scheduler serves: the
        test binds them itself, in the order it wants."""
        proxy = DelayProxy(Env.cp.api_port, 0)
        self.addCleanup(proxy.close)
        gated = kcluster.write_kubeconfig(os.path.join(node.dir, "agent-gated.kubeconfig"),
                                          f"https://127.0.0.1:{proxy.port}", Env.cp.ca, Agent.token)

        def by_hand(name, gpu, assume_ns):
            pod = gpu_pod(name, 8)
            del pod["spec"]["nodeSelector"]
            pod["spec"]["schedulerName"] = "gpushare-test-by-hand"
            pod["metadata"]["annotations"] = {
                ALLOC: json.dumps({"0": {str(gpu): 8}}),
                "scheduler.framework.gpushare.assigned": "false",
                "scheduler.framework.gpushare.assume-time": str(assume_ns),
                "ALIYUN_COM_GPU_MEM_ASSIGNED": "false", "ALIYUN_COM_GPU_MEM_ASSUME_TIME": str(assume_ns)}
            return pod

        def bind(name):
            Env.cp.admin.call("POST", f"/api/v1/namespaces/{self.ns}/pods/{name}/binding", {
                "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                "target": {"apiVersion": "v1", "kind": "Node", "name": NODE}})

        Agent.restart(32, kubeconfig=gated)
        try:
            self.create(by_hand("early", 0, 1_000))
            self.create(by_hand("late", 1, 2_000))
            proxy.hold()
            try:
                bind("late")
                wait_for(lambda: proxy.held > 0, 120,
                         "gpushare-node's List (late's Allocate) held at the gate", 0.05)
                bind("early")
            finally:
                proxy.release()
            for name, gpu in (("late", 1), ("early", 0)):
                self.wait_phase(name, "Succeeded")
                self.assertEqual(self.assert_env_is_allocation(name), [gpu], name)
            log = Agent.proc.tail(20000)
            for name in ("late", "early"):
                self.assertIn(f"pod={self.ns}/{name} container=main init=false by=kubelet", log)
        finally:
            self.pods_gone_agent_back()


# Aliyun's device plugin in its pod's environment: in-cluster configuration
# (a token and the CA under /run/secrets), in a mount namespace of its own
# inside the node's (so /var/lib/kubelet/device-plugins is the node's)
ALIYUN_RUN = """set -e
mount -t tmpfs tmpfs /run
mkdir -p /run/secrets/kubernetes.io/serviceaccount
cp "$1/token" "$1/ca.crt" /run/secrets/kubernetes.io/serviceaccount/
shift
exec "$@"
"""


class AliyunPlugin(PodCase):
    """Aliyun's open-source device plugin (../shared/aliyun) instead of
    gpushare-node, on a second real node of the same fake GPUs (a fresh
    kubelet: the first still holds gpushare-node's resources), scheduled by
    the same extender: docs/compatibility.md's table, run."""
    node = None

    @classmethod
    def setUpClass(cls):
        binary = aliyun_binary()
        cls.node = knode.Node(Env.cp, name="gpu-real-b",
                              labels={"ack.node.gpu.schedule": "share", "gpushare.io/test": "aliyun"})
        cls.node.start()
        try:
            sa = os.path.join(cls.node.dir, "aliyun-sa")
            os.makedirs(sa)
            with open(os.path.join(sa, "token"), "w") as f:
                f.write(Env.cp.tokens["admin"])
            with open(Env.cp.ca) as src, open(os.path.join(sa, "ca.crt"), "w") as f:
                f.write(src.read())
            inv = os.path.join(cls.node.dir, "gpus.inv")
            with open(inv, "w") as f:
                f.write(INVENTORY)
            cls.proc = cls.node.run("aliyun-device-plugin", [
                "unshare", "-m", "--propagation", "private", "sh", "-c", ALIYUN_RUN, "run", sa,
                binary, "-logtostderr", "--v=5", "--memory-unit=GiB"],
                env={"GS_FAKE_NVML_INVENTORY": inv, "LD_LIBRARY_PATH": os.path.dirname(FAKE_NVML),
                     "KUBERNETES_SERVICE_HOST": "127.0.0.1",
                     "KUBERNETES_SERVICE_PORT": str(Env.cp.api_port)})

            def advertised():
                if not cls.proc.alive():
                    raise Fatal("Aliyun's device plugin exited:\n" + cls.proc.tail())
                a = Env.cp.admin.get("nodes", None, cls.node.name)["status"].get("allocatable", {})
                return (a.get("aliyun.com/gpu-mem"), a.get("aliyun.com/gpu-count")) == ("32", "2")
            wait_for(advertised, 120, "gpu-real-b advertising 32 GiB on 2 GPUs (Aliyun's plugin)", 0.2)
        except BaseException:
            print(cls.node.dump_logs(), flush=True)
            cls.node.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def run_pod(self, name, units, gpus=None):
        pod = gpu_pod(name, units, gpus)
        pod["spec"]["nodeSelector"] = {"gpushare.io/test": "aliyun"}
        self.create(pod)
        return self.wait_phase(name, "Succeeded")

    def test_a_single_card_pod_runs(self):
        p = self.run_pod("aliyun-one", 4)
        (gpu,) = [int(g) for g in json.loads(p["metadata"]["annotations"][ALLOC])["0"]]
        env = self.gs_env("aliyun-one")
        # the GPU's index, not its UUID as gpushare-node gives
        self.assertEqual(env["NVIDIA_VISIBLE_DEVICES"], str(gpu))
        self.assertEqual(env["ALIYUN_COM_GPU_MEM_IDX"], str(gpu))
        self.assertEqual(env["ALIYUN_COM_GPU_MEM_CONTAINER"], "4")
        self.assertEqual(self.k.get("pods", self.ns, "aliyun-one")["metadata"]["annotations"]
                         ["ALIYUN_COM_GPU_MEM_ASSIGNED"], "true")

    def test_eight_over_two_starts_without_a_gpu(self):
        """compatibility.md: IDX "0,1" is not an integer to it; the container
        starts with NVIDIA_VISIBLE_DEVICES=no-gpu-has-…, no error anywhere."""
        p = self.run_pod("aliyun-two", 8, gpus=2)
        self.assertEqual(json.loads(p["metadata"]["annotations"][ALLOC]), {"0": {"0": 4, "1": 4}})
        env = self.gs_env("aliyun-two")
        self.assertEqual(env, {"NVIDIA_VISIBLE_DEVICES": "no-gpu-has-8GiB-to-run",
                               "ALIYUN_COM_GPU_MEM_IDX": "-1", "ALIYUN_COM_GPU_MEM_POD": "8",
                               "ALIYUN_COM_GPU_MEM_CONTAINER": "8", "ALIYUN_COM_GPU_MEM_DEV": "16"})
        # no warning but the one every pod of these kubelets gets (no cluster DNS)
        self.assertEqual([e["reason"] for e in self.k.events(self.ns, "aliyun-two")
                          if e["type"] == "Warning"], ["MissingClusterDNS"])



class PluginForm(PodCase):
    """The pod of GpuNode test 1 placed by gpushare-scheduler (kube-scheduler
    with the in-process plugin, deploy/scheduler/gpushare-scheduler-config.yaml,
    as its ServiceAccount: realcase.Env's plugin form) instead of
    kube-scheduler + the extender; the extender form comes back after."""

    @classmethod
    def setUpClass(cls):
        cp = Env.cp
        cls.saved = (cp.scheduler_config, cp.scheduler_binary, cp.scheduler_sa)
        cp.procs["kube-scheduler"].stop()
        with open(os.path.join(kcluster.SOURCE, "deploy", "plugin", "gpushare-scheduler.yaml")) as f:
            for doc in yaml.safe_load_all(f):
                if doc and doc["kind"] in ("ServiceAccount", "ClusterRoleBinding", "Role", "RoleBinding"):
                    cp.admin.apply(doc)
        cp.scheduler_config = os.path.join(kcluster.SOURCE, "deploy", "scheduler",
                                           "gpushare-scheduler-config.yaml")
        cp.scheduler_binary = os.path.join(kcluster.k8s_bin_dir(), "gpushare-scheduler")
        cp.scheduler_sa = "gpushare-scheduler"
        cp.start_scheduler()
        cls.plugin = PluginView(cp).wait_ready()

    @classmethod
    def tearDownClass(cls):
        cp = Env.cp
        cp.procs["kube-scheduler"].stop()
        cp.scheduler_config, cp.scheduler_binary, cp.scheduler_sa = cls.saved
        cp.start_scheduler()

    def test_one_card_pod_through_gpushare_scheduler(self):
        self.create(gpu_pod("plugin-one", 4, script="env; exec sleep 600"))
        p = self.wait_phase("plugin-one", "Running")
        self.assertEqual(p["spec"]["nodeName"], NODE)
        wait_for(lambda: "NVIDIA_VISIBLE_DEVICES=" in self.pod_log("plugin-one"), 60, "its env", 0.2)
        (gpu,) = [int(g) for g in json.loads(p["metadata"]["annotations"][ALLOC])["0"]]
        self.assertEqual(self.gs_env("plugin-one"), expected_env(p))
        self.assertEqual(p["metadata"]["annotations"]["scheduler.framework.gpushare.assigned"], "true")
        # placed by the plugin: its ledger holds the pod on that GPU
        gpus = self.plugin.ledger(NODE)["nodes"][0]["gpus"]
        self.assertEqual([g["index"] for g in gpus if any(q["uid"] == p["metadata"]["uid"] for q in g["pods"])],
                         [gpu])


if __name__ == "__main__":
    unittest.main()
