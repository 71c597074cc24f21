package install

import (
	"context"
	"encoding/json"
	"fmt"
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

	"github.com/gitops-addon/gitops-addon/pkg/constants"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/crdinstall"
	"github.com/gitops-addon/gitops-addon/test/harness"
)

// OldLayoutWorkName is the ManifestWork that carried the Argo CD CRDs before the agent
// installed them: addon-framework split the addon's manifests over addon-<name>-deploy-0
// and -1, and the large CRDs filled -1.
const OldLayoutWorkName = "addon-" + constants.AddonName + "-deploy-1"

// CreateOldLayoutWork recreates, on the hub, what a cluster's second ManifestWork was
// before the CRDs left the ManifestWorks: the Argo CD CRDs with their descriptions trimmed,
// labelled as ours, annotated to be orphaned, and the orphaning rules addon-framework
// derived from that annotation. It waits until OCM's work agent applied it on the spoke
// and returns the CRDs' UIDs there.
func CreateOldLayoutWork(ctx context.Context, hub *harness.Cluster, spoke *harness.Spoke) (map[string]types.UID, error) {
	embedded, err := crdinstall.Load()
	if err != nil {
		return nil, err
	}
	work := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: spoke.Name, Name: OldLayoutWorkName,
			Labels: map[string]string{addonv1beta1.AddonLabelKey: constants.AddonName},
		},
		Spec: workv1.ManifestWorkSpec{DeleteOption: &workv1.DeleteOption{
			PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
			SelectivelyOrphan: &workv1.SelectivelyOrphan{},
		}},
	}
	for _, crd := range embedded.ArgoCD {
		raw, err := oldLayoutCRD(crd)
		if err != nil {
			return nil, err
		}
		work.Spec.Workload.Manifests = append(work.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
		work.Spec.DeleteOption.SelectivelyOrphan.OrphaningRules = append(work.Spec.DeleteOption.SelectivelyOrphan.OrphaningRules,
			workv1.OrphaningRule{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: crd.Name()})
	}
	if err := hub.Client.Create(ctx, work); err != nil {
		return nil, fmt.Errorf("creating the old-layout ManifestWork: %w", err)
	}
	uids := map[string]types.UID{}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		current := &workv1.ManifestWork{}
		if err := hub.Client.Get(ctx, client.ObjectKeyFromObject(work), current); err != nil {
			return false, nil
		}
		if !meta.IsStatusConditionTrue(current.Status.Conditions, workv1.WorkApplied) {
			return false, nil
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
		return nil, fmt.Errorf("waiting for the work agent to apply the old-layout ManifestWork on %s: %w", spoke.Name, err)
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
	metadata["annotations"].(map[string]any)[constants.AnnotationDeletionOrphan] = ""
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
