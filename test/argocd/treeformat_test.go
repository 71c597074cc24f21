package argocd

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-addon/gitops-addon/pkg/argocdcache"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
	"github.com/gitops-addon/gitops-addon/test/gosource"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// treeFormatReleases are the Argo CD releases whose resource tree cache the agent reads
// (spoke) and the manager writes (hub): the newest 2.x, a 3.0 and the one we build.
var treeFormatReleases = []string{
	"github.com/argoproj/argo-cd/v2@v2.14.21",
	"github.com/argoproj/argo-cd/v3@v3.0.23",
	testenv.ArgoCDModule + "@" + testenv.ArgoCDVersion,
}

// TestCacheFormatIsArgoCDs pins pkg/argocdcache and pkg/contract/apptree to the source of
// every Argo CD release we support: the cache version every key ends with, the keys of a
// tree, of its diff and of its announcement, gzip's ".gz", and the JSON fields of both. A release that
// changes any of them fails here before a hub shows an empty tree (the e2e then reads
// what a real application controller of the built release wrote).
func TestCacheFormatIsArgoCDs(t *testing.T) {
	for _, release := range treeFormatReleases {
		t.Run(release, func(t *testing.T) {
			dir, err := testenv.ModuleDir(release)
			require.NoError(t, err)
			constants, err := gosource.StringConstants(filepath.Join(dir, "common", "common.go"))
			require.NoError(t, err)
			assert.Equal(t, argocdcache.CacheVersion, constants["CacheVersion"], "the version every cache key ends with")
			appstate := read(t, filepath.Join(dir, "util", "cache", "appstate", "cache.go"))
			assert.Contains(t, appstate, `"app|resources-tree|`, "the tree's key")
			assert.Contains(t, appstate, `"app|managed-resources|`, "the key of the diff, and the one the tree's announcement is published on")
			assert.Contains(t, appstate, "GetItem(appManagedResourcesKey(appName), &res)", "argocd-server reads the diff under that key")
			assert.Contains(t, appstate, "OnUpdated(ctx, appManagedResourcesKey(appName)", "argocd-server's tree stream listens to that announcement")
			assert.Contains(t, read(t, filepath.Join(dir, "util", "cache", "redis.go")), `key + ".gz"`, "gzip's key suffix")

			types := filepath.Join(dir, "pkg", "apis", "application", "v1alpha1", "types.go")
			for _, tc := range []struct {
				theirs  string
				ours    any
				dropped []string
			}{
				{"ApplicationTree", apptree.Tree{}, []string{"hosts"}},
				{"ResourceNode", apptree.Node{}, []string{"resourceVersion"}},
				{"ResourceRef", apptree.Ref{}, nil},
				{"HealthStatus", apptree.Health{}, nil},
				{"InfoItem", apptree.Info{}, nil},
				{"ResourceDiff", apptree.Diff{}, []string{"liveState", "diff", "resourceVersion"}},
			} {
				theirs, err := gosource.StructJSONFields(types, tc.theirs)
				require.NoError(t, err)
				theirs = slices.DeleteFunc(theirs, func(f string) bool { return slices.Contains(tc.dropped, f) })
				assert.Equal(t, theirs, jsonFields(tc.ours), "%s: our copy has exactly Argo CD's fields, without %v", tc.theirs, tc.dropped)
			}
		})
	}
}

func read(t *testing.T, path string) string {
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(raw)
}

// jsonFields are a struct's JSON names, "" for an inlined field.
func jsonFields(v any) []string {
	rt := reflect.TypeOf(v)
	out := make([]string, 0, rt.NumField())
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}
