"""The Python test tiers stand on test/lib alone (issue 30): test/integration,
test/apiserver and test/k8s import from their own folder, from test/lib
(on PYTHONPATH: test/CMakeLists.txt) and from installed packages, never
from another tier's folder, and none puts another tier's folder on
sys.path; test/lib imports no tier."""
import ast
import os
import unittest

from gsutil import SOURCE

TEST = os.path.join(SOURCE, "test")
TIERS = ("integration", "apiserver", "k8s")
LIB = "lib"


def modules(folder):
    d = os.path.join(TEST, folder)
    return {f[:-3] for f in os.listdir(d) if f.endswith(".py")}


def imported(tree):
    """(line, top-level module name) of every import statement."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                yield n.lineno, a.name.split(".")[0]
        elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
            yield n.lineno, n.module.split(".")[0]


def path_edits(tree):
    """(line, string constants) of every sys.path.insert/append call."""
    for n in ast.walk(tree):
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr in ("insert", "append", "extend")
                and ast.unparse(n.func.value) == "sys.path"):
            yield n.lineno, [c.value for c in ast.walk(n) if isinstance(c, ast.Constant)
                             and isinstance(c.value, str)]


def violations(folder, name, source, mods):
    """What a file of folder ("integration", ..., "lib") does wrong: imports
    a module of another tier, or puts another tier's folder on sys.path.
    mods: folder -> its module names."""
    out = []
    tree = ast.parse(source, name)
    own = mods[folder] | (mods[LIB] if folder != LIB else set())
    for line, mod in imported(tree):
        if mod in own:
            continue
        for other in TIERS:
            if other != folder and mod in mods[other]:
                out.append(f"{folder}/{name}:{line}: imports {mod} from test/{other}")
    for line, strings in path_edits(tree):
        for other in TIERS:
            if other != folder and other in strings:
                out.append(f"{folder}/{name}:{line}: puts test/{other} on sys.path")
    return out


class PythonTiers(unittest.TestCase):
    def setUp(self):
        self.mods = {f: modules(f) for f in TIERS + (LIB,)}

    def test_no_tier_imports_another(self):
        problems = []
        for folder in TIERS + (LIB,):
            for name in sorted(os.listdir(os.path.join(TEST, folder))):
                if name.endswith(".py"):
                    with open(os.path.join(TEST, folder, name)) as f:
                        problems += violations(folder, name, f.read(), self.mods)
        self.assertEqual(problems, [])

    def test_the_shared_helpers_live_in_lib_only(self):
        for name in ("gsutil", "kuberest", "kube_apiserver", "live_cases"):
            self.assertIn(name, self.mods[LIB])
            for tier in TIERS:
                self.assertNotIn(name, self.mods[tier], f"test/{tier}/{name}.py shadows test/lib's")

    def test_the_guard_sees_what_it_forbids(self):
        """The check itself: the two ways tiers used to reach each other."""
        bad = ("import os, sys\n"
               "sys.path.insert(0, os.path.join(SOURCE, 'test', 'integration'))\n"
               "import test_live_cluster as live\n"
               "from kcluster import wait_for\n"
               "import gsutil\n")
        self.assertEqual(violations("apiserver", "x.py", bad, self.mods), [
            "apiserver/x.py:3: imports test_live_cluster from test/integration",
            "apiserver/x.py:4: imports kcluster from test/k8s",
            "apiserver/x.py:2: puts test/integration on sys.path"])
        self.assertEqual(violations("lib", "y.py", "import realcase\n", self.mods),
                         ["lib/y.py:1: imports realcase from test/k8s"])
        self.assertEqual(violations("k8s", "z.py", "import kcluster\nimport kuberest\n", self.mods), [])


if __name__ == "__main__":
    unittest.main()
