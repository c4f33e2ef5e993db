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
if [ "${1:-}" = "--test" ]; then
  test_mode=1
  shift
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$build/k8s/bin}
# absolute: the build below runs in plugins/node
mkdir -p "$out" && out=$(cd "$out" && pwd)

if ! command -v go >/dev/null 2>&1; then
  for d in /usr/local/go/bin /usr/lib/go/bin; do
    [ -x "$d/go" ] && PATH="$d:$PATH" && break
  done
fi
command -v go >/dev/null 2>&1 || { echo "node-build: FAILED: no Go toolchain" >&2; exit 1; }

libs=(src/agent/libgs_agent.a src/node/libgs_node.a src/api/libgs_api.a src/core/libgs_core.a
      src/util/libgs_util.a)
ld=""
for l in "${libs[@]}"; do
  [ -f "$build/$l" ] || { echo "node-build: FAILED: $build/$l missing (build the C side first)" >&2; exit 1; }
  ld="$ld $build/$l"
done
libs_ld="$ld -ljansson -lm -ldl"
cd "$here"
if [ $test_mode = 1 ]; then
  # the NVML tests load the fake NVML and compare with gpushare-topo --nvml
  for f in fakenvml/libnvidia-ml.so.1 tools/topo/gpushare-topo; do
    [ -e "$build/$f" ] || { echo "node-build: FAILED: $build/$f missing (build the C side first)" >&2; exit 1; }
  done
  GS_BUILD_DIR="$build" CGO_ENABLED=1 CGO_LDFLAGS="$libs_ld" go test -race -count=1 ./cagent/ ./nodeagent/
  exit
fi
stamp_want=$( (go version; cat go.mod go.sum "$root/CMakeLists.txt" cmd/*/*.go cagent/*.go nodeagent/*.go;
               for l in "${libs[@]}"; do sha256sum "$build/$l"; done) | sha256sum | cut -c1-64)
if [ -x "$out/gpushare-node" ] && [ -f "$out/.gpushare-node.stamp" ] &&
   [ "$(cat "$out/.gpushare-node.stamp")" = "$stamp_want" ]; then
  echo "node-build: gpushare-node cached in $out"
  exit 0
fi
mkdir -p "$out"
t0=$(date +%s)
version=$(sed -n 's/^project(gpushare VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
CGO_ENABLED=1 CGO_LDFLAGS="$libs_ld" go build -trimpath -ldflags "-X main.version=$version" \
  -o "$out/gpushare-node" ./cmd/gpushare-node
echo "$stamp_want" > "$out/.gpushare-node.stamp"
echo "node-build: gpushare-node in $(( $(date +%s) - t0 )) s"
