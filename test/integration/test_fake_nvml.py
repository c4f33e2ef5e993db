"""The fake NVML (test/fakenvml, docs/fake-nvml.md) as NVML clients meet it:

- gpushare-topo --nvml (src/node's reader) prints, for every topology in
  test/data/topologies, exactly what gpushare-topo prints from the
  `nvidia-smi topo -m` text of the same matrix;
- NVIDIA's go-nvml binding (test/fakenvml/gonvml, built with Go from the
  module proxy) reads every entry point back as the inventory says: struct
  layouts and versioned symbols as NVIDIA's own nvml.h declares them;
- Aliyun's device plugin (../shared/aliyun, unpacked into the build dir)
  finds the fake GPUs, their minor numbers and memory through it.

Env: GS_BUILD_DIR, GS_SOURCE_DIR; GS_SHARED_DIR (else a 'shared' directory
next to or above the source tree) for Aliyun's binary: the test fails, not
skips, when it is missing.
"""
import glob
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from gsutil import BUILD, SOURCE
from aliyun import aliyun_binary, shared_dir  # noqa: F401  (shared with the real node tier)

TOPO = os.path.join(BUILD, "tools", "topo", "gpushare-topo")
FAKE_DIR = os.path.join(BUILD, "fakenvml")  # the plain copy: Go programs load it
DATA = os.path.join(SOURCE, "test", "data", "topologies")
GPU_MAX_LINKS = 18  # NVLinks of one GPU (H100: 18)


def inventory(gpus, rows=None, nvswitch=0, extra=()):
    """Inventory text: gpus = [(uuid, mib, minor)], rows = matrix cells."""
    out = ["# written by test_fake_nvml.py"]
    for i, (uuid, mib, minor) in enumerate(gpus):
        out.append(f"gpu mem={mib} uuid={uuid} minor={minor} bus=00000000:{0x10 + i:02X}:00.0 "
                   f"name=Tesla V100-SXM2-{mib // 1024}GB")
    if nvswitch:
        out.append(f"nvswitch {nvswitch}")
    for r in rows or []:
        out.append("row " + " ".join(r))
    out.extend(extra)
    return "\n".join(out) + "\n"


def rows_for(links):
    """The inventory for a gpushare-topo matrix: an NVSwitch fabric when every
    pair is NV<k> and the links would not fit NVML's per-GPU count as direct
    ones (DGX A100, HGX H200, DGX-2), else the cells as they are."""
    n = len(links)
    off = {links[i][j] for i in range(n) for j in range(n) if i != j}
    if len(off) == 1 and next(iter(off)).startswith("NV"):
        k = int(next(iter(off))[2:])
        if (n - 1) * k > GPU_MAX_LINKS:
            return [["X" if i == j else "SYS" for j in range(n)] for i in range(n)], k
    return links, 0


def smi_text(links):
    """`nvidia-smi topo -m` text for a matrix (header, GPU rows, tabs)."""
    n = len(links)
    lines = ["\t" + "\t".join(f"GPU{j}" for j in range(n)) + "\tCPU Affinity"]
    for i, r in enumerate(links):
        lines.append(f"GPU{i}\t" + "\t".join(" X " if c == "X" else c for c in r) + "\t0-7")
    return "\n".join(lines) + "\n"


