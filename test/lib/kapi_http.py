"""Part of the test kube-apiserver (kube_apiserver.py, docs/test-apiserver.md):
HTTP plumbing: the threading server, query parsing, continue tokens, body decoding."""

import base64
import http.server
import json
import socket
import ssl
import threading
import traceback

from kapi_errors import DecodeError, _go_quote, err_bad_request
from kapi_objects import _json_type, typecheck


# ---------------------------------------------------------------------------
# HTTP server plumbing
# ---------------------------------------------------------------------------


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr, handler, api, ssl_ctx=None):
        self.api = api
        self.ssl_ctx = ssl_ctx
        self.conns = set()
        self.conns_lock = threading.Lock()
        super().__init__(addr, handler)

    def server_bind(self):
        import socketserver
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def finish_request(self, request, client_address):
        if self.ssl_ctx is not None:
            try:
                request.settimeout(10)
                conn = self.ssl_ctx.wrap_socket(request, server_side=True)
                conn.settimeout(None)
            except (ssl.SSLError, OSError):
                try:
                    request.close()
                except OSError:
                    pass
                return
            try:
                self.RequestHandlerClass(conn, client_address, self)
            finally:
                try:
                    conn.close()
                except OSError:
                    pass
            return
        self.RequestHandlerClass(request, client_address, self)

    def handle_error(self, request, client_address):
        if self.api is not None and self.api.verbose:
            traceback.print_exc()

    def track(self, conn, add):
        with self.conns_lock:
            if add:
                self.conns.add(conn)
            else:
                self.conns.discard(conn)

    def kill_connections(self):
        with self.conns_lock:
            conns = list(self.conns)
        for c in conns:
            try:
                socket.socket.shutdown(c, socket.SHUT_RDWR)
            except (OSError, TypeError):
                pass


def parse_bool(v, name):
    if v in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if v in ("0", "f", "F", "false", "FALSE", "False", ""):
        return False
    raise err_bad_request('strconv.ParseBool: parsing %s: invalid syntax' % _go_quote(v))


def parse_int(v, name):
    if v is None or v == "":
        return None
    try:
        return int(v, 10)
    except ValueError:
        raise err_bad_request('strconv.ParseInt: parsing %s: invalid syntax' % _go_quote(v))


def _continue_encode(rv, start):
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _list_meta(list_rv, next_key, remaining, lsel, fsel):
    """A list page's ListMeta: the continue token after next_key (None: the
    last page), remainingItemCount only when nothing is selected."""
    meta = {"resourceVersion": str(list_rv)}
    if next_key is not None:
        meta["continue"] = _continue_encode(list_rv, next_key + "\x00")
        if lsel.empty() and fsel.empty():
            meta["remainingItemCount"] = remaining
    return meta


def _continue_decode(token):
    try:
        pad = "=" * (-len(token) % 4)
        d = json.loads(base64.urlsafe_b64decode(token + pad).decode())
        if d.get("v") != "meta.k8s.io/v1" or not isinstance(d.get("rv"), int) or not isinstance(d.get("start"), str):
            raise ValueError
        return d["rv"], d["start"]
    except Exception:
        raise err_bad_request("continue key is not valid: incorrect encoded start resourceVersion "
                              "(version meta.k8s.io/v1)")


REGISTERED_GVK = {("v1", "Pod"), ("v1", "Node"), ("v1", "ConfigMap"), ("v1", "Event"), ("v1", "Binding"),
                  ("v1", "DeleteOptions"), ("v1", "Status"), ("coordination.k8s.io/v1", "Lease"),
                  ("coordination.k8s.io/v1beta1", "Lease"), ("events.k8s.io/v1", "Event"),
                  ("events.k8s.io/v1beta1", "Event")}


def decode_object(body, res, schema=None, kind=None, api_version=None, warnings=None):
    """Decode JSON bytes as the real apiserver decodes a body for endpoint `res` (raises 400 ApiError)."""
    kind = kind or res.kind
    api_version = api_version or res.api_version
    version = api_version.split("/")[-1]
    try:
        obj = json.loads(body.decode("utf-8")) if body else None
    except (ValueError, UnicodeDecodeError) as e:
        raise err_bad_request("the object provided is unrecognized (must be of type %s): couldn't get "
                              "version/kind; json parse error: %s (%s)" % (kind, _go_json_err(e), _summarize(body)))
    if not isinstance(obj, dict):
        raise err_bad_request("the object provided is unrecognized (must be of type %s): couldn't get "
                              "version/kind; json parse error: json: cannot unmarshal %s into Go value of "
                              "type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind "
                              "string \"json:\\\"kind,omitempty\\\"\" } (%s)" % (kind, _json_type(obj), _summarize(body)))
    for f in ("kind", "apiVersion"):
        if obj.get(f) is not None and not isinstance(obj.get(f), str):
            raise err_bad_request("the object provided is unrecognized (must be of type %s): couldn't get "
                                  "version/kind; json parse error: json: cannot unmarshal %s into Go struct "
                                  "field .%s of type string (%s)" % (kind, _json_type(obj[f]), f, _summarize(body)))
    bkind = obj.get("kind") or kind
    bav = obj.get("apiVersion") or api_version
    bver = bav.split("/")[-1]
    if (bav, bkind) not in REGISTERED_GVK:
        raise err_bad_request('%s in version "%s" cannot be handled as a %s: no kind "%s" is registered for '
                              'version "%s" in scheme "pkg/api/legacyscheme/scheme.go:30"'
                              % (bkind, bver, kind, bkind, bav))
    if bkind != kind:
        raise err_bad_request('%s in version "%s" cannot be handled as a %s: converting (%s.%s) to (%s): '
                              'unknown conversion' % (bkind, bver, kind, bver, bkind, kind))
    if bav != api_version:
        raise err_bad_request("the API version in the data (%s) does not match the expected API version (%s)"
                              % (bav, api_version))
    unknown = []
    try:
        obj = typecheck(obj, schema or res.schema, "", kind, unknown)
    except DecodeError as e:
        raise err_bad_request('%s in version "%s" cannot be handled as a %s: %s' % (kind, version, kind, e))
    for u in unknown:
        if warnings is not None:
            warnings.append('299 - "unknown field \\"%s\\""' % u)
    obj["kind"] = kind
    obj["apiVersion"] = api_version
    if not isinstance(obj.get("metadata"), dict):
        obj["metadata"] = {}
    return obj


def _go_json_err(e):
    if isinstance(e, json.JSONDecodeError):
        if e.msg.startswith("Expecting value"):
            return "invalid character looking for beginning of value"
        return "invalid character: " + e.msg
    return str(e)


def _summarize(data, maxlen=30):
    if not data:
        return "<empty>"
    if data[:1] == b"{":
        return data[:maxlen].decode("utf-8", "replace") + (" ..." if len(data) > maxlen else "")
    return data[:maxlen].hex() + (" ..." if len(data) > maxlen else "")
