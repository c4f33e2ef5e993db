"""tools/dev.sh cluster as a user runs it (issue 11, "For users"):
`kcluster.py up` starts the control plane with gpushare wired in and a real
node (knode.py), and prints how to use it; the pinned kubectl applies
deploy/samples/ and the real
kube-scheduler binds every sample through gpushare; `kcluster.py down` stops
every process it started."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import kcluster
from kcluster import wait_for

HERE = os.path.dirname(os.path.abspath(__file__))


class ClusterCommand(unittest.TestCase):
    def test_up_apply_the_samples_down(self):
        with tempfile.TemporaryDirectory(prefix="gs-k8s-cli-") as d:
            port = kcluster.free_port()
            up = subprocess.run([sys.executable, os.path.join(HERE, "kcluster.py"), "up", "--dir", d,
                                 "--port", str(port)], capture_output=True, text=True, timeout=600)
            pids = []
            try:
                self.assertEqual(up.returncode, 0, up.stderr[-4000:])
                self.assertIn(f"export KUBECONFIG={d}/admin.kubeconfig", up.stdout)
                self.assertIn("kubectl apply -f deploy/samples/", up.stdout)
                with open(os.path.join(d, "pids")) as f:
                    pids = [int(line.split()[0]) for line in f if line.strip()]
                # etcd, apiserver, controller-manager, scheduler, extender; the
                # real node's containerd and kubelet
                self.assertEqual(len(pids), 7)
                node = json.loads(subprocess.run(
                    [os.path.join(kcluster.k8s_bin_dir(), "kubectl"), "--kubeconfig",
                     os.path.join(d, "admin.kubeconfig"), "get", "node", "gpu-real-a", "-o", "json"],
                    capture_output=True, text=True, timeout=60).stdout)
                self.assertEqual(node["status"]["nodeInfo"]["kubeletVersion"], "v1.37.2")
                self.assertEqual(node["status"]["allocatable"]["aliyun.com/gpu-mem"], "128")
                kubectl = os.path.join(kcluster.k8s_bin_dir(), "kubectl")
                env = dict(os.environ, KUBECONFIG=os.path.join(d, "admin.kubeconfig"))
                out = subprocess.run([kubectl, "apply", "-f", os.path.join(kcluster.SOURCE, "deploy", "samples")],
                                     capture_output=True, text=True, env=env, timeout=120)
                self.assertEqual(out.returncode, 0, out.stderr)

                def pods():
                    r = subprocess.run([kubectl, "get", "pods", "-o", "json"], capture_output=True,
                                       text=True, env=env, timeout=60)
                    return json.loads(r.stdout)["items"]
                # share-2gib, multi-gpu-8gib and the two members of the topology Job
                bound = wait_for(lambda: [p for p in pods() if p["spec"].get("nodeName")]
                                 if len([p for p in pods() if p["spec"].get("nodeName")]) >= 4 else None,
                                 180, "the samples bound", 0.5)
                by = {re.sub(r"-\d+-[a-z0-9]{5}$", "", p["metadata"]["name"]): p for p in bound}
                ann = by["share-2gib"]["metadata"]["annotations"]
                self.assertEqual(ann["gpushare.io/unit-mib"], "128")
                self.assertEqual(list(json.loads(ann["scheduler.framework.gpushare.allocation"])["0"].values()), [16])
                multi = json.loads(by["multi-gpu-8gib"]["metadata"]["annotations"]
                                   ["scheduler.framework.gpushare.allocation"])
                self.assertEqual(sorted(multi["0"].values()), [4, 4])
                topo = [p for p in bound if p["metadata"]["name"].startswith("pytorch-dist-nccl-")]
                self.assertEqual(len(topo), 2)
                self.assertEqual({p["spec"]["nodeName"] for p in topo} <= {"gpu-topo-a", "gpu-topo-b"}, True)
            finally:
                down = subprocess.run([sys.executable, os.path.join(HERE, "kcluster.py"), "down", "--dir", d],
                                      capture_output=True, text=True, timeout=300)
            self.assertEqual(down.returncode, 0, down.stderr)
            for pid in pids:
                self.assertFalse(kcluster.pid_alive(pid), f"pid {pid} still running")
            self.assertFalse(os.path.exists(os.path.join(d, "pids")))
            # the node's shims, mounts and state are gone with it
            with open("/proc/self/mounts") as f:
                self.assertNotIn(d, f.read())
            self.assertFalse(os.path.exists(os.path.join(d, "node", "node-state.json")))


if __name__ == "__main__":
    unittest.main()
