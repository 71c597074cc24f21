package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MulticlusterApplicationSetReport reports, for one ApplicationSet whose Applications are
// pulled by managed clusters, the health and sync status of each Application on its
// cluster, and a summary. It has the ApplicationSet's name and namespace, is owned by it
// and is built from the status the clusters report through their ManifestWorks.
//
// The counters are strings, as in ACM's API, for wire compatibility.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=appsetreport;appsetreports,categories=ocm
// +kubebuilder:printcolumn:name="Clusters",type=string,JSONPath=`.statuses.summary.clusters`
// +kubebuilder:printcolumn:name="Synced",type=string,JSONPath=`.statuses.summary.synced`
// +kubebuilder:printcolumn:name="Not Synced",type=string,JSONPath=`.statuses.summary.notSynced`
// +kubebuilder:printcolumn:name="Healthy",type=string,JSONPath=`.statuses.summary.healthy`
// +kubebuilder:printcolumn:name="Not Healthy",type=string,JSONPath=`.statuses.summary.notHealthy`
// +kubebuilder:printcolumn:name="In Progress",type=string,JSONPath=`.statuses.summary.inProgress`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MulticlusterApplicationSetReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	// Statuses are the per-cluster conditions and the summary.
	// +optional
	Statuses AppConditions `json:"statuses,omitempty"`
}

// AppConditions are the status of an ApplicationSet's Applications on every cluster.
type AppConditions struct {
	// Resources the Applications deploy, on any cluster, as their clusters report them
	// (each once, sorted; at most 500).
	// +optional
	Resources []ResourceRef `json:"resources,omitempty"`
	// ClusterConditions has one entry per Application: two Applications of the
	// ApplicationSet on one cluster are two entries.
	// +optional
	ClusterConditions []ClusterCondition `json:"clusterConditions,omitempty"`
	// Summary counts the entries of ClusterConditions.
	// +optional
	Summary ReportSummary `json:"summary,omitempty"`
}

// ResourceRef is a resource an Application deploys.
type ResourceRef struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
}

// Condition is an error or a warning about an Application on a cluster.
type Condition struct {
	// Type is the kind of problem; it ends in Error or Warning (SyncError, ApplyError).
	Type string `json:"type,omitempty"`
	// Message says what went wrong.
	Message string `json:"message,omitempty"`
}

// ClusterCondition is the status of one Application on one cluster, as the cluster
// reported it (empty where it has not reported).
type ClusterCondition struct {
	// Cluster is the managed cluster.
	Cluster string `json:"cluster,omitempty"`
	// App is "<namespace>/<name>/<cluster>/<ManifestWork>" of the hub Application, as in ACM.
	App string `json:"app,omitempty"`
	// SyncStatus is Argo CD's sync status on the cluster (Synced, OutOfSync, Unknown).
	SyncStatus string `json:"syncStatus,omitempty"`
	// HealthStatus is Argo CD's health status on the cluster (Healthy, Progressing, ...).
	HealthStatus string `json:"healthStatus,omitempty"`
	// SyncRevision is the revision last synced.
	SyncRevision string `json:"syncRevision,omitempty"`
	// OperationStatePhase is the phase of the last sync operation.
	OperationStatePhase string `json:"operationStatePhase,omitempty"`
	// OperationStateStartedAt is when the last sync operation started.
	OperationStateStartedAt string `json:"operationStateStartedAt,omitempty"`
	// Conditions are the errors and warnings about the Application on the cluster.
	Conditions []Condition `json:"conditions,omitempty"`
	// Resources are the Application's resources on the cluster with their sync status,
	// health and the message of a failed one, the failed and unhealthy first. The list is
	// cut to keep the report small (at most 2,000 entries over all clusters): ResourceCount
	// says how many there are. gitops-addon's addition to ACM's schema.
	// +optional
	Resources []ClusterResource `json:"resources,omitempty"`
	// ResourceCount is how many resources the Application has on the cluster, when the
	// cluster reports them.
	// +optional
	ResourceCount *int32 `json:"resourceCount,omitempty"`
}

// ClusterResource is one resource of an Application on a cluster.
type ClusterResource struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
	// SyncStatus is the resource's sync status (Synced, OutOfSync).
	SyncStatus string `json:"syncStatus,omitempty"`
	// HealthStatus is the resource's health (Healthy, Progressing, Degraded, Missing, ...).
	HealthStatus string `json:"healthStatus,omitempty"`
	// SyncResult is the resource's result in the last sync (SyncFailed for a failed one).
	SyncResult string `json:"syncResult,omitempty"`
	// Message says what is wrong: the sync error, or the health message.
	Message string `json:"message,omitempty"`
}

// ReportSummary counts Applications by state; Clusters counts distinct clusters.
type ReportSummary struct {
	// Clusters is the number of clusters the Applications are delivered to.
	// +optional
	Clusters string `json:"clusters"`
	// Synced is the number of Applications whose sync status is Synced.
	// +optional
	Synced string `json:"synced"`
	// NotSynced is the number of the others.
	// +optional
	NotSynced string `json:"notSynced"`
	// Healthy is the number of Applications whose health is Healthy.
	// +optional
	Healthy string `json:"healthy"`
	// NotHealthy is the number of the others (Progressing included, as in ACM).
	// +optional
	NotHealthy string `json:"notHealthy"`
	// InProgress is the number of Applications whose health is Progressing.
	// +optional
	InProgress string `json:"inProgress"`
}

// MulticlusterApplicationSetReportList is a list of MulticlusterApplicationSetReports.
//
// +kubebuilder:object:root=true
type MulticlusterApplicationSetReportList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MulticlusterApplicationSetReport `json:"items"`
}
