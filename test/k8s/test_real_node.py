"""A real node (issue 31 item 1): the pinned kubelet with containerd and runc
from Debian registers in the real control plane and becomes Ready; pods
scheduled by the real kube-scheduler run in real containers (a busybox image
built here), see their env and ConfigMap volume, complete; a missing image
fails visibly; the node's device-plugin socket directory is there for a
device plugin; stop() leaves no process, mount, cgroup or bridge behind
(knode.py, docs/real-cluster.md)."""
import os
import shutil
import subprocess
import tempfile
import unittest

import yaml

import kbase
import kcluster
import kimages
import knode
from kcluster import ControlPlane, wait_for

cp = None
node = None
tmp = None


def setUpModule():
    global cp, node, tmp
    tmp = tempfile.mkdtemp(prefix="gs-node-")
    # kube-scheduler with deploy/scheduler's configuration; the pods here ask
    # for no GPU resource, so the extender (not started) is never called
    cp = ControlPlane(os.path.join(tmp, "cp")).start()
    node = knode.Node(cp, name="gs-real-a", labels={"gpushare.io/test": "node"}).start()


def tearDownModule():
    if node:
        node.stop()
    if cp:
        cp.stop()
    keep = os.environ.get("GS_K8S_KEEP_LOGS")
    for d in (keep and [cp.dir, *[os.path.join(cp.dir, n) for n in os.listdir(cp.dir)]]) or []:
        if os.path.isdir(d):
            os.makedirs(keep, exist_ok=True)
            for name in os.listdir(d):
                if name.endswith(".log"):
                    shutil.copy(os.path.join(d, name), os.path.join(keep, os.path.basename(d) + "-" + name))
    knode.remove_dir(tmp)


def busybox_pod(name, script, ns="default", image=kimages.BUSYBOX, **spec):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
           "spec": dict({"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                         "nodeSelector": {"gpushare.io/test": "node"},
                         "containers": [{"name": "main", "image": image,
                                         "command": ["sh", "-c", script]}]}, **spec)}
    return pod


def phase(name, ns="default"):
    p = cp.admin.get("pods", ns, name)
    return p["status"].get("phase"), p


def wait_phase(name, want, ns="default", timeout=120):
    return kbase.wait_pod_phase(cp.admin, ns, name, want, timeout)


class NodeRuns(unittest.TestCase):
    def test_registers_ready_with_the_pinned_kubelet_and_containerd(self):
        n = cp.admin.get("nodes", None, node.name)
        info = n["status"]["nodeInfo"]
        self.assertEqual(info["kubeletVersion"], "v1.37.2")
        self.assertTrue(info["containerRuntimeVersion"].startswith("containerd://1."),
                        info["containerRuntimeVersion"])
        ready = [c for c in n["status"]["conditions"] if c["type"] == "Ready"][0]
        self.assertEqual((ready["status"], ready["reason"]), ("True", "KubeletReady"))
        self.assertEqual(n["spec"].get("taints"), None)
        self.assertEqual(n["metadata"]["labels"]["gpushare.io/test"], "node")
        addr = {a["type"]: a["address"] for a in n["status"]["addresses"]}
        self.assertEqual(addr["InternalIP"], node.node_ip)
        # where a device plugin registers (kubelet.sock) and puts its own
        # socket: /var/lib/kubelet/device-plugins in the node's mount namespace
        self.assertTrue(os.path.exists(os.path.join(node.device_plugin_dir, "kubelet.sock")))
        self.assertEqual(os.listdir(f"/proc/{node.procs['kubelet'].pid}/root/var/lib/kubelet/device-plugins"),
                         os.listdir(node.device_plugin_dir))
        self.assertTrue(os.path.exists(node.pod_resources_socket))

    def test_busybox_sees_env_and_configmap_then_succeeds(self):
        cp.admin.apply({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "greeting", "namespace": "default"},
                        "data": {"message": "hello from a ConfigMap"}})
        pod = busybox_pod("env-and-file", 'echo "GS_COLOUR=$GS_COLOUR"; cat /etc/greeting/message; '
                          'echo; echo "host=$(hostname)"',
                          volumes=[{"name": "g", "configMap": {"name": "greeting"}}])
        c = pod["spec"]["containers"][0]
        c["env"] = [{"name": "GS_COLOUR", "value": "teal"}]
        c["volumeMounts"] = [{"name": "g", "mountPath": "/etc/greeting"}]
        cp.admin.create(pod)
        p = wait_phase("env-and-file", "Succeeded")
        self.assertEqual(p["spec"]["nodeName"], node.name)  # placed by kube-scheduler
        st = p["status"]["containerStatuses"][0]
        self.assertEqual(st["state"]["terminated"]["exitCode"], 0)
        self.assertEqual(st["image"], kimages.BUSYBOX)
        # the pod got an address of the node's CNI bridge network
        self.assertTrue(p["status"]["podIP"].startswith(node.pod_subnet.rsplit(".", 1)[0] + "."),
                        (p["status"]["podIP"], node.pod_subnet))
        # kubectl logs: the apiserver proxies the kubelet's log API
        out = subprocess.run([os.path.join(cp.bindir, "kubectl"), "--kubeconfig", cp.kubeconfig,
                              "logs", "env-and-file"], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.splitlines(),
                         ["GS_COLOUR=teal", "hello from a ConfigMap", "host=env-and-file"])

    def test_a_missing_image_fails_visibly(self):
        bad = busybox_pod("never-pulled", "true", image="gpushare.local/absent:1")
        bad["spec"]["containers"][0]["imagePullPolicy"] = "Never"
        cp.admin.create(bad)

        def waiting():
            sts = cp.admin.get("pods", "default", "never-pulled")["status"].get("containerStatuses") or []
            w = sts and sts[0]["state"].get("waiting")
            return w if w and w.get("reason") == "ErrImageNeverPull" else None
        w = wait_for(waiting, 120, "ErrImageNeverPull", 0.2)
        self.assertIn("gpushare.local/absent:1", w["message"])
        ev = wait_for(lambda: [e for e in cp.admin.events("default", "never-pulled")
                               if e["reason"] == "ErrImageNeverPull"], 60, "the event", 0.2)
        self.assertEqual(ev[0]["type"], "Warning")
        self.assertIn('"gpushare.local/absent:1" is not present with pull policy of Never',
                      ev[0]["message"])
        self.assertEqual(phase("never-pulled")[0], "Pending")

    def test_capacity_patched_like_a_device_plugin_survives_the_kubelets_updates(self):
        node.set_capacity({"aliyun.com/gpu-mem": "32", "aliyun.com/gpu-count": "2"})
        before = cp.admin.get("nodes", None, node.name)["status"]

        def beat():
            st = cp.admin.get("nodes", None, node.name)["status"]
            ready = [c for c in st["conditions"] if c["type"] == "Ready"][0]
            old = [c for c in before["conditions"] if c["type"] == "Ready"][0]
            return st if ready["lastHeartbeatTime"] != old["lastHeartbeatTime"] else None
        st = wait_for(beat, 60, "a status update of the kubelet", 0.2)
        for key in ("capacity", "allocatable"):
            self.assertEqual(st[key]["aliyun.com/gpu-mem"], "32")
            self.assertEqual(st[key]["aliyun.com/gpu-count"], "2")
        self.assertEqual(int(st["capacity"]["cpu"]), os.cpu_count())
        node.set_capacity({"aliyun.com/gpu-mem": None, "aliyun.com/gpu-count": None})


