"""Real GPU nodes of fake GPUs, as `tools/dev.sh cluster` runs them: a real
node (knode.Node: kubelet + containerd), GPUs of the fake NVML
(docs/fake-nvml.md) and gpushare-node beside the kubelet, authenticated as
deploy/node/'s ServiceAccount (docs/node-agent.md).

    node = kgpunode.GpuNode(cp, "gpu-real-a", "share", "128MiB", workdir).start()
    node.uuids                  # the fake GPUs' UUIDs, by index
    node.stop()

DEV_NODES is the dev cluster's pair: a share node for the memory samples
and a topology node for the whole-GPU Job of deploy/samples/.
"""
import hashlib
import os

import kcluster
import knode
from kbase import BUILD, Fatal, wait_for

FAKE_NVML = os.path.join(BUILD, "fakenvml", "libnvidia-ml.so.1")
GPU_MIB = 16384
# name, ack.node.gpu.schedule, GPUs: what deploy/samples/ needs
DEV_NODES = (("gpu-real-a", "share", 2), ("gpu-real-t", "topology", 2))


def inventory(name, n, mib=GPU_MIB):
    """The fake NVML's inventory of n GPUs of mib MiB, all NVLinked (NV2):
    (UUIDs by index, the file's text). UUIDs are fixed per node name."""
    h = hashlib.sha256(name.encode()).hexdigest()[:8]
    uuids = [f"GPU-{h}-{i:04x}-4000-8000-{i:012x}" for i in range(n)]
    text = "".join(f"gpu mem={mib} uuid={u} minor={i} name=Tesla V100-SXM2-16GB\n"
                   for i, u in enumerate(uuids))
    for i in range(n):
        text += "row " + " ".join("X" if j == i else "NV2" for j in range(n)) + "\n"
    return uuids, text


def units(unit, mib=GPU_MIB):
    return mib // (128 if unit == "128MiB" else 1024)


class GpuNode:
    """knode.Node `name` labelled ack.node.gpu.schedule=mode with `gpus`
    fake GPUs of 16 GiB, and gpushare-node (its mode from that label, the
    cluster's unit) advertising them."""

    def __init__(self, cp, name, mode, unit, workdir, gpus=2, binary=None, args=(), **node_kw):
        """binary: gpushare-node's path (default GS_K8S_BIN's); args: more
        flags (e.g. --dra); node_kw: knode.Node's (containerd_dir, cdi_dirs)."""
        self.cp, self.name, self.mode, self.unit, self.gpus = cp, name, mode, unit, gpus
        self.binary, self.args = binary, list(args)
        self.node = knode.Node(cp, name=name, workdir=workdir, labels={"ack.node.gpu.schedule": mode},
                               **node_kw)
        self.uuids, self.inventory_text = inventory(name, gpus)
        self.agent = None

    @property
    def procs(self):
        return self.node.procs

    def start(self, timeout=180):
        node = self.node.start()
        try:
            inv = os.path.join(node.dir, "gpus.inv")
            with open(inv, "w") as f:
                f.write(self.inventory_text)
            # as deploy/node/ runs it: its ServiceAccount and least-privilege RBAC
            self.cp.admin.apply_file(os.path.join(kcluster.SOURCE, "deploy", "node", "rbac.yaml"))
            token = self.cp.service_account_token(ns="kube-system", name="gpushare-node",
                                                  seconds=7 * 86400)
            kc = kcluster.write_kubeconfig(os.path.join(node.dir, "agent.kubeconfig"),
                                           self.cp.server, self.cp.ca, token)
            binary = self.binary or os.path.join(kcluster.k8s_bin_dir(), "gpushare-node")
            if not os.access(binary, os.X_OK):
                raise FileNotFoundError(f"{binary}: missing. Build it with plugins/node/build.sh "
                                        "(docs/node-agent.md), or set GS_K8S_BIN")
            self.agent = node.run("gpushare-node", [
                binary, "--kubeconfig", kc, "--kubelet-root-dir", node.root_dir,
                "--unit", self.unit, "--nvml-library", FAKE_NVML, "--poll-interval", "500ms",
                *self.args],
                env={"GS_FAKE_NVML_INVENTORY": inv}, in_ns=False)
            self.wait_advertised(timeout)
        except BaseException:
            print(node.dump_logs(), flush=True)
            node.stop()
            raise
        return self

    def want(self):
        """The allocatable gpushare-node advertises for this node."""
        want = {"aliyun.com/gpu-mem": str(units(self.unit) * self.gpus),
                "aliyun.com/gpu-count": str(self.gpus)}
        if self.mode == "topology":
            want["aliyun.com/gpu"] = str(self.gpus)
        return want

    def wait_advertised(self, timeout=180):
        want = self.want()

        def advertised():
            if not self.agent.alive():
                raise Fatal("gpushare-node exited:\n" + self.agent.tail())
            a = self.cp.admin.get("nodes", None, self.name)["status"].get("allocatable", {})
            return {k: a.get(k) for k in want} == want
        return wait_for(advertised, timeout, f"{self.name} advertising {want} (gpushare-node)", 0.2)

    def stop(self):
        self.node.stop()


def dev_nodes(cp, root, unit):
    """DEV_NODES started under root/nodes/NAME (in turn: two kubelets
    starting at once double the load for nothing); stopped again if one fails."""
    started = []
    try:
        for name, mode, gpus in DEV_NODES:
            started.append(GpuNode(cp, name, mode, unit, os.path.join(root, "nodes", name),
                                   gpus).start())
    except BaseException:
        for n in started:
            n.stop()
        raise
    return started


def down(root):
    """The host-side teardown of every node dev_nodes started under root
    (knode.down of each; their processes already stopped by PID)."""
    d = os.path.join(root, "nodes")
    names = sorted(os.listdir(d)) if os.path.isdir(d) else []
    return [n for n in names if knode.down(os.path.join(d, n))]
