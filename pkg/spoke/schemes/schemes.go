// Package schemes registers the kinds the spoke agent reads and writes, on its spoke and
// on the hub: the agent's wiring and `gitops-addon doctor` share them without the
// doctor linking the agent.
package schemes

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
)

// Spoke registers the kinds the agent reads and writes on the spoke.
func Spoke() (*runtime.Scheme, error) {
	return build(clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, apiregistrationv1.AddToScheme, admissionregistrationv1.AddToScheme)
}

// Hub registers the kinds the agent touches on the hub.
func Hub() (*runtime.Scheme, error) {
	return build(addonv1beta1.Install)
}

func build(adders ...func(*runtime.Scheme) error) (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range adders {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building a scheme: %w", err)
		}
	}
	return s, nil
}
