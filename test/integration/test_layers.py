"""The layer guard (docs/architecture.md, "Layers"): dependencies point one
way, server → service (sched) → framework → plugins → core → util, with the
codecs (api), configuration (config) and apiserver client (k8s) beside the
server. CMake links each layer only to those below it, but include paths
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
    "server": {"util", "api", "config", "k8s"},
    "main": {"util", "api", "config", "k8s", "server"},
    # the C side of the scheduling-framework plugin's cgo shim (src/shim/): a
    # front end beside the extender, feeding the service as its sink does
    "shim": {"util", "api", "config", "server"},
    # what node programs read from the machine (NVML through dlopen): beside
    # the service, for gpushare-topo and the node agent
    "node": {"util", "core"},
    # gpushare-node's decisions (src/agent/): the annotation codec and the
    # core's types; the device-plugin plumbing (plugins/node/) is Go. It
    # reads the node's GPUs and their health through the node layer's NVML
    # reader (gs_agent_inventory_nvml): a node program, as gpushare-topo
    "agent": {"util", "core", "api", "node"},
}
# public headers (include/gpushare/) a layer may include: util only the
# error codes; nothing below the service its header
PUBLIC_LIMITS = {
    "util": {"err.h", "alloc.h"},
}
SERVICE_USERS = {"sched", "server", "main", "shim"}
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
                                continue
                            if m.group(1) == "<":
                                continue  # libc, jansson, curl, ...
                            owner = owners.get(name) or owners.get(os.path.basename(name))
                            if owner is None or owner == me:
                                continue
                            if owner not in ALLOWED[me]:
                                problems.append(f"{where} ({me} may not include a {owner} header)")
        self.assertEqual(problems, [])

    def test_the_guard_catches_an_upward_include(self):
        # the rule itself, on a made-up line: core including the server
        owners = header_owner()
        self.assertEqual(owners["server.h"], "server")
        self.assertNotIn(owners["server.h"], ALLOWED["core"])
        self.assertEqual(owners["framework.h"], "framework")
        self.assertNotIn(owners["framework.h"], ALLOWED["server"])
        self.assertEqual(owners["gang/gang.h"], "plugins")
        self.assertNotIn("plugins", ALLOWED["server"])


if __name__ == "__main__":
    unittest.main()
