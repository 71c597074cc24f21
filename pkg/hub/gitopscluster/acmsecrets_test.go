package gitopscluster

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
)

// acmSecret is a cluster Secret as Red Hat ACM 2.9 and later write it.
func acmSecret(name, cluster string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "gitops", Name: name, UID: types.UID("acm-" + name), Labels: map[string]string{
			labelSecretType:  "cluster",
			labelACMCluster:  "true",
			LabelClusterName: cluster,
			"apps.open-cluster-management.io/cluster-server": cluster + "-control-plane",
			"apps.open-cluster-management.io/data-source":    "blank",
		}},
		Data: map[string][]byte{"name": []byte(cluster), "server": []byte("https://" + cluster + "-control-plane")},
	}
}

// clusterSecretsOf lists the Argo CD cluster Secrets registering cluster in gitops.
func clusterSecretsOf(t *testing.T, c client.Client, cluster string) []corev1.Secret {
	t.Helper()
	list := &corev1.SecretList{}
	require.NoError(t, c.List(context.Background(), list, client.InNamespace("gitops"),
		client.MatchingLabels{labelSecretType: "cluster", LabelClusterName: cluster}))
	return list.Items
}

func TestACMClusterSecretsAreTakenOverNeverDoubled(t *testing.T) {
	tests := []struct {
		name        string
		adopt       bool
		oursFirst   bool // a Secret of ours existed before ACM's was seen (an earlier gitops-addon beside ACM)
		acm         []string
		wantKept    string // "" when the cluster stays unregistered
		wantBoth    bool   // ours and ACM's both stay (nothing may be removed without adoption)
		wantProblem string
	}{
		{name: "ACM 2.9+ name, adopted in place", adopt: true, acm: []string{"c1-application-manager-cluster-secret"}, wantKept: "c1-application-manager-cluster-secret"},
		{name: "ACM's Argo CD Agent mode name, adopted in place", adopt: true, acm: []string{"cluster-c1"}, wantKept: "cluster-c1"},
		{name: "both of ACM's names: one adopted, the other removed", adopt: true,
			acm: []string{"c1-application-manager-cluster-secret", "cluster-c1"}, wantKept: "c1-application-manager-cluster-secret"},
		{name: "ours beside ACM's (an earlier gitops-addon): ours kept, ACM's removed", adopt: true, oursFirst: true,
			acm: []string{"c1-application-manager-cluster-secret"}, wantKept: "c1-cluster-secret"},
		{name: "without adopt: ACM's left alone, no second Secret, the reason on the status",
			acm: []string{"c1-application-manager-cluster-secret"}, wantProblem: `Red Hat ACM's cluster secret gitops/c1-application-manager-cluster-secret registers cluster "c1"`},
		{name: "no ACM Secret: ours", adopt: true, wantKept: "c1-cluster-secret"},
		{name: "ours beside ACM's without adopt (an earlier gitops-addon): both stay, a Warning Event names the double registration", oursFirst: true,
			acm: []string{"c1-application-manager-cluster-secret"}, wantBoth: true,
			wantProblem: `Red Hat ACM's cluster secret gitops/c1-application-manager-cluster-secret registers cluster "c1" too, beside gitops/c1-cluster-secret`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gc := gitOpsCluster("gc", "p", false)
			objs := placementObjects("p", "c1")
			r, c := newReconciler(t, append(objs, gc)...)
			ctx := context.Background()
			recorder := events.NewFakeRecorder(20)
			if tt.oursFirst {
				reconcileOnce(t, r, gc)
				r = &Reconciler{Client: c, APIReader: c} // the upgraded manager starts afresh
			}
			r.Recorder = recorder
			uids := map[string]string{}
			for _, name := range tt.acm {
				s := acmSecret(name, "c1")
				require.NoError(t, c.Create(ctx, s))
				uids[name] = string(s.UID)
			}
			if tt.adopt {
				current := &appsv1beta1.GitOpsCluster{}
				require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(gc), current))
				current.Annotations = map[string]string{appsv1beta1.AnnotationAdopt: "true"}
				require.NoError(t, c.Update(ctx, current))
			}

			got := reconcileOnce(t, r, gc)
			got = reconcileOnce(t, r, got) // a second pass changes nothing
			secrets := clusterSecretsOf(t, c, "c1")
			names := make([]string, 0, len(secrets))
			for _, s := range secrets {
				names = append(names, s.Name)
			}
			registered := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionClustersRegistered)
			require.NotNil(t, registered)
			if tt.wantBoth {
				assert.ElementsMatch(t, append([]string{ClusterSecretName("c1")}, tt.acm...), names, "nothing removed without adoption")
				close(recorder.Events)
				var warnings []string
				for e := range recorder.Events {
					if strings.HasPrefix(e, "Warning DoubleRegistration") {
						warnings = append(warnings, e)
					}
				}
				require.Len(t, warnings, 1, "one Warning Event for the double registration")
				assert.Contains(t, warnings[0], tt.wantProblem)
				return
			}
			if tt.wantKept == "" {
				assert.ElementsMatch(t, tt.acm, names, "ACM's Secrets untouched, none added")
				assert.Equal(t, metav1.ConditionFalse, registered.Status)
				assert.Contains(t, registered.Message, tt.wantProblem)
				return
			}
			assert.Equal(t, []string{tt.wantKept}, names, "exactly one cluster Secret for c1")
			kept := secrets[0]
			assert.Equal(t, "gc", kept.Labels[ownership.LabelName], "kept Secret is ours")
			if uid, wasACMs := uids[tt.wantKept]; wasACMs {
				assert.Equal(t, uid, string(kept.UID), "ACM's Secret taken over in place, not recreated")
			}
			assert.Equal(t, metav1.ConditionTrue, registered.Status, registered.Message)
			assert.True(t, slices.Contains([]string{"c1"}, string(kept.Data["name"])))
		})
	}
}
