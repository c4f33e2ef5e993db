"""gpushare-node as a DRA kubelet plugin on a real node (issue 33 item 3,
docs/node-agent.md "DRA"): the pinned kubelet with containerd (knode), two
16 GiB GPUs of the fake NVML, gpushare-node --dra beside the kubelet. Shown:
the ResourceSlice it publishes (driver gpu.gpushare.io, pool = the node, one
shared device per GPU with its memory as capacity and gpushare.io/index and
/uuid); a pod's ResourceClaim of 4 GiB allocated by kube-scheduler's own DRA
allocator from that slice; the kubelet's NodePrepareResources writing the
claim's CDI spec (the device-plugin path's env for that GPU and memory) and
the pod running; NodeUnprepareResources removing it once the pod is gone;
each GPU's health told to the kubelet and shown in a running pod's status.

On Debian's containerd 1.6 (no CDI, docs/node-agent.md "DRA") the container
does not receive the CDI env, so only the spec file is checked there.
CdiNode runs a second node on containerd 2.x built from its Go module
(tools/containerd2.sh → build/containerd2, or GS_CONTAINERD2 naming the
folder) with CDI on, and checks the container's own env; it is skipped,
saying so, when that build is absent.

The gpushare-node under test is this tree's (GS_NODE_BIN, else
GS_BUILD_DIR's or build/'s k8s/bin from plugins/node/build.sh, else
GS_K8S_BIN's); GS_K8S_BIN names the control plane and kubelet."""
import json
import os
import subprocess
import tempfile
import unittest

import dracase
import kbase
import kgpunode
import kimages
import knode
from kcluster import BUILD, SOURCE, ControlPlane, k8s_bin_dir, wait_for

NODE = "gpu-dra-a"
DRIVER = "gpu.gpushare.io"
GIB = 1 << 30


def _first(env, *paths):
    """$env, else the first of paths that exists (else the last)."""
    return os.environ.get(env) or next((p for p in paths if os.path.exists(p)), paths[-1])


# this tree's gpushare-node (GS_K8S_BIN may name another tree's binaries)
NODE_BIN = _first("GS_NODE_BIN", os.path.join(BUILD, "k8s", "bin", "gpushare-node"),
                  os.path.join(SOURCE, "build", "k8s", "bin", "gpushare-node"),
                  os.path.join(k8s_bin_dir(), "gpushare-node"))
CONTAINERD2 = _first("GS_CONTAINERD2", os.path.join(BUILD, "containerd2"),
                     os.path.join(SOURCE, "build", "containerd2"))

cp = gnode = tmp = None


def dra_node(cp, name, tmp):
    """A share node NAME (1 GiB units) with this tree's gpushare-node
    --dra beside its kubelet, its CDI specs in tmp/NAME/cdi: started.
    (test_real_plugin_dranode.py's node too.)"""
    g = kgpunode.GpuNode(cp, name, "share", "1GiB", os.path.join(tmp, name), binary=NODE_BIN,
                         args=["--dra", "--cdi-dir", os.path.join(tmp, name, "cdi")])
    g.start()
    return g


def down(gnode, cp, tmp):
    """The module's end: the node, the control plane, the folder."""
    if gnode:
        gnode.stop()
    if cp:
        cp.stop()
    knode.remove_dir(tmp)


def setUpModule():
    global cp, gnode, tmp
    tmp = tempfile.mkdtemp(prefix="gs-dranode-")
    cp = ControlPlane(os.path.join(tmp, "cp")).start()
    gnode = dra_node(cp, NODE, tmp)


def tearDownModule():
    down(gnode, cp, tmp)


def cdi_dir():
    return os.path.join(gnode.node.dir, "cdi")


def slices():
    return [s for s in cp.admin.list("resourceslices")
            if s["spec"].get("driver") == DRIVER and s["spec"].get("nodeName") == NODE]


