"""The extender over loopback HTTP, as kube-scheduler drives it (issue 2):
the real gpushare-extender binary on an embedded demo cluster."""
import json
import re
import os
import socket
import subprocess
import tempfile
import unittest

import yaml

from gsutil import (DGX1_LINKS, EXTENDER, Extender, configmap, free_port, http_status, node, pod,
                    wait_until)


def bound_pod(name, node_name, allocation, unit_mib=1024, ns="default"):
    """A running pod carrying gpushare's V2 allocation annotation."""
    p = pod(name, units=sum(sum(g.values()) for g in allocation.values()), ns=ns)
    p["spec"]["nodeName"] = node_name
    p["status"]["phase"] = "Running"
    p["metadata"]["annotations"] = {
        "scheduler.framework.gpushare.allocation": json.dumps(allocation),
        "gpushare.io/unit-mib": str(unit_mib)}
    return p


def cycle(ext, p, nodes):
    """filter, prioritize (if several pass), bind: returns (node, filter answer)."""
    st, res, _ = ext.post("filter", {"Pod": p, "Nodes": None, "NodeNames": nodes})
    assert st == 200, st
    if res["Error"] or not res["NodeNames"]:
        return None, res
    chosen = res["NodeNames"][0]
    if len(res["NodeNames"]) > 1:
        st, scores, _ = ext.post("prioritize", {"Pod": p, "Nodes": None,
                                                "NodeNames": res["NodeNames"]})
        best = max(s["Score"] for s in scores)
        chosen = next(s["Host"] for s in scores if s["Score"] == best)
    st, b, _ = ext.post("bind", {"PodName": p["metadata"]["name"],
                                 "PodNamespace": p["metadata"]["namespace"],
                                 "PodUID": p["metadata"]["uid"], "Node": chosen})
    assert st == 200
    return (chosen if b["Error"] == "" else None), b


def gpu_used(ledger, node_name):
    n = next(n for n in ledger["nodes"] if n["name"] == node_name)
    return [g["usedMiB"] for g in n["gpus"]]


class Unit128MiB(unittest.TestCase):
    def test_sixteen_units_are_two_gib_and_eight_fill_a_card(self):
        pods = [pod(f"p{i}", units=16) for i in range(9)]
        ext = Extender([configmap("128MiB"), node("gpu-a", "share", gpus=1, units=128)] + pods)
        try:
            ledger = ext.ledger()
            self.assertEqual(ledger["unit"], "128MiB")
            self.assertEqual(ledger["unitMiB"], 128)
            for i in range(8):
                chosen, _ = cycle(ext, pods[i], ["gpu-a"])
                self.assertEqual(chosen, "gpu-a")
                self.assertEqual(gpu_used(ext.ledger(), "gpu-a"), [2048 * (i + 1)])
            gpu = ext.ledger()["nodes"][0]["gpus"][0]
            self.assertEqual(gpu["totalMiB"], 16384)
            self.assertEqual(len(gpu["pods"]), 8)
            self.assertEqual(gpu["pods"][0]["usedMiB"], 2048)
            before = ext.ledger()
            chosen, res = cycle(ext, pods[8], ["gpu-a"])
            self.assertIsNone(chosen)
            self.assertEqual(res["FailedNodes"],
                             {"gpu-a": "insufficient GPU memory on any single GPU"})
            # bind anyway (kube-scheduler would not): refused, nothing changes
            st, b, _ = ext.post("bind", {"PodName": "p8", "PodNamespace": "default",
                                         "PodUID": "uid-default-p8", "Node": "gpu-a"})
            self.assertEqual(st, 200)
            self.assertNotEqual(b["Error"], "")
            self.assertNotIn("%", b["Error"])
            self.assertEqual(ext.ledger(), before)
        finally:
            ext.close()


class MultiCard(unittest.TestCase):
    def setUp(self):
        self.ext = Extender([node("alpha", "share", gpus=4, units=64),
                             node("beta", "share", gpus=4, units=64),
                             pod("m8", units=8, count=2), pod("m9", units=9, count=2)])

    def tearDown(self):
        self.ext.close()

    def test_even_split_over_two_distinct_gpus(self):
        chosen, _ = cycle(self.ext, pod("m8", units=8, count=2), ["alpha", "beta"])
        self.assertIsNotNone(chosen)
        used = gpu_used(self.ext.ledger(), chosen)
        self.assertEqual(sorted(used, reverse=True), [4096, 4096, 0, 0])

    def test_uneven_split_is_unresolvable_everywhere(self):
        st, res, _ = self.ext.post("filter", {"Pod": pod("m9", units=9, count=2),
                                              "NodeNames": ["alpha", "beta"]})
        self.assertEqual(res["NodeNames"], [])
        self.assertEqual(res["FailedNodes"], {})
        reasons = res["FailedAndUnresolvableNodes"]
        self.assertEqual(set(reasons), {"alpha", "beta"})
        self.assertEqual(len(set(reasons.values())), 1)
        text = reasons["alpha"]
        self.assertIn("9", text)
        self.assertIn("2", text)
        self.assertNotIn("alpha", text)
        self.assertNotIn("beta", text)


