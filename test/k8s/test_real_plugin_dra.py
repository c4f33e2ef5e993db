"""Issue 33 item 1 in the in-process form (gpushare-scheduler: kube-scheduler
with the GpuShare plugin, fed ResourceSlices and ResourceClaims by
kube-scheduler's own informers): the cases of dracase.py. Here the claims
of gpushare's DeviceClass that a pod uses are placed by gpushare itself
(item 2, docs/dra.md), so the case where kube-scheduler's allocator
over-commits a GPU cannot happen: it is replaced below."""
import unittest

import dracase
from realcase import Env, metric, wait_for


def setUpModule():
    Env.up(unit="1GiB", form="plugin")


def tearDownModule():
    Env.down()


class PluginDra(dracase.DraCases):

    def test_kube_scheduler_allocator_beside_gpu_mem_pods_is_reported(self):
        """The extender's over-commit case, in gpushare-scheduler: a gpu-mem
        pod holds 12 of GPU 0's 16 GiB; a pod's claim of 8 GiB is placed by
        gpushare (not by kube-scheduler's allocator), which refuses it for
        memory; 4 GiB fits exactly. Nothing over-committed, ever."""
        self.gpu_mem_then_claim()
        self.wait_event("cp", "insufficient GPU memory")
        self.assertNotIn("allocation", self.k.get("resourceclaims", self.ns, "late").get("status") or {})
        self.claim("fits", "4Gi")
        self.claim_pod("cp2", "fits")
        self.wait_bound(2)
        wait_for(lambda: self.ledger_claims("dra-d") == {(0, "fits"): 4 * dracase.GIB}, 60,
                 "the claim in the ledger")
        self.assert_ledger_is_dra_truth()
        self.assertEqual(metric(Env.ext.metrics(), "gpushare_dra_problems",
                                reason="over_committed") or 0, 0)


if __name__ == "__main__":
    unittest.main()
