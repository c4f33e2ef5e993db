"""Part of the test kube-apiserver (kube_apiserver.py, docs/test-apiserver.md):
the store (objects, resourceVersions, history, watchers), pod defaults and validation, managed fields, faults."""

import collections
import copy
import dataclasses
import re
import threading
import time

from kapi_errors import (ApiError, CONFIG_KEY_MSG, FieldError, POD_UPDATE_FORBIDDEN_MSG,
    WATCHER_QUEUE_LIMIT, _CONFIG_KEY_RE, err_too_many_requests, go_json, is_dns1123_label,
    is_dns1123_subdomain, is_qualified_name, make_details, now_time, parse_quantity, required_valid)
from kapi_objects import STORAGE_RES, field_attrs, meta_of, strip_type, view_obj


# ---------------------------------------------------------------------------
# Store: objects, a global resourceVersion counter, history, watchers
# ---------------------------------------------------------------------------


@dataclasses.dataclass(slots=True, eq=False)
class Event:
    rv: int
    type: str
    storage: str
    key: tuple
    obj: dict
    prev: dict


class Watcher:
    def __init__(self, res, namespace, lsel, fsel, path, query):
        self.res = res
        self.storage = res.storage
        self.namespace = namespace
        self.lsel = lsel
        self.fsel = fsel
        self.path = path
        self.query = query
        self.started = time.time()
        self.cv = threading.Condition()
        self.q = collections.deque()
        self.closing = None
        self.sent = 0

    def describe(self):
        return {"resource": self.res.qualified, "namespace": self.namespace or "", "path": self.path,
                "query": self.query, "started": self.started, "eventsSent": self.sent}

    def matches(self, obj):
        if obj is None:
            return False
        if self.namespace and meta_of(obj).get("namespace") != self.namespace:
            return False
        return (self.lsel.matches(meta_of(obj).get("labels"))
                and self.fsel.matches(field_attrs(self.storage, obj)))

    def offer(self, ev):
        """Called with the store lock held, in commit order."""
        cur = self.matches(ev.obj) if ev.type != "DELETED" else False
        if ev.type == "ADDED":
            if cur:
                self.put("ADDED", ev.obj)
        elif ev.type == "DELETED":
            if self.matches(ev.prev):
                self.put("DELETED", ev.obj)
        else:
            old = self.matches(ev.prev)
            if cur and old:
                self.put("MODIFIED", ev.obj)
            elif cur:
                self.put("ADDED", ev.obj)
            elif old:
                gone = dict(ev.prev)
                gone["metadata"] = dict(meta_of(ev.prev), resourceVersion=str(ev.rv))
                self.put("DELETED", gone)

    def put(self, type_, obj):
        with self.cv:
            if len(self.q) >= WATCHER_QUEUE_LIMIT:
                self.closing = "overflow"
            else:
                self.q.append((type_, obj))
            self.cv.notify_all()

    def stop(self, mode):
        with self.cv:
            if self.closing is None:
                self.closing = mode
            self.cv.notify_all()

    def take(self, timeout):
        with self.cv:
            if not self.q and self.closing is None and timeout > 0:
                self.cv.wait(timeout)
            items = list(self.q)
            self.q.clear()
            return items, self.closing


