"""tools/dev.sh cluster as a user runs it (issue 11, "For users"; issue 31,
"tools/dev.sh cluster brings the node up too"): `kcluster.py up` starts the
control plane with gpushare wired in and two real nodes (kgpunode.py: a
share node and a topology node, each 2 x 16 GiB GPUs of the fake NVML with
gpushare-node) and prints how to use it; the pinned kubectl applies
deploy/samples/; every sample pod runs, and its container prints the
memory its name says (gpushare-node's env, docs/node-agent.md);
`kcluster.py down` stops every process it started."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import kcluster
import kgpunode
from kcluster import wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
ALLOC = "scheduler.framework.gpushare.allocation"
TOPO_ALLOC = "gputopology.alibabacloud.com/allocation"
GS_ENV = ("NVIDIA_VISIBLE_DEVICES", "ALIYUN_COM_", "GPUSHARE_", "CUDA_MPS_")
UUIDS = {name: kgpunode.inventory(name, gpus)[0] for name, _, gpus in kgpunode.DEV_NODES}


def memory_env(uuids, alloc, unit_mib=128, dev_units=128):
    """gpushare-node's env for a one-container memory pod of allocation alloc."""
    per_gpu = {int(g): u for g, u in alloc["0"].items()}
    gpus = sorted(per_gpu)
    total = sum(per_gpu.values())
    return {"NVIDIA_VISIBLE_DEVICES": ",".join(uuids[g] for g in gpus),
            "ALIYUN_COM_GPU_MEM_IDX": ",".join(str(g) for g in gpus),
            "ALIYUN_COM_GPU_MEM_POD": str(total), "ALIYUN_COM_GPU_MEM_CONTAINER": str(total),
            "ALIYUN_COM_GPU_MEM_DEV": str(dev_units),
            "GPUSHARE_GPU_MEM_LIMIT_MIB": ",".join(str(per_gpu[g] * unit_mib) for g in gpus),
            "GPUSHARE_GPU_MEM_UNIT_MIB": str(unit_mib)}


