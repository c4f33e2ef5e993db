#!/usr/bin/env bash
# gpushare's one entry point for people and CI.
#   tools/dev.sh demo [--keep-running] [CLUSTER.yaml]
#                        set up what the demo needs (Debian packages), build
#                        quietly into build-demo/, and run the embedded demo
#                        cluster (deploy/demo/cluster.yaml): the seed
#                        scenarios through the HTTP verbs, then the ledger;
#                        --keep-running keeps the printed URL serving
#   tools/dev.sh test    set up; build the pinned Kubernetes control plane from
#                        its Go modules (cached); fuzz every decoder (clang,
#                        libFuzzer, bounded); the threaded tests under TSan; the
#                        extender under valgrind; gpushare-scheduler (the
#                        in-process plugin); then build with ASan+UBSan and
#                        run every test, the real control-plane tier included
#                        (ctest's summary last)
#   tools/dev.sh cluster [--down] [--fake-nodes]
#                        start (stop) a local real control plane with gpushare
#                        wired in and two real nodes (kubelet, containerd,
#                        gpushare-node, fake GPUs) that run deploy/samples/;
#                        prints how to point kubectl at it
#   tools/dev.sh setup   install the Debian packages the project needs
#   tools/dev.sh build   build into build/ (RelWithDebInfo)
# Runs as root on a fresh Debian 12 machine (apt-get installs what is missing).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc 2>/dev/null || echo 2)

# What the demo needs (build and run), as Debian packages; the test command
# adds the test tools.
demo_packages=(build-essential cmake pkg-config ca-certificates
               libcurl4-openssl-dev libjansson-dev libyaml-dev libmicrohttpd-dev libgnutls28-dev
               python3 python3-yaml)
packages=("${demo_packages[@]}" git curl openssl libcmocka-dev clang libclang-rt-14-dev valgrind
          prometheus # promtool and a real Prometheus: deploy/monitoring's tests
          # the real node (test/k8s/knode.py): container runtime, pod network,
          # and what its images are built from (test/k8s/kimages.py)
          containerd runc containernetworking-plugins iproute2 buildah busybox-static catatonit
          # kube-proxy's iptables mode (test/k8s/kproxy.py); a dependency of
          # containernetworking-plugins too, named here because kube-proxy runs it
          iptables
          # kube-router's NetworkPolicy enforcement (test/k8s/knetpol.py)
          ipset)