class GpushareImage(unittest.TestCase):
    def test_the_extender_image_from_scratch_runs_on_the_node(self):
        """gpushare's own image (issue 31 item 4, first step): FROM scratch
        with the extender and the libraries ldd names; as deploy/ runs it
        (non-root 65532, RuntimeDefault seccomp) it starts in a container."""
        tar = kimages.build_image("gpushare", recipe=kimages.gpushare_recipe())
        node.import_image(tar)
        binary = kimages.gpushare_recipe()[1][0][0]
        want = subprocess.run([binary, "--version"], capture_output=True, text=True,
                              env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0")).stdout
        pod = busybox_pod("extender-version", "", image=kimages.GPUSHARE,
                          securityContext={"runAsNonRoot": True, "runAsUser": 65532,
                                           "runAsGroup": 65532,
                                           "seccompProfile": {"type": "RuntimeDefault"}})
        c = pod["spec"]["containers"][0]
        del c["command"]  # the image's entrypoint
        c["args"] = ["--version"]
        # an ASan build's extender: no leak check (LeakSanitizer needs ptrace)
        c["env"] = [{"name": "ASAN_OPTIONS", "value": "detect_leaks=0"}]
        cp.admin.create(pod)
        wait_phase("extender-version", "Succeeded")
        log = cp.admin.open("GET", "/api/v1/namespaces/default/pods/extender-version/log",
                            accept="*/*").read().decode()
        self.assertEqual(log, want)
        self.assertTrue(want.startswith("gpushare-extender "), want)


class ExtenderFromDeploy(unittest.TestCase):
    def test_deploy_extender_as_a_pod_schedules_a_gpu_pod_that_runs(self):
        """deploy/deployment.yaml on the node with gpushare's image: its
        probes pass, it leads, and kube-scheduler's extender calls reach it;
        a GPU pod it binds runs on the node. What the harness changes, and
        why: one replica on host network at the port kube-scheduler calls
        (one node; no kube-proxy, so no Service address and no
        KUBERNETES_SERVICE_HOST of the cluster: the apiserver's loopback
        address instead)."""
        node.import_image(kimages.build_image("gpushare", recipe=kimages.gpushare_recipe()))
        cp.admin.apply_file(os.path.join(kcluster.SOURCE, "deploy", "configmap.yaml"))
        with open(os.path.join(kcluster.SOURCE, "deploy", "deployment.yaml")) as f:
            dep = [d for d in yaml.safe_load_all(f) if d and d["kind"] == "Deployment"][0]
        port = cp.ext_port
        dep["spec"]["replicas"] = 1
        spec = dep["spec"]["template"]["spec"]
        spec.update({"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet",
                     "nodeSelector": {"gpushare.io/test": "node"}})
        c = spec["containers"][0]
        c["image"] = kimages.GPUSHARE
        c["args"] = [f"0.0.0.0:{port}" if a == "0.0.0.0:32766" else a for a in c["args"]]
        c["ports"][0]["containerPort"] = port
        for probe in ("livenessProbe", "readinessProbe"):
            c[probe]["httpGet"]["port"] = port
        c["env"] += [{"name": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"},
                     {"name": "KUBERNETES_SERVICE_PORT", "value": str(cp.api_port)},
                     {"name": "ASAN_OPTIONS", "value": "detect_leaks=0"}]
        cp.admin.apply(dep)
        try:
            def available():
                d = cp.admin.get("deployments", "kube-system", "gpushare-extender")
                return d.get("status", {}).get("availableReplicas") == 1 and d
            wait_for(available, 180, "the extender Deployment available", 0.5)
            cp.admin.patch("nodes", None, node.name, {"metadata": {"labels": {"ack.node.gpu.schedule": "share"}}})
            node.set_capacity({"aliyun.com/gpu-mem": "32", "aliyun.com/gpu-count": "2"})
            pod = busybox_pod("gpu-4", "echo ran on $(hostname)")
            pod["spec"]["containers"][0]["resources"] = {"limits": {"aliyun.com/gpu-mem": "4"}}
            cp.admin.create(pod)
            p = wait_phase("gpu-4", "Succeeded", timeout=180)
            self.assertEqual(p["spec"]["nodeName"], node.name)
            ann = p["metadata"]["annotations"]
            self.assertEqual(ann["ALIYUN_COM_GPU_MEM_POD"], "4")
            log = cp.admin.open("GET", "/api/v1/namespaces/default/pods/gpu-4/log", accept="*/*").read()
            self.assertEqual(log, b"ran on gpu-4\n")
            # the extender in its pod bound it, as its ServiceAccount
            self.assertEqual([e["user"]["username"] for e in cp.audit_bindings("gpu-4")],
                             [kcluster.EXTENDER_SA])
        finally:
            cp.admin.delete("pods", "default", "gpu-4")
            cp.admin.delete("deployments", "kube-system", "gpushare-extender")
            node.set_capacity({"aliyun.com/gpu-mem": None, "aliyun.com/gpu-count": None})
            wait_for(lambda: not [p for p in cp.admin.list("pods", "kube-system")
                                  if p["metadata"]["name"].startswith("gpushare-extender")],
                     120, "the extender's pods gone", 0.5)


class NodeStops(unittest.TestCase):
    def test_stop_leaves_no_process_mount_cgroup_or_bridge(self):
        second = knode.Node(cp, name="gs-real-b", labels={"gpushare.io/test": "stop"})
        second.start()
        try:
            # beside the kubelet, in its mount namespace: the hard-coded
            # device-plugin directory is this node's
            beside = second.run("beside", ["sh", "-c", 'echo "$NODE_NAME $DEVICE_PLUGIN_DIR"; '
                                           'ls /var/lib/kubelet/device-plugins; exec sleep 600'])
            wait_for(lambda: "kubelet.sock" in beside.tail(), 30, "the process beside the node")
            self.assertEqual(beside.tail().split(), ["gs-real-b", second.device_plugin_dir, "kubelet.sock"])
            pod = busybox_pod("long", "sleep 600", nodeSelector={"gpushare.io/test": "stop"})
            cp.admin.create(pod)
            wait_phase("long", "Running")
            # a running pod holds mounts (its rootfs, the token's tmpfs, the
            # sandbox's /dev/shm and netns) and a shim outside our sessions
            self.assertTrue([m for m in second.mounts() if "/volumes/" in m])
            self.assertTrue([m for m in second.mounts() if m.endswith("/rootfs")])
            self.assertTrue(knode._shims_of(second.containerd_sock))
            pids = {n: p.pid for n, p in second.procs.items()}
        finally:
            second.stop()
        for name, pid in pids.items():
            self.assertFalse(kcluster.pid_alive(pid), f"{name} (pid {pid}) still running")
        self.assertEqual(knode._shims_of(second.containerd_sock), [])
        self.assertEqual(knode._mounts_under(second.dir), [])
        mounts = subprocess.run(["mount"], capture_output=True, text=True).stdout
        self.assertNotIn(second.dir, mounts)
        self.assertEqual(knode._cgroup_dirs(second.state["cgroup_root"]), [])
        links = subprocess.run(["ip", "link"], capture_output=True, text=True).stdout
        self.assertNotIn(second.state["bridge"], links)
        self.assertIsNone(cp.admin.try_get("pods", "default", "long"))
        self.assertIsNone(cp.admin.try_get("nodes", None, "gs-real-b"))
        # the first node is unaffected
        self.assertTrue(node.ready())
        self.assertTrue(node.procs["containerd"].alive() and node.procs["kubelet"].alive())


if __name__ == "__main__":
    unittest.main()
