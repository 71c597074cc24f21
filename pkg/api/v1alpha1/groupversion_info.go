// Package v1alpha1 holds the MulticlusterApplicationSetReport API, wire-compatible with
// the report of Red Hat Advanced Cluster Management, so that tools reading ACM's reports
// read ours.
//
// +kubebuilder:object:generate=true
// +groupName=apps.open-cluster-management.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of MulticlusterApplicationSetReport.
	GroupVersion = schema.GroupVersion{Group: "apps.open-cluster-management.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package. It is apimachinery's, so that
	// importing the API brings in no controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &MulticlusterApplicationSetReport{}, &MulticlusterApplicationSetReportList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
