package gitopscluster

import (
	"context"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

// FuzzGitOpsClusterSpec feeds GitOpsCluster specs, as users write them, through one
// reconcile. The apiserver's CRD validation refuses much of this input before the manager
// sees it; the manager must still never panic on what reaches it, and every condition it
// reports that is not True has a reason and a message.
func FuzzGitOpsClusterSpec(f *testing.F) {
	seed := func(spec appsv1beta1.GitOpsClusterSpec) {
		raw, err := json.Marshal(spec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(raw))
	}
	seed(gitOpsCluster("gc", "all", true).Spec)
	seed(gitOpsCluster("gc", "missing", false).Spec)
	f.Add(`{"argoServer":{"argoNamespace":"Bad_NS"},"placementRef":{"kind":"Deployment","name":""}}`)
	f.Add(`{"argoServer":{"argoNamespace":"gitops"},"placementRef":{"kind":"Placement","name":"all"},` +
		`"gitopsAddon":{"enabled":true,"argoCDAgent":{"enabled":true,"serverAddress":"::1","serverPort":"x","mode":"weird"},"existingArgoCD":"Maybe"}}`)
	f.Fuzz(func(t *testing.T, specJSON string) {
		gc := gitOpsCluster("gc", "all", true)
		gc.Spec = appsv1beta1.GitOpsClusterSpec{}
		if json.Unmarshal([]byte(specJSON), &gc.Spec) != nil {
			return
		}
		r, c := newReconciler(t, append(placementObjects("all", "cluster1", "local-cluster"), gc)...)
		_, _ = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(gc)})
		out := &appsv1beta1.GitOpsCluster{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(gc), out); err != nil {
			return // removed (a finalizer-less deletion path)
		}
		for _, cond := range out.Status.Conditions {
			if cond.Status != metav1.ConditionTrue && (cond.Reason == "" || cond.Message == "") {
				t.Fatalf("condition %s=%s without a reason or a message: %+v (spec %s)", cond.Type, cond.Status, cond, specJSON)
			}
		}
	})
}
