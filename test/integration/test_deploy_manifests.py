"""deploy/: every manifest parses, and the pieces agree with each other and
with the code (names, ports, routes, flags, resource names, RBAC verbs).

The RBAC check does not trust a hand-written list alone: CALLS below maps
every apiserver request of src/k8s/*.c to an RBAC (resource, verb), and the
tests check both directions -- the code makes exactly those requests (HTTP
methods and path fragments per file), and rbac.yaml grants exactly what they
need (coverage and least privilege).

One file because the checks share the facts read from the code and the
manifests (the helpers at the top). Standard library plus PyYAML (Debian's
python3-yaml). Checks that need the
built binaries ($GS_BUILD_DIR), kubectl (kustomize), openssl, readelf or
dpkg skip when those are missing.
"""
import glob
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

try:
    import yaml
except ImportError:  # pyenv or venv pythons may lack Debian's python3-yaml
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != "/usr/bin/python3":
        if sys.argv and sys.argv[0].endswith(".py"):
            argv = ["/usr/bin/python3"] + sys.argv
        else:  # python3 -m unittest [-v] test_deploy_manifests
            argv = ["/usr/bin/python3", "-m", "unittest"] + sys.argv[1:]
        os.execv("/usr/bin/python3", argv)
    raise

import gsutil

SRC = gsutil.SOURCE
DEPLOY = os.path.join(SRC, "deploy")
BUILD = gsutil.BUILD
BINARIES = {
    "gpushare-extender": os.path.join(BUILD, "src", "gpushare-extender"),
    "gpushare-inspect": os.path.join(BUILD, "tools", "inspect", "gpushare-inspect"),
    "gpushare-topo": os.path.join(BUILD, "tools", "topo", "gpushare-topo"),
}
ANY = "*any namespace*"  # a call that may name any namespace, or a cluster-scoped one


def read(*parts):
    with open(os.path.join(SRC, *parts), encoding="utf-8") as f:
        return f.read()


def load_all(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def load_one(*parts):
    docs = load_all(os.path.join(DEPLOY, *parts))
    assert len(docs) == 1, parts
    return docs[0]


def c_block(text, start):
    """The text of the C initializer { ... } that follows `start`."""
    i = text.index(start)
    i = text.index("{", i)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:j]
    raise ValueError(start)


# ---- facts read from the code ------------------------------------------------

def flag_defaults():
    """gs_config_defaults() in src/config/flags.c: field -> default text."""
    body = c_block(read("src", "config", "flags.c"), "void gs_config_defaults(")
    return dict(re.findall(r'snprintf\(cfg->(\w+),\s*sizeof cfg->\w+,\s*"([^"]*)"\)', body))


def flag_names():
    """The opts[] table of src/config/flags.c: flag name -> kind."""
    table = c_block(read("src", "config", "flags.c"), "static const struct opt opts[]")
    return dict(re.findall(r'\{"([a-z-]+)",\s*O_\w+,\s*O_(VALUE|BOOL|ACTION)', table))


def policy_keys():
    """src/config/policy.c: the §6 keys (ConfigMap data); their defaults
    (gs_policy_init, src/core/place.c) as a ConfigMap would spell them."""
    text = read("src", "config", "policy.c")
    keys = [k for k, _ in re.findall(r'\{"(\w+)",\s*(K_\w+),\s*"[^"]*"\}', c_block(text, "} keys[] ="))]
    body = c_block(read("src", "core", "place.c"), "void gs_policy_init(")
    fields = dict(re.findall(r"\.(\w+)\s*=\s*([\w]+),", body))
    spell = {"GS_UNIT_GIB": "1GiB", "GS_UNIT_128MIB": "128MiB", "GS_PLACE_BINPACK": "binpack",
             "GS_PLACE_SPREAD": "spread", "true": "true", "false": "false"}
    field_of = {"gpuMemoryUnit": "unit_mib", "nodePolicy": "node_policy",
                "cgpuMaxPodsPerGPU": "cgpu_max_pods", "gangTimeoutSeconds": "gang_timeout_s",
                "fragmentationAware": "frag_aware", "fragScoreNormalize": "frag_normalize"}
    defaults = {}
    for key in keys:
        raw = fields[field_of[key]]
        defaults[key] = spell.get(raw, raw)
    return defaults


def routes():
    """src/server/extender.c: (prefix, POST routes, GET routes)."""
    text = read("src", "server", "extender.c")
    prefix = re.search(r'#define PREFIX "([^"]+)"', text).group(1)

    table = c_block(text, "static const struct route routes[]")
    post, get = [], []
    for method, pre, path in re.findall(r'\{"(POST|GET)",\s*(PREFIX\s+)?"([^"]*)"', table):
        (post if method == "POST" else get).append((prefix if pre else "") + path)
    return prefix, post, get


def resource_names():
    return dict(re.findall(r'#define (GS_RES_\w+) "([^"]+)"', read("src", "api", "api.h")))


def bind_budget_ms():
    m = re.search(r"#define GS_KUBE_BIND_BUDGET_MS (\d+)", read("src", "k8s", "kube_int.h"))
    return int(m.group(1))


def project_version():
    return re.search(r"project\(gpushare VERSION ([\d.]+)", read("CMakeLists.txt")).group(1)


def go_duration_s(text):
    """A Go duration string ("10s", "1m30s", "500ms") in seconds."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a Go duration: {text!r}")
    return sum(float(n) * units[u] for n, u in parts)


# ---- the apiserver calls of src/k8s/*.c and their RBAC -------------------------

def calls():
    """Every request the live backend makes, as RBAC sees it:
    (file, method, path literals the file builds it from, group, resource,
    verb, namespace (ANY or one), resource name (None: any)).
    Namespaces and names come from the flags' defaults, which the Deployment
    uses (checked in DeploymentTest)."""
    d = flag_defaults()
    cm_ns, cm, lease_ns, lease = (d["configmap_ns"], d["configmap_name"], d["lease_ns"],
                                  d["lease_name"])
    ns_pfx, apis_lease = "/api/v1/namespaces/", "/apis/coordination.k8s.io/v1/namespaces/"

    def informer(paths, group, resource, ns=ANY):
        """An informer's two requests: a paged list, then watch=1 (kube_informer.c)."""
        return [("kube_informer.c", "GET", paths, group, resource, verb, ns, None)
                for verb in ("list", "watch")]

    return [
        *informer(("/api/v1/nodes",), "", "nodes"),
        *informer(("/api/v1/pods",), "", "pods"),
        # DRA coexistence (docs/dra.md): ResourceSlices and ResourceClaims
        *informer(("/apis/resource.k8s.io/v1/resourceslices",), "resource.k8s.io", "resourceslices"),
        *informer(("/apis/resource.k8s.io/v1/resourceclaims",), "resource.k8s.io", "resourceclaims"),
        # PodDisruptionBudgets, for preemption
        *informer(("/apis/policy/v1/poddisruptionbudgets",), "policy", "poddisruptionbudgets"),
        # the gpushare ConfigMap (fieldSelector metadata.name) ...
        *informer((ns_pfx, "/configmaps"), "", "configmaps", cm_ns),
        # ... and unhealthy-gpu-* in kube-system (a name prefix: RBAC cannot narrow it)
        *informer((ns_pfx, "/configmaps"), "", "configmaps", "kube-system"),
        # start-up read of the ConfigMap (kube_configmap.c)
        ("kube_configmap.c", "GET", (ns_pfx, "/configmaps/"), "", "configmaps", "get", cm_ns, cm),
        # bind: the Binding, and a re-read of the pod after a 409 (kube_cluster.c)
        ("kube_cluster.c", "POST", (ns_pfx, "/pods/", "/binding"), "", "pods/binding", "create", ANY, None),
        ("kube_cluster.c", "GET", (ns_pfx, "/pods/"), "", "pods", "get", ANY, None),
        # Warning events in the pod's namespace (kube_cluster.c)
        ("kube_cluster.c", "POST", (ns_pfx, "/events"), "", "events", "create", ANY, None),
        # leader election (kube_lease.c): GET and PUT the Lease, POST the collection
        ("kube_lease.c", "GET", (apis_lease, "/leases"), "coordination.k8s.io", "leases", "get", lease_ns, lease),
        ("kube_lease.c", "POST", (apis_lease, "/leases"), "coordination.k8s.io", "leases", "create", lease_ns, None),
        ("kube_lease.c", "PUT", (apis_lease, "/leases"), "coordination.k8s.io", "leases", "update", lease_ns, lease),
        # the leader label on the replica's own Pod (the Deployment's
        # namespace, the Lease's), and the list of Pods still labelled
        ("kube_lease.c", "PATCH", (ns_pfx, "/pods"), "", "pods", "patch", lease_ns, None),
        ("kube_lease.c", "GET", (ns_pfx, "/pods"), "", "pods", "list", lease_ns, None),
    ]


