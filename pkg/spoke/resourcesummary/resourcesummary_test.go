package resourcesummary

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/contract/appresources"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/pulledapps"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

const pulledApp = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
  namespace: openshift-gitops
  ownerReferences: [{apiVersion: work.open-cluster-management.io/v1, kind: AppliedManifestWork, name: abc-guestbook, uid: u1}]
spec: {project: default}
status:
  reconciledAt: "2026-11-25T10:00:00Z"
  resources:
  - {version: v1, kind: ConfigMap, namespace: guestbook, name: guestbook-ui, status: Synced}
  - {version: v1, kind: Service, namespace: guestbook, name: guestbook-ui, status: Synced, health: {status: Healthy}}
`

func application(t *testing.T, doc string, edit func(*unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
	if edit != nil {
		edit(u)
	}
	return u
}

func TestReconcileWritesTheSummaryOnce(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(*unstructured.Unstructured)
		wantWrite bool
	}{
		{name: "a pulled, reconciled Application gets its summary", wantWrite: true},
		{name: "an Application nobody pulled is left alone", edit: func(u *unstructured.Unstructured) { u.SetOwnerReferences(nil) }},
		{name: "not compared by Argo CD yet: no summary claims it has no resources", edit: func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "status", "reconciledAt")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := application(t, pulledApp, tt.edit)
			writes := 0
			c := fixtures.FakeSpoke(t, app).
				WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
					writes++
					return c.Patch(ctx, o, p, opts...)
				}}).Build()
			r := &Reconciler{Cache: c, Client: c, Report: addonstatus.NewReport()}
			req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "openshift-gitops", Name: "guestbook"}}
			_, err := r.Reconcile(context.Background(), req)
			require.NoError(t, err)
			_, err = r.Reconcile(context.Background(), req)
			require.NoError(t, err)
			if !tt.wantWrite {
				assert.Zero(t, writes)
				return
			}
			assert.Equal(t, 1, writes, "written once; the second reconcile finds it current")
			stored := pulledapps.New()
			require.NoError(t, c.Get(context.Background(), req.NamespacedName, stored))
			s, err := appresources.Decode(stored.GetAnnotations()[appresources.Annotation])
			require.NoError(t, err)
			assert.Equal(t, 2, s.Total)
			assert.Equal(t, "ConfigMap", s.Resources[0].Kind, "healthy and synced alike: by kind")
			spec, _, _ := unstructured.NestedMap(stored.Object, "spec")
			assert.Equal(t, map[string]any{"project": "default"}, spec, "nothing but the annotation changed")
		})
	}
}
