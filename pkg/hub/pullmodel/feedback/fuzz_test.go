package feedback

import (
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
			KeyHealth: health, KeySync: sync, KeyRevision: revision, KeyOperationPhase: phase,
			KeyOperationStartedAt: startedAt, KeyOperationMessage: opMessage,
			KeyConditionType(0): condType, KeyConditionMessage(0): condMessage, KeyResources: resources,
		}
		s := Of(pulltest.ReportedWork("cluster1", "openshift-gitops", "guestbook-cluster1", values), "openshift-gitops", "guestbook-cluster1")
		status := HubStatus(pulltest.App(pulltest.SeedApp), s, nil)
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
