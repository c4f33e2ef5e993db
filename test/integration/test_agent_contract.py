"""docs/contract.md §9 (what gpushare-node gives a container and writes on
its pod) against the code that does it: the env keys and the pod
annotations src/agent/allocate.c sets (every set_str/set_u64 into "envs" or
"annotations", resolved through the #defines of src/agent/agent.h and
include/gpushare/annot.h) are exactly the keys of §9's two tables. A key
added to the code without the contract, or documented and never written,
fails here. Standard library only."""
import os
import re
import unittest

SOURCE = os.environ.get("GS_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))


def read(*path):
    with open(os.path.join(SOURCE, *path)) as f:
        return f.read()


def defines():
    out = {}
    for text in (read("src", "agent", "agent.h"), read("include", "gpushare", "annot.h")):
        out.update(re.findall(r'#define (GS_\w+) "([^"]*)"', text))
    return out


def written(target):
    """The keys allocate.c writes into the JSON object named target."""
    code, d = read("src", "agent", "allocate.c"), defines()
    names = set()
    for arg in re.findall(r"set_(?:str|u64)\(\s*%s,\s*([^,]+)," % target, code):
        # a conditional key (w->init ? A : B) writes both
        names.update(re.findall(r"\bGS_\w+", arg))
    missing = sorted(n for n in names if n not in d)
    if missing:
        raise AssertionError(f"allocate.c names keys with no string #define: {missing}")
    return {d[n] for n in names}


def section9_tables():
    """§9's tables: [first-column keys of table 1, of table 2]."""
    doc = read("docs", "contract.md")
    sec = doc[doc.index("## 9."):]
    tables, cur = [], None
    for line in sec.splitlines():
        if line.startswith("|"):
            if cur is None:
                cur = []
                tables.append(cur)
            cur.append(line)
        else:
            cur = None
    out = []
    for t in tables:
        keys = set()
        for row in t[2:]:  # header and |---| rule
            keys.update(re.findall(r"`([^`]+)`", row.split("|")[1]))
        out.append(keys)
    return out


class ContractSection9(unittest.TestCase):
    def test_env_keys(self):
        env, _ = section9_tables()
        self.assertEqual(env, written("envs"))

    def test_pod_annotations(self):
        _, anns = section9_tables()
        self.assertEqual(anns, written("anns"))
        self.assertIn("gpushare.io/allocated-containers", anns)
        self.assertIn("gpushare.io/allocated-init-containers", anns)

    def test_node_agent_doc_names_the_same_env(self):
        """docs/node-agent.md's table of what the container receives names
        the same keys as the contract."""
        doc = read("docs", "node-agent.md")
        sec = doc[doc.index("## What the container receives"):]
        sec = sec[:sec.index("\n## ", 1)]
        keys = set()
        for row in sec.splitlines():
            if row.startswith("| `"):
                keys.update(re.findall(r"`([A-Z_]+)`", row.split("|")[1]))
        self.assertEqual(keys, written("envs"))


if __name__ == "__main__":
    unittest.main()
