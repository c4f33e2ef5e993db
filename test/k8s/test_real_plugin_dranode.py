"""A claim gpushare-scheduler places, prepared by a real kubelet (issue 33,
"the apiserver accepts every allocation and the kubelet prepares it";
docs/dra.md "gpushare-scheduler placing claims"): the control plane with
gpushare-scheduler as deploy/scheduler/gpushare-scheduler-config.yaml runs it
(its own ServiceAccount, the ConfigMap read at start-up), one real node
(kubelet, containerd, two fake 16 GiB GPUs) with gpushare-node --dra
publishing the GPUs. A gpu-mem pod of 14 GiB runs on GPU 0 first (started by
gpushare-node's device plugin); then two 4 GiB claims of the DeviceClass
gpushare.io, one pod each: gpushare writes both allocations on GPU 1 (GPU 0
has 2 GiB left, which kube-scheduler's own allocator, blind to gpu-mem pods,
would not know), the kubelet's
NodePrepareResources writes each claim's CDI spec with the env C decided for
that GPU and memory, the pods run, the plugin's ledger holds the claims;
the pods gone, the specs are removed."""
import json
import os
import tempfile
import unittest

import dracase
import kbase
import kimages
from kcluster import SOURCE, ControlPlane, k8s_bin_dir, wait_for
from realcase import Env, PluginView
from test_real_dranode import dra_node, down

NODE = "gpu-pdra-a"
DRIVER = "gpu.gpushare.io"

cp = gnode = tmp = view = None


def setUpModule():
    global cp, gnode, tmp, view
    tmp = tempfile.mkdtemp(prefix="gs-plugin-dranode-")
    cp = ControlPlane(os.path.join(tmp, "cp"),
                      scheduler_config=os.path.join(SOURCE, "deploy", "scheduler",
                                                    "gpushare-scheduler-config.yaml"),
                      scheduler_binary=os.path.join(k8s_bin_dir(), "gpushare-scheduler"))
    cp.before_scheduler.append(Env.configmap("1GiB"))
    cp.scheduler_sa = "gpushare-scheduler"
    try:
        cp.start()
        view = PluginView(cp).wait_ready()
        gnode = dra_node(cp, NODE, tmp)
    except BaseException:
        print(cp.dump_logs(), flush=True)
        tearDownModule()
        raise


def tearDownModule():
    down(gnode, cp, tmp)


def claim_pod(name):
    cp.admin.apply(dracase.device_class())
    cp.admin.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                     "metadata": {"name": name, "namespace": "default"},
                     "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                         "deviceClassName": dracase.CLASS, "capacity": {"requests": {"memory": "4Gi"}}}}]}}})
    cp.admin.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                     "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                              "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
                              "containers": [{"name": "main", "image": kimages.BUSYBOX,
                                              "command": ["sh", "-c", "env; exec sleep 3600"],
                                              "resources": {"claims": [{"name": "gpu"}]}}]}})


class PluginDraNode(unittest.TestCase):
    def test_claims_placed_by_gpushare_are_prepared_by_the_kubelet(self):
        def published():
            if not gnode.agent.alive():
                raise kbase.Fatal("gpushare-node exited:\n" + gnode.agent.tail())
            return [s for s in cp.admin.list("resourceslices")
                    if s["spec"].get("driver") == DRIVER and s["spec"].get("nodeName") == NODE]
        wait_for(published, 120, "gpushare-node's ResourceSlice", 0.2)
        cp.admin.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "mem", "namespace": "default"},
                         "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                                  "containers": [{"name": "main", "image": kimages.BUSYBOX,
                                                  "command": ["sh", "-c", "exec sleep 3600"],
                                                  "resources": {"limits": {"aliyun.com/gpu-mem": "14"}}}]}})
        mem = kbase.wait_pod_phase(cp.admin, "default", "mem", "Running", 180)
        self.assertEqual(json.loads(mem["metadata"]["annotations"]["scheduler.framework.gpushare.allocation"]),
                         {"0": {"0": 14}})
        specs = {}
        for name in ("one", "two"):
            claim_pod(name)
            pod = kbase.wait_pod_phase(cp.admin, "default", name, "Running", 180)
            self.assertEqual(pod["spec"]["nodeName"], NODE)
            claim = cp.admin.get("resourceclaims", "default", name)
            (r,) = claim["status"]["allocation"]["devices"]["results"]
            # gpushare's allocation: a share of the device, 4Gi consumed, the pod its consumer
            self.assertEqual((r["driver"], r["pool"], r["request"], r["consumedCapacity"]),
                             (DRIVER, NODE, "gpu", {"memory": "4Gi"}))
            self.assertTrue(r.get("shareID"))
            self.assertEqual([c["name"] for c in claim["status"]["reservedFor"]], [name])
            gpu, uid = int(r["device"].split("-")[1]), claim["metadata"]["uid"]
            # the kubelet's NodePrepareResources: the claim's CDI spec, C's env
            path = os.path.join(gnode.node.dir, "cdi", f"gpushare.io-gpu_{uid}.json")
            with open(path) as f:
                spec = json.load(f)
            self.assertEqual(spec["devices"][0]["containerEdits"]["env"], [
                "ALIYUN_COM_GPU_MEM_CONTAINER=4", "ALIYUN_COM_GPU_MEM_DEV=16",
                f"ALIYUN_COM_GPU_MEM_IDX={gpu}", "ALIYUN_COM_GPU_MEM_POD=4",
                "GPUSHARE_GPU_MEM_LIMIT_MIB=4096", "GPUSHARE_GPU_MEM_UNIT_MIB=1024",
                f"NVIDIA_VISIBLE_DEVICES={gnode.uuids[gpu]}"])
            specs[name] = (gpu, path)
        # both on GPU 1: GPU 0 has 2 GiB beside the gpu-mem pod
        self.assertEqual((specs["one"][0], specs["two"][0]), (1, 1))
        led = view.ledger(NODE)["nodes"][0]["gpus"]
        self.assertEqual({g["index"]: g["usedMiB"] for g in led}, {0: 14336, 1: 8192})
        self.assertEqual(sorted((c["namespace"], c["name"], c["usedMiB"])
                                for g in led for c in g.get("claims", [])),
                         [("default", "one", 4096), ("default", "two", 4096)])
        for name in ("one", "two", "mem"):
            cp.admin.delete("pods", "default", name)
        wait_for(lambda: not any(os.path.exists(p) for _, p in specs.values()), 120,
                 "the CDI specs removed (NodeUnprepareResources)", 0.2)
        wait_for(lambda: all(g["usedMiB"] == 0 for g in view.ledger(NODE)["nodes"][0]["gpus"]), 120,
                 "the claims deallocated and the ledger empty", 0.2)


if __name__ == "__main__":
    unittest.main()
