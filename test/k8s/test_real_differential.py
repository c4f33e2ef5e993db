"""Issue 15: the two forms decide alike. One generated sequence of 512 GPU
pods (and deletions between them) is run twice on the real control plane:
once through kube-scheduler + the extender, once through gpushare-scheduler
(the in-process plugin). Every pod must get the same answer in both: bound
with the same allocation annotations (docs/contract.md §4), or refused with the same
gpushare reason.

Each pod is pinned to one node (nodeSelector), so kube-scheduler's choice of
node cannot differ by a tie; what is compared is everything gpushare
decides: fit, the GPUs, the annotations and the refusals. The nodes are
independent lanes (a pod only ever sees its own node), run in parallel, each
one in order: a pod is created, then waited for until it is bound and held
in the ledger, or refused (then deleted); a deletion waits until the ledger
has let the pod go. So neither form can see an order the other did not."""
import concurrent.futures
import os
import random
import re
import unittest

import kcluster
from realcase import Env, wait_for

UNIT_GIB = 1
LANES = [  # name, mode, GPUs, units (GiB) per GPU
    ("d-share-1", "share", 1, 16), ("d-share-2", "share", 2, 16), ("d-share-3", "share", 3, 24),
    ("d-share-4", "share", 4, 16), ("d-share-8", "share", 8, 8), ("d-cgpu-2", "cgpu", 2, 32),
    ("d-mps-2", "mps", 2, 32), ("d-share-2b", "share", 2, 40),
]
PODS_PER_LANE = 64  # 512 pods in all
COMPARED = ("scheduler.framework.gpushare.allocation", "gpushare.alibabacloud.com/device-resource",
            "ALIYUN_COM_GPU_MEM_IDX", "ALIYUN_COM_GPU_MEM_POD", "ALIYUN_COM_GPU_MEM_DEV",
            "gpushare.io/unit-mib")
TIMEOUT = float(os.environ.get("GS_K8S_BIND_TIMEOUT", "120"))


def sequence(seed=15):
    """Per lane, the ops: ("create", pod, units, count-label or None) and
    ("delete", pod). Sizes mostly small; some multi-card (even and uneven
    splits), some too big for any GPU, a few bad gpu-count labels."""
    rnd = random.Random(seed)
    lanes = {}
    for name, mode, gpus, per in LANES:
        ops, live, made = [], [], 0
        while made < PODS_PER_LANE:
            if live and rnd.random() < 0.45:
                ops.append(("delete", live.pop(rnd.randrange(len(live)))))
                continue
            pod = f"{name}-p{made:02d}"
            made += 1
            r = rnd.random()
            if mode == "cgpu":
                units, count = rnd.choice([1, 1, 2, 3]), None
            elif r < 0.65:
                units, count = rnd.randint(1, min(per, 8)), None
            elif r < 0.80:
                count = rnd.choice([2, 2, 4])
                units, count = count * rnd.randint(1, 6) + (1 if rnd.random() < 0.2 else 0), str(count)
            elif r < 0.93:
                units, count = rnd.randint(per - 2, per + 4), None
            else:
                units, count = 2, rnd.choice(["0", "x", "65"])
            ops.append(("create", pod, units, count))
            live.append(pod)
        lanes[name] = ops
    return lanes