def code_requests():
    """Per src/k8s/*.c file: (HTTP methods it sends, apiserver path literals)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(SRC, "src", "k8s", "*.c"))):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        methods = set(re.findall(r'\.method\s*=\s*"([A-Z]+)"', text))
        methods |= set(re.findall(r'send_lease\([^,]+,\s*"([A-Z]+)"', text))
        literals = set()
        for lit in re.findall(r'"(/[^"\s]*)"', text):
            if re.match(r"^/apis?/", lit) or re.fullmatch(r"/[a-z]+/?", lit):
                literals.add(lit)
        out[os.path.basename(path)] = (methods, literals)
    return out


def rbac_grants():
    """rbac.yaml → the ServiceAccount's grants:
    (scope (ANY or a namespace), group, resource, verb, resourceNames or None)."""
    docs = load_all(os.path.join(DEPLOY, "rbac.yaml"))
    sa = [d for d in docs if d["kind"] == "ServiceAccount"]
    assert len(sa) == 1
    sa_ns, sa_name = sa[0]["metadata"]["namespace"], sa[0]["metadata"]["name"]
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d
             for d in docs if d["kind"] in ("Role", "ClusterRole")}
    grants = []
    for b in (d for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        if not any(s.get("kind") == "ServiceAccount" and s.get("name") == sa_name and
                   s.get("namespace") == sa_ns for s in b["subjects"]):
            continue
        ref = b["roleRef"]
        role_ns = b["metadata"]["namespace"] if ref["kind"] == "Role" else None
        role = roles[(ref["kind"], role_ns, ref["name"])]
        scope = ANY if b["kind"] == "ClusterRoleBinding" else b["metadata"]["namespace"]
        for rule in role["rules"]:
            names = tuple(rule["resourceNames"]) if rule.get("resourceNames") else None
            for g in rule["apiGroups"]:
                for r in rule["resources"]:
                    for v in rule["verbs"]:
                        grants.append((scope, g, r, v, names))
    return grants


def deployment():
    return load_one("deployment.yaml")


def container():
    cs = deployment()["spec"]["template"]["spec"]["containers"]
    assert len(cs) == 1
    return cs[0]


def parse_args(args):
    """Container args → [(flag, value or None)] in order."""
    out, i = [], 0
    kinds = flag_names()
    while i < len(args):
        a = args[i]
        assert a.startswith("--"), f"unexpected argument {a!r}"
        name, eq, value = a[2:].partition("=")
        if not eq and kinds.get(name) == "VALUE":
            i += 1
            value = args[i]
        out.append((name, value if (eq or kinds.get(name) == "VALUE") else None))
        i += 1
    return out


def arg(name):
    values = [v for n, v in parse_args(container()["args"]) if n == name]
    return values[-1] if values else None


def container_port():
    ports = container()["ports"]
    assert len(ports) == 1
    return ports[0]


def resolve_port(port):
    """A probe's or Service's port (number or name) → the container port number."""
    if isinstance(port, int):
        return port
    for p in container()["ports"]:
        if p.get("name") == port:
            return p["containerPort"]
    raise AssertionError(f"no container port named {port!r}")


def scheduler_config(name="kube-scheduler-config.yaml"):
    return load_one("scheduler", name)


def the_extender(cfg):
    ext = cfg["extenders"]
    assert len(ext) == 1
    return ext[0]


def dockerfile_stages():
    """deploy/Dockerfile → [{"from", "as", "lines"}] with continuations joined."""
    text = read("deploy", "Dockerfile")
    logical, cur = [], ""
    for line in text.splitlines():
        if line.lstrip().startswith("#") and not cur:
            continue
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        cur += line
        if cur.strip():
            logical.append(cur.strip())
        cur = ""
    stages = []
    for line in logical:
        m = re.match(r"FROM\s+(\S+)(?:\s+AS\s+(\S+))?$", line, re.I)
        if m:
            stages.append({"from": m.group(1), "as": m.group(2), "lines": []})
        elif stages:
            stages[-1]["lines"].append(line)
    return stages


def apt_packages(stage):
    pkgs = set()
    for line in stage["lines"]:
        for m in re.finditer(r"apt-get install((?:\s+[^&;|]+)+)", line):
            pkgs |= {w for w in m.group(1).split() if not w.startswith("-")}
    return pkgs


# ---- tests ---------------------------------------------------------------------

def kustomize(test, directory):
    """`kubectl kustomize directory`'s documents (test skipped without
    kubectl; its failure fails test)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        test.skipTest("kubectl (kustomize) not installed")
    r = subprocess.run([kubectl, "kustomize", directory], capture_output=True, text=True,
                       timeout=120)
    test.assertEqual(r.returncode, 0, r.stderr)
    return [d for d in yaml.safe_load_all(r.stdout) if d]


class ManifestsParseTest(unittest.TestCase):
    CONFIG_KINDS = {"Kustomization", "KubeSchedulerConfiguration"}

    def yaml_files(self):
        files = []
        for ext in ("yaml", "yml"):
            files += glob.glob(os.path.join(DEPLOY, "**", f"*.{ext}"), recursive=True)
        return sorted(files)

    def test_every_yaml_parses_and_names_its_objects(self):
        files = self.yaml_files()
        self.assertGreaterEqual(len(files), 10)
        for path in files:
            rel = os.path.relpath(path, SRC)
            docs = load_all(path)
            self.assertTrue(docs, f"{rel}: no document")
            if rel == os.path.join("deploy", "monitoring", "gpushare-rules.yaml"):
                # a Prometheus rule file, not an object: test_monitoring checks it
                self.assertEqual(list(docs[0]), ["groups"])
                continue
            for doc in docs:
                with self.subTest(file=rel, kind=doc.get("kind")):
                    self.assertIsInstance(doc, dict)
                    self.assertTrue(doc.get("apiVersion"), f"{rel}: apiVersion")
                    self.assertTrue(doc.get("kind"), f"{rel}: kind")
                    if doc["kind"] in self.CONFIG_KINDS:
                        continue
                    items = doc["items"] if doc["kind"] == "List" else [doc]
                    for item in items:
                        self.assertTrue(item.get("apiVersion") and item.get("kind"), rel)
                        self.assertTrue(item.get("metadata", {}).get("name"),
                                        f"{rel}: a {item.get('kind')} without metadata.name")

    def test_names_are_unique(self):
        seen = set()
        for f in ("rbac.yaml", "configmap.yaml", "deployment.yaml", "service.yaml"):
            for d in load_all(os.path.join(DEPLOY, f)):
                key = (d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])
                self.assertNotIn(key, seen)
                seen.add(key)


class KustomizationTest(unittest.TestCase):
    def test_resources(self):
        k = load_one("kustomization.yaml")
        self.assertEqual(k["kind"], "Kustomization")
        self.assertEqual(sorted(k["resources"]),
                         ["configmap.yaml", "deployment.yaml", "node", "pdb.yaml", "rbac.yaml",
                          "service.yaml"])
        for r in k["resources"]:
            path = os.path.join(DEPLOY, r)
            self.assertTrue(os.path.isfile(path) or
                            os.path.isfile(os.path.join(path, "kustomization.yaml")), r)

    def test_image_entry_names_the_deployment_image(self):
        k = load_one("kustomization.yaml")
        image = container()["image"]
        name, _, tag = image.rpartition(":")
        self.assertEqual(len(k["images"]), 1)
        self.assertEqual(k["images"][0]["name"], name)
        self.assertEqual(f'{k["images"][0]["newName"]}:{k["images"][0]["newTag"]}', image)

    def test_kustomize_builds_exactly_the_listed_files(self):
        built = kustomize(self, DEPLOY)
        expected = []
        for f in load_one("kustomization.yaml")["resources"]:
            path = os.path.join(DEPLOY, f)
            if os.path.isdir(path):  # a kustomization of its own (node/)
                for g in load_all(os.path.join(path, "kustomization.yaml"))[0]["resources"]:
                    expected += load_all(os.path.join(path, g))
            else:
                expected += load_all(path)
        key = lambda d: (d["kind"], d["metadata"].get("namespace") or "", d["metadata"]["name"])
        self.assertEqual(sorted(map(key, built)), sorted(map(key, expected)))

    def test_tls_patch_applies(self):
        """The commented patches: lines of kustomization.yaml, uncommented."""
        text = read("deploy", "kustomization.yaml")
        self.assertIn("# patches:\n# - path: tls/deployment-tls.yaml\n", text)
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "deploy")
            shutil.copytree(DEPLOY, copy)
            with open(os.path.join(copy, "kustomization.yaml"), "w") as f:
                f.write(text.replace("# patches:\n# - path: tls/", "patches:\n- path: tls/"))
            built = kustomize(self, copy)
        dep = [d for d in built if d["kind"] == "Deployment"][0]
        c = dep["spec"]["template"]["spec"]["containers"][0]
        args = c["args"]
        self.assertEqual(args[:len(container()["args"])], container()["args"],
                         "the TLS args must keep every plain arg")
        self.assertIn("--tls-cert-file", args)
        self.assertIn("--tls-key-file", args)
        probes = [p for p in ("startupProbe", "livenessProbe", "readinessProbe") if p in container()]
        self.assertIn("readinessProbe", probes)
        for probe in probes:
            self.assertEqual(c[probe]["httpGet"]["scheme"], "HTTPS", probe)
            self.assertEqual(c[probe]["httpGet"]["path"], container()[probe]["httpGet"]["path"])
        mount = c["volumeMounts"][0]["mountPath"]
        cert = args[args.index("--tls-cert-file") + 1]
        self.assertTrue(cert.startswith(mount + "/"), cert)
        vol = dep["spec"]["template"]["spec"]["volumes"][0]
        self.assertEqual(vol["secret"]["secretName"], "gpushare-extender-tls")


