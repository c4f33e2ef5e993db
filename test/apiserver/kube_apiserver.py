#!/usr/bin/env python3
"""A faithful test kube-apiserver for gpushare's tests (Python 3 standard library only).

It speaks the real JSON wire format of kube-apiserver for the resources the
extender uses (core/v1 nodes, pods, configmaps, events; coordination.k8s.io/v1
leases; events.k8s.io/v1 events): GET, LIST (pagination, label and field
selectors, resourceVersion semantics), WATCH (chunked HTTP/1.1 streams,
bookmarks, 410 Expired in-stream), POST, PUT (optimistic concurrency), PATCH
(merge, strategic merge, JSON patch), DELETE, pods/binding, status
subresources, real Status error bodies, bearer-token and client-cert auth,
HTTPS, and a fault-injection admin API.

See docs/test-apiserver.md for what it implements and what it does not.

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
import base64
import bisect
import collections
import copy
import datetime
import decimal
import email.utils
import gzip
import http.server
import json
import os
import random
import re
import select
import signal
import socket
import ssl
import sys
import threading
import time
import traceback
import urllib.parse
import uuid

__all__ = ["FakeApiServer", "ApiError", "main"]

# ---------------------------------------------------------------------------
# Constants taken from the real apiserver (see reference/docs/kube-protocol.md)
# ---------------------------------------------------------------------------

OPTIMISTIC_LOCK_ERROR_MSG = ("the object has been modified; please apply your changes "
                             "to the latest version and try again")
NS_MISMATCH_MSG = "the namespace of the provided object does not match the namespace sent on the request"
CONTINUE_EXPIRED_MSG = (
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter, or use the continue token "
    "in this response to retrieve the remainder of the results. Continuing with the provided "
    "token results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list.")
INPUT_MEDIA_TYPES = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]
PATCH_MEDIA_TYPES = ["application/json-patch+json", "application/merge-patch+json",
                     "application/strategic-merge-patch+json", "application/apply-patch+yaml"]
MAX_REQUEST_BODY = 3 * 1024 * 1024
GZIP_THRESHOLD = 128 * 1024
FLOWSCHEMA_UID = "6027abd0-aa72-4d3c-a2cb-42b534068f6d"
PRIORITYLEVEL_UID = "f72ba9d7-6df9-4dd9-8720-be5485197492"
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
RFC3339_LAYOUT = "2006-01-02T15:04:05Z07:00"
MICRO_LAYOUT = "2006-01-02T15:04:05.000000Z07:00"
TOO_LARGE_RV_WAIT = 3.0
WATCHER_QUEUE_LIMIT = 100000

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + r"(\." + DNS1123_LABEL_FMT + ")*"
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
QUANTITY_RE_TEXT = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"

DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '" + DNS1123_SUBDOMAIN_FMT + "')")
DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '" + DNS1123_LABEL_FMT + "')")
QUALIFIED_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '" + QUALIFIED_NAME_FMT + "')")
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is '" + LABEL_VALUE_FMT + "')")
CONFIG_KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '"
    + CONFIG_KEY_FMT + "')")
POD_UPDATE_FORBIDDEN_MSG = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)")

_DNS1123_SUBDOMAIN_RE = re.compile("^" + DNS1123_SUBDOMAIN_FMT + "$")
_DNS1123_LABEL_RE = re.compile("^" + DNS1123_LABEL_FMT + "$")
_QUALIFIED_NAME_RE = re.compile("^" + QUALIFIED_NAME_FMT + "$")
_LABEL_VALUE_RE = re.compile("^" + LABEL_VALUE_FMT + "$")
_CONFIG_KEY_RE = re.compile("^" + CONFIG_KEY_FMT + "$")
_QUANTITY_RE = re.compile(QUANTITY_RE_TEXT)

HTTP_PHRASES = {
    200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 400: "Bad Request",
    401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
    406: "Not Acceptable", 409: "Conflict", 410: "Gone", 413: "Request Entity Too Large",
    415: "Unsupported Media Type", 422: "Unprocessable Entity", 429: "Too Many Requests",
    500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
    504: "Gateway Timeout",
}

# ---------------------------------------------------------------------------
# JSON encoding like Go's encoding/json, times, quantities
# ---------------------------------------------------------------------------


def go_json(obj):
    """Compact JSON as Go's encoding/json writes it (escapes <, >, &, U+2028/9)."""
    s = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    if "<" in s or ">" in s or "&" in s or "\u2028" in s or "\u2029" in s:
        s = (s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
             .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
    return s


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


def fmt_time(dt):
    return dt.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def fmt_micro(dt):
    return dt.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now_time():
    return fmt_time(utcnow())


def now_micro():
    return fmt_micro(utcnow())


class DecodeError(Exception):
    """A body that Go's decoder would refuse (becomes a 400 BadRequest)."""


def _go_quote(s):
    return json.dumps(s, ensure_ascii=False)


def parse_go_time(s, micro):
    """Parse like Go time.Parse with RFC3339 (metav1.Time) or RFC3339Micro (metav1.MicroTime).

    MicroTime requires exactly six fractional digits, as the real decoder does."""
    layout = MICRO_LAYOUT if micro else RFC3339_LAYOUT
    pos = 0

    def fail(elem):
        raise DecodeError("parsing time %s as %s: cannot parse %s as %s"
                          % (_go_quote(s), _go_quote(layout), _go_quote(s[pos:]), _go_quote(elem)))

    def num(n, elem):
        nonlocal pos
        part = s[pos:pos + n]
        if len(part) < n or not part.isdigit():
            fail(elem)
        pos += n
        return int(part)

    def lit(c):
        nonlocal pos
        if s[pos:pos + 1] != c:
            fail(c)
        pos += 1

    year = num(4, "2006"); lit("-"); month = num(2, "01"); lit("-"); day = num(2, "02")
    lit("T"); hh = num(2, "15"); lit(":"); mm = num(2, "04"); lit(":"); ss = num(2, "05")
    usec = 0
    if micro:
        digits = s[pos + 1:pos + 7]
        if s[pos:pos + 1] != "." or len(digits) < 6 or not digits.isdigit():
            fail(".000000")
        usec = int(digits)
        pos += 7
    elif s[pos:pos + 1] in (".", ","):
        j = pos + 1
        while j < len(s) and s[j].isdigit():
            j += 1
        digits = s[pos + 1:j]
        if not digits:
            fail("Z07:00")
        usec = int((digits + "000000")[:6])
        pos = j
    offset = 0
    if s[pos:pos + 1] == "Z":
        pos += 1
    elif s[pos:pos + 1] in ("+", "-") and re.match(r"^[+-]\d\d:\d\d", s[pos:pos + 6]):
        sign = 1 if s[pos] == "+" else -1
        offset = sign * (int(s[pos + 1:pos + 3]) * 60 + int(s[pos + 4:pos + 6]))
        pos += 6
    else:
        fail("Z07:00")
    if pos != len(s):
        raise DecodeError("parsing time %s: extra text: %s" % (_go_quote(s), _go_quote(s[pos:])))
    try:
        tz = datetime.timezone(datetime.timedelta(minutes=offset))
        return datetime.datetime(year, month, day, hh, mm, ss, usec, tzinfo=tz)
    except ValueError as e:
        raise DecodeError("parsing time %s: %s" % (_go_quote(s), str(e).replace("must be in", "out of range;")))


_BIN_SUFFIX = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}
_DEC_SUFFIX = {"n": decimal.Decimal("1e-9"), "u": decimal.Decimal("1e-6"), "m": decimal.Decimal("1e-3"),
               "": decimal.Decimal(1), "k": decimal.Decimal("1e3"), "M": decimal.Decimal("1e6"),
               "G": decimal.Decimal("1e9"), "T": decimal.Decimal("1e12"), "P": decimal.Decimal("1e15"),
               "E": decimal.Decimal("1e18")}
QUANTITY_ERR = "quantities must match the regular expression '%s'" % QUANTITY_RE_TEXT


