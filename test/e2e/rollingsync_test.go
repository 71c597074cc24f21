package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/gitopscluster"
	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/install"
)

// What the RollingSync scenario deploys and where: its own ApplicationSet, Git path and
// spoke namespace, so that it shares nothing with the other subtests.
const (
	rolloutAppSet = "rollout"
	// rolloutClusterLabel is the ManagedCluster label the steps follow; the GitOpsCluster
	// controller copies it onto the clusters' Argo CD Secrets, where the cluster generator reads it.
	rolloutClusterLabel = "e2e-rollout-wave"
	// rolloutAppLabel is the Application label the RollingSync steps select on (the
	// ApplicationSet controller selects Applications, not clusters).
	rolloutAppLabel = "rollout-wave"
)

// unrunnableDeployment is a Deployment that never becomes available (its image cannot be
// pulled, where a kubelet runs at all, and its progress deadline is 1 s): Argo CD calls it
// Progressing, then Degraded.
func unrunnableDeployment(name string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: 1
  progressDeadlineSeconds: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec: {containers: [{name: web, image: "registry.invalid/%[1]s:does-not-exist"}]}
`, name)
}

// rollingSyncScenario: a hub ApplicationSet with strategy RollingSync over two clusters,
// step 1 the cluster labelled first, step 2 the one labelled second. The hub's
// ApplicationSet controller decides from the hub Applications alone, so everything it
// reads there (health, sync status and revision, the operation's phase) must come back
// from the spokes through the pull model's status path, and the sync it asks for (the hub
// Application's operation) must reach the spoke.
//
//   - step 1's app broken (a Deployment that never becomes available): step 1 is synced,
//     is not Healthy, and step 2's cluster stays unsynced;
//   - fixed in Git (the Deployment removed): step 1 syncs again and becomes Healthy, then,
//     and only then (the spokes' own timestamps say so), step 2 syncs and becomes Healthy;
//   - the ApplicationSet's status.applicationStatus goes Waiting, Pending, Progressing,
//     Healthy for each.
func rollingSyncScenario(t *testing.T, ctx context.Context, a *argoFleet) {
	first, second := vanilla, openshift
	appFirst, appSecond := rolloutAppSet+"-"+first, rolloutAppSet+"-"+second
	hub := a.f.Hub
	start := time.Now()
	// mark logs how far the scenario is, so that a slow phase shows in the test's output.
	mark := func(what string) {
		t.Logf("%s: %s after the start", what, time.Since(start).Round(100*time.Millisecond))
	}

	_, err := a.argo.Repo.Commit("rollout: a ConfigMap and a Deployment that cannot run", map[string]string{
		"rollout/configmap.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: rollout-settings}\ndata: {wave: rolling}\n",
		"rollout/deployment.yaml": unrunnableDeployment("rollout-web"),
	})
	require.NoError(t, err)

	for cluster, wave := range map[string]string{first: "first", second: "second"} {
		require.NoError(t, install.LabelCluster(ctx, hub, cluster, rolloutClusterLabel, wave))
		require.Eventually(t, func() bool {
			s := &corev1.Secret{}
			return hub.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: gitopscluster.ClusterSecretName(cluster)}, s) == nil &&
				s.Labels[rolloutClusterLabel] == wave
		}, time.Minute, time.Second, "the Argo CD cluster Secret of %s carries the ManagedCluster's label %s=%s", cluster, rolloutClusterLabel, wave)
	}

	mark("the cluster Secrets carry the wave labels")
	history := watchAppSetStatus(t, ctx, a, rolloutAppSet)
	seenFirst := watchSpokeApp(t, ctx, a, first, appFirst)
	seenSecond := watchSpokeApp(t, ctx, a, second, appSecond)
	appSet := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: %[1]s, namespace: openshift-gitops}
spec:
  generators:
  - clusters:
      selector:
        matchExpressions: [{key: %[2]s, operator: Exists}]
  strategy:
    type: RollingSync
    rollingSync:
      steps:
      - matchExpressions: [{key: %[3]s, operator: In, values: [first]}]
      - matchExpressions: [{key: %[3]s, operator: In, values: [second]}]
  template:
    metadata:
      name: '%[1]s-{{name}}'
      labels:
        apps.open-cluster-management.io/pull-to-ocm-managed-cluster: "true"
        %[3]s: '{{metadata.labels.%[2]s}}'
      annotations:
        apps.open-cluster-management.io/ocm-managed-cluster: '{{name}}'
        argocd.argoproj.io/skip-reconcile: "true"
      finalizers: [resources-finalizer.argocd.argoproj.io]
    spec:
      project: default
      source: {repoURL: %[4]q, path: rollout, targetRevision: HEAD}
      destination: {server: '{{server}}', namespace: rollout}
      syncPolicy:
        automated: {prune: true}
        syncOptions: [CreateNamespace=true]
`, rolloutAppSet, rolloutClusterLabel, rolloutAppLabel, a.argo.Repo.URL())), &appSet.Object))
	require.NoError(t, hub.Client.Create(ctx, appSet))
	defer cleanUpRollout(t, ctx, a, appSet, appFirst, appSecond)

	// Step 1 broken: synced by the ApplicationSet controller through the hub Application's
	// operation, never Healthy.
	mark("the ApplicationSet created")
	firstSpoke, secondSpoke := a.spokes[first].Cluster, a.spokes[second].Cluster
	for cluster, app := range map[string]string{first: appFirst, second: appSecond} {
		waitApp(t, ctx, a.spokes[cluster].Cluster, contract.GitOpsNamespace, app, 3*time.Minute, func(app *unstructured.Unstructured) bool {
			_, automated, _ := unstructured.NestedMap(app.Object, "spec", "syncPolicy", "automated")
			return !automated
		}, "want it on the spoke without automated sync: the ApplicationSet controller took the syncs over")
	}
	waitApp(t, ctx, firstSpoke, contract.GitOpsNamespace, appFirst, 3*time.Minute, func(app *unstructured.Unstructured) bool {
		phase, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase")
		h, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
		return phase == "Succeeded" && h == "Degraded"
	}, "want step 1 synced by the rollout, its Deployment Degraded")
	waitApp(t, ctx, hub, contract.GitOpsNamespace, appFirst, time.Minute, func(app *unstructured.Unstructured) bool {
		h, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
		return h == "Degraded"
	}, "want the hub Application Degraded, as its spoke reports")
	history.waitFor(t, appFirst, "Progressing", time.Minute)
	mark("step 1 synced and Degraded, Progressing in the ApplicationSet")

	// Held: while the spoke's Argo CD compares step 2's Application twice more (its
	// reconciledAt moves on twice: the positive control, every 15 s resync), step 2's
	// cluster is not synced, and the ApplicationSet keeps it Waiting; checked every second.
	held := time.Now()
	reconciles := map[string]bool{}
	require.NoError(t, wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		spokeApp := application(contract.GitOpsNamespace, appSecond)
		require.NoError(t, secondSpoke.Client.Get(ctx, client.ObjectKeyFromObject(spokeApp), spokeApp))
		op, started, _ := unstructured.NestedMap(spokeApp.Object, "status", "operationState")
		require.False(t, started, "step 2's Application on %s was synced while step 1 is broken: %v", second, op)
		_, queued, _ := unstructured.NestedMap(spokeApp.Object, "operation")
		require.False(t, queued, "step 2's Application on %s was asked to sync while step 1 is broken", second)
		s, _, _ := unstructured.NestedString(spokeApp.Object, "status", "sync", "status")
		require.Equal(t, "OutOfSync", s, "step 2's Application on %s", second)
		require.Equal(t, "Waiting", history.latest(appSecond).Status, "step 2 in the ApplicationSet's status")
		if at, _, _ := unstructured.NestedString(spokeApp.Object, "status", "reconciledAt"); at > held.UTC().Format(time.RFC3339) {
			reconciles[at] = true
		}
		return len(reconciles) >= 2, nil
	}), "step 2's Application on %s reconciled twice by its Argo CD while held", second)
	t.Logf("step 1 broken: step 2 held for %v; ApplicationSet status: %s", time.Since(held).Round(time.Second), history.summary())

	// Fixed in Git: the Deployment goes. The rollout starts again from step 1.
	fixed, err := a.argo.Repo.Commit("rollout: without the Deployment", map[string]string{"rollout/deployment.yaml": ""})
	require.NoError(t, err)
	mark("the fix committed")
	for cluster, app := range map[string]string{first: appFirst, second: appSecond} {
		waitApp(t, ctx, a.spokes[cluster].Cluster, contract.GitOpsNamespace, app, 4*time.Minute, func(app *unstructured.Unstructured) bool {
			s, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
			h, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
			rev, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
			phase, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase")
			return s == "Synced" && h == "Healthy" && rev == fixed && phase == "Succeeded"
		}, "want it synced to %s by the rollout, Healthy", fixed)
	}
	for _, app := range []string{appFirst, appSecond} {
		history.waitFor(t, app, "Healthy", 2*time.Minute)
	}
	mark("both steps synced on the fix and Healthy")

	// The spokes' timestamps: step 2's sync started once step 1 was Healthy, not before.
	a1 := spokeApplication(t, ctx, a, first, appFirst)
	a2 := spokeApplication(t, ctx, a, second, appSecond)
	healthy1 := timeAt(t, a1, "status", "health", "lastTransitionTime")
	finished1 := timeAt(t, a1, "status", "operationState", "finishedAt")
	started2 := timeAt(t, a2, "status", "operationState", "startedAt")
	t.Logf("on %s, step 1's sync finished at %s and the Application was Healthy at %s; on %s, step 2's sync started at %s (%v later)",
		first, finished1.Format(time.RFC3339), healthy1.Format(time.RFC3339), second, started2.Format(time.RFC3339), started2.Sub(healthy1))
	assert.False(t, started2.Before(healthy1), "step 2 started syncing (%s) before step 1 was Healthy (%s)", started2, healthy1)
	assert.False(t, started2.Before(finished1), "step 2 started syncing (%s) before step 1's sync finished (%s)", started2, finished1)
	t.Logf("syncs completed (status.history): %s %d, %s %d", appFirst, len(syncHistory(a1)), appSecond, len(syncHistory(a2)))

	// The same to the millisecond, as watched on the spoke apiservers: step 2's Application
	// was first asked to sync (or began one) after step 1's was Healthy and Synced on the fix.
	firstHealthy := seenFirst.first(func(s spokeAppSeen) bool {
		return s.health == "Healthy" && s.sync == "Synced" && s.revision == fixed
	})
	secondAsked := seenSecond.first(func(s spokeAppSeen) bool { return s.operation || s.operationState })
	require.False(t, firstHealthy.IsZero(), "step 1 never seen Healthy and Synced on %s", fixed)
	require.False(t, secondAsked.IsZero(), "step 2 never seen asked to sync")
	t.Logf("watched on the spokes: step 1 Healthy and Synced on %s at %s, step 2 first asked to sync at %s (%v later)",
		first, firstHealthy.Format(time.StampMilli), secondAsked.Format(time.StampMilli), secondAsked.Sub(firstHealthy).Round(time.Millisecond))
	assert.True(t, secondAsked.After(firstHealthy), "step 2 was asked to sync (%s) before step 1 was Healthy (%s)",
		secondAsked.Format(time.StampMilli), firstHealthy.Format(time.StampMilli))

	// The same order as the hub's ApplicationSet controller recorded it.
	t.Logf("ApplicationSet status.applicationStatus, as written: %s", history.summary())
	healthyFirst, pendingSecond := history.firstIndex(appFirst, "Healthy"), history.firstIndex(appSecond, "Pending")
	require.NotEqual(t, -1, healthyFirst, "step 1 was never Healthy")
	require.NotEqual(t, -1, pendingSecond, "step 2 was never Pending")
	assert.Less(t, healthyFirst, pendingSecond, "step 2 became Pending only once step 1 was Healthy")
	// Step 1 was held in Progressing while broken. Step 2's Progressing lasts as long as its
	// sync runs: a sync of a ConfigMap can start and end within one report of the spoke's
	// status, and the ApplicationSet controller then moves it from Pending to Healthy.
	for app, want := range map[string][]string{
		appFirst:  {"Waiting", "Pending", "Progressing", "Healthy"},
		appSecond: {"Waiting", "Pending", "Healthy"},
	} {
		assert.True(t, history.wentThrough(app, want...), "%s in status.applicationStatus: want %v in that order; got %v",
			app, want, history.statusesOf(app))
	}
}

