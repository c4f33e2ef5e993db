"""The one REST client of the Python test tiers, for kube-apiserver: the real
one (test/k8s, TLS with the cluster's CA and a bearer token) and the test one
(test/lib/kube_apiserver.py, plain or TLS), stdlib only.

Two ways in, one client:
- call/open and the resource helpers (create, get, list, patch, ...): a
  fresh urllib request each, safe from many threads; an HTTP error raises
  KubeError; open returns the response to stream (a watch).
- req: one keep-alive connection (http.client), the status and the decoded
  body returned whatever the status, the response kept in .last for its
  headers: the wire tests of the test apiserver. One thread at a time."""

import copy
import gzip
import http.client
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request

import yaml


class KubeError(Exception):
    def __init__(self, code, body):
        self.code = code
        self.body = body
        try:
            self.status = json.loads(body)
        except ValueError:
            self.status = {"message": body.decode(errors="replace") if isinstance(body, bytes) else body}
        super().__init__(f"HTTP {code}: {self.status.get('message', body)}")


# kind -> (api prefix, resource, namespaced)
KINDS = {
    "Pod": ("/api/v1", "pods", True),
    "Node": ("/api/v1", "nodes", False),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Namespace": ("/api/v1", "namespaces", False),
    "Service": ("/api/v1", "services", True),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "Event": ("/api/v1", "events", True),
    "Job": ("/apis/batch/v1", "jobs", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True),
    "ReplicaSet": ("/apis/apps/v1", "replicasets", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "Lease": ("/apis/coordination.k8s.io/v1", "leases", True),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses", False),
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices", False),
    "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    "ResourceClaimTemplate": ("/apis/resource.k8s.io/v1", "resourceclaimtemplates", True),
    "DaemonSet": ("/apis/apps/v1", "daemonsets", True),
    "Secret": ("/api/v1", "secrets", True),
    "EndpointSlice": ("/apis/discovery.k8s.io/v1", "endpointslices", True),
    "NetworkPolicy": ("/apis/networking.k8s.io/v1", "networkpolicies", True),
    # Kubernetes' Workload API (feature gate GenericWorkload, v1.37 beta)
    "Workload": ("/apis/scheduling.k8s.io/v1beta1", "workloads", True),
    "PodGroup": ("/apis/scheduling.k8s.io/v1beta1", "podgroups", True),
}
RESOURCES = {res: (prefix, kind, nsd) for kind, (prefix, res, nsd) in KINDS.items()}


class Kube:
    """server: "https://127.0.0.1:6443"; token: a bearer token or None; TLS
    trusts ca_file, or the given ssl context (ctx)."""

    def __init__(self, server, token=None, ca_file=None, ctx=None, timeout=30):
        self.server = server
        self.token = token
        self.ctx = ssl.create_default_context(cafile=ca_file) if ca_file else ctx
        self.timeout = timeout
        self.conn = None
        self.last = None

    @classmethod
    def of(cls, srv, token=None, ctx=None):
        """A client of a test apiserver (kube_apiserver.FakeApiServer)."""
        return cls(f"{srv.scheme}://127.0.0.1:{srv.port}", token, ctx=ctx, timeout=15)

    # ---- urllib: one request each, errors raised --------------------------

    def open(self, method, path, body=None, ctype="application/json", timeout=30,
             accept="application/json"):
        """The open response, to read or to stream (a watch); KubeError on an
        HTTP error."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.server + path, data=data, method=method)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        req.add_header("Accept", accept)
        if data is not None:
            req.add_header("Content-Type", ctype)
        try:
            return urllib.request.urlopen(req, context=self.ctx, timeout=timeout)
        except urllib.error.HTTPError as e:
            raise KubeError(e.code, e.read()) from None

    def call(self, method, path, body=None, ctype="application/json", timeout=30):
        with self.open(method, path, body, ctype, timeout) as r:
            raw = r.read()
        return json.loads(raw) if raw else None

    @staticmethod
    def path(resource, namespace=None, name=None, sub=None, query=None):
        prefix, _kind, nsd = RESOURCES[resource]
        p = prefix
        if nsd and namespace:
            p += f"/namespaces/{namespace}"
        p += f"/{resource}"
        if name:
            p += f"/{name}"
        if sub:
            p += f"/{sub}"
        if query:
            p += "?" + urllib.parse.urlencode(query)
        return p

    def create(self, obj):
        kind = obj["kind"]
        _prefix, res, nsd = KINDS[kind]
        ns = obj["metadata"].get("namespace", "default") if nsd else None
        return self.call("POST", self.path(res, ns), obj)

    def get(self, resource, namespace, name):
        return self.call("GET", self.path(resource, namespace, name))

    def try_get(self, resource, namespace, name):
        try:
            return self.get(resource, namespace, name)
        except KubeError as e:
            if e.code == 404:
                return None
            raise

    def list(self, resource, namespace=None, selector=None):
        q = {"labelSelector": selector} if selector else None
        return self.call("GET", self.path(resource, namespace, query=q))["items"]

    def update(self, obj):
        _prefix, res, nsd = KINDS[obj["kind"]]
        ns = obj["metadata"].get("namespace") if nsd else None
        return self.call("PUT", self.path(res, ns, obj["metadata"]["name"]), obj)

    def patch(self, resource, namespace, name, patch, sub=None):
        return self.call("PATCH", self.path(resource, namespace, name, sub), patch,
                         ctype="application/merge-patch+json")

    def delete(self, resource, namespace, name, grace=0):
        q = {"gracePeriodSeconds": str(grace)} if grace is not None else None
        try:
            return self.call("DELETE", self.path(resource, namespace, name, query=q))
        except KubeError as e:
            if e.code != 404:
                raise
            return None

    def apply(self, obj):
        """Creates obj, or replaces it when it exists (kubectl apply, roughly)."""
        try:
            return self.create(obj)
        except KubeError as e:
            if e.code != 409:
                raise
        _prefix, res, nsd = KINDS[obj["kind"]]
        ns = obj["metadata"].get("namespace", "default") if nsd else None
        cur = self.get(res, ns, obj["metadata"]["name"])
        new = copy.deepcopy(obj)
        new["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
        return self.update(new)

    def apply_file(self, path, namespace=None):
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        out = []
        for d in docs:
            items = d["items"] if d.get("kind") == "List" else [d]
            for obj in items:
                if namespace and KINDS[obj["kind"]][2]:
                    obj.setdefault("metadata", {}).setdefault("namespace", namespace)
                out.append(self.apply(obj))
        return out

    def events(self, namespace, involved=None):
        evs = self.list("events", namespace)
        if involved:
            evs = [e for e in evs if e.get("involvedObject", {}).get("name") == involved]
        return evs

    # ---- http.client: one keep-alive connection, every status returned -----

    def _connect(self):
        if self.conn is None:
            u = urllib.parse.urlsplit(self.server)
            if u.scheme == "https":
                self.conn = http.client.HTTPSConnection(u.hostname, u.port, timeout=self.timeout,
                                                        context=self.ctx)
            else:
                self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=self.timeout)
        return self.conn

    def req(self, method, path, body=None, ctype="application/json", headers=None, raw=None):
        """(status, body decoded from JSON, else bytes, else None); the
        response in self.last."""
        h = {"Accept": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        data = None
        if raw is not None:
            data = raw
        elif body is not None:
            data = json.dumps(body).encode()
        if data is not None and ctype:
            h["Content-Type"] = ctype
        h.update(headers or {})
        for attempt in range(2):
            c = self._connect()
            try:
                c.request(method, path, body=data, headers=h)
                r = c.getresponse()
                payload = r.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()
                if attempt:
                    raise
        if r.getheader("Content-Encoding") == "gzip":
            payload = gzip.decompress(payload)
        try:
            obj = json.loads(payload) if payload else None
        except ValueError:
            obj = payload
        self.last = r
        return r.status, obj

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None
