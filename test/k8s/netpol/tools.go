//go:build tools

// Package netpol pins kube-router's network-policy controller, the real
// tier's NetworkPolicy enforcer (test/k8s/knetpol.py), built by
// test/k8s/build.sh. Never shipped (docs/real-cluster.md).
package netpol

import _ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
