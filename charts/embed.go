// Package charts embeds the manager chart's CRDs for the manager itself: Helm installs a
// chart's crds/ once and never upgrades them, so the manager brings the CRDs to its own
// version at every start (pkg/hub/crdupgrade). This file sits beside the chart, not in
// it, so that Helm never packages it.
package charts

import "embed"

// CRDs holds the generated CRDs of the manager chart (make manifests).
//
//go:embed gitops-addon/crds/*.yaml
var CRDs embed.FS

// CRDDir is the directory of the CRDs inside CRDs.
const CRDDir = "gitops-addon/crds"
