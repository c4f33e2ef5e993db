"""The layer guard (docs/architecture.md, "Layers"): dependencies point one
way, front ends (server, shim) → observation (observe) → service (sched) →
framework → plugins → core → util, with the codecs (api), configuration
(config) and apiserver client (k8s) beside them. The front ends reach the
core only through the service: they include no core header but the
service's (sched.h) and the public types it exports, and the shim links
only the observation layer, the service and the codecs, never the server. CMake links each layer only to those below it, but include paths
travel along PUBLIC links and every layer sees include/gpushare/; so this
test reads every #include of src/ and plugins/ and fails on one that points
up or sideways: util including a core header, a plugin including the
framework, the server naming a plugin, the core knowing the service."""
import os
import re
import unittest

from gsutil import SOURCE

# layer → the layers whose private headers it may include (besides its own)
ALLOWED = {
    "util": set(),
    "core": {"util"},
    "plugins": set(),  # plugins include only <gpushare/*.h> (and their own)
    "framework": {"util", "core", "plugins"},
    "sched": {"util", "framework", "plugins"},
    "api": {"util", "core"},
    "config": {"util", "api"},
    "k8s": {"util", "api", "config"},
    # what both front ends stand on: the feed, the views, the metrics
    "observe": {"util", "api", "config"},
    "server": {"util", "api", "config", "k8s", "observe"},
    "main": {"util", "api", "config", "k8s", "server"},
    # the C side of the scheduling-framework plugin's cgo shim (src/shim/): a
    # front end beside the extender, feeding the service through the same
    # observation layer
    "shim": {"util", "api", "config", "observe"},
    # what node programs read from the machine (NVML through dlopen): beside
    # the service, for gpushare-topo and the node agent
    "node": {"util", "core"},
    # gpushare-node's decisions (src/agent/): the annotation codec and the
    # core's types; the device-plugin plumbing (plugins/node/) is Go. It
    # reads the node's GPUs and their health through the node layer's NVML
    # reader (gs_agent_inventory_nvml): a node program, as gpushare-topo
    "agent": {"util", "core", "api", "node"},
}
FRONT_ENDS = {"server", "shim"}
# the public headers a front end may include: the service's and the types it
# exports; never a core header (place.h, ledger.h, preempt.h, topo.h,
# plugin.h, annot.h): what the core decides reaches them through sched.h
FRONT_END_PUBLIC = {"sched.h", "types.h", "status.h", "err.h", "alloc.h", "version.h"}
# the libraries (CMake targets) the shim may link: the observation layer, the
# service and the codecs; what the service itself links comes with it
SHIM_LINKS = {"gs_observe", "gs_sched", "gs_api", "gs_config"}
# public headers (include/gpushare/) a layer may include: util only the
# error codes; nothing below the service its header
PUBLIC_LIMITS = {
    "util": {"err.h", "alloc.h"},
}
# the framework implements the service's steps that are one extension point
# under their sched.h names (struct gs_sched is one object, src/framework/
# framework.h): it includes the header it implements
SERVICE_USERS = {"framework", "sched", "observe", "server", "main", "shim"}
# the service's one-statement bodies that call another gs_ function, each
# with why it is not a forward to fold (no other is allowed: a step has one
# name and one body, from the front end to the plugins)
ADAPTERS = {
    # Reserve as front ends call it: gs_fw_reserve also tells gs_sched_bind
    # whether the call made the reservation; sched.h's signature is stable
    "gs_sched_reserve": "gs_fw_reserve",
    # the core's signature under the service's policy (a core function, not
    # a framework step)
    "gs_sched_signature": "gs_place_signature",
}


def service_functions():
    """Every gs_sched_* function defined in src/sched/ and src/framework/:
    (name, file, body without comments)."""
    out = []
    for layer in ("sched", "framework"):
        d = os.path.join(SOURCE, "src", layer)
        for f in sorted(os.listdir(d)):
            if not f.endswith(".c"):
                continue
            path = os.path.join(d, f)
            with open(path, encoding="utf-8") as fh:
                src = fh.read()
            for m in re.finditer(r"^[a-z][^\n;{}]*?\b(gs_sched_\w+)\(([^{};]*)\)\s*\{", src, re.M):
                i = j = m.end()
                depth = 1
                while depth:
                    depth += {"{": 1, "}": -1}.get(src[j], 0)
                    j += 1
                body = re.sub(r"/\*.*?\*/", "", src[i:j - 1], flags=re.S).strip()
                out.append((m.group(1), os.path.relpath(path, SOURCE), body))
    return out


