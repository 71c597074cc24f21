package chart

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/fake"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/addon"
	spokerender "github.com/gitops-addon/gitops-addon/pkg/render"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// docs/security.md states every RBAC rule of every identity gitops-addon creates, on the
// hub (the manager chart, with its hooks, and the RoleBinding the manager's registration
// code writes for each agent) and on a spoke (what the hub ships to a sample cluster), in
// tables. TestSecurityPageStatesEveryRBACRule compares the tables with the rendered roles
// and with the SubjectAccessReview tables of the integration tests (sar_rows_test.go).
//
// The page's markup, which the test reads:
//
//	### Hub: <who>, ServiceAccount `<namespace>/<name>`         (or User `…`, Group `…`: every subject of the binding)
//	SubjectAccessReview rows in `TestX`: N allowed, M denied.    (one line per test that asks for this identity)
//	ClusterRole `<name>`, cluster-wide[, <condition>] …:         (or Role/ClusterRole `<name>`, in `<namespace>` …)
//	| API group | resources | verbs | resourceNames | why |
//
// A group cell holds backticked groups (`""` is the core group) or "non-resource URL"; the
// resources and resourceNames cells hold backticked names; verbs are comma-separated. A
// rule no SubjectAccessReview row exercises says "not SAR-checked: <reason>" in its why.
const (
	securityPage = "docs/security.md"
	// sampleCluster is the managed cluster the spoke stack and the agent's hub binding
	// are rendered for; the page writes its name as clusterPlaceholder.
	sampleCluster      = "cluster1"
	clusterPlaceholder = "<cluster>"
	nonResourceGroup   = "non-resource URL"
	notSARChecked      = "not SAR-checked:"
)

// A variant is a configuration that grants more than the defaults: the rules it adds are
// on the page under a grant line that names it (the phrase), and nowhere else.
var (
	variantArgoNamespacesEmpty = "only with `argoNamespaces` empty"
	variantArgoCDAgentMode     = "Argo CD Agent mode only"
	variantLiveResourcesReader = "only with a live-resources reader"
	variantPhrases             = []string{variantArgoNamespacesEmpty, variantArgoCDAgentMode, variantLiveResourcesReader}
)

// grantKey is who holds a role where: a binding, as the page's grant line states it.
type grantKey struct {
	Side     string // Hub or Spoke
	Identity string // the binding's subjects: "ServiceAccount ns/name", "User …", "Group …", sorted, joined by " + "
	Role     string // "ClusterRole name" or "Role name"
	Where    string // the binding's namespace; "" for a ClusterRoleBinding (cluster-wide)
}

func (g grantKey) String() string {
	where := "cluster-wide"
	if g.Where != "" {
		where = "in `" + g.Where + "`"
	}
	return fmt.Sprintf("%s, %s: %s, %s", g.Side, g.Identity, g.Role, where)
}

// ruleKey is one (API group, resource, resourceNames) of a grant; its verbs are the atoms.
type ruleKey struct {
	grantKey
	Group, Resource, Names string
}

func (k ruleKey) String() string {
	s := fmt.Sprintf("%s: group %q, resource %q", k.grantKey, k.Group, k.Resource)
	if k.Names != "" {
		s += ", resourceNames " + k.Names
	}
	return s
}

type atom struct {
	ruleKey
	Verb string
}

// grants are the atoms a configuration grants.
type grants map[atom]bool

func (g grants) union(others ...grants) grants {
	out := maps.Clone(g)
	for _, o := range others {
		maps.Copy(out, o)
	}
	return out
}

func (g grants) minus(o grants) grants {
	out := grants{}
	for a := range g {
		if !o[a] {
			out[a] = true
		}
	}
	return out
}

func placeholder(s string) string { return strings.ReplaceAll(s, sampleCluster, clusterPlaceholder) }

