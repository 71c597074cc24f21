package ownership

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

// TestOwnerLabelsRoundTrip: what Labels and Annotations record, Recorded and KeyOf read
// back, for a name that fits a label value and one that must be hashed; Classify tells
// the owner from another GitOpsCluster and from someone else.
func TestOwnerLabelsRoundTrip(t *testing.T) {
	long := strings.Repeat("a", 80)
	for _, gc := range []*appsv1beta1.GitOpsCluster{fixtures.GitOpsCluster("team-a", "fleet"), fixtures.GitOpsCluster("team-a", long)} {
		obj := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: Labels(gc), Annotations: Annotations(gc)}}
		key, ok := KeyOf(obj)
		assert.True(t, ok)
		assert.Equal(t, client.ObjectKeyFromObject(gc), key, "the full name, hashed in the label or not")
		assert.LessOrEqual(t, len(obj.Labels[LabelName]), 63)
		relation, _ := Classify(obj, gc)
		assert.Equal(t, OwnedByIt, relation)
		relation, owner := Classify(obj, fixtures.GitOpsCluster("team-b", "fleet"))
		assert.Equal(t, OwnedByOther, relation)
		assert.Equal(t, Of(gc), owner)
	}
	relation, _ := Classify(&corev1.Secret{}, fixtures.GitOpsCluster("team-a", "fleet"))
	assert.Equal(t, NotOwned, relation, "no managed-by label: someone else's")
}

// TestTransferChangesOnlyTheOwner: a handed-over object keeps every other label and
// annotation; the full-name annotation follows the new owner (gone when its name fits).
func TestTransferChangesOnlyTheOwner(t *testing.T) {
	from := fixtures.GitOpsCluster("team-a", strings.Repeat("a", 80))
	obj := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: Labels(from), Annotations: Annotations(from)}}
	obj.Labels["env"], obj.Annotations["example.com/note"] = "prod", "kept"

	to := fixtures.GitOpsCluster("team-b", "fleet")
	Transfer(obj, to)
	key, ok := KeyOf(obj)
	assert.True(t, ok)
	assert.Equal(t, client.ObjectKeyFromObject(to), key)
	assert.Equal(t, "prod", obj.Labels["env"])
	assert.Equal(t, map[string]string{"example.com/note": "kept"}, obj.Annotations)
}