def forwards(functions):
    """The functions whose body is one call to another gs_ function: name → callee."""
    found = {}
    for name, _path, body in functions:
        stmts = [x.strip() for x in body.split(";") if x.strip()]
        m = len(stmts) == 1 and re.match(r"(return\s+)?(\([^)]*\)\s*)?(gs_\w+)\(", stmts[0])
        if m:
            found[name] = m.group(3)
    return found
# the NVML reader (gpushare/nvml.h) loads a driver library: the node layer
# and the node agent that fills its inventory from it (src/agent: a node
# program like gpushare-topo), never the core or the scheduler's side
NVML_USERS = {"node", "agent"}


def layer_of(path):
    rel = os.path.relpath(path, SOURCE).split(os.sep)
    if rel[0] == "plugins":
        return "plugins"
    if rel[0] == "src" and len(rel) == 2:
        return "main"
    return rel[1]


def header_owner():
    """Private header → the layer that holds it, by file name and, under
    plugins/, also by its path there ("gang/gang.h")."""
    owners = {}
    for top in ("src", "plugins"):
        for dirpath, _dirs, files in os.walk(os.path.join(SOURCE, top)):
            for f in files:
                if f.endswith(".h"):
                    path = os.path.join(dirpath, f)
                    owners.setdefault(f, layer_of(path))
                    if top == "plugins" and layer_of(path) == "plugins":
                        owners[os.path.relpath(path, os.path.join(SOURCE, "plugins"))] = "plugins"
    return owners


def gs_layer_links():
    """Every gs_layer(<target> <dir> <deps>...) of src/: target → its gs_* deps."""
    links = {}
    for dirpath, _dirs, files in os.walk(os.path.join(SOURCE, "src")):
        if "CMakeLists.txt" not in files:
            continue
        with open(os.path.join(dirpath, "CMakeLists.txt"), encoding="utf-8") as f:
            for m in re.finditer(r"gs_layer\((gs_\w+)\s+\S+([^)]*)\)", f.read()):
                links[m.group(1)] = set(re.findall(r"\bgs_\w+", m.group(2)))
    return links


