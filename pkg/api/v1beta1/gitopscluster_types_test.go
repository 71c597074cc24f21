package v1beta1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestArgoNamespaceDefaultsToTheGitOpsClustersOwn(t *testing.T) {
	tests := []struct {
		name, spec, want string
	}{
		{name: "set", spec: "openshift-gitops", want: "openshift-gitops"},
		{name: "empty means the GitOpsCluster's namespace, as in Red Hat ACM", spec: "", want: "team-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gc := &GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a"}, Spec: GitOpsClusterSpec{ArgoServer: ArgoServerSpec{ArgoNamespace: tt.spec}}}
			assert.Equal(t, tt.want, gc.ArgoNamespace())
		})
	}
}