class DeploymentTest(unittest.TestCase):
    def test_service_account(self):
        sa = [d for d in load_all(os.path.join(DEPLOY, "rbac.yaml")) if d["kind"] == "ServiceAccount"][0]
        dep = deployment()
        self.assertEqual(dep["metadata"]["namespace"], sa["metadata"]["namespace"])
        self.assertEqual(dep["spec"]["template"]["spec"]["serviceAccountName"], sa["metadata"]["name"])

    def test_selector_matches_template(self):
        dep = deployment()
        labels = dep["spec"]["template"]["metadata"]["labels"]
        for k, v in dep["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(labels.get(k), v)

    def test_replicas_and_leader_election(self):
        dep = deployment()
        self.assertEqual(dep["spec"]["replicas"], 2)
        names = [n for n, _ in parse_args(container()["args"])]
        self.assertIn("leader-elect", names)

    def test_rollout_keeps_a_ready_replica_and_completes(self):
        """Issue 16 item 2: every replica that has listed the cluster is Ready
        (/readyz/replica, leader or standby), so a rolling update surges one
        new pod, waits for it to be Ready and only then stops an old one; it
        never goes below the replicas asked for, and `rollout status`
        completes. A PodDisruptionBudget keeps one through drains."""
        s = deployment()["spec"]["strategy"]
        self.assertEqual(s["type"], "RollingUpdate")
        self.assertEqual(str(s["rollingUpdate"]["maxUnavailable"]), "0")
        self.assertGreaterEqual(int(s["rollingUpdate"]["maxSurge"]), 1)
        self.assertEqual(container()["readinessProbe"]["httpGet"]["path"], "/readyz/replica")
        pdb = load_one("pdb.yaml")
        self.assertEqual(pdb["spec"]["minAvailable"], 1)
        self.assertEqual(pdb["spec"]["selector"]["matchLabels"],
                         deployment()["spec"]["selector"]["matchLabels"])
        self.assertLess(pdb["spec"]["minAvailable"], deployment()["spec"]["replicas"])
        env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container()["env"]}
        self.assertEqual(env, {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"})

    def test_flags_are_the_binarys(self):
        kinds = flag_names()
        parsed = parse_args(container()["args"])
        for name, value in parsed:
            self.assertIn(name, kinds, f"--{name} is not a flag of gpushare-extender")
            self.assertNotIn(name, ("demo", "help", "version"), name)

    def test_flags_in_help(self):
        exe = BINARIES["gpushare-extender"]
        if not os.access(exe, os.X_OK):
            self.skipTest(f"{exe} not built")
        r = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        for args in (container()["args"], tls_args()):
            for name, _ in parse_args(args):
                self.assertRegex(r.stdout, rf"(?m)^\s+--{re.escape(name)}\b", name)

    def test_configmap_and_lease_are_the_defaults(self):
        d = flag_defaults()
        self.assertEqual(arg("configmap"), f'{d["configmap_ns"]}/{d["configmap_name"]}')
        self.assertEqual(arg("lease"), f'{d["lease_ns"]}/{d["lease_name"]}')
        self.assertEqual(deployment()["metadata"]["namespace"], d["lease_ns"])

    def test_listen_port_is_the_container_port(self):
        listen = arg("listen")
        port = int(listen.rsplit(":", 1)[1])
        self.assertEqual(port, container_port()["containerPort"])
        self.assertEqual(listen, flag_defaults()["listen"], "the documented default address")

    def test_probes_are_routes(self):
        _, _, get = routes()
        c = container()
        self.assertEqual(c["livenessProbe"]["httpGet"]["path"], "/healthz")
        self.assertEqual(c["readinessProbe"]["httpGet"]["path"], "/readyz/replica")
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            if probe not in c:
                continue
            g = c[probe]["httpGet"]
            self.assertIn(g["path"], get, probe)
            self.assertEqual(resolve_port(g["port"]), container_port()["containerPort"], probe)

    def test_image(self):
        image = container()["image"]
        self.assertEqual(image.rpartition(":")[2], project_version(),
                         "the image tag is the project version")

    def test_security_context(self):
        spec = deployment()["spec"]["template"]["spec"]
        psc, sc = spec["securityContext"], container()["securityContext"]
        self.assertTrue(psc["runAsNonRoot"])
        self.assertGreater(psc["runAsUser"], 0)
        self.assertFalse(sc["allowPrivilegeEscalation"])
        self.assertTrue(sc["readOnlyRootFilesystem"])
        self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
        self.assertNotIn("add", sc["capabilities"])
        self.assertFalse(sc.get("privileged", False))
        self.assertFalse(spec.get("hostNetwork", False))

    def test_scheduling(self):
        spec = deployment()["spec"]["template"]["spec"]
        self.assertEqual(spec["priorityClassName"], "system-cluster-critical")
        keys = {t["key"] for t in spec["tolerations"]}
        self.assertIn("node-role.kubernetes.io/control-plane", keys)
        anti = spec["affinity"]["podAntiAffinity"]
        terms = (anti.get("requiredDuringSchedulingIgnoredDuringExecution", []) +
                 [t["podAffinityTerm"] for t in
                  anti.get("preferredDuringSchedulingIgnoredDuringExecution", [])])
        labels = deployment()["spec"]["template"]["metadata"]["labels"]
        self.assertTrue(any(t["topologyKey"] == "kubernetes.io/hostname" and
                            all(labels.get(k) == v for k, v in
                                t["labelSelector"]["matchLabels"].items()) for t in terms))

    def test_resources(self):
        res = container()["resources"]
        self.assertIn("cpu", res["requests"])
        self.assertIn("memory", res["requests"])
        self.assertIn("memory", res["limits"])

    def test_the_deployment_args_start_the_binary(self):
        """The real binary takes the Deployment's args (values included): on
        the demo cluster instead of an apiserver, on a free loopback port."""
        exe = BINARIES["gpushare-extender"]
        if not os.access(exe, os.X_OK):
            self.skipTest(f"{exe} not built")
        port = gsutil.free_port()
        args = container()["args"] + ["--demo", os.path.join(DEPLOY, "demo", "cluster.yaml"),
                                      "--listen", f"127.0.0.1:{port}"]
        run_extender(self, args, f"http://127.0.0.1:{port}")

    def test_the_tls_args_start_the_binary(self):
        exe = BINARIES["gpushare-extender"]
        openssl = shutil.which("openssl")
        if not os.access(exe, os.X_OK) or openssl is None:
            self.skipTest("needs the built extender and openssl")
        with tempfile.TemporaryDirectory() as tmp:
            crt, key = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
            r = subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                                "-keyout", key, "-out", crt, "-days", "1",
                                "-subj", "/CN=gpushare-extender.kube-system.svc"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            args = tls_args()
            args[args.index("--tls-cert-file") + 1] = crt
            args[args.index("--tls-key-file") + 1] = key
            args[args.index("--tls-client-ca-file") + 1] = crt  # a CA file: any PEM works here
            port = gsutil.free_port()
            args += ["--demo", os.path.join(DEPLOY, "demo", "cluster.yaml"),
                     "--listen", f"127.0.0.1:{port}"]
            ctx = ssl.create_default_context(cafile=crt)
            ctx.check_hostname = False  # the probe's view: kubelet does not verify
            run_extender(self, args, f"https://127.0.0.1:{port}", ctx)

def run_extender(test, args, base, ctx=None):
    """Starts the built extender with args, expects /healthz and /readyz 200
    at base, then stops it with SIGTERM."""
    exe = BINARIES["gpushare-extender"]
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([exe] + args, stdout=log, stderr=log)
        try:
            status = {}
            deadline = time.time() + 20
            while time.time() < deadline and proc.poll() is None:
                try:
                    for path in ("/healthz", "/readyz"):
                        with urllib.request.urlopen(base + path, timeout=2, context=ctx) as r:
                            status[path] = r.status
                    break
                except (urllib.error.URLError, ConnectionError, OSError):
                    time.sleep(0.1)
            log.seek(0)
            test.assertIsNone(proc.poll(), log.read().decode(errors="replace"))
            test.assertEqual(status, {"/healthz": 200, "/readyz": 200})
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def tls_args():
    patch = load_one("tls", "deployment-tls.yaml")
    return list(patch["spec"]["template"]["spec"]["containers"][0]["args"])


class ServiceTest(unittest.TestCase):
    def service(self):
        return load_one("service.yaml")

    def test_selector_matches_pods(self):
        svc = self.service()
        labels = deployment()["spec"]["template"]["metadata"]["labels"]
        self.assertTrue(svc["spec"]["selector"])
        sel = dict(svc["spec"]["selector"])
        # the leader label, set by the code on the leader's own Pod only
        self.assertEqual(sel.pop("gpushare.io/leader"), "true")
        self.assertIn('#define LEADER_LABEL "gpushare.io/leader"', read("src", "k8s", "kube_lease.c"))
        for k, v in sel.items():
            self.assertEqual(labels.get(k), v, k)
        self.assertEqual(svc["metadata"]["namespace"], deployment()["metadata"]["namespace"])

    def test_ports(self):
        svc = self.service()
        self.assertEqual(svc["spec"]["type"], "NodePort")
        self.assertNotEqual(svc["spec"].get("externalTrafficPolicy"), "Local",
                            "the leader may run on another node than kube-scheduler")
        (p,) = svc["spec"]["ports"]
        self.assertEqual(resolve_port(p["targetPort"]), container_port()["containerPort"])
        self.assertEqual(p["port"], container_port()["containerPort"])
        self.assertTrue(30000 <= p["nodePort"] <= 32767, "inside the default NodePort range")


class SchedulerConfigTest(unittest.TestCase):
    # kubescheduler.config.k8s.io/v1 keys (strict decoding: anything else is
    # a start-up error of kube-scheduler). docs/kube-protocol.md §B for the extender;
    # k8s.io/kube-scheduler/config/v1 and component-base for the rest.
    TOP = {"apiVersion", "kind", "parallelism", "leaderElection", "clientConnection",
           "enableProfiling", "enableContentionProfiling", "percentageOfNodesToScore",
           "podInitialBackoffSeconds", "podMaxBackoffSeconds", "profiles", "extenders",
           "delayCacheUntilActive"}
    CLIENT = {"kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"}
    LEADER = {"leaderElect", "leaseDuration", "renewDeadline", "retryPeriod", "resourceLock",
              "resourceName", "resourceNamespace"}
    EXTENDER = {"urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb",
                "enableHTTPS", "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources",
                "ignorable"}
    TLS = {"insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData",
           "caData"}
    MANAGED = {"name", "ignoredByScheduler"}
    FILES = ("kube-scheduler-config.yaml", "kube-scheduler-config-tls.yaml")

    def test_only_known_keys(self):
        for name in self.FILES:
            cfg = scheduler_config(name)
            with self.subTest(file=name):
                self.assertEqual(cfg["apiVersion"], "kubescheduler.config.k8s.io/v1")
                self.assertEqual(cfg["kind"], "KubeSchedulerConfiguration")
                self.assertLessEqual(set(cfg), self.TOP)
                self.assertLessEqual(set(cfg.get("clientConnection", {})), self.CLIENT)
                self.assertLessEqual(set(cfg.get("leaderElection", {})), self.LEADER)
                ext = the_extender(cfg)
                self.assertLessEqual(set(ext), self.EXTENDER)
                self.assertLessEqual(set(ext.get("tlsConfig") or {}), self.TLS)
                for m in ext["managedResources"]:
                    self.assertLessEqual(set(m), self.MANAGED)

    def test_url_prefix_reaches_the_service(self):
        prefix, _, _ = routes()
        svc = load_one("service.yaml")
        for name, scheme in zip(self.FILES, ("http", "https")):
            m = re.fullmatch(r"(https?)://([^/:]+):(\d+)(/.*)", the_extender(scheduler_config(name))["urlPrefix"])
            self.assertTrue(m, name)
            self.assertEqual(m.group(1), scheme, name)
            self.assertEqual(m.group(2), "127.0.0.1", "kube-scheduler: hostNetwork, no cluster DNS")
            self.assertEqual(int(m.group(3)), svc["spec"]["ports"][0]["nodePort"])
            self.assertEqual(m.group(4).rstrip("/"), prefix)

    def test_verbs_are_routes(self):
        prefix, post, _ = routes()
        for name in self.FILES:
            ext = the_extender(scheduler_config(name))
            self.assertEqual((ext["filterVerb"], ext["prioritizeVerb"], ext["bindVerb"]),
                             ("filter", "prioritize", "bind"))
            for key in ("filterVerb", "prioritizeVerb", "bindVerb", "preemptVerb"):
                if ext.get(key):
                    self.assertIn(f"{prefix}/{ext[key]}", post, f"{name}: {key}")
            self.assertEqual(ext.get("preemptVerb"), "preempt", "GPU-aware preemption (issue 14)")
            if ext.get("prioritizeVerb"):
                self.assertIsInstance(ext["weight"], int)
                self.assertGreater(ext["weight"], 0)

    def test_managed_resources_are_the_codes(self):
        res = resource_names()
        for name in self.FILES:
            ext = the_extender(scheduler_config(name))
            self.assertEqual(sorted(m["name"] for m in ext["managedResources"]),
                             sorted([res["GS_RES_GPU_MEM"], res["GS_RES_GPU"]]))
            # The device plugin advertises both: keep kube-scheduler's node-total check.
            self.assertTrue(all(m["ignoredByScheduler"] is False for m in ext["managedResources"]))

    def test_settings(self):
        for name in self.FILES:
            cfg = scheduler_config(name)
            ext = the_extender(cfg)
            self.assertIs(ext["nodeCacheCapable"], True)
            self.assertIs(ext["ignorable"], False)
            self.assertIs(ext["enableHTTPS"], False)
            self.assertEqual(cfg["percentageOfNodesToScore"], 100)
            self.assertTrue(cfg["clientConnection"]["kubeconfig"])
            # kube-scheduler must wait for the whole bind budget, with room to spare.
            self.assertGreaterEqual(go_duration_s(ext["httpTimeout"]) * 1000, bind_budget_ms() + 1000)

    def test_tls_variant(self):
        tls = scheduler_config("kube-scheduler-config-tls.yaml")
        plain = scheduler_config("kube-scheduler-config.yaml")
        t = the_extender(tls)["tlsConfig"]
        self.assertTrue(t["caFile"])
        svc = load_one("service.yaml")
        self.assertEqual(t["serverName"],
                         f'{svc["metadata"]["name"]}.{svc["metadata"]["namespace"]}.svc')
        self.assertNotIn("insecure", t)
        # Everything else as in the plain file.
        a, b = dict(the_extender(tls)), dict(the_extender(plain))
        for d in (a, b):
            d.pop("urlPrefix")
            d.pop("tlsConfig", None)
        self.assertEqual(a, b)
        self.assertEqual({k: v for k, v in tls.items() if k != "extenders"},
                         {k: v for k, v in plain.items() if k != "extenders"})

    def test_packing_variant(self):
        # issue 32: the first entry filters and scores every pod (no
        # managedResources) and binds nothing; the second binds and preempts
        # GPU pods only, as the shipped entry; everything else as shipped
        packing = scheduler_config("kube-scheduler-config-packing.yaml")
        plain = scheduler_config("kube-scheduler-config.yaml")
        shipped = the_extender(plain)
        self.assertLessEqual(set(packing), self.TOP)
        score, bind = packing["extenders"]
        for ext in (score, bind):
            self.assertLessEqual(set(ext), self.EXTENDER)
            for key in ("urlPrefix", "enableHTTPS", "nodeCacheCapable", "httpTimeout", "ignorable"):
                self.assertEqual(ext[key], shipped[key], key)
        self.assertEqual((score["filterVerb"], score["prioritizeVerb"], score["weight"]),
                         (shipped["filterVerb"], shipped["prioritizeVerb"], shipped["weight"]))
        for key in ("bindVerb", "preemptVerb", "managedResources"):
            self.assertNotIn(key, score)
            self.assertEqual(bind[key], shipped[key], key)
        for key in ("filterVerb", "prioritizeVerb", "weight"):
            self.assertNotIn(key, bind)
        self.assertEqual({k: v for k, v in packing.items() if k != "extenders"},
                         {k: v for k, v in plain.items() if k != "extenders"})

    def test_go_duration(self):
        self.assertEqual(go_duration_s("10s"), 10)
        self.assertEqual(go_duration_s("1m30s"), 90)
        self.assertRaises(ValueError, go_duration_s, "10")


class ConfigMapTest(unittest.TestCase):
    def test_name_is_the_default(self):
        cm = load_one("configmap.yaml")
        d = flag_defaults()
        self.assertEqual((cm["metadata"]["namespace"], cm["metadata"]["name"]),
                         (d["configmap_ns"], d["configmap_name"]))

    def test_keys(self):
        cm = load_one("configmap.yaml")
        keys = policy_keys()
        self.assertEqual(cm["data"], {"gpuMemoryUnit": "1GiB"})
        self.assertLessEqual(set(cm["data"]), set(keys))
        for v in cm["data"].values():
            self.assertIsInstance(v, str, "ConfigMap data values are strings")

    def test_commented_keys_are_the_defaults(self):
        """The other §6 keys are there, commented out, at the code's defaults."""
        keys = policy_keys()
        commented = dict(re.findall(r'(?m)^\s*#\s*(\w+):\s*"?([\w.]+)"?\s*$', read("deploy", "configmap.yaml")))
        for key, default in keys.items():
            if key == "gpuMemoryUnit":
                continue
            self.assertEqual(commented.get(key), default, key)

    def test_values_are_accepted(self):
        """The data and the commented keys, uncommented, pass the binary's
        own validation (the same code reads a --config file's §6 keys)."""
        exe = BINARIES["gpushare-extender"]
        if not os.access(exe, os.X_OK):
            self.skipTest(f"{exe} not built")
        data = dict(load_one("configmap.yaml")["data"])
        data.update(re.findall(r'(?m)^\s*#\s*(\w+):\s*("?[\w.]+"?)\s*$', read("deploy", "configmap.yaml")))
        with tempfile.TemporaryDirectory() as tmp:
            conf = os.path.join(tmp, "config.yaml")
            with open(conf, "w") as f:
                f.write("".join(f"{k}: {v}\n" for k, v in data.items()))
            port = gsutil.free_port()
            run_extender(self, ["--config", conf, "--demo", os.path.join(DEPLOY, "demo", "cluster.yaml"),
                                "--listen", f"127.0.0.1:{port}"], f"http://127.0.0.1:{port}")
            data["cgpuMaxPodsPerGPU"] = '"0"'  # out of range: refused, naming the key
            with open(conf, "w") as f:
                f.write("".join(f"{k}: {v}\n" for k, v in data.items()))
            r = subprocess.run([exe, "--config", conf, "--demo",
                                os.path.join(DEPLOY, "demo", "cluster.yaml"), "--listen",
                                f"127.0.0.1:{gsutil.free_port()}"],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("cgpuMaxPodsPerGPU", r.stderr)


class RbacTest(unittest.TestCase):
    def test_calls_table_matches_the_code(self):
        """Each src/k8s/*.c file sends exactly the methods and builds its paths
        from exactly the literals CALLS says. A new request in the code fails
        here until it is mapped (and granted)."""
        code = code_requests()
        table = {}
        for f, method, lits, *_ in calls():
            m, l = table.setdefault(f, (set(), set()))
            m.add(method)
            l.update(lits)
        for f, (methods, literals) in code.items():
            want_m, want_l = table.get(f, (set(), set()))
            self.assertEqual(methods, want_m, f"{f}: HTTP methods")
            self.assertEqual(literals, want_l, f"{f}: apiserver path literals")
        self.assertLessEqual(set(table), set(code))
        informer = read("src", "k8s", "kube_informer.c")
        self.assertIn('gs__kube_query(&path, "watch", "1")', informer)
        self.assertIn('"kube-system"', informer)  # the unhealthy-gpu-* namespace

    def test_every_call_is_granted(self):
        grants = rbac_grants()
        for f, method, _, group, resource, verb, ns, name in calls():
            ok = any(g == group and r == resource and v == verb and
                     (scope == ANY or scope == ns) and (names is None or name in names)
                     for scope, g, r, v, names in grants)
            self.assertTrue(ok, f"{f} {method}: {group or 'core'} {resource} {verb} in {ns}"
                                f"{' name ' + name if name else ''} is not granted")

    def test_least_privilege(self):
        """Nothing is granted that no call needs, nor more widely than needed."""
        need = calls()
        for scope, g, r, v, names in rbac_grants():
            desc = f"{g or 'core'} {r} {v} in {scope}{' names ' + str(names) if names else ''}"
            self.assertNotIn("*", (g, r, v), desc)
            users = [c for c in need if (c[3], c[4], c[5]) == (g, r, v)]
            self.assertTrue(users, f"{desc}: no call in src/k8s needs it")
            if scope == ANY:
                self.assertTrue(any(c[6] == ANY for c in users),
                                f"{desc}: cluster-wide, but every call is in one namespace")
            else:
                self.assertTrue(any(c[6] in (scope, ANY) for c in users),
                                f"{desc}: no call in that namespace")
            if names is not None:
                self.assertTrue(any(c[7] in names for c in users), desc)
                self.assertNotEqual(v, "create", "resourceNames cannot restrict create")
            elif v not in ("create", "list", "watch") and all(c[7] for c in users):
                # Every call names one object: restrict by name, unless a list
                # of the same scope reads them all anyway.
                listed = any(s == scope and (gg, rr, vv) == (g, r, "list") for s, gg, rr, vv, _
                             in rbac_grants())
                self.assertTrue(listed, f"{desc}: restrict it with resourceNames")

    def test_lease_is_limited_to_its_name(self):
        lease = flag_defaults()["lease_name"]
        for scope, g, r, v, names in rbac_grants():
            if r == "leases" and v in ("get", "update"):
                self.assertEqual(names, (lease,))

    def test_no_pod_writes(self):
        """Pods are read everywhere; the only write is the leader label's
        patch, in the extender's own namespace."""
        for scope, g, r, v, names in rbac_grants():
            if r == "pods" and v == "patch":
                self.assertEqual(scope, flag_defaults()["lease_ns"])
            elif r == "pods":
                self.assertIn(v, ("get", "list", "watch"))

    def test_bindings_reference_existing_roles_and_the_sa(self):
        docs = load_all(os.path.join(DEPLOY, "rbac.yaml"))
        roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])
                 for d in docs if d["kind"] in ("Role", "ClusterRole")}
        sa = {(d["metadata"]["namespace"], d["metadata"]["name"])
              for d in docs if d["kind"] == "ServiceAccount"}
        bindings = [d for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")]
        self.assertEqual(len(bindings), len(roles))
        for b in bindings:
            ref = b["roleRef"]
            self.assertEqual(ref["apiGroup"], "rbac.authorization.k8s.io")
            ns = b["metadata"]["namespace"] if ref["kind"] == "Role" else None
            self.assertIn((ref["kind"], ns, ref["name"]), roles)
            for s in b["subjects"]:
                self.assertEqual(s["kind"], "ServiceAccount")
                self.assertIn((s["namespace"], s["name"]), sa)


def rbac_attributes(method, path, params):
    """A kube-apiserver request → RBAC attributes, as the apiserver derives
    them: (group, resource[/subresource], verb, namespace or None, name or None)."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        raise AssertionError(f"not an API path: {path}")
    ns = None
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
        ns, rest = rest[1], rest[2:]
    resource, name = rest[0], rest[1] if len(rest) > 1 else None
    if len(rest) > 2:
        resource += "/" + rest[2]
    w = (params or {}).get("watch", "")
    if isinstance(w, list):
        w = w[0] if w else ""
    watch = str(w).lower() in ("1", "true")
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method)
    if method == "GET":
        verb = "get" if name else ("watch" if watch else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    return group, resource, verb, ns, name


class RbacTrafficTest(unittest.TestCase):
    """The real extender, with the Deployment's args, against the test
    kube-apiserver: every request it really sends (start-up, election, lists
    and watches, binds, a refused Binding, a 409 re-read, the Lease release)
    is allowed by rbac.yaml and is one of CALLS."""

    def test_observed_requests_are_granted(self):
        if not os.access(BINARIES["gpushare-extender"], os.X_OK):
            self.skipTest("gpushare-extender not built")
        from kube_apiserver import FakeApiServer
        unhealthy = {"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "unhealthy-gpu-gpu-a", "namespace": "kube-system"},
                     "data": {"gpus": "3"}}
        items = [gsutil.configmap("1GiB"), unhealthy,
                 gsutil.node("gpu-a", "share", gpus=4, units=64)]
        items += [gsutil.pod(f"p{i}", units=2, ns="team-a") for i in range(3)]
        # the replica's own Pod (the downward API names it), and a former
        # leader's that still carries the label
        me = gsutil.pod("gpushare-extender-abc", ns="kube-system")
        old = gsutil.pod("gpushare-extender-old", ns="kube-system")
        old["metadata"]["labels"] = {"gpushare.io/leader": "true"}
        items += [me, old]
        with tempfile.TemporaryDirectory() as tmp, \
                FakeApiServer(state=items, token="sa-token") as srv:
            kcfg = os.path.join(tmp, "kubeconfig")
            with open(kcfg, "w") as f:
                f.write(f"""apiVersion: v1
kind: Config
current-context: c
clusters: [{{name: k, cluster: {{server: "{srv.url}"}}}}]
users: [{{name: sa, user: {{token: sa-token}}}}]
contexts: [{{name: c, context: {{cluster: k, user: sa}}}}]
""")
            port = gsutil.free_port()
            base = f"http://127.0.0.1:{port}"
            args = container()["args"] + ["--kubeconfig", kcfg, "--listen", f"127.0.0.1:{port}"]
            log = open(os.path.join(tmp, "ext.log"), "w+")
            env = dict(os.environ, POD_NAME="gpushare-extender-abc", POD_NAMESPACE="kube-system")
            proc = subprocess.Popen([BINARIES["gpushare-extender"]] + args, stdout=log,
                                    stderr=subprocess.STDOUT, env=env)
            leader = lambda name: (srv.get("pods", "kube-system", name)["metadata"].get("labels")
                                   or {}).get("gpushare.io/leader")
            try:
                self.wait_ready(base, proc, log)
                gsutil.wait_until(lambda: leader("gpushare-extender-abc") == "true"
                                  and leader("gpushare-extender-old") is None, 10,
                                  "the leader label on this Pod only")

                def bind(name):
                    p = srv.get("pods", "team-a", name)
                    body = {"PodName": name, "PodNamespace": "team-a",
                            "PodUID": p["metadata"]["uid"], "Node": "gpu-a"}
                    req = urllib.request.Request(base + "/gpushare-scheduler/bind",
                                                 data=json.dumps(body).encode(), method="POST",
                                                 headers={"Content-Type": "application/json"})
                    with urllib.request.urlopen(req, timeout=10) as r:
                        return json.loads(r.read())["Error"]

                self.assertEqual(bind("p0"), "")
                srv.inject_fault(method="POST", path=r"/binding$", status=403, count=1)
                self.assertNotEqual(bind("p1"), "")  # refused → a FailedBinding event
                srv.inject_fault(method="POST", path=r"/binding$", status=409, count=1)
                self.assertNotEqual(bind("p2"), "")  # 409 → the pod is read again
                deadline = time.time() + 10
                while len(srv.events()) < 2 and time.time() < deadline:
                    time.sleep(0.05)
            finally:
                proc.send_signal(signal.SIGTERM)  # the leader releases the Lease
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                log.close()
            self.assertIsNone(leader("gpushare-extender-abc"))  # stepped down: label removed
            requests = srv.requests()
        grants = rbac_grants()
        table = {}
        for c in calls():
            table.setdefault((c[3], c[4], c[5]), []).append(c)
        seen = set()
        for r in requests:
            group, resource, verb, ns, name = rbac_attributes(r["method"], r["path"], r["params"])
            desc = f'{r["method"]} {r["path"]}?{r["query"]}'
            self.assertTrue(any(g == group and rr == resource and v == verb and
                                (scope == ANY or scope == ns) and (names is None or name in names)
                                for scope, g, rr, v, names in grants), f"not granted: {desc}")
            found = table.get((group, resource, verb))
            self.assertIsNotNone(found, f"not in CALLS: {desc}")
            self.assertTrue(any(c[6] == ANY or c[6] == ns for c in found), desc)
            seen.add((group, resource, verb))
        # The test apiserver does not serve resource.k8s.io: the DRA lists get
        # 404 (a cluster without DRA: none assumed, no watch). The watches are
        # exercised against the real apiserver (test/k8s/test_real_dra.py).
        unserved = {("resource.k8s.io", r, "watch") for r in ("resourceslices", "resourceclaims")}
        self.assertEqual(seen, set(table) - unserved, "every request of CALLS was exercised")

    def wait_ready(self, base, proc, log):
        deadline = time.time() + 30
        while time.time() < deadline:
            self.assertIsNone(proc.poll(), "extender exited")
            try:
                with urllib.request.urlopen(base + "/readyz", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        log.seek(0)
        self.fail("extender not ready:\n" + log.read()[-3000:])


class DockerfileTest(unittest.TestCase):
    def test_multi_stage(self):
        stages = dockerfile_stages()
        self.assertGreaterEqual(len(stages), 2)
        self.assertEqual(stages[0]["from"], "debian:bookworm")
        self.assertTrue(stages[0]["as"])
        self.assertEqual(stages[-1]["from"], "debian:bookworm-slim")

    def test_builder_has_what_cmake_needs(self):
        build = apt_packages(dockerfile_stages()[0])
        self.assertLessEqual({"build-essential", "cmake", "pkg-config"}, build)
        dev = {"jansson": "libjansson-dev", "yaml-0.1": "libyaml-dev",
               "libcurl": "libcurl4-openssl-dev", "libmicrohttpd": "libmicrohttpd-dev",
               "gnutls": "libgnutls28-dev", "cmocka": "libcmocka-dev"}
        cmake = read("CMakeLists.txt") + read("test", "CMakeLists.txt")
        for module in re.findall(r"pkg_check_modules\(\w+ REQUIRED IMPORTED_TARGET ([\w.-]+)\)", cmake):
            self.assertIn(dev[module], build, module)

    def test_builder_copies_every_source_directory(self):
        lines = dockerfile_stages()[0]["lines"]
        copied = set()
        for line in lines:
            m = re.match(r"COPY\s+(?!--)(.+)\s+\S+$", line)
            if m:
                copied |= {p.rstrip("/") for p in m.group(1).split()}
        top = read("CMakeLists.txt")
        needed = {"CMakeLists.txt", "include"}
        needed |= {d.split("/")[0] for d in re.findall(r"add_subdirectory\(([\w/]+)\)", top)}
        self.assertLessEqual(needed, copied)

    def test_runtime_stage(self):
        final = dockerfile_stages()[-1]
        pkgs = apt_packages(final)
        self.assertEqual(pkgs, {"libcurl4", "libjansson4", "libyaml-0-2", "libmicrohttpd12", "libgnutls30",
                                "ca-certificates"})
        self.assertFalse([p for p in pkgs if p.endswith("-dev")])
        users = [l.split()[1] for l in final["lines"] if l.upper().startswith("USER ")]
        self.assertTrue(users, "no USER")
        uid = users[-1].split(":")[0]
        self.assertTrue(uid.isdigit() and int(uid) != 0, "a numeric non-root user")
        self.assertEqual(int(uid), deployment()["spec"]["template"]["spec"]["securityContext"]["runAsUser"])
        builder = dockerfile_stages()[0]["as"]
        copied = set()
        for l in final["lines"]:
            m = re.match(rf"COPY\s+--from={re.escape(builder)}\s+(.+)\s+(\S+)$", l)
            if m:
                copied |= {os.path.basename(p) for p in m.group(1).split()}
        self.assertLessEqual(set(BINARIES), copied)
        expose = [l.split()[1] for l in final["lines"] if l.upper().startswith("EXPOSE ")]
        self.assertEqual(expose, [str(container_port()["containerPort"])])
        entry = [l for l in final["lines"] if l.upper().startswith("ENTRYPOINT ")]
        self.assertEqual(len(entry), 1)
        self.assertEqual(json.loads(entry[0].split(None, 1)[1]), ["/usr/local/bin/gpushare-extender"])
        label = re.search(r'org\.opencontainers\.image\.version="([^"]+)"', read("deploy", "Dockerfile"))
        self.assertEqual(label.group(1), project_version())

    def test_runtime_libraries_cover_the_binaries(self):
        """The shared libraries the built binaries need come from the final
        stage's packages or the base image (libc6)."""
        readelf, dpkg, ldd = shutil.which("readelf"), shutil.which("dpkg"), shutil.which("ldd")
        if not (readelf and dpkg and ldd):
            self.skipTest("needs readelf, ldd and dpkg")
        present = {n: p for n, p in BINARIES.items() if os.access(p, os.X_OK)}
        if len(present) != len(BINARIES):
            self.skipTest("binaries not built")
        allowed = apt_packages(dockerfile_stages()[-1]) | {"libc6"}
        sanitizers = {"libasan8", "libubsan1", "libtsan2"}  # test builds only
        for name, path in present.items():
            needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                                subprocess.run([readelf, "-d", path], capture_output=True,
                                               text=True).stdout)
            resolved = dict(re.findall(r"^\s*(\S+) => (/\S+)", subprocess.run(
                [ldd, path], capture_output=True, text=True).stdout, re.M))
            for lib in needed:
                pkg = owner_package(dpkg, resolved.get(lib))
                self.assertIsNotNone(pkg, f"{name}: {lib} not found by dpkg")
                if pkg in sanitizers:
                    continue
                self.assertIn(pkg, allowed, f"{name} needs {lib} from {pkg}")

    def test_dockerignore_keeps_build_trees_out(self):
        lines = read("deploy", "Dockerfile.dockerignore").splitlines()
        self.assertIn(".git", lines)
        self.assertIn("build*", lines)