def create_claim(name, mem, node_name=None):
    cp.admin.apply(dracase.device_class())  # the shipped deploy/dra/deviceclass.yaml
    cp.admin.create({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": dracase.CLASS, "capacity": {"requests": {"memory": mem}}}}]}}})
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
           "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                    "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
                    "containers": [{"name": "main", "image": kimages.BUSYBOX,
                                    "command": ["sh", "-c", "env; exec sleep 3600"],
                                    "resources": {"claims": [{"name": "gpu"}]}}]}}
    if node_name:
        pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node_name}
    cp.admin.create(pod)


class DraNode(unittest.TestCase):
    def test_1_publishes_the_gpus_as_shared_devices(self):
        def published():
            if not gnode.agent.alive():
                raise kbase.Fatal("gpushare-node exited:\n" + gnode.agent.tail())
            return slices()
        s = wait_for(published, 120, "gpushare-node's ResourceSlice", 0.2)
        self.assertEqual(len(s), 1, s)
        spec = s[0]["spec"]
        self.assertEqual((spec["nodeName"], spec["pool"]["name"], spec["pool"]["resourceSliceCount"]),
                         (NODE, NODE, 1))
        self.assertEqual(s[0]["metadata"]["ownerReferences"][0]["kind"], "Node")
        self.assertEqual(spec["devices"], [
            {"name": f"gpu-{i}", "allowMultipleAllocations": True,
             "attributes": {"gpushare.io/index": {"int": i}, "gpushare.io/uuid": {"string": u}},
             "capacity": {"memory": {"value": "16Gi"}}}
            for i, u in enumerate(gnode.uuids)])

    def test_2_a_claim_is_allocated_by_kube_scheduler_and_prepared(self):
        wait_for(slices, 120, "gpushare-node's ResourceSlice", 0.2)
        create_claim("four", "4Gi", NODE)
        # Running: the pod holds its claim (once it ends, the resourceclaim
        # controller deallocates it)
        pod = kbase.wait_pod_phase(cp.admin, "default", "four", "Running", 180)
        self.assertEqual(pod["spec"]["nodeName"], NODE)  # placed by kube-scheduler
        claim = cp.admin.get("resourceclaims", "default", "four")
        res = claim["status"]["allocation"]["devices"]["results"]
        self.assertEqual(len(res), 1, res)
        r = res[0]
        self.assertEqual((r["driver"], r["pool"], r["request"]), (DRIVER, NODE, "gpu"))
        self.assertEqual(r["consumedCapacity"], {"memory": "4Gi"})
        self.assertIn(r["device"], ("gpu-0", "gpu-1"))
        gpu = int(r["device"].split("-")[1])
        uid = claim["metadata"]["uid"]
        # NodePrepareResources: the claim's CDI spec, the env C decided
        path = os.path.join(cdi_dir(), f"gpushare.io-gpu_{uid}.json")
        with open(path) as f:
            spec = json.load(f)
        self.assertEqual(spec["kind"], "gpushare.io/gpu")
        self.assertEqual([d["name"] for d in spec["devices"]], [uid])
        self.assertEqual(spec["devices"][0]["containerEdits"]["env"], [
            "ALIYUN_COM_GPU_MEM_CONTAINER=4", "ALIYUN_COM_GPU_MEM_DEV=16",
            f"ALIYUN_COM_GPU_MEM_IDX={gpu}", "ALIYUN_COM_GPU_MEM_POD=4",
            "GPUSHARE_GPU_MEM_LIMIT_MIB=4096", "GPUSHARE_GPU_MEM_UNIT_MIB=1024",
            f"NVIDIA_VISIBLE_DEVICES={gnode.uuids[gpu]}"])
        self.assertIn(f"msg=\"claim prepared\" claim=default/four cdi=gpushare.io/gpu={uid}",
                      gnode.agent.tail(20000))
        # the pod gone and the claim released: NodeUnprepareResources
        cp.admin.delete("pods", "default", "four")
        wait_for(lambda: not os.path.exists(path), 120, "the CDI spec removed (NodeUnprepareResources)",
                 0.2)
        self.assertIn("msg=\"claim unprepared\" claim=default/four", gnode.agent.tail(20000))

    def test_3_a_gpu_turning_unhealthy_shows_in_the_pods_status(self):
        """gpushare-node tells the kubelet every GPU's health (the
        DRAResourceHealth service; ResourceHealthStatus is beta and on in
        1.37): a running pod's container status names its claim's device
        Healthy, and Unhealthy once a critical XID hits that GPU; the slice
        stops offering it. Last in its class: the agent keeps a GPU
        unhealthy until it restarts."""
        wait_for(slices, 120, "gpushare-node's ResourceSlice", 0.2)
        create_claim("health", "4Gi", NODE)
        kbase.wait_pod_phase(cp.admin, "default", "health", "Running", 180)
        claim = cp.admin.get("resourceclaims", "default", "health")
        (r,) = claim["status"]["allocation"]["devices"]["results"]
        gpu, uid = int(r["device"].split("-")[1]), claim["metadata"]["uid"]

        def resources_status():
            pod = cp.admin.get("pods", "default", "health")
            return pod["status"]["containerStatuses"][0].get("allocatedResourcesStatus")

        def want(health):
            return [{"name": "claim:gpu",
                     "resources": [{"resourceID": f"gpushare.io/gpu={uid}", "health": health}]}]
        wait_for(lambda: resources_status() == want("Healthy"), 120,
                 "the pod's status naming its device Healthy", 0.2)
        with open(os.path.join(gnode.node.dir, "gpus.inv"), "a") as f:
            f.write(f"unhealthy {gnode.uuids[gpu]}\n")
        wait_for(lambda: resources_status() == want("Unhealthy"), 120,
                 f"the pod's status naming its device (GPU {gpu}) Unhealthy", 0.2)
        wait_for(lambda: [d["name"] for d in slices()[0]["spec"]["devices"]]
                 == [f"gpu-{1 - gpu}"], 60, f"the slice without gpu-{gpu}", 0.2)
        cp.admin.delete("pods", "default", "health")


