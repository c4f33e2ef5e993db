#!/usr/bin/env python3
"""The FGD paper's arrival sequence through the real control plane (issue 32).

What `gpushare-bench pack --protocol fgd` replays in-process, done by the real
kube-apiserver + kube-scheduler v1.37.2 (test/k8s/kcluster.py), so the replay's
model can be checked against what users of each form get:

  extender  kube-scheduler + gpushare-extender, deploy/scheduler/
            kube-scheduler-config.yaml as shipped (managedResources: only GPU
            pods reach the extender)
  packing   the same with deploy/scheduler/kube-scheduler-config-packing.yaml
            (the extender scores every pod; docs/operations.md)
  plugin    gpushare-scheduler (the in-process plugin), deploy/scheduler/
            gpushare-scheduler-config.yaml

Only what a benchmark needs is changed in the shipped files: the client's
qps/burst raised to 1000 (kube-scheduler's default 50/s throttles the
Bindings it posts itself) and, for the plugin, the profile named
default-scheduler (kcluster does that). The ConfigMap: gpuMemoryUnit 128MiB,
nodePolicy frag, fragmentationAware true (--normalize on|off adds
fragScoreNormalize: the extender's 0..10 spread over each request's nodes).

The cluster: nodes_sNN.csv as Nodes (share nodes, every GPU 1000 units of
128 MiB, so a pod asking m milli-GPU asks m units, exact; CPU and memory as
allocatable; pods 1000). The workload: seq_sNN.csv as Pods named p00000.. in
arrival order (CPU and memory requests; aliyun.com/gpu-mem; the gpu-count
label for a several-GPU pod), created one at a time, in order, while the
scheduler runs (--create before: all of them before it starts).

Each pod is tried once, as in the paper: a pod kube-scheduler finds
unschedulable (its PodScheduled condition False, reason Unschedulable) is
deleted at once. It would never fit later (pods never leave), but left in
place it is retried again and again (each failure updates the pod, which
requeues it), and on two loaded vCPUs those retries took over the queue
(0.4 pods/s past 100% arrival in the first run). For the same reason
preemption is off (PostFilter's DefaultPreemption, and GpuShare's for the
plugin; --preemption on keeps them): every pod has priority 0, so nothing
can be preempted, and the dry run cost 0.22 s per failed pod. The run ends
when every pod is bound or deleted so. kube-scheduler takes pods in creation order,
so the allocation at x% arrival is read from the bound pods of the prefix
that had arrived by then — the paper's metric (milli-GPU placed / cluster
milli-GPU against milli-GPU arrived). The bind order is checked against the
arrival order (pods bound out of order are counted).

Integrity, pod by pod from the final list: a bound GPU pod carries an
allocation of its own request (ngpu GPUs of the node, milli units each, unit
128 MiB), no GPU holds more than 1000 units, no node more CPU or memory than
its allocatable, a CPU-only pod no allocation. Any violation fails the run.

  GS_K8S_BIN=/work/main/build/k8s/bin python3 tools/bench/fgd_real.py \
      --seeds 42 --forms extender,plugin [--limit N] [--json]

One form's run of seed 42 (10,866 pods, 1,213 nodes) takes minutes on two
vCPUs: docs/benchmarks.md §5c has the figures and the commands.
"""
import argparse
import concurrent.futures
import csv
import json
import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from promtext import metric_sum  # noqa: E402
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("GS_BUILD_DIR", os.path.join(SOURCE, "build"))
# the real control plane's harness, imported when a run starts (the reading
# of a run's pods, which test/integration tests, needs none of it)
kcluster = Kube = None

DATA = os.path.join(os.environ.get("GS_SHARED", os.path.join(SOURCE, "..", "shared")),
                    "data", "fgd-protocol")
if not os.path.isdir(DATA):
    DATA = "/work/shared/data/fgd-protocol"


def harness():
    global kcluster, Kube
    if kcluster is None:
        sys.path.insert(0, os.path.join(SOURCE, "test", "k8s"))
        sys.path.insert(0, os.path.join(SOURCE, "test", "lib"))
        import kcluster as kc
        from kuberest import Kube as K
        kcluster, Kube = kc, K
MILLI = 1000
UNIT = "128MiB"
NS = "default"
ALLOC = "scheduler.framework.gpushare.allocation"
UNIT_KEY = "gpushare.io/unit-mib"
FORMS = {
    "extender": "kube-scheduler-config.yaml",
    "packing": "kube-scheduler-config-packing.yaml",
    "plugin": "gpushare-scheduler-config.yaml",
}


