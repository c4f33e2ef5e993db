#!/usr/bin/env bash
# Builds gpushare-scheduler: kube-scheduler at the release pinned in go.mod
# with the gpushare plugin (docs/plugin.md). The C core comes from a CMake
# build folder (its static libraries, linked by cgo); Go only wraps it.
#
#   plugins/scheduler/build.sh [BUILD_DIR] [OUT]
#   plugins/scheduler/build.sh --test [BUILD_DIR]
#                     runs the cgo boundary's tests (package shim), the
#                     plugin's (package gpushare: its extension points
#                     driven with the framework's own CycleState and
#                     NodeInfos) and its args' (apis/config: defaults,
#                     validation, the shipped KubeSchedulerConfigurations
#                     decoded) under Go's race detector instead of building
#   plugins/scheduler/build.sh --test-asan ASAN_BUILD_DIR
#                     the same tests under AddressSanitizer (go test -asan)
#                     with the C side from a -DGS_SANITIZE=ON build (ASan +
#                     UBSan): memory errors and leaks on both sides of cgo
#   plugins/scheduler/build.sh --bench [BUILD_DIR]
#                     the shim's benchmarks (a Release-like C build; no
#                     race detector): BenchmarkFilter500 and 5000,
#                     PreFilter's call
#
# BUILD_DIR: a configured and built CMake folder (default build/);
# OUT: where the binary goes (default BUILD_DIR/k8s/bin). Cached by a stamp
# of the Go sources, go.mod/go.sum and the static libraries.
set -euo pipefail

test_mode=0
if [ "${1:-}" = "--test" ]; then
  test_mode=1
  shift
elif [ "${1:-}" = "--test-asan" ]; then
  test_mode=2
  shift
elif [ "${1:-}" = "--bench" ]; then
  test_mode=3
  shift
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$build/k8s/bin}

if ! command -v go >/dev/null 2>&1; then
  for d in /usr/local/go/bin /usr/lib/go/bin; do
    [ -x "$d/go" ] && PATH="$d:$PATH" && break
  done
fi
command -v go >/dev/null 2>&1 || { echo "plugin-build: FAILED: no Go toolchain" >&2; exit 1; }

libs=(src/shim/libgs_shim.a src/observe/libgs_observe.a src/sched/libgs_sched.a src/framework/libgs_framework.a
      plugins/libgs_plugins.a src/config/libgs_config.a src/api/libgs_api.a
      src/core/libgs_core.a src/util/libgs_util.a)
ld=""
for l in "${libs[@]}"; do
  [ -f "$build/$l" ] || { echo "plugin-build: FAILED: $build/$l missing (build the C side first)" >&2; exit 1; }
  ld="$ld $build/$l"
done
libs_ld="$ld -ljansson -lyaml -lpthread -lm"
# The shim's and the plugin's tests (1), under ASan (2), or the shim's benchmarks (3).
if [ $test_mode != 0 ]; then
  cd "$here"
  case $test_mode in
    1) CGO_ENABLED=1 CGO_LDFLAGS="$libs_ld" go test -race -count=1 ./shim/ ./gpushare/ ./apis/... ;;
    2) san="-fsanitize=address,undefined -fno-omit-frame-pointer"
       CGO_ENABLED=1 CGO_CFLAGS="$san" CGO_LDFLAGS="$libs_ld $san" \
         ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} go test -asan -count=1 ./shim/ ./gpushare/ ;;
    3) CGO_ENABLED=1 CGO_LDFLAGS="$libs_ld" go test -run "^$" -bench . -count=5 ./shim/ ;;
  esac
  exit
fi
stamp_want=$( (go version; cat "$here/go.mod" "$here/go.sum" "$here"/cmd/*/*.go "$here"/gpushare/* "$here"/shim/*;
               find "$here/apis" -name '*.go' | sort | xargs cat;
               for l in "${libs[@]}"; do sha256sum "$build/$l"; done) | sha256sum | cut -c1-64)
if [ -x "$out/gpushare-scheduler" ] && [ -f "$out/.gpushare-scheduler.stamp" ] &&
   [ "$(cat "$out/.gpushare-scheduler.stamp")" = "$stamp_want" ]; then
  echo "plugin-build: gpushare-scheduler cached in $out"
  exit 0
fi
mkdir -p "$out"
version=$(sed -n 's/^\s*k8s.io\/kubernetes \(v[0-9.]*\)$/\1/p' "$here/go.mod" | head -1)
minor=$(echo "$version" | cut -d. -f2)
# the C libraries' digest in the link flags: Go's build cache does not hash
# the archives CGO_LDFLAGS names, so a change in the C side alone would
# otherwise leave the binary linked against the old core (-X of a name no
# package declares sets nothing; it only makes the link a new one)
core_digest=$(for l in "${libs[@]}"; do sha256sum "$build/$l"; done | sha256sum | cut -c1-16)
ldflags="-X main.gpushareCoreDigest=$core_digest
 -X k8s.io/component-base/version.gitVersion=$version
 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor
 -X k8s.io/component-base/version.gitTreeState=clean"
t0=$(date +%s)
cd "$here"
CGO_ENABLED=1 CGO_LDFLAGS="$libs_ld" \
  go build -trimpath -tags providerless -ldflags "$ldflags" -o "$out/gpushare-scheduler" \
  ./cmd/gpushare-scheduler
echo "$stamp_want" > "$out/.gpushare-scheduler.stamp"
echo "plugin-build: gpushare-scheduler ($version + gpushare) in $(( $(date +%s) - t0 )) s"
