"""gpushare-extender against the test kube-apiserver (issue 3): binding with
annotations, restart recovery, unit changes, deletions, apiserver outages and
leader election — the real binary, over the real wire format. The cases are
test/lib/live_cases.py's LiveCluster (test/k8s/test_real_fidelity.py runs
the fault-free ones against the real kube-apiserver)."""
import unittest

from live_cases import LiveCluster  # noqa: F401  (the cases, run here)

if __name__ == "__main__":
    unittest.main()
