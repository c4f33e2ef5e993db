"""Container images for the real node, built here: no registry is reachable.

Each image is `FROM scratch` with one static binary from a Debian package,
built with buildah (vfs storage in a temporary directory, no container is run,
so no isolation is needed) and written as an OCI archive that `ctr images
import` reads. Cached under build/k8s/images/: an image is rebuilt only when
its binary changes (a stamp of the binary's SHA-256 and the image's recipe).

    busybox  gpushare.local/busybox:static    /bin/busybox of busybox-static;
             every applet is reachable as /bin/<applet> (sh, cat, env, ...)
    pause    gpushare.local/pause:catatonit   catatonit -P of Debian's catatonit
             (what podman uses as its pause process): the pod sandbox, set as
             containerd's sandbox_image so nothing is ever pulled
    gpushare gpushare.local/gpushare-extender:dev   gpushare_recipe(): the
             extender of a build with the libraries ldd names for it
    deploy-* deploy/'s three images under the names its manifests give them
             (registry.example.com/gpushare/...): gpushare_recipe() with the
             binaries of each deploy/Dockerfile target (test_real_deploy.py)
"""
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile

from kbase import BUILD, k8s_bin_dir

BUSYBOX = "gpushare.local/busybox:static"
PAUSE = "gpushare.local/pause:catatonit"
GPUSHARE = "gpushare.local/gpushare-extender:dev"

# name -> (reference, [(host file, path in the image)], entrypoint, cmd, symlinks)
_BUSYBOX_APPLETS = ("sh", "cat", "env", "ls", "sleep", "echo", "true", "false", "wget", "nc",
                    "test", "grep", "mount", "ps", "id", "hostname")
RECIPES = {
    "busybox": (BUSYBOX, [("/bin/busybox", "/bin/busybox")], None, ["/bin/sh"],
                [(f"/bin/{a}", "busybox") for a in _BUSYBOX_APPLETS]),
    "pause": (PAUSE, [("/usr/bin/catatonit", "/catatonit")], ["/catatonit", "-P"], None, []),
}


def _sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _buildah(storage, *args):
    cmd = ["buildah", "--root", os.path.join(storage, "root"), "--runroot",
           os.path.join(storage, "run"), "--storage-driver", "vfs", *args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r.stdout.strip()


def gpushare_recipe(build_dir=None, binaries=("gpushare-extender",), ref=GPUSHARE, user=None):
    """gpushare's own image (issue 31 item 4), FROM scratch: the binaries of
    a build (build_dir/src, tools/..., and gpushare-scheduler and
    gpushare-node of k8s_bin_dir) with the shared libraries ldd names for
    them and the dynamic loader, at their paths on this machine; the first
    binary is the entrypoint, as in deploy/Dockerfile's targets. ref: the
    image's name (deploy/'s, so that its manifests run unchanged); user: the
    image's USER ("65532:65532"), as the Dockerfile sets it."""
    build_dir = build_dir or BUILD
    paths = {"gpushare-extender": os.path.join(build_dir, "src", "gpushare-extender"),
             "gpushare-inspect": os.path.join(build_dir, "tools", "inspect", "gpushare-inspect"),
             "gpushare-topo": os.path.join(build_dir, "tools", "topo", "gpushare-topo"),
             "gpushare-scheduler": os.path.join(k8s_bin_dir(), "gpushare-scheduler"),
             "gpushare-node": os.path.join(k8s_bin_dir(), "gpushare-node")}
    files, libs = [], set()
    for b in binaries:
        files.append((paths[b], "/usr/local/bin/" + b))
        out = subprocess.run(["ldd", paths[b]], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            # "libx.so => /lib/.../libx.so (0x..)" or "/lib64/ld-linux-x86-64.so.2 (0x..)"
            lib = parts[2] if "=>" in parts and len(parts) > 3 else parts[0]
            if lib.startswith("/"):
                libs.add(lib)
    files += [(os.path.realpath(lib), lib) for lib in sorted(libs)]
    recipe = (ref, files, ["/usr/local/bin/" + binaries[0]], None, [])
    return recipe + (user,) if user else recipe


def build_image(name, outdir=None, recipe=None):
    """The OCI archive of image `name` (a key of RECIPES, or recipe given),
    built if missing or stale."""
    recipe = recipe or RECIPES[name]
    ref, files, entrypoint, cmd, links = recipe[:5]
    user = recipe[5] if len(recipe) > 5 else None
    outdir = outdir or os.path.join(BUILD, "k8s", "images")
    os.makedirs(outdir, exist_ok=True)
    for src, _dst in files:
        if not os.path.exists(src):
            raise FileNotFoundError(f"{src}: missing; tools/dev.sh setup installs it "
                                    "(busybox-static, catatonit)")
    stamp = hashlib.sha256(json.dumps([recipe, [_sha(s) for s, _ in files]]).encode()).hexdigest()
    tar = os.path.join(outdir, name + ".oci.tar")
    stampfile = tar + ".stamp"
    try:
        with open(stampfile) as f:
            if f.read().strip() == stamp and os.path.exists(tar):
                return tar
    except FileNotFoundError:
        pass
    storage = tempfile.mkdtemp(prefix="gs-buildah-")
    try:
        c = _buildah(storage, "from", "--name", f"gs-{name}-{os.getpid()}", "scratch")
        for src, dst in files:
            _buildah(storage, "copy", c, src, dst)
        if links:
            # the applets as symlinks: a tar archive, which buildah add unpacks
            lt = os.path.join(storage, "links.tar")
            with tarfile.open(lt, "w") as t:
                for path, target in links:
                    info = tarfile.TarInfo(path.lstrip("/"))
                    info.type, info.linkname = tarfile.SYMTYPE, target
                    t.addfile(info)
            _buildah(storage, "add", c, lt, "/")
        cfg = ["config", "--env", "PATH=/bin"]
        if entrypoint:
            cfg += ["--entrypoint", json.dumps(entrypoint)]
        if cmd:
            cfg += ["--cmd", json.dumps(cmd)]
        if user:
            cfg += ["--user", user]
        _buildah(storage, *cfg, c)
        tmp = f"{tar}.{os.getpid()}.tmp"
        _buildah(storage, "commit", "--format", "oci", c, f"oci-archive:{tmp}:{ref}")
        os.replace(tmp, tar)
        with open(stampfile, "w") as f:
            f.write(stamp + "\n")
    finally:
        shutil.rmtree(storage, ignore_errors=True)
    return tar


def import_image(ctr_cmd, tar):
    """Imports an OCI archive into containerd's k8s.io namespace (the CRI's),
    unpacked for the overlayfs snapshotter. ctr_cmd: ctr with its --address."""
    r = subprocess.run([*ctr_cmd, "-n", "k8s.io", "images", "import", "--snapshotter", "overlayfs", tar],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"ctr images import {tar} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r.stdout
