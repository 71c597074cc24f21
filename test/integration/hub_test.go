package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/appsetaccess"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/signer"
	"github.com/gitops-addon/gitops-addon/pkg/hub/gitopscluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/manager"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
	"github.com/gitops-addon/gitops-addon/test/testenv"
	"github.com/gitops-addon/gitops-addon/test/workstandin"
)

// seedGitOpsCluster is the GitOpsCluster of the issue, applied unchanged.
const seedGitOpsCluster = `
apiVersion: apps.open-cluster-management.io/v1beta1
kind: GitOpsCluster
metadata: {name: gitops-managed, namespace: openshift-gitops}
spec:
  argoServer: {cluster: local-cluster, argoNamespace: openshift-gitops}
  placementRef: {apiVersion: cluster.open-cluster-management.io/v1beta1, kind: Placement, name: gitops-managed}
  gitopsAddon: {enabled: true}
`

// olderFormGitOpsCluster is the older ACM form: argoServer.cluster notused and
// placementRef.namespace set.
const olderFormGitOpsCluster = `
apiVersion: apps.open-cluster-management.io/v1beta1
kind: GitOpsCluster
metadata: {name: older-form, namespace: team-a}
spec:
  argoServer: {cluster: notused, argoNamespace: team-a-argocd}
  placementRef: {apiVersion: cluster.open-cluster-management.io/v1beta1, kind: Placement, name: team-a, namespace: team-a}
`

const (
	argoNS  = "openshift-gitops"
	timeout = 60 * time.Second
	poll    = 200 * time.Millisecond
	// workLimit is a cluster's whole ManifestWork payload on the hub: the CRDs are the
	// agent's to install, so what stays is a few KiB.
	workLimit = 32 * 1024
)

// hub is a real kube-apiserver with the OCM CRDs and our CRD, and our manager running.
type hub struct {
	t   *testing.T
	ctx context.Context
	c   client.Client
	// writes counts the manager's write requests, when newHub started it.
	writes *writeCounter
	// env is the apiserver, when newHub started it.
	env *testenv.Env
	// hooksCompleted lists the clusters whose spoke teardown hook was completed, when
	// newHub started it (workstandin.CompleteHookWorks).
	hooksCompleted func() []string
}

// hubArgoNamespaces are the manager's --argo-namespaces on the hubs newHub starts: every
// argoNamespace the hub scenarios use (each its own, see sharedHub), but not
// notAnArgoNamespace.
var hubArgoNamespaces = []string{
	"openshift-gitops", "registers-gitops", "renders-gitops", "ready-gitops", "leaving-gitops", "overlap-gitops", "deletion-gitops",
	"team-a-argocd", "team-b-argocd", "team-e-argocd", "team-e-argocd-2", "team-c-argocd", "acm-argocd",
	"agent-argocd", "agent-certs-argocd", "agent-discovery-argocd", "localcluster-gitops",
}

const notAnArgoNamespace = "kube-public"

// startHub starts a hub of the test's own, stopped when the test ends: for scenarios that
// restart its apiserver or count every write its manager makes. Others use sharedHub.
func startHub(t *testing.T) *hub {
	return newHub(t, t)
}

// newHub starts a hub whose processes live as long as tb (a test, or the package for the
// shared hub), its helpers failing t.
func newHub(tb testing.TB, t *testing.T, configure ...func(*manager.Options)) *hub {
	env := testenv.Start(tb, testenv.WithCRDPaths(append(testenv.OCMCRDPaths(),
		filepath.Join(testenv.RepoRoot(), "charts", "gitops-addon", "crds"),
		// An OpenShift-like hub: the Route API is served (the manager discovers the
		// Argo CD Agent principal's Route).
		filepath.Join(testenv.RepoRoot(), "pkg", "spoke", "crdinstall", "crds", "routes.route.openshift.io.yaml"))...),
		// A restart waits up to this for requests in flight; 60 s by default.
		testenv.WithAPIServerArg("request-timeout", "10s"), testenv.WithSchemeAdder(routev1.Install))
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	writes := &writeCounter{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = writes.wrap
	o := manager.Options{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", AgentImage: "quay.io/gitops-addon/gitops-addon:test",
		// As the chart runs it: Secrets and ConfigMaps cached (and granted) in these only.
		ArgoNamespaces: hubArgoNamespaces,
		// The shared hub's manager and a scenario's own run in one process.
		SkipControllerNameValidation: true,
	}
	for _, c := range configure {
		c(&o)
	}
	runManager(tb, ctx, cfg, o)
	h := &hub{t: t, ctx: ctx, c: env.Client, writes: writes, env: env}
	h.create(&addonv1beta1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: contract.AddonName},
		Spec:       addonv1beta1.ClusterManagementAddOnSpec{InstallStrategy: addonv1beta1.InstallStrategy{Type: addonv1beta1.AddonInstallStrategyManual}},
	})
	h.hooksCompleted = workstandin.CompleteHookWorks(ctx, env.Client)
	return h
}

// runManager starts a hub manager until ctx ends or the returned stop is called (also at
// cleanup); stop waits for it and fails the test if it stops with an error or hangs.
func runManager(t testing.TB, ctx context.Context, cfg *rest.Config, o manager.Options) (stop func()) {
	t.Helper()
	mgr, err := manager.New(cfg, o)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				assert.NoError(t, err, "manager stopped with an error")
			case <-time.After(30 * time.Second):
				t.Error("manager did not stop within 30s")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func (h *hub) create(obj client.Object) {
	h.t.Helper()
	require.NoError(h.t, h.c.Create(h.ctx, obj), "creating %T %s", obj, obj.GetName())
}

func (h *hub) applyYAML(doc string) {
	h.t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(h.t, yaml.Unmarshal([]byte(doc), &u.Object))
	require.NoError(h.t, h.c.Create(h.ctx, u))
}

func (h *hub) namespace(name string) {
	h.t.Helper()
	err := h.c.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(h.t, err)
	}
}

// managedCluster registers a cluster the way OCM does: the ManagedCluster, its namespace
// and the claims the klusterlet reports.
func (h *hub) managedCluster(name string, claims map[string]string) {
	h.t.Helper()
	mc := &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"name": name, "env": "test"}},
		Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true, ManagedClusterClientConfigs: []clusterv1.ClientConfig{{URL: "https://" + name + ".example.com:6443"}}},
	}
	h.create(mc)
	for k, v := range claims {
		mc.Status.ClusterClaims = append(mc.Status.ClusterClaims, clusterv1.ManagedClusterClaim{Name: k, Value: v})
	}
	mc.Status.Version.Kubernetes = "v1.35.4"
	require.NoError(h.t, h.c.Status().Update(h.ctx, mc))
	h.namespace(name)
}

// placement creates a Placement and one PlacementDecision deciding the given clusters, as
// OCM's placement controller would.
func (h *hub) placement(namespace, name string, clusters ...string) {
	h.t.Helper()
	h.namespace(namespace)
	h.create(&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})
	pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: name + "-decision-1",
		Labels: map[string]string{clusterv1beta1.PlacementLabel: name, clusterv1beta1.DecisionGroupIndexLabel: "0"},
	}}
	h.create(pd)
	h.decide(namespace, name, clusters...)
}

func (h *hub) decide(namespace, name string, clusters ...string) {
	h.t.Helper()
	pd := &clusterv1beta1.PlacementDecision{}
	require.NoError(h.t, h.c.Get(h.ctx, types.NamespacedName{Namespace: namespace, Name: name + "-decision-1"}, pd))
	pd.Status.Decisions = nil
	for _, c := range clusters {
		pd.Status.Decisions = append(pd.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c, Reason: "test"})
	}
	require.NoError(h.t, h.c.Status().Update(h.ctx, pd))
}

// ownAddOnsByCMA does what OCM's addon-manager does for every gitops-addon
// ManagedClusterAddOn: set the owner reference to the ClusterManagementAddOn, without
// which addon-framework registers and deploys nothing.
func (h *hub) ownAddOnsByCMA(clusters ...string) {
	h.t.Helper()
	cma := &addonv1beta1.ClusterManagementAddOn{}
	require.NoError(h.t, h.c.Get(h.ctx, types.NamespacedName{Name: contract.AddonName}, cma))
	for _, cluster := range clusters {
		mca := h.waitAddon(cluster)
		patch := client.MergeFrom(mca.DeepCopy())
		mca.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: addonv1beta1.GroupVersion.String(), Kind: "ClusterManagementAddOn", Name: cma.Name, UID: cma.UID,
		}}
		require.NoError(h.t, h.c.Patch(h.ctx, mca, patch))
	}
}

// markAvailable does what OCM's registration agent does when the agent's lease is fresh.
func (h *hub) markAvailable(clusters ...string) {
	h.t.Helper()
	for _, cluster := range clusters {
		require.Eventually(h.t, func() bool {
			mca := h.waitAddon(cluster)
			meta.SetStatusCondition(&mca.Status.Conditions, metav1.Condition{
				Type: addonv1beta1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionTrue,
				Reason: "ManagedClusterAddOnLeaseUpdated", Message: "gitops-addon agent is available.",
			})
			return h.c.Status().Update(h.ctx, mca) == nil
		}, timeout, poll, "marking %s Available", cluster)
	}
}

func (h *hub) waitAddon(cluster string) *addonv1beta1.ManagedClusterAddOn {
	h.t.Helper()
	mca := &addonv1beta1.ManagedClusterAddOn{}
	require.Eventually(h.t, func() bool {
		return h.c.Get(h.ctx, types.NamespacedName{Namespace: cluster, Name: contract.AddonName}, mca) == nil
	}, timeout, poll, "ManagedClusterAddOn in %s", cluster)
	return mca
}