func identityOf(subjects []rbacv1.Subject) string {
	ids := make([]string, 0, len(subjects))
	for _, s := range subjects {
		if s.Kind == rbacv1.ServiceAccountKind {
			ids = append(ids, "ServiceAccount "+s.Namespace+"/"+s.Name)
		} else {
			ids = append(ids, s.Kind+" "+s.Name)
		}
	}
	slices.Sort(ids)
	return placeholder(strings.Join(ids, " + "))
}

func atomsOf(g grantKey, r rbacv1.PolicyRule) []atom {
	var out []atom
	names := slices.Clone(r.ResourceNames)
	slices.Sort(names)
	for _, url := range r.NonResourceURLs {
		for _, v := range r.Verbs {
			out = append(out, atom{ruleKey{g, nonResourceGroup, url, ""}, v})
		}
	}
	for _, group := range r.APIGroups {
		for _, resource := range r.Resources {
			for _, v := range r.Verbs {
				out = append(out, atom{ruleKey{g, group, resource, strings.Join(names, ", ")}, v})
			}
		}
	}
	return out
}

// grantsOf resolves every binding among objects to its role's rules. A role nothing binds,
// or a binding to a role that is not there, fails: the page could not say who holds what.
func grantsOf(t *testing.T, side, config string, objects []map[string]any) grants {
	t.Helper()
	roles := map[string][]rbacv1.PolicyRule{}
	var bindings []rbacv1.RoleBinding // a ClusterRoleBinding as a RoleBinding without a namespace
	for _, o := range objects {
		var err error
		switch o["kind"] {
		case "Role":
			var r rbacv1.Role
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(o, &r)
			roles["Role "+r.Namespace+"/"+r.Name] = r.Rules
		case "ClusterRole":
			var r rbacv1.ClusterRole
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(o, &r)
			require.Nil(t, r.AggregationRule, "%s: ClusterRole %s aggregates: the test does not follow aggregation", config, r.Name)
			roles["ClusterRole "+r.Name] = r.Rules
		case "RoleBinding":
			var b rbacv1.RoleBinding
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(o, &b)
			bindings = append(bindings, b)
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(o, &b)
			bindings = append(bindings, rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.Name}, Subjects: b.Subjects, RoleRef: b.RoleRef})
		}
		require.NoError(t, err, "%s: %v", config, o["kind"])
	}
	out := grants{}
	used := map[string]bool{}
	for _, b := range bindings {
		role := b.RoleRef.Kind + " " + b.RoleRef.Name
		if b.RoleRef.Kind == "Role" {
			role = "Role " + b.Namespace + "/" + b.RoleRef.Name
		}
		rules, ok := roles[role]
		if !ok {
			t.Errorf("%s: binding %s/%s refers to %s, which is not rendered", config, b.Namespace, b.Name, role)
			continue
		}
		used[role] = true
		g := grantKey{Side: side, Identity: identityOf(b.Subjects), Role: b.RoleRef.Kind + " " + b.RoleRef.Name, Where: placeholder(b.Namespace)}
		for _, r := range rules {
			for _, a := range atomsOf(g, r) {
				out[a] = true
			}
		}
	}
	for _, role := range slices.Sorted(maps.Keys(roles)) {
		if !used[role] {
			t.Errorf("%s: %s is rendered but nothing binds it: who holds it?", config, role)
		}
	}
	return out
}

// hubObjects renders the manager chart with the Helm SDK, its hooks included (the
// uninstall hook's RBAC is one), plus the RoleBinding the manager's registration code
// writes for the agent of sampleCluster.
func hubObjects(t *testing.T, set ...string) []map[string]any {
	t.Helper()
	rel, err := installDryRun(t, false, set...)
	require.NoError(t, err)
	objects := decodeManifest(t, rel.Manifest)
	for _, hook := range rel.Hooks {
		objects = append(objects, decodeManifest(t, hook.Manifest)...)
	}
	return append(objects, agentHubBindings(t)...)
}

