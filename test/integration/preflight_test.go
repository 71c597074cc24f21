package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/doctor"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// TestDoctorHubRunsThePreflightChecklist runs `gitops-addon doctor --hub` (doctor.RunHub)
// on a real apiserver holding what a Red Hat ACM hub holds before the move: a
// MultiClusterHub, ACM's GitOpsCluster CRD of 2.14 (no spec.gitopsAddon) and its report
// CRD, labelled by ACM's installer, ACM's ClusterManagementAddOn gitops-addon on a cluster,
// a Subscription, two cluster Secrets for one cluster, a cluster not available, a pulled
// Application with two ManifestWorks. It checks each finding of the page's checklist,
// then that clearing the blockers lets the move go on, and that ACM 2.15's CRD ends the
// schema warning.
func TestDoctorHubRunsThePreflightChecklist(t *testing.T) {
	var acm214, acmMain string
	for _, crd := range acmGitOpsClusterCRDs(t) {
		switch {
		case strings.HasPrefix(crd.release, "release-2.14"):
			acm214 = crd.path
		case crd.release == "main":
			acmMain = crd.path
		}
	}
	require.NotEmpty(t, acm214)
	require.NotEmpty(t, acmMain)
	dir := t.TempDir()
	mch, subscription := filepath.Join(dir, "multiclusterhubs.yaml"), filepath.Join(dir, "subscriptions.yaml")
	require.NoError(t, os.WriteFile(mch, []byte(preserveUnknownCRD("operator.open-cluster-management.io", "MultiClusterHub", "multiclusterhubs")), 0o600))
	require.NoError(t, os.WriteFile(subscription, []byte(preserveUnknownCRD("apps.open-cluster-management.io", "Subscription", "subscriptions")), 0o600))
	paths := append(testenv.OCMCRDPaths(), acm214, mch, subscription, filepath.Join(acmFixturesDir(t), "crds", "multiclusterapplicationsetreports.v1alpha1.main.yaml"))
	env := testenv.Start(t, testenv.WithCRDPaths(append(paths, testenv.ArgoCDCRDPaths(t)...)...))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h := &hub{t: t, ctx: ctx, c: env.Client, env: env}

	for _, name := range []string{"gitopsclusters.apps.open-cluster-management.io", "multiclusterapplicationsetreports.apps.open-cluster-management.io"} {
		h.label(&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}, "installer.name", "multiclusterhub")
	}
	for _, ns := range []string{"open-cluster-management", "openshift-gitops", "team-a"} {
		h.namespace(ns)
	}
	h.applyYAML(`
apiVersion: operator.open-cluster-management.io/v1
kind: MultiClusterHub
metadata: {name: multiclusterhub, namespace: open-cluster-management}
spec: {}
status: {currentVersion: 2.16.1}
`)
	h.applyYAML(`
apiVersion: apps.open-cluster-management.io/v1
kind: Subscription
metadata: {name: legacy-app, namespace: team-a}
spec: {channel: team-a/helm}
`)
	acmAddon, err := os.ReadFile(filepath.Join(acmFixturesDir(t), "addon", "clusterManagementAddon.yaml"))
	require.NoError(t, err)
	h.applyYAML(string(acmAddon))
	for _, cluster := range []string{"spoke1", "spoke2"} {
		h.managedCluster(cluster, nil)
	}
	h.clusterConditions("spoke1", true)
	h.clusterConditions("spoke2", false)
	h.applyYAML(`
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata: {name: gitops-addon, namespace: spoke1}
spec: {installNamespace: open-cluster-management-agent-addon}
`)
	h.acmGitOpsCluster("openshift-gitops", "gitops", "", "all")
	h.acmGitOpsCluster("team-a", "team", "openshift-gitops", "all")
	for _, name := range []string{"spoke1-application-manager-cluster-secret", "spoke1-cluster-secret", "spoke2-application-manager-cluster-secret"} {
		h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-gitops", Name: name, Labels: map[string]string{
			"argocd.argoproj.io/secret-type": "cluster", "apps.open-cluster-management.io/cluster-name": strings.Split(name, "-")[0],
		}}})
	}
	h.applyYAML(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook-spoke1
  namespace: openshift-gitops
  labels: {apps.open-cluster-management.io/pull-to-ocm-managed-cluster: "true"}
spec:
  project: default
  source: {repoURL: https://example.com/repo.git, path: guestbook}
  destination: {server: https://kubernetes.default.svc, namespace: guestbook}
`)
	for _, cluster := range []string{"spoke1", "spoke2"} {
		h.applyYAML(fmt.Sprintf(`
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata:
  name: guestbook-spoke1-1a2b3
  namespace: %s
  annotations:
    apps.open-cluster-management.io/hub-application-name: guestbook-spoke1
    apps.open-cluster-management.io/hub-application-namespace: openshift-gitops
spec: {workload: {manifests: []}}
`, cluster))
	}

	run := func(t *testing.T) (int, string) {
		var out bytes.Buffer
		code := doctor.RunHub(ctx, env.Config, &out)
		t.Log(out.String())
		return code, out.String()
	}
	t.Run("ACM's hub as it stands: each check of the page, the blockers named, exit 1", func(t *testing.T) {
		code, out := run(t)
		assert.Equal(t, doctor.ProblemFound, code)
		for _, says := range []string{
			"1. ACM release and OCM's addon API", "MultiClusterHub open-cluster-management/multiclusterhub, ACM 2.16.1",
			"2. app-lifecycle (ACM's GitOps controllers)", "on: step 1 of Moving over turns it off",
			"3. nothing else needs app-lifecycle", "BLOCKER\n   1 Subscription(s)",
			"ACM's gitops-addon runs on 1 cluster(s) (spoke1)",
			"gitopsclusters.apps.open-cluster-management.io installed by the installer multiclusterhub", "its schema has no spec.gitopsAddon",
			"--set 'argoNamespaces={openshift-gitops}'",
			"spoke1 (openshift-gitops/spoke1-application-manager-cluster-secret, openshift-gitops/spoke1-cluster-secret)",
			"1 of 2 not joined or not available (spoke2)",
			"1 pulled Application(s), 1 with a ManifestWork; 1 with more than one (openshift-gitops/guestbook-spoke1)",
			"Result: a blocker",
		} {
			assert.Contains(t, out, says)
		}
	})
	t.Run("the blockers cleared: exit 0, the warnings still said", func(t *testing.T) {
		require.NoError(t, h.c.DeleteAllOf(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps.open-cluster-management.io/v1", "kind": "Subscription"}}, client.InNamespace("team-a")))
		require.NoError(t, h.c.DeleteAllOf(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ManagedClusterAddOn"}}, client.InNamespace("spoke1")))
		code, out := run(t)
		assert.Equal(t, doctor.Healthy, code)
		assert.NotContains(t, out, "BLOCKER")
		assert.Contains(t, out, "ACM's ClusterManagementAddOn gitops-addon exists, on no cluster")
		assert.Contains(t, out, "Result: no blocker; read each WARNING")
	})
	t.Run("ACM 2.15's GitOpsCluster CRD: spec.gitopsAddon, no schema warning", func(t *testing.T) {
		crd := readFixtureCRD(t, acmMain)
		current := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, h.c.Get(ctx, client.ObjectKey{Name: crd.Name}, current))
		current.Spec = crd.Spec
		require.NoError(t, h.c.Update(ctx, current))
		_, out := run(t)
		assert.NotContains(t, out, "no spec.gitopsAddon")
	})
}

// clusterConditions sets a ManagedCluster's Joined and Available conditions, as the
// registration controller would.
func (h *hub) clusterConditions(name string, available bool) {
	h.t.Helper()
	mc := &clusterv1.ManagedCluster{}
	require.NoError(h.t, h.c.Get(h.ctx, client.ObjectKey{Name: name}, mc))
	status := metav1.ConditionFalse
	if available {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionJoined, Status: metav1.ConditionTrue, Reason: "Joined"})
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: status, Reason: "Lease"})
	require.NoError(h.t, h.c.Status().Update(h.ctx, mc))
}

// preserveUnknownCRD is a CRD of a kind gitops-addon never reads but for its presence and
// a few fields (ACM's MultiClusterHub, its Subscriptions), namespaced: any content is kept.
func preserveUnknownCRD(group, kind, plural string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %s.%s}
spec:
  group: %s
  names: {kind: %s, listKind: %sList, plural: %s, singular: %s}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, plural, group, group, kind, kind, plural, strings.ToLower(kind))
}