func (h *hub) gitOpsCluster(namespace, name string) *appsv1beta1.GitOpsCluster {
	h.t.Helper()
	gc := &appsv1beta1.GitOpsCluster{}
	require.NoError(h.t, h.c.Get(h.ctx, types.NamespacedName{Namespace: namespace, Name: name}, gc))
	return gc
}

// waitCondition waits until a GitOpsCluster condition has a status (and reason) for its
// current generation, and returns it.
func (h *hub) waitCondition(namespace, name, condType string, status metav1.ConditionStatus, reason string) metav1.Condition {
	h.t.Helper()
	var got metav1.Condition
	require.Eventually(h.t, func() bool {
		gc := h.gitOpsCluster(namespace, name)
		c := meta.FindStatusCondition(gc.Status.Conditions, condType)
		if c == nil || c.ObservedGeneration != gc.Generation {
			return false
		}
		got = *c
		return c.Status == status && (reason == "" || c.Reason == reason)
	}, timeout, poll, "condition %s of %s/%s to be %s/%s", condType, namespace, name, status, reason)
	return got
}

// touch changes an object with change and updates it.
func (h *hub) touch(obj client.Object, change func()) {
	h.t.Helper()
	change()
	require.NoError(h.t, h.c.Update(h.ctx, obj), "touching %T %s", obj, obj.GetName())
}

// reconcileTotal is controller-runtime's count of a controller's reconciles in this
// process, whatever their result.
func reconcileTotal(t *testing.T, controller string) float64 {
	return controllerMetric(t, "controller_runtime_reconcile_total", controller)
}

// controllerMetric sums, over every manager of this process, a controller-runtime counter
// or gauge of the controller of that name.
func controllerMetric(t *testing.T, name, controller string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
				}
			}
		}
	}
	return total
}

// agentGitOpsCluster is a GitOpsCluster document with spec.gitopsAddon.argoCDAgent set to
// agent (inline YAML); its Placement does not exist, so it changes nothing.
func agentGitOpsCluster(name, agent string) string {
	return fmt.Sprintf(`{apiVersion: apps.open-cluster-management.io/v1beta1, kind: GitOpsCluster, metadata: {name: %s, namespace: openshift-gitops}, `+
		`spec: {argoServer: {argoNamespace: openshift-gitops}, placementRef: {kind: Placement, name: no-such-placement}, gitopsAddon: {argoCDAgent: %s}}}`, name, agent)
}

// agentModeGitOpsCluster registers cluster and makes a GitOpsCluster named name (in
// namespace name, with a Placement of that name deciding the cluster) that enables the
// addon with spec.gitopsAddon.argoCDAgent set to argoCDAgent (YAML), its Argo CD in
// argoNamespace.
func (h *hub) agentModeGitOpsCluster(name, cluster, argoNamespace, argoCDAgent string) {
	h.t.Helper()
	h.managedCluster(cluster, map[string]string{"product.open-cluster-management.io": "AKS"})
	h.placement(name, name, cluster)
	h.namespace(argoNamespace)
	h.applyYAML(fmt.Sprintf(`
apiVersion: apps.open-cluster-management.io/v1beta1
kind: GitOpsCluster
metadata: {name: %[1]s, namespace: %[1]s}
spec:
  argoServer: {argoNamespace: %[3]s}
  placementRef: {kind: Placement, name: %[1]s}
  gitopsAddon: {enabled: true, argoCDAgent: %[2]s}
`, name, argoCDAgent, argoNamespace))
}

// parseCert reads the certificate of a TLS Secret.
func parseCert(t *testing.T, s *corev1.Secret) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(s.Data["tls.crt"])
	require.NotNil(t, block, "%s/%s has a PEM certificate", s.Namespace, s.Name)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return cert
}

// hasWarningEvent tells whether a Warning Event with reason was recorded on a GitOpsCluster.
func hasWarningEvent(h *hub, namespace, name, reason string) bool {
	return hasEventOfType(h, namespace, name, reason, corev1.EventTypeWarning)
}

// hasEvent tells whether a Normal Event with reason was recorded on a GitOpsCluster.
func hasEvent(h *hub, namespace, name, reason string) bool {
	return hasEventOfType(h, namespace, name, reason, corev1.EventTypeNormal)
}

func hasEventOfType(h *hub, namespace, name, reason, eventType string) bool {
	list := &eventsv1.EventList{}
	if h.c.List(h.ctx, list, client.InNamespace(namespace)) != nil {
		return false
	}
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason && e.Type == eventType {
			return true
		}
	}
	return false
}

// manifestWorks returns the gitops-addon ManifestWorks of a cluster once they carry the
// agent Deployment (addon-framework writes the split works one after the other).
func (h *hub) manifestWorks(cluster string) []workv1.ManifestWork {
	h.t.Helper()
	works := &workv1.ManifestWorkList{}
	require.Eventually(h.t, func() bool {
		err := h.c.List(h.ctx, works, client.InNamespace(cluster), client.MatchingLabels{addonv1beta1.AddonLabelKey: contract.AddonName})
		return err == nil && shipped(h.t, works.Items)["Deployment/"+contract.AgentDeployment]
	}, timeout, poll, "ManifestWorks of %s", cluster)
	return works.Items
}

// reportNoExistingArgoCD does what the cluster's spoke agent does once it found no Argo
// CD and no GitOps operator of someone else there: ExistingArgoCD False on its addon.
func (h *hub) reportNoExistingArgoCD(cluster string) {
	h.t.Helper()
	require.NoError(h.t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mca := h.waitAddon(cluster)
		meta.SetStatusCondition(&mca.Status.Conditions, metav1.Condition{Type: contract.ConditionExistingArgoCD, Status: metav1.ConditionFalse,
			Reason: contract.ExistingArgoCDNone, Message: "No Argo CD and no GitOps operator but gitops-addon's run on this cluster."})
		return h.c.Status().Update(h.ctx, mca)
	}))
}

// stackShipped waits until the cluster's ManifestWorks carry the GitOps stack, and
// returns what they ship.
func (h *hub) stackShipped(cluster string) map[string]bool {
	h.t.Helper()
	var objects map[string]bool
	require.Eventually(h.t, func() bool {
		objects = shipped(h.t, h.manifestWorks(cluster))
		return objects["ArgoCD/"+contract.ArgoCDName]
	}, timeout, poll, "the GitOps stack in the ManifestWorks of %s", cluster)
	return objects
}

// dumpAddons logs every gitops-addon ManagedClusterAddOn and a GitOpsCluster, to explain a
// stuck teardown.
func (h *hub) dumpAddons(namespace, name string) {
	addons := &addonv1beta1.ManagedClusterAddOnList{}
	require.NoError(h.t, h.c.List(h.ctx, addons))
	for _, a := range addons.Items {
		h.t.Logf("ManagedClusterAddOn %s/%s labels=%v finalizers=%v deleting=%v owners=%v", a.Namespace, a.Name, a.Labels, a.Finalizers, a.DeletionTimestamp != nil, a.OwnerReferences)
	}
	gc := &appsv1beta1.GitOpsCluster{}
	if err := h.c.Get(h.ctx, types.NamespacedName{Namespace: namespace, Name: name}, gc); err == nil {
		h.t.Logf("GitOpsCluster finalizers=%v conditions=%+v", gc.Finalizers, gc.Status.Conditions)
	}
}

// shipped lists "Kind/name" of every object in a cluster's ManifestWorks.
func shipped(t *testing.T, works []workv1.ManifestWork) map[string]bool {
	out := map[string]bool{}
	for _, w := range works {
		for _, m := range w.Spec.Workload.Manifests {
			u := &unstructured.Unstructured{}
			require.NoError(t, json.Unmarshal(m.Raw, &u.Object))
			out[u.GetKind()+"/"+u.GetName()] = true
		}
	}
	return out
}

