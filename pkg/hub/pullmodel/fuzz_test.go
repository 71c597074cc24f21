package pullmodel

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pulltest"
)

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
