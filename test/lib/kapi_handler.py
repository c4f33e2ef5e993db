"""Part of the test kube-apiserver (kube_apiserver.py, docs/test-apiserver.md):
ApiHandler: requests, authentication, routing and replies (its verbs: kapi_verbs.py)."""

import email.utils
import gzip
import http.server
import sys
import time
import traceback
import urllib.parse
import uuid

from kapi_errors import (ApiError, FLOWSCHEMA_UID, GZIP_THRESHOLD, HTTP_PHRASES, INPUT_MEDIA_TYPES,
    MAX_REQUEST_BODY, PRIORITYLEVEL_UID, err_bad_request, err_generic_not_found, err_internal,
    err_method_not_allowed, err_not_acceptable, err_unsupported_media, go_json)
from kapi_objects import RESOURCES, RES_BY_PATH
from kapi_http import decode_object, parse_bool
from kapi_verbs import ApiVerbs


class ApiHandler(ApiVerbs, http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kube-apiserver-test"
    sys_version = ""

    # -- plumbing -----------------------------------------------------------
    def setup(self):
        super().setup()
        self.server.track(self.connection, True)

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass
        self.server.track(self.connection, False)

    def log_message(self, fmt, *args):
        if self.server.api.verbose:
            sys.stderr.write("kube-apiserver-test: %s - %s\n" % (self.address_string(), fmt % args))

    def do_GET(self):
        self.dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            parts, total = [], 0
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    raise ConnectionError("truncated chunked body")
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537).strip():
                        pass
                    break
                parts.append(self.rfile.read(size))
                total += size
                self.rfile.readline()
            return b"".join(parts)
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_REQUEST_BODY:
            self.close_connection = True
            raise ApiError(413, "RequestEntityTooLarge",
                           "Request entity too large: limit is %d" % MAX_REQUEST_BODY)
        return self.rfile.read(n) if n else b""

    def base_headers(self, content_type="application/json"):
        return [("Audit-Id", str(uuid.uuid4())), ("Cache-Control", "no-cache, private"),
                ("Content-Type", content_type), ("X-Kubernetes-Pf-Flowschema-Uid", FLOWSCHEMA_UID),
                ("X-Kubernetes-Pf-Prioritylevel-Uid", PRIORITYLEVEL_UID)]

    def write_raw(self, data):
        self.wfile.write(data)
        try:
            self.wfile.flush()
        except AttributeError:
            pass

    def send_bytes(self, code, body, headers=(), content_type="application/json"):
        hdrs = self.base_headers(content_type) + list(headers)
        ae = (self.headers.get("Accept-Encoding") or "").lower() if self.headers else ""
        chunked = False
        if len(body) > GZIP_THRESHOLD and "gzip" in ae and self.command != "HEAD":
            body = gzip.compress(body, compresslevel=1)
            hdrs += [("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")]
            chunked = True
        hdrs.append(("Date", email.utils.formatdate(usegmt=True)))
        if chunked:
            hdrs.append(("Transfer-Encoding", "chunked"))
        else:
            hdrs.append(("Content-Length", str(len(body))))
        if self.close_connection:
            hdrs.append(("Connection", "close"))
        head = "HTTP/1.1 %d %s\r\n" % (code, HTTP_PHRASES.get(code, "Status"))
        head += "".join("%s: %s\r\n" % kv for kv in hdrs) + "\r\n"
        if self.command == "HEAD":
            body = b""
        if chunked:
            payload = b""
            for i in range(0, len(body), 32768):
                piece = body[i:i + 32768]
                payload += b"%x\r\n%s\r\n" % (len(piece), piece)
            body = payload + b"0\r\n\r\n"
        self.resp_code = code
        if getattr(self, "entry", None) is not None:
            self.entry["status"] = code
        self.write_raw(head.encode("latin-1") + body)

    def send_obj(self, code, obj, headers=()):
        self.send_bytes(code, (go_json(obj) + "\n").encode("utf-8"), headers)

    def send_error_status(self, e):
        headers = list(e.headers)
        self.send_obj(e.code, e.status(), headers)

    # -- dispatch -----------------------------------------------------------
    def dispatch(self):
        api = self.server.api
        self.resp_code = None
        url = urllib.parse.urlsplit(self.path)
        path, rawq = url.path, url.query
        entry = api._log_request(self, path, rawq)
        self.entry = entry
        self.warnings = []
        try:
            try:
                body = self.read_body()
            except ApiError:
                raise
            except (ValueError, ConnectionError):
                self.close_connection = True
                return
            entry["body"] = body[:65536].decode("utf-8", "replace")
            api._authenticate(self, entry)
            fault = api._match_fault(self.command, path, rawq)
            if fault is not None:
                if fault.delay:
                    time.sleep(fault.delay)
                if fault.action == "reset":
                    entry["status"] = "reset"
                    self.hang_up()
                    return
                if fault.action == "fail":
                    raise fault.error()
                if fault.action == "reply":
                    self.send_bytes(fault.status, (fault.body or "").encode("utf-8"))
                    return
            self.route(path, rawq, body)
        except ApiError as e:
            try:
                self.send_error_status(e)
            except OSError:
                self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as e:  # a bug here must still answer like the apiserver would
            if api.verbose:
                traceback.print_exc()
            try:
                self.send_error_status(err_internal("%s: %s" % (type(e).__name__, e)))
            except OSError:
                self.close_connection = True
        finally:
            entry["status"] = entry.get("status") or self.resp_code

    def route(self, path, rawq, body):
        api = self.server.api
        if path in ("/healthz", "/livez", "/readyz"):
            return self.send_bytes(200, b"ok", content_type="text/plain; charset=utf-8")
        if path == "/version":
            return self.send_obj(200, {"major": "1", "minor": "34", "emulationMajor": "1",
                                       "emulationMinor": "34", "gitVersion": "v1.34.0-gpushare-test",
                                       "gitCommit": "0000000000000000000000000000000000000000",
                                       "gitTreeState": "clean", "buildDate": "2025-08-27T00:00:00Z",
                                       "goVersion": "go1.24.6", "compiler": "gc",
                                       "platform": "linux/amd64"})
        if path in ("/api", "/api/"):
            return self.send_obj(200, {"kind": "APIVersions", "versions": ["v1"],
                                       "serverAddressByClientCIDRs": [
                                           {"clientCIDR": "0.0.0.0/0",
                                            "serverAddress": "127.0.0.1:%d" % api.port}]})
        if path in ("/apis", "/apis/"):
            groups = []
            for g in ("coordination.k8s.io",):
                gv = {"groupVersion": g + "/v1", "version": "v1"}
                groups.append({"name": g, "versions": [gv], "preferredVersion": gv})
            return self.send_obj(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        segs = [urllib.parse.unquote(s) for s in path.strip("/").split("/")] if path.strip("/") else []
        if len(segs) >= 2 and segs[0] == "api" and segs[1] == "v1":
            group, version, rest = "", "v1", segs[2:]
        elif len(segs) >= 3 and segs[0] == "apis":
            group, version, rest = segs[1], segs[2], segs[3:]
        else:
            raise err_generic_not_found()
        if not rest:
            if self.command != "GET":
                raise err_generic_not_found()
            return self.send_obj(200, self.discovery(group, version))
        ns = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            ns, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise err_generic_not_found()
        plural = rest[0]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        query = urllib.parse.parse_qs(rawq, keep_blank_values=True)
        q = {k: v[0] for k, v in query.items()}
        m = self.command
        if m != "GET":
            self.no_dry_run(q)
            self.check_field_validation(q)
        res = RES_BY_PATH.get((group, version, plural))
        if res is None:
            raise err_generic_not_found()
        if (ns is not None) != res.namespaced and not (ns is None and res.namespaced and name is None):
            raise err_generic_not_found()
        if ns is not None and not ns:
            raise err_generic_not_found()
        if sub is not None:
            if res.storage == "pods" and sub == "binding":
                if m != "POST":
                    raise err_method_not_allowed(res, m.lower())
                return self.do_binding(ns, name, body, q)
            if sub == "status" and res.storage in ("pods", "nodes"):
                if m == "GET":
                    return self.do_get(res, ns, name, q)
                if m == "PUT":
                    return self.do_update(res, ns, name, body, q, subresource="status")
                if m == "PATCH":
                    return self.do_patch(res, ns, name, body, q, subresource="status")
                raise err_method_not_allowed(res, m.lower())
            raise err_generic_not_found()
        if name is None:
            if m == "GET":
                if parse_bool(q.get("watch", "false"), "watch"):
                    return self.do_watch(res, ns, q, rawq)
                return self.do_list(res, ns, q)
            if m == "POST":
                if ns is None and res.namespaced:
                    raise err_method_not_allowed(res, "create")
                return self.do_create(res, ns, body, q)
            raise err_method_not_allowed(res, m.lower())
        if ns is None and res.namespaced:
            raise err_generic_not_found()
        if m == "GET":
            if parse_bool(q.get("watch", "false"), "watch"):
                fs = q.get("fieldSelector", "")
                q["fieldSelector"] = ("metadata.name=%s" % name) + ("," + fs if fs else "")
                return self.do_watch(res, ns, q, rawq)
            return self.do_get(res, ns, name, q)
        if m == "PUT":
            return self.do_update(res, ns, name, body, q)
        if m == "PATCH":
            return self.do_patch(res, ns, name, body, q)
        if m == "DELETE":
            return self.do_delete(res, ns, name, body, q)
        raise err_method_not_allowed(res, m.lower())

    def discovery(self, group, version):
        items = []
        for r in RESOURCES:
            if r.group != group or r.version != version:
                continue
            verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
            items.append({"name": r.plural, "singularName": r.kind.lower(), "namespaced": r.namespaced,
                          "kind": r.kind, "verbs": verbs})
            if r.storage in ("pods", "nodes"):
                items.append({"name": r.plural + "/status", "singularName": "", "namespaced": r.namespaced,
                              "kind": r.kind, "verbs": ["get", "patch", "update"]})
            if r.storage == "pods":
                items.append({"name": "pods/binding", "singularName": "", "namespaced": True,
                              "kind": "Binding", "verbs": ["create"]})
        if not items:
            raise err_generic_not_found()
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": version if not group else group + "/" + version, "resources": items}

    # -- content negotiation and decoding ------------------------------------
    def check_accept(self):
        accept = self.headers.get("Accept")
        if not accept:
            return
        for part in accept.split(","):
            items = [p.strip() for p in part.split(";")]
            mt = items[0].lower()
            params = {p.split("=", 1)[0].strip(): p.split("=", 1)[1].strip() if "=" in p else ""
                      for p in items[1:]}
            if "as" in params:
                continue
            if mt in ("application/json", "application/*", "*/*"):
                return
        raise err_not_acceptable()

    def decode_body(self, body, res, schema=None, kind=None, api_version=None, check_ct=True):
        """Decode a request body into a dict like the real decoder (400s on bad input)."""
        if check_ct:
            ct = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip().lower()
            if ct != "application/json":
                raise err_unsupported_media(INPUT_MEDIA_TYPES)
        return decode_object(body, res, schema, kind, api_version, self.warnings)

    def warning_headers(self):
        return [("Warning", w) for w in self.warnings]

    @staticmethod
    def check_field_validation(q):
        """Unknown fields warn, as by default; Strict is never sent by
        gpushare: refused rather than misread."""
        fv = q.get("fieldValidation", "")
        if fv == "Strict":
            raise err_bad_request("fieldValidation=Strict is not served by the test apiserver")
        if fv not in ("", "Ignore", "Warn"):
            raise err_bad_request("fieldValidation parameter unsupported: %s" % fv)