// secretNames lists the Argo CD cluster Secrets of an Argo CD namespace, sorted.
func secretNames(t *testing.T, h *hub, argoNamespace string) []string {
	secrets := &corev1.SecretList{}
	require.NoError(t, h.c.List(h.ctx, secrets, client.InNamespace(argoNamespace), client.MatchingLabels{"argocd.argoproj.io/secret-type": "cluster"}))
	var names []string
	for _, s := range secrets.Items {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return names
}

// waitQuiet waits until the manager has sent no write request for quiet: what earlier
// steps set off (addon-framework's status patches, requeues) has settled, so that a
// window that follows counts only what happens in it.
func (h *hub) waitQuiet(quiet time.Duration) {
	h.t.Helper()
	h.writes.waitQuiet(h.t, quiet)
}

// waitQuiet waits until no write request was recorded for quiet.
func (c *writeCounter) waitQuiet(t *testing.T, quiet time.Duration) {
	t.Helper()
	last, since := c.count(), time.Now()
	require.Eventually(t, func() bool {
		if n := c.count(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= quiet
	}, timeout, poll, "the manager's writes settle (none for %s)", quiet)
}

// triggerReconcile runs trigger, which must make the GitOpsCluster controller reconcile,
// and waits until it has: the positive control of a window that then asserts that nothing
// was written.
func (h *hub) triggerReconcile(trigger func()) {
	h.t.Helper()
	waitReconcileAfter(h.t, gitopscluster.ControllerName, trigger)
}

// waitReconcileAfter runs trigger and waits until the controller has reconciled after it
// and is idle again. It starts once the controller is idle, so that the reconcile it
// counts is not one that was under way before the trigger, and it ends once whatever the
// trigger queued has run.
func waitReconcileAfter(t *testing.T, controller string, trigger func()) {
	t.Helper()
	waitControllerIdle(t, controller)
	before := reconcileTotal(t, controller)
	trigger()
	require.Eventually(t, func() bool { return reconcileTotal(t, controller) > before }, timeout, poll,
		"controller %s reconciles after the trigger", controller)
	waitControllerIdle(t, controller)
}

// controllerIdleFor is how long a controller must have finished no reconcile, none
// running, to be taken as idle: its reconciles here take milliseconds, and a queued one
// starts at once when no worker is busy.
const controllerIdleFor = 300 * time.Millisecond

// waitControllerIdle waits until no reconcile of the controller runs and none finished
// for controllerIdleFor (controller-runtime's active workers and reconcile count). The
// workqueue depth would say more, but a stopped manager's queue keeps its last depth in
// the process-wide gauge.
func waitControllerIdle(t *testing.T, controller string) {
	t.Helper()
	last, since := reconcileTotal(t, controller), time.Now()
	require.Eventually(t, func() bool {
		if n := reconcileTotal(t, controller); n != last {
			last, since = n, time.Now()
		}
		return controllerMetric(t, "controller_runtime_active_workers", controller) == 0 && time.Since(since) >= controllerIdleFor
	}, timeout, poll/4, "controller %s idle", controller)
}

// seedScenario is the GitOpsCluster (seedGitOpsCluster, named gitops-managed)
// over three clusters, an EKS one, an OpenShift one and one that reports no product,
// beside a Secret of the user's in its Argo CD namespace.
type seedScenario struct {
	h *hub
	// ns is the Argo CD namespace, where the GitOpsCluster and its Placement are too.
	ns                    string
	vanilla, ocp, unknown string
	// userSecret is an object a user created that gitops-addon must never touch.
	userSecret *corev1.Secret
}

// startSeed registers the clusters and applies the GitOpsCluster. With no prefix it is
// the issue's own, unchanged: in openshift-gitops over vanilla, ocp and unknown, for a hub
// of the test's own. On the shared hub a scenario passes its prefix: the namespace is
// <prefix>-gitops (one of hubArgoNamespaces) and the clusters <prefix>-vanilla and so on.
func startSeed(h *hub, prefix string) *seedScenario {
	h.t.Helper()
	s := &seedScenario{h: h, ns: argoNS, vanilla: "vanilla", ocp: "ocp", unknown: "unknown"}
	doc := seedGitOpsCluster
	if prefix != "" {
		s.ns, s.vanilla, s.ocp, s.unknown = prefix+"-gitops", prefix+"-vanilla", prefix+"-ocp", prefix+"-unknown"
		doc = strings.ReplaceAll(doc, argoNS, s.ns)
	}
	h.namespace(s.ns)
	h.managedCluster(s.vanilla, map[string]string{"product.open-cluster-management.io": "EKS"})
	h.managedCluster(s.ocp, map[string]string{"product.open-cluster-management.io": "OpenShift", "version.openshift.io": "4.20.1"})
	h.managedCluster(s.unknown, nil)
	h.placement(s.ns, "gitops-managed", s.clusters()...)
	s.userSecret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "repo-creds", Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}}}
	h.create(s.userSecret)
	h.applyYAML(doc)
	return s
}

// clusters are the clusters the Placement decides, sorted.
func (s *seedScenario) clusters() []string { return []string{s.ocp, s.unknown, s.vanilla} }

// converge does what OCM does for the clusters' addons (ownership, then Available) and
// waits until the GitOpsCluster is Ready.
func (s *seedScenario) converge() {
	s.h.t.Helper()
	s.h.ownAddOnsByCMA(s.clusters()...)
	s.h.markAvailable(s.clusters()...)
	s.h.waitCondition(s.ns, "gitops-managed", appsv1beta1.ConditionReady, metav1.ConditionTrue, appsv1beta1.ReasonReady)
}

// applyOverlap makes a second GitOpsCluster, "overlap", whose own Placement decides
// vanilla, which gitops-managed has.
func (s *seedScenario) applyOverlap() {
	s.h.t.Helper()
	s.h.placement(s.ns, "overlap", s.vanilla)
	doc := strings.ReplaceAll(seedGitOpsCluster, argoNS, s.ns)
	s.h.applyYAML(strings.ReplaceAll(strings.ReplaceAll(doc, "name: gitops-managed, namespace", "name: overlap, namespace"), "Placement, name: gitops-managed", "Placement, name: overlap"))
}

func clusterSecret(cluster string) string { return cluster + "-cluster-secret" }

// The hub scenarios below drive GitOpsClusters on a real kube-apiserver with our manager
// and addon-framework running: through convergence, steady state, a shrinking Placement,
// conflicts and deletion, each from its own start.

func TestHubRegistersDecidedClusters(t *testing.T) {
	s := startSeed(sharedHub(t), "registers")
	t.Run("registers every decided cluster with Argo CD", func(t *testing.T) {
		h := s.h.with(t)
		require.Eventually(t, func() bool {
			return strings.Join(secretNames(t, h, s.ns), ",") == clusterSecret(s.ocp)+","+clusterSecret(s.unknown)+","+clusterSecret(s.vanilla)
		}, timeout, poll)
		secret := &corev1.Secret{}
		require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: s.ns, Name: clusterSecret(s.vanilla)}, secret))
		assert.Equal(t, s.vanilla, string(secret.Data["name"]))
		assert.Equal(t, "https://"+s.vanilla+".example.com:6443", string(secret.Data["server"]))
		assert.Equal(t, s.vanilla, secret.Labels[gitopscluster.LabelClusterName])
		assert.Equal(t, "test", secret.Labels["env"], "ManagedCluster labels are copied for ApplicationSet selectors")
		assert.Equal(t, "gitops-managed", secret.Labels[ownership.LabelName])

		cm := &corev1.ConfigMap{}
		require.Eventually(t, func() bool {
			return h.c.Get(h.ctx, types.NamespacedName{Namespace: s.ns, Name: appsv1beta1.PlacementConfigMapName}, cm) == nil
		}, timeout, poll)
		assert.Equal(t, map[string]string{"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "placementdecisions", "statusListKey": "decisions", "matchKey": "clusterName"}, cm.Data)
		role := &rbacv1.Role{}
		require.Eventually(t, func() bool {
			return h.c.Get(h.ctx, types.NamespacedName{Namespace: s.ns, Name: appsetaccess.PlacementReaderName}, role) == nil
		}, timeout, poll)
		assert.Contains(t, role.Rules[0].Resources, "placementdecisions")
		binding := &rbacv1.RoleBinding{}
		require.Eventually(t, func() bool {
			return h.c.Get(h.ctx, types.NamespacedName{Namespace: s.ns, Name: appsetaccess.PlacementReaderName + "-" + s.ns}, binding) == nil
		}, timeout, poll)
		require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: s.ns, Name: appsetaccess.PlacementReaderName + "-" + s.ns}, binding))
		assert.Equal(t, "openshift-gitops-applicationset-controller", binding.Subjects[0].Name)
		h.waitCondition(s.ns, "gitops-managed", appsv1beta1.ConditionClustersRegistered, metav1.ConditionTrue, appsv1beta1.ReasonRegistered)
		h.waitCondition(s.ns, "gitops-managed", appsv1beta1.ConditionPlacementResolved, metav1.ConditionTrue, appsv1beta1.ReasonResolved)
	})
}

func TestHubRendersManifestWorks(t *testing.T) {
	s := startSeed(sharedHub(t), "renders")
	t.Run("creates a ManagedClusterAddOn per cluster and addon-framework renders the ManifestWorks", func(t *testing.T) {
		h := s.h.with(t)
		for _, c := range s.clusters() {
			mca := h.waitAddon(c)
			assert.Equal(t, "gitops-managed", mca.Labels[ownership.LabelName])
		}
		h.ownAddOnsByCMA(s.clusters()...)
		// Until its agent has reported, a cluster gets the agent alone: never a GitOps
		// operator or an ArgoCD beside one gitops-addon did not create.
		for _, c := range s.clusters() {
			objects := shipped(t, h.manifestWorks(c))
			for _, stack := range []string{"Namespace/" + contract.GitOpsNamespace, "Deployment/" + contract.OperatorDeployment, "ArgoCD/" + contract.ArgoCDName} {
				assert.False(t, objects[stack], "cluster %s ships %s before its agent reported", c, stack)
			}
			h.reportNoExistingArgoCD(c)
		}
		for _, c := range s.clusters() {
			h.stackShipped(c)
			works := h.manifestWorks(c)
			objects := shipped(t, works)
			for _, want := range []string{
				"Namespace/" + contract.GitOpsNamespace,
				"Deployment/" + contract.OperatorDeployment,
				"ClusterRole/" + contract.PlatformExtensionsClusterRole,
				"ArgoCD/" + contract.ArgoCDName,
				"Deployment/" + contract.AgentDeployment,
				"ValidatingAdmissionPolicy/gitops-addon-agent-crds",
			} {
				assert.True(t, objects[want], "cluster %s ships %s", c, want)
			}
			for object := range objects {
				assert.NotContains(t, object, "CustomResourceDefinition/", "cluster %s: the agent installs CRDs, the ManifestWork carries none", c)
			}
			require.Len(t, works, 1, "one ManifestWork per cluster")
			w := works[0].DeepCopy()
			w.ManagedFields, w.Status = nil, workv1.ManifestWorkStatus{}
			raw, err := json.Marshal(w)
			require.NoError(t, err)
			assert.LessOrEqual(t, len(raw), workLimit, "ManifestWork %s/%s is %d bytes", w.Namespace, w.Name, len(raw))
			t.Logf("ManifestWork %s/%s: %d manifests, %d bytes", w.Namespace, w.Name, len(w.Spec.Workload.Manifests), len(raw))
		}
		h.waitCondition(s.ns, "gitops-managed", appsv1beta1.ConditionAddOnsReady, metav1.ConditionFalse, appsv1beta1.ReasonAddOnsProgressing)
	})
}

