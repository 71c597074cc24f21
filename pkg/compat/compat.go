// Package compat declares which versions of the platforms around gitops-addon it supports,
// in one place: docs/operations/compatibility.md, the charts' kubeVersion and version
// checks, the Makefile's pinned builds and the tests that prove each cell are checked
// against it (test/repo's TestCompatibilityIsOneStatement).
package compat

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// KubernetesOldest is the oldest Kubernetes minor of hubs and spokes: OpenShift 4.16's,
	// the oldest Extended Update Support release many ACM hubs and spokes run. The
	// manager chart's kubeVersion refuses older ones.
	KubernetesOldest = "1.29"
	// KubernetesNewest is the newest Kubernetes minor: make test runs every integration
	// and end-to-end test on it.
	KubernetesNewest = "1.37"
	// ValidatingAdmissionPolicyV1 is the first Kubernetes minor that serves
	// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy: the agent chart renders
	// its policies only from it on.
	ValidatingAdmissionPolicyV1 = "1.30"
	// OpenShiftOldest is the OpenShift release whose Kubernetes is KubernetesOldest.
	OpenShiftOldest = "4.16"
	// OCMOldest is the oldest OCM hub release: the first that serves the addon API's
	// v1beta1, which addon-framework v1.3.0 reads (Red Hat ACM 2.16, MCE 2.11). The
	// end-to-end fleet runs it (the Makefile's OCM_VERSION), and make test-oldest gives the
	// version-sensitive integration tests its API release's CRDs (OLDEST_OCM_API_VERSION).
	OCMOldest = "1.2"
)

// HubArgoCD are the Argo CD releases whose Application, ApplicationSet and AppProject
// CRDs the pull model is proven against on the hub (TestPullModelOnEachHubArgoCD), oldest
// first; the last is the release the local fleet builds and runs.
var HubArgoCD = []string{"v2.10.0", "v2.14.21", "v3.0.23", "v3.2.11"}

// ServesValidatingAdmissionPolicyV1 says whether the cluster behind mapper serves
// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (ValidatingAdmissionPolicyV1
// and later): where it does not, the agent chart renders no policy, and no role that only
// a policy keeps narrow. An error other than "not served" (discovery unreachable) is
// returned.
func ServesValidatingAdmissionPolicyV1(mapper meta.RESTMapper) (bool, error) {
	_, err := mapper.RESTMapping(schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}, "v1")
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	return err == nil, err
}
