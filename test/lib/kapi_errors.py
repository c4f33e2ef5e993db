"""Part of the test kube-apiserver (kube_apiserver.py, docs/test-apiserver.md):
constants of the real apiserver, times, quantities, Status errors and name validation."""

import datetime
import decimal
import json
import re



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
MERGE_PATCH = "application/merge-patch+json"  # the one served (docs/test-apiserver.md, "Patches")
MAX_REQUEST_BODY = 3 * 1024 * 1024
GZIP_THRESHOLD = 128 * 1024
FLOWSCHEMA_UID = "6027abd0-aa72-4d3c-a2cb-42b534068f6d"
PRIORITYLEVEL_UID = "f72ba9d7-6df9-4dd9-8720-be5485197492"
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
    """StatusDetails with only the fields that are set, in apimachinery's order."""
    fields = (("name", name), ("group", group), ("kind", kind), ("uid", uid), ("causes", causes),
              ("retryAfterSeconds", retry_after))
    return {k: v for k, v in fields if v}


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


def required_valid(errs, path, value, validate):
    """apimachinery's usual pair: path Required when value is empty, else
    one Invalid per message of validate(value)."""
    if not value:
        errs.append(FieldError("Required", path))
        return
    errs.extend(FieldError("Invalid", path, value, m) for m in validate(value))


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


def _length_and_pattern(v, limit, regex, msg):
    """apimachinery's shape for a bounded name: its length, then its pattern."""
    errs = []
    if len(v) > limit:
        errs.append("must be no more than %d characters" % limit)
    if not regex.match(v):
        errs.append(msg)
    return errs


def is_dns1123_subdomain(v):
    return _length_and_pattern(v, 253, _DNS1123_SUBDOMAIN_RE, DNS1123_SUBDOMAIN_MSG)


def is_dns1123_label(v):
    return _length_and_pattern(v, 63, _DNS1123_LABEL_RE, DNS1123_LABEL_MSG)


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
    return _length_and_pattern(v, 63, _LABEL_VALUE_RE, LABEL_VALUE_MSG)


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
        required_valid(errs, path + ".namespace", meta.get("namespace", ""), is_dns1123_label)
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
