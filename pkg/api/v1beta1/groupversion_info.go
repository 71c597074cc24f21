// Package v1beta1 holds the GitOpsCluster API, wire-compatible with the GitOpsCluster of
// Red Hat Advanced Cluster Management so that existing objects apply unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=apps.open-cluster-management.io
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of GitOpsCluster.
	GroupVersion = schema.GroupVersion{Group: "apps.open-cluster-management.io", Version: "v1beta1"}

	// SchemeBuilder registers the types of this package.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