def load(d, seed, workload):
    """(nodes, pods): nodes (name, cpu milli, memory MiB, GPUs) in the seed's
    order; pods (name, cpu milli, memory MiB, GPUs, milli per GPU) in arrival
    order, read as fgd.c reads them."""
    sfx = f"s{seed}" if workload == "default" else f"{workload}_s{seed}"
    nodes, pods = [], []
    with open(os.path.join(d, f"nodes_{sfx}.csv")) as f:
        for r in csv.DictReader(f):
            nodes.append((r["sn"], int(r["cpu_milli"]), int(r["memory_mib"]), int(r["gpu"])))
    with open(os.path.join(d, f"seq_{'default' if workload == 'default' else workload}_s{seed}.csv")) as f:
        for i, r in enumerate(csv.DictReader(f)):
            ngpu, milli = min(int(r["num_gpu"]), 8), min(int(r["gpu_milli"]), MILLI)
            if milli == 0:
                ngpu = 0
            pods.append((f"p{i:05d}", int(r["cpu_milli"]), int(r["memory_mib"]), ngpu, milli))
    return nodes, pods


def pod_object(p):
    name, cpu, mem, ngpu, milli = p
    req = {"cpu": f"{cpu}m"}
    if mem:
        req["memory"] = f"{mem}Mi"
    res = {"requests": req}
    md = {"name": name, "namespace": NS, "labels": {"bench": "fgd"}}
    if ngpu:
        res["limits"] = {"aliyun.com/gpu-mem": str(ngpu * milli)}
        if ngpu > 1:
            md["labels"]["aliyun.com/gpu-count"] = str(ngpu)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": res}],
                     "restartPolicy": "Never", "terminationGracePeriodSeconds": 0}}



class Bound(threading.Thread):
    """The pods as they are bound, in order (one watch, bound pods only,
    metadata only): names in bind order and the time of each."""

    def __init__(self, k):
        super().__init__(daemon=True)
        self.k = k
        self.order, self.times, self.seen = [], [], set()
        self.error = None
        self.stop = threading.Event()
        self.rv = k.call("GET", f"/api/v1/namespaces/{NS}/pods?limit=1")["metadata"]["resourceVersion"]

    def run(self):
        try:
            while not self.stop.is_set():
                path = (f"/api/v1/namespaces/{NS}/pods?watch=1&allowWatchBookmarks=true"
                        f"&fieldSelector=spec.nodeName%21%3D&timeoutSeconds=600&resourceVersion={self.rv}")
                with self.k.open("GET", path, timeout=700,
                                 accept="application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1") as r:
                    for line in r:
                        ev = json.loads(line)
                        if ev["type"] == "ERROR":
                            raise RuntimeError(ev["object"].get("message"))
                        self.rv = ev["object"]["metadata"]["resourceVersion"]
                        name = ev["object"]["metadata"].get("name")
                        if ev["type"] in ("ADDED", "MODIFIED") and name and name not in self.seen:
                            self.seen.add(name)
                            self.order.append(name)
                            self.times.append(time.time())
        except Exception as e:  # reported by the caller
            self.error = e


class Failed(threading.Thread):
    """The pods found unschedulable (one watch of the unbound pods), each
    deleted at once: tried once, as the paper's protocol."""

    def __init__(self, k, kube):
        super().__init__(daemon=True)
        self.k, self.kube = k, kube
        self.names = set()
        self.error = None
        self.stop = threading.Event()
        self.rv = k.call("GET", f"/api/v1/namespaces/{NS}/pods?limit=1")["metadata"]["resourceVersion"]

    def run(self):
        try:
            while not self.stop.is_set():
                path = (f"/api/v1/namespaces/{NS}/pods?watch=1&allowWatchBookmarks=true"
                        f"&fieldSelector=spec.nodeName%3D&timeoutSeconds=600&resourceVersion={self.rv}")
                with self.k.open("GET", path, timeout=700) as r:
                    for line in r:
                        ev = json.loads(line)
                        if ev["type"] == "ERROR":
                            raise RuntimeError(ev["object"].get("message"))
                        obj = ev["object"]
                        self.rv = obj["metadata"]["resourceVersion"]
                        name = obj["metadata"].get("name")  # a BOOKMARK has none
                        if ev["type"] != "MODIFIED" or name in self.names:
                            continue
                        if any(c.get("type") == "PodScheduled" and c.get("status") == "False"
                               and c.get("reason") == "Unschedulable"
                               for c in obj.get("status", {}).get("conditions", [])):
                            st, body = self.kube.req("DELETE", f"/api/v1/namespaces/{NS}/pods/{name}"
                                                     "?gracePeriodSeconds=0")
                            if st not in (200, 202, 404):
                                raise RuntimeError(f"deleting {name}: {st} {body}")
                            self.names.add(name)
        except Exception as e:  # reported by the caller
            self.error = e


