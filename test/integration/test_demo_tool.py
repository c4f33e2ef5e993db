"""tools/demo.py, the README's first command without its set-up (issue 16
item 7): the seed scenarios placed as docs/contract.md §8 says, one cluster total,
no colour when not on a terminal, a multi-document cluster file read whole,
and --keep-running keeping the printed URL alive."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import unittest
import urllib.request

import yaml

from gsutil import SOURCE, node, pod, wait_until

BUILD = os.environ.get("GS_BUILD_DIR", os.path.join(SOURCE, "build"))
DEMO = os.path.join(SOURCE, "tools", "demo.py")
CLUSTER = os.path.join(SOURCE, "deploy", "demo", "cluster.yaml")


def run(*args, timeout=120):
    return subprocess.run([sys.executable, DEMO, "--build", BUILD, *args], capture_output=True,
                          text=True, timeout=timeout)


class DemoTool(unittest.TestCase):
    def test_the_seed_scenarios_and_one_cluster_total(self):
        r = run(CLUSTER)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        self.assertNotIn("\033[", out)  # not a terminal: no colour
        for i in range(16):
            self.assertRegex(out, rf"default/share-2g-{i:02d} +-> gpu-share-[ab]\n")
        self.assertRegex(out, r"default/multi-8g +-> gpu-share-b\n")
        self.assertRegex(out, r"default/pytorch-dist-nccl-0 +-> gpu-topo-[ab]\n")
        self.assertIn("unschedulable: 0/7 nodes are available: 7 aliyun.com/gpu-mem 9 is not "
                      "divisible by aliyun.com/gpu-count 2", out)
        self.assertEqual(out.count("In Cluster:"), 2)  # memory, whole GPUs: once each
        self.assertEqual(out.count("GANG "), 1)
        # the bound gang stays listed however late inspect runs (issue 30)
        self.assertRegex(out, r"\ndefault/pytorch-dist-nccl +2 +2 +gpu-topo-[ab]\[\d,\d\]\n")
        self.assertEqual(r.stderr, "")  # no log chatter

    def test_a_multi_document_file_and_keep_running(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "cluster.yaml")
            docs = [node("gpu-x", "share", gpus=1, units=16), pod("p1", units=4),
                    {"apiVersion": "v1", "kind": "List", "items": [pod("p2", units=8)]}]
            for p in docs[1:2] + docs[2]["items"]:
                p["metadata"].pop("uid", None)
            with open(path, "w") as f:
                f.write("---\n".join(yaml.safe_dump(x) for x in docs))
            proc = subprocess.Popen([sys.executable, DEMO, "--build", BUILD, "--keep-running", path],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                lines = []

                def url():
                    line = proc.stdout.readline()
                    lines.append(line)
                    m = re.search(r"keeps running at (http://127\.0\.0\.1:\d+)", line)
                    if not line and proc.poll() is not None:
                        raise AssertionError("demo exited:\n" + "".join(lines) + proc.stderr.read())
                    return m.group(1) if m else None
                base = wait_until(url, 60, "the --keep-running line", interval=0)
                text = "".join(lines)
                self.assertRegex(text, r"default/p1 +-> gpu-x")
                self.assertRegex(text, r"default/p2 +-> gpu-x")
                with urllib.request.urlopen(base + "/debug/ledger", timeout=10) as r:
                    led = json.loads(r.read())
                self.assertEqual([g["usedMiB"] for n in led["nodes"] for g in n["gpus"]], [12 * 1024])
                self.assertIsNone(proc.poll())  # still serving
            finally:
                proc.send_signal(signal.SIGINT)
                proc.wait(timeout=20)
                proc.stdout.close()
                proc.stderr.close()


if __name__ == "__main__":
    unittest.main()
