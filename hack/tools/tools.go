//go:build tools

// Package tools pins the code generators used by `make generate manifests` in a module
// of their own, so that their dependencies never enter the product's module graph.
package tools

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
