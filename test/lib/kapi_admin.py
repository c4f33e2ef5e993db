"""Part of the test kube-apiserver (kube_apiserver.py, docs/test-apiserver.md):
the admin HTTP API (fault injection and state for tests in other processes) and state files."""

import http.server
import json
import sys
import traceback
import urllib.parse

from kapi_errors import ApiError


# ---------------------------------------------------------------------------
# Admin HTTP API (plain JSON; for tests in other processes)
# ---------------------------------------------------------------------------


class AdminHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        if self.server.api.verbose:
            sys.stderr.write("kube-apiserver-test admin: %s\n" % (fmt % args))

    def do_GET(self):
        self.dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def reply(self, code, obj):
        data = (json.dumps(obj) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def dispatch(self):
        api = self.server.api
        url = urllib.parse.urlsplit(self.path)
        q = {k: v[0] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw.decode()) if raw.strip() else {}
        except ValueError as e:
            return self.reply(400, {"error": "bad JSON: %s" % e})
        segs = [urllib.parse.unquote(s) for s in url.path.strip("/").split("/")]
        if segs and segs[0] == "admin":
            segs = segs[1:]
        m = self.command
        try:
            out = self.route_admin(api, m, segs, q, body)
            if isinstance(out, tuple):
                return self.reply(*out)
            return self.reply(200, out)
        except ApiError as e:
            return self.reply(e.code, e.status())
        except (KeyError, ValueError, TypeError) as e:
            return self.reply(400, {"error": "%s: %s" % (type(e).__name__, e)})
        except Exception as e:
            traceback.print_exc()
            return self.reply(500, {"error": "%s: %s" % (type(e).__name__, e)})

    def route_admin(self, api, m, segs, q, body):
        head = segs[0] if segs else ""
        if head in ("", "health"):
            return {"ok": True, "up": api.is_up, "url": api.url, "resourceVersion": str(api.store.rv)}
        if head == "rv":
            return {"resourceVersion": str(api.store.rv)}
        if head == "objects":
            if m == "GET":
                if len(segs) >= 3:
                    ns, name = (segs[2], segs[3]) if len(segs) >= 4 else (None, segs[2])
                    o = api.get(segs[1], ns, name)
                    if o is None:
                        return 404, {"error": "not found"}
                    return o
                return {"kind": "List", "apiVersion": "v1",
                        "items": api.list(q.get("resource") or (segs[1] if len(segs) > 1 else None),
                                          q.get("namespace"))}
            if m in ("POST", "PUT"):
                items = body.get("items") if body.get("kind", "").endswith("List") else [body]
                return {"kind": "List", "apiVersion": "v1", "items": [api.upsert(o) for o in items or []]}
            if m == "PATCH":
                ns, name = (segs[2], segs[3]) if len(segs) >= 4 else (None, segs[2])
                return api.patch(segs[1], ns, name, body)
            if m == "DELETE":
                ns, name = (segs[2], segs[3]) if len(segs) >= 4 else (None, segs[2])
                o = api.delete(segs[1], ns, name)
                if o is None:
                    return 404, {"error": "not found"}
                return o
        if head == "pods" and len(segs) == 4 and segs[3] == "phase" and m == "POST":
            return api.set_pod_phase(segs[1], segs[2], body["phase"])
        if head == "faults":
            if m == "GET":
                return {"faults": api.faults()}
            if m == "POST":
                fid = api.inject_fault(method=body.get("method", ".*"), path=body.get("path", ".*"),
                                       status=body.get("status", 500), count=body.get("count", 1),
                                       delay=body.get("delay", 0), action=body.get("action", "fail"),
                                       reason=body.get("reason"), message=body.get("message"),
                                       retry_after=body.get("retryAfter"), query=body.get("query"),
                                       body=body.get("body"))
                return {"id": fid}
            if m == "DELETE":
                if len(segs) > 1:
                    api.remove_fault(int(segs[1]))
                else:
                    api.clear_faults()
                return {"ok": True}
        if head == "watches":
            if m == "GET":
                return {"watches": api.watches()}
            if m == "POST" and len(segs) > 1 and segs[1] == "drop":
                return {"dropped": api.drop_watches(body.get("mode", "close"), body.get("resource"))}
        if head == "compact" and m == "POST":
            return {"resourceVersion": str(api.compact(body.get("resource")))}
        if head == "down" and m == "POST":
            api.down()
            return {"ok": True, "up": False}
        if head == "up" and m == "POST":
            api.up()
            return {"ok": True, "up": True}
        if head == "events":
            if m == "GET":
                return {"events": api.events()}
            if m == "DELETE":
                api.clear_events()
                return {"ok": True}
        if head == "requests":
            if m == "GET":
                return {"requests": api.requests(since=int(q.get("since", 0)))}
            if m == "DELETE":
                api.clear_requests()
                return {"ok": True}
        if head == "tokens" and m in ("POST", "PUT"):
            api.set_tokens(body.get("tokens") if "tokens" in body else [body.get("token")])
            return {"ok": True}
        if head == "state" and m == "GET":
            return {"kind": "List", "apiVersion": "v1", "items": api.list(None)}
        return 404, {"error": "no admin route %s %s" % (m, "/" + "/".join(segs))}


class _AdminServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, api):
        self.api = api
        super().__init__(addr, AdminHandler)

    def server_bind(self):
        import socketserver
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


# ---------------------------------------------------------------------------
# The test apiserver
# ---------------------------------------------------------------------------


def load_state_file(path):
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8")
    if path.endswith((".yaml", ".yml")) and not text.lstrip().startswith(("{", "[")):
        try:
            import yaml  # optional, only for YAML state files
        except ImportError:
            raise SystemExit("kube-apiserver-test: %s: YAML state needs PyYAML; use JSON" % path)
        docs = [d for d in yaml.safe_load_all(text) if d]
        items = []
        for d in docs:
            items.extend(d.get("items") or [] if isinstance(d, dict) and d.get("kind", "").endswith("List") else [d])
        return items
    doc = json.loads(text)
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict) and (doc.get("kind", "").endswith("List") or "items" in doc):
        return doc.get("items") or []
    return [doc]
