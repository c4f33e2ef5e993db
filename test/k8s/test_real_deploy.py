"""gpushare deployed from deploy/ onto the real node (issue 31 item 4).

The real control plane (kube-scheduler configured from
deploy/scheduler/kube-scheduler-config.yaml: the extender at
http://127.0.0.1:32766, the Service's NodePort), one real node (knode.Node)
with two 16 GiB GPUs of the fake NVML, and kube-proxy of the pinned release
in iptables mode beside it (kproxy.py), so that Services work: pods reach the
apiserver through the `kubernetes` Service, kube-scheduler reaches the
extender through the gpushare-extender Service's NodePort.

gpushare's images are built here FROM scratch (kimages.gpushare_recipe) under
the names deploy/ gives them (registry.example.com/gpushare/...:TAG), so the
manifests run unchanged. `kubectl apply -k` of deploy/ itself, through an
overlay whose only change is the fake GPUs: gpushare-node's NVML library and
inventory (hostPath and env of the DaemonSet).

Shown: both extender replicas Ready, the leader alone behind the Service,
kube-scheduler's calls reaching it; a GPU pod bound by it and started by
gpushare-node's DaemonSet pod with its allocation in its env; readiness
gating traffic (a selected but unready endpoint gets none); the PDB refusing
an eviction that would breach it while the leader hands over; deploy/plugin/'s
gpushare-scheduler as pods scheduling a GPU pod; deploy/tls/ (HTTPS, client
certificates) with kube-scheduler-config-tls.yaml, and the NetworkPolicy
enforced: not by the bridge CNI plugin (a pod it does not allow connects), by
kube-router's network-policy controller started beside the node (knetpol.py,
docs/real-cluster.md): that pod refused, Prometheus's and kube-scheduler's
calls served; stopped, it leaves no rule, chain or ipset.
"""
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import unittest
import urllib.error
import urllib.request

import yaml

import kbase
import kcluster
import kimages
import knetpol
import knode
import kproxy
from kcluster import BUILD, SOURCE, ControlPlane, KubeError, wait_for
from test_real_tls import make_certs, tls_scheduler_config

NODE = "gpu-deploy-a"
NS = "kube-system"
UUIDS = ["GPU-de910000-aaaa-4000-8000-000000000000", "GPU-de910001-bbbb-4000-8000-000000000001"]
INVENTORY = "".join(f"gpu mem=16384 uuid={u} minor={i} name=Tesla V100-SXM2-16GB\n"
                    for i, u in enumerate(UUIDS)) + "row X NV2\nrow NV2 X\n"
FAKE_NVML = os.path.join(BUILD, "fakenvml", "libnvidia-ml.so.1")
ALLOC = "scheduler.framework.gpushare.allocation"
NODEPORT = "http://127.0.0.1:32766"
EXT = {"app.kubernetes.io/name": "gpushare-extender"}
GS_ENV = ("NVIDIA_VISIBLE_DEVICES", "ALIYUN_COM_", "GPUSHARE_")
# every kubelet's (any node's on the machine), not kube-proxy's: its canary and
# the martian-packet rule it keeps for route_localnet, its iptables-mode hint
KUBELET_CHAINS = ("KUBE-KUBELET-CANARY", "KUBE-FIREWALL", "KUBE-IPTABLES-HINT")

cp = node = proxy = tmp = None
enforcer = None  # kube-router, from test_6 on


def kubectl(*args, check=True):
    r = subprocess.run([os.path.join(cp.bindir, "kubectl"), "--kubeconfig", cp.kubeconfig, *args],
                       capture_output=True, text=True, timeout=300)
    if check and r.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def image_refs():
    """deploy/'s image names: the extender's from deploy/kustomization.yaml,
    the agent's from deploy/node/, gpushare-scheduler's from deploy/plugin/."""
    refs = {}
    for sub in ("", "node"):
        with open(os.path.join(SOURCE, "deploy", sub, "kustomization.yaml")) as f:
            for img in yaml.safe_load(f)["images"]:
                refs[img["name"].rsplit("/", 1)[1]] = f"{img['newName']}:{img['newTag']}"
    with open(os.path.join(SOURCE, "deploy", "plugin", "gpushare-scheduler.yaml")) as f:
        (dep,) = [d for d in yaml.safe_load_all(f) if d and d["kind"] == "Deployment"]
    refs["gpushare-scheduler"] = dep["spec"]["template"]["spec"]["containers"][0]["image"]
    return refs


