#!/usr/bin/env python3
"""A faithful test kube-apiserver for gpushare's tests (Python 3 standard library only).

It speaks the real JSON wire format of kube-apiserver for the resources the
extender uses (core/v1 nodes, pods, configmaps, events; coordination.k8s.io/v1
leases): GET, LIST (pagination, label and field
selectors, resourceVersion semantics), WATCH (chunked HTTP/1.1 streams,
bookmarks, 410 Expired in-stream), POST, PUT (optimistic concurrency), PATCH
(JSON merge patch, the one gpushare sends), DELETE, pods/binding, status
subresources, real Status error bodies, bearer-token and client-cert auth,
HTTPS, and a fault-injection admin API.

See docs/test-apiserver.md for what it implements and what it does not.
This file is the server object and the CLI (a little over 800 lines: one
class, whose fault-injection admin API acts on the state it holds); the rest is split by layer into
kapi_errors.py, kapi_objects.py, kapi_store.py, kapi_http.py, kapi_verbs.py,
kapi_handler.py and kapi_admin.py beside it (imported from this directory).

CLI:
  python3 kube_apiserver.py --port 0 [--state FILE] [--tls-cert C --tls-key K]
      [--token T] [--port-file PATH] [--admin-port 0] [--admin-port-file PATH]

Python:
  from kube_apiserver import FakeApiServer
  srv = FakeApiServer(state=[...], token="t").start()
  ...  srv.url, srv.add(obj), srv.inject_fault(...), srv.drop_watches() ...
  srv.stop()
"""

import argparse
import collections
import copy
import datetime
import os
import random
import re
import signal
import ssl
import sys
import threading
import time
import urllib.parse
import uuid

__all__ = ["FakeApiServer", "ApiError", "main"]

from kapi_errors import (ApiError, FieldError, OPTIMISTIC_LOCK_ERROR_MSG,
    aggregate, err_already_exists, err_bad_request, err_conflict, err_invalid, err_not_found,
    err_res_conflict, err_unauthorized, fmt_time, is_valid_path_segment, make_details, make_status,
    now_time, utcnow, validate_object_meta)
from kapi_objects import (RES_BY_KIND, STORAGE_RES, merge_patch, meta_of, obj_key,
    resource_for, view_obj)
from kapi_store import (Fault, SELECTED_HEADERS, Store, default_pod_spec, pod_spec_update_errors,
    qos_class, set_managed_fields, validate_configmap, validate_event, validate_lease,
    validate_pod)
from kapi_http import _HTTPServer
from kapi_handler import ApiHandler
from kapi_admin import _AdminServer, load_state_file
from kapi_errors import NS_MISMATCH_MSG  # noqa: F401  (the self-tests read it here)


def check_preconditions(res, name, etcd_key, pre, cm):
    """A uid or resourceVersion precondition (DeleteOptions, a Binding's
    metadata) against the stored object's metadata cm: 409 with etcd3's
    StorageError text."""
    for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
        if pre.get(field) and pre[field] != cm.get(field):
            raise err_res_conflict(res, name, "StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, "
                                   "AdditionalErrorMsg: Precondition failed: %s in precondition: %s, %s in "
                                   "object meta: %s" % (etcd_key, label, pre[field], label, cm.get(field, "")))


