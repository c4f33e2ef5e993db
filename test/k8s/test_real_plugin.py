"""The in-process plugin (issue 15, docs/plugin.md): the seed scenarios and
refusals of test_real_scenarios.py, unchanged in what they assert, with
gpushare-scheduler (kube-scheduler v1.37.2 + the GpuShare plugin over the C
core) as the cluster's scheduler and no extender. Unit 128MiB."""
import unittest

import test_real_scenarios as scenarios
from realcase import Env


def setUpModule():
    Env.up(unit="128MiB", form="plugin")


def tearDownModule():
    Env.down()


class PluginSeedScenarios(scenarios.SeedScenarios):
    """Every seed scenario through the plugin."""


class PluginRefusals(scenarios.Refusals):
    """Every refusal through the plugin: the reasons reach the pod's event."""


if __name__ == "__main__":
    unittest.main()