func decodeManifest(t *testing.T, manifest string) []map[string]any {
	t.Helper()
	var out []map[string]any
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	for {
		doc, err := reader.Read()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		object := map[string]any{}
		require.NoError(t, utilyaml.Unmarshal(doc, &object))
		if len(object) > 0 {
			out = append(out, object)
		}
	}
}

// agentHubBindings runs the addon's registration PermissionConfig for sampleCluster, as
// addon-framework does, against a fake hub, and returns what it wrote.
func agentHubBindings(t *testing.T) []map[string]any {
	t.Helper()
	ctx := context.Background()
	kube := fake.NewClientset()
	a, err := addon.New(addon.Options{AgentImage: "ghcr.io/gitops-addon/gitops-addon:test", KubeClient: kube})
	require.NoError(t, err)
	reg := a.GetAgentAddonOptions().Registration
	require.NotNil(t, reg)
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: sampleCluster}}
	mca := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: sampleCluster, Name: contract.AddonName}}
	require.NoError(t, reg.PermissionConfig(ctx, mc, mca))
	for _, action := range kube.Actions() {
		switch action.GetVerb() {
		case "get", "list", "watch":
		default:
			require.Equal(t, "rolebindings", action.GetResource().Resource,
				"the agent's registration writes %s %s: the page's test reads only its RoleBindings", action.GetVerb(), action.GetResource().Resource)
		}
	}
	list, err := kube.RbacV1().RoleBindings("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, list.Items, "the agent's registration binds nothing")
	var out []map[string]any
	for i := range list.Items {
		object, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&list.Items[i])
		require.NoError(t, err)
		object["kind"] = "RoleBinding"
		out = append(out, object)
	}
	return out
}

// spokeObjects are the objects the hub ships to sampleCluster (pkg/render, the addon's own
// rendering, as `gitops-addon render --cluster cluster1` prints them).
func spokeObjects(t *testing.T, openShift bool, set ...string) []map[string]any {
	t.Helper()
	objects, err := spokerender.Objects(context.Background(), spokerender.Options{Cluster: sampleCluster, OpenShift: openShift, Values: set})
	require.NoError(t, err)
	out := make([]map[string]any, 0, len(objects))
	for _, o := range objects {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		require.NoError(t, err)
		if m["kind"] == nil || m["kind"] == "" {
			m["kind"] = o.GetObjectKind().GroupVersionKind().Kind
		}
		out = append(out, m)
	}
	return out
}

// configurations renders the hub and the spoke for the defaults and each variant.
type configurations struct {
	defaults grants
	// variants are the atoms each variant adds to the defaults, by phrase.
	variants map[string]grants
	// hubSAR and spokeSAR are what the integration tests' apiservers hold: the hub chart
	// with default values and the agent's binding; the spoke stack in Argo CD Agent mode,
	// with a live-resources reader and extraAPIGroups cert-manager.io
	// (TestRenderedManifestsOnARealAPIServer).
	hubSAR, spokeSAR grants
}

