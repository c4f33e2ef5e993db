#!/usr/bin/env python3
"""What the allocation annotations cost kube-apiserver (and etcd) per Binding.

A fresh control plane (test/k8s/kcluster.py, no scheduler, no audit log),
P pending pods; then every pod is bound by a plain POST pods/NAME/binding,
in rounds that alternate between Bindings without annotations (what
kube-scheduler's DefaultBinder posts) and Bindings carrying the ten
annotations gpushare's Bind writes for a one-GPU pod (docs/contract.md §4).
Prints each process's CPU milliseconds per Binding for both kinds: the
difference is what the device plugin's contract costs the control plane,
apart from any scheduler.

  python3 tools/bench/bindcost.py [--pods 3000] [--rounds 10] [--threads 8]

The client is Python, one kept-alive connection per thread (as client-go
keeps them), so the figures hold the apiserver's TLS and HTTP work per
request but no handshakes.
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "k8s"))
sys.path.insert(0, HERE)
import kcluster  # noqa: E402
from realk8s import cpu_seconds  # noqa: E402

# what gpushare's Bind writes for 4 units on GPU 3 of an 8 x 16 GiB node
ANNOTATIONS = {
    "scheduler.framework.gpushare.allocation": '{"0":{"3":4}}',
    "scheduler.framework.gpushare.assigned": "false",
    "scheduler.framework.gpushare.assume-time": "1795000000000000000",
    "gpushare.alibabacloud.com/device-resource":
        '{"0":16,"1":16,"2":16,"3":16,"4":16,"5":16,"6":16,"7":16}',
    "ALIYUN_COM_GPU_MEM_IDX": "3",
    "ALIYUN_COM_GPU_MEM_POD": "4",
    "ALIYUN_COM_GPU_MEM_DEV": "16",
    "ALIYUN_COM_GPU_MEM_ASSIGNED": "false",
    "ALIYUN_COM_GPU_MEM_ASSUME_TIME": "1795000000000000000",
    "gpushare.io/unit-mib": "1024",
}


class Poster(threading.local):
    """A kept-alive HTTPS connection per thread to kube-apiserver."""

    def __init__(self, k):
        u = urllib.parse.urlparse(k.server)
        self.conn = http.client.HTTPSConnection(u.hostname, u.port, context=k.ctx, timeout=60)
        self.token = k.token

    def post(self, path, body):
        self.conn.request("POST", path, json.dumps(body).encode(),
                          {"Authorization": "Bearer " + self.token, "Content-Type": "application/json",
                           "Accept": "application/json"})
        r = self.conn.getresponse()
        data = r.read()
        if r.status >= 300:
            raise kcluster.KubeError(r.status, data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pods", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=10, help="rounds, alternating the kinds (even)")
    ap.add_argument("--threads", type=int, default=8)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gs-bindcost-") as d:
        cp = kcluster.ControlPlane(d, scheduler=False)
        cp.audit_policy = None
        cp.start()
        try:
            k = cp.admin
            with concurrent.futures.ThreadPoolExecutor(a.threads) as ex:
                list(ex.map(lambda i: cp.add_node(f"gpu-{i:05d}", labels={"ack.node.gpu.schedule": "share"},
                                                  capacity=kcluster.gpu_node_capacity(8, 8 * 16)),
                            range(50)))
                list(ex.map(lambda i: k.create(kcluster.gpu_pod(f"p-{i:05d}", units=4)), range(a.pods)))
            poster = Poster(k)
            per = a.pods // a.rounds
            cpu = {False: {}, True: {}}
            count = {False: 0, True: 0}
            wall = {False: 0.0, True: 0.0}
            for r in range(a.rounds):
                annotated = r % 2 == 1

                def bind(i):
                    b = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": f"p-{i:05d}"},
                         "target": {"apiVersion": "v1", "kind": "Node", "name": f"gpu-{i % 50:05d}"}}
                    if annotated:
                        b["metadata"]["annotations"] = ANNOTATIONS
                    poster.post(f"/api/v1/namespaces/default/pods/p-{i:05d}/binding", b)

                before, t = cpu_seconds(cp), time.time()
                with concurrent.futures.ThreadPoolExecutor(a.threads) as ex:
                    list(ex.map(bind, range(r * per, (r + 1) * per)))
                wall[annotated] += time.time() - t
                for name, s in cpu_seconds(cp).items():
                    cpu[annotated][name] = cpu[annotated].get(name, 0) + s - before.get(name, 0)
                count[annotated] += per
            for annotated in (False, True):
                ms = {name: round(1000 * s / count[annotated], 3) for name, s in sorted(cpu[annotated].items())}
                print(f"{'annotated' if annotated else 'plain':9s} {count[annotated]} Bindings,"
                      f" {count[annotated] / wall[annotated]:.0f}/s, CPU ms per Binding: {ms}", flush=True)
        finally:
            cp.stop()


if __name__ == "__main__":
    main()