def parse_quantity(v):
    """Resource quantity (string or JSON number) -> Decimal; DecodeError like the real one."""
    if isinstance(v, bool):
        raise DecodeError(QUANTITY_ERR)
    if isinstance(v, (int, float)):
        return decimal.Decimal(str(v))
    if not isinstance(v, str):
        raise DecodeError(QUANTITY_ERR)
    m = _QUANTITY_RE.match(v.strip())
    if not m or v.strip() != v or v == "":
        raise DecodeError(QUANTITY_ERR)
    num, suffix = m.group(1), m.group(2)
    if num.count(".") > 1 or num.strip("+-") in ("", "."):
        raise DecodeError(QUANTITY_ERR)
    try:
        base = decimal.Decimal(num)
    except decimal.InvalidOperation:
        raise DecodeError(QUANTITY_ERR)
    if suffix in _BIN_SUFFIX:
        return base * _BIN_SUFFIX[suffix]
    if suffix in _DEC_SUFFIX:
        return base * _DEC_SUFFIX[suffix]
    em = re.match(r"^[eE]([-+]?[0-9]+)$", suffix)
    if em:
        return base * (decimal.Decimal(10) ** int(em.group(1)))
    raise DecodeError(QUANTITY_ERR)


def quantity_text(v):
    if isinstance(v, str):
        return v
    d = decimal.Decimal(str(v))
    if d == d.to_integral_value():
        return str(int(d))
    return str(d.normalize())


# ---------------------------------------------------------------------------
# Status objects and API errors
# ---------------------------------------------------------------------------


class ApiError(Exception):
    """An error answered as a metav1.Status (HTTP code == status.code)."""

    def __init__(self, code, reason, message, details=None, headers=None, list_meta=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = list(headers or [])
        self.list_meta = list_meta

    def status(self):
        return make_status(self.code, self.reason, self.message, self.details, list_meta=self.list_meta)


def make_details(name=None, group=None, kind=None, uid=None, causes=None, retry_after=None):
    d = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    if kind:
        d["kind"] = kind
    if uid:
        d["uid"] = uid
    if causes:
        d["causes"] = causes
    if retry_after:
        d["retryAfterSeconds"] = retry_after
    return d


def make_status(code, reason, message, details=None, status="Failure", list_meta=None):
    st = {"kind": "Status", "apiVersion": "v1", "metadata": dict(list_meta or {}), "status": status}
    if message:
        st["message"] = message
    if reason:
        st["reason"] = reason
    if details is not None:
        st["details"] = details
    if code:
        st["code"] = code
    return st


def err_not_found(res, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (res.qualified, name),
                    make_details(name=name, group=res.group, kind=res.plural))


def err_already_exists(res, name):
    return ApiError(409, "AlreadyExists", '%s "%s" already exists' % (res.qualified, name),
                    make_details(name=name, group=res.group, kind=res.plural))


def err_conflict(qualified, group, kind, name, msg):
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s' % (qualified, name, msg),
                    make_details(name=name, group=group, kind=kind))


def err_res_conflict(res, name, msg):
    return err_conflict(res.qualified, res.group, res.plural, name, msg)


def err_bad_request(msg):
    return ApiError(400, "BadRequest", msg)


def err_expired(msg, list_meta=None):
    return ApiError(410, "Expired", msg, list_meta=list_meta)


def err_internal(msg):
    return ApiError(500, "InternalError", "Internal error occurred: %s" % msg,
                    make_details(causes=[{"message": msg}]))


def err_unauthorized():
    return ApiError(401, "Unauthorized", "Unauthorized")


def err_unsupported_media(types):
    return ApiError(415, "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: "
                    + ", ".join(types))


def err_not_acceptable():
    return ApiError(406, "NotAcceptable",
                    "only the following media types are accepted: " + ", ".join(INPUT_MEDIA_TYPES))


def err_generic_not_found():
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def err_method_not_allowed(res, verb):
    return ApiError(405, "MethodNotAllowed",
                    '%s is not supported on resources of kind "%s"' % (verb, res.qualified),
                    make_details(group=res.group, kind=res.plural))


def err_too_large_rv(want, current):
    return ApiError(504, "Timeout", "Timeout: Too large resource version: %d, current: %d" % (want, current),
                    make_details(causes=[{"reason": "ResourceVersionTooLarge",
                                          "message": "Too large resource version"}], retry_after=1),
                    headers=[("Retry-After", "1")])


def err_too_many_requests(retry_after=1):
    return ApiError(429, "TooManyRequests", "Too many requests, please try again later.",
                    make_details(retry_after=retry_after), headers=[("Retry-After", str(retry_after))])


class FieldError:
    """One field.Error: renders like apimachinery's ErrorBody()."""

    def __init__(self, kind, field, value=None, detail="", supported=None):
        self.kind = kind
        self.field = field
        self.value = value
        self.detail = detail
        self.supported = supported

    def body(self):
        if self.kind == "Required":
            return "Required value" + (": " + self.detail if self.detail else "")
        if self.kind == "Forbidden":
            return "Forbidden" + (": " + self.detail if self.detail else "")
        if self.kind == "Duplicate":
            return "Duplicate value: %s" % _fmt_value(self.value)
        if self.kind == "NotSupported":
            quoted = ", ".join(_go_quote(s) for s in (self.supported or []))
            return "Unsupported value: %s: supported values: %s" % (_fmt_value(self.value), quoted)
        if self.kind == "TooLong":
            return "Too long: " + self.detail
        s = "Invalid value: %s" % _fmt_value(self.value)
        return s + (": " + self.detail if self.detail else "")

    def reason(self):
        return {"Required": "FieldValueRequired", "Forbidden": "FieldValueForbidden",
                "Duplicate": "FieldValueDuplicate", "NotSupported": "FieldValueNotSupported",
                "TooLong": "FieldValueTooLong"}.get(self.kind, "FieldValueInvalid")

    def error(self):
        return "%s: %s" % (self.field, self.body())


def _fmt_value(v):
    if isinstance(v, str):
        return _go_quote(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    return str(v)


def aggregate(errs):
    if len(errs) == 1:
        return errs[0].error()
    return "[" + ", ".join(e.error() for e in errs) + "]"


def err_invalid(kind, group, name, errs):
    qk = kind + ("." + group if group else "")
    causes = [{"reason": e.reason(), "message": e.body(), "field": e.field} for e in errs]
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (qk, name, aggregate(errs)),
                    make_details(name=name, group=group, kind=kind, causes=causes))


def err_invalid_list_options(errs):
    return err_invalid("ListOptions", "meta.k8s.io", "", errs)


# ---------------------------------------------------------------------------
# Validation helpers (apimachinery validation messages)
# ---------------------------------------------------------------------------


def is_dns1123_subdomain(v):
    errs = []
    if len(v) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN_RE.match(v):
        errs.append(DNS1123_SUBDOMAIN_MSG)
    return errs


def is_dns1123_label(v):
    errs = []
    if len(v) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1123_LABEL_RE.match(v):
        errs.append(DNS1123_LABEL_MSG)
    return errs


def is_qualified_name(v):
    errs = []
    parts = v.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return ["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must "
                "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                "'123-abc', regex used for validation is '" + QUALIFIED_NAME_FMT + "') with an optional "
                "DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if name and not _QUALIFIED_NAME_RE.match(name):
        errs.append(QUALIFIED_NAME_MSG)
    return errs


def is_label_value(v):
    errs = []
    if len(v) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE_RE.match(v):
        errs.append(LABEL_VALUE_MSG)
    return errs


def is_valid_path_segment(name):
    if name in (".", ".."):
        return ['may not be %s' % _go_quote(name)]
    for bad in ("/", "%"):
        if bad in name:
            return ['may not contain %s' % _go_quote(bad)]
    return []


