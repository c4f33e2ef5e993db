"""The base of the real control-plane harness (kcluster.py): the binaries' folder, PKI and
kubeconfigs, the audit policy, and child processes stopped by PID. Paths, the wait loop and the
REST client are the shared test/lib's (gsutil, kuberest), re-exported."""

import ctypes
import os
import signal
import subprocess

import yaml

from gsutil import BUILD, SOURCE, Fatal, free_port, wait_for  # noqa: F401  (re-exported by kcluster)
import gsutil  # noqa: F401  (the shared helpers, re-exported by kcluster)
from kuberest import KINDS, RESOURCES, Kube, KubeError  # noqa: F401  (the one REST client)

EXTENDER_SA = "system:serviceaccount:kube-system:gpushare-extender"
# Generous: the test command also runs at load 10 on 2 cores.
START_TIMEOUT = float(os.environ.get("GS_K8S_START_TIMEOUT", "180"))


def k8s_bin_dir():
    d = os.environ.get("GS_K8S_BIN")
    if d:
        return d
    return os.path.join(SOURCE, "build", "k8s", "bin")


def _run(cmd, **kw):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)


def make_pki(d):
    """A cluster CA with the apiserver's serving cert, a front-proxy CA and its
    client, and the ServiceAccount signing key (openssl, EC P-256 / RSA)."""
    def ca(name, cn):
        _run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
              "-nodes", "-keyout", f"{d}/{name}.key", "-out", f"{d}/{name}.crt", "-days", "30",
              "-subj", f"/CN={cn}"])

    def leaf(name, ca_name, cn, san=None, client=False):
        _run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
              "-nodes", "-keyout", f"{d}/{name}.key", "-out", f"{d}/{name}.csr", "-subj", f"/CN={cn}"])
        ext = f"{d}/{name}.ext"
        with open(ext, "w") as f:
            f.write("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n")
            f.write("extendedKeyUsage=" + ("clientAuth" if client else "serverAuth,clientAuth") + "\n")
            if san:
                f.write("subjectAltName=" + san + "\n")
        _run(["openssl", "x509", "-req", "-in", f"{d}/{name}.csr", "-CA", f"{d}/{ca_name}.crt",
              "-CAkey", f"{d}/{ca_name}.key", "-CAcreateserial", "-out", f"{d}/{name}.crt",
              "-days", "30", "-extfile", ext])

    ca("ca", "gpushare-test-ca")
    leaf("apiserver", "ca", "kube-apiserver",
         san="IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
             "DNS:kubernetes.default.svc,IP:10.0.0.1")
    ca("front-proxy-ca", "gpushare-test-front-proxy-ca")
    leaf("front-proxy-client", "front-proxy-ca", "front-proxy-client", client=True)
    _run(["openssl", "genrsa", "-out", f"{d}/sa.key", "2048"])
    _run(["openssl", "rsa", "-in", f"{d}/sa.key", "-pubout", "-out", f"{d}/sa.pub"])


def write_kubeconfig(path, server, ca_file, token, name="gpushare-test"):
    cfg = {
        "apiVersion": "v1", "kind": "Config", "current-context": name,
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority": ca_file}}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
    }
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    return path


PLUGIN_SA = "system:serviceaccount:kube-system:gpushare-scheduler"
AUDIT_POLICY = f"""apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["{EXTENDER_SA}", "{PLUGIN_SA}"]
- level: Metadata
  verbs: ["create"]
  resources:
  - group: ""
    resources: ["pods/binding", "pods/eviction"]
- level: Metadata
  verbs: ["delete"]
  resources:
  - group: ""
    resources: ["pods"]
- level: None
"""


# Children die with the harness (prctl PR_SET_PDEATHSIG): a test runner that
# kills a timed-out test leaves no control plane behind. `kcluster.py up`
# turns it off: its processes outlive it until `down`.
DIE_WITH_PARENT = True


_LIBC = ctypes.CDLL(None, use_errno=True)  # loaded now: the child runs no import


def _die_with_parent():
    _LIBC.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def pid_alive(pid):
    """True while pid runs (a zombie waiting for its reaper does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def wait_pod_phase(kube, ns, name, want, timeout, explain=None):
    """Pod ns/name (its object) once its phase is want; Fatal when it ended
    in another phase (its status, then explain()'s text when given) or on
    timeout."""
    def done():
        p = kube.get("pods", ns, name)
        ph = p["status"].get("phase")
        if ph == want:
            return p
        if ph in ("Succeeded", "Failed"):
            more = "\n" + explain() if explain is not None else ""
            raise Fatal(f"pod {name} ended {ph}, not {want}: {p['status']}{more}")
        return None
    return wait_for(done, timeout, f"pod {name} {want}", 0.2)


class Proc:
    """One child process with its log; stopped by PID."""

    def __init__(self, name, cmd, logdir, env=None):
        self.name = name
        self.cmd = cmd
        self.logpath = os.path.join(logdir, name + ".log")
        self.log = open(self.logpath, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                                     preexec_fn=_die_with_parent if DIE_WITH_PARENT else None)
        self.pid = self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def tail(self, n=4000):
        try:
            with open(self.logpath, "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - n))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(sig)
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            except ProcessLookupError:
                pass
        self.log.close()
        return self.proc.returncode