class Binpack(unittest.TestCase):
    """GPUs with 12, 8, 4, 16 GiB free; a request of 8."""

    def cluster(self, placement):
        used = [4, 8, 12]  # GPU 3 is empty
        items = [node("n", "share", gpus=4, units=64, placement=placement), pod("want8", units=8)]
        for i, u in enumerate(used):
            items.append(bound_pod(f"run{i}", "n", {"0": {str(i): u}}))
        return Extender(items)

    def test_binpack_takes_the_fullest_gpu_that_fits(self):
        ext = self.cluster(None)
        try:
            self.assertEqual(gpu_used(ext.ledger(), "n"), [4096, 8192, 12288, 0])
            cycle(ext, pod("want8", units=8), ["n"])
            self.assertEqual(gpu_used(ext.ledger(), "n"), [4096, 16384, 12288, 0])
        finally:
            ext.close()

    def test_spread_takes_the_emptiest_gpu(self):
        ext = self.cluster("spread")
        try:
            cycle(ext, pod("want8", units=8), ["n"])
            self.assertEqual(gpu_used(ext.ledger(), "n"), [4096, 8192, 12288, 8192])
        finally:
            ext.close()

    def test_ties_go_to_the_lowest_index(self):
        ext = Extender([node("t", "share", gpus=3, units=48), pod("x", units=1)])
        try:
            cycle(ext, pod("x", units=1), ["t"])
            self.assertEqual(gpu_used(ext.ledger(), "t"), [1024, 0, 0])
        finally:
            ext.close()


class Cgpu(unittest.TestCase):
    def test_seventeenth_pod_refused_on_cgpu_accepted_on_share(self):
        pods = [pod(f"c{i}", units=1) for i in range(17)]
        ext = Extender([node("cg", "cgpu", gpus=1, units=64),
                        node("sh", "share", gpus=1, units=64)] + pods)
        try:
            for i in range(16):
                st, b, _ = ext.post("bind", {"PodName": f"c{i}", "PodNamespace": "default",
                                             "PodUID": f"uid-default-c{i}", "Node": "cg"})
                self.assertEqual(b["Error"], "", b)
            st, res, _ = ext.post("filter", {"Pod": pods[16], "NodeNames": ["cg", "sh"]})
            self.assertEqual(res["NodeNames"], ["sh"])
            self.assertEqual(res["FailedNodes"], {"cg": "GPU pod limit reached (cgpu)"})
            self.assertEqual(gpu_used(ext.ledger(), "cg"), [16 * 1024])
        finally:
            ext.close()


class Reasons(unittest.TestCase):
    def test_non_sharing_and_unknown_nodes(self):
        ext = Extender([node("plain", "default", gpus=2, units=32), node("nolabel"),
                        node("nocap", "share"), pod("p", units=1)])
        try:
            st, res, _ = ext.post("filter", {"Pod": pod("p", units=1),
                                             "NodeNames": ["plain", "nolabel", "nocap", "ghost"]})
            self.assertEqual(res["NodeNames"], [])
            self.assertEqual(res["FailedNodes"], {
                "plain": "node is not a GPU-sharing node",
                "nolabel": "node is not a GPU-sharing node",
                "nocap": "node is not a GPU-sharing node",
                "ghost": "node unknown to gpushare"})
        finally:
            ext.close()


class NodesForm(unittest.TestCase):
    def test_full_node_list_in_and_out(self):
        a, b = node("a", "share", gpus=1, units=16), node("b", "default")
        ext = Extender([a, b, pod("p", units=4)])
        try:
            body = {"Pod": pod("p", units=4), "Nodes": {"metadata": {}, "items": [a, b]},
                    "NodeNames": None}
            st, res, raw = ext.post("filter", body)
            self.assertIsNone(res["NodeNames"])
            self.assertEqual(res["Nodes"]["items"], [a])
            self.assertEqual(res["FailedNodes"], {"b": "node is not a GPU-sharing node"})
            self.assertEqual(res["Error"], "")
            st, scores, raw = ext.post("prioritize", body)
            self.assertEqual(st, 200)
            self.assertEqual([s["Host"] for s in scores], ["a", "b"])
            self.assertRegex(raw.decode(), r'"Score":\d+[,}]')
        finally:
            ext.close()