func render3(t *testing.T) configurations {
	t.Helper()
	hub := grantsOf(t, "Hub", "the manager chart", hubObjects(t))
	hubOpen := grantsOf(t, "Hub", "the manager chart with argoNamespaces empty", hubObjects(t, "argoNamespaces=null"))
	spoke := grantsOf(t, "Spoke", "the spoke stack (Kubernetes)", spokeObjects(t, false))
	openShift := grantsOf(t, "Spoke", "the spoke stack (OpenShift)", spokeObjects(t, true))
	require.Equal(t, spoke, openShift, "the spoke roles of an OpenShift cluster differ from a Kubernetes cluster's: the page states one set")
	agentMode := grantsOf(t, "Spoke", "the spoke stack in Argo CD Agent mode", spokeObjects(t, false,
		"argoCDAgent.mode=managed", "argoCDAgent.principalAddress=principal.example.com"))
	reader := []string{"liveResources.reader.namespace=open-cluster-management-agent-addon", "liveResources.reader.name=gitops-addon-live-resources"}
	readerMode := grantsOf(t, "Spoke", "the spoke stack with a live-resources reader", spokeObjects(t, false, reader...))
	spokeSAR := grantsOf(t, "Spoke", "the spoke stack as TestRenderedManifestsOnARealAPIServer applies it", spokeObjects(t, false, append(reader,
		"argoCDAgent.mode=managed", "argoCDAgent.principalAddress=principal.example.com", "platformExtensions.extraAPIGroups={cert-manager.io}")...))
	return configurations{
		defaults: hub.union(spoke),
		variants: map[string]grants{
			variantArgoNamespacesEmpty: hubOpen.minus(hub),
			variantArgoCDAgentMode:     agentMode.minus(spoke),
			variantLiveResourcesReader: readerMode.minus(spoke),
		},
		hubSAR:   hub,
		spokeSAR: spokeSAR,
	}
}

// pageRow is one row of a rules table.
type pageRow struct {
	line      int
	grant     grantKey
	condition string // a variant phrase; "" for the defaults
	atoms     []atom
	exempt    bool // "not SAR-checked: <reason>"
}

func (r pageRow) String() string { return fmt.Sprintf("%s:%d (%s)", securityPage, r.line, r.grant) }

// countLine is "SubjectAccessReview rows in `TestX`: N allowed, M denied." under an identity.
type countKey struct{ Side, Identity, Test string }

type securityDoc struct {
	rows   []pageRow
	counts map[countKey][2]int
}

var (
	identityHeading = regexp.MustCompile("^### (Hub|Spoke): ")
	subjectRef      = regexp.MustCompile("(ServiceAccount|User|Group) `([^`]+)`")
	grantLine       = regexp.MustCompile("^(ClusterRole|Role) `([^`]+)`, (cluster-wide|in `([^`]+)`)(.*)$")
	countLinePat    = regexp.MustCompile("^SubjectAccessReview rows in `(Test\\w+)`: (\\d+) allowed, (\\d+) denied\\.")
	strayCount      = regexp.MustCompile(`\b\d+ (rows?|allowed|denied|it must be)\b`)
	backticked      = regexp.MustCompile("`([^`]*)`")
	tableHeader     = "| API group | resources | verbs | resourceNames | why |"
)

