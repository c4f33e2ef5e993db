#!/usr/bin/env python3
"""Runs the embedded demo: starts gpushare-extender on a demo cluster file and
plays kube-scheduler against it (filter -> prioritize -> bind over HTTP, the
extender v1 wire format with NodeNames, as nodeCacheCapable: true sends it),
then prints the ledger with gpushare-inspect. Every document of CLUSTER.yaml
is read (Lists and single objects). Colour when stdout is a terminal (not
with NO_COLOR set).

usage: demo.py --build BUILD_DIR CLUSTER.yaml [--keep-running]
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

try:
    import yaml
except ImportError:  # pyenv or venv pythons may lack Debian's python3-yaml
    if os.path.exists("/usr/bin/python3") and sys.executable != "/usr/bin/python3":
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    sys.exit("demo: needs PyYAML (Debian package python3-yaml)")


COLOUR = sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def paint(text, code):
    return f"\033[{code}m{text}\033[0m" if COLOUR else text


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(base, verb, body):
    req = urllib.request.Request(
        f"{base}/gpushare-scheduler/{verb}", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


def wait_ready(base, proc):
    deadline = time.time() + 20
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"demo: gpushare-extender exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{base}/readyz", timeout=1) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.1)
    sys.exit("demo: gpushare-extender did not become ready")


def schedule(base, pod, node_names):
    """One scheduling cycle as kube-scheduler runs it with this extender."""
    name = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
    args = {"Pod": pod, "Nodes": None, "NodeNames": node_names}
    res = post(base, "filter", args)
    if res.get("Error"):
        print(f"  {name:32} {paint('filter error', '31')}: {res['Error']}")
        return
    feasible = res.get("NodeNames") or []
    if not feasible:
        reasons = {}
        for m in ("FailedNodes", "FailedAndUnresolvableNodes"):
            for _node, why in (res.get(m) or {}).items():
                reasons[why] = reasons.get(why, 0) + 1
        text = ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
        print(f"  {name:32} {paint('unschedulable', '33')}: 0/{len(node_names)} nodes are "
              f"available: {text}")
        return
    node = feasible[0]
    if len(feasible) > 1:  # kube-scheduler skips prioritize for one node
        args["NodeNames"] = feasible
        scores = post(base, "prioritize", args)
        best = max(s["Score"] for s in scores)
        node = next(s["Host"] for s in scores if s["Score"] == best)
    res = post(base, "bind", {"PodName": pod["metadata"]["name"],
                              "PodNamespace": pod["metadata"]["namespace"],
                              "PodUID": pod["metadata"].get("uid", ""), "Node": node})
    if res.get("Error"):
        print(f"  {name:32} {paint('bind to ' + node + ' failed', '31')}: {res['Error']}")
    else:
        print(f"  {name:32} -> {paint(node, '32')}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--keep-running", action="store_true")
    ap.add_argument("cluster")
    opts = ap.parse_args()

    with open(opts.cluster) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    items = [i for d in docs for i in (d.get("items") or [] if d.get("kind") == "List" else [d])]
    nodes = [i["metadata"]["name"] for i in items if i.get("kind") == "Node"]
    pods = [i for i in items if i.get("kind") == "Pod" and not i.get("spec", {}).get("nodeName")]
    for p in pods:
        p["metadata"].setdefault("namespace", "default")

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    ext = os.path.join(opts.build, "src", "gpushare-extender")
    inspect = os.path.join(opts.build, "tools", "inspect", "gpushare-inspect")
    proc = subprocess.Popen([ext, "--demo", opts.cluster, "--listen", f"127.0.0.1:{port}",
                             "--log-level", "error"])
    try:
        wait_ready(base, proc)
        print(f"gpushare-extender is serving {len(nodes)} demo nodes at {base}\n")
        print("Scheduling the demo pods (filter -> prioritize -> bind):")
        for pod in pods:
            schedule(base, pod, nodes)
        print("\nThe ledger (gpushare-inspect):")
        sys.stdout.flush()
        if os.path.exists(inspect):
            subprocess.run([inspect, "--url", base], check=False)
            if "gpu-share-b" in nodes:
                # the 16 pods of the seed scenario, per GPU; the cluster
                # total was printed once above
                detail = subprocess.run([inspect, "--url", base, "-d", "gpu-share-b"],
                                        capture_output=True, text=True, check=False).stdout
                lines = detail.splitlines()
                last = max((i for i, line in enumerate(lines) if line and set(line) == {"-"}),
                           default=len(lines) - 1)
                print("\n" + "\n".join(lines[:last + 1]))
        else:
            with urllib.request.urlopen(f"{base}/debug/ledger") as r:
                print(json.dumps(json.loads(r.read()), indent=2))
        if opts.keep_running:
            print(f"\nThe extender keeps running at {paint(base, '1')} (Ctrl-C stops it): try\n"
                  f"  curl {base}/debug/ledger\n"
                  f"  {inspect} --url {base} -d")
            sys.stdout.flush()
            proc.wait()
    except KeyboardInterrupt:
        pass
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
