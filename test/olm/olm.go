// Package olm stands in for what OLM leaves on a cluster where it installed an operator,
// as data: its Subscription and ClusterServiceVersion APIs (schemaless: gitops-addon
// reads their metadata, spec.name and status.installedCSV) and objects of them. OLM
// itself never runs in the tests.
package olm

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// Group and Version of OLM's operator APIs.
const (
	Group   = "operators.coreos.com"
	Version = "v1alpha1"
)

// CRDs are OLM's Subscription and ClusterServiceVersion APIs.
func CRDs() []*apiextensionsv1.CustomResourceDefinition {
	crd := func(plural, kind string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + "." + Group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: Group, Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: Version, Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: ptr.To(true),
					}},
				}},
			},
		}
	}
	return []*apiextensionsv1.CustomResourceDefinition{crd("subscriptions", "Subscription"), crd("clusterserviceversions", "ClusterServiceVersion")}
}

// Subscription subscribes namespace to an operator package, as `oc apply` of OpenShift
// GitOps' documented Subscription does.
func Subscription(namespace, name, pkg string) *unstructured.Unstructured {
	u := object("Subscription", namespace, name)
	_ = unstructured.SetNestedMap(u.Object, map[string]any{
		"name": pkg, "channel": "latest", "source": "redhat-operators", "sourceNamespace": "openshift-marketplace",
	}, "spec")
	return u
}

// ClusterServiceVersion is an installed operator version (named <package>.v<version>).
func ClusterServiceVersion(namespace, name, displayName string) *unstructured.Unstructured {
	u := object("ClusterServiceVersion", namespace, name)
	_ = unstructured.SetNestedField(u.Object, displayName, "spec", "displayName")
	return u
}

func object(kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(Group + "/" + Version)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}
