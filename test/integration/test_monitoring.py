"""deploy/monitoring/ (issue 16 item 5, docs/monitoring.md), tested with
Debian's Prometheus: the rules pass `promtool check rules` and the unit
tests of every alert (`promtool test rules`), the Operator's PrometheusRule
holds the same groups, the ServiceMonitor selects the shipped Service; and a
real Prometheus scraping a running extender (against the test apiserver)
answers every query of the Grafana dashboard with series.

Needs promtool and prometheus (Debian package prometheus, installed by
tools/dev.sh setup); without them the tests fail, they never skip."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest
import urllib.parse
import urllib.request

import yaml

from gsutil import SOURCE, configmap, free_port, http_status, node, pod, wait_until
from live_cases import Ext, FakeApiServer, kubeconfig
from gsutil import DGX1_LINKS

MON = os.path.join(SOURCE, "deploy", "monitoring")
TESTS = os.path.join(SOURCE, "test", "monitoring")


def tool(name):
    path = shutil.which(name)
    if path is None:
        raise AssertionError(f"{name} is missing: install Debian's prometheus package "
                             "(tools/dev.sh setup)")
    return path


def load(name):
    with open(os.path.join(MON, name)) as f:
        return yaml.safe_load(f)


class Rules(unittest.TestCase):
    def test_promtool_checks_the_rules(self):
        r = subprocess.run([tool("promtool"), "check", "rules", os.path.join(MON, "gpushare-rules.yaml")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("SUCCESS: 6 rules found", r.stdout)

    def test_every_alert_has_unit_tests_that_pass(self):
        r = subprocess.run([tool("promtool"), "test", "rules", "rules_test.yaml"], cwd=TESTS,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(TESTS, "rules_test.yaml")) as f:
            tested = {t["alertname"] for case in yaml.safe_load(f)["tests"]
                      for t in case.get("alert_rule_test", [])}
        alerts = {r["alert"] for g in load("gpushare-rules.yaml")["groups"] for r in g["rules"]}
        self.assertEqual(tested, alerts)
        self.assertEqual(alerts, {"GpushareExtenderDown", "GpushareNoLeader", "GpushareBindErrors",
                                  "GpushareGangTimeouts", "GpusharePodsPendingTooLong",
                                  "GpushareConfigInvalid"})

    def test_the_operator_objects_match(self):
        rule = load("prometheusrule.yaml")
        self.assertEqual(rule["kind"], "PrometheusRule")
        self.assertEqual(rule["spec"], load("gpushare-rules.yaml"))
        sm = load("servicemonitor.yaml")
        with open(os.path.join(SOURCE, "deploy", "service.yaml")) as f:
            svc = yaml.safe_load(f)
        for k, v in sm["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(svc["metadata"]["labels"].get(k), v)
        self.assertIn(sm["spec"]["endpoints"][0]["port"], [p["name"] for p in svc["spec"]["ports"]])
        self.assertEqual(svc["metadata"]["labels"][sm["spec"]["jobLabel"]], "gpushare-extender")


class ScrapedByPrometheus(unittest.TestCase):
    """A real Prometheus, scraping every second an extender that has served
    filter and bind against the test apiserver; every dashboard query (its
    variables set to what Grafana would send) answers with series."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.procs, self.logs = [], []
        ann = {"gpushare.io/topology": json.dumps({"links": DGX1_LINKS})}
        self.server = FakeApiServer(state=[configmap("1GiB"), node("gpu-a", "share", gpus=2, units=32),
                                           node("topo", "topology", whole=8, annotations=ann),
                                           pod("p1", units=4), pod("w1", whole=2)],
                                    token="test-token")
        self.server.start()
        self.ext = Ext(kubeconfig(self.tmp.name, self.server.url), self.tmp.name)
        self.ext.wait_ready()

    def tearDown(self):
        for p in self.procs:
            p.terminate()
            p.wait(timeout=30)
        for f in self.logs:
            f.close()
        self.ext.kill()
        self.server.stop()
        self.tmp.cleanup()

    def prometheus(self):
        port = free_port()
        cfg = os.path.join(self.tmp.name, "prometheus.yml")
        with open(cfg, "w") as f:
            yaml.safe_dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                            "rule_files": [os.path.join(MON, "gpushare-rules.yaml")],
                            "scrape_configs": [{"job_name": "gpushare-extender",
                                                "static_configs": [{"targets": [f"127.0.0.1:{self.ext.port}"]}]}]},
                           f)
        log = open(os.path.join(self.tmp.name, "prometheus.log"), "w")
        self.logs.append(log)
        self.procs.append(subprocess.Popen(
            [tool("prometheus"), f"--config.file={cfg}", f"--storage.tsdb.path={self.tmp.name}/tsdb",
             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT))
        return f"http://127.0.0.1:{port}"

    def query(self, base, expr):
        q = urllib.parse.urlencode({"query": expr})
        st, body = http_status(base, "/api/v1/query?" + q, timeout=10)
        if st != 200:
            return None
        return json.loads(body)["data"]["result"]

    def test_every_dashboard_query_returns_series(self):
        srv, ext = self.server, self.ext
        self.assertEqual(ext.bind(srv.get("pods", "default", "p1"), "gpu-a"), {"Error": ""})
        self.assertEqual(ext.bind(srv.get("pods", "default", "w1"), "topo"), {"Error": ""})
        ext.post("filter", {"Pod": pod("big", units=40), "NodeNames": ["gpu-a", "ghost"]})
        base = self.prometheus()
        with open(os.path.join(MON, "gpushare-dashboard.json")) as f:
            dash = json.load(f)
        exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
        self.assertGreaterEqual(len(exprs), 15)
        grafana = {"$job": "gpushare-extender", "$node": ".*", "$__rate_interval": "30s"}

        def expand(e):
            for k, v in grafana.items():
                e = e.replace(k, v)
            return e
        wait_until(lambda: self.query(base, 'up{job="gpushare-extender"} == 1'), 60,
                   "Prometheus to scrape the extender", interval=0.5)
        missing = {}

        def all_answer():
            missing.clear()
            for e in exprs:
                res = self.query(base, expand(e))
                if not res:
                    missing[e] = res
            return not missing
        try:
            wait_until(all_answer, 90, "every dashboard query to return series", interval=1)
        except AssertionError:
            self.fail(f"queries without series: {sorted(missing)}")
        # and the values are the ledger's
        used = self.query(base, 'sum(gpushare_gpu_memory_used_mib{job="gpushare-extender"})')
        self.assertEqual(float(used[0]["value"][1]), 4 * 1024)
        owned = self.query(base, 'sum(gpushare_gpu_owned{job="gpushare-extender"})')
        self.assertEqual(float(owned[0]["value"][1]), 2)
        rej = self.query(base, 'gpushare_filter_rejections_total{job="gpushare-extender"}')
        self.assertEqual({r["metric"]["reason"] for r in rej}, {"insufficient_gpu_memory", "node_unknown"})
        # the rules load in a real Prometheus too, and none fires here
        rules = json.loads(http_status(base, "/api/v1/rules")[1])["data"]["groups"]
        self.assertEqual(len(rules[0]["rules"]), 6)
        self.assertEqual([r["name"] for r in rules[0]["rules"] if r["state"] == "firing"], [])


if __name__ == "__main__":
    unittest.main()