// cleanUpRollout deletes the rollout's ApplicationSet (its Applications go from the hub and
// the spokes, their resources pruned) and the cluster labels.
func cleanUpRollout(t *testing.T, ctx context.Context, a *argoFleet, appSet *unstructured.Unstructured, apps ...string) {
	since := time.Now()
	assert.NoError(t, client.IgnoreNotFound(a.f.Hub.Client.Delete(ctx, appSet)))
	defer func() { t.Logf("cleaned up in %v", time.Since(since).Round(100*time.Millisecond)) }()
	clusters := []string{vanilla, openshift}
	assert.Eventually(t, func() bool {
		for i, app := range apps {
			if exists(ctx, a.f.Hub.Client, application("", ""), contract.GitOpsNamespace+"/"+app) ||
				exists(ctx, a.spokes[clusters[i]].Client, application("", ""), contract.GitOpsNamespace+"/"+app) {
				return false
			}
		}
		return true
	}, 3*time.Minute, time.Second, "the rollout's Applications leave the hub and the spokes")
	for _, cluster := range clusters {
		assert.NoError(t, install.LabelCluster(ctx, a.f.Hub, cluster, rolloutClusterLabel, ""))
	}
}

func spokeApplication(t *testing.T, ctx context.Context, a *argoFleet, cluster, name string) *unstructured.Unstructured {
	t.Helper()
	app := application(contract.GitOpsNamespace, name)
	require.NoError(t, a.spokes[cluster].Client.Get(ctx, client.ObjectKeyFromObject(app), app))
	return app
}