class Bind(unittest.TestCase):
    def setUp(self):
        self.ext = Extender([node("n", "share", gpus=2, units=32), pod("p", units=6),
                             node("m", "share", gpus=1, units=16)])

    def tearDown(self):
        self.ext.close()

    def bind(self, **kw):
        args = {"PodName": "p", "PodNamespace": "default", "PodUID": "uid-default-p", "Node": "n"}
        args.update(kw)
        return self.ext.post("bind", args)

    def test_repeat_is_a_no_op(self):
        self.assertEqual(self.bind()[1], {"Error": ""})
        first = self.ext.ledger()
        self.assertEqual(self.bind()[1], {"Error": ""})
        self.assertEqual(self.ext.ledger(), first)
        self.assertEqual(sum(gpu_used(first, "n")), 6144)

    def test_other_node_after_bind_is_refused(self):
        self.bind()
        before = self.ext.ledger()
        st, res, _ = self.bind(Node="m")
        self.assertNotEqual(res["Error"], "")
        self.assertEqual(self.ext.ledger(), before)

    def test_wrong_uid_vanished_pod_and_unknown_node(self):
        for kw in ({"PodUID": "not-the-uid"}, {"PodName": "ghost"}, {"Node": "ghost"}):
            st, res, _ = self.bind(**kw)
            self.assertEqual(st, 200)
            self.assertNotEqual(res["Error"], "", kw)
        self.assertEqual(sum(gpu_used(self.ext.ledger(), "n")), 0)


class BadInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ext = Extender([node("n", "share", gpus=1, units=16), pod("p", units=2)])
        cls.ext.post("bind", {"PodName": "p", "PodNamespace": "default",
                              "PodUID": "uid-default-p", "Node": "n"})
        cls.before = cls.ext.ledger()

    @classmethod
    def tearDownClass(cls):
        cls.ext.close()

    def tearDown(self):
        self.assertEqual(self.ext.ledger(), self.before)
        self.assertEqual(self.ext.get("/healthz")[0], 200)

    bodies = [b"", b"{", b"[]", b"null", b'{"Pod":5,"NodeNames":["n"]}',
              b'{"Pod":{"metadata":{"name":"x"}},"NodeNames":"n"}',
              b'{"Pod":{"metadata":{"name":"x"}}}',
              b'{"Pod":{"metadata":{"name":"x"},"spec":{"containers":[{"name":"c","resources":'
              b'{"limits":{"aliyun.com/gpu-mem":"-1"}}}]}},"NodeNames":["n"]}',
              b'{"Pod":{"metadata":{"name":"x"},"spec":{"containers":[{"name":"c","resources":'
              b'{"limits":{"aliyun.com/gpu-mem":"abc"}}}]}},"NodeNames":["n"]}',
              b'{"NodeNames":["n"]}', b'\xff\xfe garbage']

    def test_filter_answers_200_with_error(self):
        for body in self.bodies:
            st, raw = self.ext.request("POST", "/gpushare-scheduler/filter", body)
            self.assertEqual(st, 200, body)
            res = json.loads(raw)
            self.assertNotEqual(res["Error"], "", body)
            self.assertNotIn("%", res["Error"])

    def test_prioritize_answers_400(self):
        for body in self.bodies:
            st, raw = self.ext.request("POST", "/gpushare-scheduler/prioritize", body)
            self.assertEqual(st, 400, body)
            self.assertIn("Error", json.loads(raw))

    def test_bind_answers_200_with_error(self):
        for body in [b"", b"{", b'{"PodName":5}', b'{"PodName":"p","PodNamespace":"default"}',
                     b'{"PodName":"p","PodNamespace":"default","PodUID":7,"Node":"n"}']:
            st, raw = self.ext.request("POST", "/gpushare-scheduler/bind", body)
            self.assertEqual(st, 200, body)
            self.assertNotEqual(json.loads(raw)["Error"], "")

    def test_huge_body_is_413(self):
        big = b'{"Pod":{"metadata":{"name":"x","annotations":{"a":"' + b"x" * (20 << 20) + b'"}}}}'
        for verb in ("filter", "prioritize", "bind"):
            st, _ = self.ext.request("POST", "/gpushare-scheduler/" + verb, big)
            self.assertEqual(st, 413, verb)

    def test_huge_chunked_body_is_413(self):
        s = socket.create_connection(("127.0.0.1", self.ext.port))
        s.sendall(b"POST /gpushare-scheduler/filter HTTP/1.1\r\nHost: x\r\n"
                  b"Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n")
        chunk = b"x" * (1 << 20)
        try:
            for _ in range(20):
                s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            s.sendall(b"0\r\n\r\n")
            s.settimeout(10)
            head = s.recv(4096)
            self.assertTrue(head.startswith(b"HTTP/1.1 413"), head[:40])
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may cut a flood short; it must stay up (tearDown)
        finally:
            s.close()

    def test_unknown_path_and_wrong_method(self):
        self.assertEqual(self.ext.get("/nope")[0], 404)
        self.assertEqual(self.ext.get("/gpushare-scheduler/filter")[0], 405)
        self.assertEqual(self.ext.request("POST", "/debug/ledger", b"{}")[0], 405)
        self.assertEqual(self.ext.request("PUT", "/gpushare-scheduler/bind", b"{}")[0], 405)


