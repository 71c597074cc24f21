package crdupgrade

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// revisionHashes records, for every schema revision, the Hash of the CRDs it shipped.
// When this test fails after `make manifests` changed a CRD, bump SchemaRevision and add
// its new hash here: that is what lets an older manager see that the hub's CRDs are newer
// than its own and refuse to downgrade them.
var revisionHashes = map[int]string{
	1: "d632e748974311f5e263ac23c5e6821ca6dfe41c9ad40bf24e9a06e6539691ef",
	2: "7e3b61aaf2cbb9ecb0d650e1d1b5b3e735b1004abddfbe10a8c3112a401aba09", // spec.gitopsAddon.argoCDAgent typed and validated
	3: "49f129782af02a40d75c5bbd0ac33b9efaccb32cc6a0d79e4a4d6da642e77bc9", // ACM's empty strings accepted (argoNamespace "", empty image overrides); argoCDAgent.image acted upon
	4: "fc79efdf7ce54e0433cb05180c70b2dbead681e65d16cbf94961cdf4eb8e687c", // serverAddress rule without CEL isIP() (Kubernetes 1.31+): the CRD installs on 1.29
	5: "ccd4304e3497b0b9cb8fee7cba4674c1cfad793555fbcf5647db1eb252789138", // report: each cluster's resources (clusterConditions[].resources, resourceCount)
	6: "2ebc0ad0117923f49399856e412e3efbe39e4dd5fad27627a248719810071185", // spec.gitopsAddon.existingArgoCD, status.existingArgoCDClusters
	7: "fc893cbfee531bf96079f15cc983c508f0c732c58deb4217e88df58aba3254d9", // spec.gitopsAddon.liveResources
}

func TestSchemaRevisionIsBumpedWhenACRDChanges(t *testing.T) {
	crds, err := Load()
	require.NoError(t, err)
	got := hash(crds)
	recorded, ok := revisionHashes[SchemaRevision]
	require.True(t, ok, "SchemaRevision %d has no recorded hash: add %d: %q to revisionHashes", SchemaRevision, SchemaRevision, got)
	require.Equal(t, recorded, got,
		"the embedded CRDs changed since schema revision %d was recorded: set SchemaRevision to %d and add %d: %q to revisionHashes",
		SchemaRevision, SchemaRevision+1, SchemaRevision+1, got)
	for rev, hash := range revisionHashes {
		if rev != SchemaRevision {
			require.NotEqual(t, hash, got, "revision %d had the same CRDs: SchemaRevision was bumped without a schema change", rev)
		}
		require.LessOrEqual(t, rev, SchemaRevision, "a recorded revision is newer than SchemaRevision")
	}
}
