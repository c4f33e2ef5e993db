#!/usr/bin/env python3
"""(Re)creates the seed corpora under test/fuzz/corpus/ (see README.md).

Sources: files of this repository (test/data/, deploy/demo/), the shared
reference fixtures (kubernetes/* test data, Apache-2.0; one kubernetes/website
example, CC BY 4.0) when --shared points at them, and small inputs written
here. Seeds of targets whose input carries a header (alloc, watch, status)
get that header prepended; the rest are verbatim copies.

  test/fuzz/seed_corpus.py [--shared DIR] [--topo-bin build/tools/topo/gpushare-topo]
"""
import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, "test", "data")
CORPUS = os.path.join(HERE, "corpus")


def put(target, name, data):
    os.makedirs(os.path.join(CORPUS, target), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(CORPUS, target, name), "wb") as f:
        f.write(data)


def copy(target, src, name=None, header=b""):
    if not os.path.exists(src):
        print(f"skip (absent): {src}", file=sys.stderr)
        return
    with open(src, "rb") as f:
        put(target, name or os.path.basename(src), header + f.read())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "..", "shared"))
    ap.add_argument("--topo-bin")
    a = ap.parse_args()
    fixtures = os.path.join(a.shared, "reference", "kube-fixtures")
    api = os.path.join(DATA, "api")

    # args, bind: the request bodies of test/data/api, plus a Nodes-form body
    # whose pod already carries an allocation (the restore path).
    for f in ("args-names.json", "args-nodes.json"):
        copy("args", os.path.join(api, f))
    put("args", "restore-topology.json",
        '{"Pod":{"metadata":{"name":"p","uid":"u1","annotations":{'
        '"scheduler.framework.gpushare.allocation":"{\\"0\\":{\\"1\\":2}}",'
        '"gpushare.io/unit-mib":"1024"}},"spec":{"nodeName":"a","containers":'
        '[{"resources":{"limits":{"aliyun.com/gpu-mem":"2"}}}]}},'
        '"Nodes":{"items":[{"metadata":{"name":"a","labels":{"ack.node.gpu.schedule":"share"},'
        '"annotations":{"gpushare.alibabacloud.com/device-resource":"{\\"0\\":8,\\"1\\":8}"}},'
        '"status":{"capacity":{"aliyun.com/gpu-mem":"16","aliyun.com/gpu-count":"2"}}},'
        '{"metadata":{"name":"t","labels":{"ack.node.gpu.schedule":"topology"},"annotations":'
        '{"gpushare.io/topology":"{\\"links\\":[[\\"X\\",\\"NV2\\"],[\\"NV2\\",\\"X\\"]]}"}},'
        '"status":{"allocatable":{"aliyun.com/gpu":"2"}}}]}}')
    put("args", "gang-names.json",
        '{"Pod":{"metadata":{"name":"w0","namespace":"ml","uid":"g0","labels":'
        '{"gpu-topology":"job","gpu-topology-replica":"2"}},"spec":{"containers":'
        '[{"resources":{"limits":{"aliyun.com/gpu":"2"}}}]}},"NodeNames":["a","b"]}')
    copy("bind", os.path.join(api, "bind-args.json"))

    # preempt: both victim forms over the target's fixed cluster (fuzz_preempt.c)
    hi = ('{"metadata":{"name":"hi","uid":"u-hi"},"spec":{"priority":50,"containers":'
          '[{"resources":{"limits":{"aliyun.com/gpu-mem":"%s"}}}]}}')
    put("preempt", "meta", '{"Pod":%s,"NodeNameToVictims":null,"NodeNameToMetaVictims":'
        '{"n":{"Pods":[{"UID":"a6"},{"UID":"b8"}],"NumPDBViolations":0},'
        '"c":{"Pods":[{"UID":"c2"},{"UID":"cpu-pod"}]},"zz":{"Pods":[]}}}' % (hi % "10"))
    put("preempt", "full", '{"Pod":%s,"NodeNameToMetaVictims":null,"NodeNameToVictims":'
        '{"n":{"Pods":[{"metadata":{"name":"a6","uid":"a6"}}],"NumPDBViolations":2}}}' % (hi % "12"))
    put("preempt", "whole", '{"Pod":{"metadata":{"name":"w","uid":"u-w"},"spec":{"priority":'
        '150,"containers":[{"resources":{"limits":{"aliyun.com/gpu":"3"}}}]}},'
        '"NodeNameToMetaVictims":{"t":{"Pods":[{"UID":"w0"}]}}}')
    put("preempt", "multi", '{"Pod":{"metadata":{"name":"m","uid":"u-m","labels":'
        '{"aliyun.com/gpu-count":"2"}},"spec":{"priority":1000,"containers":[{"resources":'
        '{"limits":{"aliyun.com/gpu-mem":"20"}}}]}},"NodeNameToMetaVictims":{"n":{"Pods":[]}}}')

    # pdb: [PodDisruptionBudget, Pod] (fuzz_pdb.c)
    put("pdb", "match", '[{"metadata":{"name":"db","namespace":"a"},"spec":{"selector":'
        '{"matchLabels":{"app":"db"},"matchExpressions":[{"key":"tier","operator":"In",'
        '"values":["x","y"]},{"key":"z","operator":"DoesNotExist"},{"key":"app",'
        '"operator":"Exists"},{"key":"q","operator":"NotIn","values":["1"]}]}},'
        '"status":{"disruptionsAllowed":1}},{"metadata":{"labels":{"app":"db","tier":"x"}}}]')
    put("pdb", "null-selector", '[{"metadata":{"name":"n"},"spec":{}},{"metadata":{}}]')
    put("pdb", "bad-op", '[{"metadata":{"name":"b"},"spec":{"selector":{"matchExpressions":'
        '[{"key":"a","operator":"Gt","values":["1"]}]}}},{"metadata":{"labels":{"a":"1"}}}]')

    # pod, node: test/data/api and the v1.34.0 serialization fixtures.
    for f in sorted(os.listdir(api)):
        if f.startswith("pod-"):
            copy("pod", os.path.join(api, f))
        if f.startswith("node-"):
            copy("node", os.path.join(api, f))
    copy("pod", os.path.join(fixtures, "api-roundtrip-v1.34.0-core.v1.Pod.json"))
    copy("node", os.path.join(fixtures, "api-roundtrip-v1.34.0-core.v1.Node.json"))

    # alloc: selector byte + '\n'-separated annotation values (fuzz_alloc.c).
    put("alloc", "v2", b"\x00" + b'{"0":{"0":4,"1":4},"2":{"3":"1Ki"}}\nfalse\n1700000000000000000\n128')
    put("alloc", "v2-128", b"\x04" + b'{"0":{"1":16}}\ntrue\n-5')
    put("alloc", "legacy", b"\x01" + b"3,0,1\n8\ntrue\n1700000000000000000\n1024")
    put("alloc", "legacy-one", b"\x05" + b"2\n16")
    put("alloc", "topology", b"\x02" + b'{"allocatedGPUs":{"0":["0","1"],"1":[2]},'
        b'"visibleGPUs":["0","1","2"],"assumeTime":1700000000000000000,"assigned":false}')
    copy("alloc", os.path.join(api, "pod-share-multi.json"), "pod", header=b"\x03")

    # gpushare-node: an inventory, and the node's pods at Allocate
    put("agent", "inventory", '{"gpus":[{"uuid":"GPU-a","memoryMiB":16384,"minor":0},'
        '{"uuid":"GPU-b","memoryMiB":16384,"healthy":false}],"links":[["X","NV1"],["NV1","X"]]}')
    pod = ('{"metadata":{"namespace":"default","name":"%s","uid":"u-%s","annotations":{'
           '"scheduler.framework.gpushare.allocation":"%s","scheduler.framework.gpushare.assigned":'
           '"false","scheduler.framework.gpushare.assume-time":"%d"%s}},"spec":{"nodeName":"gpu-a",'
           '"containers":[{"name":"c0","resources":{"limits":{"aliyun.com/gpu-mem":"%d"}}}]},'
           '"status":{"phase":"Pending"}}')
    put("agent", "pods", '{"items":[' + ",".join([
        pod % ("p1", "p1", '{\\"0\\":{\\"1\\":4}}', 5, "", 4),
        pod % ("p2", "p2", '{\\"0\\":{\\"0\\":4,\\"1\\":4}}', 3, "", 8),
        pod % ("p3", "p3", '{\\"0\\":{\\"0\\":16}}', 1, ',"gpushare.io/unit-mib":"128"', 16),
        pod % ("p4", "p4", '{\\"0\\":{\\"2\\":1}}', 1, ',"gpushare.io/allocated-containers":"0"', 1),
    ]) + "]}")
    # the same input is also read as the kubelet's pod-resources list: one
    # object with both keys exercises the kubelet's view
    put("agent", "seen", '{"items":[' + ",".join([
        pod % ("p1", "p1", '{\\"0\\":{\\"1\\":4}}', 5, "", 4),
        pod % ("p5", "p5", '{\\"0\\":{\\"0\\":4}}', 1, "", 4),
    ]) + '],"podResources":[{"name":"p1","namespace":"default","containers":[{"name":"c0"}]},'
        '{"name":"p5","namespace":"default","containers":[{"name":"c0","devices":[{"resourceName":'
        '"aliyun.com/gpu-mem","deviceIds":["GPU-a-_-0"]}]}]}]}')
    put("agent", "whole", '[{"metadata":{"name":"w","uid":"w","annotations":{'
        '"gputopology.alibabacloud.com/allocation":"{\\"allocatedGPUs\\":{\\"0\\":[\\"0\\",\\"1\\"]},'
        '\\"assumeTime\\":1,\\"assigned\\":false}"}},"spec":{"nodeName":"gpu-a","containers":['
        '{"name":"c","resources":{"limits":{"aliyun.com/gpu":"2"}}}]}}]')

    # topology annotation JSON and nvidia-smi text.
    put("topo_json", "two", '{"links":[["X","NV2"],["NV2","X"]]}')
    put("topo_json", "four", '{"links":[["X","NV1","SYS","SOC"],["NV1","X","PIX","PXB"],'
        '["SYS","PIX","X","NV12"],["SOC","PXB","NV12","X"]]}')
    topos = os.path.join(DATA, "topologies")
    for f in sorted(os.listdir(topos)):
        copy("topo_text", os.path.join(topos, f))
        if a.topo_bin:
            with open(os.path.join(topos, f), "rb") as inp:
                r = subprocess.run([a.topo_bin], stdin=inp, capture_output=True)
            if r.returncode == 0:
                put("topo_json", f.replace("_topo-m.txt", "").replace(".txt", "") + ".json",
                    r.stdout.strip())

    # quantity: the grammar's corners.
    for i, q in enumerate(["4", "16", "1k", "2Ki", "0.5Ki", "1000m", "1e3", "1E", "+7",
                           "-0", "9007199254740992", '"8Gi"', "12", ".5Mi", "1.5"]):
        put("quantity", f"q{i:02d}", q)

    # yaml, config, kubeconfig.
    cfg = os.path.join(DATA, "config")
    for f in ("flow.yaml", "kubectl-nodes-pods.yaml", "list.json"):
        copy("yaml", os.path.join(cfg, f))
    copy("yaml", os.path.join(ROOT, "deploy", "demo", "cluster.yaml"), "demo-cluster.yaml")
    copy("yaml", os.path.join(fixtures, "website-extended-resource-pod.yaml"))
    copy("yaml", os.path.join(fixtures, "kubectl-edit-testcase-list-errors-steps.yaml"))
    put("yaml", "anchors.yaml", "base: &b {a: 1, b: [x, y]}\nuse:\n  <<: *b\n  c: !!str 3\n"
        "list: [*b, *b]\nflags: [yes, No, off, ~, 0x1F, 1_000, 1e3, .5]\n")
    put("yaml", "configmap-data.yaml", "gpuMemoryUnit: 128MiB\nnodePolicy: spread\n"
        "cgpuMaxPodsPerGPU: 16\ngangTimeoutSeconds: 60\n")
    put("config", "full.yaml", "listen: 127.0.0.1:8080\nconfigmap: kube-system/gpushare-config\n"
        "gpu-memory-unit: 128MiB\nleader-elect: true\nlease: kube-system/gpushare-extender\n"
        "log-level: debug\ngpuMemoryUnit: 1GiB\nnodePolicy: binpack\ncgpuMaxPodsPerGPU: 8\n"
        "gangTimeoutSeconds: 30\nfragmentationAware: true\n")
    put("config", "paths.yaml", "kubeconfig: config.yaml\ndemo: ''\ntls-cert-file: config.yaml\n"
        "tls-key-file: config.yaml\nlisten: '[::1]:32766'\n")
    for f in sorted(os.listdir(os.path.join(cfg, "kube"))):
        copy("kubeconfig", os.path.join(cfg, "kube", f))

    # watch: 9-byte header (line cap 4096, never stop, chunk seed) + stream.
    hdr = b"\x02" + b"\x12\x34\x56\x78\x9a\xbc\xde\xf1"
    copy("watch", os.path.join(DATA, "k8s", "watch-events-decoded.ndjson"), header=hdr)
    put("watch", "pod-node-error", hdr +
        b'{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"p","annotations":'
        b'{"ALIYUN_COM_GPU_MEM_IDX":"0","ALIYUN_COM_GPU_MEM_POD":"2"}}}}\r\n\n'
        b'{"type":"MODIFIED","object":{"kind":"Node","metadata":{"name":"n"},"status":'
        b'{"capacity":{"aliyun.com/gpu-count":"1","aliyun.com/gpu-mem":"8"}}}}\n'
        b'{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired",'
        b'"message":"too old resource version"}}\n{"type":"BOOKMARK"')
    # status: 2-byte HTTP code + body.
    copy("status", os.path.join(DATA, "k8s", "status-404-notfound.json"), header=b"\x01\x94")
    copy("status", os.path.join(fixtures, "status-422-invalid.json"), header=b"\x01\xa6")
    put("status", "proxy-text", b"\x01\xf6" + b"upstream connect error\r\nmore")
    return 0


if __name__ == "__main__":
    sys.exit(main())
