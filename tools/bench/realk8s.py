#!/usr/bin/env python3
"""End-to-end scheduling throughput on the real control plane (issue 11).

For each node count: a fresh control plane (test/k8s/kcluster.py) with N share
nodes x 8 GPUs x 16 GiB as API objects and P pending pods of 4 GiB created
*before* kube-scheduler starts; then kube-scheduler starts and the clock runs
until every pod is bound. Two modes, same everything else:

  plain     kube-scheduler alone: deploy/scheduler's configuration without its
            extenders stanza (aliyun.com/gpu-mem a plain extended resource)
  plain-unthrottled
            the same with clientConnection qps/burst 1000: kube-scheduler's own
            client (default 50 requests/s, burst 100) posts every Binding in
            plain mode, but the extender posts them in extender mode
  extender  deploy/scheduler's configuration as shipped, gpushare-extender wired in
  extender-packing
            deploy/scheduler/kube-scheduler-config-packing.yaml: every pod goes
            to the extender (with --cpu-pods: what that stanza costs per
            CPU-only pod, against extender, where they never reach it)
  plugin    gpushare-scheduler (kube-scheduler + the in-process plugin) with
            deploy/scheduler/gpushare-scheduler-config.yaml, no extender
            (docs/plugin.md); built by plugins/scheduler/build.sh
  plugin-unthrottled
            the same with clientConnection qps/burst 1000 (the plugin's Bindings
            go through kube-scheduler's client, as in plain mode)
  plain-gsbin-unthrottled
            a control: plain-unthrottled's configuration (no GpuShare in the
            profile) run by the gpushare-scheduler binary as its ServiceAccount,
            as the plugin modes are: what the binary and the identity cost
            without the plugin's work
  plugin-noscore-unthrottled
            a diagnostic: plugin-unthrottled without GpuShare at the Score
            extension point (placements differ: no binpack ranking): what
            kube-scheduler's per-node Score loop for one more plugin costs
  plain-batch, plugin-batch
            the unthrottled modes with PodTopologySpread's default constraints
            off: kube-scheduler's opportunistic batching (v1.35+) then reuses a
            pod's node ranking for the next pod signed alike (the plugin signs
            with the core's gs_place_signature)

The apiserver keeps no audit log in any mode (the tests' policy would log every
request of gpushare's ServiceAccounts, blocking, and none of kube-scheduler's own
user). Prints pods/s per mode, the ratio, kube-scheduler's own mean scheduling
attempt latency (scheduler_scheduling_attempt_duration_seconds) and the
extender's mean time per filter+prioritize (gpushare_request_duration_seconds),
so the extender's share of an attempt. Figures go to docs/benchmarks.md.

--pin gives kube-scheduler the last CPU to itself and the rest of the control
plane and the harness the others: on a machine of two vCPUs the scheduler's
own cost per pod is then measured beside, not mixed with, the apiserver's
and etcd's (its Go runtime sees one CPU: GOMAXPROCS 1).

--cpu-pods makes the pods ask 1 CPU and 1 GiB and no GPU; --node-policy
sets the ConfigMap's nodePolicy (frag scores CPU-only pods; binpack does
not).

  python3 tools/bench/realk8s.py [--nodes 500,5000] [--pods 1000] [--modes plain,extender] [--pin]
"""
import argparse
import concurrent.futures
import contextlib
import json
import os
import re
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "k8s"))
import kcluster  # noqa: E402
from promtext import metric_sum  # noqa: E402
import yaml  # noqa: E402



def fetch_profile(get, seconds, path, delay=0):
    """A component's CPU profile (/debug/pprof/profile) while it works; get
    reads a path of its port."""
    time.sleep(delay)  # a profile's window, not a wait for a condition
    with open(path, "wb") as f:
        f.write(get(f"/debug/pprof/profile?seconds={seconds}", timeout=seconds + 60))


