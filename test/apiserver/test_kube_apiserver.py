#!/usr/bin/env python3
"""Self-tests of the test kube-apiserver: wire format checked against real captures.

Run: python3 -m unittest -v test_kube_apiserver   (from test/apiserver)
"""

import gzip
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import kube_apiserver  # noqa: E402
from kube_apiserver import FakeApiServer  # noqa: E402

SERVER_PY = os.path.join(HERE, "kube_apiserver.py")


def find_fixtures():
    """reference/kube-fixtures: $GS_SHARED_DIR, else a 'shared' dir next to the repo or above it."""
    cands = []
    if os.environ.get("GS_SHARED_DIR"):
        cands.append(os.environ["GS_SHARED_DIR"])
    start = os.environ.get("GS_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
    p = os.path.abspath(start)
    cands.append(os.path.join(p, "test", "data"))  # the vendored copy
    for _ in range(5):
        cands.append(os.path.join(p, "shared"))
        cands.append(os.path.join(os.path.dirname(p), "shared"))
        p = os.path.dirname(p)
    for c in cands:
        d = os.path.join(c, "reference", "kube-fixtures")
        if os.path.isdir(d):
            return d
    return None


FIXTURES = find_fixtures()


def fixture(name):
    if FIXTURES is None:
        raise unittest.SkipTest("reference/kube-fixtures not found (set GS_SHARED_DIR)")
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


def pod(name, ns="default", node=None, labels=None, annotations=None, mem="4", phase=None):
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": ns},
         "spec": {"containers": [{"name": "main", "image": "img:1",
                                  "resources": {"limits": {"aliyun.com/gpu-mem": mem}}}]}}
    if labels:
        p["metadata"]["labels"] = labels
    if annotations:
        p["metadata"]["annotations"] = annotations
    if node:
        p["spec"]["nodeName"] = node
    if phase:
        p["status"] = {"phase": phase}
    return p


def node(name, mem="32", count="2", labels=None):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels or {"ack.node.gpu.schedule": "share"}},
            "status": {"capacity": {"aliyun.com/gpu-mem": mem, "aliyun.com/gpu-count": count},
                       "allocatable": {"aliyun.com/gpu-mem": mem, "aliyun.com/gpu-count": count}}}


def shape(v):
    """Keys and JSON types, recursively (values ignored)."""
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items()}
    if isinstance(v, list):
        return [shape(x) for x in v[:1]]
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if v is None:
        return "null"
    return "string"