def build_images():
    refs = image_refs()
    out = os.path.join(BUILD, "k8s", "images")
    return [kimages.build_image("deploy-extender", out, kimages.gpushare_recipe(
                binaries=("gpushare-extender", "gpushare-inspect", "gpushare-topo"),
                ref=refs["gpushare-extender"], user="65532:65532")),
            kimages.build_image("deploy-scheduler", out, kimages.gpushare_recipe(
                binaries=("gpushare-scheduler",), ref=refs["gpushare-scheduler"], user="65532:65532")),
            kimages.build_image("deploy-node", out, kimages.gpushare_recipe(
                binaries=("gpushare-node",), ref=refs["gpushare-node"]))]


def overlay(name, deploy_dir):
    """A kustomization over deploy_dir (deploy/ or a copy) whose one patch
    gives gpushare-node the fake NVML: its library at the hostPath the
    DaemonSet mounts it from, and its inventory. Returns its directory."""
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    inv = os.path.join(node.dir, "gpus.inv")
    patch = {"apiVersion": "apps/v1", "kind": "DaemonSet",
             "metadata": {"name": "gpushare-node", "namespace": NS},
             "spec": {"template": {"spec": {
                 "containers": [{"name": "gpushare-node",
                                 "env": [{"name": "GS_FAKE_NVML_INVENTORY", "value": "/driver/gpus.inv"}],
                                 "volumeMounts": [{"name": "fake-inventory", "mountPath": "/driver/gpus.inv",
                                                   "readOnly": True}]}],
                 "volumes": [{"name": "nvml", "hostPath": {"path": FAKE_NVML, "type": "File"}},
                             {"name": "fake-inventory", "hostPath": {"path": inv, "type": "File"}}]}}}}
    with open(os.path.join(d, "fake-gpus.yaml"), "w") as f:
        yaml.safe_dump(patch, f)
    with open(os.path.join(d, "kustomization.yaml"), "w") as f:
        yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                        "resources": [os.path.relpath(deploy_dir, d)],
                        "patches": [{"path": "fake-gpus.yaml"}]}, f)
    return d


def setUpModule():
    global cp, node, proxy, tmp
    tmp = tempfile.mkdtemp(prefix="gs-deploy-")
    try:
        tars = build_images()
        # kube-scheduler as deploy/scheduler/ configures it: the extender at
        # the Service's NodePort on 127.0.0.1
        cp = ControlPlane(os.path.join(tmp, "cp"), ext_url=NODEPORT)
        cp.api_bind = "0.0.0.0"  # pods reach it through the kubernetes Service
        cp.start()
        node = knode.Node(cp, name=NODE, labels={"ack.node.gpu.schedule": "share"})
        node.start()
        with open(os.path.join(node.dir, "gpus.inv"), "w") as f:
            f.write(INVENTORY)
        for t in tars:
            node.import_image(t)
        proxy = kproxy.KubeProxy(cp, node).start()
        Deploy.out = kubectl("apply", "-k", overlay("shipped", os.path.join(SOURCE, "deploy")))
        wait_extender(2)
        wait_for(lambda: allocatable() == ("32", "2"), 180, "gpushare-node's GPUs on the node", 0.5)
    except BaseException:
        dump()
        tearDownModule()
        raise


def tearDownModule():
    if cp and cp.admin and node and node.procs.get("kubelet"):
        # the controllers first, or they re-create the pods node.stop() deletes
        for res, name in (("deployments", "gpushare-extender"), ("deployments", "gpushare-scheduler"),
                          ("daemonsets", "gpushare-node")):
            try:
                cp.admin.delete(res, NS, name)
            except (KubeError, OSError):
                pass
    if enforcer:
        enforcer.stop()
    if proxy:
        proxy.stop()
    if node:
        node.stop()
    if cp:
        cp.stop()
    if tmp and (node is None or not node.procs or node._stopped):
        knode.remove_dir(tmp)


def dump():
    if cp:
        print(cp.dump_logs(), flush=True)
    if node:
        print(node.dump_logs(), flush=True)
    if cp and cp.admin:
        try:
            print(kubectl("-n", NS, "get", "pods,endpointslices", "-o", "wide", check=False), flush=True)
            for p in cp.admin.list("pods", NS):
                print(f"--- {p['metadata']['name']} ---\n" + pod_log(NS, p["metadata"]["name"]), flush=True)
        except Exception as e:  # noqa: BLE001 - a diagnostic
            print(f"(no pod dump: {e!r})")


