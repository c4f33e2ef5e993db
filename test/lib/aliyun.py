"""Aliyun's gpushare device plugin, as ../shared/aliyun holds it: found
beside the checkout (or GS_SHARED_DIR), checked against its SHA256SUMS and
unpacked once into BUILD/aliyun/. Used by the fake-NVML integration test and
the real node tier (test/k8s/test_real_gpunode.py)."""

import hashlib
import lzma
import os

from gsutil import BUILD, SOURCE


def shared_dir():
    cands = [os.environ["GS_SHARED_DIR"]] if os.environ.get("GS_SHARED_DIR") else []
    p = os.path.abspath(SOURCE)
    for _ in range(5):
        cands += [os.path.join(p, "shared"), os.path.join(os.path.dirname(p), "shared")]
        p = os.path.dirname(p)
    for c in cands:
        if os.path.isfile(os.path.join(c, "aliyun", "gpushare-device-plugin-v2.xz")):
            return c
    return None


def aliyun_binary():
    """The unpacked binary's path (unpacked on first use)."""
    shared = shared_dir()
    if shared is None:
        raise AssertionError(
            "Aliyun's device plugin not found: ../shared/aliyun/gpushare-device-plugin-v2.xz "
            "(set GS_SHARED_DIR to the directory holding aliyun/)")
    src = os.path.join(shared, "aliyun", "gpushare-device-plugin-v2.xz")
    sums = {}
    with open(os.path.join(shared, "aliyun", "SHA256SUMS")) as f:
        for line in f:
            h, name = line.split()
            sums[name] = h
    binary = os.path.join(BUILD, "aliyun", "gpushare-device-plugin-v2")
    os.makedirs(os.path.dirname(binary), exist_ok=True)
    if not os.path.exists(binary):
        with lzma.open(src) as f:
            data = f.read()
        if hashlib.sha256(data).hexdigest() != sums["gpushare-device-plugin-v2"]:
            raise AssertionError(f"{src}: not the binary SHA256SUMS lists")
        tmp = binary + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o755)
        os.rename(tmp, binary)
    return binary