class Client:
    """A small keep-alive JSON client (one connection)."""

    def __init__(self, srv, token=None, ctx=None):
        self.srv = srv
        self.token = token
        self.ctx = ctx
        self.conn = None

    def _connect(self):
        if self.conn is None:
            if self.srv.scheme == "https":
                self.conn = http.client.HTTPSConnection("127.0.0.1", self.srv.port, timeout=15, context=self.ctx)
            else:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=15)
        return self.conn

    def req(self, method, path, body=None, ctype="application/json", headers=None, raw=None):
        h = {"Accept": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        data = None
        if raw is not None:
            data = raw
        elif body is not None:
            data = json.dumps(body).encode()
        if data is not None and ctype:
            h["Content-Type"] = ctype
        h.update(headers or {})
        for attempt in range(2):
            c = self._connect()
            try:
                c.request(method, path, body=data, headers=h)
                r = c.getresponse()
                payload = r.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()
                if attempt:
                    raise
        if r.getheader("Content-Encoding") == "gzip":
            payload = gzip.decompress(payload)
        try:
            obj = json.loads(payload) if payload else None
        except ValueError:
            obj = payload
        self.last = r
        return r.status, obj

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class RawWatch:
    """Reads a watch stream from a plain socket, keeping the chunked framing."""

    def __init__(self, srv, path, token=None):
        self.sock = socket.create_connection(("127.0.0.1", srv.port), timeout=15)
        req = "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n" % path
        if token:
            req += "Authorization: Bearer %s\r\n" % token
        self.sock.sendall((req + "\r\n").encode())
        self.buf = b""
        self.eof = False
        head = self._read_until(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status_line = lines[0]
        self.headers = [tuple(x.split(": ", 1)) for x in lines[1:] if x]
        self.chunks = []

    def _fill(self):
        d = self.sock.recv(65536)
        if not d:
            self.eof = True
            raise EOFError("connection closed")
        self.buf += d

    def _read_until(self, sep):
        while sep not in self.buf:
            self._fill()
        i = self.buf.index(sep)
        out, self.buf = self.buf[:i], self.buf[i + len(sep):]
        return out

    def _read_n(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def next_chunk(self):
        """The next chunk's (size line, data); data is b'' for the final chunk."""
        size_line = self._read_until(b"\r\n")
        size = int(size_line, 16)
        data = self._read_n(size)
        trailer = self._read_n(2)
        assert trailer == b"\r\n", trailer
        self.chunks.append((size_line, data))
        return size_line, data

    def next_event(self):
        _, data = self.next_chunk()
        if data == b"":
            return None
        return json.loads(data)

    def close(self):
        self.sock.close()


class Base(unittest.TestCase):
    server_kwargs = {}

    def setUp(self):
        self.srv = FakeApiServer(**self.server_kwargs).start()
        self.c = Client(self.srv)

    def tearDown(self):
        self.c.close()
        self.srv.stop()

    def assertStatus(self, obj, code, reason):
        self.assertEqual(obj["kind"], "Status")
        self.assertEqual(obj["apiVersion"], "v1")
        self.assertEqual(obj["metadata"], {})
        self.assertEqual(obj["status"], "Failure")
        self.assertEqual(obj["code"], code)
        if reason is None:
            self.assertNotIn("reason", obj)
        else:
            self.assertEqual(obj["reason"], reason)


# ---------------------------------------------------------------------------
# LIST
# ---------------------------------------------------------------------------


class TestList(Base):
    def test_list_shape_matches_fixture(self):
        raw = fixture("list-response-raw-http.txt")
        fhead, fbody = raw.split(b"\r\n\r\n", 1)
        fixture_list = json.loads(fbody)
        self.srv.add(pod("foobar"))
        st, got = self.c.req("GET", "/api/v1/namespaces/default/pods")
        self.assertEqual(st, 200)
        # same top-level keys in the same order, same metadata shape
        self.assertEqual(list(got), list(fixture_list))
        self.assertEqual(shape(got["metadata"]), shape(fixture_list["metadata"]))
        self.assertEqual(got["kind"], "PodList")
        self.assertEqual(got["apiVersion"], "v1")
        item, fitem = got["items"][0], fixture_list["items"][0]
        self.assertNotIn("kind", item)
        self.assertNotIn("apiVersion", item)
        self.assertNotIn("kind", fitem)
        # the fixture's item metadata keys, in its order, are a prefix-ordered subset of ours
        self.assertEqual([k for k in item["metadata"] if k in fitem["metadata"]], list(fitem["metadata"]))
        for k, v in fitem["metadata"].items():
            self.assertEqual(type(item["metadata"][k]), type(v), k)
        self.assertRegex(item["metadata"]["creationTimestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertTrue(item["metadata"]["resourceVersion"].isdigit())
        # headers: the fixture's header names, in its order; body ends with one newline
        fnames = [l.split(b":")[0].decode() for l in fhead.split(b"\r\n")[1:]]
        names = [k for k, _ in self.c.last.getheaders()]
        self.assertEqual(names, fnames)
        self.assertEqual(self.c.last.getheader("Content-Type"), "application/json")
        self.assertEqual(self.c.last.getheader("Cache-Control"), "no-cache, private")

    def test_list_bytes_end_in_newline_and_content_length_exact(self):
        self.srv.add(pod("a"))
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=5)
        s.sendall(b"GET /api/v1/pods HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            data += s.recv(65536)
        head, body = data.split(b"\r\n\r\n", 1)
        n = int(re.search(rb"Content-Length: (\d+)", head).group(1))
        while len(body) < n:
            body += s.recv(65536)
        self.assertEqual(len(body), n)
        self.assertTrue(body.endswith(b"}\n"))
        self.assertTrue(head.startswith(b"HTTP/1.1 200 OK\r\n"))
        s.close()

    def test_global_resource_version_counter(self):
        st, l0 = self.c.req("GET", "/api/v1/nodes")
        rv0 = int(l0["metadata"]["resourceVersion"])
        self.srv.add(node("n1"))
        self.srv.add(pod("p1"))
        st, l1 = self.c.req("GET", "/api/v1/nodes")
        self.assertEqual(int(l1["metadata"]["resourceVersion"]), rv0 + 2)
        self.assertIsInstance(l1["metadata"]["resourceVersion"], str)
        self.assertEqual(l1["items"][0]["metadata"]["resourceVersion"], str(rv0 + 1))

    def test_pagination(self):
        for i in range(7):
            self.srv.add(pod("p%d" % i))
        self.srv.add(pod("other", ns="kube-system"))
        names, rvs, token, pages = [], set(), None, 0
        while True:
            path = "/api/v1/pods?limit=3" + ("&continue=" + token if token else "")
            st, l = self.c.req("GET", path)
            self.assertEqual(st, 200, l)
            pages += 1
            rvs.add(l["metadata"]["resourceVersion"])
            names += [i["metadata"]["namespace"] + "/" + i["metadata"]["name"] for i in l["items"]]
            for i in l["items"]:
                self.assertNotIn("kind", i)
            token = l["metadata"].get("continue")
            if pages == 1:
                self.assertEqual(l["metadata"]["remainingItemCount"], 5)
                # a write between pages does not show up: one snapshot
                self.srv.add(pod("zz-late"))
            if not token:
                self.assertNotIn("remainingItemCount", l["metadata"])
                break
        self.assertEqual(pages, 3)
        self.assertEqual(len(rvs), 1)
        self.assertEqual(names, ["default/p%d" % i for i in range(7)] + ["kube-system/other"])

    def test_pagination_namespaced_with_selector(self):
        for i in range(6):
            self.srv.add(pod("p%d" % i, labels={"app": "a" if i % 2 else "b"}))
        got, token = [], None
        for _ in range(10):
            st, l = self.c.req("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Da&limit=2"
                               + ("&continue=" + token if token else ""))
            self.assertEqual(st, 200)
            self.assertNotIn("remainingItemCount", l["metadata"])
            got += [i["metadata"]["name"] for i in l["items"]]
            token = l["metadata"].get("continue")
            if not token:
                break
        self.assertEqual(got, ["p1", "p3", "p5"])

    def test_list_page_bytes_same_on_both_paths(self):
        # A page of the current state is served from the store's sorted keys
        # and cached item JSON; a page of an older snapshot by copying and
        # sorting. The bytes must not depend on which path served them.
        for i in range(5):
            self.srv.add(pod("p%d" % i, labels={"app": "a" if i % 2 else "b"},
                             annotations={"x": "<&>"}))
            self.srv.add(pod("q%d" % i, ns="kube-system"))

        def raw(path):
            c = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=15)
            c.request("GET", path, headers={"Accept": "application/json"})
            r = c.getresponse()
            body = r.read()
            c.close()
            self.assertEqual(r.status, 200, body)
            return body

        for base in ("/api/v1/pods?limit=3", "/api/v1/namespaces/default/pods?limit=2",
                     "/api/v1/namespaces/default/pods?labelSelector=app%3Da&limit=1",
                     "/api/v1/namespaces/kube-system/pods?limit=4"):
            first = raw(base)
            token = json.loads(first)["metadata"]["continue"]
            fast = raw(base + "&continue=" + token)
            self.srv.add(node("n-%d" % len(base)))  # the store moves on: an older snapshot
            slow = raw(base + "&continue=" + token)
            self.assertEqual(fast, slow, base)
            if "kube-system" not in base:  # Go's escaping of <, &, > on the page
                self.assertIn(b'"x":"\\u003c\\u0026\\u003e"', fast)

    def test_continue_with_resource_version_is_400(self):
        for i in range(3):
            self.srv.add(pod("p%d" % i))
        st, l = self.c.req("GET", "/api/v1/pods?limit=1")
        st, err = self.c.req("GET", "/api/v1/pods?limit=1&resourceVersion=5&continue=" + l["metadata"]["continue"])
        self.assertEqual(st, 400)
        self.assertStatus(err, 400, "BadRequest")
        self.assertEqual(err["message"], "specifying resource version is not allowed when using continue")

    def test_continue_expired_410(self):
        for i in range(3):
            self.srv.add(pod("p%d" % i))
        st, l = self.c.req("GET", "/api/v1/pods?limit=1")
        self.srv.add(pod("p9"))
        self.srv.compact()
        st, err = self.c.req("GET", "/api/v1/pods?limit=1&continue=" + l["metadata"]["continue"])
        self.assertEqual(st, 410)
        self.assertEqual((err["kind"], err["status"], err["reason"], err["code"]), ("Status", "Failure", "Expired", 410))
        self.assertTrue(err["message"].startswith("The provided continue parameter is too old"))
        self.assertIn("continue", err["metadata"])
        # the inconsistent continuation token works
        st, l2 = self.c.req("GET", "/api/v1/pods?continue=" + err["metadata"]["continue"])
        self.assertEqual(st, 200)
        self.assertEqual([i["metadata"]["name"] for i in l2["items"]], ["p1", "p2", "p9"])

    def test_label_selectors(self):
        self.srv.add(pod("a", labels={"env": "prod", "tier": "web"}))
        self.srv.add(pod("b", labels={"env": "dev", "tier": "web"}))
        self.srv.add(pod("c", labels={"env": "qa"}))
        self.srv.add(pod("d"))
        cases = {
            "env=prod": ["a"], "env==prod": ["a"], "env!=prod": ["b", "c", "d"],
            "env in (prod, dev)": ["a", "b"], "env notin (prod,dev)": ["c", "d"],
            "tier": ["a", "b"], "!tier": ["c", "d"], "env,!tier": ["c"], "tier=web,env=dev": ["b"],
        }
        for sel, want in cases.items():
            st, l = self.c.req("GET", "/api/v1/pods?labelSelector=" + urllib.request.quote(sel))
            self.assertEqual(st, 200, (sel, l))
            self.assertEqual([i["metadata"]["name"] for i in l["items"]], want, sel)
        st, err = self.c.req("GET", "/api/v1/pods?labelSelector=" + urllib.request.quote("a b c"))
        self.assertEqual(st, 400)
        self.assertStatus(err, 400, "BadRequest")

    def test_field_selectors(self):
        self.srv.add(node("n1"))
        self.srv.add(pod("bound", node="n1"))
        self.srv.add(pod("pending"))
        self.srv.add(pod("done", node="n1"))
        self.srv.set_pod_phase("default", "done", "Succeeded")
        cases = {
            "spec.nodeName=n1": ["bound", "done"], "spec.nodeName=": ["pending"],
            "spec.nodeName!=": ["bound", "done"],
            "status.phase!=Succeeded,status.phase!=Failed": ["bound", "pending"],
            "metadata.name=pending": ["pending"], "metadata.namespace=default": ["bound", "done", "pending"],
            "spec.host=n1": ["bound", "done"],
        }
        for sel, want in cases.items():
            st, l = self.c.req("GET", "/api/v1/pods?fieldSelector=" + urllib.request.quote(sel))
            self.assertEqual(st, 200, (sel, l))
            self.assertEqual([i["metadata"]["name"] for i in l["items"]], want, sel)
        st, err = self.c.req("GET", "/api/v1/pods?fieldSelector=" + urllib.request.quote("spec.foo=bar"))
        self.assertEqual(st, 400)
        self.assertStatus(err, 400, "BadRequest")
        self.assertEqual(err["message"], "field label not supported: spec.foo")
        st, err = self.c.req("GET", "/api/v1/nodes?fieldSelector=spec.nodeName%3Dx")
        self.assertEqual(err["message"], "field label not supported: spec.nodeName")
        st, l = self.c.req("GET", "/api/v1/nodes?fieldSelector=metadata.name%3Dn1")
        self.assertEqual([i["metadata"]["name"] for i in l["items"]], ["n1"])

    def test_resource_version_semantics(self):
        self.srv.add(pod("a"))
        st, l = self.c.req("GET", "/api/v1/pods")
        rv = l["metadata"]["resourceVersion"]
        self.srv.add(pod("b"))
        # NotOlderThan (no limit): current state
        st, l2 = self.c.req("GET", "/api/v1/pods?resourceVersion=" + rv)
        self.assertEqual(len(l2["items"]), 2)
        # Exact: the state at rv
        st, l3 = self.c.req("GET", "/api/v1/pods?resourceVersion=%s&resourceVersionMatch=Exact" % rv)
        self.assertEqual(st, 200, l3)
        self.assertEqual([i["metadata"]["name"] for i in l3["items"]], ["a"])
        self.assertEqual(l3["metadata"]["resourceVersion"], rv)
        # limit + rv without match = Exact
        st, l4 = self.c.req("GET", "/api/v1/pods?resourceVersion=%s&limit=10" % rv)
        self.assertEqual([i["metadata"]["name"] for i in l4["items"]], ["a"])
        # invalid combinations: 422 on ListOptions
        st, err = self.c.req("GET", "/api/v1/pods?resourceVersionMatch=NotOlderThan")
        self.assertEqual(st, 422)
        self.assertStatus(err, 422, "Invalid")
        self.assertEqual(err["details"]["kind"], "ListOptions")
        self.assertEqual(err["details"]["group"], "meta.k8s.io")
        st, err = self.c.req("GET", "/api/v1/pods?resourceVersion=0&resourceVersionMatch=Exact")
        self.assertEqual(st, 422)
        # compacted Exact: 410
        self.srv.compact()
        st, err = self.c.req("GET", "/api/v1/pods?resourceVersion=%s&resourceVersionMatch=Exact" % rv)
        self.assertEqual(st, 410)
        self.assertStatus(err, 410, "Expired")

    def test_too_large_resource_version_504(self):
        orig = kube_apiserver.TOO_LARGE_RV_WAIT
        kube_apiserver.TOO_LARGE_RV_WAIT = 0.2
        try:
            st, err = self.c.req("GET", "/api/v1/pods?resourceVersion=99999999")
        finally:
            kube_apiserver.TOO_LARGE_RV_WAIT = orig
        self.assertEqual(st, 504)
        self.assertStatus(err, 504, "Timeout")
        self.assertTrue(err["message"].startswith("Timeout: Too large resource version: 99999999, current: "))
        self.assertEqual(err["details"]["causes"][0]["reason"], "ResourceVersionTooLarge")
        self.assertEqual(self.c.last.getheader("Retry-After"), "1")

    def test_all_namespaces_configmaps_and_leases(self):
        self.srv.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1", "namespace": "a"},
                      "data": {"k": "v"}})
        self.srv.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c2", "namespace": "b"}})
        st, l = self.c.req("GET", "/api/v1/configmaps")
        self.assertEqual(l["kind"], "ConfigMapList")
        self.assertEqual([i["metadata"]["name"] for i in l["items"]], ["c1", "c2"])
        st, l = self.c.req("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases")
        self.assertEqual((st, l["kind"], l["apiVersion"], l["items"]), (200, "LeaseList", "coordination.k8s.io/v1", []))


# ---------------------------------------------------------------------------
# WATCH
# ---------------------------------------------------------------------------


class TestWatch(Base):
    server_kwargs = {"bookmark_interval": 0.5}

    def test_watch_framing_matches_fixture(self):
        raw = fixture("watch-response-raw-http.txt")
        fhead, fbody = raw.split(b"\r\n\r\n", 1)
        decoded = [json.loads(l) for l in fixture("watch-events-decoded.ndjson").splitlines() if l.strip()]
        self.srv.add(pod("foobar"))
        w = RawWatch(self.srv, "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=1")
        self.assertEqual(w.status_line, "HTTP/1.1 200 OK")
        fnames = [l.split(b":")[0].decode() for l in fhead.split(b"\r\n")[1:]]
        self.assertEqual([k for k, _ in w.headers], fnames)
        self.assertIn(("Transfer-Encoding", "chunked"), w.headers)
        self.assertIn(("Content-Type", "application/json"), w.headers)
        ev = w.next_event()
        size_line, data = w.chunks[-1]
        # one event per chunk, lowercase hex size, JSON ending in exactly one newline
        self.assertRegex(size_line.decode(), r"^[0-9a-f]+$")
        self.assertEqual(int(size_line, 16), len(data))
        self.assertTrue(data.endswith(b"}\n") and not data.endswith(b"\n\n"))
        self.assertEqual(data.count(b"\n"), 1)
        self.assertEqual(list(ev), list(decoded[0]))
        self.assertEqual(ev["type"], "ADDED")
        self.assertEqual(list(ev["object"])[:3], list(decoded[0]["object"]))
        self.assertEqual([k for k in ev["object"]["metadata"] if k in decoded[0]["object"]["metadata"]],
                         list(decoded[0]["object"]["metadata"]))
        self.assertEqual(ev["object"]["kind"], "Pod")
        self.assertEqual(ev["object"]["apiVersion"], "v1")
        # the stream ends cleanly at timeoutSeconds with the zero chunk ...
        self.assertIsNone(w.next_event())
        # ... exactly like the fixture's end, and the connection stays usable (keep-alive)
        self.assertTrue(raw.endswith(b"\r\n0\r\n\r\n"))
        w.sock.sendall(b"GET /api/v1/pods HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertTrue(w._read_until(b"\r\n").startswith(b"HTTP/1.1 200"))
        w.close()

    def test_watch_bookmark_shape_like_fixture(self):
        decoded = [json.loads(l) for l in fixture("watch-events-decoded.ndjson").splitlines() if l.strip()]
        fbm = decoded[1]
        self.srv.add(pod("a"))
        st, l = self.c.req("GET", "/api/v1/pods")
        w = RawWatch(self.srv, "/api/v1/pods?watch=1&allowWatchBookmarks=true&sendInitialEvents=true"
                               "&resourceVersionMatch=NotOlderThan&timeoutSeconds=5")
        ev = w.next_event()
        self.assertEqual(ev["type"], "ADDED")
        bm = w.next_event()
        self.assertEqual(bm["type"], "BOOKMARK")
        self.assertEqual(list(bm), list(fbm))
        self.assertEqual(bm["object"]["metadata"], {"resourceVersion": l["metadata"]["resourceVersion"],
                                                   "annotations": {"k8s.io/initial-events-end": "true"}})
        self.assertEqual(list(bm["object"]["metadata"]), list(fbm["object"]["metadata"]))
        # periodic bookmarks carry only the RV
        bm2 = w.next_event()
        self.assertEqual(bm2["type"], "BOOKMARK")
        self.assertEqual(bm2["object"]["metadata"], {"resourceVersion": l["metadata"]["resourceVersion"]})
        self.assertEqual(bm2["object"]["kind"], "Pod")
        w.close()

    def test_watch_from_rv_and_live_events(self):
        self.srv.add(pod("old"))
        st, l = self.c.req("GET", "/api/v1/pods")
        rv = l["metadata"]["resourceVersion"]
        w = RawWatch(self.srv, "/api/v1/pods?watch=1&resourceVersion=%s&timeoutSeconds=10" % rv)
        self.assertTrue(self.srv.wait_for_watches("pods", 1))
        self.srv.add(pod("new"))
        ev = w.next_event()
        self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("ADDED", "new"))
        self.assertEqual(int(ev["object"]["metadata"]["resourceVersion"]), int(rv) + 1)
        self.srv.set_pod_phase("default", "new", "Succeeded")
        ev = w.next_event()
        self.assertEqual((ev["type"], ev["object"]["status"]["phase"]), ("MODIFIED", "Succeeded"))
        self.srv.set_pod_phase("default", "new", "Failed")
        ev = w.next_event()
        self.assertEqual((ev["type"], ev["object"]["status"]["phase"]), ("MODIFIED", "Failed"))
        st, _ = self.c.req("DELETE", "/api/v1/namespaces/default/pods/new")
        self.assertEqual(st, 200)
        ev = w.next_event()
        self.assertEqual(ev["type"], "DELETED")
        self.assertEqual(ev["object"]["status"]["phase"], "Failed")  # the last state
        self.assertEqual(int(ev["object"]["metadata"]["resourceVersion"]), int(rv) + 4)
        w.close()

    def test_watch_unset_rv_and_rv0_send_synthetic_added(self):
        self.srv.add(pod("a"))
        self.srv.add(pod("b"))
        for q in ("", "&resourceVersion=0"):
            w = RawWatch(self.srv, "/api/v1/pods?watch=1&timeoutSeconds=3" + q)
            evs = [w.next_event(), w.next_event()]
            self.assertEqual(sorted(e["object"]["metadata"]["name"] for e in evs), ["a", "b"])
            self.assertTrue(all(e["type"] == "ADDED" for e in evs))
            self.srv.add(pod("c" + q[-1:]))
            self.assertEqual(w.next_event()["type"], "ADDED")
            w.close()

    def test_watch_expired_rv_410_in_stream(self):
        self.srv.add(pod("a"))
        st, l = self.c.req("GET", "/api/v1/pods")
        rv = int(l["metadata"]["resourceVersion"])
        self.srv.compact()
        w = RawWatch(self.srv, "/api/v1/pods?watch=1&resourceVersion=%d&allowWatchBookmarks=true" % rv)
        self.assertEqual(w.status_line, "HTTP/1.1 200 OK")
        ev = w.next_event()
        self.assertEqual(ev["type"], "ERROR")
        st = ev["object"]
        self.assertEqual(list(st), ["kind", "apiVersion", "metadata", "status", "message", "reason", "code"])
        self.assertStatus(st, 410, "Expired")
        m = re.match(r"^too old resource version: (\d+) \((\d+)\)$", st["message"])
        self.assertTrue(m, st["message"])
        self.assertEqual(int(m.group(1)), rv)
        self.assertIsNone(w.next_event())  # then the stream ends
        w.close()

    def test_watch_history_is_bounded(self):
        srv = FakeApiServer(history_limit=5).start()
        try:
            c = Client(srv)
            st, l = c.req("GET", "/api/v1/pods")
            rv = int(l["metadata"]["resourceVersion"])
            for i in range(10):
                srv.add(pod("p%d" % i))
            w = RawWatch(srv, "/api/v1/pods?watch=1&resourceVersion=%d" % rv)
            ev = w.next_event()
            self.assertEqual(ev["type"], "ERROR")
            self.assertEqual(ev["object"]["code"], 410)
            w.close()
            # within the window: the exact tail
            w = RawWatch(srv, "/api/v1/pods?watch=1&resourceVersion=%d&timeoutSeconds=1" % (rv + 6))
            names = [w.next_event()["object"]["metadata"]["name"] for _ in range(4)]
            self.assertEqual(names, ["p6", "p7", "p8", "p9"])
            w.close()
            c.close()
        finally:
            srv.stop()

    def test_watch_selector_transitions(self):
        """An object leaving the selector is DELETED for that watch, one entering it ADDED."""
        self.srv.add(node("n1"))
        self.srv.add(pod("p"))
        st, l = self.c.req("GET", "/api/v1/pods")
        w = RawWatch(self.srv, "/api/v1/pods?watch=1&fieldSelector=spec.nodeName%%3D&resourceVersion=%s"
                     % l["metadata"]["resourceVersion"])
        self.assertTrue(self.srv.wait_for_watches("pods", 1))
        st, _ = self.c.req("POST", "/api/v1/namespaces/default/pods/p/binding",
                           {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
                            "target": {"kind": "Node", "name": "n1"}})
        self.assertEqual(st, 201)
        ev = w.next_event()
        self.assertEqual(ev["type"], "DELETED")
        self.assertNotIn("nodeName", ev["object"]["spec"])  # the previous content ...
        self.assertEqual(int(ev["object"]["metadata"]["resourceVersion"]),
                         int(l["metadata"]["resourceVersion"]) + 1)  # ... at the new RV
        w.close()

    def test_watch_single_object_and_namespace_filter(self):
        self.srv.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "kube-system"},
                      "data": {"gpuMemoryUnit": "1GiB"}})
        st, l = self.c.req("GET", "/api/v1/namespaces/kube-system/configmaps")
        w = RawWatch(self.srv, "/api/v1/namespaces/kube-system/configmaps?watch=1&fieldSelector=metadata.name%%3Dcfg"
                               "&resourceVersion=%s" % l["metadata"]["resourceVersion"])
        self.assertTrue(self.srv.wait_for_watches("configmaps", 1))
        self.srv.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other", "namespace": "kube-system"}})
        self.srv.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "default"}})
        st, out = self.c.req("PATCH", "/api/v1/namespaces/kube-system/configmaps/cfg",
                             {"data": {"gpuMemoryUnit": "128MiB"}}, ctype="application/merge-patch+json")
        self.assertEqual(st, 200)
        ev = w.next_event()
        self.assertEqual((ev["type"], ev["object"]["data"]["gpuMemoryUnit"]), ("MODIFIED", "128MiB"))
        self.assertEqual(ev["object"]["metadata"]["namespace"], "kube-system")
        w.close()

    def test_watch_timeout_and_bookmark_before_deadline(self):
        self.srv.bookmark_interval = 60
        t0 = time.monotonic()
        w = RawWatch(self.srv, "/api/v1/nodes?watch=1&allowWatchBookmarks=true&timeoutSeconds=3&resourceVersion=0")
        ev = w.next_event()
        self.assertEqual(ev["type"], "BOOKMARK")  # ~2 s before the deadline
        self.assertEqual(set(ev["object"]), {"kind", "apiVersion", "metadata", "spec", "status"})
        self.assertIsNone(w.next_event())
        self.assertGreaterEqual(time.monotonic() - t0, 2.5)
        w.close()

    def test_too_large_rv_watch_504(self):
        orig = kube_apiserver.TOO_LARGE_RV_WAIT
        kube_apiserver.TOO_LARGE_RV_WAIT = 0.2
        try:
            st, err = self.c.req("GET", "/api/v1/pods?watch=1&resourceVersion=999999999")
        finally:
            kube_apiserver.TOO_LARGE_RV_WAIT = orig
        self.assertEqual(st, 504)
        self.assertEqual(err["reason"], "Timeout")

    def test_legacy_watch_path(self):
        self.srv.add(node("n1"))
        w = RawWatch(self.srv, "/api/v1/watch/nodes/n1?timeoutSeconds=1")
        self.assertEqual(w.next_event()["object"]["metadata"]["name"], "n1")
        w.close()

    def test_events_k8s_io_watch_converts(self):
        st, l = self.c.req("GET", "/apis/events.k8s.io/v1/namespaces/default/events")
        w = RawWatch(self.srv, "/apis/events.k8s.io/v1/namespaces/default/events?watch=1&resourceVersion=%s"
                     % l["metadata"]["resourceVersion"])
        self.assertTrue(self.srv.wait_for_watches("events", 1))
        st, out = self.c.req("POST", "/api/v1/namespaces/default/events", core_event("e1"))
        self.assertEqual(st, 201, out)
        ev = w.next_event()
        self.assertEqual(ev["object"]["apiVersion"], "events.k8s.io/v1")
        self.assertEqual(ev["object"]["note"], "no GPU has room")
        self.assertEqual(ev["object"]["regarding"]["name"], "trainer-0")
        w.close()