setup() { # setup [PACKAGE...] (default: everything the tests need)
  local want=("$@") missing=()
  [ ${#want[@]} -eq 0 ] && want=("${packages[@]}")
  for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing packages; run as root (or: sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() { # build DIR [cmake options...]
  local dir=$1; shift
  cmake -S "$root" -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
}

case "${1:-help}" in
  setup) setup ;;
  build) setup; build "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo ;;
  cluster)
    if [ "${2:-}" = "--down" ]; then
      exec python3 "$root/test/k8s/kcluster.py" down
    fi
    setup
    build "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
    "$root/test/k8s/build.sh" "$root/build/k8s/bin"
    # the real nodes' device plugin (gpushare-node) beside the kubelet
    "$root/plugins/node/build.sh" "$root/build" "$root/build/k8s/bin"
    GS_BUILD_DIR="$root/build" exec python3 "$root/test/k8s/kcluster.py" up "${@:2}"
    ;;
  demo)
    # tools/dev.sh demo [--keep-running] [CLUSTER.yaml]
    setup "${demo_packages[@]}"
    # the build is quiet: its output goes to a log, shown only if it fails
    mkdir -p "$root/build-demo"
    log="$root/build-demo/build.log"
    if ! { cmake -S "$root" -B "$root/build-demo" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGS_TESTS=OFF &&
           cmake --build "$root/build-demo" -j"$jobs"; } >"$log" 2>&1; then
      cat "$log" >&2
      echo "demo: the build failed (log above, also in $log)" >&2
      exit 1
    fi
    shift
    cluster="$root/deploy/demo/cluster.yaml"
    extra=()
    for a in "$@"; do
      case "$a" in
        --*) extra+=("$a") ;;
        *) cluster=$a ;;
      esac
    done
    exec python3 "$root/tools/demo.py" --build "$root/build-demo" "${extra[@]}" "$cluster"
    ;;
  test)
    setup
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    # The fuzz and TSan steps come first: CI reads ctest's closing summary,
    # so the full ASan+UBSan run ends the output. Any failure stops here.

    # 0. The real control plane: kube-apiserver, kube-scheduler,
    #    kube-controller-manager, etcd, kubectl, the kubelet and kube-proxy
    #    (the real node) at the release pinned in
    #    test/k8s/go.mod, built from the official Go modules (cached in
    #    build/k8s/bin). No Go or no module proxy: a loud failure, never a
    #    silent skip (the realk8s_* tests of step 4 need them).
    echo "== k8s: the pinned Kubernetes control plane from its Go modules"
    if ! "$root/test/k8s/build.sh" "$root/build/k8s/bin"; then
      echo "k8s: FAILED to build the Kubernetes control plane; the real control-plane" \
           "tests cannot run (docs/real-cluster.md)" >&2
      exit 1
    fi

    # 1. Fuzzing: every libFuzzer target (test/fuzz) from its seed corpus and
    #    kept crash inputs, GS_FUZZ_SECONDS each (0 skips), $jobs at a time.
    fuzz_secs=${GS_FUZZ_SECONDS:-20}
    if [ "$fuzz_secs" -gt 0 ]; then
      echo "== fuzz: every libFuzzer target, ${fuzz_secs} s each"
      cmake -S "$root" -B "$root/build-fuzz" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
        -DGS_FUZZ=ON -DGS_TESTS=OFF >/dev/null
      cmake --build "$root/build-fuzz" -j"$jobs" --target fuzz
      if ! FUZZ_JOBS=$jobs "$root/test/fuzz/run.sh" "$root/build-fuzz" "$fuzz_secs"; then
        echo "fuzz: a target failed; keep its crash input under test/fuzz/regressions/" >&2
        exit 1
      fi
    fi

    # 2. ThreadSanitizer over the tests that run threads: the HTTP server,
    #    the observation layer (feed, views, metrics), the framework's lock,
    #    the scheduler service, the apiserver client, the extender binary.
    echo "== tsan: threaded tests under ThreadSanitizer"
    build "$root/build-tsan" -DCMAKE_BUILD_TYPE=Debug -DGS_TSAN=ON
    TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
      ctest --test-dir "$root/build-tsan" --output-on-failure -j"$jobs" \
        -R '^(server_|observe_|framework_|sched_|k8s_|integration_test_extender_http$)'

    # 3. valgrind (memcheck) around the real extender binary through the
    #    HTTP and live-cluster integration runs: any error or definite leak
    #    fails. A plain build: valgrind cannot run sanitized binaries.
    echo "== valgrind: the extender under memcheck through the integration runs"
    build "$root/build-valgrind" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGS_TESTS=OFF
    (cd "$root/test/integration" &&
      GS_VALGRIND=1 GS_BUILD_DIR="$root/build-valgrind" GS_SOURCE_DIR="$root" PYTHONPATH="$root/test/lib" \
        python3 -m unittest test_extender_http test_live_cluster)

    # 3b. gpushare-scheduler: the pinned kube-scheduler with the in-process
    #     plugin, its cgo shim linked against the plain build's static
    #     libraries (docs/plugin.md), next to the other Kubernetes binaries;
    #     the realk8s_test_real_plugin module runs the real control plane with it.
    echo "== plugin: gpushare-scheduler (kube-scheduler + the in-process plugin)"
    "$root/plugins/scheduler/build.sh" "$root/build-valgrind" "$root/build/k8s/bin"
    # the cgo boundary (plugins/scheduler/shim) under Go's race detector
    "$root/plugins/scheduler/build.sh" --test "$root/build-valgrind"

    # 3c. gpushare-node, the node agent (docs/node-agent.md): the device
    #     plugin's Go plumbing over src/agent, beside the Kubernetes binaries
    #     (the real-node tier starts it next to the kubelet); its tests (a
    #     test kubelet's Registration service, a fake clientset) under -race.
    echo "== node: gpushare-node (the kubelet device plugin over src/agent)"
    "$root/plugins/node/build.sh" "$root/build-valgrind" "$root/build/k8s/bin"
    "$root/plugins/node/build.sh" --test "$root/build-valgrind"
    # containerd 2.x from its Go module: CDI for test_real_dranode.py's CdiNode
    # (Debian's containerd 1.6 has none; docs/node-agent.md "DRA")
    "$root/tools/containerd2.sh" "$root/build/containerd2"

    # 4. Every test (unit, integration, fuzz replays, and the realk8s_*
    #    tier: the real kube-apiserver, kube-scheduler and
    #    kube-controller-manager with the sanitized extender) under ASan+UBSan.
    echo "== asan: every test under AddressSanitizer and UBSan"
    build "$root/build-asan" -DCMAKE_BUILD_TYPE=Debug -DGS_SANITIZE=ON
    # the cgo boundary's tests again, the C side under ASan+UBSan (go test -asan)
    "$root/plugins/scheduler/build.sh" --test-asan "$root/build-asan"
    ctest --test-dir "$root/build-asan" --output-on-failure -j"$jobs"
    ;;
  *)
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    [ "${1:-help}" = help ] || exit 2
    ;;
esac