func TestHubReadyOnceAddonsAvailable(t *testing.T) {
	s := startSeed(sharedHub(t), "ready")
	s.h.ownAddOnsByCMA(s.clusters()...)
	t.Run("is Ready once every addon is Available", func(t *testing.T) {
		h := s.h.with(t)
		h.markAvailable(s.clusters()...)
		h.waitCondition(s.ns, "gitops-managed", appsv1beta1.ConditionReady, metav1.ConditionTrue, appsv1beta1.ReasonReady)
		gc := h.gitOpsCluster(s.ns, "gitops-managed")
		assert.Equal(t, int32(3), gc.Status.SelectedClusters)
		assert.Equal(t, int32(3), gc.Status.AddonEnabledClusters)
		assert.Equal(t, int32(3), gc.Status.AddonAvailableClusters)
		assert.Equal(t, "successful", gc.Status.Phase)
	})
}

// TestHubSteadyStateMakesNoWrites counts every write request the manager sends, so it runs
// the GitOpsCluster, unchanged, on a hub of its own.
func TestHubSteadyStateMakesNoWrites(t *testing.T) {
	s := startSeed(startHub(t), "")
	s.converge()
	t.Run("makes no writes in steady state, also while reconciles are triggered and unrelated objects churn", func(t *testing.T) {
		h := s.h.with(t)
		h.waitQuiet(2 * time.Second) // what convergence set off has settled
		expected := h.resourceVersions()
		writesBefore := h.writes.count()
		reconcilesBefore := reconcileTotal(t, gitopscluster.ControllerName)
		for i := 0; i < 6; i++ {
			// OCM's addon-health label flips on a ManagedCluster: it wakes nothing, and the
			// reconciles waited for below come after it.
			mc := &clusterv1.ManagedCluster{}
			require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Name: s.ocp}, mc))
			h.touch(mc, func() {
				metav1.SetMetaDataLabel(&mc.ObjectMeta, "feature.open-cluster-management.io/addon-other", []string{"available", "unhealthy"}[i%2])
			})
			// Each wakes the GitOpsCluster, and is waited for until it did: an annotation on
			// it, another tool's annotation on its cluster Secret.
			gc := h.gitOpsCluster(s.ns, "gitops-managed")
			h.triggerReconcile(func() {
				h.touch(gc, func() { metav1.SetMetaDataAnnotation(&gc.ObjectMeta, "example.com/touched", fmt.Sprint(i)) })
			})
			expected[fmt.Sprintf("%T %s/%s", gc, gc.Namespace, gc.Name)] = gc.ResourceVersion
			secret := &corev1.Secret{}
			require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: s.ns, Name: clusterSecret(s.vanilla)}, secret))
			h.triggerReconcile(func() {
				h.touch(secret, func() { metav1.SetMetaDataAnnotation(&secret.ObjectMeta, "other-tool.example.com/seen", fmt.Sprint(i)) })
			})
			expected[fmt.Sprintf("%T %s/%s", secret, secret.Namespace, secret.Name)] = secret.ResourceVersion
		}
		assert.Empty(t, h.writes.since(writesBefore), "the manager's write requests")
		assert.Equal(t, expected, h.resourceVersions(), "objects the manager wrote")
		assert.GreaterOrEqual(t, reconcileTotal(t, gitopscluster.ControllerName)-reconcilesBefore, 6.0, "the triggers did reconcile")
	})
}

func TestHubClusterLeavingPlacement(t *testing.T) {
	s := startSeed(sharedHub(t), "leaving")
	s.converge()
	t.Run("a cluster leaving the Placement loses its secret and addon", func(t *testing.T) {
		h := s.h.with(t)
		h.decide(s.ns, "gitops-managed", s.ocp, s.vanilla)
		require.Eventually(t, func() bool {
			return strings.Join(secretNames(t, h, s.ns), ",") == clusterSecret(s.ocp)+","+clusterSecret(s.vanilla)
		}, timeout, poll)
		require.Eventually(t, func() bool {
			err := h.c.Get(h.ctx, types.NamespacedName{Namespace: s.unknown, Name: contract.AddonName}, &addonv1beta1.ManagedClusterAddOn{})
			return apierrors.IsNotFound(err)
		}, timeout, poll, "the ManagedClusterAddOn of the removed cluster is deleted")
		assert.Contains(t, h.hooksCompleted(), s.unknown, "its removal waited for the spoke teardown hook")
		gc := h.gitOpsCluster(s.ns, "gitops-managed")
		require.Eventually(t, func() bool {
			gc = h.gitOpsCluster(s.ns, "gitops-managed")
			return gc.Status.SelectedClusters == 2
		}, timeout, poll)
	})
}

func TestHubOverlappingGitOpsClusterConflicts(t *testing.T) {
	s := startSeed(sharedHub(t), "overlap")
	s.converge()
	t.Run("a second GitOpsCluster selecting the same cluster gets a conflict and changes nothing", func(t *testing.T) {
		h := s.h.with(t)
		s.applyOverlap()
		c := h.waitCondition(s.ns, "overlap", appsv1beta1.ConditionAddOnsReady, metav1.ConditionFalse, appsv1beta1.ReasonOwnedByOther)
		assert.Contains(t, c.Message, s.ns+"/gitops-managed")
		c = h.waitCondition(s.ns, "overlap", appsv1beta1.ConditionClustersRegistered, metav1.ConditionFalse, appsv1beta1.ReasonOwnedByOther)
		assert.Contains(t, c.Message, clusterSecret(s.vanilla))
		h.waitCondition(s.ns, "overlap", appsv1beta1.ConditionReady, metav1.ConditionFalse, appsv1beta1.ReasonNotReady)
		mca := h.waitAddon(s.vanilla)
		assert.Equal(t, "gitops-managed", mca.Labels[ownership.LabelName], "the first owner keeps its addon")
	})
}

func TestHubPlacementInAnotherNamespace(t *testing.T) {
	h := sharedHub(t)
	t.Run("a Placement in another namespace is explained", func(t *testing.T) {
		h := h.with(t)
		h.namespace("elsewhere")
		h.applyYAML(`
apiVersion: apps.open-cluster-management.io/v1beta1
kind: GitOpsCluster
metadata: {name: cross-namespace, namespace: elsewhere}
spec:
  argoServer: {argoNamespace: openshift-gitops}
  placementRef: {apiVersion: cluster.open-cluster-management.io/v1beta1, kind: Placement, name: gitops-managed, namespace: openshift-gitops}
`)
		c := h.waitCondition("elsewhere", "cross-namespace", appsv1beta1.ConditionPlacementResolved, metav1.ConditionFalse, appsv1beta1.ReasonPlacementNamespace)
		assert.Contains(t, c.Message, `"openshift-gitops"`)
		assert.Contains(t, c.Message, `"elsewhere"`)
		assert.Contains(t, c.Message, "Fix:")
		h.applyYAML(`
apiVersion: apps.open-cluster-management.io/v1beta1
kind: GitOpsCluster
metadata: {name: missing-placement, namespace: elsewhere}
spec:
  argoServer: {argoNamespace: openshift-gitops}
  placementRef: {kind: Placement, name: does-not-exist}
`)
		c = h.waitCondition("elsewhere", "missing-placement", appsv1beta1.ConditionPlacementResolved, metav1.ConditionFalse, appsv1beta1.ReasonPlacementNotFound)
		assert.Contains(t, c.Message, `"does-not-exist"`)
	})
}

func TestHubOlderACMForm(t *testing.T) {
	h := sharedHub(t)
	t.Run("the older ACM form applies and resolves", func(t *testing.T) {
		h := h.with(t)
		h.managedCluster("team-a-1", map[string]string{"product.open-cluster-management.io": "AKS"})
		h.namespace("team-a-argocd")
		h.placement("team-a", "team-a", "team-a-1")
		h.applyYAML(olderFormGitOpsCluster)
		h.waitCondition("team-a", "older-form", appsv1beta1.ConditionReady, metav1.ConditionTrue, appsv1beta1.ReasonReady)
		s := &corev1.Secret{}
		require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: "team-a-argocd", Name: "team-a-1-cluster-secret"}, s))
		assert.Equal(t, "team-a-1", string(s.Data["name"]))
	})
}

// TestHubAPIServerRestart restarts the apiserver, so it runs on a hub of its own.
func TestHubAPIServerRestart(t *testing.T) {
	s := startSeed(startHub(t), "")
	s.h.waitCondition(s.ns, "gitops-managed", appsv1beta1.ConditionClustersRegistered, metav1.ConditionTrue, appsv1beta1.ReasonRegistered)
	t.Run("the hub's apiserver restarts: the manager reconnects and acts on the next change", func(t *testing.T) {
		h := s.h.with(t)
		require.NoError(t, h.env.RestartAPIServer())
		h.managedCluster("after-restart", map[string]string{"product.open-cluster-management.io": "AKS"})
		h.decide(s.ns, "gitops-managed", append(s.clusters(), "after-restart")...)
		require.Eventually(t, func() bool {
			return h.c.Get(h.ctx, types.NamespacedName{Namespace: s.ns, Name: "after-restart-cluster-secret"}, &corev1.Secret{}) == nil
		}, timeout, poll, "the cluster decided after the restart is registered")
		h.waitAddon("after-restart")
		h.decide(s.ns, "gitops-managed", s.clusters()...)
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(h.c.Get(h.ctx, types.NamespacedName{Namespace: s.ns, Name: "after-restart-cluster-secret"}, &corev1.Secret{}))
		}, timeout, poll, "and unregistered when it leaves again")
	})
}

