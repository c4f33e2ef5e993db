# Sourced (not run) by plugins/scheduler/build.sh and plugins/node/build.sh:
# what both Go front ends need before cgo links them against a CMake build
# folder's static libraries. Bash; expects `set -euo pipefail`.

# gs_dirs [BUILD_DIR] [OUT]: root (the repository, two levels above $here,
# the sourcing script's folder), build (BUILD_DIR, default root/build,
# absolute) and out (OUT, default build/k8s/bin) for the build scripts.
gs_dirs() {
  root=$(cd "$here/../.." && pwd)
  build=$(cd "${1:-$root/build}" && pwd)
  out=${2:-$build/k8s/bin}
}

# gs_go_toolchain TAG: puts a Go toolchain on PATH (the installs
# tools/dev.sh setup makes), or fails loudly with TAG ("node-build", ...).
gs_go_toolchain() {
  if ! command -v go >/dev/null 2>&1; then
    for d in /usr/local/go/bin /usr/lib/go/bin; do
      [ -x "$d/go" ] && PATH="$d:$PATH" && break
    done
  fi
  command -v go >/dev/null 2>&1 || { echo "$1: FAILED: no Go toolchain" >&2; exit 1; }
}

# gs_need TAG BUILD FILE...: every FILE (a path below BUILD) exists, or a
# loud failure naming it.
gs_need() {
  local tag=$1 build=$2 f
  shift 2
  for f in "$@"; do
    [ -e "$build/$f" ] || { echo "$tag: FAILED: $build/$f missing (build the C side first)" >&2; exit 1; }
  done
}

# gs_cgo_libs TAG BUILD LIB...: gs_need, then gs_libs_ld set to the
# libraries' absolute paths for CGO_LDFLAGS.
gs_cgo_libs() {
  local tag=$1 build=$2 l
  shift 2
  gs_need "$tag" "$build" "$@"
  gs_libs_ld=""
  for l in "$@"; do
    gs_libs_ld="$gs_libs_ld $build/$l"
  done
}

# gs_cached TAG BINARY STAMP: true (and says so) when BINARY exists and
# was built from the inputs whose hash is STAMP; gs_cached_mark records it.
gs_cached() {
  local stamp_file
  stamp_file="$(dirname "$2")/.$(basename "$2").stamp"
  if [ -x "$2" ] && [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$3" ]; then
    echo "$1: $(basename "$2") cached in $(dirname "$2")"
    return 0
  fi
  return 1
}
gs_cached_mark() {
  echo "$2" > "$(dirname "$1")/.$(basename "$1").stamp"
}