// parseSecurityPage reads the page's identities, grants, rules tables and count lines; a
// line it cannot place fails the test with the line number.
func parseSecurityPage(t *testing.T) securityDoc {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), securityPage))
	require.NoError(t, err)
	doc := securityDoc{counts: map[countKey][2]int{}}
	var side, identity string
	var grant *grantKey
	var condition string
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		line, n := lines[i], i+1
		switch {
		case strings.HasPrefix(line, "#"):
			side, identity, grant = "", "", nil
			if m := identityHeading.FindStringSubmatch(line); m != nil {
				var ids []string
				for _, s := range subjectRef.FindAllStringSubmatch(line, -1) {
					ids = append(ids, s[1]+" "+s[2])
				}
				if len(ids) == 0 {
					t.Errorf("%s:%d: an identity heading names no ServiceAccount, User or Group in backticks: %q", securityPage, n, line)
				}
				slices.Sort(ids)
				side, identity = m[1], strings.Join(ids, " + ")
			}
		case countLinePat.MatchString(line):
			m := countLinePat.FindStringSubmatch(line)
			if identity == "" {
				t.Errorf("%s:%d: a count line outside an identity's section", securityPage, n)
				continue
			}
			allowed, _ := strconv.Atoi(m[2])
			denied, _ := strconv.Atoi(m[3])
			doc.counts[countKey{side, identity, m[1]}] = [2]int{allowed, denied}
			if strayCount.MatchString(countLinePat.ReplaceAllString(line, "")) {
				t.Errorf("%s:%d: more counts after the count line's: %q", securityPage, n, line)
			}
		case strayCount.MatchString(line):
			t.Errorf("%s:%d: a count the test does not check (%q): counts go on the count lines, %q",
				securityPage, n, strayCount.FindString(line), "SubjectAccessReview rows in `TestX`: N allowed, M denied.")
		case grantLine.MatchString(line):
			m := grantLine.FindStringSubmatch(line)
			if identity == "" {
				t.Errorf("%s:%d: a grant line outside an identity's section", securityPage, n)
				continue
			}
			grant = &grantKey{Side: side, Identity: identity, Role: m[1] + " " + m[2], Where: m[4]}
			condition = ""
			for _, phrase := range variantPhrases {
				if strings.Contains(m[5], phrase) {
					condition = phrase
				}
			}
			if condition == "" && strings.Contains(m[5], "only") {
				t.Errorf("%s:%d: the grant line says \"only\" but names none of the variants the test renders %q", securityPage, n, variantPhrases)
			}
		case strings.HasPrefix(line, "| API group"):
			if line != tableHeader {
				t.Errorf("%s:%d: a rules table's header must be %q", securityPage, n, tableHeader)
			}
			if grant == nil {
				t.Errorf("%s:%d: a rules table without a grant line (%q) before it", securityPage, n, "ClusterRole `name`, cluster-wide:")
			}
			i++ // the separator
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "|") {
				i++
				if grant == nil {
					continue
				}
				if row, ok := parseRow(t, *grant, condition, lines[i], i+1); ok {
					doc.rows = append(doc.rows, row)
				}
			}
			grant = nil
		}
	}
	return doc
}

func parseRow(t *testing.T, grant grantKey, condition, line string, n int) (pageRow, bool) {
	t.Helper()
	cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	if len(cells) != 5 {
		t.Errorf("%s:%d: %d cells, want 5 (%s)", securityPage, n, len(cells), tableHeader)
		return pageRow{}, false
	}
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	names := func(cell, what string, required bool) []string {
		var out []string
		for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
			if m[1] == `""` {
				m[1] = ""
			}
			out = append(out, m[1])
		}
		if rest := strings.Trim(backticked.ReplaceAllString(cell, ""), ", "); rest != "" {
			t.Errorf("%s:%d: %s cell %q: only backticked names, separated by commas", securityPage, n, what, cell)
		}
		if required && len(out) == 0 {
			t.Errorf("%s:%d: no %s", securityPage, n, what)
		}
		return out
	}
	var groups []string
	nonResource := cells[0] == nonResourceGroup
	if nonResource {
		groups = []string{nonResourceGroup}
	} else {
		groups = names(cells[0], "API group", true)
	}
	resources := names(cells[1], "resources", true)
	var verbs []string
	for _, v := range strings.Split(cells[2], ",") {
		v = strings.Trim(strings.TrimSpace(v), "`")
		if v == "" {
			t.Errorf("%s:%d: an empty verb in %q", securityPage, n, cells[2])
			continue
		}
		verbs = append(verbs, v)
	}
	resourceNames := names(cells[3], "resourceNames", false)
	slices.Sort(resourceNames)
	if cells[4] == "" {
		t.Errorf("%s:%d: the rule says no why", securityPage, n)
	}
	row := pageRow{line: n, grant: grant, condition: condition}
	if i := strings.Index(cells[4], notSARChecked); i >= 0 {
		row.exempt = true
		if strings.TrimSpace(strings.Trim(cells[4][i+len(notSARChecked):], ").")) == "" {
			t.Errorf("%s:%d: %q without the reason", securityPage, n, notSARChecked)
		}
	}
	for _, g := range groups {
		for _, r := range resources {
			for _, v := range verbs {
				row.atoms = append(row.atoms, atom{ruleKey{grant, g, r, strings.Join(resourceNames, ", ")}, v})
			}
		}
	}
	return row, true
}

