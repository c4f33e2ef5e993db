#!/usr/bin/env python3
"""The FGD paper's arrival sequence as DRA claims through the real control
plane (issue 33): kube-scheduler's own DRA allocator against
gpushare-scheduler placing the claims of DeviceClass gpushare.io, on the
same cluster and the same work (tools/bench/fgd_real.py does the gpu-mem
pods).

  upstream  kube-scheduler v1.37.2 as built (its DynamicResources plugin
            allocates every claim: first fit inside a node, its own scoring
            of nodes), no gpushare at all
  gpushare  gpushare-scheduler, deploy/scheduler/gpushare-scheduler-config.yaml
            (gpushare places the claims of its DeviceClass; DynamicResources
            the rest, of which there are none here)

The cluster: nodes_sNN.csv as Nodes (CPU, memory, pods 1000; the GPU-sharing
label, aliyun.com/gpu-count and gpu-mem in 128 MiB units, as a node running
gpushare-node advertises them, so gpushare knows its GPUs) and one
ResourceSlice per node as gpushare-node --dra publishes it: driver
gpu.gpushare.io, pool = the node, devices gpu-<i> with
allowMultipleAllocations, attributes gpushare.io/index and /uuid, capacity
memory 1000 × 128 MiB (one FGD GPU = 1000 milli). The DeviceClass is the
shipped deploy/dra/deviceclass.yaml.

The workload: seq_sNN.csv in arrival order; a GPU pod of n GPUs × m milli gets
a ResourceClaim of its own (request "gpu", deviceClassName gpushare.io,
count n, capacity.requests.memory m × 128 MiB — per device, as DRA reads
capacity requests) created just before it, the pod naming it in
spec.resourceClaims. As fgd_real.py: every pod tried once (found
unschedulable → deleted at once), preemption off, the allocation at x%
arrival read from the bound pods of the prefix arrived by then.

Integrity from the final lists: a bound GPU pod's claim is allocated, its
results are n devices of driver gpu.gpushare.io in the pool of the pod's
node, each consuming m × 128 MiB (or, with no consumedCapacity, the whole
device), reservedFor names the pod; no device holds more than its memory, no
node more CPU or memory than its allocatable.

  GS_K8S_BIN=/work/main/build/k8s/bin python3 tools/bench/fgd_claims.py \\
      --seeds 42 --forms upstream,gpushare [--scale 10] [--limit N] [--json]

--scale N takes every N-th node and the sequence's prefix up to 131% of their
GPUs: the same arrival on a tenth of the cluster (one form's run of the
whole protocol took kube-scheduler's DRA allocator 0.26 s a pod at load 20–28
on two vCPUs: about 45 minutes).
"""
import argparse
import concurrent.futures
import json
import os
import sys
import tempfile
import threading
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fgd_real  # noqa: E402
from fgd_real import MILLI, NS, curve, list_pods, load  # noqa: E402
from promtext import metric_sum  # noqa: E402

DRIVER = "gpu.gpushare.io"
CLASS = "gpushare.io"
UNIT_MIB = 128
FORMS = ("upstream", "gpushare")


def uuid_of(node, i):
    return f"GPU-{zlib.crc32(node.encode()):08x}-{i:04x}-4000-8000-{i:012x}"


def slice_object(node):
    name, _cpu, _mem, ngpu = node
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-gpu.gpushare.io"},
            "spec": {"driver": DRIVER, "nodeName": name,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "allowMultipleAllocations": True,
                                  "attributes": {"gpushare.io/index": {"int": i},
                                                 "gpushare.io/uuid": {"string": uuid_of(name, i)}},
                                  "capacity": {"memory": {"value": f"{MILLI * UNIT_MIB}Mi"}}}
                                 for i in range(ngpu)]}}


def claim_object(p):
    name, _cpu, _mem, ngpu, milli = p
    ex = {"deviceClassName": CLASS, "capacity": {"requests": {"memory": f"{milli * UNIT_MIB}Mi"}}}
    if ngpu > 1:
        ex["allocationMode"] = "ExactCount"
        ex["count"] = ngpu
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": ex}]}}}


def pod_object(p):
    name, cpu, mem, ngpu, _milli = p
    req = {"cpu": f"{cpu}m"}
    if mem:
        req["memory"] = f"{mem}Mi"
    c = {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": req}}
    spec = {"containers": [c], "restartPolicy": "Never", "terminationGracePeriodSeconds": 0}
    if ngpu:
        c["resources"]["claims"] = [{"name": "gpu"}]
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "labels": {"bench": "fgd-claims"}}, "spec": spec}


def scaled(nodes, pods, scale):
    """1/scale of the cluster (every scale-th node, in the seed's order) and
    the prefix of the sequence that arrives up to 131% of its GPUs: the same
    arrival, on a cluster a two-core machine schedules in minutes."""
    if scale <= 1:
        return nodes, pods
    nodes = nodes[::scale]
    cap = sum(n[3] for n in nodes) * MILLI
    out, arrived = [], 0
    for p in pods:
        if arrived > 1.31 * cap:
            break
        out.append(p)
        arrived += p[3] * p[4]
    return nodes, out