func TestHubFailedStepIsExplainedAndRetried(t *testing.T) {
	h := sharedHub(t)
	t.Run("a failed step is on the status with the API error and its fix, then retried", func(t *testing.T) {
		h := h.with(t)
		h.managedCluster("team-b-1", map[string]string{"product.open-cluster-management.io": "AKS"})
		h.placement("team-b", "team-b", "team-b-1")
		h.applyYAML(`
apiVersion: apps.open-cluster-management.io/v1beta1
kind: GitOpsCluster
metadata: {name: missing-argo-namespace, namespace: team-b}
spec:
  argoServer: {argoNamespace: team-b-argocd}
  placementRef: {kind: Placement, name: team-b}
`)
		c := h.waitCondition("team-b", "missing-argo-namespace", appsv1beta1.ConditionClustersRegistered, metav1.ConditionFalse, appsv1beta1.ReasonReconcileError)
		assert.Contains(t, c.Message, `namespaces "team-b-argocd" not found`, "the API error")
		assert.Contains(t, c.Message, "Fix: create that namespace, or set spec.argoServer.argoNamespace")
		h.waitCondition("team-b", "missing-argo-namespace", appsv1beta1.ConditionAddOnsReady, metav1.ConditionUnknown, appsv1beta1.ReasonReconcileError)
		require.Eventually(t, func() bool {
			return hasWarningEvent(h, "team-b", "missing-argo-namespace", appsv1beta1.ReasonReconcileError)
		}, timeout, poll, "a Warning Event on the GitOpsCluster")

		h.namespace("team-b-argocd")
		h.waitCondition("team-b", "missing-argo-namespace", appsv1beta1.ConditionClustersRegistered, metav1.ConditionTrue, appsv1beta1.ReasonRegistered)
	})
}

func TestHubArgoNamespaceNotAllowed(t *testing.T) {
	h := sharedHub(t)
	h.managedCluster("outside-1", map[string]string{"product.open-cluster-management.io": "AKS"})
	h.placement("outside", "outside", "outside-1")
	t.Run("an argoNamespace the manager was not installed for is refused with the fix, and nothing is written there", func(t *testing.T) {
		h := h.with(t)
		h.applyYAML(`
apiVersion: apps.open-cluster-management.io/v1beta1
kind: GitOpsCluster
metadata: {name: outside-argo-namespaces, namespace: outside}
spec:
  argoServer: {argoNamespace: ` + notAnArgoNamespace + `}
  placementRef: {kind: Placement, name: outside}
`)
		c := h.waitCondition("outside", "outside-argo-namespaces", appsv1beta1.ConditionClustersRegistered, metav1.ConditionFalse, appsv1beta1.ReasonArgoNamespaceNotAllowed)
		assert.Contains(t, c.Message, `"`+notAnArgoNamespace+`" is not one of the namespaces the manager was installed for`)
		assert.Contains(t, c.Message, "Fix: add \""+notAnArgoNamespace+"\" to the chart value argoNamespaces")
		require.Eventually(t, func() bool {
			return hasWarningEvent(h, "outside", "outside-argo-namespaces", appsv1beta1.ReasonArgoNamespaceNotAllowed)
		}, timeout, poll, "a Warning Event on the GitOpsCluster")
		// The refusal above is the reconcile that would have written there (the positive
		// control): after it, still nothing.
		secrets := &corev1.SecretList{}
		require.NoError(t, h.c.List(h.ctx, secrets, client.InNamespace(notAnArgoNamespace)))
		assert.Empty(t, secrets.Items, "no cluster Secret outside the manager's namespaces")
		gc := h.gitOpsCluster("outside", "outside-argo-namespaces")
		require.NoError(t, h.c.Delete(h.ctx, gc))
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(h.c.Get(h.ctx, client.ObjectKeyFromObject(gc), gc))
		}, timeout, poll, "deleting it finishes: its finalizer is released")
	})
}

func TestHubArgoNamespaceChanged(t *testing.T) {
	h := sharedHub(t)
	h.managedCluster("team-e-1", map[string]string{"product.open-cluster-management.io": "AKS"})
	h.placement("team-e", "team-e", "team-e-1")
	h.namespace("team-e-argocd")
	h.applyYAML(`
apiVersion: apps.open-cluster-management.io/v1beta1
kind: GitOpsCluster
metadata: {name: moving, namespace: team-e}
spec:
  argoServer: {argoNamespace: team-e-argocd}
  placementRef: {kind: Placement, name: team-e}
`)
	h.waitCondition("team-e", "moving", appsv1beta1.ConditionClustersRegistered, metav1.ConditionTrue, appsv1beta1.ReasonRegistered)
	t.Run("argoNamespace changed: the Secret and the shared objects move, nothing is left in the old namespace", func(t *testing.T) {
		h := h.with(t)
		h.namespace("team-e-argocd-2")
		gc := h.gitOpsCluster("team-e", "moving")
		h.touch(gc, func() { gc.Spec.ArgoServer.ArgoNamespace = "team-e-argocd-2" })
		h.waitCondition("team-e", "moving", appsv1beta1.ConditionClustersRegistered, metav1.ConditionTrue, appsv1beta1.ReasonRegistered)
		gone := func(obj client.Object, namespace, name string) func() bool {
			return func() bool {
				return apierrors.IsNotFound(h.c.Get(h.ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj))
			}
		}
		for _, c := range []struct {
			obj             client.Object
			namespace, name string
		}{
			{&corev1.Secret{}, "team-e-argocd", "team-e-1-cluster-secret"},
			{&corev1.ConfigMap{}, "team-e-argocd", appsv1beta1.PlacementConfigMapName},
			{&rbacv1.RoleBinding{}, "team-e", appsetaccess.PlacementReaderName + "-team-e-argocd"},
		} {
			require.Eventually(t, gone(c.obj, c.namespace, c.name), timeout, poll, "%T %s/%s removed", c.obj, c.namespace, c.name)
		}
		require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: "team-e-argocd-2", Name: "team-e-1-cluster-secret"}, &corev1.Secret{}))
		require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: "team-e-argocd-2", Name: appsv1beta1.PlacementConfigMapName}, &corev1.ConfigMap{}))
		require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: "team-e", Name: appsetaccess.PlacementReaderName + "-team-e-argocd-2"}, &rbacv1.RoleBinding{}))
		require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: "team-e", Name: appsetaccess.PlacementReaderName}, &rbacv1.Role{}), "the Role is still needed")
	})
}

func TestHubLongGitOpsClusterName(t *testing.T) {
	h := sharedHub(t)
	t.Run("a GitOpsCluster name too long for a label value works: hashed in labels, in full in an annotation", func(t *testing.T) {
		h := h.with(t)
		long := strings.Repeat("a-very-long-gitopscluster-name-", 8) + "end" // 251 characters
		h.managedCluster("team-c-1", map[string]string{"product.open-cluster-management.io": "AKS"})
		h.managedCluster("team-c-2", map[string]string{"product.open-cluster-management.io": "AKS"})
		h.placement("team-c", "team-c", "team-c-1")
		h.namespace("team-c-argocd")
		h.applyYAML(fmt.Sprintf(`
apiVersion: apps.open-cluster-management.io/v1beta1
kind: GitOpsCluster
metadata: {name: %s, namespace: team-c}
spec:
  argoServer: {argoNamespace: team-c-argocd}
  placementRef: {kind: Placement, name: team-c}
  gitopsAddon: {enabled: true}
`, long))
		h.waitCondition("team-c", long, appsv1beta1.ConditionClustersRegistered, metav1.ConditionTrue, appsv1beta1.ReasonRegistered)
		secret := &corev1.Secret{}
		require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: "team-c-argocd", Name: "team-c-1-cluster-secret"}, secret))
		mca := h.waitAddon("team-c-1")
		for _, obj := range []client.Object{secret, mca} {
			label := obj.GetLabels()[ownership.LabelName]
			assert.LessOrEqual(t, len(label), 63, "%T: a valid label value", obj)
			assert.True(t, strings.HasPrefix(long, strings.TrimRight(label[:40], "-")), "%T: readable prefix %q", obj, label)
			assert.Equal(t, "team-c/"+long, obj.GetAnnotations()[ownership.AnnotationOwner], "%T: the full name", obj)
		}
		// The owner mapping works both ways: the addon removed when the cluster leaves.
		h.decide("team-c", "team-c", "team-c-2") // a PlacementDecision needs one decision
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(h.c.Get(h.ctx, types.NamespacedName{Namespace: "team-c-1", Name: contract.AddonName}, &addonv1beta1.ManagedClusterAddOn{}))
		}, timeout, poll, "its ManagedClusterAddOn is removed when the cluster leaves the Placement")
	})
}