# ---------------------------------------------------------------------------
# BINDING
# ---------------------------------------------------------------------------


def binding(name, node_name, uid=None, annotations=None, ns=None):
    b = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
         "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
    if uid:
        b["metadata"]["uid"] = uid
    if annotations:
        b["metadata"]["annotations"] = annotations
    if ns:
        b["metadata"]["namespace"] = ns
    return b


class TestBinding(Base):
    def setUp(self):
        super().setUp()
        self.srv.add(node("gpu-a"))
        self.p = self.srv.add(pod("trainer-0", ns="ml", annotations={"keep": "me"}))

    def test_binding_merges_annotations_atomically(self):
        st, l = self.c.req("GET", "/api/v1/pods")
        rv = int(l["metadata"]["resourceVersion"])
        w = RawWatch(self.srv, "/api/v1/pods?watch=1&resourceVersion=%d&timeoutSeconds=2" % rv)
        self.assertTrue(self.srv.wait_for_watches("pods", 1))
        ann = {"scheduler.framework.gpushare.allocation": '{"0":{"1":4}}', "ALIYUN_COM_GPU_MEM_IDX": "1"}
        st, out = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding",
                             binding("trainer-0", "gpu-a", uid=self.p["metadata"]["uid"], annotations=ann))
        self.assertEqual(st, 201)
        self.assertEqual(out, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
        events = []
        while True:
            ev = w.next_event()
            if ev is None:
                break
            events.append(ev)
        self.assertEqual(len(events), 1, events)  # exactly one update
        ev = events[0]
        self.assertEqual(ev["type"], "MODIFIED")
        o = ev["object"]
        self.assertEqual(o["spec"]["nodeName"], "gpu-a")
        self.assertEqual(o["metadata"]["annotations"], dict(ann, keep="me"))
        self.assertEqual(int(o["metadata"]["resourceVersion"]), rv + 1)
        conds = {c["type"]: c["status"] for c in o["status"]["conditions"]}
        self.assertEqual(conds["PodScheduled"], "True")
        st, got = self.c.req("GET", "/api/v1/namespaces/ml/pods/trainer-0")
        self.assertEqual(got["metadata"]["resourceVersion"], str(rv + 1))
        w.close()

    def test_uid_precondition_409(self):
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding",
                             binding("trainer-0", "gpu-a", uid="0000-other"))
        self.assertEqual(st, 409)
        self.assertStatus(err, 409, "Conflict")
        self.assertEqual(err["details"], {"name": "trainer-0", "kind": "pods"})
        self.assertEqual(err["message"],
                         'Operation cannot be fulfilled on pods "trainer-0": StorageError: invalid object, '
                         'Code: 4, Key: /registry/pods/ml/trainer-0, ResourceVersion: 0, AdditionalErrorMsg: '
                         'Precondition failed: UID in precondition: 0000-other, UID in object meta: %s'
                         % self.p["metadata"]["uid"])
        st, got = self.c.req("GET", "/api/v1/namespaces/ml/pods/trainer-0")
        self.assertNotIn("nodeName", got["spec"])

    def test_already_assigned_409(self):
        st, _ = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding", binding("trainer-0", "gpu-a"))
        self.assertEqual(st, 201)
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding",
                             binding("trainer-0", "gpu-b", annotations={"x": "y"}))
        self.assertEqual(st, 409)
        self.assertStatus(err, 409, "Conflict")
        self.assertEqual(err["message"], 'Operation cannot be fulfilled on pods/binding "trainer-0": '
                                         'pod trainer-0 is already assigned to node "gpu-a"')
        self.assertEqual(err["details"], {"name": "trainer-0", "kind": "pods/binding"})
        st, got = self.c.req("GET", "/api/v1/namespaces/ml/pods/trainer-0")
        self.assertNotIn("x", got["metadata"]["annotations"])

    def test_missing_pod_404(self):
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/nope/binding", binding("nope", "gpu-a"))
        self.assertEqual(st, 404)
        self.assertStatus(err, 404, "NotFound")
        self.assertEqual(err["message"], 'pods "nope" not found')

    def test_name_mismatch_and_bad_target(self):
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding", binding("other", "gpu-a"))
        self.assertEqual((st, err["message"]), (400, "name in URL does not match name in Binding object"))
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding",
                             binding("trainer-0", "gpu-a", ns="other"))
        self.assertEqual((st, err["message"]), (400, kube_apiserver.NS_MISMATCH_MSG))
        b = binding("trainer-0", "")
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding", b)
        self.assertEqual(st, 500)
        self.assertStatus(err, 500, None)
        self.assertEqual(err["message"], "target.name: Required value")
        b = binding("trainer-0", "gpu-a")
        b["target"]["kind"] = "Pod"
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding", b)
        self.assertEqual(err["message"], 'target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>"')
        b = binding("trainer-0", "gpu-a", annotations={"n": 4})
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding", b)
        self.assertEqual(st, 400)
        self.assertIn("cannot unmarshal number into Go struct field ObjectMeta.metadata.annotations of type string",
                      err["message"])

    def test_legacy_bindings_endpoint(self):
        st, out = self.c.req("POST", "/api/v1/namespaces/ml/bindings", binding("trainer-0", "gpu-a",
                                                                              annotations={"a": "1"}))
        self.assertEqual(st, 201)
        got = self.srv.get("pods", "ml", "trainer-0")
        self.assertEqual(got["spec"]["nodeName"], "gpu-a")
        self.assertEqual(got["metadata"]["annotations"]["a"], "1")

    def test_being_deleted_and_gates(self):
        p = pod("gated", ns="ml")
        p["spec"]["schedulingGates"] = [{"name": "wait"}]
        self.srv.add(p)
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/gated/binding", binding("gated", "gpu-a"))
        self.assertEqual((st, err["message"]), (409, 'Operation cannot be fulfilled on pods/binding "gated": '
                                                     'pod gated has non-empty .spec.schedulingGates'))
        p = pod("fin", ns="ml")
        p["metadata"]["finalizers"] = ["example.com/hold"]
        self.srv.add(p)
        st, _ = self.c.req("DELETE", "/api/v1/namespaces/ml/pods/fin")
        self.assertEqual(st, 200)
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/fin/binding", binding("fin", "gpu-a"))
        self.assertEqual(err["message"], 'Operation cannot be fulfilled on pods/binding "fin": '
                                         'pod fin is being deleted, cannot be assigned to a host')


