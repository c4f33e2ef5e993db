#!/usr/bin/env bash
# Builds containerd 2.x (with CDI) from its Go module for the real-node tier
# (test/k8s/knode.py: Node(containerd_dir=...)), as Debian's containerd 1.6
# has no CDI: test/k8s/test_real_dranode.py's CDI case runs on it
# (docs/node-agent.md "DRA").
#
#   tools/containerd2.sh [OUT]      OUT default build/containerd2
#
# Puts containerd and containerd-shim-runc-v2 in OUT; cached by version.
set -euo pipefail
version=v2.4.2
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build/containerd2}
mkdir -p "$out" && out=$(cd "$out" && pwd)
if ! command -v go >/dev/null 2>&1; then
  for d in /usr/local/go/bin /usr/lib/go/bin; do
    [ -x "$d/go" ] && PATH="$d:$PATH" && break
  done
fi
if [ -x "$out/containerd" ] && [ -x "$out/containerd-shim-runc-v2" ] &&
   [ "$(cat "$out/.version" 2>/dev/null)" = "$version" ]; then
  echo "containerd2: $version cached in $out"
  exit 0
fi
t0=$(date +%s)
(cd /tmp && GOBIN="$out" go install "github.com/containerd/containerd/v2/cmd/containerd@$version" \
   "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$version")
echo "$version" > "$out/.version"
echo "containerd2: $version in $out in $(( $(date +%s) - t0 )) s"
