"""Part of the test kube-apiserver (kube_apiserver.py, docs/test-apiserver.md):
the REST verbs of ApiHandler: get, list, watch, create, update, patch, delete, binding."""

import bisect
import copy
import email.utils
import json
import random
import select
import socket
import ssl
import time

from kapi_errors import (CONTINUE_EXPIRED_MSG, DecodeError, FieldError,
    MERGE_PATCH, NS_MISMATCH_MSG, OPTIMISTIC_LOCK_ERROR_MSG, PATCH_MEDIA_TYPES,
    err_bad_request, err_expired, err_invalid_list_options, err_not_found,
    err_res_conflict, err_too_large_rv, err_unsupported_media, go_json, make_status)
from kapi_objects import (BINDING, BINDING_RES, DELETE_OPTIONS, FieldSelector, LabelSelector,
    _json_type, field_attrs, merge_patch, meta_of, obj_key,
    strip_type, typecheck, view_obj)
from kapi_store import Watcher, manager_from, validate_event
from kapi_http import (_continue_decode, _continue_encode, _go_json_err, _list_meta, parse_bool,
    parse_int)
import kapi_errors  # TOO_LARGE_RV_WAIT is read at call time (tests shorten it)


class ApiVerbs:
    """ApiHandler's verbs: get, list, watch, create, update, patch, delete, binding."""

    def do_get(self, res, ns, name, q):
        self.check_accept()
        obj = self.server.api.store.get(res.storage, obj_key(ns, name))
        if obj is None:
            raise err_not_found(res, name)
        self.send_obj(200, view_obj(res, obj))

    def list_options(self, res, q, watch):
        opts = {
            "rv": q.get("resourceVersion"),
            "rvm": q.get("resourceVersionMatch", ""),
            "limit": parse_int(q.get("limit"), "limit") or 0,
            "continue": q.get("continue", ""),
            "timeout": parse_int(q.get("timeoutSeconds"), "timeoutSeconds"),
            "bookmarks": parse_bool(q.get("allowWatchBookmarks", "false"), "allowWatchBookmarks"),
        }
        if "sendInitialEvents" in q:
            # WatchList: gpushare's informers list, then watch (docs/test-apiserver.md, "Patches")
            raise err_bad_request("sendInitialEvents is not served by the test apiserver")
        errs = []
        if watch:
            if opts["rvm"]:
                errs.append(FieldError("Forbidden", "resourceVersionMatch",
                                       detail="resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
        else:
            rvm = opts["rvm"]
            if rvm:
                if not opts["rv"]:
                    errs.append(FieldError("Forbidden", "resourceVersionMatch",
                                           detail="resourceVersionMatch is forbidden unless resourceVersion is provided"))
                if opts["continue"]:
                    errs.append(FieldError("Forbidden", "resourceVersionMatch",
                                           detail="resourceVersionMatch is forbidden when continue is provided"))
                if rvm not in ("Exact", "NotOlderThan"):
                    errs.append(FieldError("NotSupported", "resourceVersionMatch", rvm,
                                           supported=["Exact", "NotOlderThan", ""]))
                if rvm == "Exact" and opts["rv"] == "0":
                    errs.append(FieldError("Forbidden", "resourceVersionMatch",
                                           detail='resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
        if errs:
            raise err_invalid_list_options(errs)
        if opts["rv"] not in (None, ""):
            try:
                opts["rv_int"] = int(opts["rv"])
                if opts["rv_int"] < 0:
                    raise ValueError
            except ValueError:
                raise err_bad_request("invalid resource version: %s" % opts["rv"])
        opts["lsel"] = LabelSelector(q.get("labelSelector", ""))
        opts["fsel"] = FieldSelector(q.get("fieldSelector", ""), res)
        return opts

    def do_list(self, res, ns, q):
        self.check_accept()
        api = self.server.api
        store = api.store
        opts = self.list_options(res, q, watch=False)
        lsel, fsel, limit = opts["lsel"], opts["fsel"], opts["limit"]
        rv, rvm, cont = opts["rv"], opts["rvm"], opts["continue"]
        start = ""
        if cont:
            if rv not in (None, "", "0"):
                raise err_bad_request("specifying resource version is not allowed when using continue")
            snap_rv, start = _continue_decode(cont)
        elif rv in (None, "", "0"):
            snap_rv = None
        else:
            want = opts["rv_int"]
            exact = rvm == "Exact" or (limit > 0 and rvm != "NotOlderThan")
            if want > store.rv and not store.wait_rv(want, kapi_errors.TOO_LARGE_RV_WAIT):
                raise err_too_large_rv(want, store.rv)
            snap_rv = want if exact else None
        prefix = ns + "/" if ns else ""
        with store.lock:
            cur = store.rv
            # Nothing written since the snapshot (the usual case while a
            # client pages through a list): the page comes straight from the
            # store, without copying or sorting all of it for every page.
            if snap_rv is None or snap_rv < 0 or snap_rv >= cur:
                list_rv = cur if snap_rv is None or snap_rv < 0 else snap_rv
                body = self.list_page(res, store, prefix, start, lsel, fsel, limit, list_rv)
                objs = None
            else:
                try:
                    objs = store.snapshot_at(res.storage, snap_rv)
                except KeyError:
                    if cont:
                        left = sum(1 for k in store.objects[res.storage] if k > start)
                        raise err_expired(CONTINUE_EXPIRED_MSG,
                                          list_meta={"continue": _continue_encode(-1, start),
                                                     "remainingItemCount": left})
                    raise err_expired("The resourceVersion for the provided list is too old.")
                list_rv = snap_rv
        if objs is None:
            self.send_bytes(200, body)
            return
        keys = sorted(k for k in objs if k.startswith(prefix) and k > start)
        items, next_key, remaining = [], None, 0
        for i, k in enumerate(keys):
            o = objs[k]
            if lsel.matches(meta_of(o).get("labels")) and fsel.matches(field_attrs(res.storage, o)):
                items.append(strip_type(view_obj(res, o)))
            if limit and len(items) >= limit:
                if i + 1 < len(keys):
                    next_key = k
                    remaining = len(keys) - i - 1
                break
        meta = _list_meta(list_rv, next_key, remaining, lsel, fsel)
        self.send_obj(200, {"kind": res.list_kind, "apiVersion": res.api_version, "metadata": meta,
                            "items": items})

    def list_page(self, res, store, prefix, start, lsel, fsel, limit, list_rv):
        """One page of a list of the current objects, as the bytes do_list's
        general path would send (go_json of the same dict, built piecewise).
        Call with the store lock held."""
        objs = store.objects[res.storage]
        keys = store.keys_sorted(res.storage)
        i = bisect.bisect_right(keys, start) if start else 0
        if prefix:
            i = max(i, bisect.bisect_left(keys, prefix))
        items, next_key, remaining = [], None, 0
        for j in range(i, len(keys)):
            k = keys[j]
            if prefix and not k.startswith(prefix):
                break
            o = objs[k]
            if lsel.matches(meta_of(o).get("labels")) and fsel.matches(field_attrs(res.storage, o)):
                items.append(store.item_bytes(res, k, o))
            if limit and len(items) >= limit:
                rest = (bisect.bisect_left(keys, prefix[:-1] + "0") if prefix else len(keys))
                if j + 1 < rest:
                    next_key = k
                    remaining = rest - j - 1
                break
        meta = _list_meta(list_rv, next_key, remaining, lsel, fsel)
        head = go_json({"kind": res.list_kind, "apiVersion": res.api_version, "metadata": meta})
        return b"".join([head[:-1].encode("utf-8"), b',"items":[', b",".join(items), b"]}\n"])

    def do_watch(self, res, ns, q, rawq):
        self.check_accept()
        api = self.server.api
        store = api.store
        opts = self.list_options(res, q, watch=True)
        rv = opts["rv"]
        timeout = opts["timeout"]
        if timeout is None or timeout <= 0:
            timeout = api.default_watch_timeout * (1 + random.random())
        if rv not in (None, "", "0"):
            want = opts["rv_int"]
            if want > store.rv and not store.wait_rv(want, kapi_errors.TOO_LARGE_RV_WAIT):
                raise err_too_large_rv(want, store.rv)
        w = Watcher(res, ns, opts["lsel"], opts["fsel"], self.path.split("?")[0], rawq)
        initial, error_status = [], None
        with store.lock:
            if rv in (None, "", "0"):
                for k in sorted(store.objects[res.storage]):
                    o = store.objects[res.storage][k]
                    if w.matches(o):
                        initial.append(("ADDED", o))
                store.watchers.add(w)
            else:
                start = opts["rv_int"]
                if store.too_old(res.storage, start):
                    error_status = make_status(410, "Expired", "too old resource version: %d (%d)"
                                               % (start, store.oldest[res.storage] - 1))
                else:
                    for ev in store.events_since(res.storage, start):
                        w.offer(ev)
                    store.watchers.add(w)
        if error_status is None:
            api._watch_started(w)
        try:
            self.stream_watch(res, w, initial, error_status, opts, timeout)
        finally:
            with store.lock:
                store.watchers.discard(w)
            api._watch_ended(w)

    def client_gone(self):
        """True when the watch client has closed its end (checked while the stream is idle)."""
        conn = self.connection
        try:
            readable, _, _ = select.select([conn], [], [], 0)
        except (OSError, ValueError):
            return True
        if not readable:
            return False
        try:
            if isinstance(conn, ssl.SSLSocket):
                if conn.pending():
                    return False
                data = socket.socket.recv(conn, 1, socket.MSG_PEEK)
                return data == b"" or data[:1] == b"\x15"  # EOF or a TLS alert (close_notify)
            return socket.socket.recv(conn, 1, socket.MSG_PEEK) == b""
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError):
            return False
        except OSError:
            return True

    def write_chunk(self, data):
        self.write_raw(b"%x\r\n%s\r\n" % (len(data), data))

    def write_event(self, res, w, type_, obj):
        if type_ in ("ERROR", "BOOKMARK"):
            payload = obj
        else:
            payload = view_obj(res, obj)
        self.write_chunk((go_json({"type": type_, "object": payload}) + "\n").encode("utf-8"))
        w.sent += 1

    def bookmark_obj(self, res, rv):
        meta = {"resourceVersion": str(rv)}
        o = {"kind": res.kind, "apiVersion": res.api_version, "metadata": meta}
        if res.kind == "Pod":
            o["spec"] = {"containers": None}
            o["status"] = {}
        elif res.kind == "Node":
            o["spec"] = {}
            o["status"] = {"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
                           "nodeInfo": {k: "" for k in ("machineID", "systemUUID", "bootID", "kernelVersion",
                                                        "osImage", "containerRuntimeVersion", "kubeletVersion",
                                                        "kubeProxyVersion", "operatingSystem", "architecture")}}
        elif res.kind == "Lease":
            o["spec"] = {}
        elif res.kind == "Event":
            o.update({"involvedObject": {}, "source": {}, "firstTimestamp": None, "lastTimestamp": None,
                      "eventTime": None, "reportingComponent": "", "reportingInstance": ""})
        return o

    def stream_watch(self, res, w, initial, error_status, opts, timeout):
        api = self.server.api
        head = "HTTP/1.1 200 OK\r\n"
        hdrs = self.base_headers() + [("Date", email.utils.formatdate(usegmt=True)),
                                      ("Transfer-Encoding", "chunked")]
        head += "".join("%s: %s\r\n" % kv for kv in hdrs) + "\r\n"
        self.resp_code = 200
        self.entry["status"] = 200
        self.write_raw(head.encode("latin-1"))
        if error_status is not None:
            self.write_chunk((go_json({"type": "ERROR", "object": error_status}) + "\n").encode("utf-8"))
            self.write_raw(b"0\r\n\r\n")
            return
        for type_, o in initial:
            self.write_event(res, w, type_, o)
        start = time.monotonic()
        deadline = start + timeout
        bookmarks = opts["bookmarks"]
        interval = api.bookmark_interval

        def next_bookmark(now):
            t = now + interval
            pre = deadline - 2.0
            if pre < t:
                t = pre
            return t if t > now else None

        nb = next_bookmark(start) if bookmarks else None
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            wake = deadline if nb is None else min(deadline, nb)
            items, closing = w.take(max(0.0, min(1.0, wake - now)))
            if not items and closing is None and self.client_gone():
                self.close_connection = True
                return
            for type_, o in items:
                self.write_event(res, w, type_, o)
            if closing == "close" or closing == "overflow":
                self.hang_up()
                return
            if closing == "error":
                st = make_status(410, "Expired", "too old resource version: %d (%d)"
                                 % (api.store.rv - 1, api.store.rv))
                self.write_chunk((go_json({"type": "ERROR", "object": st}) + "\n").encode("utf-8"))
                break
            if closing == "end":
                break
            now = time.monotonic()
            if nb is not None and now >= nb:
                with api.store.lock:
                    more, _ = w.take(0)
                    brv = api.store.rv
                for type_, o in more:
                    self.write_event(res, w, type_, o)
                self.write_event(res, w, "BOOKMARK", self.bookmark_obj(res, brv))
                nb = next_bookmark(now)
        self.write_raw(b"0\r\n\r\n")

    # -- writes ---------------------------------------------------------------
    def manager(self, q):
        fm = q.get("fieldManager", "")
        if len(fm) > 128:
            raise err_bad_request("fieldManager: Too long: may not be more than 128 bytes")
        return manager_from(self.headers.get("User-Agent"), fm)

    @staticmethod
    def no_dry_run(q):
        """gpushare never sends dryRun: refused rather than misread."""
        if q.get("dryRun"):
            raise err_bad_request("dryRun is not served by the test apiserver")

    def decode_for(self, res, ns, body, q):
        """The body of a create or update, its namespace checked against the URL's."""
        self.check_accept()
        obj = self.decode_body(body, res)
        meta = obj["metadata"]
        if res.namespaced:
            bns = meta.get("namespace", "")
            if bns and bns != ns:
                raise err_bad_request(NS_MISMATCH_MSG)
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        return obj

    def hang_up(self):
        """Closes the connection at once, as a dropped stream or a reset does."""
        self.close_connection = True
        try:
            socket.socket.shutdown(self.connection, socket.SHUT_RDWR)
        except OSError:
            pass

    def do_create(self, res, ns, body, q):
        api = self.server.api
        obj = self.decode_for(res, ns, body, q)
        if res.storage == "events":
            errs = validate_event(obj)
        else:
            errs = []
        stored, code = api._create(res, obj, errs, manager=self.manager(q))
        self.send_obj(code, view_obj(res, stored), self.warning_headers())

    def do_update(self, res, ns, name, body, q, subresource=None):
        api = self.server.api
        obj = self.decode_for(res, ns, body, q)
        meta = obj["metadata"]
        if meta.get("name", "") != name:
            raise err_bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                                  % (meta.get("name", ""), name))
        stored, code = api._update(res, ns, name, lambda cur: obj, subresource=subresource,
                                   verb="update", manager=self.manager(q))
        self.send_obj(code, view_obj(res, stored), self.warning_headers())

    def do_patch(self, res, ns, name, body, q, subresource=None):
        self.check_accept()
        api = self.server.api
        ct = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ct not in PATCH_MEDIA_TYPES:
            raise err_unsupported_media(PATCH_MEDIA_TYPES)
        if ct != MERGE_PATCH:
            # strategic merge, JSON and apply patches: real media types that
            # gpushare never sends, not served here (docs/test-apiserver.md)
            raise err_unsupported_media([MERGE_PATCH])
        try:
            patch = json.loads(body.decode("utf-8")) if body else None
        except (ValueError, UnicodeDecodeError) as e:
            raise err_bad_request("error decoding patch: %s" % _go_json_err(e))
        if not isinstance(patch, dict):
            raise err_bad_request("json: cannot unmarshal %s into Go value of type map[string]interface {}"
                                  % _json_type(patch))

        def apply(cur):
            new = merge_patch(copy.deepcopy(view_obj(res, cur)), patch)
            meta_patch = patch.get("metadata")
            prv = meta_patch.get("resourceVersion") if isinstance(meta_patch, dict) else None
            if prv and prv != meta_of(cur).get("resourceVersion"):
                raise err_res_conflict(res, name, OPTIMISTIC_LOCK_ERROR_MSG)
            raw = json.dumps(new).encode()
            decoded = self.decode_body(raw, res, check_ct=False)
            dm = decoded["metadata"]
            if dm.get("name", name) != name:
                raise err_bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                                      % (dm.get("name"), name))
            if res.namespaced and dm.get("namespace", ns) != ns:
                raise err_bad_request(NS_MISMATCH_MSG)
            dm["name"] = name
            if res.namespaced:
                dm["namespace"] = ns
            dm["resourceVersion"] = meta_of(cur).get("resourceVersion")
            return decoded

        stored, code = api._update(res, ns, name, apply, subresource=subresource,
                                   verb="patch", must_exist=True, manager=self.manager(q))
        self.send_obj(code, view_obj(res, stored), self.warning_headers())

    def parse_delete_options(self, body, q):
        opts = {}
        if body and body.strip():
            try:
                d = json.loads(body.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                raise err_bad_request("couldn't get version/kind; json parse error: %s" % _go_json_err(e))
            try:
                opts = typecheck(d, DELETE_OPTIONS, "", "DeleteOptions", [])
            except DecodeError as e:
                raise err_bad_request(str(e))
        g = parse_int(q.get("gracePeriodSeconds"), "gracePeriodSeconds")
        if g is not None:
            opts["gracePeriodSeconds"] = g
        return opts

    def do_delete(self, res, ns, name, body, q):
        self.check_accept()
        api = self.server.api
        opts = self.parse_delete_options(body, q)
        out, code = api._delete(res, ns, name, opts)
        self.send_obj(code, out if out.get("kind") == "Status" else view_obj(res, out))

    def do_binding(self, ns, name, body, q):
        self.check_accept()
        api = self.server.api
        binding = self.decode_body(body, BINDING_RES, schema=BINDING, kind="Binding", api_version="v1")
        meta = binding["metadata"]
        if meta.get("name", "") != name:
            raise err_bad_request("name in URL does not match name in Binding object")
        bns = meta.get("namespace", "")
        if bns and bns != ns:
            raise err_bad_request(NS_MISMATCH_MSG)
        meta["namespace"] = ns
        api._bind_pod(ns, name, binding)
        self.send_obj(201, make_status(201, None, None, status="Success"))