def list_all(k, path):
    items, cont = [], ""
    while True:
        r = k.call("GET", f"{path}?limit=1000" + (f"&continue={cont}" if cont else ""), timeout=120)
        items += r["items"]
        cont = r["metadata"].get("continue")
        if not cont:
            return items


def mib(q):
    """A memory quantity as the API prints it (e.g. 4Gi, 512Mi) in MiB."""
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1 << 20}
    for s, f in units.items():
        if q.endswith(s):
            return float(q[:-len(s)]) * f
    return int(q) / (1 << 20)


def check(nodes, pods, items, claims):
    """Allocation per pod from the final pods and claims, checked; (placed:
    name -> milli, errors)."""
    by_node = {n[0]: n for n in nodes}
    want = {p[0]: p for p in pods}
    claim_of = {c["metadata"]["name"]: c for c in claims}
    used, cpu_used, mem_used = {}, {}, {}
    placed, errors = {}, []
    for it in items:
        name = it["metadata"]["name"]
        if name not in want:
            continue
        node = it["spec"].get("nodeName")
        if not node:
            continue
        if node not in by_node:
            errors.append(f"{name}: bound to unknown node {node}")
            continue
        _, cpu, mem, ngpu, milli = want[name]
        cpu_used[node] = cpu_used.get(node, 0) + cpu
        mem_used[node] = mem_used.get(node, 0) + mem
        if ngpu == 0:
            placed[name] = 0
            continue
        alloc = (claim_of.get(name, {}).get("status") or {}).get("allocation")
        if not alloc:
            errors.append(f"{name}: bound without its claim allocated")
            continue
        res = [r for r in alloc["devices"]["results"] if r.get("driver") == DRIVER]
        if len(res) != ngpu:
            errors.append(f"{name}: {len(res)} devices allocated, asks {ngpu}")
        reserved = [r.get("name") for r in claim_of[name]["status"].get("reservedFor", [])]
        if name not in reserved:
            errors.append(f"{name}: its claim is reserved for {reserved}")
        for r in res:
            if r.get("pool") != node or not r.get("device", "").startswith("gpu-"):
                errors.append(f"{name}: device {r.get('pool')}/{r.get('device')} on node {node}")
                continue
            g = int(r["device"][4:])
            if g >= by_node[node][3]:
                errors.append(f"{name}: {r['device']} on {node} of {by_node[node][3]} GPUs")
            cc = (r.get("consumedCapacity") or {}).get("memory")
            units = MILLI if cc is None else mib(cc) / UNIT_MIB
            if abs(units - milli) > 1e-6:
                errors.append(f"{name}: {r['device']} consumes {cc}, asks {milli} × {UNIT_MIB} MiB")
            used[(node, g)] = used.get((node, g), 0) + units
        placed[name] = ngpu * milli
    for (node, g), u in used.items():
        if u > MILLI + 1e-6:
            errors.append(f"{node} gpu-{g}: {u:g} units of {MILLI} allocated")
    for node, c in cpu_used.items():
        if c > by_node[node][1] or mem_used[node] > by_node[node][2]:
            errors.append(f"{node}: host over-committed (cpu {c}/{by_node[node][1]},"
                          f" memory {mem_used[node]}/{by_node[node][2]} MiB)")
    return placed, errors


def scheduler_config(form, workdir, preemption=False):
    if form == "gpushare":
        return fgd_real.scheduler_config("plugin", workdir, None, preemption)
    import yaml
    c = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
         "clientConnection": {"qps": 1000, "burst": 1000},
         "profiles": [{"schedulerName": "default-scheduler"}]}
    if not preemption:
        c["profiles"][0]["plugins"] = {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}
    out = os.path.join(workdir, "upstream-scheduler.yaml")
    with open(out, "w") as f:
        yaml.safe_dump(c, f)
    return out


