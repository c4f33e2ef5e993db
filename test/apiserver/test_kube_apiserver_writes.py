#!/usr/bin/env python3
"""Self-tests of the test kube-apiserver: bindings, events and the write verbs (create, update, patch, delete).

Run: python3 -m unittest -v test_kube_apiserver_writes   (from test/apiserver)
"""

import json
import os
import shutil
import socket
import tempfile
import unittest

from test_kube_apiserver import (  # the helpers
    Base, RawWatch, binding, core_event, fixture, node, pod, shape)
import kube_apiserver
from kube_apiserver import FakeApiServer


# ---------------------------------------------------------------------------
# BINDING
# ---------------------------------------------------------------------------


class TestBinding(Base):
    def setUp(self):
        super().setUp()
        self.srv.add(node("gpu-a"))
        self.p = self.srv.add(pod("trainer-0", ns="ml", annotations={"keep": "me"}))

    def test_binding_merges_annotations_atomically(self):
        st, l = self.c.req("GET", "/api/v1/pods")
        rv = int(l["metadata"]["resourceVersion"])
        w = RawWatch(self.srv, "/api/v1/pods?watch=1&resourceVersion=%d&timeoutSeconds=2" % rv)
        self.assertTrue(self.srv.wait_for_watches("pods", 1))
        ann = {"scheduler.framework.gpushare.allocation": '{"0":{"1":4}}', "ALIYUN_COM_GPU_MEM_IDX": "1"}
        st, out = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding",
                             binding("trainer-0", "gpu-a", uid=self.p["metadata"]["uid"], annotations=ann))
        self.assertEqual(st, 201)
        self.assertEqual(out, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
        events = []
        while True:
            ev = w.next_event()
            if ev is None:
                break
            events.append(ev)
        self.assertEqual(len(events), 1, events)  # exactly one update
        ev = events[0]
        self.assertEqual(ev["type"], "MODIFIED")
        o = ev["object"]
        self.assertEqual(o["spec"]["nodeName"], "gpu-a")
        self.assertEqual(o["metadata"]["annotations"], dict(ann, keep="me"))
        self.assertEqual(int(o["metadata"]["resourceVersion"]), rv + 1)
        conds = {c["type"]: c["status"] for c in o["status"]["conditions"]}
        self.assertEqual(conds["PodScheduled"], "True")
        st, got = self.c.req("GET", "/api/v1/namespaces/ml/pods/trainer-0")
        self.assertEqual(got["metadata"]["resourceVersion"], str(rv + 1))
        w.close()

    def test_uid_precondition_409(self):
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding",
                             binding("trainer-0", "gpu-a", uid="0000-other"))
        self.assertEqual(st, 409)
        self.assertStatus(err, 409, "Conflict")
        self.assertEqual(err["details"], {"name": "trainer-0", "kind": "pods"})
        self.assertEqual(err["message"],
                         'Operation cannot be fulfilled on pods "trainer-0": StorageError: invalid object, '
                         'Code: 4, Key: /registry/pods/ml/trainer-0, ResourceVersion: 0, AdditionalErrorMsg: '
                         'Precondition failed: UID in precondition: 0000-other, UID in object meta: %s'
                         % self.p["metadata"]["uid"])
        st, got = self.c.req("GET", "/api/v1/namespaces/ml/pods/trainer-0")
        self.assertNotIn("nodeName", got["spec"])

    def test_already_assigned_409(self):
        st, _ = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding", binding("trainer-0", "gpu-a"))
        self.assertEqual(st, 201)
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding",
                             binding("trainer-0", "gpu-b", annotations={"x": "y"}))
        self.assertEqual(st, 409)
        self.assertStatus(err, 409, "Conflict")
        self.assertEqual(err["message"], 'Operation cannot be fulfilled on pods/binding "trainer-0": '
                                         'pod trainer-0 is already assigned to node "gpu-a"')
        self.assertEqual(err["details"], {"name": "trainer-0", "kind": "pods/binding"})
        st, got = self.c.req("GET", "/api/v1/namespaces/ml/pods/trainer-0")
        self.assertNotIn("x", got["metadata"]["annotations"])

    def test_missing_pod_404(self):
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/nope/binding", binding("nope", "gpu-a"))
        self.assertEqual(st, 404)
        self.assertStatus(err, 404, "NotFound")
        self.assertEqual(err["message"], 'pods "nope" not found')

    def test_name_mismatch_and_bad_target(self):
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding", binding("other", "gpu-a"))
        self.assertEqual((st, err["message"]), (400, "name in URL does not match name in Binding object"))
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding",
                             binding("trainer-0", "gpu-a", ns="other"))
        self.assertEqual((st, err["message"]), (400, kube_apiserver.NS_MISMATCH_MSG))
        b = binding("trainer-0", "")
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding", b)
        self.assertEqual(st, 500)
        self.assertStatus(err, 500, None)
        self.assertEqual(err["message"], "target.name: Required value")
        b = binding("trainer-0", "gpu-a")
        b["target"]["kind"] = "Pod"
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding", b)
        self.assertEqual(err["message"], 'target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>"')
        b = binding("trainer-0", "gpu-a", annotations={"n": 4})
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/trainer-0/binding", b)
        self.assertEqual(st, 400)
        self.assertIn("cannot unmarshal number into Go struct field ObjectMeta.metadata.annotations of type string",
                      err["message"])

    def test_being_deleted_and_gates(self):
        p = pod("gated", ns="ml")
        p["spec"]["schedulingGates"] = [{"name": "wait"}]
        self.srv.add(p)
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/gated/binding", binding("gated", "gpu-a"))
        self.assertEqual((st, err["message"]), (409, 'Operation cannot be fulfilled on pods/binding "gated": '
                                                     'pod gated has non-empty .spec.schedulingGates'))
        p = pod("fin", ns="ml")
        p["metadata"]["finalizers"] = ["example.com/hold"]
        self.srv.add(p)
        st, _ = self.c.req("DELETE", "/api/v1/namespaces/ml/pods/fin")
        self.assertEqual(st, 200)
        st, err = self.c.req("POST", "/api/v1/namespaces/ml/pods/fin/binding", binding("fin", "gpu-a"))
        self.assertEqual(err["message"], 'Operation cannot be fulfilled on pods/binding "fin": '
                                         'pod fin is being deleted, cannot be assigned to a host')


