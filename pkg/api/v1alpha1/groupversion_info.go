// Package v1alpha1 holds the MulticlusterApplicationSetReport API, wire-compatible with
// the report of Red Hat Advanced Cluster Management, so that tools reading ACM's reports
// read ours.
//
// +kubebuilder:object:generate=true
// +groupName=apps.open-cluster-management.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of MulticlusterApplicationSetReport.
	GroupVersion = schema.GroupVersion{Group: "apps.open-cluster-management.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
