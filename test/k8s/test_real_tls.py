"""Issue 16 item 3 on the real control plane: the extender serves HTTPS with
--tls-client-ca-file, kube-scheduler runs deploy/scheduler/
kube-scheduler-config-tls.yaml (only the URL's port and the tlsConfig file
paths rewritten) and presents its client certificate: GPU pods are
scheduled through the verbs; a caller without a certificate from that CA is
refused every verb (403) and changes nothing. Two CAs of the test's own:
one signs the extender's serving certificate (the name kube-scheduler
checks, gpushare-extender.kube-system.svc), one signs kube-scheduler's
client certificate."""
import json
import os
import ssl
import subprocess
import tempfile
import unittest
import urllib.error
import urllib.request

import yaml

import kcluster
from kcluster import Extender
from realcase import Env, RealCase, alloc_gpus, wait_for

PKI = None


def openssl(d, *args):
    subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)


def tls_scheduler_config(pki, out):
    """deploy/scheduler/kube-scheduler-config-tls.yaml with only its files'
    paths rewritten to pki's (make_certs), written into folder out: its path
    and its one extender (a dict)."""
    with open(os.path.join(kcluster.SOURCE, "deploy", "scheduler", "kube-scheduler-config-tls.yaml")) as f:
        cfg = yaml.safe_load(f)
    (ext,) = cfg["extenders"]
    ext["tlsConfig"].update(caFile=os.path.join(pki, "ext-ca.crt"),
                            certFile=os.path.join(pki, "scheduler.crt"),
                            keyFile=os.path.join(pki, "scheduler.key"))
    path = os.path.join(out, "kube-scheduler-config-tls.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    return path, ext


def make_certs(d):
    for ca in ("ext-ca", "clients-ca"):
        openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                f"/CN=gpushare-{ca}", "-keyout", f"{ca}.key", "-out", f"{ca}.crt")
    exts = {"ext": "subjectAltName=DNS:gpushare-extender.kube-system.svc,IP:127.0.0.1\n"
                   "extendedKeyUsage=serverAuth\n",
            "scheduler": "extendedKeyUsage=clientAuth\n"}
    for name, ca in (("ext", "ext-ca"), ("scheduler", "clients-ca")):
        with open(os.path.join(d, f"{name}.cnf"), "w") as f:
            f.write(exts[name])
        openssl(d, "req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN=gpushare-{name}",
                "-keyout", f"{name}.key", "-out", f"{name}.csr")
        openssl(d, "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
                "-CAcreateserial", "-days", "2", "-extfile", f"{name}.cnf", "-out", f"{name}.crt")


def setUpModule():
    global PKI
    PKI = tempfile.TemporaryDirectory(prefix="gs-k8s-tls-")
    d = PKI.name
    make_certs(d)
    path, _ = tls_scheduler_config(d, d)
    Env.up(unit="1GiB", start_extender=False, scheduler_config=path, ext_scheme="https")
    ctx = ssl.create_default_context(cafile=os.path.join(d, "ext-ca.crt"))
    ctx.check_hostname = False  # the harness calls 127.0.0.1; kube-scheduler checks the name
    Env.ext = Extender(Env.cp, ssl_context=ctx, args=(
        "--tls-cert-file", os.path.join(d, "ext.crt"), "--tls-key-file", os.path.join(d, "ext.key"),
        "--tls-client-ca-file", os.path.join(d, "clients-ca.crt"))).wait_ready()


def tearDownModule():
    Env.down()
    PKI.cleanup()


class ClientCertificates(RealCase):
    def test_kube_scheduler_with_its_certificate_schedules_and_no_one_else_binds(self):
        self.node("gpu-tls", "share", gpus=2, units=32)
        self.pod("tls-a", units=6)
        (p,) = self.wait_bound(1)
        self.assertEqual(p["spec"]["nodeName"], "gpu-tls")
        self.assertEqual(alloc_gpus(p), [0])
        self.assert_ledger_is_truth()
        # a caller with the server's CA but no client certificate
        self.pod("tls-b", units=6, node_selector={"no-such-label": "x"})
        b = self.k.get("pods", self.ns, "tls-b")
        ctx = ssl.create_default_context(cafile=os.path.join(PKI.name, "ext-ca.crt"))
        ctx.check_hostname = False
        req = urllib.request.Request(
            f"{Env.ext.base}/gpushare-scheduler/bind", method="POST",
            data=json.dumps({"PodName": "tls-b", "PodNamespace": self.ns,
                             "PodUID": b["metadata"]["uid"], "Node": "gpu-tls"}).encode(),
            headers={"Content-Type": "application/json"})
        with self.assertRaises(urllib.error.HTTPError) as cm:
            urllib.request.urlopen(req, context=ctx, timeout=10)
        self.assertEqual(cm.exception.code, 403)
        self.assertEqual(json.loads(cm.exception.read()),
                         {"Error": "a client certificate signed by the --tls-client-ca-file CA is required"})
        self.assertIsNone(self.k.get("pods", self.ns, "tls-b")["spec"].get("nodeName"))
        wait_for(lambda: 'msg="verb refused: no verified client certificate"' in Env.ext.proc.tail(20000),
                 30, "the refusal in the extender's log")
        self.assert_ledger_is_truth()


if __name__ == "__main__":
    unittest.main()
