package pullmodel

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/contract/appresources"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pulltest"
)

// FuzzSpokeStatusOnTheHub feeds what a spoke reports for a pulled Application (the
// ManifestWork's status feedback, which whoever controls the spoke Application's status
// or annotations writes) into the hub Application's status. No input may panic; the
// status stays plain JSON; no value the hub writes from the spoke is longer than
// maxFeedbackValue; every value marshals to YAML (kubectl get -o yaml); and the health is
// the spoke's, made printable and cut to that bound.
func FuzzSpokeStatusOnTheHub(f *testing.F) {
	summary, err := appresources.Of(appresources.Resource{Kind: "Service", Name: "guestbook-ui", Status: "Synced", Health: "Healthy"}).Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add("Healthy", "Synced", "abc123", "Succeeded", "2026-11-27T10:00:00Z", "ok", "ComparisonError", "boom", summary)
	f.Add("Degraded", "OutOfSync", "", "Failed", "", strings.Repeat("m", 20000), "", "", `{"v":1,"total":3}`)
	f.Add("", "", "", "Running", "not a time", "", "SyncError", "", "{")
	// Control characters JSON carries and YAML refuses (a CI run's finding).
	f.Add("Healthy\x7f", "\x00", "\x1b[31m", "Failed\u0090", "\xff", "\x7f", "Sync\x7fError", "\x01",
		`{"v":1,"total":1,"kinds":{"Pod\u007f":1},"resources":[{"k":"Pod","n":"web\u007f","hm":"\u0000"}],"images":["a\u0090"]}`)
	f.Fuzz(func(t *testing.T, health, sync, revision, phase, startedAt, opMessage, condType, condMessage, resources string) {
		values := map[string]string{
			FeedbackHealth: health, FeedbackSync: sync, FeedbackRevision: revision, FeedbackOperationPhase: phase,
			FeedbackOperationStartedAt: startedAt, FeedbackOperationMessage: opMessage,
			FeedbackConditionType(0): condType, FeedbackConditionMessage(0): condMessage, FeedbackResources: resources,
		}
		s := spokeStatusOf(pulltest.ReportedWork("cluster1", "openshift-gitops", "guestbook-cluster1", values), "openshift-gitops", "guestbook-cluster1")
		status := desiredHubStatus(pulltest.App(pulltest.SeedApp), s, nil)
		copied := runtime.DeepCopyJSON(status) // panics on a value that is not plain JSON
		if _, err := yaml.Marshal(copied); err != nil {
			t.Fatalf("the hub status does not marshal: %v", err)
		}
		walkStrings(copied, func(v string) {
			if len(v) > maxFeedbackValue+len("…") {
				t.Fatalf("a value of %d bytes from the spoke reached the hub status", len(v))
			}
		})
		if got, _, _ := unstructured.NestedString(status, "health", "status"); got != cutFeedback(health) {
			t.Fatalf("health %q on the hub, the spoke reported %q", got, health)
		}
	})
}

func walkStrings(v any, visit func(string)) {
	switch x := v.(type) {
	case string:
		visit(x)
	case map[string]any:
		for _, e := range x {
			walkStrings(e, visit)
		}
	case []any:
		for _, e := range x {
			walkStrings(e, visit)
		}
	}
}

// FuzzValidate feeds hub Applications, as users and ApplicationSets write them, through
// the pull model's validation. No input may panic, and every problem found has a reason
// and a message that names something to fix.
func FuzzValidate(f *testing.F) {
	f.Add(pulltest.SeedApp)
	f.Add(strings.Replace(pulltest.SeedApp, "cluster1\n", "local-cluster\n", 1))
	f.Add(`{"metadata":{"labels":{"apps.open-cluster-management.io/pull-to-ocm-managed-cluster":"true"},` +
		`"annotations":{"apps.open-cluster-management.io/ocm-managed-cluster":"","apps.open-cluster-management.io/ocm-managed-cluster-app-namespace":"Bad_NS"}}}`)
	f.Add(`{"spec":{"sources":[{},{}],"destination":{"name":"in-cluster"},"project":"p/q"}}`)
	facts := fakeFacts{clusters: map[string]bool{"cluster1": true}, placed: map[string]bool{"openshift-gitops/cluster1": true}}
	f.Fuzz(func(t *testing.T, doc string) {
		app := &unstructured.Unstructured{}
		if yaml.Unmarshal([]byte(doc), &app.Object) != nil || app.Object == nil {
			return
		}
		v, err := validate(context.Background(), app, facts)
		if err != nil {
			return
		}
		for _, p := range append(v.errors, v.warnings...) {
			if p.Reason == "" || strings.TrimSpace(p.Message) == "" {
				t.Fatalf("a problem without a reason or message: %+v", p)
			}
		}
		if v.ship && len(v.errors) > 0 {
			t.Fatalf("shipped with errors: %v", v.errors)
		}
	})
}
