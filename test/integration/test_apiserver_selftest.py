#!/usr/bin/env python3
"""Runs the test kube-apiserver's self-tests (test/apiserver/test_kube_apiserver*.py) under ctest.

ctest runs `python3 -m unittest -v test_apiserver_selftest` in test/integration with GS_SOURCE_DIR set.
"""

import os
import sys

_SRC = os.environ.get("GS_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_APISERVER_DIR = os.path.join(_SRC, "test", "apiserver")
if _APISERVER_DIR not in sys.path:
    sys.path.insert(0, _APISERVER_DIR)

from test_kube_apiserver import *  # noqa: F401,F403,E402  (the TestCase classes)
from test_kube_apiserver_writes import *  # noqa: F401,F403,E402
from test_kube_apiserver_server import *  # noqa: F401,F403,E402

if __name__ == "__main__":
    import unittest
    unittest.main()
