package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/addon"
	"github.com/gitops-addon/gitops-addon/pkg/render"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/crdinstall"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/routeguard"
	"github.com/gitops-addon/gitops-addon/test/fakeroute"
	"github.com/gitops-addon/gitops-addon/test/install"
)

// agentUser is the spoke agent's ServiceAccount, as its Deployment runs it.
var agentUser = "system:serviceaccount:" + addon.DefaultInstallNamespace + ":" + contract.AgentDeployment

// grantAgentRBAC applies what the hub ships for the agent's identity on a spoke: its
// ServiceAccount, ClusterRole and binding, and the admission policy on its CRD writes.
func grantAgentRBAC(t *testing.T, ctx context.Context, c client.Client) {
	t.Helper()
	objects, err := render.Objects(ctx, render.Options{Cluster: "spoke1"})
	require.NoError(t, err)
	require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: addon.DefaultInstallNamespace}})))
	for _, o := range objects {
		obj := o.(client.Object)
		if _, isDeployment := o.(*appsv1.Deployment); isDeployment {
			continue // no kubelet: the test runs the agent itself
		}
		switch obj.GetName() {
		case "gitops-addon:agent", contract.AgentDeployment, "gitops-addon-agent-crds":
		default:
			continue
		}
		copied := o.DeepCopyObject().(client.Object)
		copied.SetResourceVersion("")
		require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx, copied)), "%T %s", o, obj.GetName())
	}
}

// asAgent is the spoke config with the agent's identity.
func asAgent(cfg *rest.Config) *rest.Config {
	impersonated := rest.CopyConfig(cfg)
	impersonated.Impersonate = rest.ImpersonationConfig{UserName: agentUser, Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	return impersonated
}

// installer is the CRD installer running as the agent runs it, with the agent's identity.
type installer struct {
	report *addonstatus.Report
	stop   func()
}

func startInstaller(t *testing.T, cfg *rest.Config, openShift bool) *installer {
	t.Helper()
	mgr := newSpokeManager(t, asAgent(cfg), routeguard.CacheByObject())
	report := addonstatus.NewReport()
	_, err := crdinstall.SetupWithManager(mgr, crdinstall.Options{Report: report, OpenShift: openShift})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("the installer did not stop")
		}
	}
	t.Cleanup(stop)
	return &installer{report: report, stop: stop}
}

func (i *installer) waitCondition(t *testing.T, reason string) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		c, ok := i.report.Condition(contract.ConditionArgoCDCRDsInstalled)
		got = c
		assert.True(collect, ok, "no ArgoCDCRDsInstalled condition yet")
		assert.Equal(collect, reason, c.Reason, "ArgoCDCRDsInstalled: %s", c.Message)
	}, 60*time.Second, 100*time.Millisecond)
	return got
}

func getCRD(ctx context.Context, c client.Client, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	return crd, c.Get(ctx, client.ObjectKey{Name: name}, crd)
}

