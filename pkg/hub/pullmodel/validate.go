package pullmodel

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// verdict is what validation decided for a hub Application.
type verdict struct {
	// candidate is false for an Application that is no business of the pull model.
	candidate bool
	// ship is true when a ManifestWork may carry the Application to cluster.
	ship    bool
	cluster string
	// project is the hub AppProject to ship along, nil for "default".
	project *unstructured.Unstructured
	// errors stop delivery; warnings do not.
	errors   []pullnames.Problem
	warnings []pullnames.Problem
}

// facts are the hub objects validation needs; the controller reads them from its caches.
type facts interface {
	// ClusterExists says whether a ManagedCluster of that name exists.
	ClusterExists(ctx context.Context, cluster string) (bool, error)
	// HubEvidence says whether the cluster is the hub itself, and by which rules.
	HubEvidence(ctx context.Context, cluster string) (localcluster.Evidence, error)
	// ClusterPlaced says whether a PlacementDecision in namespace lists the cluster.
	ClusterPlaced(ctx context.Context, namespace, cluster string) (bool, error)
	// AppProject returns the AppProject namespace/name, nil when there is none.
	AppProject(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error)
}

// IsPullApplication says whether a hub Application asks to be pulled.
func IsPullApplication(app *unstructured.Unstructured) bool {
	return app.GetLabels()[pullnames.LabelPull] == "true"
}

// isCandidate says whether the pull model has anything to say about an Application:
// it asks to be pulled, or names a cluster without asking (which deserves a warning).
func isCandidate(app *unstructured.Unstructured) bool {
	_, annotated := app.GetAnnotations()[pullnames.AnnotationCluster]
	return IsPullApplication(app) || annotated
}

// validate decides whether and where a hub Application may be delivered. Errors reading
// facts are returned as such (the reconcile is retried), never as a verdict.
func validate(ctx context.Context, app *unstructured.Unstructured, f facts) (verdict, error) {
	v := verdict{candidate: isCandidate(app)}
	if !v.candidate {
		return v, nil
	}
	cluster := strings.TrimSpace(app.GetAnnotations()[pullnames.AnnotationCluster])
	v.cluster = cluster
	if !IsPullApplication(app) {
		v.warnings = append(v.warnings, pullnames.Problem{Reason: v1alpha1.ReasonPullLabelMissing, Message: fmt.Sprintf(
			"the Application names cluster %q in the annotation %s but lacks the label %s: \"true\", so it is delivered "+
				"to no cluster; add the label (for an ApplicationSet, in spec.template.metadata.labels)",
			cluster, pullnames.AnnotationCluster, pullnames.LabelPull)})
		return v, nil
	}
	if cluster == "" {
		v.errors = append(v.errors, pullnames.Problem{Reason: v1alpha1.ReasonClusterAnnotationMissing, Message: fmt.Sprintf(
			"the Application has the label %s: \"true\" but no cluster in the annotation %s; set it to the managed "+
				"cluster's name (for an ApplicationSet with the clusterDecisionResource generator: '{{name}}')",
			pullnames.LabelPull, pullnames.AnnotationCluster)})
		return v, nil
	}
	if ns := app.GetAnnotations()[pullnames.AnnotationAppNamespace]; ns != "" {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			v.errors = append(v.errors, pullnames.Problem{Reason: v1alpha1.ReasonInvalidAppNamespace, Message: fmt.Sprintf(
				"the annotation %s is %q, which is not a namespace name (%s); fix it or remove it to use %q",
				pullnames.AnnotationAppNamespace, ns, strings.Join(errs, "; "), app.GetNamespace())})
			return v, nil
		}
	}
	ok, err := f.ClusterExists(ctx, cluster)
	if err != nil {
		return v, fmt.Errorf("reading ManagedCluster %s: %w", cluster, err)
	}
	if !ok {
		v.errors = append(v.errors, pullnames.Problem{Reason: v1alpha1.ReasonClusterNotFound, Message: fmt.Sprintf(
			"managed cluster %q named in the annotation %s does not exist on this hub; fix the annotation "+
				"(`kubectl get managedclusters` lists the clusters)", cluster, pullnames.AnnotationCluster)})
		return v, nil
	}
	// The hub's own Argo CD syncs Applications for the in-cluster destination directly; the
	// pull model carries work to the clusters that Argo CD does not reach. Running a pulled
	// Application on the hub would instead mean taking the skip-reconcile annotation off
	// it, which the ApplicationSet controller that owns the Application puts back at its
	// next pass: the two would fight for ever. So one aimed at the hub is refused.
	evidence, err := f.HubEvidence(ctx, cluster)
	if err != nil {
		return v, err
	}
	if evidence.IsHub() {
		v.errors = append(v.errors, pullnames.Problem{Reason: v1alpha1.ReasonHubClusterNotPulled, Message: fmt.Sprintf(
			"cluster %s is the hub itself (%s): the hub's own Argo CD syncs Applications for it directly, and nothing is shipped "+
				"there; remove the label %s and the annotations %s and %s from this Application (for an ApplicationSet, from "+
				"spec.template.metadata, or exclude %s from its generator)",
			cluster, evidence, pullnames.LabelPull, pullnames.AnnotationCluster, pullnames.AnnotationSkipReconcile, cluster)})
		return v, nil
	}
	if ok, err = f.ClusterPlaced(ctx, app.GetNamespace(), cluster); err != nil {
		return v, fmt.Errorf("reading PlacementDecisions in %s: %w", app.GetNamespace(), err)
	}
	if !ok {
		v.errors = append(v.errors, pullnames.Problem{Reason: v1alpha1.ReasonClusterNotPermitted, Message: fmt.Sprintf(
			"no PlacementDecision in namespace %q lists cluster %q, and an Application may only target the clusters "+
				"its own namespace's Placements select; add the cluster to a Placement in %q (for example the "+
				"GitOpsCluster's), or move the Application", app.GetNamespace(), cluster, app.GetNamespace())})
		return v, nil
	}
	project, found, err := appProjectFor(ctx, app, f)
	if err != nil {
		return v, err
	}
	if !found {
		v.errors = append(v.errors, pullnames.Problem{Reason: v1alpha1.ReasonAppProjectNotFound, Message: fmt.Sprintf(
			"AppProject %q used by the Application does not exist in namespace %q on the hub, so it cannot be "+
				"delivered with it; create it there, or use the project \"default\"", projectName(app), app.GetNamespace())})
		return v, nil
	}
	v.project = project
	if app.GetAnnotations()[pullnames.AnnotationSkipReconcile] != "true" {
		v.warnings = append(v.warnings, pullnames.Problem{Reason: v1alpha1.ReasonSkipReconcileMissing, Message: fmt.Sprintf(
			"the Application lacks the annotation %s: \"true\", so the hub's own Argo CD deploys it too (onto the "+
				"hub); add the annotation", pullnames.AnnotationSkipReconcile)})
	}
	v.ship = true
	return v, nil
}

// appProjectFor finds the non-default AppProject an Application uses, in the
// Application's namespace; "default" exists on every Argo CD and is never shipped.
func appProjectFor(ctx context.Context, app *unstructured.Unstructured, f facts) (*unstructured.Unstructured, bool, error) {
	name := projectName(app)
	if name == "default" {
		return nil, true, nil
	}
	p, err := f.AppProject(ctx, app.GetNamespace(), name)
	if err != nil {
		return nil, false, fmt.Errorf("reading AppProject %s/%s: %w", app.GetNamespace(), name, err)
	}
	return p, p != nil, nil
}

func projectName(app *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(app.Object, "spec", "project")
	if name == "" {
		return "default"
	}
	return name
}
