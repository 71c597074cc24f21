package pulledapps

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/contract/appresources"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
)

const pulledApp = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
  namespace: openshift-gitops
  annotations: {argocd.argoproj.io/refresh: normal}
  ownerReferences: [{apiVersion: work.open-cluster-management.io/v1, kind: AppliedManifestWork, name: abc-guestbook, uid: u1}]
spec: {project: default}
status:
  reconciledAt: "2026-11-25T10:00:00Z"
  history: [{revision: abc}]
  conditions:
  - {type: SyncError, message: big}
  - {type: ComparisonError, message: "rpc error: code = Unavailable desc = connection error"}
  - {type: InvalidSpecError, message: "Application referencing project default which does not exist"}
  resources:
  - {version: v1, kind: ConfigMap, namespace: guestbook, name: guestbook-ui, status: Synced}
  - {version: v1, kind: Service, namespace: guestbook, name: guestbook-ui, status: Synced, health: {status: Healthy}}
`

func TestSlimKeepsWhatTheAgentsControllersRead(t *testing.T) {
	app := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(pulledApp), &app.Object))
	slim, err := Slim(app.DeepCopy())
	require.NoError(t, err)
	got := slim.(*unstructured.Unstructured)
	assert.Equal(t, appresources.FromApplication(app.Object), appresources.FromApplication(got.Object), "what a resource summary reads")
	assert.Equal(t, "rpc error: code = Unavailable desc = connection error", ComparisonError(got), "what comparisonretry reads")
	assert.Equal(t, "Application referencing project default which does not exist", InvalidSpecError(got), "what comparisonretry reads")
	assert.Equal(t, "normal", got.GetAnnotations()["argocd.argoproj.io/refresh"])
	assert.True(t, Pulled(got))
	assert.NotContains(t, got.Object, "spec")
	assert.NotContains(t, got.Object["status"], "history")
	conditions, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	assert.Len(t, conditions, 2, "only the ComparisonError and InvalidSpecError conditions")
}

// The tree annotation (up to 48 KiB per Application) is cached as its digest: equal trees,
// equal digests, and nothing else of it is kept.
func TestSlimKeepsTheTreeAsItsDigest(t *testing.T) {
	app := New()
	app.SetAnnotations(map[string]string{apptree.Annotation: "H4sIAAAA-a-tree", "team": "blue"})
	slim, err := Slim(app.DeepCopy())
	require.NoError(t, err)
	got := slim.(*unstructured.Unstructured).GetAnnotations()
	assert.Equal(t, Digest("H4sIAAAA-a-tree"), got[apptree.Annotation])
	assert.NotEqual(t, Digest("H4sIAAAA-another"), got[apptree.Annotation])
	assert.Equal(t, "blue", got["team"], "other annotations as they are")
}

func TestPulled(t *testing.T) {
	app := New()
	assert.False(t, Pulled(app))
	app.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "work.open-cluster-management.io/v1", Kind: "ManifestWork", Name: "w", UID: "u"}})
	assert.False(t, Pulled(app), "a ManifestWork is no AppliedManifestWork")
	app.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "work.open-cluster-management.io/v1", Kind: "AppliedManifestWork", Name: "w", UID: "u"}})
	assert.True(t, Pulled(app))
}