def wait_done(watch, failed, total, t0, a, extra=lambda: ""):
    """Until every one of total pods is bound (watch) or found unschedulable
    and deleted (failed), polling; a watch's error raised, a.timeout kept,
    with a.progress a line every poll (extra(): more of it)."""
    while True:
        for w in (watch, failed):
            if w.error:
                raise w.error
        if len(watch.order) + len(failed.names) >= total:
            return
        if a.progress:
            print(f"  {time.time() - t0:7.1f} s bound {len(watch.order)} unschedulable {len(failed.names)}"
                  f"{extra()} load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
        time.sleep(2)  # polling a condition
        if time.time() - t0 > a.timeout:
            raise kcluster.Fatal(f"not done after {a.timeout} s: bound {len(watch.order)},"
                                 f" unschedulable {len(failed.names)}")


def scheduler_config(form, workdir, config=None, preemption=False):
    import yaml
    path = config or os.path.join(SOURCE, "deploy", "scheduler", FORMS[form])
    with open(path) as f:
        c = yaml.safe_load(f)
    c.setdefault("clientConnection", {})
    c["clientConnection"]["qps"] = 1000
    c["clientConnection"]["burst"] = 1000
    if not preemption:
        profiles = c.setdefault("profiles", [{"schedulerName": "default-scheduler"}])
        for prof in profiles:
            prof.setdefault("plugins", {})["postFilter"] = {
                "disabled": [{"name": "DefaultPreemption"}]
                + ([{"name": "GpuShare"}] if form == "plugin" else [])}
    out = os.path.join(workdir, f"{form}-scheduler.yaml")
    with open(out, "w") as f:
        yaml.safe_dump(c, f)
    return out


def list_pods(k):
    items, cont = [], ""
    while True:
        q = f"/api/v1/namespaces/{NS}/pods?limit=1000" + (f"&continue={cont}" if cont else "")
        r = k.call("GET", q, timeout=120)
        items += r["items"]
        cont = r["metadata"].get("continue")
        if not cont:
            return items


def check(nodes, pods, items):
    """Allocation per pod from the final list, checked; (placed: name -> milli,
    errors: texts)."""
    by_node = {n[0]: n for n in nodes}
    want = {p[0]: p for p in pods}
    gpu_used, cpu_used, mem_used = {}, {}, {}
    placed, errors = {}, []
    for it in items:
        name = it["metadata"]["name"]
        if name not in want:
            continue
        node = it["spec"].get("nodeName")
        ann = it["metadata"].get("annotations") or {}
        _, cpu, mem, ngpu, milli = want[name]
        if not node:
            if ALLOC in ann:
                errors.append(f"{name}: an allocation but no node")
            continue
        if node not in by_node:
            errors.append(f"{name}: bound to unknown node {node}")
            continue
        cpu_used[node] = cpu_used.get(node, 0) + cpu
        mem_used[node] = mem_used.get(node, 0) + mem
        if ngpu == 0:
            if ALLOC in ann:
                errors.append(f"{name}: CPU-only pod with an allocation")
            placed[name] = 0
            continue
        if ALLOC not in ann or ann.get(UNIT_KEY) != "128":
            errors.append(f"{name}: GPU pod bound without an allocation in 128 MiB units")
            continue
        parts = {}
        for _c, gpus in json.loads(ann[ALLOC]).items():
            for g, u in gpus.items():
                parts[int(g)] = parts.get(int(g), 0) + int(u)
        if len(parts) != ngpu or any(u != milli for u in parts.values()):
            errors.append(f"{name}: allocation {parts} is not {ngpu} GPU(s) x {milli}")
        for g, u in parts.items():
            if g >= by_node[node][3]:
                errors.append(f"{name}: GPU {g} on {node} of {by_node[node][3]} GPUs")
            gpu_used[(node, g)] = gpu_used.get((node, g), 0) + u
        placed[name] = ngpu * milli
    for (node, g), u in gpu_used.items():
        if u > MILLI:
            errors.append(f"{node} GPU {g}: {u} units of {MILLI} allocated")
    for node, c in cpu_used.items():
        if c > by_node[node][1] or mem_used[node] > by_node[node][2]:
            errors.append(f"{node}: host over-committed (cpu {c}/{by_node[node][1]},"
                          f" memory {mem_used[node]}/{by_node[node][2]} MiB)")
    return placed, errors


def curve(nodes, pods, placed):
    """Allocation % at each arrived % 0..130, as fgd.c logs it."""
    cap = sum(n[3] for n in nodes) * MILLI
    at = [0.0] * 131
    arrived = allocated = 0
    for p in pods:
        allocated += placed.get(p[0], 0)
        arrived += p[3] * p[4]
        a = 100.0 * arrived / cap
        for x in range(130, -1, -1):
            if x < a:
                break
            at[x] = 100.0 * allocated / cap
    return at


def control_plane(workdir, cfg, plugin_binary=None):
    """The run's control plane, its scheduler not started: kube-scheduler
    as built, or gpushare-scheduler (plugin_binary) under its service
    account; no audit log (it would weigh on the apiserver)."""
    kw = {"scheduler_binary": plugin_binary} if plugin_binary else {}
    cp = kcluster.ControlPlane(workdir, scheduler=False, scheduler_config=cfg, **kw)
    cp.audit_policy = None
    if plugin_binary:
        cp.scheduler_sa = "gpushare-scheduler"
    return cp


def timed(cp, k, pods, create, a, t_start, queued=lambda: ""):
    """The measured phase: the pods created before it (a.create before),
    the watches started, the scheduler started, the pods created during it
    (a.create during), until every pod is bound or found unschedulable
    (wait_done). Returns (watch, failed, setup_s, t0, t_created, t_done),
    the watches stopped."""
    if a.create == "before":
        for p in pods:
            create(p)
    watch = Bound(k)
    watch.start()
    failed = Failed(k, Kube(cp.server, cp.tokens["admin"], cp.ca, timeout=60))
    failed.start()
    setup_s = time.time() - t_start
    t0 = time.time()
    cp.start_scheduler()
    if a.create == "during":
        for p in pods:
            create(p)
    t_created = time.time()
    wait_done(watch, failed, len(pods), t0, a, queued)
    t_done = time.time()
    watch.stop.set()
    failed.stop.set()
    return watch, failed, setup_s, t0, t_created, t_done


def run(form, seed, a, workdir):
    harness()
    nodes, pods = load(a.dir, seed, a.workload)
    if a.limit:
        pods = pods[:a.limit]
    cfg = scheduler_config(form, workdir, a.config, a.preemption == "on")
    cp = control_plane(workdir, cfg, a.plugin_binary if form == "plugin" else None)
    load0 = os.getloadavg()[0]
    t_start = time.time()
    cp.start()
    try:
        k = cp.admin
        data = {"gpuMemoryUnit": UNIT, "nodePolicy": "frag", "fragmentationAware": "true"}
        if a.normalize != "default":
            data["fragScoreNormalize"] = "true" if a.normalize == "on" else "false"
        k.apply({"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "gpushare-config", "namespace": "kube-system"},
                 "data": data})
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            list(ex.map(lambda n: cp.add_node(
                n[0], labels={"ack.node.gpu.schedule": "share"},
                capacity={"cpu": f"{n[1]}m", "memory": f"{n[2]}Mi", "pods": "1000",
                          "aliyun.com/gpu-count": str(n[3]), "aliyun.com/gpu-mem": str(n[3] * MILLI)}),
                nodes))
        creator = Kube(cp.server, cp.tokens["admin"], cp.ca, timeout=60)

        def create(p):
            st, body = creator.req("POST", f"/api/v1/namespaces/{NS}/pods", pod_object(p))
            if st != 201:
                raise kcluster.Fatal(f"creating {p[0]}: {st} {body}")

        ext = None
        if form != "plugin":
            ext = kcluster.Extender(cp, args=("--log-level", "warn")).wait_ready(timeout=600)

        def queued():
            sm = cp.scheduler_metrics()
            return f" queued {int(sum(metric_sum(sm, 'scheduler_pending_pods', queue=q) for q in ('active', 'backoff', 'unschedulable')))}"
        watch, failed, setup_s, t0, t_created, t_done = timed(cp, k, pods, create, a, t_start, queued)
        sm = cp.scheduler_metrics()
        items = list_pods(k)
        placed, errors = check(nodes, pods, items)
        at = curve(nodes, pods, placed)
        idx = {p[0]: i for i, p in enumerate(pods)}
        inversions = sum(1 for x, y in zip(watch.order, watch.order[1:]) if idx.get(y, 0) < idx.get(x, 0))
        attempts = {r: int(metric_sum(sm, "scheduler_schedule_attempts_total", result=r))
                    for r in ("scheduled", "unschedulable", "error")}
        out = {"form": form, "seed": seed, "workload": a.workload, "nodes": len(nodes), "pods": len(pods),
               "create": a.create, "preemption": a.preemption, "normalize": a.normalize, "bound": len(placed),
               "unschedulable": len(failed.names), "gpu_pods_bound": sum(1 for v in placed.values() if v),
               "at": {x: round(at[x], 2) for x in (80, 90, 100, 110, 120, 130)},
               "integrity_errors": len(errors), "errors": errors[:10],
               "setup_s": round(setup_s, 1), "seconds": round(t_done - t0, 1),
               "create_s": round(t_created - t0, 1),
               "pods_per_s": round(len(pods) / max(1e-9, t_done - t0), 1),
               "bound_out_of_order": inversions, "attempts": attempts,
               "load_start": round(load0, 1), "load_end": round(os.getloadavg()[0], 1),
               "utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime(t_start))}
        if ext:
            em = ext.metrics()
            n = metric_sum(em, "gpushare_request_duration_seconds_count", verb="filter")
            s = sum(metric_sum(em, "gpushare_request_duration_seconds_sum", verb=v)
                    for v in ("filter", "prioritize"))
            out["extender_filter_prioritize_mean_ms"] = round(1000 * s / n, 3) if n else None
            out["extender_filter_calls"] = int(n)
        n = metric_sum(sm, "scheduler_scheduling_attempt_duration_seconds_count")
        out["attempt_mean_ms"] = round(1000 * metric_sum(sm, "scheduler_scheduling_attempt_duration_seconds_sum")
                                       / n, 3) if n else None
        if a.keep_pods:
            with open(a.keep_pods + f"-{form}-s{seed}.json", "w") as f:
                json.dump({"placed": placed, "nodes": {it["metadata"]["name"]: it["spec"].get("nodeName")
                                                       for it in items}}, f)
        return out
    finally:
        cp.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="42")
    ap.add_argument("--forms", default="extender,plugin")
    ap.add_argument("--dir", default=DATA)
    ap.add_argument("--workload", default="default")
    ap.add_argument("--limit", type=int, default=0, help="only the first N pods of the sequence")
    ap.add_argument("--create", choices=("during", "before"), default="during")
    ap.add_argument("--config", help="a KubeSchedulerConfiguration instead of the form's shipped one")
    ap.add_argument("--preemption", choices=("off", "on"), default="off",
                    help="PostFilter's preemption (off: nothing can be preempted at one priority)")
    ap.add_argument("--plugin-binary", default=os.path.join(BUILD, "k8s", "bin", "gpushare-scheduler"))
    ap.add_argument("--timeout", type=float, default=7200)
    ap.add_argument("--keep-pods", metavar="PREFIX", help="save each run's placements to PREFIX-FORM-sSEED.json")
    ap.add_argument("--normalize", choices=("default", "on", "off"), default="default",
                    help="the ConfigMap's fragScoreNormalize (default: not set, the extender's default)")
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    seeds = []
    for part in a.seeds.split(","):
        lo, _, hi = part.partition("-")
        seeds += range(int(lo), int(hi or lo) + 1)
    failed = 0
    for seed in seeds:
        for form in a.forms.split(","):
            with tempfile.TemporaryDirectory(prefix="gs-fgd-real-") as d:
                r = run(form, seed, a, d)
            failed += r["integrity_errors"] > 0
            if a.json:
                print(json.dumps(r), flush=True)
                continue
            at = r["at"]
            print(f"seed {seed} {form:9s} normalize {a.normalize} alloc % at 100% {at[100]:.2f}"
                  f"  at 110% {at[110]:.2f}  at 130% {at[130]:.2f}"
                  f"  ({r['bound']}/{r['pods']} pods bound, {r['seconds']} s, {r['pods_per_s']} pods/s,"
                  f" integrity errors {r['integrity_errors']}, out of order {r['bound_out_of_order']},"
                  f" load {r['load_start']}-{r['load_end']})", flush=True)
            for e in r["errors"]:
                print("   ", e)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