# ---------------------------------------------------------------------------
# CRUD, validation, Status shapes
# ---------------------------------------------------------------------------


def core_event(name, ns="default", **kw):
    e = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": ns},
         "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": "trainer-0", "uid": "u1"},
         "reason": "FailedBinding", "message": "no GPU has room", "type": "Warning",
         "source": {"component": "gpushare-extender"}, "firstTimestamp": "2025-03-04T05:06:07Z",
         "lastTimestamp": "2025-03-04T05:06:07Z", "count": 1}
    e.update(kw)
    return e


def v1_event(name, ns="default", **kw):
    e = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name, "namespace": ns},
         "eventTime": "2025-03-04T05:06:07.123456Z", "reportingController": "example.com/gpushare-extender",
         "reportingInstance": "gpushare-extender-abc", "action": "Binding", "reason": "FailedBinding",
         "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": "trainer-0"},
         "note": "no GPU on gpu-node-2 has 4 GiB free", "type": "Warning"}
    e.update(kw)
    return e


class TestCrud(Base):
    def test_status_404_shape_matches_fixture(self):
        f = json.loads(fixture("status-404-notfound.json"))
        st, err = self.c.req("GET", "/api/v1/namespaces/default/pods/missing")
        self.assertEqual(st, 404)
        self.assertEqual(shape(err), shape(f))
        self.assertEqual(list(err), list(f))
        self.assertEqual(list(err["details"]), list(f["details"]))
        self.assertEqual(err["message"], 'pods "missing" not found')
        self.assertEqual(err["details"], {"name": "missing", "kind": "pods"})
        st, err = self.c.req("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x")
        self.assertEqual(err["message"], 'leases.coordination.k8s.io "x" not found')
        self.assertEqual(err["details"], {"name": "x", "group": "coordination.k8s.io", "kind": "leases"})

    def test_status_422_shape_matches_fixture(self):
        f = json.loads(fixture("status-422-invalid.json"))
        p = pod("Bad_Name")
        p["spec"]["containers"][0]["image"] = ""
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual(st, 422)
        self.assertEqual(shape(err), shape(f))
        self.assertEqual(list(err), list(f))
        self.assertEqual(list(err["details"]), list(f["details"]))
        self.assertEqual(list(err["details"]["causes"][0]), list(f["details"]["causes"][0]))
        self.assertEqual(err["details"]["kind"], "Pod")
        self.assertTrue(err["message"].startswith('Pod "Bad_Name" is invalid: [metadata.name: Invalid value: '
                                                  '"Bad_Name": a lowercase RFC 1123 subdomain'), err["message"])
        self.assertEqual(err["details"]["causes"][0]["reason"], "FieldValueInvalid")
        self.assertEqual(err["details"]["causes"][0]["field"], "metadata.name")

    def test_create_get_already_exists(self):
        st, out = self.c.req("POST", "/api/v1/namespaces/default/pods", pod("p1"))
        self.assertEqual(st, 201, out)
        self.assertEqual(list(out)[:5], ["kind", "apiVersion", "metadata", "spec", "status"])
        self.assertEqual(out["status"], {"phase": "Pending", "qosClass": "BestEffort"})
        self.assertEqual(out["spec"]["containers"][0]["resources"]["requests"], {"aliyun.com/gpu-mem": "4"})
        self.assertRegex(out["metadata"]["uid"], r"^[0-9a-f-]{36}$")
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", pod("p1"))
        self.assertEqual(st, 409)
        self.assertStatus(err, 409, "AlreadyExists")
        self.assertEqual(err["message"], 'pods "p1" already exists')
        st, got = self.c.req("GET", "/api/v1/namespaces/default/pods/p1")
        self.assertEqual(got, out)

    def test_create_validation(self):
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", pod("p", ns="other"))
        self.assertEqual((st, err["message"]), (400, "the namespace of the provided object does not match the "
                                                     "namespace sent on the request"))
        self.assertStatus(err, 400, "BadRequest")
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", raw=b"not json")
        self.assertEqual(st, 400)
        self.assertTrue(err["message"].startswith("the object provided is unrecognized (must be of type Pod)"))
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", cm)
        self.assertEqual(st, 400)
        self.assertEqual(err["message"], 'ConfigMap in version "v1" cannot be handled as a Pod: converting '
                                         '(v1.ConfigMap) to (Pod): unknown conversion')
        lease = {"apiVersion": "v1", "kind": "Lease", "metadata": {"name": "x"}}
        st, err = self.c.req("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", lease)
        self.assertEqual(st, 400)
        self.assertIn('no kind "Lease" is registered for version "v1"', err["message"])
        p = pod("p", annotations={"a": True})
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual(st, 400)
        self.assertEqual(err["message"], 'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal '
                                         'bool into Go struct field ObjectMeta.metadata.annotations of type string')
        p = pod("p")
        p["metadata"]["resourceVersion"] = 5
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual(st, 400)
        p = pod("p")
        del p["spec"]["containers"]
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual((st, err["details"]["causes"][0]["field"]), (422, "spec.containers"))
        p = pod("p", mem="1.5")
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual(st, 422)
        self.assertIn("must be an integer", err["message"])
        p = pod("p")
        p["spec"]["containers"][0]["resources"]["requests"] = {"aliyun.com/gpu-mem": "2"}
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual(st, 422)
        self.assertIn("must be equal to aliyun.com/gpu-mem limit of 4", err["message"])
        p = pod("p", mem="lots")
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual(st, 400)
        self.assertIn("quantities must match the regular expression", err["message"])
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", pod("p"), ctype="text/plain")
        self.assertEqual(st, 415)
        self.assertStatus(err, 415, "UnsupportedMediaType")

    def test_unknown_fields_warning_and_strict(self):
        p = pod("p")
        p["bogus"] = 1
        st, out = self.c.req("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual(st, 201)
        self.assertNotIn("bogus", out)
        self.assertEqual(self.c.last.getheader("Warning"), '299 - "unknown field \\"bogus\\""')
        p = pod("q")
        p["bogus"] = 1
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods?fieldValidation=Strict", p)
        self.assertEqual(st, 400)
        self.assertIn('strict decoding error: unknown field "bogus"', err["message"])

    def test_put_optimistic_concurrency(self):
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"},
              "data": {"a": "1"}}
        st, c1 = self.c.req("POST", "/api/v1/namespaces/default/configmaps", cm)
        self.assertEqual(st, 201)
        c1["data"]["a"] = "2"
        st, c2 = self.c.req("PUT", "/api/v1/namespaces/default/configmaps/c", c1)
        self.assertEqual(st, 200, c2)
        self.assertEqual(int(c2["metadata"]["resourceVersion"]), int(c1["metadata"]["resourceVersion"]) + 1)
        c1["data"]["a"] = "3"
        st, err = self.c.req("PUT", "/api/v1/namespaces/default/configmaps/c", c1)
        self.assertEqual(st, 409)
        self.assertStatus(err, 409, "Conflict")
        self.assertEqual(err["message"], 'Operation cannot be fulfilled on configmaps "c": the object has been '
                                         'modified; please apply your changes to the latest version and try again')
        self.assertEqual(err["details"], {"name": "c", "kind": "configmaps"})
        # no-op update: same RV, no event
        st, c3 = self.c.req("PUT", "/api/v1/namespaces/default/configmaps/c", c2)
        self.assertEqual(c3["metadata"]["resourceVersion"], c2["metadata"]["resourceVersion"])
        # unconditional update (no RV)
        del c2["metadata"]["resourceVersion"]
        c2["data"]["a"] = "4"
        st, c4 = self.c.req("PUT", "/api/v1/namespaces/default/configmaps/c", c2)
        self.assertEqual((st, c4["data"]["a"]), (200, "4"))
        st, err = self.c.req("PUT", "/api/v1/namespaces/default/configmaps/zz", dict(c2, metadata={"name": "zz"}))
        self.assertEqual(st, 404)
        st, err = self.c.req("PUT", "/api/v1/namespaces/default/configmaps/c", dict(c2, metadata={"name": "zz"}))
        self.assertEqual(st, 400)

    def test_pod_update_rules(self):
        st, p = self.c.req("POST", "/api/v1/namespaces/default/pods", pod("p"))
        p2 = json.loads(json.dumps(p))
        p2["spec"]["nodeName"] = "n1"
        st, err = self.c.req("PUT", "/api/v1/namespaces/default/pods/p", p2)
        self.assertEqual(st, 422)
        self.assertEqual(err["details"]["causes"][0]["field"], "spec")
        self.assertIn("pod updates may not change fields other than", err["message"])
        # status is ignored on the main resource, set through /status
        p3 = json.loads(json.dumps(p))
        p3["status"]["phase"] = "Running"
        p3["metadata"]["labels"] = {"x": "y"}
        st, out = self.c.req("PUT", "/api/v1/namespaces/default/pods/p", p3)
        self.assertEqual((st, out["status"]["phase"], out["metadata"]["labels"]), (200, "Pending", {"x": "y"}))
        st, out = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p/status", {"status": {"phase": "Running"}},
                             ctype="application/strategic-merge-patch+json")
        self.assertEqual((st, out["status"]["phase"]), (200, "Running"))

    def test_patch_types(self):
        self.srv.add(pod("p", annotations={"old": "1", "keep": "2"}))
        st, out = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p",
                             {"metadata": {"annotations": {"example.com/gpu-index": "1", "old": None}}},
                             ctype="application/merge-patch+json")
        self.assertEqual(st, 200, out)
        self.assertEqual(out["metadata"]["annotations"], {"keep": "2", "example.com/gpu-index": "1"})
        st, out = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p",
                             {"metadata": {"annotations": {"b": "3"}}},
                             ctype="application/strategic-merge-patch+json")
        self.assertEqual(out["metadata"]["annotations"]["b"], "3")
        self.assertEqual(out["metadata"]["annotations"]["keep"], "2")
        st, out = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p",
                             [{"op": "add", "path": "/metadata/annotations/example.com~1x", "value": "y"}],
                             ctype="application/json-patch+json")
        self.assertEqual((st, out["metadata"]["annotations"]["example.com/x"]), (200, "y"))
        st, err = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p", {"a": 1}, ctype="application/json")
        self.assertEqual(st, 415)
        self.assertStatus(err, 415, "UnsupportedMediaType")
        st, err = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p",
                             {"metadata": {"resourceVersion": "1", "annotations": {"z": "1"}}},
                             ctype="application/merge-patch+json")
        self.assertEqual((st, err["reason"]), (409, "Conflict"))
        st, err = self.c.req("PATCH", "/api/v1/namespaces/default/pods/nope", {}, ctype="application/merge-patch+json")
        self.assertEqual(st, 404)
        st, err = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p", {"metadata": {"annotations": {"n": 1}}},
                             ctype="application/merge-patch+json")
        self.assertEqual(st, 400)
        # SMP merges lists by key
        st, out = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p/status",
                             {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                             ctype="application/strategic-merge-patch+json")
        st, out = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p/status",
                             {"status": {"conditions": [{"type": "Initialized", "status": "True"}]}},
                             ctype="application/strategic-merge-patch+json")
        self.assertEqual([c["type"] for c in out["status"]["conditions"]], ["Ready", "Initialized"])
        # configmap fixture: SMP request -> response with data merged
        req = json.loads(fixture("configmap-patch-request-smp.json"))
        want = json.loads(fixture("configmap-patch-response.json"))
        self.srv.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1", "namespace": "edit-test"},
                      "data": {"baz": "qux", "foo": "changed-value"}})
        st, out = self.c.req("PATCH", "/api/v1/namespaces/edit-test/configmaps/cm1", req,
                             ctype="application/strategic-merge-patch+json")
        self.assertEqual(out["data"], want["data"])
        self.assertEqual([k for k in out if k in want], list(want))

    def test_delete(self):
        self.srv.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}})
        cm = self.srv.get("configmaps", "default", "c")
        st, out = self.c.req("DELETE", "/api/v1/namespaces/default/configmaps/c")
        self.assertEqual(st, 200)
        self.assertEqual(out, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                               "details": {"name": "c", "kind": "configmaps", "uid": cm["metadata"]["uid"]}})
        st, err = self.c.req("DELETE", "/api/v1/namespaces/default/configmaps/c")
        self.assertEqual(st, 404)
        self.srv.add(pod("p"))
        st, err = self.c.req("DELETE", "/api/v1/namespaces/default/pods/p",
                             {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "x"}})
        self.assertEqual((st, err["reason"]), (409, "Conflict"))
        self.assertIn("Precondition failed: UID in precondition: x", err["message"])
        st, out = self.c.req("DELETE", "/api/v1/namespaces/default/pods/p")
        self.assertEqual((st, out["kind"]), (200, "Pod"))

    def test_graceful_pod_delete(self):
        self.srv.add(pod("p", node="n1"))
        st, l = self.c.req("GET", "/api/v1/pods")
        w = RawWatch(self.srv, "/api/v1/pods?watch=1&resourceVersion=%s&timeoutSeconds=2"
                     % l["metadata"]["resourceVersion"])
        self.assertTrue(self.srv.wait_for_watches("pods", 1))
        st, out = self.c.req("DELETE", "/api/v1/namespaces/default/pods/p")
        self.assertEqual(st, 200)
        self.assertIn("deletionTimestamp", out["metadata"])
        self.assertEqual(out["metadata"]["deletionGracePeriodSeconds"], 30)
        e1, e2 = w.next_event(), w.next_event()
        self.assertEqual((e1["type"], e2["type"]), ("MODIFIED", "DELETED"))
        self.assertIn("deletionTimestamp", e2["object"]["metadata"])
        w.close()

    def test_leases(self):
        base = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": "gpushare-extender", "namespace": "kube-system"},
                 "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                          "acquireTime": "2025-03-04T05:00:00.000000Z", "renewTime": "2025-03-04T05:06:07.123456Z",
                          "leaseTransitions": 0}}
        st, err = self.c.req("GET", base + "/gpushare-extender")
        self.assertEqual(st, 404)
        st, l1 = self.c.req("POST", base, lease)
        self.assertEqual(st, 201, l1)
        self.assertEqual(l1["spec"]["renewTime"], "2025-03-04T05:06:07.123456Z")
        st, err = self.c.req("POST", base, lease)
        self.assertEqual((st, err["reason"]), (409, "AlreadyExists"))
        self.assertEqual(err["message"], 'leases.coordination.k8s.io "gpushare-extender" already exists')
        # two candidates read the same RV; the first PUT wins, the second gets 409
        st, a = self.c.req("GET", base + "/gpushare-extender")
        b = json.loads(json.dumps(a))
        a["spec"]["renewTime"] = "2025-03-04T05:06:09.000000Z"
        st, out = self.c.req("PUT", base + "/gpushare-extender", a)
        self.assertEqual(st, 200, out)
        b["spec"]["holderIdentity"] = "b"
        b["spec"]["leaseTransitions"] = 1
        st, err = self.c.req("PUT", base + "/gpushare-extender", b)
        self.assertEqual(st, 409)
        self.assertStatus(err, 409, "Conflict")
        self.assertEqual(err["message"], 'Operation cannot be fulfilled on leases.coordination.k8s.io '
                                         '"gpushare-extender": the object has been modified; please apply your '
                                         'changes to the latest version and try again')
        self.assertEqual(err["details"], {"name": "gpushare-extender", "group": "coordination.k8s.io",
                                          "kind": "leases"})
        # MicroTime needs exactly six fractional digits
        out["spec"]["renewTime"] = "2025-03-04T05:06:10Z"
        st, err = self.c.req("PUT", base + "/gpushare-extender", out)
        self.assertEqual(st, 400)
        self.assertEqual(err["message"], 'Lease in version "v1" cannot be handled as a Lease: parsing time '
                                         '"2025-03-04T05:06:10Z" as "2006-01-02T15:04:05.000000Z07:00": cannot '
                                         'parse "Z" as ".000000"')
        out["spec"]["renewTime"] = "2025-03-04T07:06:10.000001+02:00"
        out["spec"]["leaseDurationSeconds"] = 15.5
        st, err = self.c.req("PUT", base + "/gpushare-extender", out)
        self.assertEqual(st, 400)
        self.assertIn("cannot unmarshal number 15.5 into Go struct field LeaseSpec.spec.leaseDurationSeconds "
                      "of type int32", err["message"])
        out["spec"]["leaseDurationSeconds"] = 1
        st, done = self.c.req("PUT", base + "/gpushare-extender", out)
        self.assertEqual(st, 200, done)
        self.assertEqual(done["spec"]["renewTime"], "2025-03-04T05:06:10.000001Z")  # UTC, 6 digits

    def test_events_core_and_events_k8s_io(self):
        st, out = self.c.req("POST", "/api/v1/namespaces/default/events", core_event("trainer-0.1829b5c3d2a1f000"))
        self.assertEqual(st, 201, out)
        self.assertEqual(out["reportingComponent"], "")
        self.assertIsNone(out["eventTime"])
        st, err = self.c.req("POST", "/api/v1/namespaces/default/events",
                             core_event("x", involvedObject={"kind": "Pod", "namespace": "other", "name": "p"}))
        self.assertEqual(st, 422)
        self.assertEqual(err["details"]["causes"][0]["field"], "involvedObject.namespace")
        self.assertEqual(err["message"], 'Event "x" is invalid: involvedObject.namespace: Invalid value: "other": '
                                         'does not match event.namespace')
        st, out = self.c.req("POST", "/apis/events.k8s.io/v1/namespaces/default/events", v1_event("e2"))
        self.assertEqual(st, 201, out)
        self.assertEqual(out["apiVersion"], "events.k8s.io/v1")
        self.assertEqual(out["eventTime"], "2025-03-04T05:06:07.123456Z")
        st, err = self.c.req("POST", "/apis/events.k8s.io/v1/namespaces/default/events",
                             v1_event("e3", type="Bad", action="", note="x" * 1025, reportingInstance=""))
        self.assertEqual(st, 422)
        self.assertEqual(err["details"]["kind"], "Event")
        self.assertEqual(err["details"]["group"], "events.k8s.io")
        fields = sorted(c["field"] for c in err["details"]["causes"])
        self.assertEqual(fields, ["action", "message", "reportingInstance", "type"])
        st, err = self.c.req("POST", "/apis/events.k8s.io/v1/namespaces/default/events",
                             v1_event("e4", eventTime="2025-03-04T05:06:07Z"))
        self.assertEqual(st, 400)
        # both views of one storage
        st, l = self.c.req("GET", "/api/v1/namespaces/default/events")
        self.assertEqual(sorted(i["metadata"]["name"] for i in l["items"]), ["e2", "trainer-0.1829b5c3d2a1f000"])
        st, e2 = self.c.req("GET", "/api/v1/namespaces/default/events/e2")
        self.assertEqual((e2["message"], e2["reportingComponent"]),
                         ("no GPU on gpu-node-2 has 4 GiB free", "example.com/gpushare-extender"))
        recv = self.srv.events()
        self.assertEqual([(e["api"], e["name"]) for e in recv],
                         [("v1", "trainer-0.1829b5c3d2a1f000"), ("events.k8s.io/v1", "e2")])
        # a repeat is a PATCH raising the count
        st, out = self.c.req("PATCH", "/api/v1/namespaces/default/events/trainer-0.1829b5c3d2a1f000",
                             {"count": 2, "lastTimestamp": "2025-03-04T05:07:07Z"},
                             ctype="application/strategic-merge-patch+json")
        self.assertEqual((st, out["count"]), (200, 2))
        self.assertEqual(self.srv.events()[-1]["verb"], "patch")

    def test_nodes_cluster_scoped(self):
        n = node("n1")
        n["metadata"]["namespace"] = "ignored"
        st, out = self.c.req("POST", "/api/v1/nodes", n)
        self.assertEqual(st, 201, out)
        self.assertNotIn("namespace", out["metadata"])
        self.assertEqual(out["status"]["capacity"]["aliyun.com/gpu-mem"], "32")
        st, _ = self.c.req("GET", "/api/v1/namespaces/default/nodes/n1")
        self.assertEqual(st, 404)
        st, out = self.c.req("PATCH", "/api/v1/nodes/n1/status",
                             {"status": {"capacity": {"aliyun.com/gpu-mem": "64"}}},
                             ctype="application/strategic-merge-patch+json")
        self.assertEqual((st, out["status"]["capacity"]["aliyun.com/gpu-mem"]), (200, "64"))
        st, err = self.c.req("GET", "/api/v1/foos")
        self.assertEqual(st, 404)
        self.assertEqual(err["message"], "the server could not find the requested resource")

    def test_keep_alive_and_chunked_request_body(self):
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=5)
        body = json.dumps(pod("chunky")).encode()
        req = (b"POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        s.sendall(req + b"GET /api/v1/namespaces/default/pods/chunky HTTP/1.1\r\nHost: x\r\n\r\n")
        f = s.makefile("rb")
        codes = []
        for _ in range(2):
            codes.append(f.readline().split()[1])
            n = 0
            while True:
                line = f.readline()
                if line == b"\r\n":
                    break
                if line.lower().startswith(b"content-length:"):
                    n = int(line.split(b":")[1])
            f.read(n)
        self.assertEqual(codes, [b"201", b"200"])
        s.close()

    def test_gzip_large_list(self):
        for i in range(40):
            self.srv.add({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": "c%d" % i, "namespace": "default"}, "data": {"blob": "x" * 5000}})
        st, l = self.c.req("GET", "/api/v1/configmaps", headers={"Accept-Encoding": "gzip"})
        self.assertEqual(st, 200)
        self.assertEqual(self.c.last.getheader("Content-Encoding"), "gzip")
        self.assertEqual(len(l["items"]), 40)
        st, l = self.c.req("GET", "/api/v1/configmaps")
        self.assertIsNone(self.c.last.getheader("Content-Encoding"))

    def test_managed_fields_like_a_real_server(self):
        st, out = self.c.req("POST", "/api/v1/namespaces/default/pods", pod("p", annotations={"a": "1"}),
                             headers={"User-Agent": "gpushare-extender/0.1.0 (linux)"})
        mf = out["metadata"]["managedFields"]
        self.assertEqual(len(mf), 1)
        self.assertEqual({k: mf[0][k] for k in ("manager", "operation", "apiVersion", "fieldsType")},
                         {"manager": "gpushare-extender", "operation": "Update", "apiVersion": "v1",
                          "fieldsType": "FieldsV1"})
        self.assertIn("f:annotations", mf[0]["fieldsV1"]["f:metadata"])
        self.assertEqual(list(out["metadata"])[-1], "managedFields")
        st, out2 = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p?fieldManager=other",
                              {"metadata": {"labels": {"x": "y"}}}, ctype="application/merge-patch+json")
        self.assertEqual([e["manager"] for e in out2["metadata"]["managedFields"]], ["gpushare-extender", "other"])
        # the same write again by the same manager is a no-op: no new resourceVersion
        st, out3 = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p?fieldManager=other",
                              {"metadata": {"labels": {"x": "y"}}}, ctype="application/merge-patch+json")
        self.assertEqual(out3["metadata"]["resourceVersion"], out2["metadata"]["resourceVersion"])
        # binding goes straight to storage: managedFields unchanged
        self.srv.add(node("n1"))
        st, _ = self.c.req("POST", "/api/v1/namespaces/default/pods/p/binding", binding("p", "n1"))
        self.assertEqual(self.srv.get("pods", "default", "p")["metadata"]["managedFields"],
                         out3["metadata"]["managedFields"])

    def test_state_preload(self):
        tmp = tempfile.mkdtemp()
        try:
            path = os.path.join(tmp, "s.json")
            p1 = pod("p1", node="gpu-a")
            p1["metadata"]["uid"] = "11111111-2222-3333-4444-555555555555"
            with open(path, "w") as f:
                json.dump({"kind": "List", "apiVersion": "v1",
                           "items": [node("gpu-a"), p1, {"apiVersion": "v1", "kind": "Namespace",
                                                         "metadata": {"name": "ml"}}]}, f)
            srv = FakeApiServer(state=path)
            try:
                got = srv.get("pods", "default", "p1")
                self.assertEqual(got["metadata"]["uid"], "11111111-2222-3333-4444-555555555555")
                self.assertEqual(got["spec"]["nodeName"], "gpu-a")
                self.assertEqual(len(srv.list()), 2)
            finally:
                srv.stop()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_discovery_and_version(self):
        st, v = self.c.req("GET", "/version")
        self.assertEqual((st, v["major"]), (200, "1"))
        st, d = self.c.req("GET", "/api/v1")
        self.assertIn("pods/binding", [r["name"] for r in d["resources"]])


# ---------------------------------------------------------------------------
# Auth, TLS
# ---------------------------------------------------------------------------


class TestAuth(Base):
    server_kwargs = {"token": "s3cret"}

    def test_token_required(self):
        st, err = self.c.req("GET", "/api/v1/pods")
        self.assertEqual(st, 401)
        self.assertEqual(err, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                               "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
        self.c.token = "wrong"
        st, _ = self.c.req("GET", "/api/v1/pods")
        self.assertEqual(st, 401)
        self.c.token = "s3cret"
        st, _ = self.c.req("GET", "/api/v1/pods")
        self.assertEqual(st, 200)
        w = RawWatch(self.srv, "/api/v1/pods?watch=1")
        self.assertTrue(w.status_line.startswith("HTTP/1.1 401"))
        w.close()
        # rotation
        self.srv.set_tokens(["new"])
        st, _ = self.c.req("GET", "/api/v1/pods")
        self.assertEqual(st, 401)
        log = self.srv.requests(path="/api/v1/pods")
        self.assertEqual(log[-1]["headers"]["Authorization"], "Bearer s3cret")
        self.assertEqual(log[-1]["status"], 401)


def make_cert(tmp, cn, ca=None, ca_key=None, client=False):
    crt, key = os.path.join(tmp, cn + ".crt"), os.path.join(tmp, cn + ".key")
    if ca is None:
        cmd = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", crt,
               "-days", "2", "-subj", "/CN=" + cn, "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"]
        if client:
            cmd[cmd.index("-addext") + 1] = "basicConstraints=critical,CA:TRUE"
        subprocess.run(cmd, check=True, capture_output=True)
    else:
        csr = os.path.join(tmp, cn + ".csr")
        subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
                        "-subj", "/CN=" + cn], check=True, capture_output=True)
        subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                        "-out", crt, "-days", "2"], check=True, capture_output=True)
    return crt, key