class Layers(unittest.TestCase):
    def test_no_include_points_up_or_sideways(self):
        owners = header_owner()
        problems = []
        for top in ("src", "plugins"):
            for dirpath, _dirs, files in os.walk(os.path.join(SOURCE, top)):
                for f in files:
                    if not f.endswith((".c", ".h")):
                        continue
                    path = os.path.join(dirpath, f)
                    me = layer_of(path)
                    with open(path, encoding="utf-8") as fh:
                        for n, line in enumerate(fh, 1):
                            m = re.match(r'\s*#\s*include\s*([<"])([^>"]+)[>"]', line)
                            if not m:
                                continue
                            name = m.group(2)
                            where = f"{os.path.relpath(path, SOURCE)}:{n}: {name}"
                            if name.startswith("gpushare/"):
                                h = name[len("gpushare/"):]
                                limit = PUBLIC_LIMITS.get(me)
                                if limit is not None and h not in limit:
                                    problems.append(f"{where} (a {me} file may include only {sorted(limit)})")
                                if h == "sched.h" and me not in SERVICE_USERS:
                                    problems.append(f"{where} (only the service and its front ends)")
                                if h == "nvml.h" and me not in NVML_USERS:
                                    problems.append(f"{where} (only the node layer and the node agent read NVML)")
                                if me in FRONT_ENDS and h not in FRONT_END_PUBLIC:
                                    problems.append(f"{where} (a front end reaches the core only "
                                                    f"through the service: {sorted(FRONT_END_PUBLIC)})")
                                continue
                            if m.group(1) == "<":
                                continue  # libc, jansson, curl, ...
                            owner = owners.get(name) or owners.get(os.path.basename(name))
                            if owner is None or owner == me:
                                continue
                            if owner not in ALLOWED[me]:
                                problems.append(f"{where} ({me} may not include a {owner} header)")
        self.assertEqual(problems, [])

    def test_the_shim_links_only_the_service_and_what_it_exports(self):
        links = gs_layer_links()
        self.assertIn("gs_shim", links)
        self.assertLessEqual(links["gs_shim"], SHIM_LINKS, "src/shim/CMakeLists.txt")
        self.assertNotIn("gs_server", links["gs_shim"])
        # the layer the shim shares with the server does not bring the server along
        self.assertLessEqual(links["gs_observe"], SHIM_LINKS - {"gs_observe"})
        self.assertIn("gs_observe", links["gs_server"])
        # and cgo links what CMake does: build.sh's archive list
        with open(os.path.join(SOURCE, "plugins", "scheduler", "build.sh"), encoding="utf-8") as f:
            archives = set(re.findall(r"lib(gs_\w+)\.a", f.read()))
        self.assertIn("gs_shim", archives)
        for bad in ("gs_server", "gs_k8s"):
            self.assertNotIn(bad, archives, "plugins/scheduler/build.sh")

    def test_each_service_step_is_implemented_once(self):
        functions = service_functions()
        defined = [name for name, _path, _body in functions]
        with open(os.path.join(SOURCE, "include", "gpushare", "sched.h"), encoding="utf-8") as f:
            declared = set(re.findall(r"\b(gs_sched_\w+)\(", f.read()))
        # every public name has one body, in the service's files
        self.assertEqual(sorted(n for n in declared if defined.count(n) != 1), [])
        # and no body is a one-line forward into the framework
        self.assertEqual(forwards(functions), ADAPTERS)

    def test_the_path_of_a_pod_names_files_that_are(self):
        # docs/architecture.md's one-page path: every file it names exists,
        # and every service or framework call it names is declared
        with open(os.path.join(SOURCE, "docs", "architecture.md"), encoding="utf-8") as f:
            doc = f.read()
        section = doc[doc.index("## The path of one pod"):doc.index("## Concurrency")]
        files = set(re.findall(r"`((?:src|plugins|include)/[\w./-]+\.(?:c|h|go))`", section))
        self.assertGreater(len(files), 30)
        self.assertEqual(sorted(f for f in files if not os.path.isfile(os.path.join(SOURCE, f))), [])
        headers = ""
        for h in ("include/gpushare/sched.h", "src/framework/framework.h", "src/shim/shim.h"):
            with open(os.path.join(SOURCE, h), encoding="utf-8") as f:
                headers += f.read()
        calls = set(re.findall(r"`(gs_(?:sched|fw|shim)_\w+)`", section))
        self.assertEqual(sorted(c for c in calls if not re.search(r"\b%s\(" % c, headers)), [])

    def test_the_forward_guard_catches_a_forward(self):
        made_up = [("gs_sched_filter", "src/sched/sched.c",
                    "return gs_fw_filter(s->fw, pod, nodes, n, now_ns, ret);"),
                   ("gs_sched_post_bind", "src/sched/sched.c", "gs_fw_post_bind(s->fw, uid);"),
                   ("gs_sched_bind", "src/sched/sched.c", "e = gs_fw_reserve(s, pod);\nreturn e;")]
        self.assertEqual(forwards(made_up), {"gs_sched_filter": "gs_fw_filter",
                                             "gs_sched_post_bind": "gs_fw_post_bind"})

    def test_the_guard_catches_an_upward_include(self):
        # the rule itself, on a made-up line: core including the server
        owners = header_owner()
        self.assertEqual(owners["server.h"], "server")
        self.assertNotIn(owners["server.h"], ALLOWED["core"])
        self.assertEqual(owners["framework.h"], "framework")
        self.assertNotIn(owners["framework.h"], ALLOWED["server"])
        self.assertEqual(owners["gang/gang.h"], "plugins")
        self.assertNotIn("plugins", ALLOWED["server"])
        # a front end naming the server's or a core header
        self.assertEqual(owners["server.h"], "server")
        self.assertNotIn("server", ALLOWED["shim"])
        for h in ("place.h", "ledger.h", "preempt.h"):
            self.assertTrue(os.path.exists(os.path.join(SOURCE, "include", "gpushare", h)))
            self.assertNotIn(h, FRONT_END_PUBLIC)


if __name__ == "__main__":
    unittest.main()
