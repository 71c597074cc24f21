// Package v1beta1 holds the GitOpsCluster API, wire-compatible with the GitOpsCluster of
// Red Hat Advanced Cluster Management so that existing objects apply unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=apps.open-cluster-management.io
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of GitOpsCluster.
	GroupVersion = schema.GroupVersion{Group: "apps.open-cluster-management.io", Version: "v1beta1"}

	// SchemeBuilder registers the types of this package. It is apimachinery's, so that
	// importing the API brings in no controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &GitOpsCluster{}, &GitOpsClusterList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
