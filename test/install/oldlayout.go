package install

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/addon"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/crdinstall"
	"github.com/gitops-addon/gitops-addon/test/harness"
)

// OldLayoutWorkNames are the ManifestWorks that carried the Argo CD CRDs before the
// agent installed them: addon-framework split the addon's manifests over
// addon-<name>-deploy-0, -1, ... to keep each under OCM's 500 KiB. On upgrade
// addon-framework keeps the works it finds, removes the CRDs from their manifests and
// refills them with the new layout.
var OldLayoutWorkNames = []string{"addon-" + contract.AddonName + "-deploy-0", "addon-" + contract.AddonName + "-deploy-1"}

// oldLayoutWorkBytes is how much manifest JSON one old-layout ManifestWork holds.
const oldLayoutWorkBytes = 450 * 1024

// CreateOldLayoutWorks recreates, on the hub, what a cluster's ManifestWorks carried before
// the CRDs left them: the Argo CD CRDs with their descriptions trimmed, labelled as ours,
// annotated to be orphaned, and the orphaning rules addon-framework derived from that
// annotation, split over two ManifestWorks. It waits until OCM's work agent applied them
// on the spoke and returns the CRDs' UIDs there.
func CreateOldLayoutWorks(ctx context.Context, hub *harness.Cluster, spoke *harness.Spoke) (map[string]types.UID, error) {
	embedded, err := crdinstall.Load()
	if err != nil {
		return nil, err
	}
	works := make([]*workv1.ManifestWork, len(OldLayoutWorkNames))
	for i, name := range OldLayoutWorkNames {
		works[i] = &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: spoke.Name, Name: name,
				Labels: map[string]string{addonv1beta1.AddonLabelKey: contract.AddonName},
			},
			Spec: workv1.ManifestWorkSpec{DeleteOption: &workv1.DeleteOption{
				PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
				SelectivelyOrphan: &workv1.SelectivelyOrphan{},
			}},
		}
	}
	sizes := make([]int, len(works))
	for _, crd := range embedded.ArgoCD {
		raw, err := oldLayoutCRD(crd)
		if err != nil {
			return nil, err
		}
		i := 0
		for i < len(works)-1 && sizes[i]+len(raw) > oldLayoutWorkBytes {
			i++
		}
		sizes[i] += len(raw)
		w := works[i]
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
		w.Spec.DeleteOption.SelectivelyOrphan.OrphaningRules = append(w.Spec.DeleteOption.SelectivelyOrphan.OrphaningRules,
			workv1.OrphaningRule{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: crd.Name()})
	}
	for _, w := range works {
		if err := hub.Client.Create(ctx, w); err != nil {
			return nil, fmt.Errorf("creating the old-layout ManifestWork %s: %w", w.Name, err)
		}
	}
	uids := map[string]types.UID{}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, w := range works {
			current := &workv1.ManifestWork{}
			if err := hub.Client.Get(ctx, client.ObjectKeyFromObject(w), current); err != nil {
				return false, nil
			}
			if !meta.IsStatusConditionTrue(current.Status.Conditions, workv1.WorkApplied) {
				return false, nil
			}
		}
		for _, crd := range embedded.ArgoCD {
			onSpoke := &apiextensionsv1.CustomResourceDefinition{}
			if err := spoke.Client.Get(ctx, client.ObjectKey{Name: crd.Name()}, onSpoke); err != nil {
				return false, nil
			}
			uids[crd.Name()] = onSpoke.UID
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the work agent to apply the old-layout ManifestWorks on %s: %w", spoke.Name, err)
	}
	return uids, nil
}

// oldLayoutCRD is a CRD as the hub used to ship it: descriptions removed to fit in a
// ManifestWork, and the deletion-orphan annotation.
func oldLayoutCRD(crd *crdinstall.CRD) ([]byte, error) {
	var object map[string]any
	if err := json.Unmarshal(crd.ApplyJSON, &object); err != nil {
		return nil, err
	}
	for _, version := range object["spec"].(map[string]any)["versions"].([]any) {
		if schema, ok := version.(map[string]any)["schema"].(map[string]any); ok {
			dropDescriptions(schema["openAPIV3Schema"])
		}
	}
	metadata := object["metadata"].(map[string]any)
	metadata["annotations"].(map[string]any)[addon.AnnotationDeletionOrphan] = ""
	return json.Marshal(object)
}

// dropDescriptions removes every schema's description. A property named "description"
// is a schema (a map), not a string, and stays.
func dropDescriptions(node any) {
	switch n := node.(type) {
	case map[string]any:
		if _, isText := n["description"].(string); isText {
			delete(n, "description")
		}
		for _, child := range n {
			dropDescriptions(child)
		}
	case []any:
		for _, child := range n {
			dropDescriptions(child)
		}
	}
}

// AppliedByAgent tells whether the spoke agent's field manager server-side applied a CRD.
func AppliedByAgent(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return slices.ContainsFunc(crd.ManagedFields, func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == crdinstall.FieldManager && e.Operation == metav1.ManagedFieldsOperationApply
	})
}
