package pullmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// workPlan is everything that goes into one pulled Application's ManifestWork.
type workPlan struct {
	hub     *unstructured.Unstructured
	cluster string
	project *unstructured.Unstructured
	request spokeRequest
	// baselines are the one-shot request annotations to record (pullnames.AnnotationOperationRequest,
	// pullnames.AnnotationRefreshBaseline).
	baselines map[string]string
	// credentials are the staged copies of the hub repository credentials the
	// Application uses (pkg/hub/repocreds); the spoke agent materialises them.
	credentials []*unstructured.Unstructured
}

// desiredWork builds the ManifestWork for a plan. It also returns the destination name
// it had to clear, for the Event.
func desiredWork(p workPlan) (*workv1.ManifestWork, string, error) {
	app, clearedDestName := spokeApplication(p.hub, p.request)
	// The credentials first: the work agent applies in order, so the spoke's Argo CD
	// finds them as early as the agent can materialise them.
	objects := slices.Clone(p.credentials)
	if p.project != nil {
		objects = append(objects, spokeAppProject(p.project, app.GetNamespace()))
	}
	objects = append(objects, app)
	manifests := make([]workv1.Manifest, 0, len(objects))
	for _, o := range objects {
		raw, err := json.Marshal(o.Object)
		if err != nil {
			return nil, "", fmt.Errorf("encoding %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		manifests = append(manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	w := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{
			Name:        pullnames.WorkName(p.hub.GetNamespace(), p.hub.GetName()),
			Namespace:   p.cluster,
			Labels:      workLabels(p.hub),
			Annotations: workAnnotations(p.hub, p.baselines),
		},
		Spec: workv1.ManifestWorkSpec{
			Workload:        workv1.ManifestsTemplate{Manifests: manifests},
			ManifestConfigs: manifestConfigs(app, p.project != nil),
		},
	}
	return w, clearedDestName, nil
}

func workLabels(hub *unstructured.Unstructured) map[string]string {
	l := map[string]string{pullnames.LabelPullWork: "true", contract.LabelManagedBy: contract.ManagedByValue}
	if _, ok := applicationSetOwner(hub); ok {
		l[pullnames.LabelApplicationSet] = "true"
	}
	return l
}

func workAnnotations(hub *unstructured.Unstructured, baselines map[string]string) map[string]string {
	a := map[string]string{
		pullnames.AnnotationHubAppNamespace: hub.GetNamespace(),
		pullnames.AnnotationHubAppName:      hub.GetName(),
	}
	if owner, ok := applicationSetOwner(hub); ok {
		a[pullnames.AnnotationHostingAppSet] = hub.GetNamespace() + "/" + owner.Name
		a[pullnames.AnnotationHostingAppSetUID] = string(owner.UID)
	}
	maps.Copy(a, baselines)
	return a
}

// applicationSetOwner is the ApplicationSet that generated an Application, from its
// owner references (the ApplicationSet controller sets one, as controller).
func applicationSetOwner(app *unstructured.Unstructured) (metav1.OwnerReference, bool) {
	for _, o := range app.GetOwnerReferences() {
		if o.Kind == pullnames.ApplicationSetGVK.Kind && o.APIVersion == pullnames.ApplicationSetGVK.GroupVersion().String() {
			return o, true
		}
	}
	return metav1.OwnerReference{}, false
}

// manifestConfigs applies both objects server-side (the spoke Argo CD owns the status,
// and removes .operation and the refresh annotation when done: a server-side apply
// leaves what it writes alone) and asks for the Application's status as feedback.
func manifestConfigs(app *unstructured.Unstructured, withProject bool) []workv1.ManifestConfigOption {
	ssa := &workv1.UpdateStrategy{
		Type:            workv1.UpdateStrategyTypeServerSideApply,
		ServerSideApply: &workv1.ServerSideApplyConfig{Force: true, FieldManager: "work-agent"},
	}
	configs := []workv1.ManifestConfigOption{{
		ResourceIdentifier: workv1.ResourceIdentifier{
			Group: pullnames.ApplicationGVK.Group, Resource: "applications", Namespace: app.GetNamespace(), Name: app.GetName(),
		},
		FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: feedback.PathsFor(app)}},
		// Watch: the work agent reports a change of the spoke Application as it happens,
		// instead of at its next status poll (every 10 s by default).
		FeedbackScrapeType: workv1.FeedbackWatchType,
		UpdateStrategy:     ssa,
	}}
	if withProject {
		configs = append(configs, workv1.ManifestConfigOption{
			ResourceIdentifier: workv1.ResourceIdentifier{
				Group: pullnames.AppProjectGVK.Group, Resource: "appprojects", Namespace: app.GetNamespace(), Name: projectName(app),
			},
			// Written out, as the apiserver defaults it, so that the stored work compares equal.
			FeedbackScrapeType: workv1.FeedbackPollType,
			UpdateStrategy:     ssa,
		})
	}
	return configs
}