func TestHubReportsThenAdoptsACMObjects(t *testing.T) {
	h := sharedHub(t)
	t.Run("objects Red Hat ACM created: reported without a create loop, then adopted with the annotation, other tools' labels kept", func(t *testing.T) {
		h := h.with(t)
		h.managedCluster("acm-1", map[string]string{"product.open-cluster-management.io": "AKS"})
		h.placement("acm", "acm", "acm-1")
		h.namespace("acm-argocd")
		acmSecret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "acm-argocd", Name: "acm-1-cluster-secret", Labels: map[string]string{
				"argocd.argoproj.io/secret-type": "cluster", "apps.open-cluster-management.io/acm-cluster": "true", "backup.example.com/include": "true",
			}},
			Data: map[string][]byte{"name": []byte("acm-1"), "server": []byte("https://acm-1.example.com:6443")},
		}
		h.create(acmSecret)
		h.create(&addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "acm-1", Name: contract.AddonName}})
		// An older ACM's placement ConfigMap, on the v1alpha1 PlacementDecisions.
		acmConfigMap := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "acm-argocd", Name: appsv1beta1.PlacementConfigMapName, Labels: map[string]string{"backup.example.com/include": "true"}},
			Data: map[string]string{"apiVersion": "cluster.open-cluster-management.io/v1alpha1", "kind": "placementdecisions",
				"statusListKey": "decisions", "matchKey": "clusterName"},
		}
		h.create(acmConfigMap)
		writesBefore := h.writes.count()
		h.applyYAML(`
apiVersion: apps.open-cluster-management.io/v1beta1
kind: GitOpsCluster
metadata: {name: migrating, namespace: acm}
spec:
  argoServer: {argoNamespace: acm-argocd}
  placementRef: {kind: Placement, name: acm}
  gitopsAddon: {enabled: true}
`)
		c := h.waitCondition("acm", "migrating", appsv1beta1.ConditionClustersRegistered, metav1.ConditionFalse, appsv1beta1.ReasonRegistrationFailed)
		assert.Contains(t, c.Message, "Secret acm-argocd/acm-1-cluster-secret already exists and was not created by gitops-addon")
		assert.Contains(t, c.Message, appsv1beta1.AnnotationAdopt+"=true")
		require.Eventually(t, func() bool {
			c := meta.FindStatusCondition(h.gitOpsCluster("acm", "migrating").Status.Conditions, appsv1beta1.ConditionClustersRegistered)
			return c != nil && strings.Contains(c.Message, "ConfigMap acm-argocd/acm-placement exists, was not created by gitops-addon and differs from "+
				"what ApplicationSets need; it is left unchanged. Fix: annotate GitOpsCluster acm/migrating with "+appsv1beta1.AnnotationAdopt+"=true")
		}, timeout, poll, "the ConfigMap's owner tells the GitOpsCluster, which says it on ClustersRegistered")
		for i := 0; i < 3; i++ { // wake it, and wait until it woke: each reconcile must not try the create again
			gc := h.gitOpsCluster("acm", "migrating")
			h.triggerReconcile(func() {
				h.touch(gc, func() { metav1.SetMetaDataAnnotation(&gc.ObjectMeta, "example.com/touched", fmt.Sprint(i)) })
			})
		}
		creates := map[string]int{}
		for _, w := range h.writes.since(writesBefore) {
			for _, path := range []string{"/namespaces/acm-argocd/secrets", "/namespaces/acm-1/managedclusteraddons"} {
				if w == "POST "+path || strings.HasSuffix(w, path) && strings.HasPrefix(w, "POST ") {
					creates[path]++
				}
			}
		}
		// The ManagedClusterAddOns' cache holds every gitops-addon one (by name), so ACM's is
		// seen and never created; Secrets are cached by our label only.
		assert.Equal(t, map[string]int{"/namespaces/acm-argocd/secrets": 1}, creates,
			"one refused create of the Secret, then it is read, not created again")

		// Another GitOpsCluster on the same Argo CD adopts: the shared ConfigMap is taken over
		// for both, and "migrating", which changed in nothing, is told (woken by the
		// ConfigMap's owner).
		h.namespace("acm-b")
		h.applyYAML(`
apiVersion: apps.open-cluster-management.io/v1beta1
kind: GitOpsCluster
metadata: {name: adopter, namespace: acm-b, annotations: {` + appsv1beta1.AnnotationAdopt + `: "true"}}
spec:
  argoServer: {argoNamespace: acm-argocd}
  placementRef: {kind: Placement, name: not-yet}
`)
		require.Eventually(t, func() bool {
			c := meta.FindStatusCondition(h.gitOpsCluster("acm", "migrating").Status.Conditions, appsv1beta1.ConditionClustersRegistered)
			return c != nil && !strings.Contains(c.Message, "ConfigMap acm-argocd/acm-placement") && strings.Contains(c.Message, "Secret acm-argocd/acm-1-cluster-secret")
		}, timeout, poll, "the ConfigMap's problem leaves migrating's status once another GitOpsCluster adopted it; the Secret's stays")
		adopter := h.gitOpsCluster("acm-b", "adopter")
		require.NoError(t, h.c.Delete(h.ctx, adopter))
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(h.c.Get(h.ctx, client.ObjectKeyFromObject(adopter), adopter))
		}, timeout, poll)

		gc := h.gitOpsCluster("acm", "migrating")
		h.touch(gc, func() { metav1.SetMetaDataAnnotation(&gc.ObjectMeta, appsv1beta1.AnnotationAdopt, "true") })
		h.waitCondition("acm", "migrating", appsv1beta1.ConditionClustersRegistered, metav1.ConditionTrue, appsv1beta1.ReasonRegistered)
		secret := &corev1.Secret{}
		require.NoError(t, h.c.Get(h.ctx, client.ObjectKeyFromObject(acmSecret), secret))
		assert.Equal(t, "migrating", secret.Labels[ownership.LabelName], "adopted")
		assert.Equal(t, "true", secret.Labels["backup.example.com/include"], "another tool's label stays")
		assert.Equal(t, "test", secret.Labels["env"], "the ManagedCluster's labels are copied")
		mca := h.waitAddon("acm-1")
		require.Eventually(t, func() bool {
			require.NoError(t, h.c.Get(h.ctx, client.ObjectKeyFromObject(mca), mca))
			return mca.Labels[ownership.LabelName] == "migrating"
		}, timeout, poll, "the ManagedClusterAddOn is adopted too")
		assert.True(t, hasEvent(h, "acm", "migrating", "Adopted"), "an Event says what was adopted")
		cm := &corev1.ConfigMap{}
		require.NoError(t, h.c.Get(h.ctx, client.ObjectKeyFromObject(acmConfigMap), cm))
		assert.Equal(t, acmConfigMap.UID, cm.UID, "the ConfigMap is adopted in place, and kept: migrating needs it")
		assert.Equal(t, "cluster.open-cluster-management.io/v1beta1", cm.Data["apiVersion"], "and says what ApplicationSets need")
		assert.Equal(t, "true", cm.Labels["backup.example.com/include"], "another tool's label stays")
	})
}

func TestHubRejectsInvalidGitOpsClusters(t *testing.T) {
	h := sharedHub(t)
	h.namespace(argoNS)
	t.Run("invalid GitOpsClusters are rejected by the apiserver", func(t *testing.T) {
		h := h.with(t)
		for name, doc := range map[string]string{
			"placementRef.kind must be Placement":       `{apiVersion: apps.open-cluster-management.io/v1beta1, kind: GitOpsCluster, metadata: {name: bad-kind, namespace: openshift-gitops}, spec: {argoServer: {argoNamespace: openshift-gitops}, placementRef: {kind: Deployment, name: x}}}`,
			"argoNamespace":                             `{apiVersion: apps.open-cluster-management.io/v1beta1, kind: GitOpsCluster, metadata: {name: bad-ns, namespace: openshift-gitops}, spec: {argoServer: {argoNamespace: Bad_NS}, placementRef: {kind: Placement, name: x}}}`,
			"placementRef.apiVersion":                   `{apiVersion: apps.open-cluster-management.io/v1beta1, kind: GitOpsCluster, metadata: {name: bad-api, namespace: openshift-gitops}, spec: {argoServer: {argoNamespace: openshift-gitops}, placementRef: {apiVersion: apps/v1, kind: Placement, name: x}}}`,
			"argoCDAgent.mode is managed or autonomous": agentGitOpsCluster("bad-mode", `{enabled: true, mode: pull}`),
			"argoCDAgent.serverPort 0":                  agentGitOpsCluster("bad-port-0", `{enabled: true, serverPort: "0"}`),
			"argoCDAgent.serverPort 65536":              agentGitOpsCluster("bad-port-big", `{enabled: true, serverPort: "65536"}`),
			"argoCDAgent.serverPort https":              agentGitOpsCluster("bad-port-name", `{enabled: true, serverPort: https}`),
			"argoCDAgent.serverAddress with a scheme":   agentGitOpsCluster("bad-address", `{enabled: true, serverAddress: "https://principal.example.com"}`),
			"liveResources is for the basic pull model": `{apiVersion: apps.open-cluster-management.io/v1beta1, kind: GitOpsCluster, metadata: {name: live-agent, namespace: openshift-gitops}, spec: {argoServer: {argoNamespace: openshift-gitops}, placementRef: {kind: Placement, name: x}, gitopsAddon: {enabled: true, liveResources: {enabled: true}, argoCDAgent: {enabled: true}}}}`,
		} {
			u := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
			err := h.c.Create(h.ctx, u)
			require.Error(t, err, name)
			assert.True(t, apierrors.IsInvalid(err), "%s: %v", name, err)
			assert.Contains(t, err.Error(), strings.Fields(name)[0], name)
		}
	})
}

