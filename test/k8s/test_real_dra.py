"""Issue 33 item 1 in the extender form (gpushare-extender beside
kube-scheduler): the cases of dracase.py, and the extender's calls to
resource.k8s.io checked against deploy/rbac.yaml."""
import unittest

import dracase
from realcase import Env, LeastPrivilege, RealCase, audit_problems


def setUpModule():
    Env.up(unit="1GiB", form="extender")


def tearDownModule():
    Env.down()


class Dra(dracase.DraCases):
    pass


class ZzLeastPrivilege(LeastPrivilege, RealCase):

    def test_the_extender_lists_and_watches_slices_and_claims(self):
        problems, seen = audit_problems(self.cp)
        self.assertEqual(problems, [])
        verbs = {(k[1], k[2], k[3]) for k in seen}
        for res in ("resourceslices", "resourceclaims"):
            for verb in ("list", "watch"):
                self.assertIn(("resource.k8s.io", res, verb), verbs)


if __name__ == "__main__":
    unittest.main()