func timeAt(t *testing.T, obj *unstructured.Unstructured, path ...string) time.Time {
	t.Helper()
	s, ok, _ := unstructured.NestedString(obj.Object, path...)
	require.True(t, ok, "%s has no %s", obj.GetName(), strings.Join(path, "."))
	at, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err, "%s of %s", strings.Join(path, "."), obj.GetName())
	return at
}

// syncHistory is an Application's status.history: one entry per sync that completed.
func syncHistory(app *unstructured.Unstructured) []any {
	h, _, _ := unstructured.NestedSlice(app.Object, "status", "history")
	return h
}

// appSetAppStatus is one Application's entry of an ApplicationSet's status.applicationStatus.
type appSetAppStatus struct{ Status, Message string }

// appSetHistory is every distinct status.applicationStatus an ApplicationSet had, in the
// order the ApplicationSet controller wrote them, read from a watch: a poll could miss a
// state that lasted less than its period.
type appSetHistory struct {
	mu     sync.Mutex
	states []map[string]appSetAppStatus
}

// watchAppSetStatus records an ApplicationSet's status.applicationStatus from now until
// the test ends.
func watchAppSetStatus(t *testing.T, ctx context.Context, a *argoFleet, name string) *appSetHistory {
	t.Helper()
	h := &appSetHistory{}
	watchNamed(t, ctx, a.f.Hub, "ApplicationSetList", name, h.record)
	return h
}

