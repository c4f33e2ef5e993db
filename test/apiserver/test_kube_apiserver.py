#!/usr/bin/env python3
"""Self-tests of the test kube-apiserver: wire format checked against real captures.

Run: python3 -m unittest -v test_kube_apiserver   (from test/apiserver)
"""

import http.client
import json
import os
import re
import socket
import time
import unittest
from unittest import mock
import urllib.request

import kapi_errors
import kube_apiserver
from kube_apiserver import FakeApiServer
from kuberest import Kube

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER_PY = kube_apiserver.__file__


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


# the Python tiers' one REST client (test/lib/kuberest.py), on a test apiserver
Client = Kube.of


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


def core_event(name, ns="default", **kw):
    e = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": ns},
         "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": "trainer-0", "uid": "u1"},
         "reason": "FailedBinding", "message": "no GPU has room", "type": "Warning",
         "source": {"component": "gpushare-extender"}, "firstTimestamp": "2025-03-04T05:06:07Z",
         "lastTimestamp": "2025-03-04T05:06:07Z", "count": 1}
    e.update(kw)
    return e


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

    def assert_selected(self, kind, cases):
        """Listing pods with each selector (kind: labelSelector or
        fieldSelector) gives the names cases maps it to, in order."""
        for sel, want in cases.items():
            st, l = self.c.req("GET", f"/api/v1/pods?{kind}=" + urllib.request.quote(sel))
            self.assertEqual(st, 200, (sel, l))
            self.assertEqual([i["metadata"]["name"] for i in l["items"]], want, sel)

    def assert_bad_selector(self, kind, sel):
        """A selector the apiserver refuses: 400 BadRequest; its Status."""
        st, err = self.c.req("GET", f"/api/v1/pods?{kind}=" + urllib.request.quote(sel))
        self.assertEqual(st, 400)
        self.assertStatus(err, 400, "BadRequest")
        return err

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
        self.assert_selected("labelSelector", cases)
        self.assert_bad_selector("labelSelector", "a b c")

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
        self.assert_selected("fieldSelector", cases)
        err = self.assert_bad_selector("fieldSelector", "spec.foo=bar")
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
        with mock.patch.object(kapi_errors, "TOO_LARGE_RV_WAIT", 0.2):
            st, err = self.c.req("GET", "/api/v1/pods?resourceVersion=99999999")
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
        # the watch gpushare's informers open (kube_informer.c): bookmarks on,
        # no WatchList (sendInitialEvents is not served)
        w = RawWatch(self.srv, "/api/v1/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=5")
        ev = w.next_event()
        self.assertEqual(ev["type"], "ADDED")
        # periodic bookmarks (and the one before the deadline) carry only the RV
        bm2 = w.next_event()
        self.assertEqual(bm2["type"], "BOOKMARK")
        self.assertEqual(list(bm2), list(fbm))
        self.assertEqual(bm2["object"]["metadata"], {"resourceVersion": l["metadata"]["resourceVersion"]})
        self.assertEqual(bm2["object"]["kind"], "Pod")
        w.close()

    def test_dialects_gpushare_never_sends_are_refused(self):
        # WatchList and dryRun: refused rather than misread (docs/test-apiserver.md, "Patches")
        st, err = self.c.req("GET", "/api/v1/pods?watch=1&allowWatchBookmarks=true&sendInitialEvents=true"
                                    "&resourceVersionMatch=NotOlderThan")
        self.assertEqual((st, err["reason"]), (400, "BadRequest"))
        self.assertIn("sendInitialEvents", err["message"])
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods?dryRun=All", pod("dry"))
        self.assertEqual((st, err["message"]), (400, "dryRun is not served by the test apiserver"))
        self.assertIsNone(self.srv.get("pods", "default", "dry"))
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods?fieldValidation=Strict", pod("strict"))
        self.assertEqual((st, err["message"]), (400, "fieldValidation=Strict is not served by the test apiserver"))
        for path in ("/api/v1/watch/nodes/n1", "/api/v1/namespaces/default/bindings"):
            st, err = self.c.req("GET" if "watch" in path else "POST", path, None if "watch" in path else {})
            self.assertEqual((st, err["message"]), (404, "the server could not find the requested resource"))

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
        with mock.patch.object(kapi_errors, "TOO_LARGE_RV_WAIT", 0.2):
            st, err = self.c.req("GET", "/api/v1/pods?watch=1&resourceVersion=999999999")
        self.assertEqual(st, 504)
        self.assertEqual(err["reason"], "Timeout")



if __name__ == "__main__":
    unittest.main()