// TestSecurityPageStatesEveryRBACRule: docs/security.md's tables hold exactly the rules the
// roles grant, by identity, role and namespace; each rule is exercised by an allowed
// SubjectAccessReview row of the integration tests (or says why not); the counts the page
// gives are the tests'; and every row of those tests agrees with the rendered roles.
func TestSecurityPageStatesEveryRBACRule(t *testing.T) {
	rendered := render3(t)
	doc := parseSecurityPage(t)
	require.NotEmpty(t, doc.rows, "%s has no rules tables", securityPage)

	t.Run("the page's rules are the roles' rules", func(t *testing.T) {
		onPage := map[string]grants{"": {}}
		seen := map[atom]pageRow{}
		for _, row := range doc.rows {
			if onPage[row.condition] == nil {
				onPage[row.condition] = grants{}
			}
			for _, a := range row.atoms {
				if earlier, ok := seen[a]; ok {
					t.Errorf("%s: %s verb %s is stated twice (first at line %d)", row, a.ruleKey, a.Verb, earlier.line)
				}
				seen[a] = row
				onPage[row.condition][a] = true
			}
		}
		compareGrants(t, "the defaults", rendered.defaults, onPage[""])
		for _, phrase := range variantPhrases {
			compareGrants(t, fmt.Sprintf("the variant %q", phrase), rendered.variants[phrase], onPage[phrase])
		}
	})

	rows := sarRows(t)
	t.Run("the SubjectAccessReview rows agree with the rendered roles", func(t *testing.T) {
		for _, r := range rows {
			granted := rendered.hubSAR
			if r.side == "Spoke" {
				granted = rendered.spokeSAR
			}
			if got := allows(granted, r); got != r.allowed {
				t.Errorf("%s: %q expects allowed=%v, the rendered roles say %v (%s)", r.where, r.name, r.allowed, got, r.attrs)
			}
		}
	})

	t.Run("every rule on the page is exercised by an allowed SubjectAccessReview row, or says why not", func(t *testing.T) {
		for _, row := range doc.rows {
			// A row exercises a rule when the rule grants what it asks, in the configuration
			// its test runs (a variant the test does not install is exercised by none).
			granted := rendered.hubSAR
			if row.grant.Side == "Spoke" {
				granted = rendered.spokeSAR
			}
			var by *sarRow
			for i, r := range rows {
				if r.allowed && r.side == row.grant.Side && r.identity == row.grant.Identity && allowsAny(granted, row.atoms, r) {
					by = &rows[i]
					break
				}
			}
			switch {
			case by == nil && !row.exempt:
				t.Errorf("%s: %s: no allowed SubjectAccessReview row exercises it; add one to the integration test that asks for this identity, or say %q with the reason",
					row, describeRow(row), notSARChecked)
			case by != nil && row.exempt:
				t.Errorf("%s: %s says %q, but %s (%q) exercises it", row, describeRow(row), notSARChecked, by.where, by.name)
			}
		}
	})

	t.Run("the page's counts are the tests'", func(t *testing.T) {
		counted := map[countKey][2]int{}
		for _, r := range rows {
			k := countKey{r.side, r.identity, r.test}
			c := counted[k]
			if r.allowed {
				c[0]++
			} else {
				c[1]++
			}
			counted[k] = c
		}
		for _, k := range slices.SortedFunc(maps.Keys(counted), compareCountKeys) {
			page, ok := doc.counts[k]
			switch {
			case !ok:
				t.Errorf("%s: %s, %s: no line %q (the test has %d allowed and %d denied rows)", securityPage, k.Side, k.Identity,
					fmt.Sprintf("SubjectAccessReview rows in `%s`: %d allowed, %d denied.", k.Test, counted[k][0], counted[k][1]), counted[k][0], counted[k][1])
			case page != counted[k]:
				t.Errorf("%s: %s, %s: the page says %d allowed and %d denied rows in %s, the test has %d and %d",
					securityPage, k.Side, k.Identity, page[0], page[1], k.Test, counted[k][0], counted[k][1])
			}
		}
		for k := range doc.counts {
			if _, ok := counted[k]; !ok {
				t.Errorf("%s: %s, %s: a count for %s, which asks nothing for this identity", securityPage, k.Side, k.Identity, k.Test)
			}
		}
	})
}