// watchNamed calls seen with every version of the Argo CD object name (of list kind
// listKind) in openshift-gitops on cluster c, from now until the test ends.
func watchNamed(t *testing.T, ctx context.Context, c *harness.Cluster, listKind, name string, seen func(*unstructured.Unstructured)) {
	t.Helper()
	wc, err := client.NewWithWatch(c.Config, client.Options{Scheme: c.Client.Scheme()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("argoproj.io/v1alpha1")
	list.SetKind(listKind)
	opts := []client.ListOption{client.InNamespace(contract.GitOpsNamespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)}}
	w, err := wc.Watch(ctx, list, opts...)
	require.NoError(t, err)
	go func() {
		rv := ""
		for {
			for e := range w.ResultChan() {
				u, ok := e.Object.(*unstructured.Unstructured)
				if !ok || (e.Type != watch.Added && e.Type != watch.Modified) {
					continue
				}
				rv = u.GetResourceVersion()
				seen(u)
			}
			w.Stop()
			if ctx.Err() != nil {
				return
			}
			// The apiserver ends a watch after a while: go on from where it stopped.
			if w, err = wc.Watch(ctx, list, append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})...); err != nil {
				return
			}
		}
	}()
}

// spokeAppSeen is what the test saw of a spoke Application, and when (this machine's
// clock, which every cluster of the fleet shares).
type spokeAppSeen struct {
	at                        time.Time
	health, sync, revision    string
	operation, operationState bool
}