@unittest.skipIf(shutil.which("openssl") is None, "openssl CLI not available")
class TestTLS(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kube-apiserver-tls-")
        cls.crt, cls.key = make_cert(cls.tmp, "127.0.0.1")
        cls.ca, cls.ca_key = make_cert(cls.tmp, "client-ca", client=True)
        cls.ccrt, cls.ckey = make_cert(cls.tmp, "system:kube-scheduler", ca=cls.ca, ca_key=cls.ca_key)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_https_with_token(self):
        srv = FakeApiServer(tls_cert=self.crt, tls_key=self.key, token="t0k").start()
        try:
            self.assertTrue(srv.url.startswith("https://127.0.0.1:"))
            ctx = ssl.create_default_context(cafile=self.crt)
            c = Client(srv, token="t0k", ctx=ctx)
            srv.add(node("n1"))
            st, l = c.req("GET", "/api/v1/nodes")
            self.assertEqual((st, l["items"][0]["metadata"]["name"]), (200, "n1"))
            st, l = c.req("GET", "/api/v1/nodes")  # same TLS connection, keep-alive
            self.assertEqual(st, 200)
            c.close()
            c = Client(srv, ctx=ctx)
            st, err = c.req("GET", "/api/v1/nodes")
            self.assertEqual((st, err["reason"]), (401, "Unauthorized"))
            c.close()
            # an untrusting client fails the handshake
            bad = ssl.create_default_context()
            with self.assertRaises(ssl.SSLError):
                Client(srv, token="t0k", ctx=bad).req("GET", "/api/v1/nodes")
            self.assertTrue(srv.requests()[-1]["tls"])
            # watch over TLS
            ctxw = ssl.create_default_context(cafile=self.crt)
            s = ctxw.wrap_socket(socket.create_connection(("127.0.0.1", srv.port), timeout=5),
                                 server_hostname="127.0.0.1")
            s.sendall(b"GET /api/v1/nodes?watch=1&timeoutSeconds=1 HTTP/1.1\r\nHost: x\r\n"
                      b"Authorization: Bearer t0k\r\n\r\n")
            data = b""
            while not data.endswith(b"\r\n0\r\n\r\n"):
                d = s.recv(65536)
                if not d:
                    break
                data += d
            self.assertIn(b"Transfer-Encoding: chunked", data)
            self.assertIn(b'{"type":"ADDED"', data)
            s.close()
        finally:
            srv.stop()

    def test_client_certificate_auth(self):
        srv = FakeApiServer(tls_cert=self.crt, tls_key=self.key, client_ca=self.ca).start()
        try:
            ctx = ssl.create_default_context(cafile=self.crt)
            ctx.load_cert_chain(self.ccrt, self.ckey)
            c = Client(srv, ctx=ctx)
            st, _ = c.req("GET", "/api/v1/pods")
            self.assertEqual(st, 200)
            self.assertEqual(srv.requests()[-1]["user"], "cert:system:kube-scheduler")
            c.close()
            c = Client(srv, ctx=ssl.create_default_context(cafile=self.crt))
            st, _ = c.req("GET", "/api/v1/pods")
            self.assertEqual(st, 401)
            c.close()
        finally:
            srv.stop()


# ---------------------------------------------------------------------------
# Fault injection
# ---------------------------------------------------------------------------


class TestFaults(Base):
    def test_fail_next_n(self):
        fid = self.srv.inject_fault(method="GET", path=r"^/api/v1/pods$", status=500, count=2)
        self.assertIsInstance(fid, int)
        codes = [self.c.req("GET", "/api/v1/pods")[0] for _ in range(3)]
        self.assertEqual(codes, [500, 500, 200])
        st, _ = self.c.req("GET", "/api/v1/nodes")
        self.assertEqual(st, 200)
        self.srv.inject_fault(path="/api/v1/nodes", status=503, count=1)
        st, err = self.c.req("GET", "/api/v1/nodes")
        self.assertEqual(st, 503)
        self.assertStatus(err, 503, "ServiceUnavailable")
        self.srv.inject_fault(path="/api/v1/nodes", status=500, count=1)
        st, err = self.c.req("GET", "/api/v1/nodes")
        self.assertStatus(err, 500, "InternalError")
        self.assertEqual(self.srv.faults(), [])

    def test_429_retry_after(self):
        self.srv.inject_fault(method="POST", path="/binding$", status=429, retry_after=3, count=1)
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods/x/binding", binding("x", "n"))
        self.assertEqual(st, 429)
        self.assertStatus(err, 429, "TooManyRequests")
        self.assertEqual(err["details"], {"retryAfterSeconds": 3})
        self.assertEqual(self.c.last.getheader("Retry-After"), "3")

    def test_delay(self):
        self.srv.delay(path="/api/v1/nodes", seconds=0.6, count=1)
        t0 = time.monotonic()
        st, _ = self.c.req("GET", "/api/v1/nodes")
        self.assertEqual(st, 200)
        self.assertGreaterEqual(time.monotonic() - t0, 0.55)
        t0 = time.monotonic()
        self.c.req("GET", "/api/v1/nodes")
        self.assertLess(time.monotonic() - t0, 0.5)

    def test_reset(self):
        self.srv.inject_fault(path="/api/v1/nodes", action="reset", count=1)
        conn = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=5)
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionResetError, http.client.BadStatusLine)):
            conn.request("GET", "/api/v1/nodes")
            conn.getresponse().read()
        conn.close()

    def test_drop_watches_mid_stream(self):
        self.srv.add(pod("a"))
        w = RawWatch(self.srv, "/api/v1/pods?watch=1")
        self.assertEqual(w.next_event()["type"], "ADDED")
        self.assertTrue(self.srv.wait_for_watches("pods", 1))
        self.assertEqual(self.srv.drop_watches(), 1)
        with self.assertRaises(EOFError):  # no terminating chunk: a cut connection
            w.next_chunk()
        w.close()
        w = RawWatch(self.srv, "/api/v1/pods?watch=1&resourceVersion=0")
        w.next_event()
        self.assertTrue(self.srv.wait_for_watches("pods", 1))
        self.srv.drop_watches(mode="error")
        ev = w.next_event()
        self.assertEqual((ev["type"], ev["object"]["code"], ev["object"]["reason"]), ("ERROR", 410, "Expired"))
        self.assertIsNone(w.next_event())
        w.close()
        w = RawWatch(self.srv, "/api/v1/pods?watch=1&resourceVersion=0")
        w.next_event()
        self.assertTrue(self.srv.wait_for_watches("pods", 1))
        self.srv.drop_watches(mode="end")
        self.assertIsNone(w.next_event())
        w.close()

    def test_compact_then_rewatch_gets_410(self):
        self.srv.add(pod("a"))
        st, l = self.c.req("GET", "/api/v1/pods")
        rv = l["metadata"]["resourceVersion"]
        self.srv.compact("pods")
        w = RawWatch(self.srv, "/api/v1/pods?watch=1&resourceVersion=" + rv)
        self.assertEqual(w.next_event()["object"]["code"], 410)
        w.close()
        # another resource keeps its history
        w = RawWatch(self.srv, "/api/v1/nodes?watch=1&timeoutSeconds=1&resourceVersion=" + rv)
        self.assertIsNone(w.next_event())
        w.close()

    def test_down_and_up(self):
        port = self.srv.port
        self.srv.add(node("n1"))
        self.c.req("GET", "/api/v1/nodes")
        self.srv.down()
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=2).recv(1)
        self.srv.add(node("n2"))  # the state goes on
        self.srv.up()
        self.assertEqual(self.srv.port, port)
        self.c.close()
        st, l = self.c.req("GET", "/api/v1/nodes")
        self.assertEqual([i["metadata"]["name"] for i in l["items"]], ["n1", "n2"])

    def test_faults_after_authentication(self):
        srv = FakeApiServer(token="tk").start()
        try:
            srv.inject_fault(path="/api/v1/nodes", status=500, count=1)
            c = Client(srv)
            self.assertEqual(c.req("GET", "/api/v1/nodes")[0], 401)  # the fault is not used up by this
            c.token = "tk"
            self.assertEqual(c.req("GET", "/api/v1/nodes")[0], 500)
            self.assertEqual(c.req("GET", "/api/v1/nodes")[0], 200)
            c.close()
        finally:
            srv.stop()

    def test_vanished_watch_client_is_forgotten(self):
        w = RawWatch(self.srv, "/api/v1/pods?watch=1&resourceVersion=0")
        self.assertTrue(self.srv.wait_for_watches("pods", 1))
        self.assertEqual(len(self.srv.watches()), 1)
        w.close()
        deadline = time.monotonic() + 5
        while self.srv.watches() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.srv.watches(), [])

    def test_request_log(self):
        self.c.req("GET", "/api/v1/pods?limit=500&resourceVersion=0", headers={"User-Agent": "gpushare/0.1"})
        e = self.srv.requests()[-1]
        self.assertEqual((e["method"], e["path"], e["params"]), ("GET", "/api/v1/pods",
                                                                 {"limit": "500", "resourceVersion": "0"}))
        self.assertEqual(e["headers"]["User-Agent"], "gpushare/0.1")
        self.assertEqual(e["headers"]["Accept"], "application/json")
        self.assertEqual(e["status"], 200)
        self.c.req("POST", "/api/v1/namespaces/default/pods/x/binding", binding("x", "n"))
        e = self.srv.requests(method="POST")[-1]
        self.assertEqual(json.loads(e["body"])["target"]["name"], "n")
        self.assertEqual(e["status"], 404)