class FragScoreNormalize(unittest.TestCase):
    """nodePolicy frag with fragScoreNormalize (issue 32): the prioritize
    answer's 0..10 spread over the request's nodes, byte for byte, against
    the same cluster without it. One GPU of 16 GiB free on a, c, e (two
    GPUs) and h (14), 4 on b, 2 on d (refused: the pod asks 3), 7 on f, 5
    on g; frag has seen requests of 5, 7 and 3 GiB."""

    NAMES = ["a", "b", "c", "d", "e", "f", "g", "h"]

    def answers(self, normalize):
        cm = configmap("1GiB")
        cm["data"].update(nodePolicy="frag", fragmentationAware="true")
        if normalize is not None:
            cm["data"]["fragScoreNormalize"] = normalize
        used = {"b": 12, "d": 14, "f": 9, "g": 11, "h": 2}
        items = [cm] + [node(n, "share", gpus=2 if n in "abce" else 1,
                             units=32 if n in "abce" else 16) for n in self.NAMES]
        items += [bound_pod(f"{n}1", n, {"0": {"0": u}}) for n, u in used.items()]
        items += [pod("p", units=3)] + [pod(f"q{u}", units=u) for u in (5, 7, 3)]
        ext = Extender(items)
        try:
            for u in (5, 7, 3):  # frag learns the requests it is asked about
                st, _, _ = ext.post("prioritize", {"Pod": pod(f"q{u}", units=u), "Nodes": None,
                                                   "NodeNames": ["a"]})
                self.assertEqual(st, 200)
            out = []
            for names in (self.NAMES, ["a", "c", "e"]):
                st, _, raw = ext.post("prioritize", {"Pod": pod("p", units=3), "Nodes": None,
                                                     "NodeNames": names})
                self.assertEqual(st, 200)
                out.append(raw.decode())
            return out
        finally:
            ext.close()

    @staticmethod
    def wire(scores):
        return "[" + ",".join('{"Host":"%s","Score":%d}' % hs for hs in scores) + "]"

    def test_scores_spread_over_the_request_nodes(self):
        # without the key: 0..100 rounded to 0..10 (a, c, e, h: fragmentation
        # unchanged, 50 → 5; d refused, 0)
        plain = self.answers("false")
        self.assertEqual(plain[0], self.wire(zip(self.NAMES, [5, 7, 5, 0, 5, 2, 4, 5])))
        self.assertEqual(plain[1], self.wire(zip("ace", [5, 5, 5])))
        # spread: b (the best) 10, f (the worst that fits) 0, the refused d 0,
        # the rest in between in the same order
        norm = self.answers("true")
        self.assertEqual(norm[0], self.wire(zip(self.NAMES, [7, 10, 7, 0, 7, 0, 4, 7])))
        # all equal: every node at the top
        self.assertEqual(norm[1], self.wire(zip("ace", [10, 10, 10])))
        # the default (docs/configuration.md): off
        self.assertEqual(self.answers(None), plain)


class Routes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ext = Extender([configmap("128MiB"), node("gpu-a", "share", gpus=2, units=256),
                            pod("p", units=16)])
        cls.ext.post("bind", {"PodName": "p", "PodNamespace": "default",
                              "PodUID": "uid-default-p", "Node": "gpu-a"})

    @classmethod
    def tearDownClass(cls):
        cls.ext.close()

    def test_health_ready_version(self):
        self.assertEqual(self.ext.get("/healthz")[0], 200)
        self.assertEqual(self.ext.get("/readyz")[0], 200)
        st, body = self.ext.get("/version")
        self.assertEqual(st, 200)
        self.assertTrue(body.startswith(b"gpushare-extender "))

    def test_metrics(self):
        self.ext.post("filter", {"Pod": pod("p", units=16), "NodeNames": ["ghost"]})
        # an uneven split: both nodes refused for it, counted under one code
        self.ext.post("filter", {"Pod": pod("q", units=9, count=2),
                                 "NodeNames": ["gpu-a", "ghost"]})
        st, body = self.ext.get("/metrics")
        text = body.decode()
        self.assertEqual(st, 200)
        for name in ("gpushare_request_duration_seconds_bucket{verb=\"bind\"",
                     "gpushare_requests_total{verb=\"bind\",result=\"ok\"} 1",
                     "gpushare_gpu_memory_used_mib{node=\"gpu-a\",gpu=\"0\"} 2048",
                     "gpushare_gpu_memory_total_mib{node=\"gpu-a\",gpu=\"1\"} 16384",
                     "gpushare_filter_rejections_total{reason=\"node_unknown\"} 1\n",
                     "gpushare_filter_rejections_total{reason=\"invalid_pod\"} 2\n",
                     "gpushare_gangs_waiting 0", "gpushare_leader 1"):
            self.assertIn(name, text)
        # bounded labels: no amount, job or node name in a reason
        for line in text.splitlines():
            if line.startswith("gpushare_filter_rejections_total{"):
                self.assertRegex(line, r'^gpushare_filter_rejections_total\{reason="[a-z_]+"\} \d+$')

    def test_ledger_shape(self):
        led = self.ext.ledger()
        self.assertEqual(list(led)[:3], ["unit", "unitMiB", "nodes"])
        n = led["nodes"][0]
        self.assertEqual(n["name"], "gpu-a")
        self.assertEqual(n["mode"], "share")
        self.assertEqual(n["placement"], "binpack")
        g = n["gpus"][0]
        self.assertEqual((g["index"], g["totalMiB"], g["usedMiB"], g["healthy"]),
                         (0, 16384, 2048, True))
        self.assertEqual(g["pods"], [{"namespace": "default", "name": "p", "uid": "uid-default-p",
                                      "container": 0, "usedMiB": 2048}])
        self.assertEqual(led["gangs"], [])

    def test_ledger_node_filter_and_unknown_node(self):
        self.assertEqual([n["name"] for n in self.ext.ledger("gpu-a")["nodes"]], ["gpu-a"])
        st, raw = self.ext.get("/debug/ledger?node=ghost")
        self.assertEqual(st, 404)
        self.assertIn("error", json.loads(raw))

    def test_inspect_aliyun_shape(self):
        st, raw = self.ext.get("/gpushare-scheduler/inspect")
        self.assertEqual(st, 200)
        n = json.loads(raw)["nodes"][0]
        self.assertEqual((n["name"], n["totalGPU"], n["usedGPU"]), ("gpu-a", 256, 16))
        self.assertEqual(n["devs"][0]["pods"][0]["usedGPU"], 16)
        st, raw = self.ext.get("/gpushare-scheduler/inspect/gpu-a")
        self.assertEqual(st, 200)
        self.assertEqual(self.ext.get("/gpushare-scheduler/inspect/ghost")[0], 404)