class FakeApiServer:
    """A faithful test kube-apiserver, in-process.

    FakeApiServer(state=None, port=0, host="127.0.0.1", tls_cert=None, tls_key=None, token=None,
                  client_ca=None, admin_port=None, bookmark_interval=60.0, history_limit=1000,
                  default_watch_timeout=1800.0, pod_delete_delay=0.0, start_rv=1000, verbose=False)
    """

    def __init__(self, state=None, port=0, host="127.0.0.1", tls_cert=None, tls_key=None, token=None,
                 client_ca=None, admin_port=None, bookmark_interval=60.0, history_limit=1000,
                 default_watch_timeout=1800.0, pod_delete_delay=0.0, start_rv=1000, verbose=False):
        self.host = host
        self.port = port
        self.tls_cert = tls_cert
        self.tls_key = tls_key
        self.client_ca = client_ca
        if isinstance(token, (list, tuple)):
            self.tokens = [t for t in token if t]
        else:
            self.tokens = [token] if token else []
        self.admin_port = admin_port
        self.bookmark_interval = float(bookmark_interval)
        self.default_watch_timeout = float(default_watch_timeout)
        self.pod_delete_delay = float(pod_delete_delay)
        self.verbose = verbose
        self.store = Store(history_limit=history_limit, start_rv=start_rv)
        self._faults = []
        self._faults_lock = threading.Lock()
        self._requests = collections.deque(maxlen=100000)
        self._req_seq = 0
        self._req_lock = threading.Lock()
        self._events = []
        self._active_watches = set()
        self._srv = None
        self._srv_thread = None
        self._admin = None
        self._admin_thread = None
        self._srv_lock = threading.RLock()
        self._ssl_ctx = None
        self._timers = []
        self.is_up = False
        if state is not None:
            items = load_state_file(state) if isinstance(state, str) else (
                state.get("items", []) if isinstance(state, dict) else list(state))
            for o in items:
                if not isinstance(o, dict) or (o.get("apiVersion", "v1"), o.get("kind")) not in RES_BY_KIND:
                    sys.stderr.write("kube-apiserver-test: state: skipping unsupported object %s/%s\n"
                                     % (o.get("apiVersion") if isinstance(o, dict) else "?",
                                        o.get("kind") if isinstance(o, dict) else type(o).__name__))
                    continue
                self.upsert(o)
            # The preloaded objects' list form, encoded once now: kube-apiserver
            # serves lists from its watch cache of decoded objects and Go
            # encodes them far faster than Python does, so a first list here
            # should not cost what a Python encoder does (docs/benchmarks.md).
            self.store.warm_list_items()

    # -- lifecycle ----------------------------------------------------------
    @property
    def scheme(self):
        return "https" if self.tls_cert else "http"

    @property
    def url(self):
        return "%s://%s:%d" % (self.scheme, self.host, self.port)

    @property
    def admin_url(self):
        return "http://%s:%d" % (self.host, self.admin_port) if self._admin else None

    def _make_ssl(self):
        if not self.tls_cert:
            return None
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.tls_cert, self.tls_key)
        try:
            ctx.set_alpn_protocols(["http/1.1"])
        except (NotImplementedError, AttributeError):
            pass
        if self.client_ca:
            ctx.load_verify_locations(self.client_ca)
            ctx.verify_mode = ssl.CERT_OPTIONAL
        return ctx

    def start(self, down=False):
        """Bind and serve (in background threads). Returns self."""
        self._ssl_ctx = self._make_ssl()
        self._bind()
        if down:
            self.down()
        if self.admin_port is not None:
            self._admin = _AdminServer((self.host, self.admin_port), self)
            self.admin_port = self._admin.server_address[1]
            self._admin_thread = threading.Thread(target=self._admin.serve_forever, kwargs={"poll_interval": 0.1},
                                                  name="kube-apiserver-test-admin", daemon=True)
            self._admin_thread.start()
        return self

    def _bind(self):
        with self._srv_lock:
            srv = _HTTPServer((self.host, self.port), ApiHandler, self, self._ssl_ctx)
            self.port = srv.server_address[1]
            self._srv = srv
            self._srv_thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1},
                                                name="kube-apiserver-test", daemon=True)
            self._srv_thread.start()
            self.is_up = True

    def down(self):
        """Take the server down: close the listening socket and every open connection."""
        with self._srv_lock:
            srv = self._srv
            if srv is None:
                self.is_up = False
                return
            self._srv = None
            self.is_up = False
            srv.shutdown()
            srv.server_close()
            self.drop_watches("close")
            srv.kill_connections()

    def up(self):
        """Listen again on the same port."""
        with self._srv_lock:
            if self._srv is not None:
                return
            deadline = time.monotonic() + 10
            while True:
                try:
                    self._bind()
                    return
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)

    def stop(self):
        self.down()
        for t in self._timers:
            t.cancel()
        if self._admin is not None:
            self._admin.shutdown()
            self._admin.server_close()
            self._admin = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- auth, faults, logs ---------------------------------------------------
    def set_tokens(self, tokens):
        self.tokens = [t for t in (tokens or []) if t]

    def _authenticate(self, handler, entry):
        if not self.tokens and not self.client_ca:
            return
        auth = handler.headers.get("Authorization") or ""
        parts = auth.split(" ", 2)
        if len(parts) >= 2 and parts[0].lower() == "bearer" and parts[1] and parts[1] in self.tokens:
            entry["user"] = "token"
            return
        if self.client_ca and isinstance(handler.connection, ssl.SSLSocket):
            try:
                cert = handler.connection.getpeercert()
            except (ValueError, OSError):
                cert = None
            if cert:
                cn = ""
                for rdn in cert.get("subject", ()):
                    for k, v in rdn:
                        if k == "commonName":
                            cn = v
                entry["user"] = "cert:" + cn
                return
        raise err_unauthorized()

    def inject_fault(self, method=".*", path=".*", status=500, count=1, delay=0.0, action="fail",
                     reason=None, message=None, retry_after=None, query=None, body=None):
        """Next `count` requests (None: all) whose method fullmatches `method` and whose path matches the
        regex `path` (re.search): action "fail" answers Status `status`; "delay" waits `delay` seconds and
        then serves normally; "reset" closes the connection without an answer; "reply" answers `status`
        with the JSON text `body` as given (a reply no real apiserver would make, to test a client's
        defences). Returns the fault id."""
        f = Fault(method, path, status, count, delay, action, reason, message, retry_after, query, body)
        with self._faults_lock:
            self._faults.append(f)
        return f.id

    def delay(self, path=".*", seconds=1.0, method=".*", count=None):
        return self.inject_fault(method=method, path=path, delay=seconds, action="delay", count=count)

    def remove_fault(self, fid):
        with self._faults_lock:
            self._faults = [f for f in self._faults if f.id != fid]

    def clear_faults(self):
        with self._faults_lock:
            self._faults = []

    def faults(self):
        with self._faults_lock:
            return [f.describe() for f in self._faults]

    def _match_fault(self, method, path, query):
        with self._faults_lock:
            for f in self._faults:
                if f.matches(method, path, query):
                    f.hits += 1
                    if f.count is not None:
                        f.count -= 1
                        if f.count <= 0:
                            self._faults.remove(f)
                    return f
        return None

    def _log_request(self, handler, path, rawq):
        with self._req_lock:
            self._req_seq += 1
            entry = {"seq": self._req_seq, "time": time.time(), "method": handler.command, "path": path,
                     "query": rawq,
                     "params": {k: v[0] if len(v) == 1 else v
                                for k, v in urllib.parse.parse_qs(rawq, keep_blank_values=True).items()},
                     "headers": {h: handler.headers.get(h) for h in SELECTED_HEADERS if handler.headers.get(h) is not None},
                     "tls": isinstance(handler.connection, ssl.SSLSocket), "status": None}
            self._requests.append(entry)
        return entry

    def requests(self, since=0, method=None, path=None):
        """The request log: dicts with seq, time, method, path, query, params, headers, body, status."""
        with self._req_lock:
            out = [dict(e) for e in self._requests if e["seq"] > since]
        if method:
            out = [e for e in out if e["method"] == method]
        if path:
            out = [e for e in out if re.search(path, e["path"])]
        return out

    def clear_requests(self):
        with self._req_lock:
            self._requests.clear()

    def events(self):
        """Events received through the API: {"api", "verb", "namespace", "name", "object"}."""
        with self.store.lock:
            return copy.deepcopy(self._events)

    def clear_events(self):
        with self.store.lock:
            self._events = []

    def _watch_started(self, w):
        with self.store.lock:
            self._active_watches.add(w)

    def _watch_ended(self, w):
        with self.store.lock:
            self._active_watches.discard(w)

    def watches(self):
        with self.store.lock:
            return [w.describe() for w in self._active_watches]

    def wait_for_watches(self, resource=None, count=1, timeout=10.0):
        """Wait until at least `count` watches (of `resource`, if given) are open."""
        r = resource_for(resource) if resource else None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.store.lock:
                n = sum(1 for w in self._active_watches if r is None or w.storage == r.storage)
            if n >= count:
                return True
            time.sleep(0.02)
        return False

    def drop_watches(self, mode="close", resource=None):
        """Drop open watches. mode "close": cut the connection mid-stream (no final chunk); "end": end
        the stream cleanly like a server timeout; "error": send an ERROR 410 Expired event then end."""
        r = resource_for(resource) if resource else None
        with self.store.lock:
            ws = [w for w in self._active_watches if r is None or w.storage == r.storage]
        for w in ws:
            w.stop(mode)
        return len(ws)

    def compact(self, resource=None):
        """Compact the history: a watch (or Exact list / continue) from any RV handed out so far gets
        410 Expired. Returns the new current resourceVersion."""
        return self.store.compact(resource_for(resource).storage if resource else None)

    @property
    def resource_version(self):
        return str(self.store.rv)

    # -- object API (tests) ----------------------------------------------------
    def _res_of_obj(self, obj):
        key = (obj.get("apiVersion", "v1"), obj.get("kind"))
        res = RES_BY_KIND.get(key)
        if res is None:
            raise ValueError("unsupported object kind %s/%s" % key)
        return res

    def _complete_new(self, res, obj):
        obj = copy.deepcopy(obj)
        obj["kind"], obj["apiVersion"] = res.kind, res.api_version
        meta = obj.setdefault("metadata", {})
        if res.namespaced:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(random.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", now_time())
        meta.pop("resourceVersion", None)
        if res.kind == "Pod":
            spec = obj.setdefault("spec", {})
            default_pod_spec(spec)
            status = obj.setdefault("status", {})
            status.setdefault("phase", "Pending")
        return res, obj

    def add(self, obj):
        """Create an object (no validation; kind/apiVersion required). Raises ApiError if it exists."""
        res, obj = self._complete_new(self._res_of_obj(obj), obj)
        key = obj_key(meta_of(obj).get("namespace"), meta_of(obj)["name"])
        with self.store.lock:
            if self.store.get(res.storage, key) is not None:
                raise err_already_exists(res, meta_of(obj)["name"])
            return copy.deepcopy(self.store.commit(res.storage, "ADDED", key, obj, None))

    def upsert(self, obj):
        """Create or replace an object (MODIFIED keeps uid/creationTimestamp unless given)."""
        res = self._res_of_obj(obj)
        with self.store.lock:
            r2, new = self._complete_new(res, obj)
            key = obj_key(meta_of(new).get("namespace"), meta_of(new)["name"])
            cur = self.store.get(r2.storage, key)
            if cur is None:
                return copy.deepcopy(self.store.commit(r2.storage, "ADDED", key, new, None))
            given = meta_of(obj)
            nm = new["metadata"]
            if not given.get("uid"):
                nm["uid"] = meta_of(cur).get("uid")
            if not given.get("creationTimestamp"):
                nm["creationTimestamp"] = meta_of(cur).get("creationTimestamp")
            return copy.deepcopy(self.store.commit(r2.storage, "MODIFIED", key, new, cur))

    def update(self, obj):
        """Replace an existing object as is (no validation)."""
        res = self._res_of_obj(obj)
        meta = meta_of(obj)
        if self.get(res, meta.get("namespace") or ("default" if res.namespaced else None), meta["name"]) is None:
            raise err_not_found(res, meta["name"])
        return self.upsert(obj)

    def get(self, resource, namespace, name):
        res, _ns, key = self._addressed(resource, namespace, name)
        o = self.store.get(res.storage, key)
        return copy.deepcopy(view_obj(res, o)) if o is not None else None

    def list(self, resource=None, namespace=None):
        out = []
        with self.store.lock:
            for res in ([resource_for(resource)] if resource else list(STORAGE_RES.values())):
                for k in sorted(self.store.objects[res.storage]):
                    o = self.store.objects[res.storage][k]
                    if namespace and meta_of(o).get("namespace") != namespace:
                        continue
                    out.append(copy.deepcopy(view_obj(res, o)))
        return out

    @staticmethod
    def _addressed(resource, namespace, name):
        """(the Res, the namespace or None if cluster-scoped, the store key)."""
        res = resource_for(resource)
        if not res.namespaced:
            namespace = None
        return res, namespace, obj_key(namespace, name)

    def patch(self, resource, namespace, name, patch):
        """JSON-merge-patch an object without validation (e.g. status changes); emits MODIFIED."""
        res, namespace, key = self._addressed(resource, namespace, name)
        with self.store.lock:
            cur = self.store.get(res.storage, key)
            if cur is None:
                raise err_not_found(res, name)
            new = merge_patch(copy.deepcopy(view_obj(res, cur)), patch)
            nm = new.setdefault("metadata", {})
            nm["name"] = name
            if namespace:
                nm["namespace"] = namespace
            nm["uid"] = meta_of(cur).get("uid")
            if new == cur:
                return copy.deepcopy(view_obj(res, cur))
            return copy.deepcopy(view_obj(res, self.store.commit(res.storage, "MODIFIED", key, new, cur)))

    def set_pod_phase(self, namespace, name, phase, **status):
        """Set status.phase (e.g. Succeeded, Failed, Running); emits MODIFIED."""
        st = dict(status)
        st["phase"] = phase
        return self.patch("pods", namespace, name, {"status": st})

    def delete(self, resource, namespace, name):
        """Delete at once (no grace period); emits DELETED with the last state. None if absent."""
        res, namespace, key = self._addressed(resource, namespace, name)
        with self.store.lock:
            cur = self.store.get(res.storage, key)
            if cur is None:
                return None
            return copy.deepcopy(view_obj(res, self.store.commit(res.storage, "DELETED", key, None, cur)))

    # -- REST semantics (used by the handler) ----------------------------------
    def _record_event(self, verb, res, obj):
        self._events.append({"api": "v1", "verb": verb, "namespace": meta_of(obj).get("namespace"),
                             "name": meta_of(obj).get("name"), "object": copy.deepcopy(view_obj(res, obj))})

    def _create(self, res, obj, errs, manager=None):
        store = self.store
        sres = STORAGE_RES[res.storage]
        meta = obj["metadata"]
        if meta.get("resourceVersion"):
            raise err_bad_request("resourceVersion should not be set on objects to be created")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(random.choice("bcdfghjklmnpqrstvwxz2456789")
                                                          for _ in range(5))
        if res.storage == "events":
            if not meta.get("name"):
                errs = errs + [FieldError("Required", "metadata.name", detail="name or generateName is required")]
            else:
                for m in is_valid_path_segment(meta["name"]):
                    errs = errs + [FieldError("Invalid", "metadata.name", meta["name"], m)]
        elif res.storage != "events":
            errs = errs + validate_object_meta(meta, res.namespaced)
        if res.kind == "Pod":
            default_pod_spec(obj.setdefault("spec", {}))
            errs = errs + validate_pod(obj)
        elif res.kind == "ConfigMap":
            errs = errs + validate_configmap(obj)
        elif res.kind == "Lease":
            errs = errs + validate_lease(obj)
        if errs:
            raise err_invalid(res.kind, res.group, meta.get("name", ""), errs)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_time()
        for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(k, None)
        meta.pop("generation", None)
        if res.kind == "Pod":
            spec = obj["spec"]
            spec.setdefault("priority", 0)
            spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
            tols = spec.setdefault("tolerations", [])
            for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
                if not any(t.get("key") == key for t in tols if isinstance(t, dict)):
                    tols.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
            obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}
        if res.kind == "Lease":
            obj.setdefault("spec", {})
        obj["kind"], obj["apiVersion"] = sres.kind, sres.api_version
        if manager:
            meta.pop("managedFields", None)
            set_managed_fields(obj, None, manager, res.api_version)
        key = obj_key(meta.get("namespace") if res.namespaced else None, meta["name"])
        with store.lock:
            if store.get(res.storage, key) is not None:
                raise err_already_exists(res, meta["name"])
            out = store.commit(res.storage, "ADDED", key, obj, None)
            if res.storage == "events":
                self._record_event("create", res, out)
        return out, 201

    def _update(self, res, ns, name, make_new, subresource=None, verb="update", must_exist=False,
                manager=None):
        """GuaranteedUpdate: make_new(current) -> new object (storage form)."""
        store = self.store
        sres = STORAGE_RES[res.storage]
        key = obj_key(ns if res.namespaced else None, name)
        with store.lock:
            cur = store.get(res.storage, key)
            if cur is None:
                if verb == "update" and res.storage == "events" and subresource is None:
                    new = make_new(None)
                    new["metadata"].pop("resourceVersion", None)
                    errs = validate_event(new)
                    return self._create(res, new, errs, manager=manager)
                raise err_not_found(res, name)
            new = make_new(cur)
            nm = new.setdefault("metadata", {})
            cm = meta_of(cur)
            nrv = nm.get("resourceVersion")
            if nrv and nrv != cm.get("resourceVersion"):
                raise err_res_conflict(res, name, OPTIMISTIC_LOCK_ERROR_MSG)
            if nm.get("uid") and nm["uid"] != cm.get("uid"):
                raise err_invalid(res.kind, res.group, name,
                                  [FieldError("Invalid", "metadata.uid", nm["uid"], "field is immutable")])
            nm["uid"] = cm.get("uid")
            nm["creationTimestamp"] = cm.get("creationTimestamp")
            for k in ("deletionTimestamp", "deletionGracePeriodSeconds"):
                if cm.get(k) is not None:
                    nm[k] = cm[k]
                else:
                    nm.pop(k, None)
            if cm.get("generation") is not None:
                nm["generation"] = cm["generation"]
            nm["name"] = name
            if res.namespaced:
                nm["namespace"] = ns
            errs = []
            if res.kind == "Pod":
                spec = new.setdefault("spec", {})
                default_pod_spec(spec)
                if subresource == "status":
                    new["spec"] = cur.get("spec", {})
                    if cm.get("ownerReferences") is not None:
                        nm["ownerReferences"] = cm["ownerReferences"]
                    else:
                        nm.pop("ownerReferences", None)
                else:
                    new["status"] = cur.get("status", {})
                    errs = pod_spec_update_errors(spec, cur.get("spec") or {})
            elif res.kind == "Node":
                if subresource == "status":
                    new["spec"] = cur.get("spec", {})
                else:
                    new["status"] = cur.get("status", {})
            if not errs:
                if res.storage == "events":
                    pass
                else:
                    errs = [e for e in validate_object_meta(nm, res.namespaced) if e.field != "metadata.name"]
                    if res.kind == "Pod":
                        errs += validate_pod(new)
                    elif res.kind == "ConfigMap":
                        errs += validate_configmap(new)
                        if cur.get("immutable"):
                            if new.get("data") != cur.get("data") or new.get("binaryData") != cur.get("binaryData"):
                                errs.append(FieldError("Forbidden", "data",
                                                       detail="field is immutable when `immutable` is set"))
                    elif res.kind == "Lease":
                        errs += validate_lease(new)
            if errs:
                raise err_invalid(res.kind, res.group, name, errs)
            new["kind"], new["apiVersion"] = sres.kind, sres.api_version
            if res.kind == "Lease":
                new.setdefault("spec", {})
            if manager:
                set_managed_fields(new, cur, manager, res.api_version, subresource)
            elif cm.get("managedFields") is not None and "managedFields" not in nm:
                nm["managedFields"] = cm["managedFields"]
            cmp_new = dict(new, metadata={k: v for k, v in nm.items() if k != "resourceVersion"})
            cmp_cur = dict(cur, metadata={k: v for k, v in cm.items() if k != "resourceVersion"})
            if cmp_new == cmp_cur:
                return cur, 200
            if nm.get("deletionTimestamp") and not nm.get("finalizers") and cm.get("finalizers"):
                # the last finalizer was removed: the object goes away now
                out = store.commit(res.storage, "MODIFIED", key, new, cur)
                store.commit(res.storage, "DELETED", key, None, out)
                return out, 200
            out = store.commit(res.storage, "MODIFIED", key, new, cur)
            if res.storage == "events":
                self._record_event(verb, res, out)
            return out, 200

    def _delete(self, res, ns, name, opts):
        store = self.store
        key = obj_key(ns if res.namespaced else None, name)
        with store.lock:
            cur = store.get(res.storage, key)
            if cur is None:
                raise err_not_found(res, name)
            cm = meta_of(cur)
            pre = opts.get("preconditions") or {}
            etcd_key = "/registry/%s/%s" % (res.qualified if res.group else res.plural, key)
            check_preconditions(res, name, etcd_key, pre, cm)
            grace = opts.get("gracePeriodSeconds")
            graceful = False
            if res.kind == "Pod":
                phase = (cur.get("status") or {}).get("phase")
                bound = bool((cur.get("spec") or {}).get("nodeName"))
                if grace is None:
                    grace = (cur.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
                graceful = bound and phase not in ("Succeeded", "Failed") and grace > 0
            if cm.get("finalizers") or graceful:
                if cm.get("deletionTimestamp"):
                    return cur, 200
                new = copy.deepcopy(cur)
                nm = new["metadata"]
                g = grace if graceful else 0
                nm["deletionTimestamp"] = fmt_time(utcnow() + datetime.timedelta(seconds=g))
                nm["deletionGracePeriodSeconds"] = g
                out = store.commit(res.storage, "MODIFIED", key, new, cur)
                if graceful and not cm.get("finalizers"):
                    self._kubelet_finalize(res, key, cm.get("uid"))
                return out, 200
            out = store.commit(res.storage, "DELETED", key, None, cur)
            if res.kind == "Pod":
                return out, 200
            return self._delete_status(res, cur), 200

    @staticmethod
    def _delete_status(res, obj):
        return make_status(0, None, None, make_details(name=meta_of(obj).get("name"), group=res.group,
                                                       kind=res.plural, uid=meta_of(obj).get("uid")),
                           status="Success")

    def _kubelet_finalize(self, res, key, uid):
        """What the kubelet does after a graceful pod delete: delete it for good."""
        def finish():
            with self.store.lock:
                cur = self.store.get(res.storage, key)
                if cur is not None and meta_of(cur).get("uid") == uid and meta_of(cur).get("deletionTimestamp") \
                        and not meta_of(cur).get("finalizers"):
                    self.store.commit(res.storage, "DELETED", key, None, cur)
        if self.pod_delete_delay <= 0:
            finish()
        else:
            t = threading.Timer(self.pod_delete_delay, finish)
            t.daemon = True
            self._timers.append(t)
            t.start()

    def _bind_pod(self, ns, name, binding):
        """BindingREST.Create: preconditions, then nodeName + annotations in one update."""
        pods = STORAGE_RES["pods"]
        target = binding.get("target") or {}
        errs = []
        if target.get("kind") not in (None, "", "Node"):
            errs.append(FieldError("NotSupported", "target.kind", target.get("kind"), supported=["Node", "<empty>"]))
        if not target.get("name"):
            errs.append(FieldError("Required", "target.name"))
        if errs:
            raise ApiError(500, None, aggregate(errs))
        meta = binding.get("metadata") or {}
        key = obj_key(ns, name)
        etcd_key = "/registry/pods/%s" % key
        with self.store.lock:
            cur = self.store.get("pods", key)
            if cur is None:
                raise err_not_found(pods, name)
            cm = meta_of(cur)
            check_preconditions(pods, name, etcd_key, meta, cm)
            spec = cur.get("spec") or {}
            if cm.get("deletionTimestamp"):
                raise err_conflict("pods/binding", "", "pods/binding", name,
                                   "pod %s is being deleted, cannot be assigned to a host" % name)
            if spec.get("nodeName"):
                raise err_conflict("pods/binding", "", "pods/binding", name,
                                   'pod %s is already assigned to node "%s"' % (name, spec["nodeName"]))
            if spec.get("schedulingGates"):
                raise err_conflict("pods/binding", "", "pods/binding", name,
                                   "pod %s has non-empty .spec.schedulingGates" % name)
            new = copy.deepcopy(cur)
            new["spec"]["nodeName"] = target["name"]
            if meta.get("annotations"):
                ann = new["metadata"].setdefault("annotations", {})
                ann.update(meta["annotations"])
            status = new.setdefault("status", {})
            conds = status.setdefault("conditions", [])
            cond = next((c for c in conds if c.get("type") == "PodScheduled"), None)
            if cond is None:
                conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                              "lastTransitionTime": now_time()})
            elif cond.get("status") != "True":
                cond.update({"status": "True", "lastTransitionTime": now_time()})
                cond.pop("reason", None)
                cond.pop("message", None)
            self.store.commit("pods", "MODIFIED", key, new, cur)


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description="gpushare's faithful test kube-apiserver")
    ap.add_argument("--port", type=int, default=0, help="port to listen on (0: pick a free one)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--state", help="JSON (or YAML) List of objects to preload")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--client-ca", help="CA bundle; a client certificate it verifies authenticates")
    ap.add_argument("--token", action="append", default=[],
                    help="require 'Authorization: Bearer TOKEN' (repeatable)")
    ap.add_argument("--port-file", help="write the port number here once listening")
    ap.add_argument("--admin-port", type=int, default=None, help="admin (fault injection) port; 0 picks one")
    ap.add_argument("--admin-port-file", help="write the admin port number here")
    ap.add_argument("--bookmark-interval", type=float, default=60.0)
    ap.add_argument("--history-limit", type=int, default=1000)
    ap.add_argument("--watch-timeout", type=float, default=1800.0,
                    help="server-side watch timeout when the client sends no timeoutSeconds")
    ap.add_argument("--pod-delete-delay", type=float, default=0.0,
                    help="seconds the simulated kubelet waits before removing a gracefully deleted pod")
    ap.add_argument("--start-down", action="store_true", help="reserve the port but start down (admin 'up')")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if bool(args.tls_cert) != bool(args.tls_key):
        ap.error("--tls-cert and --tls-key go together")
    srv = FakeApiServer(state=args.state, port=args.port, host=args.host, tls_cert=args.tls_cert,
                        tls_key=args.tls_key, token=args.token or None, client_ca=args.client_ca,
                        admin_port=args.admin_port, bookmark_interval=args.bookmark_interval,
                        history_limit=args.history_limit, default_watch_timeout=args.watch_timeout,
                        pod_delete_delay=args.pod_delete_delay, verbose=args.verbose)
    srv.start(down=args.start_down)
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d" % srv.port)
        os.replace(tmp, args.port_file)
    if args.admin_port_file and srv.admin_port is not None:
        tmp = args.admin_port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d" % srv.admin_port)
        os.replace(tmp, args.admin_port_file)
    print("listening on %s" % srv.url, flush=True)
    if srv.admin_url:
        print("admin listening on %s" % srv.admin_url, flush=True)
    parent = os.getppid()
    # A test process that dies (a sanitizer abort) must not leave this server
    # behind holding its pipes: exit when orphaned.
    while not stop.wait(0.5):
        if os.getppid() != parent:
            break
    srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
