"""Issue 15, race-freedom: kube-scheduler binds asynchronously and learns of
its Bindings from its informers, so with slow binds the in-process plugin
schedules pod after pod while earlier ones are neither bound nor seen. Here
gpushare-scheduler reaches the apiserver through a proxy that delays every
byte by DELAY_S both ways: 1,000 pods of 1, 2 and 4 GiB on 32 nodes × 4 GPUs
× 16 GiB (1,600 GiB asked of 2,048 GiB, so every pod fits however the GPUs
fragment). Throughout, no GPU of the ledger is over its memory; at the end
every pod is bound once, the annotations never over-commit a GPU, and the
ledger equals the truth recomputed from the pods."""
import concurrent.futures
import os
import random
import threading
import unittest

import kcluster
from delayproxy import DelayProxy
from realcase import Env, RealCase, wait_for

DELAY_S = float(os.environ.get("GS_K8S_PROXY_DELAY", "0.1"))
NODES, GPUS, GIB = 32, 4, 16
PODS = 1000


def setUpModule():
    proxy = {}

    def via(api_port):
        proxy["p"] = DelayProxy(api_port, DELAY_S)
        return f"https://127.0.0.1:{proxy['p'].port}"
    Env.proxy = proxy
    Env.up(unit="1GiB", form="plugin", scheduler_via=via)


def tearDownModule():
    Env.down()
    p = getattr(Env, "proxy", {}).get("p")
    if p:
        p.close()


class SlowBinds(RealCase):

    def test_a_thousand_pods_with_slow_binds_never_over_commit(self):
        self.assertGreater(Env.proxy["p"].connections, 0)  # the scheduler goes through it
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            list(ex.map(lambda i: self.node(f"race-{i:02d}", "share", gpus=GPUS, units=GPUS * GIB),
                        range(NODES)))
        wait_for(lambda: len([n for n in Env.ext.ledger()["nodes"] if n["name"].startswith("race-")])
                 == NODES, 60, "the nodes in the ledger")
        rnd = random.Random(1000)
        sizes = [1] * 600 + [2] * 300 + [4] * 100
        rnd.shuffle(sizes)
        over, stop = [], threading.Event()

        def watch_ledger():
            while not stop.is_set():
                for n in Env.ext.ledger()["nodes"]:
                    for g in n["gpus"]:
                        if g["usedMiB"] > g["totalMiB"]:
                            over.append((n["name"], g["index"], g["usedMiB"]))
                stop.wait(0.2)
        watcher = threading.Thread(target=watch_ledger, daemon=True)
        watcher.start()
        try:
            with concurrent.futures.ThreadPoolExecutor(8) as ex:
                list(ex.map(lambda i: self.pod(f"p-{i:04d}", units=sizes[i]), range(PODS)))
            bound = self.wait_bound(PODS, timeout=900)
        finally:
            stop.set()
            watcher.join(10)
        self.assertEqual(over, [])
        # the annotations, summed per GPU, never exceed it
        used = kcluster.truth_from_pods(bound)
        self.assertEqual(sum(used.values()), sum(sizes) * 1024)
        for key, mib in used.items():
            self.assertLessEqual(mib, GIB * 1024, key)
        # one Binding per pod: none was bound twice
        binds = [e for e in self.cp.audit(user=None) if e.get("stage") == "ResponseComplete"
                 and (e.get("objectRef") or {}).get("subresource") == "binding"
                 and (e.get("objectRef") or {}).get("namespace") == self.ns]
        self.assertEqual(len(binds), PODS)
        self.assertEqual({e["responseStatus"]["code"] for e in binds}, {201})
        self.assert_ledger_is_truth()


if __name__ == "__main__":
    unittest.main()