DGX1 = DGX1_LINKS


class Gangs(unittest.TestCase):
    def topo_nodes(self):
        ann = {"gpushare.io/topology": json.dumps({"links": DGX1})}
        return [node(f"topo-{c}", "topology", whole=8, annotations=ann) for c in "ab"]

    def member(self, job, i, replicas, gpus):
        return pod(f"{job}-{i}", whole=gpus,
                   labels={"gpu-topology": job, "gpu-topology-replica": str(replicas)})

    def test_two_replicas_bound_on_planned_nvlink_sets(self):
        members = [self.member("job", i, 2, 4) for i in range(2)]
        ext = Extender(self.topo_nodes() + members)
        try:
            chosen, _ = cycle(ext, members[0], ["topo-a", "topo-b"])
            self.assertIsNotNone(chosen)
            gangs = ext.ledger()["gangs"]
            self.assertEqual(len(gangs), 1)
            self.assertEqual((gangs[0]["job"], gangs[0]["replicas"], gangs[0]["placed"]),
                             ("default/job", 2, 1))
            self.assertIsNotNone(cycle(ext, members[1], ["topo-a", "topo-b"])[0])
            owned = {}
            for n in ext.ledger()["nodes"]:
                for g in n["gpus"]:
                    if g.get("owner"):
                        owned.setdefault(g["owner"]["name"], []).append(g["index"])
            self.assertEqual(sorted(owned), ["job-0", "job-1"])
            for gpus in owned.values():  # the DGX-1 all-NVLink quads
                self.assertIn(sorted(gpus), [[0, 1, 2, 3], [4, 5, 6, 7]])
            # whole GPUs are visible in the metrics: owned per GPU, 8 of 16
            text = ext.get("/metrics")[1].decode()
            series = re.findall(r'^gpushare_gpu_owned\{node="(topo-[ab])",gpu="(\d)"\} ([01])$', text, re.M)
            self.assertEqual(len(series), 16)
            self.assertEqual(sorted((n, int(g)) for n, g, v in series if v == "1"),
                             sorted((n["name"], g["index"]) for n in ext.ledger()["nodes"]
                                    for g in n["gpus"] if g.get("owner")))
        finally:
            ext.close()

    def test_three_replicas_that_cannot_fit_bind_nothing(self):
        members = [self.member("big", i, 3, 8) for i in range(3)]
        ext = Extender(self.topo_nodes() + members)
        try:
            chosen, res = cycle(ext, members[0], ["topo-a", "topo-b"])
            self.assertIsNone(chosen)
            reasons = set(res["FailedNodes"].values())
            self.assertEqual(len(reasons), 1)
            text = reasons.pop()
            self.assertIn("default/big", text)
            self.assertIn("2 of 3", text)
            self.assertEqual(res["NodeNames"], [])
            led = ext.ledger()
            self.assertEqual(led["gangs"], [])
            self.assertFalse(any(g.get("owner") for n in led["nodes"] for g in n["gpus"]))
        finally:
            ext.close()


