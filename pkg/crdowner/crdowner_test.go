package crdowner

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOther(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"ours", map[string]string{"app.kubernetes.io/managed-by": "gitops-addon"}, ""},
		{"no installer labels", nil, ""},
		{"OLM by its managed label", map[string]string{"olm.managed": "true"}, "OLM (an operator subscription)"},
		{"OLM by its operator label", map[string]string{"operators.coreos.com/openshift-gitops-operator.openshift-operators": ""}, "OLM (an operator subscription)"},
		{"ACM's MultiClusterHub", map[string]string{"installer.name": "multiclusterhub"}, "the installer multiclusterhub (Red Hat ACM's MultiClusterHub)"},
		{"another chart", map[string]string{"app.kubernetes.io/managed-by": "Helm"}, "Helm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Other(tt.labels))
		})
	}
}
