#!/usr/bin/env bash
# Builds gpushare-node, gpushare's node agent (docs/node-agent.md): the
# kubelet device-plugin gRPC plumbing in Go over the C decisions of
# src/agent, linked from a CMake build folder's static libraries by cgo.
#
#   plugins/node/build.sh [BUILD_DIR] [OUT]
#   plugins/node/build.sh --test [BUILD_DIR]
#                     the cgo boundary's and the plumbing's tests (packages
#                     cagent, nodeagent: a test kubelet's Registration
#                     service, a fake clientset, the fake NVML of
#                     BUILD_DIR/fakenvml) under Go's race detector
#
# BUILD_DIR: a configured and built CMake folder (default build/);
# OUT: where the binary goes (default BUILD_DIR/k8s/bin). Cached by a stamp
# of the Go sources, go.mod/go.sum and the static libraries.
set -euo pipefail

test_mode=0
[ "${1:-}" = "--test" ] && test_mode=1 && shift
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../cgo_env.sh"
gs_dirs "$@"
# absolute: the build below runs in plugins/node
mkdir -p "$out" && out=$(cd "$out" && pwd)
gs_go_toolchain node-build
libs=(src/agent/libgs_agent.a src/node/libgs_node.a src/api/libgs_api.a src/core/libgs_core.a
      src/util/libgs_util.a)
gs_cgo_libs node-build "$build" "${libs[@]}"
libs_ld="$gs_libs_ld -ljansson -lm -ldl"
cd "$here"
if [ $test_mode = 1 ]; then
  # the NVML tests load the fake NVML and compare with gpushare-topo --nvml
  gs_need node-build "$build" fakenvml/libnvidia-ml.so.1 tools/topo/gpushare-topo
  GS_BUILD_DIR="$build" CGO_ENABLED=1 CGO_LDFLAGS="$libs_ld" go test -race -count=1 ./cagent/ ./nodeagent/
  exit
fi
stamp_want=$( (go version; cat go.mod go.sum "$root/CMakeLists.txt" cmd/*/*.go cagent/*.go nodeagent/*.go;
               for l in "${libs[@]}"; do sha256sum "$build/$l"; done) | sha256sum | cut -c1-64)
gs_cached node-build "$out/gpushare-node" "$stamp_want" && exit 0
mkdir -p "$out"
t0=$(date +%s)
version=$(sed -n 's/^project(gpushare VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
# The stamp in the link flags: Go's build cache does not look into the C
# archives named by CGO_LDFLAGS, so a C-only change would reuse the old link.
CGO_ENABLED=1 CGO_LDFLAGS="$libs_ld" go build -trimpath \
  -ldflags "-X main.version=$version -X main.coreStamp=$stamp_want" \
  -o "$out/gpushare-node" ./cmd/gpushare-node
gs_cached_mark "$out/gpushare-node" "$stamp_want"
echo "node-build: gpushare-node in $(( $(date +%s) - t0 )) s"
