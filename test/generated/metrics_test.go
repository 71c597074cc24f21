package generated

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-addon/gitops-addon/pkg/hub/hubmetrics"
)

// TestMetricsPageNamesEveryMetric: docs/operations/metrics.md has a row for every
// gitops_addon_ metric the manager serves, and names every value of the health label, so
// that a new metric comes with its documentation.
func TestMetricsPageNamesEveryMetric(t *testing.T) {
	page, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "operations", "metrics.md"))
	require.NoError(t, err)
	rows := map[string]string{}
	for _, line := range strings.Split(string(page), "\n") {
		if strings.HasPrefix(line, "| `gitops_addon_") {
			rows[strings.SplitN(line, "`", 3)[1]] = line
		}
	}
	for _, name := range hubmetrics.Names() {
		assert.Contains(t, rows, name, "docs/operations/metrics.md has no row for %s: say its type, labels and meaning", name)
	}
	assert.Len(t, rows, len(hubmetrics.Names()), "docs/operations/metrics.md documents a metric the manager does not serve")
	for _, health := range []string{hubmetrics.HealthAvailable, hubmetrics.HealthUnavailable, hubmetrics.HealthUnknown} {
		assert.Contains(t, rows[hubmetrics.Clusters], "`"+health+"`")
	}
}