class MemoryGangs(unittest.TestCase):
    """A job of memory-shared pods (issue 34, docs/gangs.md): the gang labels
    on aliyun.com/gpu-mem pods, all or nothing, over the real binary."""

    def member(self, i, gib=4):
        return pod(f"infer-{i}", units=gib,
                   labels={"gpu-topology": "infer", "gpu-topology-replica": "4"})

    def test_four_members_fill_one_gpu_or_none_is_placed(self):
        members = [self.member(i) for i in range(4)]
        blocker = bound_pod("blocker", "s", {"0": {"0": 4}})
        ext = Extender([node("s", "share", gpus=1, units=16), blocker] + members)
        try:
            chosen, res = cycle(ext, members[0], ["s"])
            self.assertIsNone(chosen)
            self.assertEqual(res["FailedNodes"], {"s": "gang default/infer: only 3 of 4 replicas "
                                                       "fit (4 units of GPU memory on 1 GPU each)"})
            self.assertEqual(ext.ledger()["gangs"], [])
            self.assertEqual([g["usedMiB"] for n in ext.ledger()["nodes"] for g in n["gpus"]], [4096])
        finally:
            ext.close()
        ext = Extender([node("s", "share", gpus=1, units=16)] + members)
        try:
            for m in members:
                self.assertEqual(cycle(ext, m, ["s"])[0], "s")
            led = ext.ledger()
            self.assertEqual([g["usedMiB"] for n in led["nodes"] for g in n["gpus"]], [16384])
            self.assertEqual([(g["job"], g["replicas"], g["placed"]) for g in led["gangs"]],
                             [("default/infer", 4, 4)])
        finally:
            ext.close()

    def test_the_preempt_verb_keeps_no_node_for_a_gang_member(self):
        """kube-scheduler would evict on one node for one member: for a gang
        the extender answers no node, nothing is evicted (docs/gangs.md
        "Preemption")."""
        low = bound_pod("low", "s", {"0": {"0": 16}})
        low["spec"]["priority"] = 0
        m = self.member(0)
        m["spec"]["priority"] = 1000
        ext = Extender([node("s", "share", gpus=1, units=16), low, m])
        try:
            body = {"Pod": m, "NodeNameToVictims": None,
                    "NodeNameToMetaVictims": {"s": {"Pods": [{"UID": "uid-default-low"}]}}}
            st, res, _ = ext.post("preempt", body)
            self.assertEqual((st, res), (200, {"NodeNameToMetaVictims": {}}))
            plain = pod("plain", units=4)
            plain["spec"]["priority"] = 1000
            body["Pod"] = plain
            st, res, _ = ext.post("preempt", body)
            self.assertEqual(list(res["NodeNameToMetaVictims"]), ["s"])  # not a gang: as before
        finally:
            ext.close()


