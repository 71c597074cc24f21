package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/test/argocd"
)

// EnvArgoCDWithUI names an Argo CD binary whose argocd-server embeds its web UI (argocd-server
// serves index.html only from the UI built into it). Our targets cannot build one: the UI's
// source takes argo-ui from GitHub at a pinned commit, which is not reachable from CI, and
// argo-ui@1.0.0 on the npm registry does not build it (docs/guides/pull-model.md). Set, the
// hub's argocd-server runs from it and the browser subtest runs.
const EnvArgoCDWithUI = "ARGOCD_WITH_UI_BIN"

// hubUIScenario drives the real Argo CD UI in Debian's Chromium, headless: it logs in as
// admin, opens each pulled guestbook's page and finds the tree's nodes by name, then saves
// a screenshot under the test's output (GITOPS_ADDON_SCREENSHOTS, else the test's temporary
// directory). The guestbook gets a Deployment scaled to zero first, whose ReplicaSet only
// the tree has: without the tree the UI still draws the managed resources, from
// status.resources, so the test looks for the child. It fails when the tree is empty.
func hubUIScenario(t *testing.T, ctx context.Context, a *argoFleet) {
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
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(allocCtx)
	defer cancelTab()
	tab, cancelTimeout := context.WithTimeout(tab, 5*time.Minute)
	defer cancelTimeout()

	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(a.server.URL+"/login"),
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
	web := strings.ReplaceAll(unrunnableDeployment("guestbook-web"), "replicas: 1", "replicas: 0")
	_, err = a.argo.Repo.Commit("guestbook gets a Deployment scaled to zero", map[string]string{"guestbook/deployment.yaml": web})
	require.NoError(t, err)
	defer func() {
		_, err := a.argo.Repo.Commit("guestbook without its Deployment", map[string]string{"guestbook/deployment.yaml": ""})
		assert.NoError(t, err)
	}()
	dir := os.Getenv("GITOPS_ADDON_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, cluster := range []string{vanilla, openshift} {
		name := "guestbook-" + cluster
		page, closePage := chromedp.NewContext(tab) // a tab of its own; the session cookie is the browser's
		require.NoError(t, chromedp.Do(page, chromedp.Navigate(a.server.URL+"/applications/"+contract.GitOpsNamespace+"/"+name+"?view=tree")))
		var titles []string
		var last error
		ok := assert.Eventually(t, func() bool {
			titles, last = treeNodeTitles(page)
			return contains(titles, "guestbook-ui") && contains(titles, "guestbook-db") && contains(titles, "guestbook-web-")
		}, 3*time.Minute, 2*time.Second)
		if !ok {
			saveScreenshot(t, page, filepath.Join(dir, name+"-failed.png"))
		}
		require.True(t, ok, "the UI's page of %s draws the spoke's tree, the Deployment's ReplicaSet (guestbook-web-...) with it: nodes %v "+
			"(last error %v)", name, titles, last)
		png, err := chromedp.Run(page, chromedp.CaptureScreenshot())
		closePage()
		require.NoError(t, err)
		file := filepath.Join(dir, name+"-tree.png")
		require.NoError(t, os.WriteFile(file, png, 0o644))
		t.Logf("%s: the hub's Argo CD UI draws %d nodes %v; screenshot %s", name, len(titles), titles, file)
	}
}

// treeNodeTitles reads the titles of the tree's nodes the page draws now (the UI draws the
// tree as its resource-tree call and stream answer).
func treeNodeTitles(page context.Context) ([]string, error) {
	return chromedp.Run(page, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('.application-resource-tree__node-title')].map(e => e.textContent.trim())`))
}

// saveScreenshot writes the page as it is, for a failure's story.
func saveScreenshot(t *testing.T, tab context.Context, file string) {
	png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err == nil {
		err = os.WriteFile(file, png, 0o644)
	}
	t.Logf("screenshot of the failure: %s (%v)", file, err)
}

func contains(titles []string, name string) bool {
	for _, t := range titles {
		if strings.Contains(t, name) {
			return true
		}
	}
	return false
}