def run(form, seed, a, workdir):
    fgd_real.harness()
    kcluster, Kube = fgd_real.kcluster, fgd_real.Kube
    sys.path.insert(0, os.path.join(fgd_real.SOURCE, "test", "k8s"))
    import dracase
    nodes, pods = scaled(*load(a.dir, seed, a.workload), a.scale)
    if a.limit:
        pods = pods[:a.limit]
    cfg = scheduler_config(form, workdir, a.preemption == "on")
    cp = fgd_real.control_plane(workdir, cfg, a.plugin_binary if form == "gpushare" else None)
    load0 = os.getloadavg()[0]
    t_start = time.time()
    cp.start()
    try:
        k = cp.admin
        k.apply({"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "gpushare-config", "namespace": "kube-system"},
                 "data": {"gpuMemoryUnit": "128MiB", "nodePolicy": "frag", "fragmentationAware": "true"}})
        k.apply(dracase.device_class())
        local = threading.local()  # a Kube client holds one connection: one per thread

        def add(n):
            if not hasattr(local, "k"):
                local.k = Kube(cp.server, cp.tokens["admin"], cp.ca, timeout=60)
            cp.add_node(n[0], labels={"ack.node.gpu.schedule": "share"},
                        capacity={"cpu": f"{n[1]}m", "memory": f"{n[2]}Mi", "pods": "1000",
                                  "aliyun.com/gpu-count": str(n[3]),
                                  "aliyun.com/gpu-mem": str(n[3] * MILLI)})
            if n[3]:
                st, body = local.k.req("POST", "/apis/resource.k8s.io/v1/resourceslices", slice_object(n))
                if st != 201:
                    raise kcluster.Fatal(f"slice of {n[0]}: {st} {body}")
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            list(ex.map(add, nodes))
        creator = Kube(cp.server, cp.tokens["admin"], cp.ca, timeout=60)

        def create(p):
            if p[3]:
                st, body = creator.req("POST", f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims",
                                       claim_object(p))
                if st != 201:
                    raise kcluster.Fatal(f"creating claim {p[0]}: {st} {body}")
            st, body = creator.req("POST", f"/api/v1/namespaces/{NS}/pods", pod_object(p))
            if st != 201:
                raise kcluster.Fatal(f"creating {p[0]}: {st} {body}")

        watch, failed, setup_s, t0, t_created, t_done = fgd_real.timed(cp, k, pods, create, a, t_start)
        sm = cp.scheduler_metrics()
        items = list_pods(k)
        claims = list_all(k, f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims")
        placed, errors = check(nodes, pods, items, claims)
        if a.keep:
            with open(f"{a.keep}-{form}-s{seed}.json", "w") as f:
                json.dump({"pods": items, "claims": claims}, f)
            with open(f"{a.keep}-{form}-s{seed}.metrics", "w") as f:
                f.write(sm)
        at = curve(nodes, pods, placed)
        attempts = {r: int(metric_sum(sm, "scheduler_schedule_attempts_total", result=r))
                    for r in ("scheduled", "unschedulable", "error")}
        n = metric_sum(sm, "scheduler_scheduling_attempt_duration_seconds_count")
        return {"form": form, "seed": seed, "workload": a.workload, "scale": a.scale,
                "nodes": len(nodes), "pods": len(pods),
                "claims": sum(1 for p in pods if p[3]), "create": a.create, "bound": len(placed),
                "unschedulable": len(failed.names),
                "gpu_pods_bound": sum(1 for v in placed.values() if v),
                "at": {x: round(at[x], 2) for x in (80, 90, 100, 110, 120, 130)},
                "integrity_errors": len(errors), "errors": errors[:10],
                "setup_s": round(setup_s, 1), "seconds": round(t_done - t0, 1),
                "create_s": round(t_created - t0, 1),
                "pods_per_s": round(len(pods) / max(1e-9, t_done - t0), 1), "attempts": attempts,
                "attempt_mean_ms": round(1000 * metric_sum(
                    sm, "scheduler_scheduling_attempt_duration_seconds_sum") / n, 3) if n else None,
                "load_start": round(load0, 1), "load_end": round(os.getloadavg()[0], 1),
                "utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime(t_start))}
    finally:
        cp.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="42")
    ap.add_argument("--forms", default=",".join(FORMS))
    ap.add_argument("--dir", default=fgd_real.DATA)
    ap.add_argument("--workload", default="default")
    ap.add_argument("--limit", type=int, default=0, help="only the first N pods of the sequence")
    ap.add_argument("--scale", type=int, default=1,
                    help="every N-th node and the sequence up to 131%% of their GPUs (1: the whole protocol)")
    ap.add_argument("--create", choices=("during", "before"), default="during")
    ap.add_argument("--preemption", choices=("off", "on"), default="off")
    ap.add_argument("--plugin-binary", default=os.path.join(fgd_real.BUILD, "k8s", "bin", "gpushare-scheduler"))
    ap.add_argument("--timeout", type=float, default=7200)
    ap.add_argument("--keep", metavar="PREFIX", help="save each run's pods and claims to PREFIX-FORM-sSEED.json,"
                    " the scheduler's /metrics at the end to PREFIX-FORM-sSEED.metrics")
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    failed = 0
    for seed in [int(s) for s in a.seeds.split(",")]:
        for form in a.forms.split(","):
            if form not in FORMS:
                ap.error(f"form {form}: one of {', '.join(FORMS)}")
            with tempfile.TemporaryDirectory(prefix="gs-fgd-claims-") as d:
                r = run(form, seed, a, d)
            failed += r["integrity_errors"] > 0
            if a.json:
                print(json.dumps(r), flush=True)
                continue
            at = r["at"]
            print(f"seed {seed} {form:9s} alloc % at 100% {at[100]:.2f}  at 130% {at[130]:.2f}"
                  f"  ({r['bound']}/{r['pods']} pods bound, {r['seconds']} s, {r['pods_per_s']} pods/s,"
                  f" integrity errors {r['integrity_errors']}, load {r['load_start']}-{r['load_end']})",
                  flush=True)
            for e in r["errors"]:
                print("   ", e)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