// spokeAppHistory is every version of an Application on a spoke apiserver, as watched.
type spokeAppHistory struct {
	mu   sync.Mutex
	seen []spokeAppSeen
}

func watchSpokeApp(t *testing.T, ctx context.Context, a *argoFleet, cluster, name string) *spokeAppHistory {
	t.Helper()
	h := &spokeAppHistory{}
	watchNamed(t, ctx, a.spokes[cluster].Cluster, "ApplicationList", name, func(app *unstructured.Unstructured) {
		s := spokeAppSeen{at: time.Now()}
		s.health, _, _ = unstructured.NestedString(app.Object, "status", "health", "status")
		s.sync, _, _ = unstructured.NestedString(app.Object, "status", "sync", "status")
		s.revision, _, _ = unstructured.NestedString(app.Object, "status", "sync", "revision")
		_, s.operation, _ = unstructured.NestedMap(app.Object, "operation")
		_, s.operationState, _ = unstructured.NestedMap(app.Object, "status", "operationState")
		h.mu.Lock()
		defer h.mu.Unlock()
		h.seen = append(h.seen, s)
	})
	return h
}

// first is when the Application was first seen in a state that satisfies ok; zero if never.
func (h *spokeAppHistory) first(ok func(spokeAppSeen) bool) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.seen {
		if ok(s) {
			return s.at
		}
	}
	return time.Time{}
}

func (h *appSetHistory) record(appSet *unstructured.Unstructured) {
	entries, _, _ := unstructured.NestedSlice(appSet.Object, "status", "applicationStatus")
	state := map[string]appSetAppStatus{}
	for _, e := range entries {
		m, _ := e.(map[string]any)
		app, _ := m["application"].(string)
		s, _ := m["status"].(string)
		msg, _ := m["message"].(string)
		state[app] = appSetAppStatus{Status: s, Message: msg}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.states); n > 0 && maps.Equal(h.states[n-1], state) {
		return
	}
	h.states = append(h.states, state)
}

func (h *appSetHistory) latest(app string) appSetAppStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.states) == 0 {
		return appSetAppStatus{}
	}
	return h.states[len(h.states)-1][app]
}

// firstIndex is the index of the first recorded state in which app has status, -1 if none.
func (h *appSetHistory) firstIndex(app, status string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, s := range h.states {
		if s[app].Status == status {
			return i
		}
	}
	return -1
}

func (h *appSetHistory) waitFor(t *testing.T, app, status string, timeout time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool { return h.latest(app).Status == status }, timeout, 200*time.Millisecond,
		"ApplicationSet status of %s: want %s (history: %s)", app, status, h.summary())
}

// statusesOf is app's successive statuses, repeats collapsed.
func (h *appSetHistory) statusesOf(app string) []appSetAppStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []appSetAppStatus
	for _, s := range h.states {
		e, ok := s[app]
		if !ok || (len(out) > 0 && out[len(out)-1].Status == e.Status) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// wentThrough says whether app's statuses, up to its first Healthy, went through want in
// that order. The ApplicationSet controller may make two moves in one write (Pending to
// Progressing to Healthy when a sync has succeeded and the Application is Healthy); its
// message then says it came from Progressing, which counts as seen.
func (h *appSetHistory) wentThrough(app string, want ...string) bool {
	statuses := h.statusesOf(app)
	healthy := slices.IndexFunc(statuses, func(s appSetAppStatus) bool { return s.Status == "Healthy" })
	if healthy == -1 {
		return false
	}
	var seen []string
	for _, s := range statuses[:healthy+1] {
		if s.Status == "Healthy" && strings.Contains(s.Message, "from Progressing to Healthy") {
			seen = append(seen, "Progressing")
		}
		seen = append(seen, s.Status)
	}
	i := 0
	for _, s := range seen {
		if i < len(want) && s == want[i] {
			i++
		}
	}
	return i == len(want)
}

func (h *appSetHistory) summary() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var parts []string
	for _, s := range h.states {
		var apps []string
		for _, app := range slices.Sorted(maps.Keys(s)) {
			apps = append(apps, app+"="+s[app].Status)
		}
		parts = append(parts, "{"+strings.Join(apps, " ")+"}")
	}
	return strings.Join(parts, " -> ")
}