class Lane:
    """One node's ops, in order, against the running form."""

    def __init__(self, k, ext, node, ops):
        self.k, self.ext, self.node, self.ops = k, ext, node, ops
        self.ns = node  # a namespace per lane: its events stay few
        self.out = {}

    def held(self, uid):
        led = self.ext.ledger(self.node)
        return any(p["uid"] == uid for n in led["nodes"] for g in n["gpus"] for p in g["pods"])

    def create(self, name, units, count):
        labels = {"aliyun.com/gpu-count": count} if count is not None else None
        p = self.k.create(kcluster.gpu_pod(name, ns=self.ns, units=units, labels=labels,
                                           node_selector={"kubernetes.io/hostname": self.node}))
        uid = p["metadata"]["uid"]

        def answered():
            q = self.k.get("pods", self.ns, name)
            if q["spec"].get("nodeName"):
                return ("bound", q)
            for e in self.k.events(self.ns, name):
                if e.get("reason") == "FailedScheduling":
                    return ("refused", e["message"])
            return None
        kind, what = wait_for(answered, TIMEOUT, f"{self.ns}/{name} bound or refused", 0.1)
        if kind == "bound":
            ann = what["metadata"].get("annotations") or {}
            self.out[name] = ("bound", what["spec"]["nodeName"],
                              {key: ann.get(key) for key in COMPARED})
            wait_for(lambda: self.held(uid), TIMEOUT, f"{name} in the ledger", 0.1)
        else:
            self.out[name] = ("refused", gpushare_reason(what))
            self.delete(name, uid)

    def delete(self, name, uid=None):
        uid = uid or self.k.get("pods", self.ns, name)["metadata"]["uid"]
        self.k.delete("pods", self.ns, name, grace=0)
        wait_for(lambda: self.k.try_get("pods", self.ns, name) is None and not self.held(uid),
                 TIMEOUT, f"{name} gone from the apiserver and the ledger", 0.1)

    def run(self):
        for op in self.ops:
            if op[0] == "create":
                self.create(*op[1:])
            elif self.out[op[1]][0] == "bound":  # a refused pod is gone already
                self.delete(op[1])
        return self.out


def gpushare_reason(message):
    """The part of a FailedScheduling message that is about this lane's node
    (kube-scheduler lists the other nodes' selector mismatch too), without
    the preemption suffix whose wording differs by form."""
    msg = re.sub(r"\s*preemption: .*$", "", message)
    parts = [p.strip() for p in re.split(r"[:,]\s*(?=\d+ )", msg)]
    return sorted(p.rstrip(".") for p in parts
                  if p and not re.search(r"didn't match Pod's node affinity/selector", p))


def run_form(form, lanes):
    Env.up(unit="1GiB", form=form)
    try:
        k = Env.cp.admin
        for name, mode, gpus, per in LANES:
            k.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
            Env.cp.add_node(name, labels={"ack.node.gpu.schedule": mode},
                            capacity=kcluster.gpu_node_capacity(gpus, gpus * per))
        for name, *_ in LANES:
            wait_for(lambda: Env.ext.ledger(name)["nodes"] and k.try_get("serviceaccounts", name, "default"),
                     120, f"node {name} in the ledger and its namespace ready", 0.2)
        with concurrent.futures.ThreadPoolExecutor(len(LANES)) as ex:
            futs = [ex.submit(Lane(k, Env.ext, name, lanes[name]).run) for name, *_ in LANES]
            out = {}
            for f in futs:
                out.update(f.result())
        return out
    except BaseException:
        print(Env.cp.dump_logs(), flush=True)
        raise
    finally:
        Env.down()


class Differential(unittest.TestCase):

    def test_the_extender_and_the_plugin_decide_alike(self):
        lanes = sequence()
        pods = sum(1 for ops in lanes.values() for op in ops if op[0] == "create")
        self.assertGreaterEqual(pods, 500)
        ext = run_form("extender", lanes)
        plug = run_form("plugin", lanes)
        self.assertEqual(len(ext), pods)
        bound = sum(1 for v in ext.values() if v[0] == "bound")
        refused = pods - bound
        reasons = {}
        for v in ext.values():
            if v[0] == "refused":
                reasons[" / ".join(v[1])] = reasons.get(" / ".join(v[1]), 0) + 1
        print(f"\n{pods} pods: {bound} bound, {refused} refused", flush=True)
        for r, c in sorted(reasons.items(), key=lambda x: -x[1]):
            print(f"  {c:4d}  {r}", flush=True)
        # the sequence exercises both answers, multi-card pods included
        self.assertGreater(bound, 250)
        self.assertGreater(refused, 40)
        self.assertTrue(any(v[0] == "bound" and "," in (v[2]["ALIYUN_COM_GPU_MEM_IDX"] or "")
                            for v in ext.values()))
        diff = {name: (ext[name], plug.get(name)) for name in ext if ext[name] != plug.get(name)}
        self.assertEqual(diff, {}, f"{len(diff)} of {pods} pods decided differently")


if __name__ == "__main__":
    unittest.main()
