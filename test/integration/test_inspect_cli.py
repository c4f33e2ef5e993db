"""gpushare-inspect end to end: the real binary against a canned extender.

A python http.server on 127.0.0.1:0 answers /debug/ledger with the golden
inputs of test/data/inspect; the output must equal the golden text files
the unit tests use. Env: GS_BUILD_DIR (binary at tools/inspect/), optional
GS_SOURCE_DIR.
"""
import http.server
import json
import os
import socket
import subprocess
import threading
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("GS_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
BUILD = os.environ.get("GS_BUILD_DIR", os.path.join(SOURCE, "build"))
BINARY = os.path.join(BUILD, "tools", "inspect", "gpushare-inspect")
DATA = os.path.join(SOURCE, "test", "data", "inspect")


def data(name):
    with open(os.path.join(DATA, name), "rb") as f:
        return f.read()


class Extender(http.server.ThreadingHTTPServer):
    """Answers GET requests from a table: path+query → (status, body)."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.routes = {}
        self.requests = []
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]

    def stop(self):
        self.shutdown()
        self.server_close()
        self.thread.join()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.requests.append(self.path)
        status, body, headers = self.server.routes.get(
            self.path, (404, b'{"Error":"not found"}', {}))
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def run(*args):
    p = subprocess.run([BINARY] + list(args), capture_output=True, timeout=60)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


class InspectCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(BINARY, os.X_OK):
            raise unittest.SkipTest("no binary at %s (set GS_BUILD_DIR)" % BINARY)

    def setUp(self):
        self.ext = Extender()
        self.ext.routes["/debug/ledger"] = (200, data("cluster_1gib.json"), {})

    def tearDown(self):
        self.ext.stop()

    def assert_ok(self, result, want_stdout):
        rc, out, err = result
        self.assertEqual(err, "")
        self.assertEqual(rc, 0)
        self.assertEqual(out, want_stdout)

    def assert_fails(self, result, want_rc, want_stderr):
        rc, out, err = result
        self.assertEqual(out, "")
        self.assertEqual(err, want_stderr)
        self.assertEqual(rc, want_rc)

    # ---- views ---------------------------------------------------------------

    def test_table(self):
        self.assert_ok(run("--url", self.ext.url), data("cluster_1gib.txt").decode())
        self.assertEqual(self.ext.requests, ["/debug/ledger"])

    def test_trailing_slashes_in_url(self):
        self.assert_ok(run("--url", self.ext.url + "//"), data("cluster_1gib.txt").decode())
        self.assertEqual(self.ext.requests, ["/debug/ledger"])

    def test_details(self):
        want = data("cluster_1gib_details.txt").decode()
        self.assert_ok(run("--url", self.ext.url, "-d"), want)
        self.assert_ok(run("--details", "--url=" + self.ext.url), want)

    def test_pending_unit_note(self):
        self.ext.routes["/debug/ledger"] = (200, data("seed_128mib_pending.json"), {})
        self.assert_ok(run("--url", self.ext.url), data("seed_128mib_pending.txt").decode())

    def test_json(self):
        source = data("cluster_1gib.json")
        rc, out, err = run("--url", self.ext.url, "--json")
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(json.loads(out), json.loads(source))
        lines = out.splitlines()
        self.assertEqual(lines[0], "{")
        self.assertEqual(lines[1], '  "unit": "1GiB",')  # 2-space indent, key order kept
        self.assertTrue(out.endswith("}\n"))
        # --json wins over -d
        self.assertEqual(run("--url", self.ext.url, "--json", "-d")[1], out)

    def test_node_argument(self):
        self.ext.routes["/debug/ledger?node=gpu-b"] = (200, data("node_gpu_b.json"), {})
        self.assert_ok(run("--url", self.ext.url, "gpu-b"), data("node_gpu_b.txt").decode())
        # options may follow the node
        rc, out, _ = run("gpu-b", "--url", self.ext.url, "--json")
        self.assertEqual(rc, 0)
        self.assertEqual([n["name"] for n in json.loads(out)["nodes"]], ["gpu-b"])
        self.assertEqual(self.ext.requests, ["/debug/ledger?node=gpu-b"] * 2)

    # ---- errors --------------------------------------------------------------

    def test_unknown_node(self):
        self.ext.routes["/debug/ledger?node=gpu-x"] = (
            404, b'{"error":"node gpu-x is unknown to gpushare"}', {})
        self.assert_fails(run("--url", self.ext.url, "gpu-x"), 1,
                          'gpushare-inspect: node "gpu-x" is unknown to gpushare\n')

    def test_node_name_is_escaped(self):
        self.ext.routes["/debug/ledger?node=a%20b%2Fc%26d"] = (
            404, b'{"error":"node a b/c&d is unknown to gpushare"}', {})
        self.assert_fails(run("--url", self.ext.url, "a b/c&d"), 1,
                          'gpushare-inspect: node "a b/c&d" is unknown to gpushare\n')
        query = urllib.parse.urlsplit(self.ext.requests[0]).query
        self.assertEqual(urllib.parse.parse_qs(query), {"node": ["a b/c&d"]})

    def test_wrong_base_url(self):
        url = self.ext.url + "/not-the-extender"
        self.assert_fails(run("--url", url), 1,
                          "gpushare-inspect: the extender at %s answered HTTP 404: not found"
                          " (is --url the extender's base URL?)\n" % url)

    def test_error_status(self):
        self.ext.routes["/debug/ledger"] = (503, b'{"Error":"not leader"}', {})
        self.assert_fails(run("--url", self.ext.url), 1,
                          "gpushare-inspect: the extender at %s answered HTTP 503: not leader\n"
                          % self.ext.url)
        self.ext.routes["/debug/ledger"] = (500, b"", {})
        self.assert_fails(run("--url", self.ext.url), 1,
                          "gpushare-inspect: the extender at %s answered HTTP 500\n"
                          % self.ext.url)

    def test_unreachable(self):
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        url = "http://127.0.0.1:%d" % port
        self.assert_fails(run("--url", url + "/"), 1,
                          "gpushare-inspect: cannot reach the extender at %s: Couldn't connect"
                          " to server (is gpushare-extender running? use --url)\n" % url)

    def test_not_json(self):
        self.ext.routes["/debug/ledger"] = (200, b"{nope", {})
        rc, out, err = run("--url", self.ext.url)
        self.assertEqual((rc, out), (1, ""))
        self.assertTrue(err.startswith("gpushare-inspect: the answer from %s is not valid JSON: "
                                       % self.ext.url), err)

    def test_wrong_types(self):
        body = json.loads(data("cluster_1gib.json"))
        body["nodes"][1]["gpus"][2]["usedMiB"] = "0"
        self.ext.routes["/debug/ledger"] = (200, json.dumps(body).encode(), {})
        self.assert_fails(run("--url", self.ext.url), 1,
                          "gpushare-inspect: unexpected answer from %s: nodes[1].gpus[2].usedMiB:"
                          " expected a non-negative integer, got a string\n" % self.ext.url)
        # --json shows whatever came, so the operator can look at it
        self.assertEqual(run("--url", self.ext.url, "--json")[0], 0)

    def test_answer_size_cap(self):
        self.ext.routes["/debug/ledger"] = (200, b"", {"Content-Length": str(300 << 20)})
        self.assert_fails(run("--url", self.ext.url), 1,
                          "gpushare-inspect: the answer from %s exceeds the 256 MiB limit\n"
                          % self.ext.url)

    # ---- usage ---------------------------------------------------------------

    def test_usage_errors(self):
        hint = "\nTry 'gpushare-inspect --help' for more information.\n"
        cases = [
            (["--bogus"], "gpushare-inspect: unknown option '--bogus'"),
            (["-x"], "gpushare-inspect: unknown option '-x'"),
            (["--url"], "gpushare-inspect: option '--url' needs a value"),
            (["--json=yes"], "gpushare-inspect: option '--json=yes' takes no value"),
            (["a", "b"], "gpushare-inspect: unexpected argument 'b' (give at most one NODE)"),
            ([""], "gpushare-inspect: NODE must not be empty"),
            (["--url", "127.0.0.1:32766"],
             "gpushare-inspect: --url must be http://HOST[:PORT] or https://HOST[:PORT],"
             " not '127.0.0.1:32766'"),
        ]
        for args, msg in cases:
            with self.subTest(args=args):
                self.assert_fails(run(*args), 2, msg + hint)
        self.assertEqual(self.ext.requests, [])

    def test_help_and_version(self):
        rc, out, err = run("--help")
        self.assertEqual((rc, err), (0, ""))
        self.assertTrue(out.startswith(
            "Usage: gpushare-inspect [--url URL] [-d|--details] [--json] [NODE]\n"))
        self.assertIn("http://127.0.0.1:32766", out)
        self.assertIn("rounded up", out)
        rc, out, err = run("--version")
        self.assertEqual((rc, err), (0, ""))
        self.assertRegex(out, r"^gpushare-inspect \d+\.\d+\.\d+\n$")


if __name__ == "__main__":
    unittest.main()