class FakeNvmlTopo(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gs-fakenvml-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def from_text(self, text):
        p = subprocess.run([TOPO], input=text.encode(), capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        return p.stdout.decode()

    def from_nvml(self, inv, lib_dir=FAKE_DIR, args=("--nvml",)):
        path = os.path.join(self.tmp, "inventory")
        with open(path, "w") as f:
            f.write(inv)
        env = dict(os.environ, GS_FAKE_NVML_INVENTORY=path)
        if lib_dir:
            env["LD_LIBRARY_PATH"] = lib_dir
        else:
            env.pop("LD_LIBRARY_PATH", None)
        p = subprocess.run([TOPO, *args], capture_output=True, timeout=30, env=env)
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    def same(self, text, name):
        want = self.from_text(text)
        links = json.loads(want)["links"]
        rows, nvswitch = rows_for(links)
        gpus = [(f"GPU-{name}-{i}", 16384, i) for i in range(len(links))]
        rc, out, err = self.from_nvml(inventory(gpus, rows, nvswitch))
        self.assertEqual((rc, err), (0, ""), name)
        self.assertEqual(out, want, name)
        return links, nvswitch

    def test_every_sample_topology(self):
        checked = {}
        for path in sorted(glob.glob(os.path.join(DATA, "*.txt"))):
            name = os.path.basename(path)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            if name == "legend.txt":
                continue
            if name == "hgx_h100_h200_topo-m.txt":
                text = text[text.index("(b)"):]  # (a) is cut short; (b) is whole
            if name == "dgx2_v100_16gpu_topo-m_partial.txt":
                # 5 of 16 rows were captured; its note: NV6 between every pair
                text = smi_text([["X" if i == j else "NV6" for j in range(16)] for i in range(16)])
            links, nvswitch = self.same(text, name.split("_")[0])
            checked[name] = (len(links), nvswitch)
        self.assertEqual(checked, {
            "8gpu_nvlink_pairs_topo-m.txt": (8, 0),
            "a100_pcie_nvlink_bridge_4gpu_topo-m.txt": (4, 0),
            "dgx1_v100_topo-m.txt": (8, 0),
            "dgx1_v100_topo-mp.txt": (8, 0),
            "dgx2_v100_16gpu_topo-m_partial.txt": (16, 6),
            "dgx_a100_topo-m.txt": (8, 12),
            "hgx_h100_h200_topo-m.txt": (8, 18),
        })

    def test_every_pcie_level(self):
        cells = ["PIX", "PXB", "PHB", "NODE", "SYS"]
        links = [["X"] * 6 for _ in range(6)]
        for i in range(6):
            for j in range(i + 1, 6):
                links[i][j] = links[j][i] = cells[(i + j) % 5]
        links[0][5] = links[5][0] = "NV3"
        links[2][3] = links[3][2] = "NV18"  # a whole GPU's links to one peer
        self.same(smi_text(links), "pcie")

    def test_nvswitch_beside_direct_links(self):
        # two GPUs with 2 links to each other and 4 each to the fabric: NV6
        # between them, NV4 to the rest
        gpus = [(f"GPU-s{i}", 40960, i) for i in range(3)]
        rows = [["X", "NV2", "SYS"], ["NV2", "X", "SYS"], ["SYS", "SYS", "X"]]
        rc, out, err = self.from_nvml(inventory(gpus, rows, 4))
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(json.loads(out)["links"],
                         [["X", "NV6", "NV4"], ["NV6", "X", "NV4"], ["NV4", "NV4", "X"]])

    def test_no_matrix_is_sys(self):
        rc, out, _ = self.from_nvml(inventory([("GPU-a", 16384, 0), ("GPU-b", 16384, 1)]))
        self.assertEqual((rc, out), (0, '{"links":[["X","SYS"],["SYS","X"]]}\n'))

    def test_refusals(self):
        gpus = [("GPU-a", 16384, 0), ("GPU-b", 16384, 1)]
        rc, out, err = self.from_nvml(inventory(gpus), lib_dir=None,
                                      args=("--nvml=libnvidia-ml-absent.so.1",))
        self.assertEqual((rc, out), (1, ""))
        self.assertIn("gpushare-topo: cannot read the topology from NVML: libnvidia-ml-absent.so.1: "
                      "cannot load NVML: ", err)
        self.assertIn("(no NVIDIA driver on this machine?)", err)
        # a bad inventory: the fake says where, nvmlInit fails, nothing printed
        rc, out, err = self.from_nvml("gpu mem=16384 uuid=GPU-a\nrow X NV2\n")
        self.assertEqual((rc, out), (1, ""))
        self.assertIn("fake nvml: bad inventory: " + self.tmp + "/inventory:2: row 0: more than 1 cells", err)
        self.assertIn("libnvidia-ml.so.1: nvmlInit: Unknown Error (999)", err)
        # the driver "not loaded": init-error
        rc, out, err = self.from_nvml(inventory(gpus, extra=["init-error 9"]))
        self.assertEqual((rc, out), (1, ""))
        self.assertIn("nvmlInit: Driver Not Loaded (9)", err)
        # more direct links than a GPU has
        rc, _, err = self.from_nvml(inventory(gpus, [["X", "NV19"], ["NV19", "X"]]))
        self.assertEqual(rc, 1)
        self.assertIn("GPU 0 has 19 NVLinks, a GPU has at most 18", err)
        # no GPU: nothing to print
        rc, _, err = self.from_nvml("driver 550.1\n")
        self.assertEqual(rc, 1)
        self.assertIn("nvmlDeviceGetCount: no GPU", err)
        rc, _, err = self.from_nvml(inventory(gpus), args=("--nvml", "topo.txt"))
        self.assertEqual(rc, 2)
        self.assertIn("--nvml reads no FILE", err)


class GoNvml(unittest.TestCase):
    """go-nvml v0.13 (NVML 13's header) on the fake: a second client, built
    against NVIDIA's declarations rather than ours."""

    @classmethod
    def setUpClass(cls):
        go = shutil.which("go") or "/usr/local/go/bin/go"
        if not os.path.exists(go):
            raise AssertionError("Go is needed to build the go-nvml probe (as for test/k8s/build.sh)")
        cls.bin = os.path.join(BUILD, "gonvml", "gonvml-probe")
        p = subprocess.run([go, "build", "-o", cls.bin, "."], capture_output=True, timeout=900,
                           cwd=os.path.join(SOURCE, "test", "fakenvml", "gonvml"),
                           env=dict(os.environ, CGO_ENABLED="1"))
        if p.returncode != 0:
            raise AssertionError("go build of test/fakenvml/gonvml failed:\n" + p.stderr.decode()[-3000:])

    def test_every_entry_point(self):
        tmp = tempfile.mkdtemp(prefix="gs-gonvml-")
        self.addCleanup(shutil.rmtree, tmp, True)
        inv = os.path.join(tmp, "inventory")
        with open(inv, "w") as f:
            f.write("driver 535.104.05\ncuda 12020\n"
                    "gpu mem=16384 uuid=GPU-g-0 minor=2 bus=00000000:06:00.0 name=Tesla V100-SXM2-16GB\n"
                    "gpu mem=40960 uuid=GPU-g-1 minor=3 bus=0000:07:00.0 arch=7 cc=8.0 name=A100-SXM4-40GB\n"
                    "gpu mem=40960 uuid=GPU-g-2 minor=4 bus=08:00.0\n"
                    "nvswitch 1\nrow X NV2 PIX\nrow NV2 X NODE\nrow PIX NODE X\n"
                    "xid GPU-g-1 79\n")
        p = subprocess.run([self.bin], capture_output=True, timeout=60,
                           env=dict(os.environ, GS_FAKE_NVML_INVENTORY=inv, LD_LIBRARY_PATH=FAKE_DIR))
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        got = json.loads(p.stdout)
        gpus = got.pop("gpus")
        self.assertEqual(got, {"driver": "535.104.05", "cuda": 12020,
                               "ancestors": [[0, 50, 10], [50, 0, 40], [10, 40, 0]],
                               "event_gpu": 1, "event_xid": 79, "event_type": 8,
                               "next_wait": 10})  # NVML_ERROR_TIMEOUT
        switch = {"link": 0, "remote_bus": "00000000:E0:00.0", "type": 2}
        self.assertEqual(gpus, [
            {"index": 0, "uuid": "GPU-g-0", "name": "Tesla V100-SXM2-16GB", "minor": 2,
             "mem_total": 16 << 30, "mem2_total": 16 << 30, "bus_id": "00000000:06:00.0",
             "arch": 5, "cc": [7, 0], "mig": [0, 0], "by_uuid": True, "by_bus": True,
             "links": [switch, {"link": 1, "remote_bus": "00000000:07:00.0", "type": 0},
                       {"link": 2, "remote_bus": "00000000:07:00.0", "type": 0}]},
            {"index": 1, "uuid": "GPU-g-1", "name": "A100-SXM4-40GB", "minor": 3,
             "mem_total": 40 << 30, "mem2_total": 40 << 30, "bus_id": "00000000:07:00.0",
             "arch": 7, "cc": [8, 0], "mig": [0, 0], "by_uuid": True, "by_bus": True,
             "links": [switch, {"link": 1, "remote_bus": "00000000:06:00.0", "type": 0},
                       {"link": 2, "remote_bus": "00000000:06:00.0", "type": 0}]},
            {"index": 2, "uuid": "GPU-g-2", "name": "NVIDIA Fake GPU", "minor": 4,
             "mem_total": 40 << 30, "mem2_total": 40 << 30, "bus_id": "00000000:08:00.0",
             "arch": 5, "cc": [7, 0], "mig": [0, 0], "by_uuid": True, "by_bus": True,
             "links": [switch]},
        ])

    def test_init_error_reaches_it(self):
        tmp = tempfile.mkdtemp(prefix="gs-gonvml-")
        self.addCleanup(shutil.rmtree, tmp, True)
        inv = os.path.join(tmp, "inventory")
        with open(inv, "w") as f:
            f.write("gpu mem=1 uuid=GPU-0\ninit-error 9\n")
        p = subprocess.run([self.bin], capture_output=True, timeout=60,
                           env=dict(os.environ, GS_FAKE_NVML_INVENTORY=inv, LD_LIBRARY_PATH=FAKE_DIR))
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr.decode(), "gonvml-probe: Init: Driver Not Loaded (9)\n")


# Runs Aliyun's plugin in a mount namespace of its own, where its fixed
# paths (the ServiceAccount token under /var/run/secrets, the kubelet's
# /var/lib/kubelet/device-plugins) lie on empty tmpfs mounts over /run and
# /var/lib and this test's directory: nothing of the host is seen or
# touched, a kubelet running beside it included.
ALIYUN_RUN = """set -e
mount -t tmpfs tmpfs /run
mkdir -p /run/secrets/kubernetes.io/serviceaccount
printf token > /run/secrets/kubernetes.io/serviceaccount/token
mount -t tmpfs tmpfs /var/lib
mkdir -p /var/lib/kubelet/device-plugins
mount --bind "$1" /var/lib/kubelet/device-plugins
shift
exec "$@"
"""


class AliyunDevicePlugin(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bin = aliyun_binary()

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gs-aliyun-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def run_plugin(self, inv, unit, want_line, deadline_s=60):
        """Starts the plugin on the fake NVML, waits until its log has
        want_line (or it exits), stops it; returns the log."""
        inv_path = os.path.join(self.tmp, "inventory")
        with open(inv_path, "w") as f:
            f.write(inv)
        dp = os.path.join(self.tmp, "device-plugins")
        os.makedirs(dp, exist_ok=True)
        log_path = os.path.join(self.tmp, "plugin.log")
        env = dict(os.environ, GS_FAKE_NVML_INVENTORY=inv_path, LD_LIBRARY_PATH=FAKE_DIR,
                   KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT="1",
                   NODE_NAME="fake-node")
        with open(log_path, "wb") as log:
            p = subprocess.Popen(
                ["unshare", "-m", "--propagation", "private", "sh", "-c", ALIYUN_RUN, "run", dp,
                 self.bin, "-logtostderr", "--v=5", f"--memory-unit={unit}"],
                stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            end = time.monotonic() + deadline_s
            while time.monotonic() < end and p.poll() is None:
                with open(log_path, errors="replace") as f:
                    if want_line in f.read():
                        break
                time.sleep(0.05)  # polling the log for a condition, not a fixed wait
        finally:
            p.kill()
            p.wait(timeout=30)
        with open(log_path, errors="replace") as f:
            text = f.read()
        self.assertIn(want_line, text, f"plugin log:\n{text[-3000:]}")
        return text

    def test_finds_the_fake_gpus(self):
        gpus = [("GPU-4d1c-0", 16384, 3), ("GPU-4d1c-1", 16384, 5)]
        log = self.run_plugin(inventory(gpus), "GiB", "Device List:")
        for uuid, mib, minor in gpus:
            self.assertIn(f"Deivce {uuid}'s Path is /dev/nvidia{minor}", log)  # sic
            self.assertIn(f"# Add last device ID: {uuid}-_-{mib // 1024 - 1}", log)
        self.assertEqual(log.count("# device Memory: 16384"), 2)
        self.assertIn("set gpu memory: 16\n", log)
        self.assertIn("Device Map: map[GPU-4d1c-0:3 GPU-4d1c-1:5]", log)  # UUID → minor
        self.assertNotIn("panic", log)

    def test_mib_unit_counts_nvml_memory(self):
        gpus = [("GPU-77-0", 8192, 0)]
        log = self.run_plugin(inventory(gpus), "MiB", "Device List:")
        self.assertIn("set gpu memory: 8192\n", log)
        self.assertIn("# Add last device ID: GPU-77-0-_-8191", log)

    def test_init_failure_is_its_error(self):
        inv = inventory([("GPU-a", 16384, 0)], extra=["init-error 9"])
        log = self.run_plugin(inv, "GiB", "Driver Not Loaded")
        self.assertNotIn("Device List:", log)


if __name__ == "__main__":
    unittest.main()