class Preempt(unittest.TestCase):
    """The preempt verb (issue 14): victims chosen per GPU, a what-if."""

    @classmethod
    def setUpClass(cls):
        items = [node("n", "share", gpus=2, units=32), node("m", "share", gpus=1, units=16)]
        for name, gpu, gib in [("a6", 0, 6), ("a6b", 0, 6), ("a4", 0, 4),
                               ("b6", 1, 6), ("b6b", 1, 6), ("b4", 1, 4)]:
            p = bound_pod(name, "n", {"0": {str(gpu): gib}})
            p["spec"]["priority"] = 0
            items.append(p)
        hi = bound_pod("m-hi", "m", {"0": {"0": 16}})
        hi["spec"]["priority"] = 5000  # protects node m
        items.append(hi)
        cls.ext = Extender(items)
        cls.before = cls.ext.ledger()

    @classmethod
    def tearDownClass(cls):
        cls.ext.close()

    def tearDown(self):
        self.assertEqual(self.ext.ledger(), self.before)  # a what-if: nothing changes

    def preemptor(self, gib=10, priority=1000, count=None):
        p = pod("hi", units=gib, count=count)
        p["spec"]["priority"] = priority
        return p

    def test_victims_are_the_cheapest_set_on_one_gpu(self):
        # kube-scheduler proposed a spread set (4 GiB on GPU 0, 6 on GPU 1)
        # that frees no GPU: the answer is two pods of one GPU, 10 GiB
        body = {"Pod": self.preemptor(), "NodeNameToVictims": None,
                "NodeNameToMetaVictims": {"n": {"Pods": [{"UID": "uid-default-a4"},
                                                         {"UID": "uid-default-b6"}],
                                                "NumPDBViolations": 0}}}
        st, res, _ = self.ext.post("preempt", body)
        self.assertEqual(st, 200)
        self.assertEqual(list(res), ["NodeNameToMetaVictims"])
        got = sorted(p["UID"] for p in res["NodeNameToMetaVictims"]["n"]["Pods"])
        self.assertIn(got, [["uid-default-a4", "uid-default-a6"], ["uid-default-a4", "uid-default-a6b"],
                            ["uid-default-b4", "uid-default-b6"], ["uid-default-b4", "uid-default-b6b"]])
        self.assertEqual(res["NodeNameToMetaVictims"]["n"]["NumPDBViolations"], 0)

    def test_full_pod_form_and_a_proposal_that_works_is_kept(self):
        victims = [bound_pod(n, "n", {"0": {"1": 6}}) for n in ("b6", "b6b")]
        body = {"Pod": self.preemptor(), "NodeNameToMetaVictims": None,
                "NodeNameToVictims": {"n": {"Pods": victims, "NumPDBViolations": 1}}}
        st, res, _ = self.ext.post("preempt", body)
        self.assertEqual(st, 200)
        # NumPDBViolations is gpushare's own count over its answer (no
        # budget exists here), not kube-scheduler's for its proposal
        self.assertEqual(res, {"NodeNameToMetaVictims": {"n": {
            "Pods": [{"UID": "uid-default-b6"}, {"UID": "uid-default-b6b"}], "NumPDBViolations": 0}}})

    def test_nodes_without_a_set_are_dropped(self):
        # m: its only pod has a higher priority; zz: unknown; n at equal priority: nothing
        body = {"Pod": self.preemptor(priority=1000), "NodeNameToVictims": None,
                "NodeNameToMetaVictims": {"m": {"Pods": [{"UID": "uid-default-m-hi"}]},
                                          "zz": {"Pods": [{"UID": "x"}]}}}
        st, res, _ = self.ext.post("preempt", body)
        self.assertEqual((st, res), (200, {"NodeNameToMetaVictims": {}}))
        body["Pod"] = self.preemptor(priority=0)
        body["NodeNameToMetaVictims"] = {"n": {"Pods": [{"UID": "uid-default-a4"}]}}
        self.assertEqual(self.ext.post("preempt", body)[1], {"NodeNameToMetaVictims": {}})
        body["NodeNameToMetaVictims"] = None
        self.assertEqual(self.ext.post("preempt", body)[1], {"NodeNameToMetaVictims": {}})

    def test_a_victim_named_twice_is_answered_once(self):
        """Found by fuzz_preempt: a UID kube-scheduler's proposal names twice
        (a pod gpushare does not hold, kept for kube-scheduler's own
        resources) came back twice."""
        body = {"Pod": self.preemptor(), "NodeNameToVictims": None,
                "NodeNameToMetaVictims": {"n": {"Pods": [{"UID": "cpu-pod"}, {"UID": "cpu-pod"},
                                                         {"UID": "uid-default-a4"}]}}}
        st, res, _ = self.ext.post("preempt", body)
        self.assertEqual(st, 200)
        got = [p["UID"] for p in res["NodeNameToMetaVictims"]["n"]["Pods"]]
        self.assertEqual(len(got), len(set(got)), got)
        self.assertEqual(got.count("cpu-pod"), 1)

    def test_multi_card_preemptor_frees_two_gpus(self):
        body = {"Pod": self.preemptor(gib=20, count=2), "NodeNameToVictims": None,
                "NodeNameToMetaVictims": {"n": {"Pods": [{"UID": "uid-default-a6"}]}}}
        st, res, _ = self.ext.post("preempt", body)
        self.assertEqual(st, 200)
        got = sorted(p["UID"] for p in res["NodeNameToMetaVictims"]["n"]["Pods"])
        # 10 GiB on each GPU: 6 + 4 on both
        self.assertEqual(len(got), 4)
        self.assertEqual(sum(1 for u in got if u.startswith("uid-default-a")), 2)

    def test_bad_bodies_are_400_and_change_nothing(self):
        generic = [b for b in BadInput.bodies if b"NodeNames\":\"n" not in b and
                   b != b'{"Pod":{"metadata":{"name":"x"}}}']
        for body in generic + [
                b'{"Pod":{"metadata":{"name":"x"}},"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":5}]}}}',
                b'{"Pod":{"metadata":{"name":"x"}},"NodeNameToMetaVictims":{"n":{"Pods":"x"}}}',
                b'{"Pod":{"metadata":{"name":"x"}},"NodeNameToMetaVictims":{"n":[]}}',
                b'{"Pod":{"metadata":{"name":"x"}},"NodeNameToMetaVictims":{},"NodeNameToVictims":{}}',
                b'{"Pod":{"metadata":{"name":"x"}},"NodeNameToVictims":{"n":{"Pods":[{}]}}}',
                b'{"Pod":{"metadata":{"name":"x"}},"NodeNameToMetaVictims":{"n":{"Pods":[],'
                b'"NumPDBViolations":-1}}}']:
            st, raw = self.ext.request("POST", "/gpushare-scheduler/preempt", body)
            self.assertEqual(st, 400, body)
            self.assertNotEqual(json.loads(raw)["Error"], "", body)
        self.assertEqual(self.ext.request("GET", "/gpushare-scheduler/preempt", b"")[0], 405)