class Store:
    def __init__(self, history_limit=1000, start_rv=1000):
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.rv = start_rv
        self.history_limit = history_limit
        self.objects = {s: {} for s in STORAGE_RES}
        # Sorted keys per storage, rebuilt after a key is added or removed
        # (None: stale), and each stored object's list-item JSON, keyed by
        # key and valid while the entry still holds the same object.
        # They only make paged lists cheap: a 50,000-pod list is 100 pages.
        self.sorted_keys = {s: None for s in STORAGE_RES}
        self.item_json = {s: {} for s in STORAGE_RES}
        self.history = {s: collections.deque() for s in STORAGE_RES}
        self.oldest = {s: start_rv + 1 for s in STORAGE_RES}
        self.watchers = set()

    # -- commits ----------------------------------------------------------
    def commit(self, storage, type_, key, obj, prev):
        """Store obj (None for delete), bump the RV, record history, notify watchers.

        Returns the stored object (or, for DELETED, the last state carrying the new RV)."""
        with self.lock:
            self.rv += 1
            rv = self.rv
            self.item_json[storage].pop(key, None)
            if type_ == "DELETED":
                obj = dict(prev)
                obj["metadata"] = dict(meta_of(prev), resourceVersion=str(rv))
                if self.objects[storage].pop(key, None) is not None:
                    self.sorted_keys[storage] = None
            else:
                obj = dict(obj)
                obj["metadata"] = dict(meta_of(obj), resourceVersion=str(rv))
                if key not in self.objects[storage]:
                    self.sorted_keys[storage] = None
                self.objects[storage][key] = obj
            ev = Event(rv, type_, storage, key, obj, prev)
            hist = self.history[storage]
            hist.append(ev)
            while len(hist) > self.history_limit:
                hist.popleft()
                self.oldest[storage] = hist[0].rv if hist else rv + 1
            for w in list(self.watchers):
                if w.storage == storage:
                    w.offer(ev)
            self.cond.notify_all()
            return obj

    def compact(self, storage=None):
        """Forget the history: any RV handed out so far is now too old for a watch."""
        with self.lock:
            self.rv += 1
            for s in ([storage] if storage else list(self.history)):
                self.history[s].clear()
                self.oldest[s] = self.rv + 1
            self.cond.notify_all()
            return self.rv

    def get(self, storage, key):
        with self.lock:
            return self.objects[storage].get(key)

    def keys_sorted(self, storage):
        """The current keys of storage in order (call with the lock held)."""
        keys = self.sorted_keys[storage]
        if keys is None:
            keys = self.sorted_keys[storage] = sorted(self.objects[storage])
        return keys

    def item_bytes(self, res, key, obj):
        """obj as an item of a list of res, in Go's JSON (call with the lock held)."""
        cache = self.item_json[res.storage]
        hit = cache.get(key)
        if hit is None or hit[0] is not obj:
            hit = cache[key] = (obj, go_json(strip_type(view_obj(res, obj))).encode("utf-8"))
        return hit[1]

    def warm_list_items(self):
        """Encodes every stored object's list item (see item_bytes)."""
        with self.lock:
            for storage, res in STORAGE_RES.items():
                for key, obj in self.objects[storage].items():
                    self.item_bytes(res, key, obj)

    def snapshot_at(self, storage, rv):
        """Objects of storage as they were at rv (raises KeyError if compacted)."""
        with self.lock:
            if rv >= self.rv:
                return dict(self.objects[storage])
            if rv < self.oldest[storage] - 1:
                raise KeyError(rv)
            snap = dict(self.objects[storage])
            for ev in reversed(self.history[storage]):
                if ev.rv <= rv:
                    break
                if ev.type == "ADDED":
                    snap.pop(ev.key, None)
                else:
                    snap[ev.key] = ev.prev
            return snap

    def too_old(self, storage, rv):
        return rv < self.oldest[storage] - 1

    def events_since(self, storage, rv):
        return [ev for ev in self.history[storage] if ev.rv > rv]

    def wait_rv(self, rv, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.rv < rv:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True


# ---------------------------------------------------------------------------
# Per-kind behaviour (defaults, validation, update rules)
# ---------------------------------------------------------------------------


def is_extended_resource(name):
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not is_qualified_name(name)


def default_pod_spec(spec):
    """SetDefaults_Pod/PodSpec/Container subset (applied on every decode, like the real one)."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    for field in ("initContainers", "containers"):
        for c in spec.get(field) or []:
            if not isinstance(c, dict):
                continue
            res = c.setdefault("resources", {})
            lim = res.get("limits") or {}
            req = res.get("requests")
            for k, v in lim.items():
                if req is None:
                    req = res["requests"] = {}
                req.setdefault(k, v)
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("terminationMessagePolicy", "File")
            image = c.get("image", "")
            tag_latest = image.endswith(":latest") or (":" not in image.rsplit("/", 1)[-1] and "@" not in image)
            c.setdefault("imagePullPolicy", "Always" if tag_latest else "IfNotPresent")


def qos_class(spec):
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    any_set, guaranteed = False, True
    for c in containers:
        res = (c or {}).get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        for r in ("cpu", "memory"):
            if r in req or r in lim:
                any_set = True
            if r not in lim or (r in req and parse_quantity(req[r]) != parse_quantity(lim[r])):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def validate_pod(obj):
    errs = []
    spec = obj.get("spec") or {}
    containers = spec.get("containers") or []
    if not containers:
        errs.append(FieldError("Required", "spec.containers"))
    for field in ("initContainers", "containers"):
        seen = set()
        for i, c in enumerate(spec.get(field) or []):
            p = "spec.%s[%d]" % (field, i)
            name = c.get("name", "")
            required_valid(errs, p + ".name", name, is_dns1123_label)
            if name and name in seen:
                errs.append(FieldError("Duplicate", p + ".name", name))
            seen.add(name)
            if not c.get("image"):
                errs.append(FieldError("Required", p + ".image"))
            res = c.get("resources") or {}
            lim, req = res.get("limits") or {}, res.get("requests") or {}
            for kind, m in (("limits", lim), ("requests", req)):
                for rname, q in m.items():
                    rp = "%s.resources.%s[%s]" % (p, kind, rname)
                    val = parse_quantity(q)
                    if val < 0:
                        errs.append(FieldError("Invalid", rp, q, "must be greater than or equal to 0"))
                    if is_extended_resource(rname) and val != val.to_integral_value():
                        errs.append(FieldError("Invalid", rp, q, "must be an integer"))
            for rname, q in req.items():
                rp = "%s.resources.requests[%s]" % (p, rname)
                if rname in lim:
                    if is_extended_resource(rname) and parse_quantity(q) != parse_quantity(lim[rname]):
                        errs.append(FieldError("Invalid", rp, q, "must be equal to %s limit of %s"
                                               % (rname, lim[rname])))
                    elif parse_quantity(q) > parse_quantity(lim[rname]):
                        errs.append(FieldError("Invalid", rp, q, "must be less than or equal to %s limit of %s"
                                               % (rname, lim[rname])))
                elif is_extended_resource(rname):
                    errs.append(FieldError("Required", "%s.resources.limits" % p,
                                           detail="Limit must be set for non overcommitable resources"))
    node = spec.get("nodeName")
    if node:
        for m in is_dns1123_subdomain(node):
            errs.append(FieldError("Invalid", "spec.nodeName", node, m))
    rp = spec.get("restartPolicy")
    if rp not in (None, "Always", "OnFailure", "Never"):
        errs.append(FieldError("NotSupported", "spec.restartPolicy", rp,
                               supported=["Always", "OnFailure", "Never"]))
    return errs


def validate_configmap(obj):
    errs = []
    data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
    total = 0
    for field, m in (("data", data), ("binaryData", binary)):
        for k, v in m.items():
            if not _CONFIG_KEY_RE.match(k) or len(k) > 253:
                errs.append(FieldError("Invalid", field, k, CONFIG_KEY_MSG))
            total += len(v)
            if field == "binaryData" and k in data:
                errs.append(FieldError("Invalid", "binaryData", k,
                                       "duplicate of key present in data"))
    if total > 1024 * 1024:
        errs.append(FieldError("TooLong", "", detail="must have at most 1048576 bytes"))
    return errs


def validate_lease(obj):
    errs = []
    spec = obj.get("spec") or {}
    if spec.get("leaseDurationSeconds") is not None and spec["leaseDurationSeconds"] <= 0:
        errs.append(FieldError("Invalid", "spec.leaseDurationSeconds", spec["leaseDurationSeconds"],
                               "must be greater than 0"))
    if spec.get("leaseTransitions") is not None and spec["leaseTransitions"] < 0:
        errs.append(FieldError("Invalid", "spec.leaseTransitions", spec["leaseTransitions"],
                               "must be greater than or equal to 0"))
    return errs


def validate_event(core):
    """ValidateEventCreate for core/v1 Events: the legacy rules, and the strict ones when
    eventTime is set (the only Events served; events.k8s.io/v1 is not)."""
    errs = []
    ns = meta_of(core).get("namespace", "")
    io = core.get("involvedObject") or {}
    if not core.get("eventTime"):
        if not io.get("namespace"):
            if ns not in ("", "default"):
                errs.append(FieldError("Invalid", "involvedObject.namespace", io.get("namespace", ""),
                                       "does not match event.namespace"))
        elif ns != io.get("namespace"):
            errs.append(FieldError("Invalid", "involvedObject.namespace", io.get("namespace", ""),
                                   "does not match event.namespace"))
    else:
        if not io.get("namespace") and ns not in ("default", "kube-system"):
            errs.append(FieldError("Invalid", "involvedObject.namespace", io.get("namespace", ""),
                                   "does not match event.namespace"))
        ctl = core.get("reportingComponent", "")
        if not ctl:
            errs.append(FieldError("Required", "reportingComponent"))
        for m in is_qualified_name(ctl):
            errs.append(FieldError("Invalid", "reportingComponent", ctl, m))
        inst = core.get("reportingInstance", "")
        if not inst:
            errs.append(FieldError("Required", "reportingInstance"))
        if len(inst) > 128:
            errs.append(FieldError("Invalid", "reportingInstance", "", "can have at most 128 characters"))
        for field, limit in (("action", 128), ("reason", 128)):
            val = core.get(field, "")
            if not val:
                errs.append(FieldError("Required", field))
            if len(val) > limit:
                errs.append(FieldError("Invalid", field, "", "can have at most %d characters" % limit))
        if len(core.get("message", "")) > 1024:
            errs.append(FieldError("Invalid", "message", "", "can have at most 1024 characters"))
    for m in is_dns1123_subdomain(ns):
        errs.append(FieldError("Invalid", "namespace", ns, m))
    return errs


def pod_spec_update_errors(new_spec, old_spec):
    """Pod updates may only change images, activeDeadlineSeconds, tolerations (additions), gates."""
    a, b = copy.deepcopy(new_spec), copy.deepcopy(old_spec)
    for field in ("containers", "initContainers"):
        for i, c in enumerate(a.get(field) or []):
            olds = b.get(field) or []
            if i < len(olds) and isinstance(c, dict) and isinstance(olds[i], dict):
                c["image"] = olds[i].get("image")
                if c["image"] is None:
                    c.pop("image")
    for k in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        a.pop(k, None)
        b.pop(k, None)
    if a.get("terminationGracePeriodSeconds") == 1 and (b.get("terminationGracePeriodSeconds") or 0) < 0:
        a["terminationGracePeriodSeconds"] = b["terminationGracePeriodSeconds"]
    if a != b:
        changed = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        return [FieldError("Forbidden", "spec",
                           detail=POD_UPDATE_FORBIDDEN_MSG + "\n  core.PodSpec{ changed: %s }" % ", ".join(changed))]
    old_gates = [g.get("name") for g in old_spec.get("schedulingGates") or []]
    new_gates = [g.get("name") for g in new_spec.get("schedulingGates") or []]
    if any(g not in old_gates for g in new_gates):
        return [FieldError("Forbidden", "spec.schedulingGates", detail="only deletion is allowed, but found new scheduling gate '%s'" % next(g for g in new_gates if g not in old_gates))]
    old_tol = old_spec.get("tolerations") or []
    new_tol = new_spec.get("tolerations") or []
    if any(t not in new_tol for t in old_tol):
        return [FieldError("Forbidden", "spec.tolerations", detail="existing toleration can not be modified except its tolerationSeconds")]
    return []


def _fieldset(v):
    if isinstance(v, dict) and v:
        out = {".": {}}
        for k, x in v.items():
            out["f:" + k] = _fieldset(x)
        return out
    return {}


def fields_v1(obj, subresource=None):
    """An approximation of the FieldsV1 set the real field manager records for an Update."""
    fs = {}
    meta = meta_of(obj)
    mfs = {}
    for k in ("labels", "annotations"):
        if meta.get(k):
            mfs["f:" + k] = _fieldset(meta[k])
    for k in ("finalizers", "ownerReferences"):
        if meta.get(k):
            mfs["f:" + k] = {}
    if mfs and subresource is None:
        fs["f:metadata"] = mfs
    for k, v in obj.items():
        if k in ("kind", "apiVersion", "metadata"):
            continue
        if (k == "status") != (subresource == "status"):
            continue
        fs["f:" + k] = _fieldset(v) if isinstance(v, dict) else {}
    return fs


def manager_from(user_agent, field_manager):
    if field_manager:
        return field_manager
    return (user_agent or "").split("/")[0] or "unknown"


def set_managed_fields(new, cur, manager, api_version, subresource=None):
    """Keep the object's managedFields (unless the request set them) and update this manager's entry."""
    nm = new.setdefault("metadata", {})
    if "managedFields" not in nm:
        if cur is not None and meta_of(cur).get("managedFields"):
            nm["managedFields"] = copy.deepcopy(meta_of(cur)["managedFields"])
    entries = [e for e in nm.get("managedFields") or [] if isinstance(e, dict)]
    fs = fields_v1(new, subresource)
    old = next((e for e in entries if e.get("manager") == manager and e.get("operation") == "Update"
                and e.get("subresource") == subresource), None)
    if old is not None and old.get("fieldsV1") == fs:
        nm["managedFields"] = entries
        return
    entry = {"manager": manager, "operation": "Update", "apiVersion": api_version, "time": now_time(),
             "fieldsType": "FieldsV1", "fieldsV1": fs}
    if subresource:
        entry["subresource"] = subresource
    entries = [e for e in entries if e is not old] + [entry]
    nm["managedFields"] = entries


# ---------------------------------------------------------------------------
# Fault injection and request log
# ---------------------------------------------------------------------------


class Fault:
    _ids = 0
    _lock = threading.Lock()

    def __init__(self, method=".*", path=".*", status=500, count=1, delay=0.0, action="fail",
                 reason=None, message=None, retry_after=None, query=None, body=None):
        with Fault._lock:
            Fault._ids += 1
            self.id = Fault._ids
        self.method = method or ".*"
        self.path = path or ".*"
        self.query = query
        self.status = int(status) if status is not None else 500
        if count is not None and int(count) == 0:
            raise ValueError("count must be positive (or None/negative for every request)")
        self.count = None if count is None or int(count) < 0 else int(count)
        self.delay = float(delay or 0)
        self.action = action
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        self.body = body  # action "reply": these bytes (str) as the answer, with `status`
        self.hits = 0
        self._mre = re.compile(self.method, re.I)
        self._pre = re.compile(self.path)
        self._qre = re.compile(self.query) if self.query else None

    def matches(self, method, path, query):
        return (self._mre.fullmatch(method) is not None and self._pre.search(path) is not None
                and (self._qre is None or self._qre.search(query or "") is not None))

    def describe(self):
        return {"id": self.id, "method": self.method, "path": self.path, "query": self.query,
                "status": self.status, "count": self.count, "delay": self.delay, "action": self.action,
                "reason": self.reason, "message": self.message, "retryAfter": self.retry_after,
                "hits": self.hits}

    def error(self):
        s = self.status
        reason = self.reason
        msg = self.message
        details = None
        headers = []
        if s == 429:
            ra = int(self.retry_after or 1)
            e = err_too_many_requests(ra)
            if msg:
                e.message = msg
            return e
        defaults = {
            400: ("BadRequest", "injected fault"),
            401: ("Unauthorized", "Unauthorized"),
            403: ("Forbidden", "forbidden: injected fault"),
            404: ("NotFound", "the server could not find the requested resource"),
            409: ("Conflict", "Operation cannot be fulfilled: injected fault"),
            410: ("Expired", "too old resource version: 1 (2)"),
            500: ("InternalError", "Internal error occurred: injected fault"),
            502: ("", "injected fault"),
            503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
            504: ("Timeout", "Timeout: request did not complete within the allotted timeout"),
        }
        dr, dm = defaults.get(s, ("", "injected fault"))
        reason = dr if reason is None else reason
        msg = msg or dm
        if s == 500 and reason == "InternalError":
            details = make_details(causes=[{"message": "injected fault"}])
        if self.retry_after:
            details = dict(details or {}, retryAfterSeconds=int(self.retry_after))
            headers.append(("Retry-After", str(int(self.retry_after))))
        return ApiError(s, reason, msg, details, headers)


SELECTED_HEADERS = ("Authorization", "Content-Type", "Accept", "Accept-Encoding", "User-Agent",
                    "Content-Length", "Transfer-Encoding", "Connection", "Expect")