# ---------------------------------------------------------------------------
# CRUD, validation, Status shapes
# ---------------------------------------------------------------------------


class TestCrud(Base):
    def test_status_404_shape_matches_fixture(self):
        f = json.loads(fixture("status-404-notfound.json"))
        st, err = self.c.req("GET", "/api/v1/namespaces/default/pods/missing")
        self.assertEqual(st, 404)
        self.assertEqual(shape(err), shape(f))
        self.assertEqual(list(err), list(f))
        self.assertEqual(list(err["details"]), list(f["details"]))
        self.assertEqual(err["message"], 'pods "missing" not found')
        self.assertEqual(err["details"], {"name": "missing", "kind": "pods"})
        st, err = self.c.req("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x")
        self.assertEqual(err["message"], 'leases.coordination.k8s.io "x" not found')
        self.assertEqual(err["details"], {"name": "x", "group": "coordination.k8s.io", "kind": "leases"})

    def test_status_422_shape_matches_fixture(self):
        f = json.loads(fixture("status-422-invalid.json"))
        p = pod("Bad_Name")
        p["spec"]["containers"][0]["image"] = ""
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual(st, 422)
        self.assertEqual(shape(err), shape(f))
        self.assertEqual(list(err), list(f))
        self.assertEqual(list(err["details"]), list(f["details"]))
        self.assertEqual(list(err["details"]["causes"][0]), list(f["details"]["causes"][0]))
        self.assertEqual(err["details"]["kind"], "Pod")
        self.assertTrue(err["message"].startswith('Pod "Bad_Name" is invalid: [metadata.name: Invalid value: '
                                                  '"Bad_Name": a lowercase RFC 1123 subdomain'), err["message"])
        self.assertEqual(err["details"]["causes"][0]["reason"], "FieldValueInvalid")
        self.assertEqual(err["details"]["causes"][0]["field"], "metadata.name")

    def test_create_get_already_exists(self):
        st, out = self.c.req("POST", "/api/v1/namespaces/default/pods", pod("p1"))
        self.assertEqual(st, 201, out)
        self.assertEqual(list(out)[:5], ["kind", "apiVersion", "metadata", "spec", "status"])
        self.assertEqual(out["status"], {"phase": "Pending", "qosClass": "BestEffort"})
        self.assertEqual(out["spec"]["containers"][0]["resources"]["requests"], {"aliyun.com/gpu-mem": "4"})
        self.assertRegex(out["metadata"]["uid"], r"^[0-9a-f-]{36}$")
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", pod("p1"))
        self.assertEqual(st, 409)
        self.assertStatus(err, 409, "AlreadyExists")
        self.assertEqual(err["message"], 'pods "p1" already exists')
        st, got = self.c.req("GET", "/api/v1/namespaces/default/pods/p1")
        self.assertEqual(got, out)

    def test_create_validation(self):
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", pod("p", ns="other"))
        self.assertEqual((st, err["message"]), (400, "the namespace of the provided object does not match the "
                                                     "namespace sent on the request"))
        self.assertStatus(err, 400, "BadRequest")
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", raw=b"not json")
        self.assertEqual(st, 400)
        self.assertTrue(err["message"].startswith("the object provided is unrecognized (must be of type Pod)"))
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", cm)
        self.assertEqual(st, 400)
        self.assertEqual(err["message"], 'ConfigMap in version "v1" cannot be handled as a Pod: converting '
                                         '(v1.ConfigMap) to (Pod): unknown conversion')
        lease = {"apiVersion": "v1", "kind": "Lease", "metadata": {"name": "x"}}
        st, err = self.c.req("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", lease)
        self.assertEqual(st, 400)
        self.assertIn('no kind "Lease" is registered for version "v1"', err["message"])
        p = pod("p", annotations={"a": True})
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual(st, 400)
        self.assertEqual(err["message"], 'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal '
                                         'bool into Go struct field ObjectMeta.metadata.annotations of type string')
        p = pod("p")
        p["metadata"]["resourceVersion"] = 5
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual(st, 400)
        p = pod("p")
        del p["spec"]["containers"]
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual((st, err["details"]["causes"][0]["field"]), (422, "spec.containers"))
        p = pod("p", mem="1.5")
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual(st, 422)
        self.assertIn("must be an integer", err["message"])
        p = pod("p")
        p["spec"]["containers"][0]["resources"]["requests"] = {"aliyun.com/gpu-mem": "2"}
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual(st, 422)
        self.assertIn("must be equal to aliyun.com/gpu-mem limit of 4", err["message"])
        p = pod("p", mem="lots")
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual(st, 400)
        self.assertIn("quantities must match the regular expression", err["message"])
        st, err = self.c.req("POST", "/api/v1/namespaces/default/pods", pod("p"), ctype="text/plain")
        self.assertEqual(st, 415)
        self.assertStatus(err, 415, "UnsupportedMediaType")

    def test_unknown_fields_warning(self):
        p = pod("p")
        p["bogus"] = 1
        st, out = self.c.req("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual(st, 201)
        self.assertNotIn("bogus", out)
        self.assertEqual(self.c.last.getheader("Warning"), '299 - "unknown field \\"bogus\\""')

    def test_put_optimistic_concurrency(self):
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"},
              "data": {"a": "1"}}
        st, c1 = self.c.req("POST", "/api/v1/namespaces/default/configmaps", cm)
        self.assertEqual(st, 201)
        c1["data"]["a"] = "2"
        st, c2 = self.c.req("PUT", "/api/v1/namespaces/default/configmaps/c", c1)
        self.assertEqual(st, 200, c2)
        self.assertEqual(int(c2["metadata"]["resourceVersion"]), int(c1["metadata"]["resourceVersion"]) + 1)
        c1["data"]["a"] = "3"
        st, err = self.c.req("PUT", "/api/v1/namespaces/default/configmaps/c", c1)
        self.assertEqual(st, 409)
        self.assertStatus(err, 409, "Conflict")
        self.assertEqual(err["message"], 'Operation cannot be fulfilled on configmaps "c": the object has been '
                                         'modified; please apply your changes to the latest version and try again')
        self.assertEqual(err["details"], {"name": "c", "kind": "configmaps"})
        # no-op update: same RV, no event
        st, c3 = self.c.req("PUT", "/api/v1/namespaces/default/configmaps/c", c2)
        self.assertEqual(c3["metadata"]["resourceVersion"], c2["metadata"]["resourceVersion"])
        # unconditional update (no RV)
        del c2["metadata"]["resourceVersion"]
        c2["data"]["a"] = "4"
        st, c4 = self.c.req("PUT", "/api/v1/namespaces/default/configmaps/c", c2)
        self.assertEqual((st, c4["data"]["a"]), (200, "4"))
        st, err = self.c.req("PUT", "/api/v1/namespaces/default/configmaps/zz", dict(c2, metadata={"name": "zz"}))
        self.assertEqual(st, 404)
        st, err = self.c.req("PUT", "/api/v1/namespaces/default/configmaps/c", dict(c2, metadata={"name": "zz"}))
        self.assertEqual(st, 400)

    def test_pod_update_rules(self):
        st, p = self.c.req("POST", "/api/v1/namespaces/default/pods", pod("p"))
        p2 = json.loads(json.dumps(p))
        p2["spec"]["nodeName"] = "n1"
        st, err = self.c.req("PUT", "/api/v1/namespaces/default/pods/p", p2)
        self.assertEqual(st, 422)
        self.assertEqual(err["details"]["causes"][0]["field"], "spec")
        self.assertIn("pod updates may not change fields other than", err["message"])
        # status is ignored on the main resource, set through /status
        p3 = json.loads(json.dumps(p))
        p3["status"]["phase"] = "Running"
        p3["metadata"]["labels"] = {"x": "y"}
        st, out = self.c.req("PUT", "/api/v1/namespaces/default/pods/p", p3)
        self.assertEqual((st, out["status"]["phase"], out["metadata"]["labels"]), (200, "Pending", {"x": "y"}))
        st, out = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p/status", {"status": {"phase": "Running"}},
                             ctype="application/merge-patch+json")
        self.assertEqual((st, out["status"]["phase"]), (200, "Running"))

    def test_patch_types(self):
        self.srv.add(pod("p", annotations={"old": "1", "keep": "2"}))
        st, out = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p",
                             {"metadata": {"annotations": {"example.com/gpu-index": "1", "old": None}}},
                             ctype="application/merge-patch+json")
        self.assertEqual(st, 200, out)
        self.assertEqual(out["metadata"]["annotations"], {"keep": "2", "example.com/gpu-index": "1"})
        st, err = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p", {"a": 1}, ctype="application/json")
        self.assertEqual(st, 415)
        self.assertStatus(err, 415, "UnsupportedMediaType")
        # the dialects gpushare never sends are refused, naming the one served
        # (docs/test-apiserver.md, "Patches"), and change nothing
        for ctype, body in (("application/strategic-merge-patch+json", {"metadata": {"annotations": {"b": "3"}}}),
                            ("application/json-patch+json",
                             [{"op": "add", "path": "/metadata/annotations/example.com~1x", "value": "y"}]),
                            ("application/apply-patch+yaml", {"metadata": {"annotations": {"b": "3"}}})):
            st, err = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p", body, ctype=ctype)
            self.assertStatus(err, 415, "UnsupportedMediaType")
            self.assertEqual(err["message"], "the body of the request was in an unknown format - accepted "
                                             "media types include: application/merge-patch+json")
        self.assertEqual(self.srv.get("pods", "default", "p")["metadata"]["annotations"],
                         {"keep": "2", "example.com/gpu-index": "1"})
        st, err = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p",
                             {"metadata": {"resourceVersion": "1", "annotations": {"z": "1"}}},
                             ctype="application/merge-patch+json")
        self.assertEqual((st, err["reason"]), (409, "Conflict"))
        st, err = self.c.req("PATCH", "/api/v1/namespaces/default/pods/nope", {}, ctype="application/merge-patch+json")
        self.assertEqual(st, 404)
        st, err = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p", {"metadata": {"annotations": {"n": 1}}},
                             ctype="application/merge-patch+json")
        self.assertEqual(st, 400)
        # configmap fixture: the captured patch (maps only: a merge patch
        # means the same) -> response with data merged
        req = json.loads(fixture("configmap-patch-request-smp.json"))
        want = json.loads(fixture("configmap-patch-response.json"))
        self.srv.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1", "namespace": "edit-test"},
                      "data": {"baz": "qux", "foo": "changed-value"}})
        st, out = self.c.req("PATCH", "/api/v1/namespaces/edit-test/configmaps/cm1", req,
                             ctype="application/merge-patch+json")
        self.assertEqual(out["data"], want["data"])
        self.assertEqual([k for k in out if k in want], list(want))

    def test_delete(self):
        self.srv.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}})
        cm = self.srv.get("configmaps", "default", "c")
        st, out = self.c.req("DELETE", "/api/v1/namespaces/default/configmaps/c")
        self.assertEqual(st, 200)
        self.assertEqual(out, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                               "details": {"name": "c", "kind": "configmaps", "uid": cm["metadata"]["uid"]}})
        st, err = self.c.req("DELETE", "/api/v1/namespaces/default/configmaps/c")
        self.assertEqual(st, 404)
        self.srv.add(pod("p"))
        st, err = self.c.req("DELETE", "/api/v1/namespaces/default/pods/p",
                             {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "x"}})
        self.assertEqual((st, err["reason"]), (409, "Conflict"))
        self.assertIn("Precondition failed: UID in precondition: x", err["message"])
        st, out = self.c.req("DELETE", "/api/v1/namespaces/default/pods/p")
        self.assertEqual((st, out["kind"]), (200, "Pod"))

    def test_graceful_pod_delete(self):
        self.srv.add(pod("p", node="n1"))
        st, l = self.c.req("GET", "/api/v1/pods")
        w = RawWatch(self.srv, "/api/v1/pods?watch=1&resourceVersion=%s&timeoutSeconds=2"
                     % l["metadata"]["resourceVersion"])
        self.assertTrue(self.srv.wait_for_watches("pods", 1))
        st, out = self.c.req("DELETE", "/api/v1/namespaces/default/pods/p")
        self.assertEqual(st, 200)
        self.assertIn("deletionTimestamp", out["metadata"])
        self.assertEqual(out["metadata"]["deletionGracePeriodSeconds"], 30)
        e1, e2 = w.next_event(), w.next_event()
        self.assertEqual((e1["type"], e2["type"]), ("MODIFIED", "DELETED"))
        self.assertIn("deletionTimestamp", e2["object"]["metadata"])
        w.close()

    def test_leases(self):
        base = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": "gpushare-extender", "namespace": "kube-system"},
                 "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                          "acquireTime": "2025-03-04T05:00:00.000000Z", "renewTime": "2025-03-04T05:06:07.123456Z",
                          "leaseTransitions": 0}}
        st, err = self.c.req("GET", base + "/gpushare-extender")
        self.assertEqual(st, 404)
        st, l1 = self.c.req("POST", base, lease)
        self.assertEqual(st, 201, l1)
        self.assertEqual(l1["spec"]["renewTime"], "2025-03-04T05:06:07.123456Z")
        st, err = self.c.req("POST", base, lease)
        self.assertEqual((st, err["reason"]), (409, "AlreadyExists"))
        self.assertEqual(err["message"], 'leases.coordination.k8s.io "gpushare-extender" already exists')
        # two candidates read the same RV; the first PUT wins, the second gets 409
        st, a = self.c.req("GET", base + "/gpushare-extender")
        b = json.loads(json.dumps(a))
        a["spec"]["renewTime"] = "2025-03-04T05:06:09.000000Z"
        st, out = self.c.req("PUT", base + "/gpushare-extender", a)
        self.assertEqual(st, 200, out)
        b["spec"]["holderIdentity"] = "b"
        b["spec"]["leaseTransitions"] = 1
        st, err = self.c.req("PUT", base + "/gpushare-extender", b)
        self.assertEqual(st, 409)
        self.assertStatus(err, 409, "Conflict")
        self.assertEqual(err["message"], 'Operation cannot be fulfilled on leases.coordination.k8s.io '
                                         '"gpushare-extender": the object has been modified; please apply your '
                                         'changes to the latest version and try again')
        self.assertEqual(err["details"], {"name": "gpushare-extender", "group": "coordination.k8s.io",
                                          "kind": "leases"})
        # MicroTime needs exactly six fractional digits
        out["spec"]["renewTime"] = "2025-03-04T05:06:10Z"
        st, err = self.c.req("PUT", base + "/gpushare-extender", out)
        self.assertEqual(st, 400)
        self.assertEqual(err["message"], 'Lease in version "v1" cannot be handled as a Lease: parsing time '
                                         '"2025-03-04T05:06:10Z" as "2006-01-02T15:04:05.000000Z07:00": cannot '
                                         'parse "Z" as ".000000"')
        out["spec"]["renewTime"] = "2025-03-04T07:06:10.000001+02:00"
        out["spec"]["leaseDurationSeconds"] = 15.5
        st, err = self.c.req("PUT", base + "/gpushare-extender", out)
        self.assertEqual(st, 400)
        self.assertIn("cannot unmarshal number 15.5 into Go struct field LeaseSpec.spec.leaseDurationSeconds "
                      "of type int32", err["message"])
        out["spec"]["leaseDurationSeconds"] = 1
        st, done = self.c.req("PUT", base + "/gpushare-extender", out)
        self.assertEqual(st, 200, done)
        self.assertEqual(done["spec"]["renewTime"], "2025-03-04T05:06:10.000001Z")  # UTC, 6 digits

    def test_events_core_v1(self):
        st, out = self.c.req("POST", "/api/v1/namespaces/default/events", core_event("trainer-0.1829b5c3d2a1f000"))
        self.assertEqual(st, 201, out)
        self.assertEqual(out["reportingComponent"], "")
        self.assertIsNone(out["eventTime"])
        st, err = self.c.req("POST", "/api/v1/namespaces/default/events",
                             core_event("x", involvedObject={"kind": "Pod", "namespace": "other", "name": "p"}))
        self.assertEqual(st, 422)
        self.assertEqual(err["details"]["causes"][0]["field"], "involvedObject.namespace")
        self.assertEqual(err["message"], 'Event "x" is invalid: involvedObject.namespace: Invalid value: "other": '
                                         'does not match event.namespace')
        # with eventTime set, the strict rules (ValidateEventCreate)
        st, err = self.c.req("POST", "/api/v1/namespaces/default/events",
                             core_event("e3", eventTime="2025-03-04T05:06:07.123456Z", message="x" * 1025))
        self.assertEqual(st, 422)
        self.assertEqual(sorted({c["field"] for c in err["details"]["causes"]}),
                         ["action", "message", "reportingComponent", "reportingInstance"])
        # events.k8s.io/v1 is not served: gpushare writes core/v1 Events only
        st, err = self.c.req("GET", "/apis/events.k8s.io/v1/namespaces/default/events")
        self.assertEqual(st, 404)
        recv = self.srv.events()
        self.assertEqual([(e["api"], e["name"]) for e in recv], [("v1", "trainer-0.1829b5c3d2a1f000")])
        # a repeat is a PATCH raising the count
        st, out = self.c.req("PATCH", "/api/v1/namespaces/default/events/trainer-0.1829b5c3d2a1f000",
                             {"count": 2, "lastTimestamp": "2025-03-04T05:07:07Z"},
                             ctype="application/merge-patch+json")
        self.assertEqual((st, out["count"]), (200, 2))
        self.assertEqual(self.srv.events()[-1]["verb"], "patch")

    def test_nodes_cluster_scoped(self):
        n = node("n1")
        n["metadata"]["namespace"] = "ignored"
        st, out = self.c.req("POST", "/api/v1/nodes", n)
        self.assertEqual(st, 201, out)
        self.assertNotIn("namespace", out["metadata"])
        self.assertEqual(out["status"]["capacity"]["aliyun.com/gpu-mem"], "32")
        st, _ = self.c.req("GET", "/api/v1/namespaces/default/nodes/n1")
        self.assertEqual(st, 404)
        st, out = self.c.req("PATCH", "/api/v1/nodes/n1/status",
                             {"status": {"capacity": {"aliyun.com/gpu-mem": "64"}}},
                             ctype="application/merge-patch+json")
        self.assertEqual((st, out["status"]["capacity"]["aliyun.com/gpu-mem"]), (200, "64"))
        st, err = self.c.req("GET", "/api/v1/foos")
        self.assertEqual(st, 404)
        self.assertEqual(err["message"], "the server could not find the requested resource")

    def test_keep_alive_and_chunked_request_body(self):
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=5)
        body = json.dumps(pod("chunky")).encode()
        req = (b"POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        s.sendall(req + b"GET /api/v1/namespaces/default/pods/chunky HTTP/1.1\r\nHost: x\r\n\r\n")
        f = s.makefile("rb")
        codes = []
        for _ in range(2):
            codes.append(f.readline().split()[1])
            n = 0
            while True:
                line = f.readline()
                if line == b"\r\n":
                    break
                if line.lower().startswith(b"content-length:"):
                    n = int(line.split(b":")[1])
            f.read(n)
        self.assertEqual(codes, [b"201", b"200"])
        s.close()

    def test_gzip_large_list(self):
        for i in range(40):
            self.srv.add({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": "c%d" % i, "namespace": "default"}, "data": {"blob": "x" * 5000}})
        st, l = self.c.req("GET", "/api/v1/configmaps", headers={"Accept-Encoding": "gzip"})
        self.assertEqual(st, 200)
        self.assertEqual(self.c.last.getheader("Content-Encoding"), "gzip")
        self.assertEqual(len(l["items"]), 40)
        st, l = self.c.req("GET", "/api/v1/configmaps")
        self.assertIsNone(self.c.last.getheader("Content-Encoding"))

    def test_managed_fields_like_a_real_server(self):
        st, out = self.c.req("POST", "/api/v1/namespaces/default/pods", pod("p", annotations={"a": "1"}),
                             headers={"User-Agent": "gpushare-extender/0.1.0 (linux)"})
        mf = out["metadata"]["managedFields"]
        self.assertEqual(len(mf), 1)
        self.assertEqual({k: mf[0][k] for k in ("manager", "operation", "apiVersion", "fieldsType")},
                         {"manager": "gpushare-extender", "operation": "Update", "apiVersion": "v1",
                          "fieldsType": "FieldsV1"})
        self.assertIn("f:annotations", mf[0]["fieldsV1"]["f:metadata"])
        self.assertEqual(list(out["metadata"])[-1], "managedFields")
        st, out2 = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p?fieldManager=other",
                              {"metadata": {"labels": {"x": "y"}}}, ctype="application/merge-patch+json")
        self.assertEqual([e["manager"] for e in out2["metadata"]["managedFields"]], ["gpushare-extender", "other"])
        # the same write again by the same manager is a no-op: no new resourceVersion
        st, out3 = self.c.req("PATCH", "/api/v1/namespaces/default/pods/p?fieldManager=other",
                              {"metadata": {"labels": {"x": "y"}}}, ctype="application/merge-patch+json")
        self.assertEqual(out3["metadata"]["resourceVersion"], out2["metadata"]["resourceVersion"])
        # binding goes straight to storage: managedFields unchanged
        self.srv.add(node("n1"))
        st, _ = self.c.req("POST", "/api/v1/namespaces/default/pods/p/binding", binding("p", "n1"))
        self.assertEqual(self.srv.get("pods", "default", "p")["metadata"]["managedFields"],
                         out3["metadata"]["managedFields"])

    def test_state_preload(self):
        tmp = tempfile.mkdtemp()
        try:
            path = os.path.join(tmp, "s.json")
            p1 = pod("p1", node="gpu-a")
            p1["metadata"]["uid"] = "11111111-2222-3333-4444-555555555555"
            with open(path, "w") as f:
                json.dump({"kind": "List", "apiVersion": "v1",
                           "items": [node("gpu-a"), p1, {"apiVersion": "v1", "kind": "Namespace",
                                                         "metadata": {"name": "ml"}}]}, f)
            srv = FakeApiServer(state=path)
            try:
                got = srv.get("pods", "default", "p1")
                self.assertEqual(got["metadata"]["uid"], "11111111-2222-3333-4444-555555555555")
                self.assertEqual(got["spec"]["nodeName"], "gpu-a")
                self.assertEqual(len(srv.list()), 2)
            finally:
                srv.stop()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_discovery_and_version(self):
        st, v = self.c.req("GET", "/version")
        self.assertEqual((st, v["major"]), (200, "1"))
        st, d = self.c.req("GET", "/api/v1")
        self.assertIn("pods/binding", [r["name"] for r in d["resources"]])


if __name__ == "__main__":
    unittest.main()
