package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-addon/gitops-addon/pkg/compat"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// hubArgoCDCRDs are the Application, ApplicationSet and AppProject CRDs of an Argo CD
// release as it ships them (manifests/crds of its Go module, through the module proxy).
func hubArgoCDCRDs(t *testing.T, version string) []string {
	t.Helper()
	major := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 2)[0]
	module := "github.com/argoproj/argo-cd"
	if major != "1" {
		module += "/v" + major
	}
	dir, err := testenv.ModuleDir(module + "@" + version)
	require.NoError(t, err)
	var paths []string
	for _, f := range []string{"application-crd.yaml", "applicationset-crd.yaml", "appproject-crd.yaml"} {
		paths = append(paths, filepath.Join(dir, "manifests", "crds", f))
	}
	return paths
}

// TestPullModelOnEachHubArgoCD: on a hub serving the Application, ApplicationSet and
// AppProject CRDs of each Argo CD release we support (compat.HubArgoCD: 2.x and 3.x), the
// pull model ships an ApplicationSet's Application, the spoke's status (sync, health,
// revision, the last operation) reaches the hub Application and the ApplicationSet's
// report, and a manual sync goes to the spoke and is cleared on the hub once the spoke
// reports it ended. An older CRD prunes a status field it does not declare on write: a
// field we write that a release lacks fails here.
func TestPullModelOnEachHubArgoCD(t *testing.T) {
	for _, version := range compat.HubArgoCD {
		t.Run("Argo CD "+version, func(t *testing.T) {
			p := newPullHubOn(t, t, append(testenv.OCMCRDPaths(), ourCRDs()), hubArgoCDCRDs(t, version), 0)
			s := startPullScenario(p, "hub-argocd")
			_, w := s.guestbook()
			s.reportGuestbookHealthy(w)
			app := s.getApp(s.ns, s.guestbookApp())
			for _, field := range [][]string{
				{"status", "sync", "status"}, {"status", "sync", "revision"}, {"status", "health", "status"},
				{"status", "operationState", "phase"}, {"status", "operationState", "startedAt"}, {"status", "operationState", "message"},
			} {
				_, found, _ := unstructured.NestedFieldNoCopy(app.Object, field...)
				assert.True(t, found, "the hub Application keeps %s", strings.Join(field, "."))
			}

			request := s.askSync(map[string]any{"sync": map[string]any{"revision": "v2"}, "initiatedBy": map[string]any{"username": "admin"}})
			s.with(t).reportSyncEnded(request)
		})
	}
}
