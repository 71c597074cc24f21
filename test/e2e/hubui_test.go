package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
	"github.com/gitops-addon/gitops-addon/test/argocd"
)

// EnvArgoCDWithUI names an Argo CD binary whose argocd-server embeds its web UI (argocd-server
// serves index.html only from the UI built into it): `make argocd-ui` builds one wherever
// argo-ui can be fetched (the UI's source takes it from GitHub at a pinned commit, which CI
// here cannot reach; argo-ui@1.0.0 on the npm registry does not build it:
// docs/guides/pull-model.md), and make sets this to it. Set, the
// hub's argocd-servers run from it and the browser subtests run: the basic pull model's
// (hubUIScenario, TestRealPods' with the guestbook's running Pod and, with OCM's addons,
// TestLiveResourcesOnRealPods' podPagesInBrowser) and, with the real argocd-agent, Argo CD
// Agent mode's (podPagesInBrowser).
const EnvArgoCDWithUI = "ARGOCD_WITH_UI_BIN"

// hubUIScenario drives the real Argo CD UI in Debian's Chromium, headless: it logs in as
// admin, opens each pulled guestbook's page and finds the tree's nodes by name, then saves
// a screenshot under the test's output (GITOPS_ADDON_SCREENSHOTS, else the test's temporary
// directory). The guestbook gets a Deployment scaled to zero first, whose ReplicaSet only
// the tree has: without the tree the UI still draws the managed resources, from
// status.resources, so the test looks for the child. It fails when the tree is empty. It
// then opens the ConfigMap's panel at its desired manifest, which the UI has only from the
// diff the spoke shipped with the tree.
func hubUIScenario(t *testing.T, ctx context.Context, a *argoFleet) {
	tab := logIntoHubUI(t, ctx, a.server.URL)
	web := strings.ReplaceAll(unrunnableDeployment("guestbook-web"), "replicas: 1", "replicas: 0")
	_, err := a.argo.Repo.Commit("guestbook gets a Deployment scaled to zero", map[string]string{"guestbook/deployment.yaml": web})
	require.NoError(t, err)
	defer func() {
		_, err := a.argo.Repo.Commit("guestbook without its Deployment", map[string]string{"guestbook/deployment.yaml": ""})
		assert.NoError(t, err)
	}()
	for _, cluster := range []string{vanilla, openshift} {
		// The Deployment's ReplicaSet (guestbook-web-...) is a child only the tree has.
		page := openTree(t, tab, a.server.URL, contract.GitOpsNamespace, "guestbook-"+cluster, "guestbook-ui", "guestbook-db", "guestbook-web-")
		// A managed resource's panel loads the diff first: the spoke's, carried with the tree.
		configMap := apptree.Node{Ref: apptree.Ref{Kind: "ConfigMap", Namespace: "guestbook", Name: "guestbook-ui"}}
		page.showPanel(t, "the ConfigMap's desired manifest, from the spoke's diff", configMap, "summary", "Desired Manifest", "configmap-desired", func(text string, _ []string) bool {
			return strings.Contains(text, "kind: ConfigMap") && strings.Contains(text, "title: Guestbook")
		})
	}
}

// openTree opens the UI's page of Application app in the hub namespace namespace and waits
// until the tree it draws has a node titled with each of want (the test stops when one
// never shows: every later view needs the tree), saving <namespace>-<app>-tree.png. It
// returns the page, for the views of its nodes.
func openTree(t *testing.T, tab context.Context, serverURL, namespace, app string, want ...string) appPage {
	page := appPage{tab: tab, url: serverURL + "/applications/" + namespace + "/" + app, file: namespace + "-" + app}
	drawn := page.show(t, fmt.Sprintf("the spoke's tree with %v", want), "view=tree", "", "tree", treeWait, func(_ string, titles []string) bool {
		for _, w := range want {
			if !contains(titles, w) {
				return false
			}
		}
		return true
	})
	require.True(t, drawn, "the UI's page of %s/%s draws the spoke's tree", namespace, app)
	return page
}

// podPagesInBrowser opens, in the real Argo CD UI of a hub argocd-server that reads the
// spoke's live resources (Argo CD Agent mode's principal, or cluster-proxy in the basic
// pull model), the page of Application app in the hub namespace namespace: the tree down to
// its running Pod (and a node titled with each of treeNodes), the Pod's live manifest and
// its log lines, all read from the spoke, each saved as a screenshot.
func podPagesInBrowser(t *testing.T, ctx context.Context, serverURL, namespace, app string, pod apptree.Node, treeNodes ...string) {
	require.NotEmpty(t, pod.Name, "the API-level subtest found the Pod first")
	tab := logIntoHubUI(t, ctx, serverURL)
	page := openTree(t, tab, serverURL, namespace, app, append([]string{pod.Name}, treeNodes...)...)
	// A Pod is never in Git, and its uid is the spoke's: the manifest is the live one.
	page.showPanel(t, "the Pod's live manifest", pod, "summary", "", "pod-manifest", func(text string, _ []string) bool {
		return strings.Contains(text, "kind: Pod") && strings.Contains(text, "uid: "+pod.UID)
	})
	page.showPanel(t, "the Pod's logs", pod, "logs", "", "pod-logs", func(text string, _ []string) bool {
		return strings.Contains(text, "podcheck: pod "+pod.Name+" serving on")
	})
}

// appPage is an Application's page in the hub's Argo CD UI, each view of it opened in a
// tab of its own and saved as <file>-<name>.png.
type appPage struct {
	tab       context.Context
	url, file string
}