def read(path):
    with open(path) as f:
        return f.read()


def allocatable():
    a = cp.admin.get("nodes", None, NODE)["status"].get("allocatable", {})
    return a.get("aliyun.com/gpu-mem"), a.get("aliyun.com/gpu-count")


def pod_log(ns, name):
    try:
        return cp.admin.open("GET", f"/api/v1/namespaces/{ns}/pods/{name}/log", accept="*/*").read().decode()
    except (KubeError, OSError) as e:
        return f"(no log: {e})"


def ext_pods():
    """The Deployment's pods (its ReplicaSets'), not terminating."""
    return [p for p in cp.admin.list("pods", NS, selector="app.kubernetes.io/name=gpushare-extender")
            if not p["metadata"].get("deletionTimestamp")
            and [o for o in p["metadata"].get("ownerReferences", []) if o["kind"] == "ReplicaSet"]]


def is_ready(p):
    return any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))


def leaders():
    return [p["metadata"]["name"] for p in ext_pods()
            if p["metadata"].get("labels", {}).get("gpushare.io/leader") == "true"]


def wait_extender(n, timeout=240):
    """The Deployment with n Ready replicas (n pods, none terminating), one
    of them labelled leader and the Service's only endpoint."""
    def ok():
        d = cp.admin.get("deployments", NS, "gpushare-extender")["status"]
        pods = ext_pods()
        return (d.get("readyReplicas") == n and d.get("updatedReplicas") == n and d.get("replicas") == n
                and len(pods) == n and all(is_ready(p) for p in pods) and len(leaders()) == 1
                and endpoints() == {pod_ip(leaders()[0]): True})
    return wait_for(ok, timeout, f"{n} extender replicas Ready, the leader the Service's endpoint", 0.5)


def pod_ip(name):
    return cp.admin.get("pods", NS, name)["status"].get("podIP")


def endpoints(service="gpushare-extender"):
    """{address: ready} of the Service's EndpointSlices."""
    out = {}
    for s in cp.admin.list("endpointslices", NS, selector=f"kubernetes.io/service-name={service}"):
        for e in s.get("endpoints") or []:
            for a in e["addresses"]:
                out[a] = bool(e.get("conditions", {}).get("ready"))
    return out


def via_nodeport(path, timeout=5):
    """(status, body) of GET path at 127.0.0.1:32766: through kube-proxy's
    NodePort, as kube-scheduler calls it."""
    try:
        with urllib.request.urlopen(NODEPORT + path, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)


def gpu_pod(name, units, scheduler=None):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
           "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "main", "image": kimages.BUSYBOX, "command": ["env"],
                                    "resources": {"limits": {"aliyun.com/gpu-mem": str(units)}}}]}}
    if scheduler:
        pod["spec"]["schedulerName"] = scheduler
    return pod


