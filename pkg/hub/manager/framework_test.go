package manager

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/gitops-addon/gitops-addon/test/gosource"
)

// reviewedControllers are the controllers addon-framework's StartWithInformers starts,
// as reviewed for gitops-addon: what each needs from the informers addonManager builds
// (filtered to our addon, managed fields stripped, the indexes of addIndexers).
var reviewedControllers = []string{
	"addonconfig.NewAddonConfigController",
	"agentdeploy.NewAddonDeployController",
	"certificate.NewCSRApprovingController",
	"certificate.NewCSRSignController",
	"cmaconfig.NewCMAConfigController",
	"cmamanagedby.NewCMAManagedByController",
	"registration.NewAddonRegistrationController",
}

// reviewedInformers are the informers StartWithInformers takes from the factories
// addonManager filters: a new one would be filtered to our addon too, maybe wrongly.
var reviewedInformers = []string{
	"addonInformers.Addon().V1beta1().ClusterManagementAddOns()",
	"addonInformers.Addon().V1beta1().ManagedClusterAddOns()",
	"clusterInformers.Cluster().V1().ManagedClusters()",
	"kubeInformers.Certificates().V1().CertificateSigningRequests()",
}

// TestFrameworkControllerSet fails when an addon-framework upgrade changes what the
// manager hands it: the controllers StartWithInformers starts, the informers it takes
// from our filtered factories, or an index its controllers look objects up by that
// addIndexers does not add. Review the new controllers against addonManager's informers,
// then update the lists above.
func TestFrameworkControllerSet(t *testing.T) {
	dir := frameworkDir(t)

	started, informers := startedByStartWithInformers(t, filepath.Join(dir, "pkg", "addonmanager", "base_manager.go"))
	assert.Equal(t, reviewedControllers, started, "the controllers addon-framework's StartWithInformers starts")
	assert.Equal(t, reviewedInformers, informers, "the informers it takes from the manager's factories")

	used := indexesUsedBy(t, filepath.Join(dir, "pkg", "addonmanager", "controllers"))
	require.NotEmpty(t, used, "the framework's controllers look objects up by index")
	values := indexValues(t, filepath.Join(dir, "pkg", "index"))
	ours := indexesAdded(t)
	for _, name := range used {
		require.Contains(t, values, name, "index.%s is not a string constant of addon-framework's pkg/index", name)
		assert.Contains(t, ours, values[name], "addon-framework's controllers look objects up by index.%s: addIndexers must add it", name)
	}
}

// frameworkDir is the addon-framework module the manager is built with.
func frameworkDir(t *testing.T) string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "open-cluster-management.io/addon-framework").Output()
	require.NoError(t, err, "finding addon-framework's module")
	dir := strings.TrimSpace(string(out))
	require.DirExists(t, dir)
	return dir
}

// startedByStartWithInformers reads, from the framework's source, the controller
// constructors StartWithInformers calls and the informer accessor chains it uses.
func startedByStartWithInformers(t *testing.T, file string) (controllers, informers []string) {
	src, err := os.ReadFile(file)
	require.NoError(t, err)
	parsed, err := parser.ParseFile(token.NewFileSet(), file, src, 0)
	require.NoError(t, err)
	var body *ast.BlockStmt
	for _, decl := range parsed.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Name.Name == "StartWithInformers" {
			body = fn.Body
		}
	}
	require.NotNil(t, body, "addon-framework has no StartWithInformers in %s", file)
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
			if pkg, ok := sel.X.(*ast.Ident); ok && strings.HasPrefix(sel.Sel.Name, "New") && strings.HasSuffix(sel.Sel.Name, "Controller") {
				controllers = append(controllers, pkg.Name+"."+sel.Sel.Name)
			}
		}
		return true
	})
	informerChain := regexp.MustCompile(`\w+Informers\.\w+\(\)\.\w+\(\)\.\w+\(\)`)
	informers = append(informers, informerChain.FindAllString(string(src[body.Pos()-1:body.End()-1]), -1)...)
	slices.Sort(controllers)
	slices.Sort(informers)
	return slices.Compact(controllers), slices.Compact(informers)
}

// indexesUsedBy lists the index names (index.X constants, not the Index* functions) the
// framework's controllers refer to.
func indexesUsedBy(t *testing.T, dir string) []string {
	name := regexp.MustCompile(`\bindex\.([A-Z]\w*)`)
	var used []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range name.FindAllStringSubmatch(string(src), -1) {
			if !strings.HasPrefix(m[1], "Index") {
				used = append(used, m[1])
			}
		}
		return nil
	})
	require.NoError(t, err)
	slices.Sort(used)
	return slices.Compact(used)
}

// indexesAdded are the index names addIndexers puts on the manager's informers.
func indexesAdded(t *testing.T) []string {
	informer := func(obj runtime.Object) toolscache.SharedIndexInformer {
		return toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, obj, 0, toolscache.Indexers{})
	}
	works, addons := informer(&workv1.ManifestWork{}), informer(&addonv1beta1.ManagedClusterAddOn{})
	managementAddons := informer(&addonv1beta1.ClusterManagementAddOn{})
	require.NoError(t, addIndexers(works, addons, managementAddons))
	var names []string
	for _, informer := range []toolscache.SharedIndexInformer{works, addons, managementAddons} {
		for name := range informer.GetIndexer().GetIndexers() {
			names = append(names, name)
		}
	}
	return names
}

// indexValues maps the framework's index constants (pkg/index) to their values, the
// names informers know the indexes by.
func indexValues(t *testing.T, dir string) map[string]string {
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	values := map[string]string{}
	for _, entry := range entries {
		if !strings.HasSuffix(entry.Name(), ".go") || strings.HasSuffix(entry.Name(), "_test.go") {
			continue
		}
		constants, err := gosource.StringConstants(filepath.Join(dir, entry.Name()))
		require.NoError(t, err)
		maps.Copy(values, constants)
	}
	return values
}