class TestCli(unittest.TestCase):
    """The CLI other test suites depend on: --port 0 --port-file, stdout line, admin API."""

    def admin(self, port, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else b"{}"
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data if method != "GET" else None,
                                     method=method, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())

    def test_cli_and_admin_api(self):
        tmp = tempfile.mkdtemp(prefix="kube-apiserver-cli-")
        try:
            state = os.path.join(tmp, "state.json")
            with open(state, "w") as f:
                json.dump({"kind": "List", "apiVersion": "v1", "items": [node("gpu-a"), pod("p1")]}, f)
            pf, apf = os.path.join(tmp, "port"), os.path.join(tmp, "admin-port")
            proc = subprocess.Popen([sys.executable, SERVER_PY, "--port", "0", "--state", state, "--token", "tk",
                                     "--port-file", pf, "--admin-port", "0", "--admin-port-file", apf],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                line = proc.stdout.readline().strip()
                m = re.match(r"^listening on http://127\.0\.0\.1:(\d+)$", line)
                self.assertTrue(m, line)
                port = int(m.group(1))
                with open(pf) as f:
                    self.assertEqual(f.read(), str(port))
                self.assertTrue(proc.stdout.readline().startswith("admin listening on http://127.0.0.1:"))
                with open(apf) as f:
                    aport = int(f.read())

                def get(path, token="tk"):
                    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                                 headers={"Authorization": "Bearer " + token})
                    try:
                        with urllib.request.urlopen(req, timeout=10) as r:
                            return r.status, json.loads(r.read())
                    except urllib.error.HTTPError as e:
                        return e.code, json.loads(e.read())

                st, l = get("/api/v1/pods")
                self.assertEqual((st, [i["metadata"]["name"] for i in l["items"]]), (200, ["p1"]))
                self.assertEqual(get("/api/v1/pods", token="bad")[0], 401)
                st, out = self.admin(aport, "POST", "/admin/faults",
                                     {"method": "GET", "path": "^/api/v1/nodes$", "status": 503, "count": 1})
                self.assertEqual(st, 200)
                self.assertEqual(get("/api/v1/nodes")[0], 503)
                self.assertEqual(get("/api/v1/nodes")[0], 200)
                self.assertEqual(self.admin(aport, "POST", "/admin/tokens", {"token": "new"})[0], 200)
                self.assertEqual(get("/api/v1/nodes")[0], 401)
                self.assertEqual(get("/api/v1/nodes", token="new")[0], 200)
                st, out = self.admin(aport, "POST", "/admin/pods/default/p1/phase", {"phase": "Succeeded"})
                self.assertEqual(out["status"]["phase"], "Succeeded")
                st, out = self.admin(aport, "POST", "/admin/objects", pod("p2"))
                self.assertEqual(out["items"][0]["metadata"]["name"], "p2")
                st, out = self.admin(aport, "GET", "/admin/objects/pods/default/p2")
                self.assertEqual(out["metadata"]["name"], "p2")
                st, out = self.admin(aport, "DELETE", "/admin/objects/pods/default/p2")
                self.assertEqual(out["metadata"]["name"], "p2")
                self.assertEqual(self.admin(aport, "POST", "/admin/compact")[0], 200)
                self.assertEqual(self.admin(aport, "POST", "/admin/watches/drop")[1], {"dropped": 0})
                st, reqs = self.admin(aport, "GET", "/admin/requests")
                self.assertEqual(reqs["requests"][0]["headers"]["Authorization"], "Bearer tk")
                self.assertEqual(self.admin(aport, "POST", "/admin/down")[0], 200)
                with self.assertRaises(OSError):
                    get("/api/v1/nodes", token="new")
                self.assertEqual(self.admin(aport, "POST", "/admin/up")[0], 200)
                self.assertEqual(get("/api/v1/nodes", token="new")[0], 200)
                st, evs = self.admin(aport, "GET", "/admin/events")
                self.assertEqual(evs, {"events": []})
                proc.send_signal(signal.SIGTERM)
                self.assertEqual(proc.wait(timeout=10), 0)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                proc.stdout.close()
                proc.stderr.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_cli_start_down(self):
        tmp = tempfile.mkdtemp(prefix="kube-apiserver-cli-")
        try:
            pf, apf = os.path.join(tmp, "port"), os.path.join(tmp, "admin-port")
            proc = subprocess.Popen([sys.executable, SERVER_PY, "--port", "0", "--port-file", pf, "--start-down",
                                     "--admin-port", "0", "--admin-port-file", apf],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            try:
                proc.stdout.readline()
                proc.stdout.readline()
                with open(pf) as f1, open(apf) as f2:
                    port, aport = int(f1.read()), int(f2.read())
                with self.assertRaises(OSError):
                    socket.create_connection(("127.0.0.1", port), timeout=2).recv(1)
                self.admin(aport, "POST", "/admin/up")
                with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=5) as r:
                    self.assertEqual(r.read(), b"ok")
            finally:
                proc.terminate()
                proc.wait(timeout=10)
                proc.stdout.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
