// Package schemes registers every kind the hub manager reads or writes: the manager's
// wiring and the tests' fake hubs share one list, so a test cannot pass on a kind the
// manager would fail to decode.
package schemes

import (
	"fmt"

	routev1 "github.com/openshift/api/route/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

// Hub registers every kind the hub manager reads or writes.
func Hub() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, v1beta1.AddToScheme, v1alpha1.AddToScheme, apiextensionsv1.AddToScheme,
		clusterv1.Install, clusterv1beta1.Install, addonv1alpha1.Install, addonv1beta1.Install, workv1.Install,
		routev1.Install,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building the hub scheme: %w", err)
		}
	}
	return s, nil
}
