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
// directory). It fails when the tree is empty.
func hubUIScenario(t *testing.T, ctx context.Context, a *argoFleet) {
	if os.Getenv(EnvArgoCDWithUI) == "" {
		t.Skipf("%s is not set: no Argo CD UI to drive (see its comment); the API-level proof ran", EnvArgoCDWithUI)
	}
	browser, err := exec.LookPath("chromium")
	require.NoError(t, err, "Debian's chromium is not installed (`apt-get install chromium`)")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.WindowSize(1600, 1000),
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
		chromedp.WaitVisible(chromedp.CSS(`.applications-list, .applications-tiles, .applications-list__empty-state`)),
	), "logging in to the hub's Argo CD UI")
	dir := os.Getenv("GITOPS_ADDON_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, cluster := range []string{vanilla, openshift} {
		name := "guestbook-" + cluster
		var titles []string
		ok := assert.Eventually(t, func() bool {
			titles = treeNodeTitles(tab, a.server.URL+"/applications/"+contract.GitOpsNamespace+"/"+name+"?view=tree")
			return contains(titles, "guestbook-ui") && contains(titles, "guestbook-db")
		}, 2*time.Minute, 5*time.Second)
		if !ok {
			saveScreenshot(t, tab, filepath.Join(dir, name+"-failed.png"))
		}
		require.True(t, ok, "the UI's page of %s draws the spoke's tree: nodes %v", name, titles)
		png, err := chromedp.Run(tab, chromedp.FullScreenshot(100)) // 100: PNG (below: JPEG)
		require.NoError(t, err)
		file := filepath.Join(dir, name+"-tree.png")
		require.NoError(t, os.WriteFile(file, png, 0o644))
		t.Logf("%s: the hub's Argo CD UI draws %d nodes %v; screenshot %s", name, len(titles), titles, file)
	}
}

// treeNodeTitles opens an Application's page and reads the titles of its tree's nodes,
// giving up on this attempt after 20 s.
func treeNodeTitles(tab context.Context, url string) []string {
	attempt, cancel := context.WithTimeout(tab, 20*time.Second)
	defer cancel()
	err := chromedp.Do(attempt,
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(`.application-resource-tree__node-title`)),
		chromedp.Sleep(time.Second), // the tree lays out its nodes after the first is drawn
	)
	if err != nil {
		return nil
	}
	titles, _ := chromedp.Run(attempt, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('.application-resource-tree__node-title')].map(e => e.textContent.trim())`))
	return titles
}

// saveScreenshot writes the page as it is, for a failure's story.
func saveScreenshot(t *testing.T, tab context.Context, file string) {
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
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