def owner_package(dpkg, path):
    if not path:
        return None
    candidates = [path, os.path.realpath(path)]
    candidates += ["/usr" + p for p in list(candidates) if p.startswith("/lib")]
    for c in candidates:
        r = subprocess.run([dpkg, "-S", c], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.split(":")[0].strip()
    return None


class SamplesTest(unittest.TestCase):
    def pods(self, name):
        out = []
        for d in load_all(os.path.join(DEPLOY, "samples", name)):
            if d["kind"] == "Pod":
                out.append((d["metadata"].get("labels", {}), d["spec"]))
            elif d["kind"] in ("Job", "StatefulSet", "Deployment"):
                t = d["spec"]["template"]
                out.append((t["metadata"].get("labels", {}), t["spec"]))
        return out

    def limits(self, spec):
        return [c.get("resources", {}).get("limits", {}) for c in spec["containers"]]

    def test_share_2gib(self):
        res = resource_names()
        (labels, spec), = self.pods("share-2gib-128mib.yaml")
        self.assertEqual([l.get(res["GS_RES_GPU_MEM"]) for l in self.limits(spec)], [16])

    def test_multi_gpu(self):
        res = resource_names()
        (labels, spec), = self.pods("multi-gpu-8gib.yaml")
        # 8 GiB in the samples' 128 MiB unit (that of share-2gib-128mib.yaml)
        self.assertEqual([l.get(res["GS_RES_GPU_MEM"]) for l in self.limits(spec)], [64])
        self.assertEqual(labels.get(res["GS_RES_GPU_COUNT"]), "2")

    def test_topology_job(self):
        res = resource_names()
        labels_h = dict(re.findall(r'#define (GS_LABEL_GANG_\w+) "([^"]+)"', read("src", "api", "api.h")))
        members = self.pods("topology-job.yaml")
        self.assertEqual(len(members), 1)
        labels, spec = members[0]
        job = [d for d in load_all(os.path.join(DEPLOY, "samples", "topology-job.yaml"))
               if d["kind"] == "Job"][0]
        replicas = labels[labels_h["GS_LABEL_GANG_REPLICAS"]]
        self.assertEqual(replicas, "2")
        self.assertEqual(labels[labels_h["GS_LABEL_GANG_JOB"]], "pytorch-dist-nccl")
        self.assertEqual(job["spec"]["parallelism"], int(replicas), "all members run at once")
        self.assertEqual([l.get(res["GS_RES_GPU"]) for l in self.limits(spec)], [1])

    def test_samples_are_managed(self):
        """Every sample container asks for a resource kube-scheduler sends to the extender."""
        managed = {m["name"] for m in the_extender(scheduler_config())["managedResources"]}
        for f in os.listdir(os.path.join(DEPLOY, "samples")):
            for _, spec in self.pods(f):
                for lim in self.limits(spec):
                    self.assertTrue(set(lim) & managed, f)


class DocsTest(unittest.TestCase):
    """docs/operations.md lists the FailedNodes reason texts of the code."""

    SPEC = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(?:ll|l|z|h|j)?[a-zA-Z]")

    def reason_texts(self):
        texts = []
        files = [os.path.join(SRC, "src", "core", "place.c"),
                 os.path.join(SRC, "src", "framework", "framework.c")]
        files += glob.glob(os.path.join(SRC, "plugins", "*", "*.c"))
        lit = r'"(?:[^"\\]|\\.)*"'
        for path in files:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            texts += re.findall(r'#define REASON_\w+ "([^"]+)"', text)
            for m in re.finditer(r"\b(?:verdict|gs_status_set)\(\s*[^,]+,\s*[^,]+,\s*(?:GS_R_\w+,\s*)?"
                                 rf"((?:{lit}|\s+|PRI\w+)+)", text):
                joined = "".join(
                    p[1:-1].replace('\\"', '"') if p.startswith('"') else "d"
                    for p in re.findall(rf"{lit}|PRI\w+", m.group(1)))
                texts.append(joined)
            texts += re.findall(r'snprintf\(r->reason, sizeof r->reason, "([^"%]+)"\)', text)
            texts += re.findall(r'unsigned_pod\(sig, "([^"]+)"\)', text)
        return [t for t in texts if self.SPEC.sub("", t).strip()]

    def test_metrics_are_documented(self):
        doc = read("docs", "operations.md")
        names = set()
        for path in glob.glob(os.path.join(SRC, "src", "server", "*.c")) + glob.glob(
                os.path.join(SRC, "src", "observe", "*.c")):
            with open(path, encoding="utf-8") as f:
                names |= set(re.findall(r'"(gpushare_[a-z_]+)"', f.read()))
        self.assertIn("gpushare_requests_total", names)
        for name in sorted(names):
            self.assertIn(f"`{name}", doc, name)

    def test_reasons_are_documented(self):
        doc = read("docs", "operations.md")
        texts = self.reason_texts()
        self.assertGreaterEqual(len(texts), 15)
        for t in texts:
            for chunk in self.SPEC.split(t):
                chunk = chunk.strip(" ;:()")
                if len(chunk) >= 6:
                    self.assertIn(chunk, doc, f"reason {t!r}")


NODE_DEPLOY = os.path.join(DEPLOY, "node")
NODE_GO = os.path.join(SRC, "plugins", "node")


def node_go(*parts):
    with open(os.path.join(NODE_GO, *parts), encoding="utf-8") as f:
        return f.read()


class NodeAgentTest(unittest.TestCase):
    """deploy/node/ against plugins/node/: flags, env, paths, resource
    names, and RBAC equal to the API calls the agent makes."""

    def daemonset(self):
        return [d for d in load_all(os.path.join(NODE_DEPLOY, "daemonset.yaml"))
                if d["kind"] == "DaemonSet"][0]

    def container(self):
        return self.daemonset()["spec"]["template"]["spec"]["containers"][0]

    def test_args_are_flags_of_the_binary(self):
        main = node_go("cmd", "gpushare-node", "main.go")
        flags = set(re.findall(r'fs\.\w+\("([a-z-]+)"', main))
        self.assertIn("kubelet-root-dir", flags)
        for a in self.container()["args"]:
            name = a[2:].split("=", 1)[0]
            self.assertIn(name, flags, a)

    def test_env_is_what_the_binary_reads(self):
        main = node_go("cmd", "gpushare-node", "main.go")
        env = {e["name"]: e for e in self.container()["env"]}
        self.assertEqual(env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName")
        self.assertIn('os.Getenv("NODE_NAME")', main)
        unit = env["GPUSHARE_GPU_MEMORY_UNIT"]["valueFrom"]["configMapKeyRef"]
        self.assertIn('"GPUSHARE_GPU_MEMORY_UNIT"', main)
        cm = load_one("configmap.yaml")
        self.assertEqual(unit["name"], cm["metadata"]["name"])
        self.assertIn(unit["key"], cm["data"])

    def test_sockets_and_inventory_paths(self):
        spec = self.daemonset()["spec"]["template"]["spec"]
        args = dict(a[2:].split("=", 1) for a in self.container()["args"])
        mounts = {m["name"]: m for m in self.container()["volumeMounts"]}
        vols = {v["name"]: v for v in spec["volumes"]}
        # the kubelet's socket directory: <root>/device-plugins, host and container alike
        dp = args["kubelet-root-dir"] + "/device-plugins"
        self.assertEqual(mounts["device-plugins"]["mountPath"], dp)
        self.assertEqual(vols["device-plugins"]["hostPath"]["path"], dp)
        self.assertIn('filepath.Join(a.o.RootDir, "device-plugins")', node_go("nodeagent", "agent.go"))
        # and the kubelet's pod-resources socket (which pod it admits), read-only
        pr = args["kubelet-root-dir"] + "/pod-resources"
        self.assertEqual((mounts["pod-resources"]["mountPath"], mounts["pod-resources"].get("readOnly")),
                         (pr, True))
        self.assertEqual(vols["pod-resources"]["hostPath"]["path"], pr)
        self.assertIn('filepath.Join(rootDir, "pod-resources", "kubelet.sock")',
                      node_go("nodeagent", "podresources.go"))
        # NVML: the host driver's library, one file read-only, the flag naming it
        self.assertNotIn("inventory", args)
        self.assertEqual(args["nvml-library"], mounts["nvml"]["mountPath"])
        self.assertTrue(mounts["nvml"]["readOnly"])
        self.assertEqual(vols["nvml"]["hostPath"]["type"], "File")
        self.assertTrue(vols["nvml"]["hostPath"]["path"].endswith("/libnvidia-ml.so.1"))
        self.assertIn('"nvml-library"', node_go("cmd", "gpushare-node", "main.go"))
        # the device nodes NVML opens come from NVIDIA's container runtime
        env = {e["name"]: e for e in self.container()["env"]}
        self.assertEqual(env["NVIDIA_VISIBLE_DEVICES"]["value"], "all")

    def test_runs_on_gpu_sharing_nodes_only(self):
        spec = self.daemonset()["spec"]["template"]["spec"]
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        expr = terms["nodeSelectorTerms"][0]["matchExpressions"][0]
        self.assertEqual(expr["key"], "ack.node.gpu.schedule")
        self.assertIn('ModeLabel          = "ack.node.gpu.schedule"', node_go("nodeagent", "agent.go"))
        # the modes the C core serves (gs_mode_parse), nothing else
        types = read("src", "core", "types.c")
        for mode in expr["values"]:
            self.assertIn(f'"{mode}"', types)
        self.assertEqual(sorted(expr["values"]), ["cgpu", "mps", "share", "topology"])

    def test_resource_names(self):
        header = read("src", "agent", "agent.h")
        names = set(re.findall(r'#define GS_AGENT_RES_\w+ "([^"]+)"', header))
        self.assertEqual(names, {"aliyun.com/gpu-mem", "aliyun.com/gpu-count", "aliyun.com/gpu"})
        doc = read("docs", "node-agent.md")
        for n in names:
            self.assertIn(f"`{n}`", doc)

    def test_rbac_is_the_calls_the_agent_makes(self):
        text = node_go("nodeagent", "agent.go")
        calls = set()
        for res, verb in re.findall(r"CoreV1\(\)\.(Pods|Nodes|ConfigMaps)\([^)]*\)\.(\w+)\(", text):
            calls.add((res.lower(), verb.lower()))
        # cms := ...ConfigMaps(ns); cms.Update / cms.Create
        if "cms := a.o.Client.CoreV1().ConfigMaps(" in text:
            calls |= {("configmaps", v.lower()) for v in re.findall(r"\bcms\.(\w+)\(", text)}
        grants, dra = set(), set()
        for d in load_all(os.path.join(NODE_DEPLOY, "rbac.yaml")):
            if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "gpushare-node-dra":
                # --dra: the calls of the upstream kubelet-plugin helper (dra.go)
                dra = {(r, v) for rule in d["rules"] for r in rule["resources"] for v in rule["verbs"]}
                continue
            if d["kind"] in ("ClusterRole", "Role"):
                for rule in d["rules"]:
                    for r in rule["resources"]:
                        for v in rule["verbs"]:
                            grants.add((r, v))
                if d["kind"] == "Role":
                    self.assertEqual(d["metadata"]["namespace"], "kube-system")
                    self.assertEqual({r for rule in d["rules"] for r in rule["resources"]},
                                     {"configmaps"})
        self.assertEqual(grants, calls)
        self.assertEqual(calls, {("pods", "list"), ("pods", "patch"), ("nodes", "get"),
                                 ("nodes", "patch"), ("configmaps", "create"),
                                 ("configmaps", "update")})
        self.assertIn('"k8s.io/dynamic-resource-allocation/kubeletplugin"', node_go("nodeagent", "dra.go"))
        self.assertEqual(dra, {("resourceslices", v) for v in
                               ("get", "list", "watch", "create", "update", "delete")} |
                         {("resourceclaims", "get")})

    def test_dra_patch_is_the_binarys_flags_and_the_kubelets_paths(self):
        """daemonset-dra.yaml, the commented patch of kustomization.yaml
        uncommented: the plain args plus --dra and --cdi-dir, flags of the
        binary; the plugin's socket directory, the registry and the CDI
        directory mounted at the paths dra.go uses, the host's own."""
        text = read("deploy", "node", "kustomization.yaml")
        self.assertIn("# patches:\n# - path: daemonset-dra.yaml\n", text)
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "node")
            shutil.copytree(NODE_DEPLOY, copy)
            with open(os.path.join(copy, "kustomization.yaml"), "w") as f:
                f.write(text.replace("# patches:\n# - path: daemonset-dra",
                                     "patches:\n- path: daemonset-dra"))
            built = kustomize(self, copy)
        ds = [d for d in built if d["kind"] == "DaemonSet"][0]
        spec = ds["spec"]["template"]["spec"]
        c = spec["containers"][0]
        plain = self.container()["args"]
        self.assertEqual(c["args"][:len(plain)], plain, "the DRA args must keep every plain arg")
        extra = c["args"][len(plain):]
        self.assertEqual([a.split("=", 1)[0] for a in extra], ["--dra", "--cdi-dir"])
        main = node_go("cmd", "gpushare-node", "main.go")
        self.assertIn('fs.Bool("dra", false,', main)  # off unless the patch is applied
        self.assertIn('fs.String("cdi-dir",', main)
        binary = os.path.join(BUILD, "k8s", "bin", "gpushare-node")
        if os.access(binary, os.X_OK):  # plugins/node/build.sh: the built binary's own flags
            r = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=60)
            for a in c["args"]:
                self.assertRegex(r.stdout + r.stderr, rf"(?m)^\s+-{a[2:].split('=', 1)[0]}(?: |$)", a)
        args = dict(a[2:].split("=", 1) for a in c["args"] if "=" in a)
        root = args["kubelet-root-dir"]
        driver = re.search(r'#define GS_AGENT_DRA_DRIVER "([^"]+)"', read("src", "agent", "agent.h"))
        dra_go = node_go("nodeagent", "dra.go")
        self.assertIn('filepath.Join(a.o.RootDir, "plugins", cagent.DRADriver)', dra_go)
        self.assertIn('filepath.Join(a.o.RootDir, "plugins_registry")', dra_go)
        self.assertIn("a.o.DRA.CDIDir", dra_go)
        mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
        vols = {v["name"]: v for v in spec["volumes"]}
        for path in (f"{root}/plugins/{driver.group(1)}", f"{root}/plugins_registry",
                     args["cdi-dir"]):
            with self.subTest(path=path):
                self.assertIn(path, mounts)
                self.assertFalse(mounts[path].get("readOnly", False))
                # the kubelet dials the socket paths the plugin registers: the host's
                self.assertEqual(vols[mounts[path]["name"]]["hostPath"]["path"], path)
        self.assertEqual(args["cdi-dir"], "/var/run/cdi")  # knode's and containerd's default
        # the plain mounts kept
        self.assertLessEqual({m["mountPath"] for m in self.container()["volumeMounts"]}, set(mounts))

    def test_dra_is_off_as_shipped(self):
        args = self.container()["args"]
        self.assertFalse([a for a in args if a.startswith(("--dra", "--cdi-dir"))], args)
        root = dict(a[2:].split("=", 1) for a in args)["kubelet-root-dir"]
        mounts = {m["mountPath"] for m in self.container()["volumeMounts"]}
        self.assertFalse([m for m in mounts if m.startswith((root + "/plugins", "/var/run/cdi"))],
                         mounts)

    def test_image_tag_is_the_project_version(self):
        k = load_all(os.path.join(NODE_DEPLOY, "kustomization.yaml"))[0]
        image = self.container()["image"]
        self.assertEqual(image, f'{k["images"][0]["name"]}:{project_version()}')
        self.assertEqual(k["images"][0]["newTag"], project_version())
        self.assertIn("-X main.version=$version", node_go("build.sh"))

    def test_kustomize_builds_the_node_agent(self):
        kinds = sorted(d["kind"] for d in kustomize(self, NODE_DEPLOY))
        # the agent's and --dra's ClusterRole and binding each
        self.assertEqual(kinds, ["ClusterRole", "ClusterRole", "ClusterRoleBinding",
                                 "ClusterRoleBinding", "DaemonSet", "Role", "RoleBinding",
                                 "ServiceAccount"])


if __name__ == "__main__":
    unittest.main()
