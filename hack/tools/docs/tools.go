//go:build tools

// Package docs pins the documentation generators `make docs` runs (crd-ref-docs for the
// API reference, helm-docs for the chart values) in a module of their own, beside
// hack/tools: neither their dependencies nor controller-gen's pin are changed by the other.
package docs

import (
	_ "github.com/elastic/crd-ref-docs"
	_ "github.com/norwoodj/helm-docs/cmd/helm-docs"
)