func TestCRDInstallerOnAKubernetesCluster(t *testing.T) {
	env := startSpoke(t)
	ctx := context.Background()
	c := env.c
	grantAgentRBAC(t, ctx, c)
	embedded, err := crdinstall.Load()
	require.NoError(t, err)
	inst := startInstaller(t, env.env.Config, false)

	t.Run("installs every Argo CD CRD and the Routes CRD, whole, with its own identity", func(t *testing.T) {
		inst.waitCondition(t, contract.ReasonCRDsInstalled)
		for _, name := range embedded.Names() {
			crd, err := getCRD(ctx, c, name)
			require.NoError(t, err, name)
			assert.True(t, install.AppliedByAgent(crd), "%s applied by %s", name, crdinstall.FieldManager)
		}
		argocds, err := getCRD(ctx, c, "argocds.argoproj.io")
		require.NoError(t, err)
		for _, v := range argocds.Spec.Versions {
			assert.NotEmpty(t, v.Schema.OpenAPIV3Schema.Properties["spec"].Description, "argocds %s keeps its descriptions (kubectl explain)", v.Name)
		}
	})

	t.Run("a deleted CRD is installed again", func(t *testing.T) {
		before, err := getCRD(ctx, c, "appprojects.argoproj.io")
		require.NoError(t, err)
		require.NoError(t, c.Delete(ctx, before))
		// The apiserver's own CRD finalizer usually lets the CRD go in a second; once, in a
		// cold CI run, the CRD stayed Terminating for over two minutes (cause not found; the
		// finalizer is the apiserver's, not the agent's, which reinstalls the CRD as soon as
		// it is gone). The bound is for that wait.
		require.Eventually(t, func() bool {
			after, err := getCRD(ctx, c, "appprojects.argoproj.io")
			return err == nil && after.UID != before.UID && after.DeletionTimestamp == nil
		}, 4*time.Minute, 100*time.Millisecond, "appprojects.argoproj.io is back")
		inst.waitCondition(t, contract.ReasonCRDsInstalled)
	})

	t.Run("an edited CRD is repaired", func(t *testing.T) {
		crd, err := getCRD(ctx, c, "applications.argoproj.io")
		require.NoError(t, err)
		generation := crd.Generation
		crd.Spec.Names.ShortNames = []string{"hijacked"}
		require.NoError(t, c.Update(ctx, crd, client.FieldOwner("someone")))
		require.Eventually(t, func() bool {
			repaired, err := getCRD(ctx, c, "applications.argoproj.io")
			return err == nil && !slices.Contains(repaired.Spec.Names.ShortNames, "hijacked") && repaired.Generation > generation+1
		}, 60*time.Second, 100*time.Millisecond, "the agent takes its fields back")
	})

	t.Run("a CRD someone else takes over is left alone and reported", func(t *testing.T) {
		crd, err := getCRD(ctx, c, "notificationsconfigurations.argoproj.io")
		require.NoError(t, err)
		crd.Labels = map[string]string{"olm.managed": "true"}
		require.NoError(t, c.Update(ctx, crd))
		cond := inst.waitCondition(t, contract.ReasonCRDsProvidedByOthers)
		assert.Contains(t, cond.Message, "notificationsconfigurations.argoproj.io provided by OLM")
		// The positive control: a change to the CRD (another tool's annotation) makes the
		// installer reconcile, and it is waited for.
		var taken *apiextensionsv1.CustomResourceDefinition
		waitReconcileAfter(t, "crdinstall", func() {
			taken, err = getCRD(ctx, c, "notificationsconfigurations.argoproj.io")
			require.NoError(t, err)
			patch := client.MergeFrom(taken.DeepCopy())
			metav1.SetMetaDataAnnotation(&taken.ObjectMeta, "olm.example.com/seen", "true")
			require.NoError(t, c.Patch(ctx, taken, patch))
		})
		again, err := getCRD(ctx, c, "notificationsconfigurations.argoproj.io")
		require.NoError(t, err)
		assert.Equal(t, taken.ResourceVersion, again.ResourceVersion, "the agent does not touch it")
	})

	t.Run("the agent's identity cannot create or change an unrelated CRD", func(t *testing.T) {
		agentClient, err := client.New(asAgent(env.env.Config), client.Options{Scheme: c.Scheme()})
		require.NoError(t, err)
		var createErr error
		require.Eventually(t, func() bool {
			createErr = agentClient.Create(ctx, crd("example.com", "Widget", "widgets"))
			if createErr == nil {
				require.NoError(t, c.Delete(ctx, crd("example.com", "Widget", "widgets")))
			}
			return createErr != nil
		}, 30*time.Second, 200*time.Millisecond, "the admission policy is enforced")
		assert.ErrorContains(t, createErr, "may create or change only the CRDs it installs")

		require.NoError(t, c.Create(ctx, crd("example.com", "Gadget", "gadgets")))
		theirs, err := getCRD(ctx, c, "gadgets.example.com")
		require.NoError(t, err)
		theirs.Spec.Names.ShortNames = []string{"g"}
		assert.True(t, apierrors.IsForbidden(agentClient.Update(ctx, theirs)), "RBAC refuses updates of CRDs the agent does not own")
		assert.True(t, apierrors.IsForbidden(agentClient.Delete(ctx, theirs)), "and deletes")
	})

	t.Run("the agent never deletes a CRD when it stops", func(t *testing.T) {
		inst.stop()
		for _, name := range embedded.Names() {
			_, err := getCRD(ctx, c, name)
			assert.NoError(t, err, name)
		}
	})
}

// TestRoutesCRDOnlyWhereNoRouteAPIIsServed runs the installer in turns on one cluster:
// marked OpenShift by the hub, then serving Routes natively, then serving none.
func TestRoutesCRDOnlyWhereNoRouteAPIIsServed(t *testing.T) {
	s := startSpoke(t)
	ctx := context.Background()
	grantAgentRBAC(t, ctx, s.c)
	routesCRDExists := func() bool {
		_, err := getCRD(ctx, s.c, contract.RoutesCRDName)
		return err == nil
	}

	neverInstalled := func(t *testing.T, openShift bool, why string) {
		inst := startInstaller(t, s.env.Config, openShift)
		cond := inst.waitCondition(t, contract.ReasonCRDsInstalled)
		assert.Contains(t, cond.Message, why)
		assert.False(t, routesCRDExists())
		inst.stop()
	}
	t.Run("the hub says OpenShift: never", func(t *testing.T) {
		neverInstalled(t, true, "OpenShift or MicroShift")
	})
	t.Run("Routes served natively: never", func(t *testing.T) {
		s.registerNativeRouteAPI()
		s.waitAPIServiceAvailable(true)
		neverInstalled(t, false, "served natively")
	})

	t.Run("no Route API: installed", func(t *testing.T) {
		require.NoError(t, s.c.Delete(ctx, &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: fakeroute.APIServiceName}}))
		inst := startInstaller(t, s.env.Config, false)
		require.Eventually(t, routesCRDExists, 60*time.Second, 100*time.Millisecond)
		cond := inst.waitCondition(t, contract.ReasonCRDsInstalled)
		assert.Contains(t, cond.Message, "Routes CRD: wanted")
	})
}