class ClusterCommand(unittest.TestCase):
    def test_up_apply_the_samples_down(self):
        with tempfile.TemporaryDirectory(prefix="gs-k8s-cli-") as d:
            port = kcluster.free_port()
            up = subprocess.run([sys.executable, os.path.join(HERE, "kcluster.py"), "up", "--dir", d,
                                 "--port", str(port)], capture_output=True, text=True, timeout=1200)
            pids = []
            try:
                self.assertEqual(up.returncode, 0, up.stderr[-4000:])
                self.assertIn(f"export KUBECONFIG={d}/admin.kubeconfig", up.stdout)
                self.assertIn("kubectl apply -f deploy/samples/      # written for this cluster's "
                              "128MiB unit", up.stdout)
                with open(os.path.join(d, "pids")) as f:
                    pids = [int(line.split()[0]) for line in f if line.strip()]
                # etcd, apiserver, controller-manager, scheduler, extender; each
                # real node's containerd, kubelet and gpushare-node
                self.assertEqual(len(pids), 5 + 3 * len(kgpunode.DEV_NODES))
                kubectl = os.path.join(kcluster.k8s_bin_dir(), "kubectl")
                env = dict(os.environ, KUBECONFIG=os.path.join(d, "admin.kubeconfig"))

                def get(*args):
                    r = subprocess.run([kubectl, "get", *args, "-o", "json"], capture_output=True,
                                       text=True, env=env, timeout=60)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    return json.loads(r.stdout)
                # what gpushare-node advertises, in the ConfigMap's 128 MiB unit
                a, t = get("node", "gpu-real-a"), get("node", "gpu-real-t")
                self.assertEqual(a["status"]["nodeInfo"]["kubeletVersion"], "v1.37.2")
                self.assertEqual({k: v for k, v in a["status"]["allocatable"].items()
                                  if k.startswith("aliyun.com/")},
                                 {"aliyun.com/gpu-mem": "256", "aliyun.com/gpu-count": "2"})
                self.assertEqual(t["status"]["allocatable"]["aliyun.com/gpu"], "2")
                self.assertEqual(json.loads(t["metadata"]["annotations"]["gpushare.io/topology"]),
                                 {"links": [["X", "NV2"], ["NV2", "X"]]})
                out = subprocess.run([kubectl, "apply", "-f", os.path.join(kcluster.SOURCE, "deploy", "samples")],
                                     capture_output=True, text=True, env=env, timeout=120)
                self.assertEqual(out.returncode, 0, out.stderr)

                def running():
                    items = get("pods")["items"]
                    bad = [p for p in items if p["status"].get("phase") in ("Failed", "Succeeded")]
                    self.assertEqual(bad, [], "a sample pod ended")
                    run = [p for p in items if p["status"].get("phase") == "Running"]
                    return run if len(run) == 4 else None
                # share-2gib, multi-gpu-8gib and the two members of the topology Job
                pods = wait_for(running, 600, "the four sample pods Running", 0.5)
                by = {re.sub(r"-\d+-[a-z0-9]{5}$", "", p["metadata"]["name"]): p for p in pods}

                def env_of(p):
                    def printed():
                        r = subprocess.run([kubectl, "logs", p["metadata"]["name"]], capture_output=True,
                                           text=True, env=env, timeout=60)
                        return r.stdout if "NVIDIA_VISIBLE_DEVICES=" in r.stdout else None
                    log = wait_for(printed, 120, f"{p['metadata']['name']}'s env", 0.5)
                    return {k: v for k, v in (line.partition("=")[::2] for line in log.splitlines())
                            if k.startswith(GS_ENV)}

                def assigned(p):
                    ann = p["metadata"]["annotations"]
                    return ann.get("scheduler.framework.gpushare.assigned") == "true"
                # 2 GiB: 16 units of 128 MiB on one GPU of the share node
                share = by["share-2gib"]
                self.assertEqual(share["spec"]["nodeName"], "gpu-real-a")
                alloc = json.loads(share["metadata"]["annotations"][ALLOC])
                self.assertEqual(list(alloc["0"].values()), [16])
                self.assertEqual(env_of(share), memory_env(UUIDS["gpu-real-a"], alloc))
                self.assertEqual(env_of(share)["GPUSHARE_GPU_MEM_LIMIT_MIB"], "2048")
                self.assertTrue(assigned(share))
                # 8 GiB: 32 units (4 GiB) on each of the share node's two GPUs
                multi = by["multi-gpu-8gib"]
                self.assertEqual(multi["spec"]["nodeName"], "gpu-real-a")
                alloc = json.loads(multi["metadata"]["annotations"][ALLOC])
                self.assertEqual(alloc, {"0": {"0": 32, "1": 32}})
                self.assertEqual(env_of(multi), memory_env(UUIDS["gpu-real-a"], alloc))
                self.assertEqual(env_of(multi)["GPUSHARE_GPU_MEM_LIMIT_MIB"], "4096,4096")
                self.assertTrue(assigned(multi))
                # the Job's two members: one whole GPU each of the topology node
                topo = [p for p in pods if p["metadata"]["name"].startswith("pytorch-dist-nccl-")]
                self.assertEqual(len(topo), 2)
                seen = []
                for p in topo:
                    self.assertEqual(p["spec"]["nodeName"], "gpu-real-t")
                    ta = json.loads(p["metadata"]["annotations"][TOPO_ALLOC])
                    self.assertTrue(ta["assigned"])
                    (gpu,) = ta["allocatedGPUs"]["0"]
                    self.assertEqual(env_of(p), {"NVIDIA_VISIBLE_DEVICES": UUIDS["gpu-real-t"][int(gpu)]})
                    seen.append(gpu)
                self.assertEqual(sorted(seen), ["0", "1"])
            finally:
                down = subprocess.run([sys.executable, os.path.join(HERE, "kcluster.py"), "down", "--dir", d],
                                      capture_output=True, text=True, timeout=600)
            self.assertEqual(down.returncode, 0, down.stderr)
            for pid in pids:
                self.assertFalse(kcluster.pid_alive(pid), f"pid {pid} still running")
            self.assertFalse(os.path.exists(os.path.join(d, "pids")))
            # the nodes' shims, mounts and state are gone with them
            with open("/proc/self/mounts") as f:
                self.assertNotIn(d, f.read())
            for name, _, _ in kgpunode.DEV_NODES:
                self.assertFalse(os.path.exists(os.path.join(d, "nodes", name, "node-state.json")))
                self.assertIn(f"cluster: node {name} torn down", down.stdout)


if __name__ == "__main__":
    unittest.main()
