"""Issue 15: the lifecycle modules of the real control-plane suite with
gpushare-scheduler (the in-process plugin) as the cluster's scheduler —
gangs (test_real_gangs), restart mid-binds (test_real_lifecycle) and
preemption (test_real_preempt), unchanged in what they assert. Where "the
extender" is started, killed or restarted, gpushare-scheduler is
(realcase.OwnExtenders). The tests of what the forms do differently by
design are replaced by test_real_plugin.py's: a gang past its timeout (the
plugin binds no member, Permit holds them), a node that fits by totals (the
plugin preempts there)."""
import re
import unittest

import test_real_gangs as gangs
import test_real_lifecycle as lifecycle
import test_real_preempt as preempt
from realcase import Env

SKIP = unittest.skip


def setUpModule():
    Env.up(unit="1GiB", form="plugin", config={"gangTimeoutSeconds": str(gangs.TIMEOUT_S)})
    Env.priority_classes(preempt.CLASSES)


def tearDownModule():
    Env.down()


class PluginGangs(gangs.Gangs):
    test_a_plan_not_bound_in_time_is_released_with_events = SKIP(
        "the plugin binds no member of an incomplete job: "
        "test_real_plugin.PluginOperations.test_a_gang_not_complete_in_time_is_released_with_events")(
        gangs.Gangs.test_a_plan_not_bound_in_time_is_released_with_events)


class PluginRestart(lifecycle.Lifecycle):
    """kill -9 of gpushare-scheduler while it binds, then a restart that
    rebuilds the ledger from the annotations exactly."""
    test_two_replicas_on_a_real_lease_standby_takes_over = SKIP(
        "the extender's Lease; gpushare-scheduler's is kube-scheduler's own leader election")(
        lifecycle.Lifecycle.test_two_replicas_on_a_real_lease_standby_takes_over)
    test_a_configmap_unit_change_shows_pending_unit = SKIP(
        "test_real_plugin.PluginOperations")(lifecycle.Lifecycle.test_a_configmap_unit_change_shows_pending_unit)
    test_every_replica_is_ready_and_the_leader_labels_its_pod = SKIP(
        "the extender's leader label; gpushare-scheduler is kube-scheduler's own leader election")(
        lifecycle.Lifecycle.test_every_replica_is_ready_and_the_leader_labels_its_pod)
    test_pods_created_while_the_extender_is_down_are_scheduled_soon_after = SKIP(
        "no extender to be down: the scheduler is the plugin")(
        lifecycle.Lifecycle.test_pods_created_while_the_extender_is_down_are_scheduled_soon_after)


class PluginPreemption(preempt.Preemption):
    def victims_line(self, pod, uids):
        """The plugin's `gpushare: preempted` lines for pod: (None, victims)."""
        victims = re.findall(rf'"gpushare: preempted" preemptor="{self.ns}/{pod}" '
                             rf'victim="{self.ns}/([^"]+)"', Env.ext.proc.tail(400000))
        return (None, victims) if victims else None

    test_the_extender_is_never_offered_a_node_that_fits_by_totals = SKIP(
        "the plugin preempts there: test_real_plugin.PluginOnly.test_preemption_where_the_extender_cannot")(
        preempt.Preemption.test_the_extender_is_never_offered_a_node_that_fits_by_totals)


class PluginBudgets(preempt.Budgets):
    def victims(self, pod, names):
        """The plugin's `gpushare: preempted` lines for pod: the victims
        its PostFilter ended (not DefaultPreemption's, which runs after it)."""
        return sorted(re.findall(rf'"gpushare: preempted" preemptor="{self.ns}/{pod}" '
                                 rf'victim="{self.ns}/([^"]+)"', Env.ext.proc.tail(400000)))

    def violations(self, pod, node):
        """The plugin's `gpushare: preempted` line: the count the core gave
        for the node it chose."""
        m = re.findall(rf'"gpushare: preempted" preemptor="{self.ns}/{pod}" victim="[^"]+" '
                       rf'node="{node}" pdbViolations=(\d+)', Env.ext.proc.tail(400000))
        return int(m[-1]) if m else None


if __name__ == "__main__":
    unittest.main()
