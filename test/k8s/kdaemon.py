"""A machine-wide daemon beside a real node (knode.Node): one that changes the
machine's network namespace (iptables chains and ipsets of fixed names), so one
runs on a machine at a time. The base of kube-proxy (kproxy.py) and kube-router's
firewall (knetpol.py): the binary's check, the lock held from start to stop (a
second test run waits for it, LOCK_TIMEOUT at most), the start that undoes itself
on failure, the /healthz wait and the stop that takes the process off the node.

A subclass names NAME, LOCK, LOCK_TIMEOUT, READY (what the wait says) and
implements launch() (returns the started knode process, self.health set) and
cleanup(started) (what it leaves on the machine, removed).
"""
import atexit
import fcntl
import os
import time
import urllib.request

from kbase import Fatal, k8s_bin_dir, wait_for


def lock_path(name):
    """Where the lock file of the daemon NAME lives: /run/lock if the machine
    has it, else /tmp."""
    d = "/run/lock" if os.path.isdir("/run/lock") else "/tmp"
    return f"{d}/gpushare-{name}.lock"


class Daemon:
    NAME = None
    LOCK = None
    LOCK_TIMEOUT = None
    READY = None

    def __init__(self, cp, node):
        self.cp = cp
        self.node = node
        self.binary = os.path.join(k8s_bin_dir(), self.NAME)
        self.proc = None
        self.lock = None
        self.health = None

    def launch(self):
        raise NotImplementedError

    def cleanup(self, started):
        """Removes what the daemon left on the machine; started: its process ran."""
        raise NotImplementedError

    def check(self):
        """What the daemon needs beside its binary (raises if missing)."""

    def acquire(self):
        self.lock = open(self.LOCK, "w")
        deadline = time.time() + self.LOCK_TIMEOUT
        while True:
            try:
                fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.time() > deadline:
                    raise Fatal(f"{self.LOCK}: another {self.NAME} holds the machine's iptables for "
                                f"{self.LOCK_TIMEOUT:.0f} s")
                time.sleep(1)

    def start(self, timeout=180):
        if not os.access(self.binary, os.X_OK):
            raise FileNotFoundError(f"{self.binary}: missing. Build it with test/k8s/build.sh "
                                    "(docs/real-cluster.md), or set GS_K8S_BIN")
        self.check()
        self.acquire()
        try:
            self.proc = self.launch()
            atexit.register(self.stop)  # before the node's own stop (atexit: last in, first out)
            wait_for(self.ready, timeout, self.READY, 0.2)
        except BaseException:
            self.stop()
            raise
        return self

    def alive(self):
        if not self.proc.alive():
            raise Fatal(f"{self.NAME} exited:\n" + self.proc.tail())

    def ready(self):
        self.alive()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health}/healthz", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self):
        if self.lock is None:
            return
        try:
            if self.proc is not None:
                self.proc.stop()
                if self.proc.name in self.node.procs:
                    self.node.beside.remove(self.proc.name)
                    del self.node.procs[self.proc.name]
            self.cleanup(self.proc is not None)
        finally:
            fcntl.flock(self.lock, fcntl.LOCK_UN)
            self.lock.close()
            self.lock = None
