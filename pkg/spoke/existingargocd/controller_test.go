package existingargocd

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

func argoCDsCRD(established bool) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "argocds.argoproj.io"}}
	if established {
		crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	}
	return crd
}

// TestAKindDefinedButNotServedIsLookedAtAgain: the agent installs Argo CD's CRDs itself;
// Established comes before discovery serves the kind, and no CRD event marks that moment.
// Without a second look the ArgoCD watch never starts and the instance the work agent
// creates next is never recorded as ours (then the pre-delete hook leaves it, seen in a
// CI run on a bare spoke).
func TestAKindDefinedButNotServedIsLookedAtAgain(t *testing.T) {
	allWatched := map[schema.GroupVersionKind]bool{contract.ArgoCDGVK: true, subscriptionGVK: true, csvGVK: true}
	tests := []struct {
		name     string
		crds     []client.Object
		watching map[schema.GroupVersionKind]bool
		want     bool
	}{
		{name: "the ArgoCD CRD established, its kind not watched yet: look again", crds: []client.Object{argoCDsCRD(true)},
			watching: map[schema.GroupVersionKind]bool{}, want: true},
		{name: "not established yet: its Established event wakes the detector", crds: []client.Object{argoCDsCRD(false)},
			watching: map[schema.GroupVersionKind]bool{}},
		{name: "every kind watched", crds: []client.Object{argoCDsCRD(true)}, watching: allWatched},
		{name: "no CRD at all: nothing to wait for", watching: map[schema.GroupVersionKind]bool{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Detector{CRDs: fixtures.FakeSpoke(t, tt.crds...).Build(), watching: tt.watching}
			assert.Equal(t, tt.want, d.definedButNotServed(context.Background()))
		})
	}
}