// workDiffers says whether the stored ManifestWork must be updated to the desired one:
// a label or annotation of ours with another value, or another spec. Manifests are
// compared as JSON values, since the apiserver may re-encode them.
func workDiffers(existing, desired *workv1.ManifestWork) bool {
	for k, v := range desired.Labels {
		if existing.Labels[k] != v {
			return true
		}
	}
	if !sameOwnAnnotations(existing.Annotations, desired.Annotations) {
		return true
	}
	if !sameManifestConfigs(existing.Spec.ManifestConfigs, desired.Spec.ManifestConfigs) ||
		!equality.Semantic.DeepEqual(existing.Spec.DeleteOption, desired.Spec.DeleteOption) ||
		len(existing.Spec.Workload.Manifests) != len(desired.Spec.Workload.Manifests) {
		return true
	}
	for i := range desired.Spec.Workload.Manifests {
		if !sameJSON(existing.Spec.Workload.Manifests[i].Raw, desired.Spec.Workload.Manifests[i].Raw) {
			return true
		}
	}
	return false
}

// ownAnnotations are the annotations of a pull ManifestWork that gitops-addon decides.
var ownAnnotations = []string{
	pullnames.AnnotationHubAppNamespace, pullnames.AnnotationHubAppName, pullnames.AnnotationHostingAppSet, pullnames.AnnotationHostingAppSetUID,
	pullnames.AnnotationOperationBaseline, pullnames.AnnotationRefreshBaseline, pullnames.AnnotationOperationRequest,
}

// sameManifestConfigs compares the stored manifestConfigs with the desired ones. A stored
// feedbackScrapeType that is empty was pruned by a ManifestWork CRD that predates the field
// (the current CRD defaults it): that hub cannot keep it, so it is no difference, else the
// ManifestWork would be written on every reconcile.
func sameManifestConfigs(existing, desired []workv1.ManifestConfigOption) bool {
	if len(existing) != len(desired) {
		return false
	}
	stored := slices.Clone(existing)
	for i := range stored {
		if stored[i].FeedbackScrapeType == "" {
			stored[i].FeedbackScrapeType = desired[i].FeedbackScrapeType
		}
	}
	return equality.Semantic.DeepEqual(stored, desired)
}

func sameOwnAnnotations(existing, desired map[string]string) bool {
	for _, k := range ownAnnotations {
		ev, eok := existing[k]
		dv, dok := desired[k]
		if eok != dok || ev != dv {
			return false
		}
	}
	return true
}

// mergeInto makes existing carry the desired labels, annotations and spec, keeping
// labels and annotations others wrote.
func mergeInto(existing, desired *workv1.ManifestWork) {
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	maps.Copy(existing.Labels, desired.Labels)
	if existing.Annotations == nil {
		existing.Annotations = map[string]string{}
	}
	for _, k := range ownAnnotations {
		if v, ok := desired.Annotations[k]; ok {
			existing.Annotations[k] = v
		} else {
			delete(existing.Annotations, k)
		}
	}
	existing.Spec = desired.Spec
}

// stampShipped records when the work's spec was last written: the apply bound counts from it.
func stampShipped(w *workv1.ManifestWork, now time.Time) {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[pullnames.AnnotationShippedAt] = now.UTC().Format(time.RFC3339)
}

// sameJSON says whether two JSON documents hold the same value. Equal bytes are the
// common case (the apiserver stores a manifest as sent, and both are encoded from maps,
// whose keys encoding/json sorts), checked before decoding both.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var av, bv any
	if json.Unmarshal(a, &av) != nil || json.Unmarshal(b, &bv) != nil {
		return false
	}
	return equality.Semantic.DeepEqual(av, bv)
}
