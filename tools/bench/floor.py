#!/usr/bin/env python3
"""One filter against the loopback floor, measured from outside the extender.

One kept-alive connection (Python's http.client, as a test harness keeps
it) sends, in turn, kube-scheduler's filter of one pod over N node names
and a GET /version, which the server answers without work: the floor of a
request on this machine and this client. The ratio of the two medians is
the figure of issue 30; the client's own cost per request is in both.

  python3 tools/bench/floor.py --url http://127.0.0.1:PORT [--nodes 1000]
                               [--requests 2000] [--gib 2] [--clients 8]
  python3 tools/bench/floor.py --extender build/src/gpushare-extender \\
                               --demo FILE [...]

With --demo the extender is started on a free loopback port and stopped at
the end; a demo file of the bench's synthetic cluster comes from
`gpushare-bench http --nodes 1000 --keep-files` (its kept cluster.json).
Node names are the bench's (node-00000...). --clients C adds a throughput
figure: C client processes, each with its own connection, filter for
--seconds; the client is Python, so on 2 CPUs that figure is bounded by the
client's cost too.
"""
import argparse
import http.client
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse


def body(nodes, gib):
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "probe-0", "namespace": "bench", "uid": "uid-probe-0"},
           "spec": {"containers": [{"name": "main", "image": "registry.example/cuda-sample:12",
                                    "resources": {"limits": {"aliyun.com/gpu-mem": str(gib)}}}]},
           "status": {"phase": "Pending"}}
    names = ["node-%05d" % i for i in range(nodes)]
    return json.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}).encode()


class Client:
    def __init__(self, host, port):
        self.c = http.client.HTTPConnection(host, port, timeout=30)

    def call(self, method, path, data=None):
        hdr = {"Content-Type": "application/json"} if data is not None else {}
        t0 = time.perf_counter()
        self.c.request(method, path, body=data, headers=hdr)
        r = self.c.getresponse()
        out = r.read()
        t1 = time.perf_counter()
        if r.status != 200:
            sys.exit("floor.py: %s %s: HTTP %d: %.200s" % (method, path, r.status, out))
        return t1 - t0, out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(extender, demo):
    port = free_port()
    p = subprocess.Popen([extender, "--demo", demo, "--listen", "127.0.0.1:%d" % port],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait for readiness, not a fixed time
        if p.poll() is not None:
            sys.exit("floor.py: the extender exited with %d" % p.returncode)
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            c.request("GET", "/readyz")
            if c.getresponse().status == 200:
                return p, port
        except OSError:
            pass
        time.sleep(0.05)
    p.kill()
    sys.exit("floor.py: the extender was not ready within 120 s")


def _client_proc(host, port, data, start_at, stop_at, count):
    c = Client(host, port)
    n = 0
    while time.time() < stop_at:
        c.call("POST", "/gpushare-scheduler/filter", data)
        if time.time() >= start_at:
            n += 1
    with count.get_lock():
        count.value += n


def throughput(host, port, data, clients, seconds):
    """Filters per second from clients processes (not threads: one Python
    process would be bound by its interpreter lock), each connection kept."""
    count = multiprocessing.Value("q", 0)
    start_at = time.time() + 1.0  # the processes start in this second; not counted
    stop_at = start_at + seconds
    ps = [multiprocessing.Process(target=_client_proc,
                                  args=(host, port, data, start_at, stop_at, count))
          for _ in range(clients)]
    for p in ps:
        p.start()
    for p in ps:
        p.join()
    return count.value / seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url")
    ap.add_argument("--extender")
    ap.add_argument("--demo")
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--gib", type=int, default=2)
    ap.add_argument("--clients", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=5)
    a = ap.parse_args()
    proc = None
    if a.url:
        u = urllib.parse.urlsplit(a.url)
        host, port = u.hostname, u.port or 80
    elif a.extender and a.demo:
        proc, port = start(a.extender, a.demo)
        host = "127.0.0.1"
    else:
        ap.error("give --url, or --extender and --demo")
    try:
        data = body(a.nodes, a.gib)
        c = Client(host, port)
        for _ in range(min(200, a.requests)):  # warm-up, not counted
            c.call("POST", "/gpushare-scheduler/filter", data)
            c.call("GET", "/version")
        f, v = [], []
        for _ in range(a.requests):
            t, out = c.call("POST", "/gpushare-scheduler/filter", data)
            f.append(t)
            t, _ = c.call("GET", "/version")
            v.append(t)
        if b'"Error":""' not in out:
            sys.exit("floor.py: the filter failed: %.200s" % out)
        fm, vm = statistics.median(f) * 1e3, statistics.median(v) * 1e3
        line = ("filter p50 %.3f ms  version p50 %.3f ms  ratio %.2f  (%d names, answer %d bytes)"
                % (fm, vm, fm / vm, a.nodes, len(out)))
        if a.clients > 0:
            line += "  %d clients %.0f filters/s" % (
                a.clients, throughput(host, port, data, a.clients, a.seconds))
        with open("/proc/loadavg") as la:
            line += "  load %s" % la.read().split()[0]
        print(line)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
