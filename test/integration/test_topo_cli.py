"""gpushare-topo: real `nvidia-smi topo -m` outputs in, annotation JSON out.

Env: GS_BUILD_DIR (the binary is $GS_BUILD_DIR/tools/topo/gpushare-topo),
GS_SOURCE_DIR (vendored samples in test/data/topologies).
"""
import json
import os
import subprocess
import unittest

BUILD = os.environ.get("GS_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
SOURCE = os.environ.get("GS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.join(BUILD, "tools", "topo", "gpushare-topo")
DATA = os.path.join(SOURCE, "test", "data", "topologies")
CELLS = {"X", "PIX", "PXB", "PHB", "NODE", "SYS"}


def run(stdin, *args):
    if isinstance(stdin, str):
        stdin = stdin.encode()
    p = subprocess.run([BIN, *args], input=stdin, capture_output=True, timeout=30)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def sample(name):
    with open(os.path.join(DATA, name), "rb") as f:
        return f.read()


def valid_cell(c):
    return c in CELLS or (c.startswith("NV") and c[2:].isdigit() and 1 <= int(c[2:]) <= 255
                          and c[2] != "0")


class TopoCli(unittest.TestCase):
    def links(self, name_or_text):
        text = sample(name_or_text) if name_or_text.endswith(".txt") else name_or_text
        rc, out, err = run(text)
        self.assertEqual(rc, 0, err)
        self.assertEqual(err, "")
        # compact, one line, newline-terminated
        self.assertTrue(out.endswith("\n"))
        self.assertEqual(out.count("\n"), 1)
        self.assertNotIn(" ", out)
        doc = json.loads(out)
        self.assertEqual(list(doc), ["links"])
        m = doc["links"]
        n = len(m)
        for i, row in enumerate(m):
            self.assertEqual(len(row), n)
            for j, c in enumerate(row):
                self.assertTrue(valid_cell(c), c)
                self.assertEqual(c == "X", i == j)
                self.assertEqual(c, m[j][i])
        return m

    def test_dgx1(self):
        m = self.links("dgx1_v100_topo-m.txt")
        self.assertEqual(len(m), 8)
        self.assertEqual(m[0], ["X", "NV1", "NV1", "NV2", "NV2", "SYS", "SYS", "SYS"])
        self.assertEqual(m[7][4], "NV2")

    def test_dgx1_pcie_only(self):
        m = self.links("dgx1_v100_topo-mp.txt")
        self.assertEqual(m[0][:4], ["X", "PIX", "PHB", "PHB"])
        self.assertEqual(m[5][0], "SYS")

    def test_pairs_and_bridges(self):
        m = self.links("8gpu_nvlink_pairs_topo-m.txt")
        self.assertEqual(m[0][2], "NV12")
        self.assertEqual(m[1][3], "NV12")
        self.assertEqual(m[0][1], "SYS")
        m = self.links("a100_pcie_nvlink_bridge_4gpu_topo-m.txt")
        self.assertEqual(m, [["X", "NV12", "SYS", "SYS"], ["NV12", "X", "SYS", "SYS"],
                             ["SYS", "SYS", "X", "NODE"], ["SYS", "SYS", "NODE", "X"]])

    def test_nvswitch(self):
        m = self.links("dgx_a100_topo-m.txt")
        self.assertTrue(all(c == ("X" if i == j else "NV12")
                            for i, row in enumerate(m) for j, c in enumerate(row)))
        # the complete H200 table of the H100/H200 file, on its own
        text = sample("hgx_h100_h200_topo-m.txt").decode()
        m = self.links(text[text.index("(b)"):])
        self.assertEqual(len(m), 8)
        self.assertEqual(m[3][5], "NV18")

    def test_refused_partial(self):
        rc, out, err = run(sample("dgx2_v100_16gpu_topo-m_partial.txt"))
        self.assertEqual(rc, 2)
        self.assertEqual(out, "")
        self.assertEqual(err.count("\n"), 1)
        self.assertIn("partial table", err)
        self.assertIn("5 of 16", err)
        # the H100 table (a) breaks off at row GPU1
        rc, out, err = run(sample("hgx_h100_h200_topo-m.txt"))
        self.assertEqual(rc, 2)
        self.assertIn("line 8: unknown link \"...\"", err)

    def test_refused_garbage(self):
        for text in [b"", b"hello world\n", sample("legend.txt"), b"\x00\xff\xfe garbage",
                     b"\tGPU0\tGPU1\nGPU0\t X \tNVX\nGPU1\tNVX\t X \n",
                     b"\tGPU0\tGPU1\nGPU0\t X \tNV1\nGPU1\tNV2\t X \n"]:
            rc, out, err = run(text)
            self.assertEqual(rc, 2, text)
            self.assertEqual(out, "")
            self.assertTrue(err.startswith("gpushare-topo: "), err)
            self.assertEqual(err.count("\n"), 1, err)
        rc, _, err = run(b"\tGPU0\tGPU1\nGPU0\t X \tNVX\nGPU1\tNVX\t X \n")
        self.assertIn("line 2: unknown link \"NVX\"", err)

    def test_too_big(self):
        rc, out, err = run(b" " * (1 << 20) + b"\n")
        self.assertEqual(rc, 2)
        self.assertIn("over", err)

    def test_usage(self):
        rc, out, err = run(b"", "--help")
        self.assertEqual(rc, 0)
        self.assertIn("nvidia-smi topo -m", out)
        rc, out, err = run(b"", "--bogus")
        self.assertEqual(rc, 2)
        self.assertEqual(err.count("\n"), 1)
        rc, out, err = run(b"", "--version")
        self.assertEqual(rc, 0)
        self.assertTrue(out.startswith("gpushare-topo "))

    def test_a_file_argument_reads_as_stdin_does(self):
        path = os.path.join(DATA, "dgx1_v100_topo-m.txt")
        rc, out, err = run(b"", path)
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(out, run(sample("dgx1_v100_topo-m.txt"))[1])
        self.assertEqual(run(sample("dgx1_v100_topo-m.txt"), "-")[1], out)
        rc, out, err = run(b"", "/no/such/file")
        self.assertEqual((rc, out), (1, ""))
        self.assertEqual(err, "gpushare-topo: cannot open /no/such/file: No such file or directory\n")
        rc, out, err = run(b"", path, path)
        self.assertEqual(rc, 2)
        self.assertIn("unknown argument", err)
        rc, out, err = run(b"", DATA)  # a directory: read fails
        self.assertEqual(rc, 1)
        self.assertIn(f"cannot read {DATA}", err)

    def test_io_error(self):
        # stdin is a directory: read() fails with EISDIR → exit 1
        fd = os.open(DATA, os.O_RDONLY)
        try:
            p = subprocess.run([BIN], stdin=fd, capture_output=True, timeout=30)
        finally:
            os.close(fd)
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot read standard input", p.stderr.decode())
        # stdout closed: write fails → exit 1
        if os.path.exists("/dev/full"):
            with open("/dev/full", "w") as full:
                p = subprocess.run([BIN], input=sample("dgx1_v100_topo-m.txt"), stdout=full,
                                   stderr=subprocess.PIPE, timeout=30)
            self.assertEqual(p.returncode, 1)
            self.assertIn("cannot write", p.stderr.decode())

    def test_every_sample(self):
        for name in sorted(os.listdir(DATA)):
            rc, out, err = run(sample(name))
            self.assertIn(rc, (0, 2), name)
            if rc == 0:
                json.loads(out)
            else:
                self.assertEqual(out, "")


if __name__ == "__main__":
    unittest.main()