func compareCountKeys(a, b countKey) int {
	return strings.Compare(a.Side+a.Identity+a.Test, b.Side+b.Identity+b.Test)
}

func describeRow(row pageRow) string {
	keys := map[string]bool{}
	var verbs []string
	for _, a := range row.atoms {
		keys[fmt.Sprintf("%q %q", a.Group, a.Resource)] = true
		if !slices.Contains(verbs, a.Verb) {
			verbs = append(verbs, a.Verb)
		}
	}
	return fmt.Sprintf("%s [%s]", strings.Join(slices.Sorted(maps.Keys(keys)), ", "), strings.Join(verbs, ", "))
}

// compareGrants reports, by rule, what the roles grant and the page does not say, and
// what the page says and no role grants.
func compareGrants(t *testing.T, what string, granted, onPage grants) {
	t.Helper()
	verbs := func(g grants) map[ruleKey][]string {
		out := map[ruleKey][]string{}
		for a := range g {
			out[a.ruleKey] = append(out[a.ruleKey], a.Verb)
		}
		for k := range out {
			slices.Sort(out[k])
		}
		return out
	}
	want, got := verbs(granted), verbs(onPage)
	keys := slices.Collect(maps.Keys(want))
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b ruleKey) int { return strings.Compare(a.String(), b.String()) })
	for _, k := range keys {
		w, g := want[k], got[k]
		switch {
		case g == nil:
			t.Errorf("%s: %s: the roles grant [%s], the page does not state the rule", what, k, strings.Join(w, ", "))
		case w == nil:
			t.Errorf("%s: %s: the page states [%s], no role grants it", what, k, strings.Join(g, ", "))
		case !slices.Equal(w, g):
			t.Errorf("%s: %s: the roles grant verbs [%s], the page says [%s]", what, k, strings.Join(w, ", "), strings.Join(g, ", "))
		}
	}
}

// allows says whether granted lets a SubjectAccessReview row's identity do what it asks,
// as RBAC's authorizer decides it (no deny rules: any matching rule allows).
func allows(granted grants, r sarRow) bool {
	for a := range granted {
		if a.Side == r.side && a.Identity == r.identity && matches(a, r) {
			return true
		}
	}
	return false
}

func allowsAny(granted grants, atoms []atom, r sarRow) bool {
	return slices.ContainsFunc(atoms, func(a atom) bool { return granted[a] && matches(a, r) })
}

func matches(a atom, r sarRow) bool {
	if a.Verb != r.attrs.Verb && a.Verb != "*" {
		return false
	}
	if r.attrs.Path != "" {
		return a.Group == nonResourceGroup && (a.Resource == r.attrs.Path ||
			strings.HasSuffix(a.Resource, "*") && strings.HasPrefix(r.attrs.Path, strings.TrimSuffix(a.Resource, "*")))
	}
	if a.Group == nonResourceGroup || a.Group != r.attrs.Group && a.Group != "*" {
		return false
	}
	resource := r.attrs.Resource
	if r.attrs.Subresource != "" {
		resource += "/" + r.attrs.Subresource
	}
	if a.Resource != resource && a.Resource != "*" && a.Resource != "*/"+r.attrs.Subresource {
		return false
	}
	if a.Names != "" && !slices.Contains(strings.Split(a.Names, ", "), r.attrs.Name) {
		return false
	}
	return a.Where == "" || a.Where == r.attrs.Namespace
}