@unittest.skipUnless(os.access(os.path.join(CONTAINERD2, "containerd"), os.X_OK),
                     f"no containerd 2.x in {CONTAINERD2} (tools/containerd2.sh): the CDI env "
                     "cannot reach a container on Debian's containerd 1.6")
class CdiNode(unittest.TestCase):
    """The container itself sees its claim's GPU: containerd 2.x applies the
    CDI device the kubelet passes."""

    def test_the_container_sees_its_claims_gpu(self):
        name = "gpu-dra-cdi"
        d = os.path.join(tmp, name)
        cdi = os.path.join(d, "cdi")
        os.makedirs(cdi, exist_ok=True)
        g = kgpunode.GpuNode(cp, name, "share", "1GiB", d,
                             binary=NODE_BIN,
                             args=["--dra", "--cdi-dir", cdi], containerd_dir=CONTAINERD2, cdi_dirs=[cdi])
        try:
            g.start()
            self.assertTrue(cp.admin.get("nodes", None, name)["status"]["nodeInfo"]
                            ["containerRuntimeVersion"].startswith("containerd://2."))
            create_claim("six", "6Gi", name)
            pod = kbase.wait_pod_phase(cp.admin, "default", "six", "Running", 180)
            self.assertEqual(pod["spec"]["nodeName"], name)
            r = cp.admin.get("resourceclaims", "default", "six")["status"]["allocation"]["devices"]["results"][0]
            gpu = int(r["device"].split("-")[1])

            def logged():
                out = subprocess.run([os.path.join(cp.bindir, "kubectl"), "--kubeconfig", cp.kubeconfig,
                                      "logs", "six"], capture_output=True, text=True, timeout=60)
                return out.returncode == 0 and "NVIDIA_VISIBLE_DEVICES=" in out.stdout and out.stdout
            env = dict(line.split("=", 1) for line in
                       wait_for(logged, 120, "the container's env", 0.5).splitlines() if "=" in line)
            self.assertEqual(env["NVIDIA_VISIBLE_DEVICES"], g.uuids[gpu])
            self.assertEqual(env["GPUSHARE_GPU_MEM_LIMIT_MIB"], "6144")
            self.assertEqual(env["ALIYUN_COM_GPU_MEM_IDX"], str(gpu))
            cp.admin.delete("pods", "default", "six")
        finally:
            g.stop()


if __name__ == "__main__":
    unittest.main()