// TestHubArgoCDAgentTrustIssuedOnce counts every write request the manager sends, so it
// runs on a hub of its own.
func TestHubArgoCDAgentTrustIssuedOnce(t *testing.T) {
	h := startHub(t)
	h.managedCluster("team-b-1", map[string]string{"product.open-cluster-management.io": "AKS"})
	t.Run("Argo CD Agent mode: the principal's CA, certificates and JWT key are issued once, with their expiry on the status", func(t *testing.T) {
		h := h.with(t)
		h.placement("agent", "agent", "team-b-1")
		h.namespace("agent-argocd")
		h.applyYAML(`
apiVersion: apps.open-cluster-management.io/v1beta1
kind: GitOpsCluster
metadata: {name: agent-mode, namespace: agent}
spec:
  argoServer: {argoNamespace: agent-argocd}
  placementRef: {kind: Placement, name: agent}
  gitopsAddon: {argoCDAgent: {enabled: true, serverAddress: principal.example.com}}
`)
		c := h.waitCondition("agent", "agent-mode", appsv1beta1.ConditionArgoCDAgentTrust, metav1.ConditionTrue, appsv1beta1.ReasonCertificatesCurrent)
		assert.Contains(t, c.Message, "CA argocd-agent-ca (issued by gitops-addon) expires")
		assert.Contains(t, c.Message, "principal.example.com")
		secret := func(name string) *corev1.Secret {
			s := &corev1.Secret{}
			require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: "agent-argocd", Name: name}, s), name)
			return s
		}
		ca, principal := parseCert(t, secret("argocd-agent-ca")), parseCert(t, secret("argocd-agent-principal-tls"))
		roots := x509.NewCertPool()
		roots.AddCert(ca)
		_, err := principal.Verify(x509.VerifyOptions{Roots: roots, DNSName: "principal.example.com"})
		require.NoError(t, err, "the principal's certificate verifies against argocd-agent-ca")
		assert.NotEmpty(t, secret("argocd-agent-jwt").Data["jwt.key"])
		assert.NotEmpty(t, secret("argocd-agent-resource-proxy-tls").Data["tls.crt"])
		assert.True(t, hasEvent(h, "agent", "agent-mode", "AgentCertificateIssued"))

		versions := map[string]string{}
		for _, name := range []string{"argocd-agent-ca", "argocd-agent-principal-tls", "argocd-agent-resource-proxy-tls", "argocd-agent-jwt", "team-b-1-cluster-secret"} {
			versions[name] = secret(name).ResourceVersion
		}
		// Six reconciles triggered, each waited for: nothing is issued again, nothing
		// written at all.
		h.waitQuiet(2 * time.Second) // the issue's own writes (status) settle
		writesBefore := h.writes.count()
		for i := range 6 {
			gc := h.gitOpsCluster("agent", "agent-mode")
			h.triggerReconcile(func() {
				h.touch(gc, func() { metav1.SetMetaDataAnnotation(&gc.ObjectMeta, "example.com/touched", fmt.Sprint(i)) })
			})
		}
		for name, rv := range versions {
			assert.Equal(t, rv, secret(name).ResourceVersion, "%s is not issued again on a reconcile", name)
		}
		assert.Zero(t, h.writes.count()-writesBefore, "the manager wrote during six triggered reconciles of an agent-mode GitOpsCluster")

		// The cluster is registered in Argo CD Agent's format.
		clusterSecret := secret("team-b-1-cluster-secret")
		assert.Equal(t, "team-b-1", clusterSecret.Labels["argocd-agent.argoproj-labs.io/agent-name"])
		assert.Equal(t, "true", clusterSecret.Annotations["argocd.argoproj.io/skip-reconcile"])
		assert.Equal(t, "https://argocd-agent-resource-proxy.agent-argocd.svc:9090?agentName=team-b-1", string(clusterSecret.Data["server"]))
		var config struct {
			TLSClientConfig struct{ CertData, KeyData, CAData []byte } `json:"tlsClientConfig"`
		}
		require.NoError(t, json.Unmarshal(clusterSecret.Data["config"], &config))
		block, _ := pem.Decode(config.TLSClientConfig.CertData)
		require.NotNil(t, block)
		client, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err)
		assert.Equal(t, "team-b-1", client.Subject.CommonName, "the client certificate is the agent's")
		_, err = client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		require.NoError(t, err, "signed by argocd-agent-ca")
		versions["team-b-1-cluster-secret"] = clusterSecret.ResourceVersion

		gc := h.gitOpsCluster("agent", "agent-mode")
		h.touch(gc, func() { gc.Spec.GitOpsAddon.ArgoCDAgent.ServerAddress = "principal.example.org" })
		require.Eventually(t, func() bool {
			return slices.Contains(parseCert(t, secret("argocd-agent-principal-tls")).DNSNames, "principal.example.org")
		}, timeout, poll, "a new serverAddress issues the principal's certificate again")
		assert.Equal(t, versions["argocd-agent-ca"], secret("argocd-agent-ca").ResourceVersion, "the CA stays")
		assert.Equal(t, versions["argocd-agent-jwt"], secret("argocd-agent-jwt").ResourceVersion, "the JWT key stays")
	})
}

func TestHubArgoCDAgentClientCertificates(t *testing.T) {
	h := sharedHub(t)
	t.Run("Argo CD Agent client certificates: OCM's registration asks, the manager approves and signs with argocd-agent-ca; other identities are refused", func(t *testing.T) {
		h := h.with(t)
		h.agentModeGitOpsCluster("agent-certs", "agent-1", "agent-certs-argocd", "{enabled: true, mode: autonomous, serverAddress: principal.example.com}")
		h.waitCondition("agent-certs", "agent-certs", appsv1beta1.ConditionArgoCDAgentTrust, metav1.ConditionTrue, appsv1beta1.ReasonCertificatesCurrent)
		// addon-framework's registration controller asks the klusterlet for the certificate.
		require.Eventually(t, func() bool {
			mca := &addonv1beta1.ManagedClusterAddOn{}
			if h.c.Get(h.ctx, types.NamespacedName{Namespace: "agent-1", Name: contract.AddonName}, mca) != nil || mca.Annotations[contract.ArgoCDAgentMode] != "autonomous" {
				return false
			}
			return slices.ContainsFunc(mca.Status.Registrations, func(r addonv1beta1.RegistrationConfig) bool {
				return r.CustomSigner != nil && r.CustomSigner.SignerName == signer.SignerName && r.CustomSigner.Subject.User == "agent-1"
			})
		}, timeout, poll, "the ManagedClusterAddOn registers the Argo CD Agent certificate")

		// As the klusterlet's registration agent does: a CSR per registration (named addon-...), labelled with
		// the cluster and the addon, sent with the klusterlet's own hub identity.
		h.create(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "klusterlet-csr"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get"}},
		}})
		h.create(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "klusterlet-csr"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "klusterlet-csr"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:open-cluster-management:managed-clusters"}},
		})
		request := func(name, requesterCluster, commonName string) *certificatesv1.CertificateSigningRequest {
			key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			require.NoError(t, err)
			// With the DNS name OCM's registration agent puts in every addon request.
			der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
				Subject:  pkix.Name{CommonName: commonName, Organization: []string{signer.Group}},
				DNSNames: []string{contract.AddonName + ".addon.open-cluster-management.io"},
			}, key)
			require.NoError(t, err)
			csr := &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
					clusterv1.ClusterNameLabelKey: "agent-1", addonv1beta1.AddonLabelKey: contract.AddonName,
				}},
				Spec: certificatesv1.CertificateSigningRequestSpec{
					SignerName: signer.SignerName,
					Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
					Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth},
				},
			}
			klusterlet := testenv.Impersonating(t, h.env.Config, "system:open-cluster-management:"+requesterCluster+":x7k2p",
				[]string{"system:open-cluster-management:managed-clusters", "system:open-cluster-management:" + requesterCluster, "system:authenticated"})
			require.NoError(t, klusterlet.Create(h.ctx, csr), name)
			return csr
		}
		otherIdentity := request("addon-agent-1-gitops-addon-asks-for-agent-2", "agent-1", "agent-2")
		otherRequester := request("addon-agent-1-gitops-addon-from-agent-2", "agent-2", "agent-1")
		good := request("addon-agent-1-gitops-addon-argocd-agent", "agent-1", "agent-1")

		signed := &certificatesv1.CertificateSigningRequest{}
		require.Eventually(t, func() bool {
			return h.c.Get(h.ctx, client.ObjectKeyFromObject(good), signed) == nil && len(signed.Status.Certificate) > 0
		}, timeout, poll, "the manager approves and signs the cluster's own request")
		assert.True(t, slices.ContainsFunc(signed.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
			return c.Type == certificatesv1.CertificateApproved
		}))
		block, _ := pem.Decode(signed.Status.Certificate)
		require.NotNil(t, block)
		cert, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err)
		caSecret := &corev1.Secret{}
		require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: "agent-certs-argocd", Name: "argocd-agent-ca"}, caSecret))
		roots := x509.NewCertPool()
		roots.AddCert(parseCert(t, caSecret))
		_, err = cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		require.NoError(t, err, "the chain verifies against argocd-agent-ca")
		assert.Equal(t, "agent-1", cert.Subject.CommonName, "the principal's auth pattern %s reads the agent name from it", signer.PrincipalAuth)
		assert.WithinDuration(t, time.Now().Add(signer.DefaultLifetime), cert.NotAfter, time.Minute, "short-lived; OCM renews it")

		// The positive control: the refused requests were created, and so queued, before the
		// good one, which the manager has approved and signed above; it left them alone.
		for _, refused := range []*certificatesv1.CertificateSigningRequest{otherIdentity, otherRequester} {
			got := &certificatesv1.CertificateSigningRequest{}
			require.NoError(t, h.c.Get(h.ctx, client.ObjectKeyFromObject(refused), got))
			assert.Empty(t, got.Status.Conditions, "%s is not approved", refused.Name)
			assert.Empty(t, got.Status.Certificate, "%s is not signed", refused.Name)
		}
	})

}

