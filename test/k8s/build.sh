#!/usr/bin/env bash
# Builds the pinned Kubernetes control plane from the official Go modules
# (test/k8s/go.mod: k8s.io/kubernetes at one release, the k8s.io/* staging
# modules replaced by their tags, etcd at the version that release pins):
#   etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet
#   kube-proxy (the real node's Services: test/k8s/kproxy.py)
# into OUT (default build/k8s/bin), and kube-router from its module
# (test/k8s/netpol/go.mod: v2.1.0, its dependencies raised), the real node's
# NetworkPolicy enforcer (test/k8s/knetpol.py; test-only, never in deploy/).
# A stamp of go.mod, go.sum and the mains (netpol: its own, .stamp-netpol)
# makes the second run instant. Prints each binary's build time.
#
#   test/k8s/build.sh [OUT]
#
# Exit 1, loudly, when Go or the module proxy is missing: the real
# control-plane tier never skips silently (docs/real-cluster.md).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build/k8s/bin}
# absolute: the builds below run in test/k8s
mkdir -p "$out" && out=$(cd "$out" && pwd)
bins=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)

if ! command -v go >/dev/null 2>&1; then
  for d in /usr/local/go/bin /usr/lib/go/bin; do
    [ -x "$d/go" ] && PATH="$d:$PATH" && break
  done
fi
if ! command -v go >/dev/null 2>&1; then
  echo "k8s-build: FAILED: no Go toolchain; the real control-plane tests need one" \
       "(docs/real-cluster.md)" >&2
  exit 1
fi

version=$(sed -n 's/^\s*k8s.io\/kubernetes \(v[0-9.]*\)$/\1/p' "$here/go.mod" | head -1)
minor=$(echo "$version" | cut -d. -f2)

# kube-router's network-policy controller: its own module, its own stamp
netpol() {
  local want kr t
  kr=$(sed -n 's/^.*github.com\/cloudnativelabs\/kube-router\/v2 \(v[0-9.]*\).*$/\1/p' "$here/netpol/go.mod" | head -1)
  want=$( (go version; cat "$here/netpol/go.mod" "$here/netpol/go.sum") | sha256sum | cut -c1-64)
  if [ -x "$out/kube-router" ] && [ -f "$out/.stamp-netpol" ] && [ "$(cat "$out/.stamp-netpol")" = "$want" ]; then
    echo "k8s-build: kube-router $kr cached in $out"
    return 0
  fi
  rm -f "$out/.stamp-netpol"
  t=$(date +%s)
  if ! (cd "$here/netpol" && go mod download >/dev/null &&
        CGO_ENABLED=0 go build -trimpath -ldflags "-s -w
          -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$kr" \
          -o "$out/kube-router.tmp" github.com/cloudnativelabs/kube-router/v2/cmd/kube-router); then
    echo "k8s-build: FAILED: kube-router $kr (test/k8s/netpol, Go module proxy:" \
         "$(go env GOPROXY))" >&2
    exit 1
  fi
  mv "$out/kube-router.tmp" "$out/kube-router"
  echo "$want" > "$out/.stamp-netpol"
  echo "k8s-build: kube-router $kr in $(( $(date +%s) - t )) s"
}

stamp_want=$( (go version; cat "$here/go.mod" "$here/go.sum"; cat "$here"/cmd/*/main.go) | sha256sum | cut -c1-64)
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp_want" ]; then
  ok=1
  for b in "${bins[@]}"; do [ -x "$out/$b" ] || ok=0; done
  if [ $ok = 1 ]; then
    echo "k8s-build: Kubernetes $version cached in $out"
    netpol
    exit 0
  fi
fi

mkdir -p "$out"
rm -f "$out/.stamp"
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version
 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor
 -X k8s.io/component-base/version.gitTreeState=clean"
cd "$here"
echo "k8s-build: Kubernetes $version from the Go modules into $out"
t0=$(date +%s)
if ! go mod download >/dev/null; then
  echo "k8s-build: FAILED: cannot download the Kubernetes modules (Go module proxy:" \
       "$(go env GOPROXY))" >&2
  exit 1
fi
echo "k8s-build: modules downloaded in $(( $(date +%s) - t0 )) s"
for b in "${bins[@]}"; do
  t=$(date +%s)
  # providerless: no in-tree cloud providers, as kind and the e2e builds.
  CGO_ENABLED=0 go build -trimpath -tags providerless -ldflags "$ldflags" \
    -o "$out/$b.tmp" "./cmd/$b"
  mv "$out/$b.tmp" "$out/$b"
  echo "k8s-build: $b in $(( $(date +%s) - t )) s"
done
echo "$stamp_want" > "$out/.stamp"
netpol
echo "k8s-build: done in $(( $(date +%s) - t0 )) s"
