#!/usr/bin/env bash
# gpushare's one entry point for people and CI.
#   tools/dev.sh demo    set up, build, and run the embedded demo cluster
#   tools/dev.sh test    set up, build with ASan+UBSan, run every test
#   tools/dev.sh setup   install the Debian packages the project needs
#   tools/dev.sh build   build into build/ (RelWithDebInfo)
# Runs as root on a fresh Debian 12 machine (apt-get installs what is missing).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc 2>/dev/null || echo 2)

# Everything the build, the tests and the demo use, as Debian packages.
packages=(build-essential cmake pkg-config git ca-certificates curl openssl
          libcurl4-openssl-dev libjansson-dev libyaml-dev libcmocka-dev libmicrohttpd-dev
          python3 python3-yaml clang libclang-rt-14-dev)

setup() {
  local missing=()
  for p in "${packages[@]}"; do
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
  demo)
    setup
    build "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
    exec python3 "$root/tools/demo.py" --build "$root/build" "$root/deploy/demo/cluster.yaml"
    ;;
  test)
    setup
    build "$root/build-asan" -DCMAKE_BUILD_TYPE=Debug -DGS_SANITIZE=ON
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    ctest --test-dir "$root/build-asan" --output-on-failure -j"$jobs"
    ;;
  *)
    sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'
    [ "${1:-help}" = help ] || exit 2
    ;;
esac
