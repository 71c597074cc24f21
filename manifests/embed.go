// Package manifests embeds the Helm chart that the hub renders, per managed cluster, into
// the ManifestWork delivering the GitOps operator, the Argo CD instance, the
// least-privilege platform role and the spoke agent. The CRDs are not in it: the spoke
// agent installs them (pkg/spoke/crdinstall), which keeps each cluster's ManifestWork
// to a few KiB on the hub.
package manifests

import "embed"

// ChartFS holds the charts directory, the whole agent chart. The all: prefix is required:
// without it go:embed skips files starting with '_' or '.', and the chart would lose
// _helpers.tpl.
//
//go:embed all:charts
var ChartFS embed.FS

// AgentChartDir is the path of the gitops-addon-agent chart inside ChartFS.
const AgentChartDir = "charts/gitops-addon-agent"
