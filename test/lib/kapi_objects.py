"""Part of the test kube-apiserver (kube_apiserver.py, docs/test-apiserver.md):
typed decoding (Go's strictness), the resources served, normalization, label and field selectors, patches."""

import base64
import copy
import dataclasses
import json
import re

from kapi_errors import (DecodeError, _go_quote, err_bad_request, fmt_micro, fmt_time,
    is_label_value, is_qualified_name, parse_go_time, parse_quantity, quantity_text)


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
LABELSEL = S("LabelSelector", matchLabels=MAPSTR,
             matchExpressions=L(S("LabelSelectorRequirement", key=STR, operator=STR,
                                  values=L(STR))))
PDB = S("PodDisruptionBudget", True, kind=STR, apiVersion=STR, metadata=META,
        spec=S("PodDisruptionBudgetSpec", selector=LABELSEL, minAvailable=ANY, maxUnavailable=ANY,
               unhealthyPodEvictionPolicy=STR),
        status=S("PodDisruptionBudgetStatus", observedGeneration=I64, disruptionsAllowed=I32,
                 currentHealthy=I32, desiredHealthy=I32, expectedPods=I32, conditions=L(ANY),
                 disruptedPods=("map", TIME)))
EVSOURCE = S("EventSource", component=STR, host=STR)
EVSERIES = S("EventSeries", count=I32, lastObservedTime=MICRO)
EVENT_CORE = S("Event", True, kind=STR, apiVersion=STR, metadata=META, involvedObject=OBJREF,
               reason=STR, message=STR, source=EVSOURCE, firstTimestamp=TIME, lastTimestamp=TIME,
               count=I32, type=STR, eventTime=MICRO, series=EVSERIES, action=STR, related=OBJREF,
               reportingComponent=STR, reportingInstance=STR)
BINDING = S("Binding", True, kind=STR, apiVersion=STR, metadata=META, target=OBJREF)
DELETE_OPTIONS = S("DeleteOptions", kind=STR, apiVersion=STR, gracePeriodSeconds=I64,
                   preconditions=S("Preconditions", uid=STR, resourceVersion=STR),
                   orphanDependents=BOOL, propagationPolicy=STR)


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


@dataclasses.dataclass(eq=False, repr=False)  # identity: a Res is a dict key
class Res:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    storage: str
    schema: dict
    fields: set

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
    Res("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True,
        "poddisruptionbudgets", PDB, META_FIELDS),
]
RES_BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
STORAGE_RES = {r.storage: r for r in RESOURCES}
BINDING_RES = Res("", "v1", "bindings", "Binding", True, "pods", BINDING, set())
RES_BY_KIND = {}
for _r in RESOURCES:
    RES_BY_KIND[(_r.api_version, _r.kind)] = _r


def resource_for(name):
    """'pods', 'nodes', 'configmaps', 'events', 'leases' (or the qualified name), a Res -> Res."""
    if isinstance(name, Res):
        return name
    for r in RESOURCES:
        if name in (r.plural, r.qualified):
            return r
    for r in RESOURCES:
        if name.lower() == r.kind.lower():
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


def view_obj(res, obj):
    """Storage form -> the form served (with kind/apiVersion)."""
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
    """RFC 7386 JSON merge patch: the one patch gpushare sends
    (application/merge-patch+json, src/k8s/kube_lease.c). Strategic merge
    and JSON patch are not served (docs/test-apiserver.md, "Patches")."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out
