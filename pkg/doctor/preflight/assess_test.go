package preflight

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ready is a hub ready for the move: ACM 2.16 with app-lifecycle on, nothing else using it,
// ACM's CRDs of 2.15 and later, one Secret per available cluster.
func ready() *Facts {
	return &Facts{
		MultiClusterHubServed: true, AddonV1beta1Served: true,
		MultiClusterHubs:    []MultiClusterHub{{Namespace: "open-cluster-management", Name: "multiclusterhub", Version: "2.16.0"}},
		AppLifecycleObjects: map[string]int{"Subscription": 0, "Channel": 0, "PlacementRule": 0},
		CRDs: []CRD{
			{Name: CRDGitOpsClusters, Exists: true, Installer: "the installer multiclusterhub (Red Hat ACM's MultiClusterHub)", GitOpsAddonField: true},
			{Name: CRDReports, Exists: true, Installer: "the installer multiclusterhub (Red Hat ACM's MultiClusterHub)"},
		},
		GitOpsClusters:     map[string]string{"openshift-gitops/gitops": "openshift-gitops"},
		ClusterSecrets:     map[string][]string{"spoke1": {"openshift-gitops/spoke1-application-manager-cluster-secret"}},
		ManagedClusters:    []ManagedCluster{{Name: "spoke1", Joined: true, Available: true}},
		PulledApplications: []string{"openshift-gitops/guestbook-spoke1"},
		PullWorks:          map[string][]string{"openshift-gitops/guestbook-spoke1": {"spoke1/guestbook-spoke1-1a2b3"}},
	}
}

func TestAssess(t *testing.T) {
	f := false
	tests := []struct {
		name     string
		change   func(*Facts)
		check    int
		severity Severity
		says     string
	}{
		{"ready: the release covered", func(*Facts) {}, 1, OK, "ACM 2.16.0"},
		{"no addon v1beta1 (ACM 2.15): the manager cannot run", func(f *Facts) { f.AddonV1beta1Served = false }, 1, Blocker, "upgrade the hub first"},
		{"a release the page does not cover", func(f *Facts) { f.MultiClusterHubs[0].Version = "2.17.0" }, 1, Warning, "covers ACM 2.9 to 2.16"},
		{"no MultiClusterHub: OCM alone", func(f *Facts) { f.MultiClusterHubServed, f.MultiClusterHubs = false, nil }, 1, OK, "not a Red Hat ACM hub"},
		{"app-lifecycle on by default", func(*Facts) {}, 2, Note, "step 1 of Moving over turns it off"},
		{"app-lifecycle off", func(h *Facts) { h.MultiClusterHubs[0].AppLifecycle = &f }, 2, Note, "step 1 of Moving over is done"},
		{"nothing else uses app-lifecycle", func(*Facts) {}, 3, OK, "no Subscriptions"},
		{"Subscriptions would stop", func(f *Facts) { f.AppLifecycleObjects["Subscription"] = 2 }, 3, Blocker, "2 Subscription(s)"},
		{"ACM's addon on clusters", func(f *Facts) { f.ACMAddon, f.AddonClusters = true, []string{"spoke1"} }, 4, Blocker, "Hub-only beside ACM's gitops-addon"},
		{"ACM's addon on no cluster", func(f *Facts) { f.ACMAddon = true }, 4, Note, "helm install refuses until then"},
		{"gitops-addon's own addon", func(f *Facts) { f.AddonClusters = []string{"spoke1"} }, 4, OK, "already moved"},
		{"ACM 2.14's GitOpsCluster schema", func(f *Facts) { f.CRDs[0].GitOpsAddonField = false }, 5, Warning, "no spec.gitopsAddon"},
		{"ACM's CRDs left as they are", func(*Facts) {}, 5, OK, "installed by the installer multiclusterhub"},
		{"argoNamespaces to install with", func(f *Facts) { f.GitOpsClusters["team/gc"] = "team" }, 6, Note, "--set 'argoNamespaces={openshift-gitops,team}'"},
		{"two Secrets for a cluster", func(f *Facts) {
			f.ClusterSecrets["spoke1"] = append(f.ClusterSecrets["spoke1"], "openshift-gitops/spoke1-cluster-secret")
		}, 7, Note, "spoke1 (openshift-gitops/spoke1-application-manager-cluster-secret, openshift-gitops/spoke1-cluster-secret)"},
		{"a cluster not available", func(f *Facts) { f.ManagedClusters[0].Available = false }, 8, Warning, "1 of 1 not joined or not available (spoke1)"},
		{"two ManifestWorks for an Application", func(f *Facts) {
			f.PullWorks["openshift-gitops/guestbook-spoke1"] = append(f.PullWorks["openshift-gitops/guestbook-spoke1"], "spoke2/guestbook-spoke1-1a2b3")
		}, 9, Note, "1 with more than one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			facts := ready()
			tt.change(facts)
			findings := Assess(facts)
			require.Len(t, findings, 9, "one finding per check of the page")
			got := findings[tt.check-1]
			assert.Equal(t, tt.check, got.Check)
			assert.Equal(t, tt.severity, got.Severity, got.Message)
			assert.Contains(t, got.Message, tt.says)
		})
	}
}

func TestWriteSaysWhatBlocks(t *testing.T) {
	facts := ready()
	var out bytes.Buffer
	Write(&out, "https://hub", Assess(facts))
	assert.Contains(t, out.String(), "Result: ready for step 1")
	assert.Equal(t, Note, Worst(Assess(facts)))

	facts.AppLifecycleObjects["Channel"] = 1
	out.Reset()
	Write(&out, "https://hub", Assess(facts))
	assert.Contains(t, out.String(), "3. nothing else needs app-lifecycle")
	assert.Contains(t, out.String(), "BLOCKER")
	assert.Contains(t, out.String(), "Result: a blocker")
}

func TestManyClustersAreSummed(t *testing.T) {
	facts := ready()
	facts.ManagedClusters = nil
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		facts.ManagedClusters = append(facts.ManagedClusters, ManagedCluster{Name: name})
	}
	assert.Contains(t, Assess(facts)[7].Message, "(a, b, c, d, e, and 2 more)")
}