class Deploy(unittest.TestCase):
    out = ""

    def tearDown(self):
        for p in cp.admin.list("pods", "default"):
            cp.admin.delete("pods", "default", p["metadata"]["name"])

    def run_gpu_pod(self, name, units=4, scheduler=None, binder=kcluster.EXTENDER_SA):
        """A busybox `env` pod asking aliyun.com/gpu-mem: units runs to
        Succeeded on the node, bound by binder, and its container's gpushare
        env is its allocation annotation (what gpushare-node gives it)."""
        cp.admin.create(gpu_pod(name, units, scheduler))
        try:
            p = kbase.wait_pod_phase(cp.admin, "default", name, "Succeeded", 240)
        except BaseException:
            print(kubectl("describe", "pod", name, check=False))
            raise
        self.assertEqual(p["spec"]["nodeName"], NODE)
        ann = p["metadata"]["annotations"]
        alloc = {int(g): u for g, u in json.loads(ann[ALLOC])["0"].items()}
        self.assertEqual(sum(alloc.values()), units)
        gpus = sorted(alloc)
        env = dict(line.partition("=")[::2] for line in pod_log("default", name).splitlines()
                   if line.startswith(GS_ENV))
        self.assertEqual(env, {
            "NVIDIA_VISIBLE_DEVICES": ",".join(UUIDS[g] for g in gpus),
            "ALIYUN_COM_GPU_MEM_IDX": ",".join(map(str, gpus)),
            "ALIYUN_COM_GPU_MEM_POD": str(units), "ALIYUN_COM_GPU_MEM_CONTAINER": str(units),
            "ALIYUN_COM_GPU_MEM_DEV": "16",
            "GPUSHARE_GPU_MEM_LIMIT_MIB": ",".join(str(alloc[g] * 1024) for g in gpus),
            "GPUSHARE_GPU_MEM_UNIT_MIB": "1024"})
        self.assertEqual(ann["ALIYUN_COM_GPU_MEM_ASSIGNED"], "true")  # marked by gpushare-node
        self.assertEqual([e["user"]["username"] for e in cp.audit_bindings(name)], [binder])
        return p

    def test_1_apply_k_brings_up_both_replicas_and_the_leader_behind_the_service(self):
        for obj in ("serviceaccount/gpushare-extender", "configmap/gpushare-config",
                    "service/gpushare-extender", "deployment.apps/gpushare-extender",
                    "poddisruptionbudget.policy/gpushare-extender", "daemonset.apps/gpushare-node"):
            self.assertRegex(self.out, obj + " (created|configured|unchanged)")
        wait_extender(2)
        (leader,) = leaders()
        lease = cp.admin.get("leases", NS, "gpushare-extender")["spec"]["holderIdentity"]
        self.assertIn(leader, lease)
        # as shipped: 2 replicas, each Ready (/readyz/replica), the images deploy/ names
        d = cp.admin.get("deployments", NS, "gpushare-extender")
        self.assertEqual(d["spec"]["replicas"], 2)
        self.assertEqual(d["spec"]["template"]["spec"]["containers"][0]["image"],
                         image_refs()["gpushare-extender"])
        self.assertIn("successfully rolled out",
                      kubectl("-n", NS, "rollout", "status", "deployment/gpushare-extender", "--timeout=120s"))
        # kube-scheduler's URL is deploy/scheduler's, unchanged
        with open(os.path.join(cp.dir, "kube-scheduler-config.yaml")) as f:
            (ext,) = yaml.safe_load(f)["extenders"]
        self.assertEqual(ext["urlPrefix"], NODEPORT + "/gpushare-scheduler")
        # kube-proxy's NodePort on loopback leads to the leader alone: only
        # the leader answers /readyz 200 (a standby: 503 "not leader")
        self.assertIn("kube-system/gpushare-extender:http", proxy.rules())
        for _ in range(20):
            self.assertEqual(via_nodeport("/readyz"), (200, "ok\n"))
        standby = [p["metadata"]["name"] for p in ext_pods() if p["metadata"]["name"] != leader][0]
        st, body = kcluster.gsutil.http_status(f"http://{pod_ip(standby)}:32766", "/readyz")
        self.assertEqual((st, body), (503, b"not leader\n"))

    def test_2_a_gpu_pod_scheduled_through_the_service_runs_with_its_allocation(self):
        (agent,) = cp.admin.list("pods", NS, selector="app.kubernetes.io/name=gpushare-node")
        self.assertTrue(is_ready(agent))
        self.assertEqual(agent["spec"]["containers"][0]["image"], image_refs()["gpushare-node"])
        agent_log = pod_log(NS, agent["metadata"]["name"])
        for r in ("gpu-mem", "gpu-count"):
            self.assertIn(f"registered with the kubelet\" resource=aliyun.com/{r}", agent_log)
        (leader,) = leaders()
        (standby,) = [q["metadata"]["name"] for q in ext_pods() if q["metadata"]["name"] != leader]
        p = self.run_gpu_pod("deploy-4", 4)
        # the kubelet's pod-resources socket, mounted as shipped, named the pod
        self.assertIn("pod=default/deploy-4 container=main init=false by=kubelet",
                      pod_log(NS, agent["metadata"]["name"]))
        # kube-scheduler's calls reached the leader, never the standby
        self.assertIn("pod=default/deploy-4", pod_log(NS, leader))
        self.assertNotIn("deploy-4", pod_log(NS, standby))
        self.assertEqual(p["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_POD"], "4")

    def test_3_readiness_gates_traffic(self):
        """A pod the Service selects (both labels) that fails its readiness
        probe is an endpoint marked not ready, and kube-proxy sends it
        nothing; Ready, it gets its share."""
        www = os.path.join(node.dir, "decoy-www")
        os.makedirs(os.path.join(www, "readyz"), exist_ok=True)
        with open(os.path.join(www, "version"), "w") as f:
            f.write("decoy\n")
        decoy = {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "decoy", "namespace": NS,
                              "labels": dict(EXT, **{"gpushare.io/leader": "true"})},
                 "spec": {"terminationGracePeriodSeconds": 0, "nodeSelector": {"kubernetes.io/hostname": NODE},
                          "containers": [{"name": "httpd", "image": kimages.BUSYBOX,
                                          "command": ["/bin/busybox", "httpd", "-f", "-p", "32766", "-h", "/www"],
                                          "readinessProbe": {"httpGet": {"path": "/readyz/replica", "port": 32766},
                                                             "periodSeconds": 1, "failureThreshold": 1},
                                          "volumeMounts": [{"name": "www", "mountPath": "/www"}]}],
                          "volumes": [{"name": "www", "hostPath": {"path": www, "type": "Directory"}}]}}
        cp.admin.create(decoy)
        try:
            wait_for(lambda: cp.admin.get("pods", NS, "decoy")["status"].get("phase") == "Running"
                     and pod_ip("decoy") in endpoints(), 120, "the decoy selected, not ready", 0.5)
            leader_ip = pod_ip(leaders()[0])
            self.assertEqual(endpoints(), {leader_ip: True, pod_ip("decoy"): False})
            answers = {via_nodeport("/version")[1] for _ in range(30)}
            self.assertEqual(len(answers), 1)
            self.assertTrue(answers.pop().startswith("gpushare-extender "))
            with open(os.path.join(www, "readyz", "replica"), "w") as f:
                f.write("ok\n")
            wait_for(lambda: endpoints() == {leader_ip: True, pod_ip("decoy"): True}, 60,
                     "the decoy Ready in the endpoints", 0.5)
            wait_for(lambda: via_nodeport("/version") == (200, "decoy\n"), 60,
                     "kube-proxy sending the decoy its share", 0.1)
        finally:
            cp.admin.delete("pods", NS, "decoy")
            wait_for(lambda: cp.admin.try_get("pods", NS, "decoy") is None, 120, "the decoy gone", 0.5)
            shutil.rmtree(www, ignore_errors=True)
        wait_extender(2)

    def evict(self, name):
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": NS}}
        try:
            cp.admin.call("POST", f"/api/v1/namespaces/{NS}/pods/{name}/eviction", body)
            return 201, ""
        except KubeError as e:
            return e.code, str(e)

    def test_4_the_pdb_refuses_an_eviction_that_would_breach_it(self):
        """A drain: the node cordoned, the leader evicted (allowed: the
        standby takes over and the Service follows), then the last replica
        (refused: minAvailable 1); uncordoned, the Deployment is whole again
        and schedules through its new leader."""
        wait_extender(2)
        wait_for(lambda: cp.admin.get("poddisruptionbudgets", NS, "gpushare-extender")["status"]
                 .get("disruptionsAllowed") == 1, 60, "the PDB allowing one disruption", 0.5)
        (old,) = leaders()
        (other,) = [p["metadata"]["name"] for p in ext_pods() if p["metadata"]["name"] != old]
        cp.admin.patch("nodes", None, NODE, {"spec": {"unschedulable": True}})
        try:
            self.assertEqual(self.evict(old), (201, ""))
            code, text = self.evict(other)
            self.assertEqual(code, 429, text)
            self.assertIn("Cannot evict pod as it would violate the pod's disruption budget", text)
            wait_for(lambda: leaders() == [other] and endpoints() == {pod_ip(other): True}
                     and via_nodeport("/readyz") == (200, "ok\n"), 120,
                     "the standby leading behind the Service", 0.5)
            self.assertIsNotNone(cp.admin.try_get("pods", NS, other))
        finally:
            cp.admin.patch("nodes", None, NODE, {"spec": {"unschedulable": None}})
        wait_extender(2)
        self.assertEqual(leaders(), [other])
        self.run_gpu_pod("after-drain", 4)

    def test_5_deploy_plugin_schedules_gpu_pods_as_pods(self):
        """deploy/plugin/ as shipped: gpushare-scheduler's two replicas
        Ready (one leads its Lease), a pod naming it scheduled and started
        through gpushare-node."""
        out = kubectl("apply", "-k", os.path.join(SOURCE, "deploy", "plugin"))
        self.assertIn("deployment.apps/gpushare-scheduler created", out)
        try:
            def ready():
                d = cp.admin.get("deployments", NS, "gpushare-scheduler")["status"]
                lease = cp.admin.try_get("leases", NS, "gpushare-scheduler")
                return d.get("readyReplicas") == 2 and lease and lease["spec"].get("holderIdentity")
            wait_for(ready, 240, "gpushare-scheduler: 2 replicas Ready, a leader", 0.5)
            self.run_gpu_pod("plugin-4", 4, scheduler="gpushare-scheduler", binder=kbase.PLUGIN_SA)
        finally:
            kubectl("delete", "-k", os.path.join(SOURCE, "deploy", "plugin"), "--wait=false", check=False)

    def test_6_tls_and_the_network_policy(self):
        """deploy/ with its TLS lines enabled (the Secret first, as the
        comments say) and the NetworkPolicy with this cluster's address;
        kube-scheduler on kube-scheduler-config-tls.yaml: GPU pods are
        scheduled over HTTPS with its client certificate; a caller without
        one is refused the verbs. The policy: stored as written, and not
        enforced by the bridge plugin alone (a pod it does not allow
        connects); with kube-router's firewall, that pod is refused while
        Prometheus (the namespace and label the policy names) connects and
        kube-scheduler still schedules through the extender."""
        global enforcer
        pki = os.path.join(tmp, "tls-pki")
        os.makedirs(pki, exist_ok=True)
        make_certs(pki)
        cp.admin.apply({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                        "metadata": {"name": "gpushare-extender-tls", "namespace": NS},
                        "stringData": {k: read(os.path.join(pki, f)) for k, f in
                                       (("tls.crt", "ext.crt"), ("tls.key", "ext.key"),
                                        ("ca.crt", "clients-ca.crt"))}})
        # deploy/ copied, its kustomization edited as its comments say
        copy = os.path.join(tmp, "deploy-tls")
        shutil.copytree(os.path.join(SOURCE, "deploy"), copy)
        kpath = os.path.join(copy, "kustomization.yaml")
        with open(kpath) as f:
            text = f.read()
        self.assertIn("# patches:\n# - path: tls/deployment-tls.yaml\n", text)
        text = text.replace("# patches:\n# - path: tls/deployment-tls.yaml\n",
                            "patches:\n- path: tls/deployment-tls.yaml\n")
        text = text.replace("- node\n", "- node\n- tls/networkpolicy.yaml\n")
        with open(kpath, "w") as f:
            f.write(text)
        # the policy's kube-scheduler addresses: this node's, as the CNI shows
        # it (the NodePort masquerades to the bridge's gateway address)
        gw = node.pod_subnet.rsplit(".", 1)[0] + ".1"
        npath = os.path.join(copy, "tls", "networkpolicy.yaml")
        with open(npath) as f:
            pol = yaml.safe_load(f)
        pol["spec"]["ingress"][0]["from"] = [{"ipBlock": {"cidr": f"{gw}/32"}}]
        with open(npath, "w") as f:
            yaml.safe_dump(pol, f)
        # kube-scheduler on the TLS configuration: only its files' paths rewritten
        spath, ext = tls_scheduler_config(pki, tmp)
        self.assertEqual(ext["urlPrefix"], "https://127.0.0.1:32766/gpushare-scheduler")
        out = kubectl("apply", "-k", overlay("tls", copy))
        self.assertIn("networkpolicy.networking.k8s.io/gpushare-extender created", out)
        self.assertIn("successfully rolled out",
                      kubectl("-n", NS, "rollout", "status", "deployment/gpushare-extender", "--timeout=300s"))
        wait_extender(2)
        cp.procs["kube-scheduler"].stop()
        cp.scheduler_config, cp.ext_url = spath, "https://127.0.0.1:32766"
        cp.start_scheduler()
        self.assertEqual(via_nodeport("/readyz")[0], 0)  # HTTPS only now
        self.run_gpu_pod("tls-4", 4)
        # a caller without a client certificate: refused every verb
        import ssl
        ctx = ssl.create_default_context(cafile=os.path.join(pki, "ext-ca.crt"))
        ctx.check_hostname = False
        req = urllib.request.Request("https://127.0.0.1:32766/gpushare-scheduler/filter", method="POST",
                                     data=b"{}", headers={"Content-Type": "application/json"})
        with self.assertRaises(urllib.error.HTTPError) as cm:
            urllib.request.urlopen(req, context=ctx, timeout=10)
        self.assertEqual(cm.exception.code, 403)
        # the NetworkPolicy: stored as written; the bridge plugin alone lets
        # a pod it does not allow connect
        self.assertEqual(cp.admin.get("networkpolicies", NS, "gpushare-extender")["spec"]["ingress"][0]["from"],
                         [{"ipBlock": {"cidr": f"{gw}/32"}}])
        target = pod_ip(leaders()[0])
        self.assertEqual(self.connect("default", "netpol-open", target), "connected\n")
        # kube-router's firewall enforces it: once both replicas have their
        # firewall chain, that pod is refused ...
        enforcer = knetpol.KubeRouter(cp, node).start()
        wait_for(lambda: all(enforcer.programmed(p["status"]["podIP"]) for p in ext_pods()), 120,
                 "kube-router's firewall on both extender replicas", 0.5)
        out = self.connect("default", "netpol-refused", target)
        self.assertRegex(out, r"^nc: can't connect to remote host \([0-9.]+\): Connection refused\nrefused\n$")
        # ... Prometheus as the policy names it is served (retried until
        # kube-router has its new address in the policy's ipset) ...
        kubectl("create", "namespace", "monitoring")
        try:
            self.assertEqual(self.connect("monitoring", "prometheus", target, until_connected=True,
                                          labels={"app.kubernetes.io/name": "prometheus"}), "connected\n")
        finally:
            kubectl("delete", "namespace", "monitoring", "--wait=false")
        # ... and kube-scheduler, on the node (kube-router accepts what the
        # pod's own node sends; the ipBlock is for control-plane nodes
        # elsewhere), still schedules through the extender
        self.run_gpu_pod("netpol-4", 4)

    def connect(self, ns, name, target, until_connected=False, labels=None):
        """The log of a busybox pod in ns that connects to target:32766:
        "connected", or nc's error and "refused". until_connected: it
        retries for up to 60 s (a condition, in the pod)."""
        once = f"nc -w 5 {target} 32766 -e true 2>&1"
        script = (f"for i in $(seq 60); do if {once}; then echo connected; exit 0; fi; sleep 1; done; echo refused"
                  if until_connected else f"if {once}; then echo connected; else echo refused; fi")
        cp.admin.create({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
                         "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                                  "containers": [{"name": "nc", "image": kimages.BUSYBOX,
                                                  "command": ["sh", "-c", script]}]}})
        try:
            kbase.wait_pod_phase(cp.admin, ns, name, "Succeeded", 180)
            return pod_log(ns, name)
        finally:
            cp.admin.delete("pods", ns, name)

    def test_7_kube_proxy_and_kube_router_stop_without_a_trace(self):
        """The machine's network namespace is shared: after stop() no rule,
        chain or ipset of kube-router is left, its lock is free; no rule of
        kube-proxy is left (its chains and the Services' rules, iptables
        and ip6tables; the kubelets' own chains stay), route_localnet is
        what it was, the lock is free."""
        # kube-router first (test_6 started it): its jumps, chains and ipsets
        # gone, its lock free
        self.assertIsNotNone(enforcer, "test_6 starts kube-router")
        left = knetpol.leftovers()
        self.assertTrue(any("-A FORWARD" in r and "KUBE-ROUTER-FORWARD" in r for r in left), left)
        self.assertTrue(any(r.startswith("ipset: KUBE-SRC-") for r in left), left)
        enforcer.stop()
        self.assertEqual(knetpol.leftovers(), [])
        with open(knetpol.LOCK, "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(f, fcntl.LOCK_UN)
        with open(f"/proc/sys/{kproxy.ROUTE_LOCALNET}") as f:
            self.assertEqual(f.read().strip(), "1")  # localhost NodePorts on
        saved = proxy.saved
        self.assertIn("-A KUBE-SERVICES", proxy.rules())
        proxy.stop()
        for cmd in ("iptables", "ip6tables"):
            for table in ("nat", "filter", "mangle"):
                out = subprocess.run([cmd, "-t", table, "-S"], capture_output=True, text=True).stdout
                left = [r for r in out.splitlines() if "KUBE-" in r and not any(
                    c in r for c in KUBELET_CHAINS)]
                self.assertEqual(left, [], f"{cmd} -t {table}")
        with open(f"/proc/sys/{kproxy.ROUTE_LOCALNET}") as f:
            self.assertEqual(f.read().strip(), saved)
        with open(kproxy.LOCK, "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if still held
            fcntl.flock(f, fcntl.LOCK_UN)


if __name__ == "__main__":
    unittest.main()
