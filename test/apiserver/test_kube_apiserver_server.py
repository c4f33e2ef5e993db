#!/usr/bin/env python3
"""Self-tests of the test kube-apiserver: authentication, TLS, fault injection and the command line.

Run: python3 -m unittest -v test_kube_apiserver_server   (from test/apiserver)
"""

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
import time
import unittest
import urllib.request

from test_kube_apiserver import (  # the helpers
    binding, Base, Client, RawWatch, SERVER_PY, node, pod)
from kube_apiserver import FakeApiServer


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
