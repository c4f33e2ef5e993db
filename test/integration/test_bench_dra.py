"""gpushare-bench dra (docs/benchmarks.md §12) on a small cluster: the DRA
feed's three phases are timed over the objects fed, and the feed's state
afterwards is what was fed — every slice, device and claim known, every
claim charged, the ledger holding exactly the claims' memory. No time is
asserted: only that the figures are figures (positive, the parse a part of
the whole, p50 ≤ p99).

Env: GS_BUILD_DIR (tools/bench/gpushare-bench).
"""
import json
import os
import subprocess
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("GS_BUILD_DIR", os.path.join(HERE, "..", "..", "build"))
BIN = os.path.join(BUILD, "tools", "bench", "gpushare-bench")


def bench(*args):
    p = subprocess.run([BIN, "dra", *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def tables(out):
    recs = [json.loads(line) for line in out.splitlines() if line.strip()]
    return {r["table"]: r["rows"] for r in recs if "table" in r}


def table(recs, prefix):
    for title, rows in recs.items():
        if title.startswith(prefix):
            return rows
    raise AssertionError("no table %r in %r" % (prefix, list(recs)))


class BenchDra(unittest.TestCase):
    def test_phases_and_state_over_two_sizes(self):
        rc, out, err = bench("--nodes", "20,50", "--gpus", "4", "--claims", "3", "--json")
        self.assertEqual(rc, 0, err)
        recs = tables(out)
        rows = table(recs, "dra: the DRA feed's CPU time")
        self.assertEqual([(r["phase"], r["nodes"]) for r in rows],
                         [("slice", 20), ("claim", 20), ("relist", 20),
                          ("slice", 50), ("claim", 50), ("relist", 50)])
        want = {"slice": 1, "claim": 3, "relist": 1}
        for r in rows:
            self.assertEqual(r["objects"], r["nodes"] * want[r["phase"]], r)
            self.assertGreater(r["CPU s"], 0, r)
            self.assertGreater(r["wall s"], 0, r)
            self.assertGreater(r["CPU per object us"], 0, r)
            self.assertGreater(r["of which parse us"], 0, r)
            self.assertLess(r["of which parse us"], r["CPU per object us"], r)
            self.assertLessEqual(r["CPU p50 us"], r["CPU p99 us"], r)
            # the total is the objects' sum: their mean times their count
            self.assertAlmostEqual(r["CPU s"] * 1e6, r["CPU per object us"] * r["objects"],
                                   delta=0.01 * r["CPU s"] * 1e6 + 1)
        state = table(recs, "dra: the feed's state after the relist")
        self.assertEqual(state, [
            {"nodes": n, "slices": n, "devices": 4 * n, "claims": 3 * n, "charged": 3 * n,
             "unresolved": 0, "ledger claims": 3 * n, "ledger claim MiB": 3 * n * 2048,
             "fed MiB": 3 * n * 2048, "as fed": "yes"} for n in (20, 50)])
        notes = [json.loads(line)["note"] for line in out.splitlines() if '"note"' in line]
        self.assertTrue(any(n.startswith("machine: nproc=") for n in notes), notes)
        self.assertIn("4 GPUs of 16 GiB a node, 3 claims of 2048 MiB a node", notes[-1])

    def test_no_claims_leaves_the_ledger_empty(self):
        rc, out, err = bench("--nodes", "10", "--claims", "0", "--json")
        self.assertEqual(rc, 0, err)
        recs = tables(out)
        rows = {r["phase"]: r for r in table(recs, "dra: the DRA feed's CPU time")}
        self.assertEqual(rows["claim"]["objects"], 0)
        self.assertEqual(rows["relist"]["objects"], 10)
        state = table(recs, "dra: the feed's state after the relist")
        self.assertEqual((state[0]["devices"], state[0]["charged"], state[0]["ledger claim MiB"]),
                         (80, 0, 0))

    def test_bad_options_are_refused(self):
        rc, _, err = bench("--claims", "33", "--gpus", "4")
        self.assertEqual(rc, 2)
        self.assertIn("--claims 33: at most 32 on 4 GPUs", err)
        rc, _, err = bench("--gpus", "17")
        self.assertEqual(rc, 2)
        self.assertIn('invalid --gpus "17": accepted 1..16', err)
        rc, _, err = bench("--frobnicate")
        self.assertEqual(rc, 2)
        self.assertIn("usage: gpushare-bench dra", err)


if __name__ == "__main__":
    unittest.main()
