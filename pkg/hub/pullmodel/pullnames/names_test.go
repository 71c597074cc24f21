package pullnames

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestWorkName(t *testing.T) {
	long := strings.Repeat("a", 250)
	tests := []struct {
		name, ns, app string
		wantPrefix    string
	}{
		{"short", "openshift-gitops", "guestbook", "guestbook-"},
		{"long name cut to a readable prefix", "team-a", long, strings.Repeat("a", maxNamePrefix) + "-"},
		{"cut at a dash keeps a valid name", "team-a", strings.Repeat("a", maxNamePrefix-1) + "-bbbb", strings.Repeat("a", maxNamePrefix-1) + "-"},
		{"dots allowed", "ns", "my.app", "my.app-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := WorkName(tt.ns, tt.app)
			assert.True(t, strings.HasPrefix(n, tt.wantPrefix), n)
			assert.Empty(t, validation.IsDNS1123Subdomain(n), n)
			assert.LessOrEqual(t, len(n), maxNamePrefix+1+hashLength)
			assert.Equal(t, n, WorkName(tt.ns, tt.app), "deterministic")
		})
	}
	t.Run("same name in two namespaces does not collide", func(t *testing.T) {
		assert.NotEqual(t, WorkName("team-a", "guestbook"), WorkName("team-b", "guestbook"))
	})
	t.Run("namespace/name boundary is unambiguous", func(t *testing.T) {
		assert.NotEqual(t, WorkName("a-b", "c"), WorkName("a", "b-c"))
	})
	t.Run("long names differing only past the prefix do not collide", func(t *testing.T) {
		assert.NotEqual(t, WorkName("ns", long+"x"), WorkName("ns", long+"y"))
	})
}

func TestReportLabelValue(t *testing.T) {
	assert.Equal(t, "openshift-gitops.guestbook", ReportLabelValue("openshift-gitops", "guestbook"))
	long := ReportLabelValue("openshift-gitops", strings.Repeat("x", 80))
	assert.Len(t, long, 63)
	assert.Empty(t, validation.IsValidLabelValue(long))
	assert.NotEqual(t, long, ReportLabelValue("openshift-gitops", strings.Repeat("x", 81)))
}