// showPanel opens the panel of one node of the tree (the UI's own address of a selected
// node, SelectNode in Argo CD's ui/: group, kind, namespace, name and the container's
// index) at one of its tabs, and clicks the inner tab titled inner, if any (the summary's
// live manifest, diff and desired manifest are not in the address).
func (p appPage) showPanel(t *testing.T, what string, n apptree.Node, tab, inner, name string, want func(text string, titles []string) bool) {
	selected := url.Values{"view": {"tree"}, "node": {n.Group + "/" + n.Kind + "/" + n.Namespace + "/" + n.Name + "/0"}, "tab": {tab}}
	p.show(t, what, selected.Encode(), inner, name, panelWait, want)
}

// How long a view may take to show: a tree waits for the spoke's Argo CD to compare and the
// agent to ship what it found; a node's panel only for argocd-server's answer.
const (
	treeWait  = 3 * time.Minute
	panelWait = 2 * time.Minute
)

// show opens the page with query (and clicks the tab titled click, if any) and waits up to
// within until want holds of its text and tree, saving <file>-<name>.png either way; a view
// that never shows is logged with the page's text and fails the test, and show returns false.
func (p appPage) show(t *testing.T, what, query, click, name string, within time.Duration, want func(text string, titles []string) bool) bool {
	page, closePage := chromedp.NewContext(p.tab)
	defer closePage()
	require.NoError(t, chromedp.Do(page, chromedp.Navigate(p.url+"?"+query)))
	var text string
	var titles []string
	var last error
	ok := assert.Eventually(t, func() bool {
		if click != "" {
			_, _ = chromedp.Run(page, chromedp.Evaluate[bool](`(() => { const tab = [...document.querySelectorAll('.tabs__nav a, .tabs__nav div')]
				.find(e => e.textContent.trim().toLowerCase() === `+strconv.Quote(strings.ToLower(click))+`); if (tab) tab.click(); return !!tab; })()`))
		}
		var errTitles, errText error
		titles, errTitles = treeNodeTitles(page)
		text, errText = pageText(page)
		last = errors.Join(errTitles, errText)
		return want(text, titles)
	}, within, 2*time.Second, "%s in the UI: %s", p.file, what)
	file := filepath.Join(screenshotDir(t), p.file+"-"+name+".png")
	shot := saveScreenshot(page, file)
	if !ok {
		t.Logf("%s: %s not found; tree nodes %v; the page's text: %q; last error %v; screenshot %s (%v)", p.file, what, titles, text, last, file, shot)
		return false
	}
	require.NoError(t, shot)
	t.Logf("%s: the hub's Argo CD UI shows %s (%d tree nodes); screenshot %s", p.file, what, len(titles), file)
	return true
}

// logIntoHubUI starts Debian's Chromium, headless, and logs in to the hub's Argo CD UI as
// admin; it skips the test when no Argo CD with its UI was given (EnvArgoCDWithUI). It
// returns the logged-in tab, blank: each page is opened in a tab of its own
// (chromedp.NewContext of it), which shares the session cookie.
func logIntoHubUI(t *testing.T, ctx context.Context, serverURL string) context.Context {
	if os.Getenv(EnvArgoCDWithUI) == "" {
		t.Skipf("%s is not set: no Argo CD UI to drive (see its comment); the API-level proof ran", EnvArgoCDWithUI)
	}
	browser, err := exec.LookPath("chromium")
	require.NoError(t, err, "Debian's chromium is not installed (`apt-get install chromium`)")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
		// A small /dev/shm crashes the renderer of a page that draws a tree ("Not attached to an active page").
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1600, 1000),
		chromedp.UserDataDir(t.TempDir()))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelTab)
	tab, cancelTimeout := context.WithTimeout(tab, 5*time.Minute)
	t.Cleanup(cancelTimeout)

	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(serverURL+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`input[name=username]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=username]`), "admin"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), argocd.AdminPassword),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
	), "logging in to the hub's Argo CD UI")
	require.Eventually(t, func() bool {
		href, err := chromedp.Run(tab, chromedp.Evaluate[string](`location.href`))
		return err == nil && !strings.Contains(href, "/login")
	}, time.Minute, 200*time.Millisecond, "the UI lets admin in")
	// Each page holds server-sent event streams open, and Chromium allows six connections
	// per host: a page is left (about:blank) or closed before the next one opens.
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate("about:blank")))
	return tab
}

// screenshotDir is where the browser tests save their screenshots:
// GITOPS_ADDON_SCREENSHOTS, else the test's temporary directory.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("GITOPS_ADDON_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// pageText is the text the page shows now, with the editor's non-breaking spaces (the
// live manifest's YAML) made plain.
func pageText(page context.Context) (string, error) {
	return chromedp.Run(page, chromedp.Evaluate[string](`document.body.innerText.replace(/\u00a0/g, ' ')`))
}

// treeNodeTitles reads the titles of the tree's nodes the page draws now (the UI draws the
// tree as its resource-tree call and stream answer).
func treeNodeTitles(page context.Context) ([]string, error) {
	return chromedp.Run(page, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('.application-resource-tree__node-title')].map(e => e.textContent.trim())`))
}

// saveScreenshot writes the page as it is to file.
func saveScreenshot(tab context.Context, file string) error {
	png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		return err
	}
	return os.WriteFile(file, png, 0o644)
}

func contains(titles []string, name string) bool {
	for _, t := range titles {
		if strings.Contains(t, name) {
			return true
		}
	}
	return false
}