def apiserver_get(k):
    """A GET of kube-apiserver's port as the admin, the bytes as served."""
    def get(path, timeout=30):
        with k.open("GET", path, timeout=timeout, accept="*/*") as r:
            return r.read()
    return get


def cpu_seconds(cp):
    """CPU seconds (user + system) each control-plane process has used so far."""
    hz = os.sysconf("SC_CLK_TCK")
    out = {}
    for name, p in cp.procs.items():
        try:
            with open(f"/proc/{p.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[name] = (int(fields[11]) + int(fields[12])) / hz
        except (OSError, IndexError, ValueError):
            pass
    return out


METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


class Bindings(threading.Thread):
    """Counts the benchmark's pods as they are bound, from one watch of the
    namespace: when the first was bound (with every process's CPU seconds
    then) and when the last was. Polling the list of unbound pods instead
    (up to 3,000 of them, every 200 ms) made kube-apiserver serialise of
    the order of 100 MB of JSON per run, beside the work measured. The watch
    asks only for bound pods (a field selector: a pod's creation is not sent
    at all) and only their metadata, so the harness's share of the
    apiserver's work, which grows with the pods' annotations, stays small."""

    def __init__(self, cp, k, pods):
        super().__init__(daemon=True)
        self.cp, self.k, self.pods = cp, k, pods
        self.bound = set()
        self.first = None  # (time, CPU seconds by process) of the first Binding seen
        self.last = None
        self.done = threading.Event()
        self.error = None
        lst = k.call("GET", "/api/v1/namespaces/default/pods?limit=1")
        self.rv = lst["metadata"]["resourceVersion"]

    def run(self):
        try:
            while not self.done.is_set():
                self._watch()
        except Exception as e:  # reported by wait()
            self.error = e
            self.done.set()

    def _watch(self):
        path = (f"/api/v1/namespaces/default/pods?watch=1&allowWatchBookmarks=true"
                f"&fieldSelector=spec.nodeName%21%3D"
                f"&timeoutSeconds=3600&resourceVersion={self.rv}")
        with self.k.open("GET", path, timeout=3600, accept=METADATA_ONLY) as r:
            for line in r:
                ev = json.loads(line)
                if ev["type"] == "ERROR":
                    raise RuntimeError(f"watch of the pods: {ev['object'].get('message')}")
                obj = ev["object"]
                self.rv = obj["metadata"]["resourceVersion"]
                name = obj["metadata"].get("name")
                # a pod entering the selector (bound) comes as ADDED
                if ev["type"] not in ("ADDED", "MODIFIED") or name in self.bound:
                    continue
                now = time.time()
                if self.first is None:
                    self.first = (now, cpu_seconds(self.cp))
                self.bound.add(name)
                if len(self.bound) >= self.pods:
                    self.last = now
                    self.done.set()
                    return

    def wait(self, timeout):
        if not self.done.wait(timeout):
            raise kcluster.Fatal(f"{len(self.bound)} of {self.pods} pods bound after {timeout} s")
        if self.error:
            raise self.error


def cpu_ticks():
    """The machine's CPU time so far (/proc/stat's first line, in ticks): busy
    (user, nice, system, irq, softirq), idle (with iowait) and steal — time
    the hypervisor gave another guest: a run with steal was slowed from
    outside."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return {"busy": v[0] + v[1] + v[2] + v[5] + v[6], "idle": v[3] + v[4], "steal": v[7]}


def apiserver_requests(text):
    """kube-apiserver's apiserver_request_total (its /metrics text) summed by
    verb and resource[/subresource], largest first."""
    counts = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0]))
        key = f'{labels.get("verb")} {labels.get("resource")}' + (
            f'/{labels["subresource"]}' if labels.get("subresource") else "")
        counts[key] = counts.get(key, 0) + int(float(line.rsplit(" ", 1)[1]))
    return dict(sorted(counts.items(), key=lambda kv: -kv[1])[:12])


@contextlib.contextmanager
def on_cpus(cpus):
    """This thread, and the processes and threads it starts meanwhile (they
    inherit its CPUs), on cpus only; None: wherever they were."""
    before = os.sched_getaffinity(0)
    if cpus:
        os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def cpu_pod(name):
    """A pod asking 1 CPU and 1 GiB and no GPU."""
    p = kcluster.gpu_pod(name)
    p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1", "memory": "1Gi"}}
    return p


def run(mode, nodes, pods, workdir, pprof=None, dump=None, pprof_window=(0, 5), pin=None,
        cpu_pods=False, node_policy=None):
    """One mode's run; pprof_window: the CPU profile's start (seconds after
    kube-scheduler starts) and length. pin (a list of CPUs, or None):
    kube-scheduler alone on the last, everything else (etcd, kube-apiserver,
    kube-controller-manager, the harness) on the others, so the scheduler's
    own cost per pod is measured without the others' contention. The caller
    runs it on pin[:-1] (on_cpus)."""
    cfg = os.path.join(kcluster.SOURCE, "deploy", "scheduler", "kube-scheduler-config.yaml")
    unthrottled = mode.endswith("-unthrottled") or mode.endswith("-batch")
    if mode.startswith("plain"):
        with open(cfg) as f:
            c = yaml.safe_load(f)
        c.pop("extenders", None)
        if unthrottled:
            c["clientConnection"]["qps"] = 1000
            c["clientConnection"]["burst"] = 1000
        if mode.endswith("-batch"):
            kcluster.no_default_spread(c, "default-scheduler")
        cfg = os.path.join(workdir, "plain-scheduler.yaml")
        with open(cfg, "w") as f:
            yaml.safe_dump(c, f)
    if mode == "extender-packing":
        with open(os.path.join(kcluster.SOURCE, "deploy", "scheduler",
                               "kube-scheduler-config-packing.yaml")) as f:
            c = yaml.safe_load(f)
        c["clientConnection"]["qps"] = 1000
        c["clientConnection"]["burst"] = 1000
        cfg = os.path.join(workdir, "packing-scheduler.yaml")
        with open(cfg, "w") as f:
            yaml.safe_dump(c, f)
    kw = {}
    # gpushare-scheduler runs as its ServiceAccount, as deploy/plugin installs it
    gs_binary = mode.startswith(("plugin", "plain-gsbin"))
    if gs_binary:
        kw["scheduler_binary"] = os.path.join(kcluster.k8s_bin_dir(), "gpushare-scheduler")
    if mode.startswith("plugin"):
        cfg = os.path.join(kcluster.SOURCE, "deploy", "scheduler", "gpushare-scheduler-config.yaml")
        if unthrottled:
            with open(cfg) as f:
                c = yaml.safe_load(f)
            c["clientConnection"]["qps"] = 1000
            c["clientConnection"]["burst"] = 1000
            if mode.endswith("-batch"):
                kcluster.no_default_spread(c, "gpushare-scheduler")
            if mode.startswith("plugin-noscore"):
                c["profiles"][0]["plugins"]["score"] = {"disabled": [{"name": "GpuShare"}]}
            cfg = os.path.join(workdir, "plugin-scheduler.yaml")
            with open(cfg, "w") as f:
                yaml.safe_dump(c, f)
    cp = kcluster.ControlPlane(workdir, scheduler=False, scheduler_config=cfg, **kw)
    # no audit log in any mode: the tests' policy logs every request of
    # gpushare's ServiceAccounts, none of kube-scheduler's own user
    cp.audit_policy = None
    if gs_binary:
        cp.scheduler_sa = "gpushare-scheduler"
    cp.start()
    try:
        k = cp.admin
        k.apply({"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "gpushare-config", "namespace": "kube-system"},
                 "data": dict({"gpuMemoryUnit": "1GiB"},
                              **({"nodePolicy": node_policy} if node_policy else {}))})
        t = time.time()
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            list(ex.map(lambda i: cp.add_node(f"gpu-{i:05d}", labels={"ack.node.gpu.schedule": "share"},
                                              capacity=kcluster.gpu_node_capacity(8, 8 * 16)),
                        range(nodes)))
            list(ex.map(lambda i: k.create(cpu_pod(f"p-{i:05d}") if cpu_pods
                                           else kcluster.gpu_pod(f"p-{i:05d}", units=4)), range(pods)))
        setup_s = time.time() - t
        ext = None
        if mode.startswith("extender"):
            ext = kcluster.Extender(cp, args=("--log-level", "warn")).wait_ready(timeout=300)
        watch = Bindings(cp, k, pods)
        watch.start()
        ticks0 = cpu_ticks()
        t0 = time.time()
        with on_cpus(pin[-1:] if pin else None):
            cp.start_scheduler()
        profs = []
        if pprof:  # kube-scheduler's and kube-apiserver's, over the same window
            start, seconds = pprof_window
            for get, name in ((cp.scheduler_get, ""), (apiserver_get(k), ".kube-apiserver")):
                profs.append(threading.Thread(target=fetch_profile,
                                              args=(get, seconds, f"{pprof}-{mode}-{nodes}{name}.pprof", start)))
                profs[-1].start()

        watch.wait(3600)
        ticks = {k_: v - ticks0[k_] for k_, v in cpu_ticks().items()}
        took = watch.last - t0
        # steady state: from the first Binding seen to the last, without
        # kube-scheduler's start-up (informer sync, leader election, and the
        # plugin's core fed every node) that the total includes
        t_first, cpu_first = watch.first
        n_first = 1  # pods bound at t_first
        steady = (pods - n_first) / max(1e-9, t0 + took - t_first) if n_first < pods else None
        # CPU per pod scheduled in the steady state, by process: what each
        # mode costs, which the machine's speed of the moment moves far less
        # than pods/s
        cpu_last = cpu_seconds(cp)
        cpu_ms = {name: round(1000 * (cpu_last[name] - cpu_first.get(name, 0)) / (pods - n_first), 3)
                  for name in cpu_last if n_first < pods}
        if profs:
            for t_ in profs:
                t_.join()
            # and what it allocated over the whole run (alloc_space)
            with open(f"{pprof}-{mode}-{nodes}.allocs.pprof", "wb") as f:
                f.write(cp.scheduler_get("/debug/pprof/allocs"))
        sm = cp.scheduler_metrics()
        att_n = metric_sum(sm, "scheduler_scheduling_attempt_duration_seconds_count")
        att_s = metric_sum(sm, "scheduler_scheduling_attempt_duration_seconds_sum")
        out = {"mode": mode, "nodes": nodes, "pods": pods, "seconds": round(took, 2),
               "pods_per_s": round(pods / took, 1), "setup_s": round(setup_s, 1),
               "startup_s": round(t_first - t0, 2),
               "steady_pods_per_s": round(steady, 1) if steady else None,
               "cpu_ms_per_pod": cpu_ms,
               "attempts": int(att_n), "attempt_mean_ms": round(1000 * att_s / att_n, 3) if att_n else None}
        # where an attempt's time goes: kube-scheduler's own mean per extension point (--json)
        points = {}
        ext_point = "scheduler_framework_extension_point_duration_seconds"
        for pt in ("PreFilter", "Filter", "PostFilter", "PreScore", "Score", "Reserve", "Permit",
                   "PreBind", "Bind"):
            n = metric_sum(sm, ext_point + "_count", extension_point=pt)
            if n:
                points[pt] = round(1000 * metric_sum(sm, ext_point + "_sum", extension_point=pt) / n, 3)
        out["extension_point_mean_ms"] = points
        # the machine while the clock ran: how busy, and how much time the
        # hypervisor took for other guests
        total = max(1, sum(ticks.values()))
        out["machine_pct"] = {k_: round(100 * v / total, 1) for k_, v in ticks.items()}
        # kube-scheduler's Go runtime over the whole run (start-up included,
        # alike in every mode): what it allocated, how often it collected
        out["scheduler_go"] = {
            "alloc_mb": round(metric_sum(sm, "go_memstats_alloc_bytes_total") / 2**20, 1),
            "gc_cycles": int(metric_sum(sm, "go_gc_duration_seconds_count")),
            "heap_mb": round(metric_sum(sm, "go_memstats_heap_alloc_bytes") / 2**20, 1),
            "rss_mb": round(metric_sum(sm, "process_resident_memory_bytes") / 2**20, 1)}
        # how often kube-scheduler called GpuShare per extension point (its
        # plugin metrics sample about one cycle in ten): Filter stays near 0
        # while PreFilter's Skip holds
        calls = {pt: int(metric_sum(sm, "scheduler_plugin_execution_duration_seconds_count",
                                    plugin="GpuShare", extension_point=pt))
                 for pt in ("PreFilter", "Filter", "Score")}
        if any(calls.values()):
            out["gpushare_sampled_calls"] = calls
        # kube-scheduler's opportunistic batching (v1.35+): pods like the one
        # before reuse its filter and score results when every plugin signs them
        batch = {r: int(metric_sum(sm, "scheduler_batch_attempts_total", result=r))
                 for r in ("hint_used", "hint_not_used", "no_hint")}
        flushed = {}
        for line in sm.splitlines():
            m = re.match(r'^scheduler_batch_cache_flushed_total\{.*reason="([^"]+)".*\}\s+(\S+)', line)
            if m:
                flushed[m.group(1)] = flushed.get(m.group(1), 0) + int(float(m.group(2)))
        out["batch"] = {"attempts": batch, "flushed": flushed}
        # what kube-apiserver served over the whole run (set-up included,
        # the same in every mode): requests by verb and resource
        with k.open("GET", "/metrics", accept="text/plain") as r:
            am = r.read().decode()
        out["apiserver_requests"] = apiserver_requests(am)
        if dump:
            for name, text in (("kube-apiserver", am), ("kube-scheduler", sm)):
                with open(f"{dump}-{mode}-{nodes}.{name}.metrics", "w") as f:
                    f.write(text)
        if ext:
            em = ext.metrics()
            fp_s = sum(metric_sum(em, "gpushare_request_duration_seconds_sum", verb=v) for v in ("filter", "prioritize"))
            fp_n = metric_sum(em, "gpushare_request_duration_seconds_count", verb="filter")
            out["extender_filter_prioritize_mean_ms"] = round(1000 * fp_s / fp_n, 3) if fp_n else None
            out["extender_bind_mean_ms"] = round(
                1000 * metric_sum(em, "gpushare_request_duration_seconds_sum", verb="bind")
                / max(1, metric_sum(em, "gpushare_request_duration_seconds_count", verb="bind")), 3)
        return out
    finally:
        cp.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", default="500,5000")
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--modes", default="plain,plain-unthrottled,extender,plugin")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cpu-pods", action="store_true", help="pods ask 1 CPU and 1 GiB, no GPU")
    ap.add_argument("--node-policy", help="the ConfigMap's nodePolicy (binpack, spread, frag)")
    ap.add_argument("--pprof", metavar="PREFIX",
                    help="save kube-scheduler's CPU profile (--pprof-window) to PREFIX-MODE-NODES.pprof"
                         " and its allocations over the run to PREFIX-MODE-NODES.allocs.pprof;"
                         " kube-apiserver's CPU profile to PREFIX-MODE-NODES.kube-apiserver.pprof")
    ap.add_argument("--dump", metavar="PREFIX",
                    help="save kube-apiserver's and kube-scheduler's /metrics at the end of each run"
                         " to PREFIX-MODE-NODES.COMPONENT.metrics")
    ap.add_argument("--pin", action="store_true",
                    help="kube-scheduler alone on the last CPU, the rest of the control plane and the"
                         " harness on the others")
    ap.add_argument("--pprof-window", metavar="START,SECONDS", default="0,5",
                    help="the CPU profile's window after kube-scheduler starts (default 0,5)")
    a = ap.parse_args()
    window = tuple(int(x) for x in a.pprof_window.split(","))
    pin = sorted(os.sched_getaffinity(0)) if a.pin else None
    if pin and len(pin) < 2:
        raise SystemExit("--pin needs two CPUs or more")
    results = []
    for n in [int(x) for x in a.nodes.split(",")]:
        row = {}
        for mode in a.modes.split(","):
            with tempfile.TemporaryDirectory(prefix="gs-bench-k8s-") as d:
                with on_cpus(pin[:-1] if pin else None):
                    r = run(mode, n, a.pods, d, a.pprof, a.dump, window, pin, a.cpu_pods,
                            a.node_policy)
            results.append(r)
            row[mode] = r
            if a.json:
                print(json.dumps(r), flush=True)
                continue
            print(f"{n:6d} nodes {mode:17s} {r['pods']} pods in {r['seconds']:7.2f} s = {r['pods_per_s']:7.1f} pods/s"
                  f"  attempt mean {r['attempt_mean_ms']} ms"
                  + (f"  extender filter+prioritize {r['extender_filter_prioritize_mean_ms']} ms,"
                     f" bind {r['extender_bind_mean_ms']} ms" if mode.startswith("extender") else ""),
                  flush=True)
        for pm, base in (("plugin", "plain"), ("plugin-unthrottled", "plain-unthrottled"),
                         ("plugin-batch", "plain-batch"),
                         ("plain-gsbin-unthrottled", "plain-unthrottled"),
                         ("plugin-noscore-unthrottled", "plain-unthrottled")):
            if pm in row and base in row:
                st = ""
                if row[pm]["steady_pods_per_s"] and row[base]["steady_pods_per_s"]:
                    st = f", steady state {row[pm]['steady_pods_per_s'] / row[base]['steady_pods_per_s']:.2f}"
                cpu = ""
                a, b = (row[m]["cpu_ms_per_pod"].get("kube-scheduler") for m in (pm, base))
                if a and b:
                    cpu = f"; kube-scheduler CPU per pod {a:.2f} / {b:.2f} ms"
                print(f"{n:6d} nodes ratio {pm}/{base} = "
                      f"{row[pm]['pods_per_s'] / row[base]['pods_per_s']:.2f}{st}{cpu}", flush=True)
        if "extender" in row:
            e = row["extender"]
            for base in ("plain", "plain-unthrottled"):
                if base in row:
                    print(f"{n:6d} nodes ratio extender/{base} = "
                          f"{e['pods_per_s'] / row[base]['pods_per_s']:.2f}", flush=True)
            if e["extender_filter_prioritize_mean_ms"] and e["attempt_mean_ms"]:
                print(f"{n:6d} nodes extender share of an attempt = "
                      f"{e['extender_filter_prioritize_mean_ms'] / e['attempt_mean_ms']:.1%}", flush=True)
        if "extender-packing" in row and "extender" in row:
            p, e = row["extender-packing"], row["extender"]
            print(f"{n:6d} nodes packing stanza: attempt mean {p['attempt_mean_ms']} ms against"
                  f" {e['attempt_mean_ms']} ms (+{p['attempt_mean_ms'] - e['attempt_mean_ms']:.3f} ms a pod),"
                  f" pods/s {p['pods_per_s']} against {e['pods_per_s']}; kube-scheduler CPU per pod"
                  f" {p['cpu_ms_per_pod'].get('kube-scheduler')} / {e['cpu_ms_per_pod'].get('kube-scheduler')} ms,"
                  f" extender {p['cpu_ms_per_pod'].get(next((k for k in p['cpu_ms_per_pod'] if k.startswith('gpushare-extender')), ''))} ms",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
