package crdupgrade

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

func TestLoadEmbedsTheChartCRDsAsOurs(t *testing.T) {
	crds, err := Load()
	require.NoError(t, err)
	var names []string
	for _, c := range crds {
		names = append(names, c.Name)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, json.Unmarshal(c.Apply, crd))
		assert.Equal(t, "CustomResourceDefinition", crd.Kind)
		assert.Equal(t, contract.ManagedByValue, crd.Labels[contract.LabelManagedBy])
		assert.Equal(t, strconv.Itoa(SchemaRevision), crd.Annotations[AnnotationSchemaRevision])
		assert.NotEmpty(t, c.Versions)
	}
	assert.ElementsMatch(t, []string{"gitopsclusters.apps.open-cluster-management.io", "multiclusterapplicationsetreports.apps.open-cluster-management.io"}, names)
}

func TestDecide(t *testing.T) {
	desired := CRD{Name: "gitopsclusters.apps.open-cluster-management.io", Versions: []string{"v1beta1"}}
	existing := func(labels, annotations map[string]string, stored ...string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: desired.Name, Labels: labels, Annotations: annotations},
			Status:     apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: stored},
		}
	}
	ours := map[string]string{contract.LabelManagedBy: contract.ManagedByValue}
	revision := func(rev int) map[string]string { return map[string]string{AnnotationSchemaRevision: strconv.Itoa(rev)} }
	tests := []struct {
		name    string
		current *apiextensionsv1.CustomResourceDefinition
		want    action
		why     string
	}{
		{"missing: installed", nil, apply, "installing"},
		{"installed by Helm from the chart's crds/ (no labels): upgraded", existing(nil, nil, "v1beta1"), apply, "upgrading"},
		{"ours, same revision: applied (a no-op when unchanged)", existing(ours, revision(SchemaRevision), "v1beta1"), apply, "upgrading"},
		{"ours, older revision: upgraded", existing(ours, revision(SchemaRevision-1), "v1beta1"), apply, "upgrading"},
		{"ours, newer revision: not downgraded", existing(ours, revision(SchemaRevision+1), "v1beta1"), refuse, "refusing to downgrade"},
		{"a stored version the schema drops: refused", existing(ours, revision(SchemaRevision), "v1alpha1", "v1beta1"), refuse, "stored as version v1alpha1"},
		{"OLM's: left alone", existing(map[string]string{"operators.coreos.com/openshift-gitops-operator.openshift-operators": ""}, nil), leave, "OLM"},
		{"Red Hat ACM's installer: left alone", existing(map[string]string{"installer.name": "multiclusterhub"}, nil), leave, "multiclusterhub"},
		{"another chart's: left alone", existing(map[string]string{contract.LabelManagedBy: "argocd-operator"}, nil), leave, "argocd-operator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := decide(desired, tt.current)
			assert.Equal(t, tt.want, v.action)
			assert.Contains(t, v.why, tt.why)
		})
	}
}