func TestHubArgoCDAgentPrincipalDiscovery(t *testing.T) {
	h := sharedHub(t)
	t.Run("Argo CD Agent mode without serverAddress: the principal's LoadBalancer, then its admitted Route, is discovered, its absence explained", func(t *testing.T) {
		h := h.with(t)
		h.agentModeGitOpsCluster("agent-discovery", "agent-3", "agent-discovery-argocd", "{enabled: true}")
		c := h.waitCondition("agent-discovery", "agent-discovery", appsv1beta1.ConditionArgoCDAgentTrust, metav1.ConditionFalse, appsv1beta1.ReasonPrincipalAddressUnknown)
		assert.Contains(t, c.Message, "No Argo CD Agent principal runs in agent-discovery-argocd")

		// The GitOps operator's principal Service, given a load balancer.
		labels := map[string]string{"app.kubernetes.io/part-of": "argocd-agent", "app.kubernetes.io/component": "principal", "app.kubernetes.io/name": "hub-agent-principal"}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "agent-discovery-argocd", Name: "hub-agent-principal", Labels: labels},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}, Selector: labels},
		}
		h.create(svc)
		require.Eventually(t, func() bool {
			c = h.waitCondition("agent-discovery", "agent-discovery", appsv1beta1.ConditionArgoCDAgentTrust, metav1.ConditionFalse, appsv1beta1.ReasonPrincipalAddressUnknown)
			return strings.Contains(c.Message, "is of type LoadBalancer with no load balancer address")
		}, timeout, poll, "the Service is seen (its watch wakes the GitOpsCluster)")
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}
		require.NoError(t, h.c.Status().Update(h.ctx, svc))
		h.waitCondition("agent-discovery", "agent-discovery", appsv1beta1.ConditionArgoCDAgentTrust, metav1.ConditionTrue, appsv1beta1.ReasonCertificatesCurrent)
		require.Eventually(t, func() bool {
			mca := &addonv1beta1.ManagedClusterAddOn{}
			return h.c.Get(h.ctx, types.NamespacedName{Namespace: "agent-3", Name: contract.AddonName}, mca) == nil &&
				principalOf(mca) == "203.0.113.7:443"
		}, timeout, poll, "the cluster's agent is told the discovered address")
		principalTLS := &corev1.Secret{}
		require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: "agent-discovery-argocd", Name: "argocd-agent-principal-tls"}, principalTLS))
		cert := parseCert(t, principalTLS)
		assert.Contains(t, cert.DNSNames, "hub-agent-principal.agent-discovery-argocd.svc")
		assert.True(t, slices.ContainsFunc(cert.IPAddresses, func(ip net.IP) bool { return ip.String() == "203.0.113.7" }), "the principal's certificate names the discovered address: %v", cert.IPAddresses)

		// On OpenShift the operator also makes a passthrough Route: once a router admits
		// it, its host is where agents connect.
		route := &routev1.Route{
			ObjectMeta: metav1.ObjectMeta{Namespace: "agent-discovery-argocd", Name: "hub-agent-principal", Labels: labels},
			Spec: routev1.RouteSpec{Host: "principal-agent-argocd.apps.hub.example.com", To: routev1.RouteTargetReference{Kind: "Service", Name: "hub-agent-principal"},
				TLS: &routev1.TLSConfig{Termination: routev1.TLSTerminationPassthrough}},
		}
		h.create(route)
		route.Status.Ingress = []routev1.RouteIngress{{Host: route.Spec.Host, RouterName: "default",
			Conditions: []routev1.RouteIngressCondition{{Type: routev1.RouteAdmitted, Status: corev1.ConditionTrue}}}}
		require.NoError(t, h.c.Status().Update(h.ctx, route))
		require.Eventually(t, func() bool {
			mca := &addonv1beta1.ManagedClusterAddOn{}
			return h.c.Get(h.ctx, types.NamespacedName{Namespace: "agent-3", Name: contract.AddonName}, mca) == nil &&
				principalOf(mca) == "principal-agent-argocd.apps.hub.example.com:443"
		}, timeout, poll, "the admitted Route's host is where the cluster's agent connects (the Route's watch wakes the GitOpsCluster)")
		require.Eventually(t, func() bool {
			require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: "agent-discovery-argocd", Name: "argocd-agent-principal-tls"}, principalTLS))
			return slices.Contains(parseCert(t, principalTLS).DNSNames, "principal-agent-argocd.apps.hub.example.com")
		}, timeout, poll, "the principal's certificate names the Route's host")
	})

}

func TestHubAcceptsACMArgoCDAgentField(t *testing.T) {
	h := sharedHub(t)
	h.namespace(argoNS)
	t.Run("ACM's argoCDAgent field is accepted as ACM writes it, defaults applied", func(t *testing.T) {
		h := h.with(t)
		for name, agent := range map[string]string{
			"agent-dns":  `{enabled: true, mode: autonomous, serverAddress: principal.example.com, serverPort: "443"}`,
			"agent-ip":   `{enabled: true, mode: managed, serverAddress: 10.0.0.1, serverPort: "8443"}`,
			"agent-ipv6": `{enabled: true, serverAddress: "fd00::1"}`,
		} {
			u := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal([]byte(agentGitOpsCluster(name, agent)), &u.Object))
			require.NoError(t, h.c.Create(h.ctx, u), name)
			gc := h.gitOpsCluster(argoNS, name)
			require.NotNil(t, gc.Spec.GitOpsAddon.ArgoCDAgent)
			require.NotNil(t, gc.Spec.GitOpsAddon.ArgoCDAgent.PropagateHubCA, "defaulted")
			assert.True(t, *gc.Spec.GitOpsAddon.ArgoCDAgent.PropagateHubCA, "propagateHubCA defaults to true, as in ACM")
			require.NoError(t, h.c.Delete(h.ctx, gc))
		}
	})

}

func TestHubDeletionRemovesOnlyItsObjects(t *testing.T) {
	s := startSeed(sharedHub(t), "deletion")
	s.converge()
	// A second GitOpsCluster wants vanilla, which the first one has: it waits for it.
	s.applyOverlap()
	s.h.waitCondition(s.ns, "overlap", appsv1beta1.ConditionClustersRegistered, metav1.ConditionFalse, appsv1beta1.ReasonOwnedByOther)
	s.h.waitCondition(s.ns, "overlap", appsv1beta1.ConditionAddOnsReady, metav1.ConditionFalse, appsv1beta1.ReasonOwnedByOther)
	t.Run("deleting a GitOpsCluster removes what it created and nothing else", func(t *testing.T) {
		h := s.h.with(t)
		contestedAddon, contestedSecret := &addonv1beta1.ManagedClusterAddOn{}, &corev1.Secret{}
		require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: s.vanilla, Name: contract.AddonName}, contestedAddon))
		require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: s.ns, Name: clusterSecret(s.vanilla)}, contestedSecret))
		require.NoError(t, h.c.Delete(h.ctx, h.gitOpsCluster(s.ns, "gitops-managed")))
		if !assert.Eventually(t, func() bool {
			err := h.c.Get(h.ctx, types.NamespacedName{Namespace: s.ns, Name: "gitops-managed"}, &appsv1beta1.GitOpsCluster{})
			return apierrors.IsNotFound(err)
		}, timeout, poll, "the finalizer is removed once teardown is done") {
			h.dumpAddons(s.ns, "gitops-managed")
			t.FailNow()
		}
		err := h.c.Get(h.ctx, types.NamespacedName{Namespace: s.ocp, Name: contract.AddonName}, &addonv1beta1.ManagedClusterAddOn{})
		assert.True(t, apierrors.IsNotFound(err), "addon of ocp removed: %v", err)
		// "overlap" was told vanilla is taken; with the first owner gone it takes it over.
		require.Eventually(t, func() bool {
			mca := &addonv1beta1.ManagedClusterAddOn{}
			secret := &corev1.Secret{}
			return h.c.Get(h.ctx, types.NamespacedName{Namespace: s.vanilla, Name: contract.AddonName}, mca) == nil &&
				mca.Labels[ownership.LabelName] == "overlap" &&
				h.c.Get(h.ctx, types.NamespacedName{Namespace: s.ns, Name: clusterSecret(s.vanilla)}, secret) == nil &&
				secret.Labels[ownership.LabelName] == "overlap"
		}, timeout, poll, "the overlapping GitOpsCluster takes vanilla over")
		mca, secret := &addonv1beta1.ManagedClusterAddOn{}, &corev1.Secret{}
		require.NoError(t, h.c.Get(h.ctx, client.ObjectKeyFromObject(contestedAddon), mca))
		require.NoError(t, h.c.Get(h.ctx, client.ObjectKeyFromObject(contestedSecret), secret))
		assert.Equal(t, contestedAddon.UID, mca.UID, "handed over, not deleted and created again: the spoke keeps its stack")
		assert.True(t, mca.DeletionTimestamp.IsZero(), "never deleted")
		assert.Equal(t, contestedSecret.UID, secret.UID, "the cluster Secret is handed over too")
		assert.Equal(t, []string{clusterSecret(s.vanilla)}, secretNames(t, h, s.ns), "the deleted GitOpsCluster's other secrets are removed")
		require.NoError(t, h.c.Get(h.ctx, client.ObjectKeyFromObject(s.userSecret), &corev1.Secret{}), "the user's secret survives")
		// "overlap" still uses the Argo CD namespace and the namespace: shared objects stay.
		require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: s.ns, Name: appsv1beta1.PlacementConfigMapName}, &corev1.ConfigMap{}))
		require.NoError(t, h.c.Get(h.ctx, types.NamespacedName{Namespace: s.ns, Name: appsetaccess.PlacementReaderName}, &rbacv1.Role{}))

		// With the first owner gone, the overlapping GitOpsCluster takes the cluster over.
		h.ownAddOnsByCMA(s.vanilla)
		h.markAvailable(s.vanilla)
		h.waitCondition(s.ns, "overlap", appsv1beta1.ConditionReady, metav1.ConditionTrue, appsv1beta1.ReasonReady)
	})
}

// resourceVersions snapshots every object the manager and addon-framework write.
func (h *hub) resourceVersions() map[string]string {
	h.t.Helper()
	out := map[string]string{}
	lists := []client.ObjectList{
		&appsv1beta1.GitOpsClusterList{}, &corev1.SecretList{}, &corev1.ConfigMapList{}, &rbacv1.RoleList{},
		&rbacv1.RoleBindingList{}, &addonv1beta1.ManagedClusterAddOnList{}, &workv1.ManifestWorkList{},
	}
	for _, list := range lists {
		require.NoError(h.t, h.c.List(h.ctx, list))
		items, err := meta.ExtractList(list)
		require.NoError(h.t, err)
		for _, item := range items {
			o := item.(client.Object)
			out[fmt.Sprintf("%T %s/%s", o, o.GetNamespace(), o.GetName())] = o.GetResourceVersion()
		}
	}
	return out
}

// principalOf is the principal address a ManagedClusterAddOn's settings carry; "" outside
// agent mode.
func principalOf(mca *addonv1beta1.ManagedClusterAddOn) string {
	if agent := contract.SettingsOf(mca.Annotations).ArgoCDAgent; agent != nil {
		return agent.Principal
	}
	return ""
}