class WhatIf(unittest.TestCase):
    """Issue 16 item 7: the demo as a what-if tool. A pod the file does not
    hold, sent in a filter request as a driver playing kube-scheduler sends
    it, is taken as created (Pending): prioritize and bind then work for it;
    and a multi-document YAML file is read whole."""

    def test_a_pod_the_demo_does_not_hold_can_be_bound(self):
        ext = Extender([node("gpu-a", "share", gpus=2, units=32)])
        try:
            p = pod("what-if", units=10)
            chosen, b = cycle(ext, p, ["gpu-a"])
            self.assertEqual((chosen, b), ("gpu-a", {"Error": ""}))
            self.assertEqual(gpu_used(ext.ledger(), "gpu-a"), [10 * 1024, 0])
            self.assertIn('msg="demo: pod taken as created (Pending)" pod=default/what-if',
                          ext.logtext())
            # bound now: a second bind of the same pod is the same answer, no double charge
            st, again, _ = ext.post("bind", {"PodName": "what-if", "PodNamespace": "default",
                                             "PodUID": p["metadata"]["uid"], "Node": "gpu-a"})
            self.assertEqual(again, {"Error": ""})
            self.assertEqual(gpu_used(ext.ledger(), "gpu-a"), [10 * 1024, 0])
            # a pod never offered is still unknown
            st, res, _ = ext.post("bind", {"PodName": "never", "PodNamespace": "default",
                                           "PodUID": "u", "Node": "gpu-a"})
            self.assertIn("not found", res["Error"])
        finally:
            ext.close()

    def test_every_document_of_a_yaml_file_is_read(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "cluster.yaml")
            bound = pod("bound-b", units=4)
            bound["spec"]["nodeName"] = "gpu-b"
            bound["metadata"]["annotations"] = {"ALIYUN_COM_GPU_MEM_IDX": "0",
                                                "ALIYUN_COM_GPU_MEM_POD": "4"}
            docs = [{"apiVersion": "v1", "kind": "List",
                     "items": [node("gpu-a", "share", gpus=1, units=16)]},
                    node("gpu-b", "share", gpus=1, units=16), None, bound]
            with open(path, "w") as f:
                f.write("\n---\n".join(yaml.safe_dump(x) if x else "" for x in docs))
            port = free_port()
            proc = subprocess.Popen([EXTENDER, "--demo", path, "--listen", f"127.0.0.1:{port}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_until(lambda: http_status(f"http://127.0.0.1:{port}", "/readyz")[0] == 200,
                           20, "the demo extender")
                led = json.loads(http_status(f"http://127.0.0.1:{port}", "/debug/ledger")[1])
                self.assertEqual([n["name"] for n in led["nodes"]], ["gpu-a", "gpu-b"])
                self.assertEqual(gpu_used(led, "gpu-b"), [4 * 1024])
            finally:
                proc.terminate()
                proc.wait(timeout=20)
            # a document that is no object: refused, naming it
            with open(path, "w") as f:
                f.write(yaml.safe_dump(node("gpu-a", "share", gpus=1, units=16)) + "---\n- 1\n")
            r = subprocess.run([EXTENDER, "--demo", path, "--listen", "127.0.0.1:0"],
                               capture_output=True, text=True, timeout=20)
            self.assertEqual(r.returncode, 2)
            self.assertIn("document 2: expected a Kubernetes object", r.stderr)


class Unhealthy(unittest.TestCase):
    def test_gpus_listed_unhealthy_are_never_chosen(self):
        cm = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "unhealthy-gpu-n", "namespace": "kube-system"},
              "data": {"gpus": "0,2"}}
        ext = Extender([node("n", "share", gpus=3, units=48), cm, pod("a", units=4),
                        pod("b", units=4)])
        try:
            gpus = ext.ledger()["nodes"][0]["gpus"]
            self.assertEqual([g["healthy"] for g in gpus], [False, True, False])
            for name in ("a", "b"):
                self.assertIsNotNone(cycle(ext, pod(name, units=4), ["n"])[0])
            self.assertEqual(gpu_used(ext.ledger(), "n"), [0, 8192, 0])
        finally:
            ext.close()


class Flags(unittest.TestCase):
    def run_ext(self, *args):
        return subprocess.run([EXTENDER, *args], capture_output=True, text=True, timeout=20)

    def test_bad_flags_exit_2_with_one_line(self):
        for args in (["--bogus"], ["--demo", "/nonexistent/cluster.yaml"],
                     ["--gpu-memory-unit", "2GiB", "--demo", "/dev/null"], ["--listen"]):
            r = self.run_ext(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_invalid_configmap_value_names_the_key(self):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump({"kind": "List", "items": [configmap("2GiB")]}, f)
            f.flush()
            r = self.run_ext("--demo", f.name, "--listen", "127.0.0.1:0")
        self.assertEqual(r.returncode, 2)
        self.assertIn("gpuMemoryUnit", r.stderr)
        self.assertIn("1GiB", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_help_and_version(self):
        r = self.run_ext("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--gpu-memory-unit", r.stdout)
        r = self.run_ext("--version")
        self.assertEqual(r.returncode, 0)
        self.assertTrue(r.stdout.startswith("gpushare-extender "))

    def test_unit_override_flag(self):
        ext = Extender([configmap("1GiB"), node("a", "share", gpus=1, units=128)],
                       args=["--gpu-memory-unit", "128Mi"])
        try:
            self.assertEqual(ext.ledger()["unit"], "128MiB")
        finally:
            ext.close()


if __name__ == "__main__":
    unittest.main()