def validate_object_meta(meta, namespaced, name_fn=is_dns1123_subdomain, path="metadata"):
    errs = []
    name = meta.get("name", "")
    gen = meta.get("generateName", "")
    if not name and not gen:
        errs.append(FieldError("Required", path + ".name", detail="name or generateName is required"))
    elif name:
        for m in name_fn(name):
            errs.append(FieldError("Invalid", path + ".name", name, m))
    if namespaced:
        ns = meta.get("namespace", "")
        if not ns:
            errs.append(FieldError("Required", path + ".namespace"))
        else:
            for m in is_dns1123_label(ns):
                errs.append(FieldError("Invalid", path + ".namespace", ns, m))
    for k, v in (meta.get("labels") or {}).items():
        for m in is_qualified_name(k):
            errs.append(FieldError("Invalid", path + ".labels", k, m))
        for m in is_label_value(v):
            errs.append(FieldError("Invalid", path + ".labels", v, m))
    total = 0
    for k, v in (meta.get("annotations") or {}).items():
        for m in is_qualified_name(k.lower()):
            errs.append(FieldError("Invalid", path + ".annotations", k, m))
        total += len(k) + len(v)
    if total > 256 * 1024:
        errs.append(FieldError("TooLong", path + ".annotations",
                               detail="may not be more than 262144 bytes"))
    return errs


# ---------------------------------------------------------------------------
# Decoding with Go's type strictness (typed fields of the resources used)
# ---------------------------------------------------------------------------

STR, I32, I64, BOOL, TIME, MICRO, MAPSTR, QMAP, ANY, B64 = (
    "string", "int32", "int64", "bool", "v1.Time", "v1.MicroTime", "map[string]string",
    "v1.ResourceList", "any", "[]uint8")


def S(*args, **fields):
    """S(GoStructName, closed=False, field=type, ...): a struct schema (closed: drop unknown keys)."""
    fields["_s"] = args[0]
    fields["_closed"] = bool(args[1]) if len(args) > 1 else False
    return fields


def L(elem):
    return ("list", elem)


OWNERREF = S("OwnerReference", apiVersion=STR, kind=STR, name=STR, uid=STR, controller=BOOL,
             blockOwnerDeletion=BOOL)
META = S("ObjectMeta", True, name=STR, generateName=STR, namespace=STR, selfLink=STR, uid=STR,
         resourceVersion=STR, generation=I64, creationTimestamp=TIME, deletionTimestamp=TIME,
         deletionGracePeriodSeconds=I64, labels=MAPSTR, annotations=MAPSTR,
         ownerReferences=L(OWNERREF), finalizers=L(STR), managedFields=L(ANY))
OBJREF = S("ObjectReference", kind=STR, namespace=STR, name=STR, uid=STR, apiVersion=STR,
           resourceVersion=STR, fieldPath=STR)
RESREQ = S("ResourceRequirements", limits=QMAP, requests=QMAP, claims=L(ANY))
CONTAINER = S("Container", name=STR, image=STR, resources=RESREQ, imagePullPolicy=STR,
              command=L(STR), args=L(STR), workingDir=STR)
PODSPEC = S("PodSpec", containers=L(CONTAINER), initContainers=L(CONTAINER), nodeName=STR,
            schedulerName=STR, restartPolicy=STR, serviceAccountName=STR, hostNetwork=BOOL,
            priority=I32, priorityClassName=STR, nodeSelector=MAPSTR, activeDeadlineSeconds=I64,
            terminationGracePeriodSeconds=I64, schedulingGates=L(S("PodSchedulingGate", name=STR)),
            tolerations=L(S("Toleration", key=STR, operator=STR, value=STR, effect=STR,
                            tolerationSeconds=I64)))
PODCOND = S("PodCondition", type=STR, status=STR, lastProbeTime=TIME, lastTransitionTime=TIME,
            reason=STR, message=STR)
PODSTATUS = S("PodStatus", phase=STR, conditions=L(PODCOND), message=STR, reason=STR,
              nominatedNodeName=STR, hostIP=STR, podIP=STR, startTime=TIME, qosClass=STR)
POD = S("Pod", True, kind=STR, apiVersion=STR, metadata=META, spec=PODSPEC, status=PODSTATUS)
NODECOND = S("NodeCondition", type=STR, status=STR, lastHeartbeatTime=TIME, lastTransitionTime=TIME,
             reason=STR, message=STR)
NODE = S("Node", True, kind=STR, apiVersion=STR, metadata=META,
         spec=S("NodeSpec", podCIDR=STR, podCIDRs=L(STR), providerID=STR, unschedulable=BOOL,
                taints=L(S("Taint", key=STR, value=STR, effect=STR, timeAdded=TIME))),
         status=S("NodeStatus", capacity=QMAP, allocatable=QMAP, phase=STR, conditions=L(NODECOND)))
CONFIGMAP = S("ConfigMap", True, kind=STR, apiVersion=STR, metadata=META, data=MAPSTR,
              binaryData=("map", B64), immutable=BOOL)
LEASE = S("Lease", True, kind=STR, apiVersion=STR, metadata=META,
          spec=S("LeaseSpec", holderIdentity=STR, leaseDurationSeconds=I32, acquireTime=MICRO,
                 renewTime=MICRO, leaseTransitions=I32, strategy=STR, preferredHolder=STR))
EVSOURCE = S("EventSource", component=STR, host=STR)
EVSERIES = S("EventSeries", count=I32, lastObservedTime=MICRO)
EVENT_CORE = S("Event", True, kind=STR, apiVersion=STR, metadata=META, involvedObject=OBJREF,
               reason=STR, message=STR, source=EVSOURCE, firstTimestamp=TIME, lastTimestamp=TIME,
               count=I32, type=STR, eventTime=MICRO, series=EVSERIES, action=STR, related=OBJREF,
               reportingComponent=STR, reportingInstance=STR)
EVENT_V1 = S("Event", True, kind=STR, apiVersion=STR, metadata=META, eventTime=MICRO, series=EVSERIES,
             reportingController=STR, reportingInstance=STR, action=STR, reason=STR, regarding=OBJREF,
             related=OBJREF, note=STR, type=STR, deprecatedSource=EVSOURCE,
             deprecatedFirstTimestamp=TIME, deprecatedLastTimestamp=TIME, deprecatedCount=I32)
BINDING = S("Binding", True, kind=STR, apiVersion=STR, metadata=META, target=OBJREF)
DELETE_OPTIONS = S("DeleteOptions", kind=STR, apiVersion=STR, gracePeriodSeconds=I64,
                   preconditions=S("Preconditions", uid=STR, resourceVersion=STR),
                   orphanDependents=BOOL, propagationPolicy=STR, dryRun=L(STR))


