"""Issue 33 item 1 in the in-process form (gpushare-scheduler: kube-scheduler
with the GpuShare plugin, fed ResourceSlices and ResourceClaims by
kube-scheduler's own informers): the cases of dracase.py."""
import unittest

import dracase
from realcase import Env


def setUpModule():
    Env.up(unit="1GiB", form="plugin")


def tearDownModule():
    Env.down()


class PluginDra(dracase.DraCases):
    pass


if __name__ == "__main__":
    unittest.main()