def _json_type(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "null"


def _type_err(v, struct, path, gotype):
    raise DecodeError("json: cannot unmarshal %s into Go struct field %s.%s of type %s"
                      % (_json_type(v), struct, path, gotype))


def typecheck(value, schema, path, struct, unknown):
    """Return the normalized value or raise DecodeError like Go's decoder would."""
    if value is None:
        return None
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            _type_err(value, struct, path, "v1." + schema["_s"])
        out = {}
        for k, v in value.items():
            sub = schema.get(k)
            p = (path + "." + k) if path else k
            if k.startswith("_"):
                sub = None
            if sub is None:
                if schema.get("_closed"):
                    unknown.append(p)
                    continue
                out[k] = v
                continue
            nv = typecheck(v, sub, p, schema["_s"], unknown)
            if nv is not None:
                out[k] = nv
            elif sub in (TIME, MICRO):
                out[k] = None
        return out
    if isinstance(schema, tuple):
        kind, elem = schema
        if kind == "list":
            if not isinstance(value, list):
                _type_err(value, struct, path, "[]" + (elem if isinstance(elem, str) else "v1." + elem["_s"]))
            return [typecheck(v, elem, path, struct, unknown) for v in value]
        if not isinstance(value, dict):
            _type_err(value, struct, path, "map[string]" + elem)
        out = {}
        for k, v in value.items():
            if elem == B64:
                if not isinstance(v, str):
                    _type_err(v, struct, path, "[]uint8")
                try:
                    base64.b64decode(v, validate=True)
                except Exception:
                    raise DecodeError("illegal base64 data at input byte 0")
            out[k] = v
        return out
    if schema == ANY:
        return value
    if schema == STR:
        if not isinstance(value, str):
            _type_err(value, struct, path, "string")
        return value
    if schema == BOOL:
        if not isinstance(value, bool):
            _type_err(value, struct, path, "bool")
        return value
    if schema in (I32, I64):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            _type_err(value, struct, path, schema)
        if isinstance(value, float):
            raise DecodeError("json: cannot unmarshal number %s into Go struct field %s.%s of type %s"
                              % (json.dumps(value), struct, path, schema))
        lim = 2 ** 31 if schema == I32 else 2 ** 63
        if not -lim <= value < lim:
            raise DecodeError("json: cannot unmarshal number %d into Go struct field %s.%s of type %s"
                              % (value, struct, path, schema))
        return value
    if schema == MAPSTR:
        if not isinstance(value, dict):
            _type_err(value, struct, path, "map[string]string")
        for k, v in value.items():
            if not isinstance(v, str):
                _type_err(v, struct, path, "string")
        return dict(value)
    if schema == QMAP:
        if not isinstance(value, dict):
            _type_err(value, struct, path, "v1.ResourceList")
        out = {}
        for k, v in value.items():
            parse_quantity(v)
            out[k] = quantity_text(v)
        return out
    if schema in (TIME, MICRO):
        if not isinstance(value, str):
            raise DecodeError("json: cannot unmarshal %s into Go struct field %s.%s of type %s"
                              % (_json_type(value), struct, path, "string"))
        dt = parse_go_time(value, schema == MICRO)
        return fmt_micro(dt) if schema == MICRO else fmt_time(dt)
    return value


# ---------------------------------------------------------------------------
# Resources
# ---------------------------------------------------------------------------


class Res:
    def __init__(self, group, version, plural, kind, namespaced, storage, schema, fields, view=None):
        self.group = group
        self.version = version
        self.plural = plural
        self.kind = kind
        self.namespaced = namespaced
        self.storage = storage
        self.schema = schema
        self.fields = fields
        self.view = view  # None (storage form) or "eventsv1"

    @property
    def api_version(self):
        return self.version if not self.group else self.group + "/" + self.version

    @property
    def qualified(self):
        return self.plural if not self.group else self.plural + "." + self.group

    @property
    def list_kind(self):
        return self.kind + "List"

    def __repr__(self):
        return "Res(%s)" % self.qualified


META_FIELDS = {"metadata.name", "metadata.namespace"}
POD_FIELDS = META_FIELDS | {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                            "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
                            "status.podIPs", "status.nominatedNodeName", "spec.host"}
NODE_FIELDS = {"metadata.name", "spec.unschedulable"}
EVENT_FIELDS = META_FIELDS | {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                              "involvedObject.uid", "involvedObject.apiVersion",
                              "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                              "reportingComponent", "source", "type"}

RESOURCES = [
    Res("", "v1", "pods", "Pod", True, "pods", POD, POD_FIELDS),
    Res("", "v1", "nodes", "Node", False, "nodes", NODE, NODE_FIELDS),
    Res("", "v1", "configmaps", "ConfigMap", True, "configmaps", CONFIGMAP, META_FIELDS),
    Res("", "v1", "events", "Event", True, "events", EVENT_CORE, EVENT_FIELDS),
    Res("coordination.k8s.io", "v1", "leases", "Lease", True, "leases", LEASE, META_FIELDS),
    Res("events.k8s.io", "v1", "events", "Event", True, "events", EVENT_V1, EVENT_FIELDS, view="eventsv1"),
]
RES_BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
STORAGE_RES = {r.storage: r for r in RESOURCES if r.view is None}
BINDING_RES = Res("", "v1", "bindings", "Binding", True, "pods", BINDING, set())
RES_BY_KIND = {}
for _r in RESOURCES:
    RES_BY_KIND[(_r.api_version, _r.kind)] = _r


def resource_for(name):
    """'pods', 'nodes', 'configmaps', 'events', 'leases', 'events.events.k8s.io', a Res -> Res."""
    if isinstance(name, Res):
        return name
    for r in RESOURCES:
        if name in (r.plural, r.qualified) and (r.view is None or name == r.qualified):
            return r
    for r in RESOURCES:
        if name.lower() == r.kind.lower() and r.view is None:
            return r
    raise KeyError("unknown resource %r" % (name,))


def obj_key(ns, name):
    return "%s/%s" % (ns, name) if ns else name


def meta_of(obj):
    return obj.get("metadata") or {}


META_ORDER = ["name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
              "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
              "annotations", "ownerReferences", "finalizers", "managedFields"]
EVENT_CORE_ORDER = ["kind", "apiVersion", "metadata", "involvedObject", "reason", "message", "source",
                    "firstTimestamp", "lastTimestamp", "count", "type", "eventTime", "series", "action",
                    "related", "reportingComponent", "reportingInstance"]
EVENT_V1_ORDER = ["kind", "apiVersion", "metadata", "eventTime", "series", "reportingController",
                  "reportingInstance", "action", "reason", "regarding", "related", "note", "type",
                  "deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp",
                  "deprecatedCount"]


def _ordered(d, order):
    out = {}
    for k in order:
        if k in d:
            out[k] = d[k]
    for k, v in d.items():
        if k not in out:
            out[k] = v
    return out


def normalize(obj, res):
    """Key order and always-present fields as Go's structs serialize them."""
    obj = dict(obj)
    obj["metadata"] = _ordered(obj.get("metadata") or {}, META_ORDER)
    if res.storage == "events":
        obj.setdefault("involvedObject", {})
        obj.setdefault("source", {})
        obj.setdefault("firstTimestamp", None)
        obj.setdefault("lastTimestamp", None)
        obj.setdefault("eventTime", None)
        obj.setdefault("reportingComponent", "")
        obj.setdefault("reportingInstance", "")
        return _ordered(obj, EVENT_CORE_ORDER)
    if res.kind in ("Pod", "Node"):
        obj.setdefault("spec", {})
        obj.setdefault("status", {})
        return _ordered(obj, ["kind", "apiVersion", "metadata", "spec", "status"])
    if res.kind == "Lease":
        obj.setdefault("spec", {})
        return _ordered(obj, ["kind", "apiVersion", "metadata", "spec"])
    if res.kind == "ConfigMap":
        return _ordered(obj, ["kind", "apiVersion", "metadata", "immutable", "data", "binaryData"])
    return _ordered(obj, ["kind", "apiVersion", "metadata"])


# events: core v1 (storage form) <-> events.k8s.io/v1

_EV_MAP = [("involvedObject", "regarding"), ("related", "related"), ("message", "note"),
           ("reportingComponent", "reportingController"), ("reportingInstance", "reportingInstance"),
           ("action", "action"), ("reason", "reason"), ("type", "type"), ("eventTime", "eventTime"),
           ("series", "series"), ("source", "deprecatedSource"), ("firstTimestamp", "deprecatedFirstTimestamp"),
           ("lastTimestamp", "deprecatedLastTimestamp"), ("count", "deprecatedCount")]


def event_to_v1(core):
    out = {"kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": core.get("metadata", {})}
    for c, v in _EV_MAP:
        val = core.get(c)
        if val in (None, "", 0, {}) and c not in ("eventTime", "firstTimestamp", "lastTimestamp",
                                                   "source", "involvedObject"):
            continue
        out[v] = val
    out.setdefault("eventTime", None)
    out.setdefault("regarding", {})
    out.setdefault("deprecatedSource", {})
    out.setdefault("deprecatedFirstTimestamp", None)
    out.setdefault("deprecatedLastTimestamp", None)
    if out.get("series"):
        out["series"] = {k: out["series"][k] for k in ("count", "lastObservedTime") if k in out["series"]}
    out["metadata"] = _ordered(out["metadata"], META_ORDER)
    return _ordered(out, EVENT_V1_ORDER)


def event_from_v1(v1):
    out = {"kind": "Event", "apiVersion": "v1", "metadata": v1.get("metadata", {})}
    for c, v in _EV_MAP:
        if v in v1 and v1[v] is not None:
            out[c] = v1[v]
    return out


def view_obj(res, obj):
    """Storage form -> the form of the API group/version asked for (with kind/apiVersion)."""
    if res.view == "eventsv1":
        return event_to_v1(obj)
    return normalize(obj, res)


def strip_type(obj):
    o = dict(obj)
    o.pop("kind", None)
    o.pop("apiVersion", None)
    return o


# ---------------------------------------------------------------------------
# Selectors
# ---------------------------------------------------------------------------


class LabelSelector:
    _SET_RE = re.compile(r"^\s*([^\s!=<>(),]+)\s+(in|notin)\s*\((.*)\)\s*$")
    _OP_RE = re.compile(r"^\s*([^\s!=<>(),]+)\s*(==|!=|=|>|<)\s*([^\s,()]*)\s*$")
    _EXISTS_RE = re.compile(r"^\s*(!?)\s*([^\s!=<>(),]+)\s*$")

    def __init__(self, text):
        self.reqs = []
        self.text = text or ""
        if not self.text.strip():
            return
        for term in self._split(self.text):
            self.reqs.append(self._parse(term))

    @staticmethod
    def _split(text):
        terms, depth, cur = [], 0, ""
        for ch in text:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            if ch == "," and depth == 0:
                terms.append(cur)
                cur = ""
            else:
                cur += ch
        terms.append(cur)
        return terms

    def _bad(self, msg):
        raise err_bad_request("unable to parse requirement: " + msg)

    def _check_key(self, key):
        errs = is_qualified_name(key)
        if errs:
            self._bad("key: Invalid value: %s: %s" % (_go_quote(key), errs[0]))

    def _check_val(self, key, val):
        errs = is_label_value(val)
        if errs:
            self._bad("values[0][%s]: Invalid value: %s: %s" % (key, _go_quote(val), errs[0]))

    def _parse(self, term):
        if not term.strip():
            self._bad("found '', expected: !, identifier, or 'end of string'")
        m = self._SET_RE.match(term)
        if m:
            key, op, vals = m.group(1), m.group(2), [v.strip() for v in m.group(3).split(",")]
            self._check_key(key)
            if vals == [""]:
                vals = []
            if not vals:
                self._bad("for 'in', 'notin' operators, values set can't be empty")
            for v in vals:
                self._check_val(key, v)
            return (key, op, set(vals))
        m = self._OP_RE.match(term)
        if m:
            key, op, val = m.group(1), m.group(2), m.group(3)
            self._check_key(key)
            if op in (">", "<"):
                if not re.match(r"^-?\d+$", val):
                    self._bad("for 'Gt', 'Lt' operators, the value must be an integer")
                return (key, op, int(val))
            self._check_val(key, val)
            return (key, "=" if op == "==" else op, val)
        m = self._EXISTS_RE.match(term)
        if m:
            self._check_key(m.group(2))
            return (m.group(2), "!" if m.group(1) else "exists", None)
        self._bad("found %s, expected: ',', 'end of string'" % _go_quote(term.strip()))

    def matches(self, labels):
        labels = labels or {}
        for key, op, val in self.reqs:
            has = key in labels
            v = labels.get(key)
            if op == "=":
                ok = has and v == val
            elif op == "!=":
                ok = not has or v != val
            elif op == "in":
                ok = has and v in val
            elif op == "notin":
                ok = not has or v not in val
            elif op == "exists":
                ok = has
            elif op == "!":
                ok = not has
            elif op in (">", "<"):
                try:
                    n = int(v) if has else None
                except ValueError:
                    n = None
                ok = n is not None and (n > val if op == ">" else n < val)
            else:
                ok = False
            if not ok:
                return False
        return True

    def empty(self):
        return not self.reqs


class FieldSelector:
    def __init__(self, text, res):
        self.reqs = []
        self.text = text or ""
        if not self.text.strip():
            return
        for term in self._split(self.text):
            if not term:
                continue
            field, op, value = self._parse_term(term)
            if field == "spec.host" and res.storage == "pods":
                field = "spec.nodeName"
            if field not in res.fields:
                raise err_bad_request("field label not supported: %s" % field)
            self.reqs.append((field, op, value))

    @staticmethod
    def _split(text):
        out, cur, esc = [], "", False
        for ch in text:
            if esc:
                cur += "\\" + ch
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == ",":
                out.append(cur)
                cur = ""
            else:
                cur += ch
        if esc:
            cur += "\\"
        out.append(cur)
        return out

    @staticmethod
    def _unescape(v):
        out, esc = "", False
        for ch in v:
            if esc:
                if ch not in "\\,=":
                    raise err_bad_request("invalid field selector: invalid escape sequence: \\%s" % ch)
                out += ch
                esc = False
            elif ch == "\\":
                esc = True
            elif ch in "=,":
                raise err_bad_request("invalid field selector: unescaped %s in value" % ch)
            else:
                out += ch
        if esc:
            raise err_bad_request("invalid field selector: unterminated escape sequence")
        return out

    def _parse_term(self, term):
        for i in range(len(term)):
            for op in ("!=", "==", "="):
                if term.startswith(op, i):
                    return term[:i], "!=" if op == "!=" else "=", self._unescape(term[i + len(op):])
        raise err_bad_request("invalid selector: '%s'; can't understand '%s'" % (self.text, term))

    def matches(self, attrs):
        for field, op, value in self.reqs:
            v = attrs.get(field, "")
            if (v == value) != (op == "="):
                return False
        return True

    def empty(self):
        return not self.reqs


def field_attrs(storage, obj):
    meta = meta_of(obj)
    a = {"metadata.name": meta.get("name", ""), "metadata.namespace": meta.get("namespace", "")}
    if storage == "pods":
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        ips = [p.get("ip", "") for p in status.get("podIPs") or [] if isinstance(p, dict)]
        a.update({"spec.nodeName": spec.get("nodeName", ""),
                  "spec.restartPolicy": spec.get("restartPolicy", ""),
                  "spec.schedulerName": spec.get("schedulerName", ""),
                  "spec.serviceAccountName": spec.get("serviceAccountName", ""),
                  "spec.hostNetwork": "true" if spec.get("hostNetwork") else "false",
                  "status.phase": status.get("phase", ""),
                  "status.podIP": ips[0] if ips else status.get("podIP", ""),
                  "status.podIPs": ",".join(ips),
                  "status.nominatedNodeName": status.get("nominatedNodeName", "")})
    elif storage == "nodes":
        a["spec.unschedulable"] = "true" if (obj.get("spec") or {}).get("unschedulable") else "false"
    elif storage == "events":
        io = obj.get("involvedObject") or {}
        for k in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"):
            a["involvedObject." + k] = io.get(k, "")
        a["reason"] = obj.get("reason", "")
        a["reportingComponent"] = obj.get("reportingComponent", "")
        a["source"] = (obj.get("source") or {}).get("component", "")
        a["type"] = obj.get("type", "")
    return a


# ---------------------------------------------------------------------------
# Patches
# ---------------------------------------------------------------------------


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


# list path -> merge key (None: merge primitive list as a set) for built-in types
SMP_MERGE_KEYS = {
    ("metadata", "finalizers"): None,
    ("metadata", "ownerReferences"): "uid",
    ("spec", "containers"): "name",
    ("spec", "initContainers"): "name",
    ("spec", "ephemeralContainers"): "name",
    ("spec", "volumes"): "name",
    ("spec", "imagePullSecrets"): "name",
    ("spec", "containers", "*", "env"): "name",
    ("spec", "containers", "*", "ports"): "containerPort",
    ("spec", "containers", "*", "volumeMounts"): "mountPath",
    ("spec", "initContainers", "*", "env"): "name",
    ("spec", "initContainers", "*", "volumeMounts"): "mountPath",
    ("status", "conditions"): "type",
    ("status", "addresses"): "type",
    ("status", "podIPs"): "ip",
    ("spec", "schedulingGates"): "name",
}


class _Delete:
    pass


_DELETE = _Delete()


def strategic_merge_patch(target, patch, path=()):
    """Kubernetes strategic merge patch for the built-in lists above, merge patch elsewhere."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return _DELETE
    if directive is not None:
        raise err_bad_request("Unknown patch type: %s" % directive)
    out = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for k, v in patch.items():
        if k in ("$retainKeys",) or k.startswith("$setElementOrder/"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            key = k.split("/", 1)[1]
            if isinstance(out.get(key), list) and isinstance(v, list):
                out[key] = [x for x in out[key] if x not in v]
            continue
        sub = path + (k,)
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list) and _smp_key(sub) is not False and isinstance(out.get(k), list):
            out[k] = _smp_merge_list(out[k], v, sub)
        elif isinstance(v, dict):
            r = strategic_merge_patch(out.get(k), v, sub)
            if r is _DELETE:
                out.pop(k, None)
            else:
                out[k] = r
        else:
            out[k] = copy.deepcopy(v)
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _smp_key(path):
    generic = tuple("*" if isinstance(p, int) else p for p in path)
    for pattern, key in SMP_MERGE_KEYS.items():
        if len(pattern) == len(generic) and all(a == "*" or a == b for a, b in zip(pattern, generic)):
            return key
    return False


def _smp_merge_list(cur, patch, path):
    key = _smp_key(path)
    if any(isinstance(x, dict) and x.get("$patch") == "replace" for x in patch):
        return [copy.deepcopy(x) for x in patch if not (isinstance(x, dict) and "$patch" in x)]
    if key is None:
        out = list(cur)
        for x in patch:
            if x not in out:
                out.append(copy.deepcopy(x))
        return out
    out = [copy.deepcopy(x) for x in cur]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise err_bad_request("map: %s does not contain declared merge key: %s" % (item, key))
        idx = next((i for i, x in enumerate(out) if isinstance(x, dict) and x.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append({k: copy.deepcopy(v) for k, v in item.items() if v is not None})
        else:
            out[idx] = strategic_merge_patch(out[idx], item, path + ("*",))
    return out


def _json_pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, "Invalid", "the server rejected our request due to an error in our request")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(doc, ops):
    """RFC 6902 JSON patch."""
    if not isinstance(ops, list):
        raise err_bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(doc)

    def fail(msg):
        raise ApiError(422, "Invalid", msg)

    def parent(tokens):
        cur = doc
        for t in tokens[:-1]:
            if isinstance(cur, dict) and t in cur:
                cur = cur[t]
            elif isinstance(cur, list) and t.isdigit() and int(t) < len(cur):
                cur = cur[int(t)]
            else:
                fail("doc is missing path: %s: missing value" % ("/" + "/".join(tokens)))
        return cur

    def get(tokens):
        if not tokens:
            return doc
        p = parent(tokens)
        t = tokens[-1]
        if isinstance(p, dict) and t in p:
            return p[t]
        if isinstance(p, list) and t.isdigit() and int(t) < len(p):
            return p[int(t)]
        fail("doc is missing key: %s: missing value" % ("/" + "/".join(tokens)))

    def add(tokens, value):
        nonlocal doc
        if not tokens:
            doc = value
            return
        p = parent(tokens)
        t = tokens[-1]
        if isinstance(p, dict):
            p[t] = value
        elif isinstance(p, list):
            if t == "-":
                p.append(value)
            elif t.isdigit() and int(t) <= len(p):
                p.insert(int(t), value)
            else:
                fail("Unable to access invalid index: %s: invalid index referenced" % t)
        else:
            fail("doc is missing path: %s: missing value" % ("/" + "/".join(tokens)))

    def remove(tokens):
        p = parent(tokens)
        t = tokens[-1]
        if isinstance(p, dict) and t in p:
            return p.pop(t)
        if isinstance(p, list) and t.isdigit() and int(t) < len(p):
            return p.pop(int(t))
        fail("Unable to remove nonexistent key: %s: missing value" % t)

    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise err_bad_request("Unexpected kind: <nil>")
        kind = op["op"]
        tokens = _json_pointer(op.get("path", ""))
        if kind == "add":
            add(tokens, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            remove(tokens)
        elif kind == "replace":
            get(tokens)
            remove(tokens) if tokens else None
            add(tokens, copy.deepcopy(op.get("value")))
        elif kind == "move":
            v = remove(_json_pointer(op.get("from", "")))
            add(tokens, v)
        elif kind == "copy":
            add(tokens, copy.deepcopy(get(_json_pointer(op.get("from", "")))))
        elif kind == "test":
            if get(tokens) != op.get("value"):
                fail("testing value %s failed: test failed" % op.get("path"))
        else:
            raise err_bad_request("Unexpected kind: %s" % kind)
    return doc


# ---------------------------------------------------------------------------
# Store: objects, a global resourceVersion counter, history, watchers
# ---------------------------------------------------------------------------


class Event:
    __slots__ = ("rv", "type", "storage", "key", "obj", "prev")

    def __init__(self, rv, type_, storage, key, obj, prev):
        self.rv = rv
        self.type = type_
        self.storage = storage
        self.key = key
        self.obj = obj
        self.prev = prev


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
        # (view, key) and valid while the entry still holds the same object.
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
            hit = cache[key] = (obj, {})
        view = (res.view, res.kind)
        data = hit[1].get(view)
        if data is None:
            data = hit[1][view] = go_json(strip_type(view_obj(res, obj))).encode("utf-8")
        return data

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
            if not name:
                errs.append(FieldError("Required", p + ".name"))
            else:
                for m in is_dns1123_label(name):
                    errs.append(FieldError("Invalid", p + ".name", name, m))
                if name in seen:
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


def validate_event(core, api):
    """ValidateEventCreate: legacy rules always, strict rules for events.k8s.io/v1."""
    errs = []
    ns = meta_of(core).get("namespace", "")
    io = core.get("involvedObject") or {}
    ctl_field = "reportingComponent" if api == "v1" else "reportingController"
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
            errs.append(FieldError("Required", ctl_field))
        for m in is_qualified_name(ctl):
            errs.append(FieldError("Invalid", ctl_field, ctl, m))
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
    if api != "v1":
        errs.extend(validate_object_meta(meta_of(core), True))
        series = core.get("series")
        if series:
            if series.get("count", 0) < 2:
                errs.append(FieldError("Invalid", "series.count", "", "should be at least 2"))
            if not series.get("lastObservedTime"):
                errs.append(FieldError("Required", "series.lastObservedTime"))
        if not core.get("eventTime"):
            errs.append(FieldError("Required", "eventTime"))
        typ = core.get("type", "")
        if typ not in ("Normal", "Warning"):
            errs.append(FieldError("Invalid", "type", "", "has invalid value: %s" % typ))
        for c, v in (("firstTimestamp", "deprecatedFirstTimestamp"), ("lastTimestamp", "deprecatedLastTimestamp"),
                     ("count", "deprecatedCount")):
            if core.get(c):
                errs.append(FieldError("Invalid", v, "", "needs to be unset"))
        src = core.get("source") or {}
        if src.get("component") or src.get("host"):
            errs.append(FieldError("Invalid", "deprecatedSource", "", "needs to be unset"))
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


def decode_object(body, res, schema=None, kind=None, api_version=None, strict=False, warnings=None):
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
        if strict:
            raise err_bad_request('%s in version "%s" cannot be handled as a %s: strict decoding error: '
                                  'unknown field "%s"' % (kind, version, kind, u))
        if warnings is not None:
            warnings.append('299 - "unknown field \\"%s\\""' % u)
    obj["kind"] = kind
    obj["apiVersion"] = api_version
    if not isinstance(obj.get("metadata"), dict):
        obj["metadata"] = {}
    return obj


class ApiHandler(http.server.BaseHTTPRequestHandler):
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
                    self.close_connection = True
                    try:
                        socket.socket.shutdown(self.connection, socket.SHUT_RDWR)
                    except OSError:
                        pass
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
            for g in ("coordination.k8s.io", "events.k8s.io"):
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
        watch_prefix = False
        if rest[0] == "watch":
            watch_prefix = True
            rest = rest[1:]
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
        if group == "" and plural == "bindings" and ns is not None and name is None and not watch_prefix:
            if m != "POST":
                raise err_method_not_allowed(BINDING_RES, m.lower())
            return self.do_binding(ns, None, body, q)
        res = RES_BY_PATH.get((group, version, plural))
        if res is None:
            raise err_generic_not_found()
        if (ns is not None) != res.namespaced and not (ns is None and res.namespaced and name is None):
            raise err_generic_not_found()
        if ns is not None and not ns:
            raise err_generic_not_found()
        if sub is not None:
            if watch_prefix:
                raise err_generic_not_found()
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
        if watch_prefix:
            if m != "GET":
                raise err_generic_not_found()
            if name is not None:
                fs = q.get("fieldSelector", "")
                q["fieldSelector"] = ("metadata.name=%s" % name) + ("," + fs if fs else "")
            return self.do_watch(res, ns, q, rawq)
        if name is None:
            if m == "GET":
                if parse_bool(q.get("watch", "false"), "watch"):
                    return self.do_watch(res, ns, q, rawq)
                return self.do_list(res, ns, q)
            if m == "POST":
                if ns is None and res.namespaced:
                    raise err_method_not_allowed(res, "create")
                return self.do_create(res, ns, body, q)
            if m == "DELETE":
                return self.do_delete_collection(res, ns, body, q)
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
            verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
            items.append({"name": r.plural, "singularName": r.kind.lower(), "namespaced": r.namespaced,
                          "kind": r.kind, "verbs": verbs})
            if r.storage in ("pods", "nodes") and r.view is None:
                items.append({"name": r.plural + "/status", "singularName": "", "namespaced": r.namespaced,
                              "kind": r.kind, "verbs": ["get", "patch", "update"]})
            if r.storage == "pods" and r.view is None:
                items.append({"name": "pods/binding", "singularName": "", "namespaced": True,
                              "kind": "Binding", "verbs": ["create"]})
        if group == "" and version == "v1":
            items.append({"name": "bindings", "singularName": "binding", "namespaced": True,
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

    def decode_body(self, body, res, schema=None, kind=None, api_version=None, strict=False, check_ct=True):
        """Decode a request body into a dict like the real decoder (400s on bad input)."""
        if check_ct:
            ct = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip().lower()
            if ct != "application/json":
                raise err_unsupported_media(INPUT_MEDIA_TYPES)
        return decode_object(body, res, schema, kind, api_version, strict, self.warnings)

    def warning_headers(self):
        return [("Warning", w) for w in self.warnings]

    def field_validation_strict(self, q):
        fv = q.get("fieldValidation", "")
        if fv not in ("", "Ignore", "Warn", "Strict"):
            raise err_bad_request("fieldValidation parameter unsupported: %s" % fv)
        return fv == "Strict"

    # -- verbs ----------------------------------------------------------------
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
            "sie": None if "sendInitialEvents" not in q else parse_bool(q["sendInitialEvents"], "sendInitialEvents"),
        }
        errs = []
        if watch:
            if opts["sie"] is not None:
                if opts["rvm"] != "NotOlderThan":
                    errs.append(FieldError("Forbidden", "resourceVersionMatch",
                                           detail="sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
                if opts["sie"] and not opts["bookmarks"]:
                    errs.append(FieldError("Forbidden", "allowWatchBookmarks",
                                           detail="allowWatchBookmarks must be true when sendInitialEvents is true"))
            elif opts["rvm"]:
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
            if opts["sie"] is not None:
                errs.append(FieldError("Forbidden", "sendInitialEvents", detail="sendInitialEvents is forbidden for list"))
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
            if want > store.rv and not store.wait_rv(want, TOO_LARGE_RV_WAIT):
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
            if want > store.rv and not store.wait_rv(want, TOO_LARGE_RV_WAIT):
                raise err_too_large_rv(want, store.rv)
        w = Watcher(res, ns, opts["lsel"], opts["fsel"], self.path.split("?")[0], rawq)
        initial, error_status, sync_rv = [], None, None
        sie = opts["sie"]
        with store.lock:
            if rv in (None, "") or (rv == "0" and sie is None) or sie:
                if not (sie is False):
                    for k in sorted(store.objects[res.storage]):
                        o = store.objects[res.storage][k]
                        if w.matches(o):
                            initial.append(("ADDED", o))
                sync_rv = store.rv
                store.watchers.add(w)
            else:
                start = store.rv if rv == "0" else opts["rv_int"]
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
            self.stream_watch(res, w, initial, error_status, opts, timeout, sync_rv if sie else None)
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

    def bookmark_obj(self, res, rv, initial_end=False):
        meta = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
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
        elif res.kind == "Event" and res.view is None:
            o.update({"involvedObject": {}, "source": {}, "firstTimestamp": None, "lastTimestamp": None,
                      "eventTime": None, "reportingComponent": "", "reportingInstance": ""})
        elif res.kind == "Event":
            o.update({"eventTime": None, "regarding": {}, "deprecatedSource": {},
                      "deprecatedFirstTimestamp": None, "deprecatedLastTimestamp": None})
        return o

    def stream_watch(self, res, w, initial, error_status, opts, timeout, sync_rv):
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
        if sync_rv is not None and opts["bookmarks"]:
            self.write_event(res, w, "BOOKMARK", self.bookmark_obj(res, sync_rv, initial_end=True))
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
                self.close_connection = True
                try:
                    socket.socket.shutdown(self.connection, socket.SHUT_RDWR)
                except OSError:
                    pass
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

    def dry_run(self, q):
        dr = q.get("dryRun")
        if dr not in (None, "", "All"):
            raise err_bad_request('Invalid dry run value: %s' % dr)
        return dr == "All"

    def do_create(self, res, ns, body, q):
        self.check_accept()
        api = self.server.api
        strict = self.field_validation_strict(q)
        obj = self.decode_body(body, res, strict=strict)
        meta = obj["metadata"]
        if res.namespaced:
            bns = meta.get("namespace", "")
            if bns and bns != ns:
                raise err_bad_request(NS_MISMATCH_MSG)
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        if res.view == "eventsv1":
            core = event_from_v1(obj)
            errs = validate_event(core, "events.k8s.io/v1")
            obj = core
        elif res.storage == "events":
            errs = validate_event(obj, "v1")
        else:
            errs = []
        stored, code = api._create(res, obj, errs, dry_run=self.dry_run(q), manager=self.manager(q))
        self.send_obj(code, view_obj(res, stored), self.warning_headers())

    def do_update(self, res, ns, name, body, q, subresource=None):
        self.check_accept()
        api = self.server.api
        strict = self.field_validation_strict(q)
        obj = self.decode_body(body, res, strict=strict)
        meta = obj["metadata"]
        if res.namespaced:
            bns = meta.get("namespace", "")
            if bns and bns != ns:
                raise err_bad_request(NS_MISMATCH_MSG)
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        if meta.get("name", "") != name:
            raise err_bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                                  % (meta.get("name", ""), name))
        if res.view == "eventsv1":
            obj = event_from_v1(obj)
        stored, code = api._update(res, ns, name, lambda cur: obj, subresource=subresource,
                                   dry_run=self.dry_run(q), verb="update", manager=self.manager(q))
        self.send_obj(code, view_obj(res, stored), self.warning_headers())

    def do_patch(self, res, ns, name, body, q, subresource=None):
        self.check_accept()
        api = self.server.api
        ct = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ct not in PATCH_MEDIA_TYPES:
            raise err_unsupported_media(PATCH_MEDIA_TYPES)
        if ct == "application/apply-patch+yaml":
            raise err_unsupported_media([t for t in PATCH_MEDIA_TYPES if t != "application/apply-patch+yaml"])
        strict = self.field_validation_strict(q)
        try:
            patch = json.loads(body.decode("utf-8")) if body else None
        except (ValueError, UnicodeDecodeError) as e:
            raise err_bad_request("error decoding patch: %s" % _go_json_err(e))
        if ct in ("application/merge-patch+json", "application/strategic-merge-patch+json") \
                and not isinstance(patch, dict):
            raise err_bad_request("json: cannot unmarshal %s into Go value of type map[string]interface {}"
                                  % _json_type(patch))

        def apply(cur):
            cur_view = view_obj(res, cur)
            if ct == "application/json-patch+json":
                new = json_patch(cur_view, patch)
            elif ct == "application/merge-patch+json":
                new = merge_patch(copy.deepcopy(cur_view), patch)
            else:
                new = strategic_merge_patch(copy.deepcopy(cur_view), patch)
            if not isinstance(new, dict):
                raise err_bad_request("patched object is not a JSON object")
            prv = None
            if isinstance(patch, dict):
                prv = (patch.get("metadata") or {}).get("resourceVersion") if isinstance(patch.get("metadata"), dict) else None
            if prv and prv != meta_of(cur).get("resourceVersion"):
                raise err_res_conflict(res, name, OPTIMISTIC_LOCK_ERROR_MSG)
            raw = json.dumps(new).encode()
            decoded = self.decode_body_raw(raw, res, strict)
            if res.view == "eventsv1":
                decoded = event_from_v1(decoded)
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

        stored, code = api._update(res, ns, name, apply, subresource=subresource, dry_run=self.dry_run(q),
                                   verb="patch", must_exist=True, manager=self.manager(q))
        self.send_obj(code, view_obj(res, stored), self.warning_headers())

    def decode_body_raw(self, raw, res, strict):
        return self.decode_body(raw, res, strict=strict, check_ct=False)

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
        out, code = api._delete(res, ns, name, opts, dry_run=self.dry_run(q))
        self.send_obj(code, out if out.get("kind") == "Status" else view_obj(res, out))

    def do_delete_collection(self, res, ns, body, q):
        self.check_accept()
        api = self.server.api
        opts = self.parse_delete_options(body, q)
        lsel = LabelSelector(q.get("labelSelector", ""))
        fsel = FieldSelector(q.get("fieldSelector", ""), res)
        with api.store.lock:
            prefix = ns + "/" if ns else ""
            targets = [(k, o) for k, o in sorted(api.store.objects[res.storage].items())
                       if k.startswith(prefix) and lsel.matches(meta_of(o).get("labels"))
                       and fsel.matches(field_attrs(res.storage, o))]
        items = []
        for k, o in targets:
            m = meta_of(o)
            try:
                out, _ = api._delete(res, m.get("namespace"), m.get("name"), dict(opts), dry_run=self.dry_run(q))
            except ApiError:
                continue
            if out.get("kind") != "Status":
                items.append(strip_type(view_obj(res, out)))
            else:
                items.append(strip_type(view_obj(res, o)))
        self.send_obj(200, {"kind": res.list_kind, "apiVersion": res.api_version,
                            "metadata": {"resourceVersion": str(api.store.rv)}, "items": items})

    def do_binding(self, ns, name, body, q):
        self.check_accept()
        api = self.server.api
        binding = self.decode_body(body, BINDING_RES, schema=BINDING, kind="Binding", api_version="v1")
        meta = binding["metadata"]
        if name is None:
            name = meta.get("name", "")
        elif meta.get("name", "") != name:
            raise err_bad_request("name in URL does not match name in Binding object")
        bns = meta.get("namespace", "")
        if bns and bns != ns:
            raise err_bad_request(NS_MISMATCH_MSG)
        meta["namespace"] = ns
        api._bind_pod(ns, name, binding, dry_run=self.dry_run(q))
        self.send_obj(201, make_status(201, None, None, status="Success"))


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
        if res.view == "eventsv1":
            obj = event_from_v1(obj)
            res = STORAGE_RES["events"]
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
        res = resource_for(resource)
        if not res.namespaced:
            namespace = None
        o = self.store.get(res.storage, obj_key(namespace, name))
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

    def patch(self, resource, namespace, name, patch):
        """JSON-merge-patch an object without validation (e.g. status changes); emits MODIFIED."""
        res = resource_for(resource)
        if not res.namespaced:
            namespace = None
        key = obj_key(namespace, name)
        with self.store.lock:
            cur = self.store.get(res.storage, key)
            if cur is None:
                raise err_not_found(res, name)
            new = merge_patch(copy.deepcopy(view_obj(res, cur)), patch)
            if res.view == "eventsv1":
                new = event_from_v1(new)
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
        res = resource_for(resource)
        if not res.namespaced:
            namespace = None
        key = obj_key(namespace, name)
        with self.store.lock:
            cur = self.store.get(res.storage, key)
            if cur is None:
                return None
            return copy.deepcopy(view_obj(res, self.store.commit(res.storage, "DELETED", key, None, cur)))

    # -- REST semantics (used by the handler) ----------------------------------
    def _record_event(self, verb, res, obj):
        api = "events.k8s.io/v1" if res.view == "eventsv1" else "v1"
        self._events.append({"api": api, "verb": verb, "namespace": meta_of(obj).get("namespace"),
                             "name": meta_of(obj).get("name"), "object": copy.deepcopy(view_obj(res, obj))})

    def _create(self, res, obj, errs, dry_run=False, manager=None):
        store = self.store
        sres = STORAGE_RES[res.storage]
        meta = obj["metadata"]
        if meta.get("resourceVersion"):
            raise err_bad_request("resourceVersion should not be set on objects to be created")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(random.choice("bcdfghjklmnpqrstvwxz2456789")
                                                          for _ in range(5))
        if res.storage == "events" and res.view is None:
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
            if dry_run:
                out = dict(obj)
            else:
                out = store.commit(res.storage, "ADDED", key, obj, None)
                if res.storage == "events":
                    self._record_event("create", res, out)
        return out, 201

    def _update(self, res, ns, name, make_new, subresource=None, dry_run=False, verb="update", must_exist=False,
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
                    errs = validate_event(new, "events.k8s.io/v1" if res.view else "v1")
                    return self._create(res, new, errs, dry_run=dry_run, manager=manager)
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
            if dry_run:
                return dict(new, metadata=dict(nm, resourceVersion=cm.get("resourceVersion"))), 200
            if nm.get("deletionTimestamp") and not nm.get("finalizers") and cm.get("finalizers"):
                # the last finalizer was removed: the object goes away now
                out = store.commit(res.storage, "MODIFIED", key, new, cur)
                store.commit(res.storage, "DELETED", key, None, out)
                return out, 200
            out = store.commit(res.storage, "MODIFIED", key, new, cur)
            if res.storage == "events":
                self._record_event(verb, res, out)
            return out, 200

    def _delete(self, res, ns, name, opts, dry_run=False):
        store = self.store
        key = obj_key(ns if res.namespaced else None, name)
        with store.lock:
            cur = store.get(res.storage, key)
            if cur is None:
                raise err_not_found(res, name)
            cm = meta_of(cur)
            pre = opts.get("preconditions") or {}
            etcd_key = "/registry/%s/%s" % (res.qualified if res.group else res.plural, key)
            if pre.get("uid") and pre["uid"] != cm.get("uid"):
                raise err_res_conflict(res, name, "StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, "
                                       "AdditionalErrorMsg: Precondition failed: UID in precondition: %s, UID in "
                                       "object meta: %s" % (etcd_key, pre["uid"], cm.get("uid", "")))
            if pre.get("resourceVersion") and pre["resourceVersion"] != cm.get("resourceVersion"):
                raise err_res_conflict(res, name, "StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, "
                                       "AdditionalErrorMsg: Precondition failed: ResourceVersion in precondition: "
                                       "%s, ResourceVersion in object meta: %s"
                                       % (etcd_key, pre["resourceVersion"], cm.get("resourceVersion", "")))
            grace = opts.get("gracePeriodSeconds")
            graceful = False
            if res.kind == "Pod":
                phase = (cur.get("status") or {}).get("phase")
                bound = bool((cur.get("spec") or {}).get("nodeName"))
                if grace is None:
                    grace = (cur.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
                graceful = bound and phase not in ("Succeeded", "Failed") and grace > 0
            if dry_run:
                return (view_obj(res, cur) if res.kind == "Pod" else self._delete_status(res, cur)), 200
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

    def _bind_pod(self, ns, name, binding, dry_run=False):
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
            if meta.get("uid") and meta["uid"] != cm.get("uid"):
                raise err_res_conflict(pods, name, "StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, "
                                       "AdditionalErrorMsg: Precondition failed: UID in precondition: %s, UID in "
                                       "object meta: %s" % (etcd_key, meta["uid"], cm.get("uid", "")))
            if meta.get("resourceVersion") and meta["resourceVersion"] != cm.get("resourceVersion"):
                raise err_res_conflict(pods, name, "StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, "
                                       "AdditionalErrorMsg: Precondition failed: ResourceVersion in precondition: "
                                       "%s, ResourceVersion in object meta: %s"
                                       % (etcd_key, meta["resourceVersion"], cm.get("resourceVersion", "")))
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
            if not dry_run:
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
