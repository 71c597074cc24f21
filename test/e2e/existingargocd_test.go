package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/gitopscluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/crdinstall"
	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/olm"
)

const (
	// olmSpoke runs OpenShift GitOps as OLM places it, before gitops-addon comes.
	olmSpoke = "olm-gitops"
	// acmSpoke carries Red Hat ACM's own instance, acm-openshift-gitops, and its operator.
	acmSpoke = "acm-gitops"
	// hubCluster is the hub registered as a managed cluster, as on every ACM hub.
	hubCluster = "local-cluster"
	// olmOperatorNamespace is where OLM installs OpenShift GitOps' operator.
	olmOperatorNamespace = "openshift-gitops-operator"
)

// TestExistingArgoCD: gitops-addon never takes over or deletes an Argo CD it did not
// create (issue 41), on a real OCM hub with real klusterlets. The hub runs a klusterlet
// too and is registered as local-cluster, with its own ArgoCD openshift-gitops; a spoke
// carries Red Hat ACM's acm-openshift-gitops and its operator; a spoke
// runs OpenShift GitOps as OLM places it (Subscription, ClusterServiceVersion, the
// operator's Deployment in openshift-gitops-operator, its ArgoCD openshift-gitops and a
// user's Application). The seed GitOpsCluster selects both. Nothing of the users' changes
// (metadata and spec compared byte for byte, no field manager of ours or the work agent's), no second operator is shipped, the
// conditions name the hub and OLM; with UseExisting a pulled Application reaches the
// existing instance; removing the addon leaves everything of the users' as it was.
//
// TestExistingArgoCDOnRealPods runs the same situations with the users' operators and
// Argo CD as pods, their Applications Synced/Healthy before, during and after.
func TestExistingArgoCD(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := harness.StartForTest(t, harness.Options{})
	binary, err := install.BuildBinary(ctx, t.TempDir())
	require.NoError(t, err)

	joined, err := f.AddSpokes(ctx, olmSpoke, acmSpoke)
	require.NoError(t, err)
	spoke, acm := joined[0], joined[1]
	_, err = f.JoinHubAs(ctx, hubCluster)
	require.NoError(t, err, "registering the hub as %s", hubCluster)
	for _, c := range []*harness.Cluster{spoke.Cluster, acm.Cluster, f.Hub} {
		installArgoCDCRDs(t, ctx, c)
	}
	spokeBefore := seedOpenShiftGitOps(t, ctx, spoke.Cluster)
	acmBefore := seedACMInstance(t, ctx, acm.Cluster)
	hubBefore := seedHubArgoCD(t, ctx, f.Hub)

	p, err := install.OnHub(ctx, f, binary)
	require.NoError(t, err)
	require.NoError(t, p.StartManager(ctx))
	require.NoError(t, install.ApplySeed(ctx, f.Hub))
	for _, name := range []string{olmSpoke, acmSpoke, hubCluster} {
		require.NoError(t, install.SelectCluster(ctx, f.Hub, name, true))
	}
	require.NoError(t, <-startAgentsWhenDelivered(ctx, p, map[string]*harness.Spoke{olmSpoke: spoke, acmSpoke: acm}))

	t.Run("the spoke's agent names OLM's OpenShift GitOps; nothing but the agent is shipped there", func(t *testing.T) {
		waitExistingArgoCD(t, ctx, f.Hub, olmSpoke, contract.ExistingArgoCDOLM,
			"OpenShift GitOps v1.16.0 via OLM (ClusterServiceVersion openshift-gitops-operator/openshift-gitops-operator.v1.16.0)",
			"OpenShift GitOps via OLM (Subscription openshift-gitops-operator/openshift-gitops-operator)",
			"operator Deployment openshift-gitops-operator/openshift-gitops-operator-controller-manager watching openshift-gitops",
			"ArgoCD openshift-gitops/openshift-gitops (not created by gitops-addon)")
		require.NoError(t, install.WaitAddonAvailable(ctx, f.Hub, olmSpoke, 3*time.Minute))
		assertNothingShippedBeside(t, ctx, f.Hub, spoke)
	})

	t.Run("ACM's acm-openshift-gitops on a spoke: named, nothing of ours beside it, untouched", func(t *testing.T) {
		waitExistingArgoCD(t, ctx, f.Hub, acmSpoke, contract.ExistingArgoCDInstance,
			"ArgoCD openshift-gitops/acm-openshift-gitops (not created by gitops-addon)",
			"operator Deployment openshift-gitops-operator/openshift-gitops-operator-controller-manager watching openshift-gitops")
		require.NoError(t, install.WaitAddonAvailable(ctx, f.Hub, acmSpoke, 3*time.Minute))
		assertNothingShippedBeside(t, ctx, f.Hub, acm)
		assertUnchanged(t, ctx, acm.Client, acmBefore)
	})

	t.Run("the hub gets no addon and is Argo CD's in-cluster destination; the GitOpsCluster names all three", func(t *testing.T) {
		gc := waitGitOpsCluster(t, ctx, f.Hub, func(gc *appsv1beta1.GitOpsCluster) bool {
			return gc.Status.ExistingArgoCDClusters == 3 && meta.IsStatusConditionTrue(gc.Status.Conditions, appsv1beta1.ConditionReady)
		})
		existing := meta.FindStatusCondition(gc.Status.Conditions, appsv1beta1.ConditionExistingArgoCD)
		require.NotNil(t, existing)
		assert.Contains(t, existing.Message, "Cluster local-cluster is the hub itself")
		assert.Contains(t, existing.Message, "OpenShift GitOps v1.16.0 via OLM")
		assert.Contains(t, existing.Message, "acm-openshift-gitops")
		assertHubGetsNothing(t, ctx, f.Hub)
		secret := &corev1.Secret{}
		require.NoError(t, f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: gitopscluster.ClusterSecretName(hubCluster)}, secret))
		assert.Equal(t, "https://kubernetes.default.svc", string(secret.Data["server"]))
		assertUnchanged(t, ctx, f.Hub.Client, hubBefore)
	})

	t.Run("UseExisting: a pulled Application reaches the existing instance, still without a second operator", func(t *testing.T) {
		require.NoError(t, install.LabelCluster(ctx, f.Hub, olmSpoke, contract.ExistingArgoCDPolicy, contract.ExistingArgoCDUse))
		app := pulledApplication(t, ctx, f.Hub, olmSpoke)
		spokeApp := application(contract.GitOpsNamespace, app.GetName())
		require.Eventually(t, func() bool {
			return spoke.Client.Get(ctx, client.ObjectKeyFromObject(spokeApp), spokeApp) == nil
		}, 2*time.Minute, 500*time.Millisecond, "the work agent applies the pulled Application into openshift-gitops")
		assertNothingShippedBeside(t, ctx, f.Hub, spoke)
		assertUnchanged(t, ctx, spoke.Client, spokeBefore)
		require.NoError(t, f.Hub.Client.Delete(ctx, app))
		require.Eventually(t, func() bool {
			return !exists(ctx, spoke.Client, application("", ""), contract.GitOpsNamespace+"/"+app.GetName())
		},
			2*time.Minute, 500*time.Millisecond, "the pulled Application leaves with its ManifestWork")
	})

	t.Run("an object the work agent cannot apply: StackApplied and the GitOpsCluster's Ready quote the work agent", func(t *testing.T) {
		// A policy on the spoke refuses every change to the agent's Deployment; UseExisting
		// then changes its arguments (--stack), which OCM's work agent cannot apply.
		policy, binding := freezeAgentDeployment()
		require.NoError(t, acm.Client.Create(ctx, policy))
		require.NoError(t, acm.Client.Create(ctx, binding))
		agent := &appsv1.Deployment{}
		require.Eventually(t, func() bool {
			if acm.Client.Get(ctx, client.ObjectKey{Namespace: harness.AddonNamespace, Name: contract.AgentDeployment}, agent) != nil {
				return false
			}
			metav1.SetMetaDataAnnotation(&agent.ObjectMeta, "example.com/probe", time.Now().String())
			return apierrors.IsInvalid(acm.Client.Update(ctx, agent, client.DryRunAll)) || apierrors.IsForbidden(acm.Client.Update(ctx, agent, client.DryRunAll))
		}, 30*time.Second, 200*time.Millisecond, "the spoke enforces the policy")
		require.NoError(t, install.LabelCluster(ctx, f.Hub, acmSpoke, contract.ExistingArgoCDPolicy, contract.ExistingArgoCDUse))
		waitAddonCondition(t, ctx, f.Hub, acmSpoke, contract.ConditionStackApplied, func(c metav1.Condition) bool {
			return c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "Deployment open-cluster-management-agent-addon/gitops-addon-agent") &&
				strings.Contains(c.Message, frozenMessage)
		}, "the work agent's refusal named on the ManagedClusterAddOn")
		waitGitOpsCluster(t, ctx, f.Hub, func(gc *appsv1beta1.GitOpsCluster) bool {
			ready := meta.FindStatusCondition(gc.Status.Conditions, appsv1beta1.ConditionReady)
			return ready != nil && ready.Status == metav1.ConditionFalse && strings.Contains(ready.Message, "Cluster "+acmSpoke+": ") &&
				strings.Contains(ready.Message, frozenMessage)
		})

		require.NoError(t, acm.Client.Delete(ctx, binding))
		require.NoError(t, acm.Client.Delete(ctx, policy))
		waitAddonCondition(t, ctx, f.Hub, acmSpoke, contract.ConditionStackApplied,
			func(c metav1.Condition) bool { return c.Status == metav1.ConditionTrue }, "applied once the policy is gone")
		waitGitOpsCluster(t, ctx, f.Hub, func(gc *appsv1beta1.GitOpsCluster) bool {
			return meta.IsStatusConditionTrue(gc.Status.Conditions, appsv1beta1.ConditionReady)
		})
		assertNothingShippedBeside(t, ctx, f.Hub, acm)
	})

	t.Run("removing the addon leaves OLM's operator, the user's ArgoCD and its Application as they were", func(t *testing.T) {
		for _, cluster := range []string{olmSpoke, acmSpoke} {
			require.NoError(t, install.SelectCluster(ctx, f.Hub, cluster, false))
		}
		for _, cluster := range []string{olmSpoke, acmSpoke} {
			waitAddonGone(t, ctx, f.Hub, cluster)
		}
		assertUnchanged(t, ctx, spoke.Client, spokeBefore)
		assertUnchanged(t, ctx, acm.Client, acmBefore)
		assertUnchanged(t, ctx, f.Hub.Client, hubBefore)
	})
}

// waitExistingArgoCD waits until a cluster's agent reports ExistingArgoCD True, and
// checks its reason and that its message names each of names.
func waitExistingArgoCD(t *testing.T, ctx context.Context, hub *harness.Cluster, cluster, reason string, names ...string) {
	t.Helper()
	var c metav1.Condition
	waitAddonCondition(t, ctx, hub, cluster, contract.ConditionExistingArgoCD,
		func(got metav1.Condition) bool { c = got; return got.Status == metav1.ConditionTrue }, "the agent finds the existing Argo CD")
	assert.Equal(t, reason, c.Reason)
	for _, name := range names {
		assert.Contains(t, c.Message, name)
	}
}

// assertHubGetsNothing: the hub, registered as local-cluster, has no ManagedClusterAddOn
// and no ManifestWork.
func assertHubGetsNothing(t *testing.T, ctx context.Context, hub *harness.Cluster) {
	t.Helper()
	assert.False(t, exists(ctx, hub.Client, &addonv1beta1.ManagedClusterAddOn{}, hubCluster+"/"+contract.AddonName), "no addon on the hub")
	works := &workv1.ManifestWorkList{}
	require.NoError(t, hub.Client.List(ctx, works, client.InNamespace(hubCluster)))
	assert.Empty(t, works.Items, "no ManifestWork for the hub")
}

// waitAddonGone waits until a cluster has neither the addon nor any ManifestWork.
func waitAddonGone(t *testing.T, ctx context.Context, hub *harness.Cluster, cluster string) {
	t.Helper()
	require.Eventually(t, func() bool {
		works := &workv1.ManifestWorkList{}
		return hub.Client.List(ctx, works, client.InNamespace(cluster)) == nil && len(works.Items) == 0 &&
			!exists(ctx, hub.Client, &addonv1beta1.ManagedClusterAddOn{}, cluster+"/"+contract.AddonName)
	}, 3*time.Minute, 500*time.Millisecond, "the addon and its ManifestWorks go from %s", cluster)
}

// seedOpenShiftGitOps puts on a cluster what OLM's OpenShift GitOps leaves there: its
// Subscription and CSV, the operator's Deployment (WATCH_NAMESPACE from the
// OperatorGroup, as OLM sets it), its ArgoCD and a user's Application; it returns them.
func seedOpenShiftGitOps(t *testing.T, ctx context.Context, c *harness.Cluster) []client.Object {
	t.Helper()
	for _, ns := range []string{olmOperatorNamespace, contract.GitOpsNamespace} {
		require.NoError(t, c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	for _, crd := range olm.CRDs() {
		require.NoError(t, c.Client.Create(ctx, crd))
	}
	require.Eventually(t, func() bool {
		err := c.Client.List(ctx, &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": olm.Group + "/" + olm.Version, "kind": "SubscriptionList"}})
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "OLM's CRDs served")
	sub := olm.Subscription(olmOperatorNamespace, "openshift-gitops-operator", "openshift-gitops-operator")
	csv := olm.ClusterServiceVersion(olmOperatorNamespace, "openshift-gitops-operator.v1.16.0", "Red Hat OpenShift GitOps")
	operator := operatorInOLMsNamespace(map[string]string{"control-plane": "gitops-operator"},
		"registry.redhat.io/openshift-gitops-1/gitops-rhel9-operator@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		corev1.EnvVar{Name: "WATCH_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: "metadata.annotations['olm.targetNamespaces']"}}})
	instance := usersArgoCD()
	app := guestbookApplication(contract.GitOpsNamespace, "users-guestbook")
	return createSettled(t, ctx, c, operator, sub, csv, operator, instance, app)
}

// operatorInOLMsNamespace is a GitOps operator's Deployment where OLM (and Red Hat ACM's
// gitops-addon) puts it; it never runs here.
func operatorInOLMsNamespace(labels map[string]string, image string, watch corev1.EnvVar) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: olmOperatorNamespace, Name: "openshift-gitops-operator-controller-manager", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "manager", Image: image, Env: []corev1.EnvVar{watch},
			}}}},
		},
	}
}

// createSettled creates the objects and returns them once kube-controller-manager's
// deployment controller has annotated the operator's revision: the state to compare
// against is after that.
func createSettled(t *testing.T, ctx context.Context, c *harness.Cluster, operator *appsv1.Deployment, objects ...client.Object) []client.Object {
	t.Helper()
	for _, o := range objects {
		require.NoError(t, c.Client.Create(ctx, o), "creating %T %s", o, o.GetName())
	}
	require.Eventually(t, func() bool {
		return c.Client.Get(ctx, client.ObjectKeyFromObject(operator), operator) == nil && operator.Annotations["deployment.kubernetes.io/revision"] != ""
	}, time.Minute, 200*time.Millisecond, "the deployment controller saw %s/%s", operator.Namespace, operator.Name)
	return objects
}

// frozenMessage is what the spoke's policy answers a change to the agent's Deployment.
const frozenMessage = "the gitops-addon agent is frozen by this cluster's policy"

// freezeAgentDeployment is a ValidatingAdmissionPolicy, and its binding, that refuses
// every update of the agent's Deployment, as a cluster's own admission policy may.
func freezeAgentDeployment() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	const name = "freeze-gitops-addon-agent"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				ResourceNames: []string{contract.AgentDeployment},
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: frozenMessage}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return policy, binding
}

// seedACMInstance is what Red Hat ACM's gitops-addon leaves on a spoke: the GitOps
// operator in openshift-gitops-operator (watching every namespace) and its instance
// acm-openshift-gitops in openshift-gitops, with no OLM involved.
func seedACMInstance(t *testing.T, ctx context.Context, c *harness.Cluster) []client.Object {
	t.Helper()
	for _, ns := range []string{olmOperatorNamespace, contract.GitOpsNamespace} {
		require.NoError(t, c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	labels := map[string]string{"apps.open-cluster-management.io/gitopsaddon": "true"}
	operator := operatorInOLMsNamespace(labels, "registry.redhat.io/openshift-gitops-1/gitops-rhel9-operator:v1.16.0", corev1.EnvVar{Name: "WATCH_NAMESPACE"})
	instance := usersArgoCD()
	instance.SetName("acm-openshift-gitops")
	instance.SetLabels(labels)
	return createSettled(t, ctx, c, operator, operator, instance)
}

// seedHubArgoCD is the hub's own Argo CD, as OpenShift GitOps makes it on an ACM hub.
func seedHubArgoCD(t *testing.T, ctx context.Context, c *harness.Cluster) []client.Object {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: contract.GitOpsNamespace}}
	if err := c.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	instance := usersArgoCD()
	require.NoError(t, c.Client.Create(ctx, instance))
	return []client.Object{instance}
}

// usersArgoCD is OpenShift GitOps' default instance as its operator writes it: none of
// the fields gitops-addon's ArgoCD sets, so that a server-side apply of ours would merge
// into it without a conflict (the take-over of issue 41) rather than fail.
func usersArgoCD() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"sso":        map[string]any{"provider": "dex", "dex": map[string]any{"openShiftOAuth": true}},
		"controller": map[string]any{"processors": map[string]any{"operation": int64(10)}},
	}}}
	u.SetGroupVersionKind(contract.ArgoCDGVK)
	u.SetNamespace(contract.GitOpsNamespace)
	u.SetName(contract.ArgoCDName)
	return u
}

// installArgoCDCRDs installs, as OLM does for OpenShift GitOps, Argo CD's CRDs and the
// operator's (the same versions the agent carries, without gitops-addon's label: they are
// someone else's, and the agent leaves them alone).
func installArgoCDCRDs(t *testing.T, ctx context.Context, c *harness.Cluster) {
	t.Helper()
	embedded, err := crdinstall.Load()
	require.NoError(t, err)
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, e := range embedded.ArgoCD {
		crd, err := e.Decode()
		require.NoError(t, err)
		crd.Labels, crd.Annotations = map[string]string{"operators.coreos.com/openshift-gitops-operator.openshift-gitops-operator": ""}, nil
		crds = append(crds, crd)
	}
	require.NoError(t, c.InstallCRDs(ctx, crds), "installing Argo CD's CRDs on %s", c.Name)
	var lastErr error
	require.Eventually(t, func() bool {
		lastErr = c.Client.List(ctx, &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "argoproj.io/v1beta1", "kind": "ArgoCDList"}})
		return lastErr == nil
	}, 2*time.Minute, 200*time.Millisecond, "the ArgoCD API served on %s (last: %v)", c.Name, &lastErr)
}

// assertUnchanged: each object is the same object with the same metadata and spec, byte
// for byte, and no field manager of gitops-addon or of OCM's work agent ever wrote to it.
// Its status may change: kube-controller-manager writes a Deployment's.
func assertUnchanged(t *testing.T, ctx context.Context, c client.Client, before []client.Object) {
	t.Helper()
	for _, want := range before {
		got := want.DeepCopyObject().(client.Object)
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(want), got), "%T %s is still there", want, want.GetName())
		assert.Equal(t, desiredState(t, want), desiredState(t, got), "%T %s/%s changed", want, want.GetNamespace(), want.GetName())
		for _, f := range got.GetManagedFields() {
			assert.NotContains(t, []string{"work-agent-gitops-addon", "work-agent", "gitops-addon-agent", "gitops-addon"}, f.Manager,
				"%T %s was written to by %s (%s)", want, want.GetName(), f.Manager, f.Operation)
		}
	}
}

// desiredState is an object as JSON without what its controllers write: status, an
// Application's operation (a sync Argo CD's own automation starts and clears), the
// resourceVersion, the managed fields, and the generation (which an Application's status
// writes raise too: its CRD has no status subresource; a spec change shows in the spec).
// Writes of ours to any of these are caught by assertUnchanged's field managers.
func desiredState(t *testing.T, o client.Object) string {
	t.Helper()
	raw, err := json.Marshal(o)
	require.NoError(t, err)
	m := map[string]any{}
	require.NoError(t, json.Unmarshal(raw, &m))
	delete(m, "status")
	delete(m, "operation")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "resourceVersion")
		delete(md, "managedFields")
		delete(md, "generation")
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return string(out)
}

// assertNothingShippedBeside: the addon's ManifestWork carries no operator, no ArgoCD and
// no Namespace openshift-gitops, and the cluster runs no operator Deployment of ours.
func assertNothingShippedBeside(t *testing.T, ctx context.Context, hub *harness.Cluster, spoke *harness.Spoke) {
	t.Helper()
	works := &workv1.ManifestWorkList{}
	require.NoError(t, hub.Client.List(ctx, works, client.InNamespace(spoke.Name), client.MatchingLabels{addonv1beta1.AddonLabelKey: contract.AddonName}))
	require.NotEmpty(t, works.Items)
	for _, w := range works.Items {
		for _, m := range w.Spec.Workload.Manifests {
			obj := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal(m.Raw, &obj.Object))
			kind, name := obj.GetKind(), obj.GetName()
			assert.False(t, kind == "ArgoCD", "ManifestWork %s ships ArgoCD %s", w.Name, name)
			assert.False(t, kind == "Deployment" && name == contract.OperatorDeployment, "ManifestWork %s ships the GitOps operator", w.Name)
			assert.False(t, kind == "Namespace" && name == contract.GitOpsNamespace, "ManifestWork %s ships the Namespace %s", w.Name, name)
		}
	}
	assert.False(t, exists(ctx, spoke.Client, &appsv1.Deployment{}, contract.GitOpsNamespace+"/"+contract.OperatorDeployment), "a second operator runs")
}

// pulledApplication creates on the hub the Application the seed ApplicationSet makes for
// cluster, labelled for the pull model.
func pulledApplication(t *testing.T, ctx context.Context, hub *harness.Cluster, cluster string) *unstructured.Unstructured {
	t.Helper()
	appSet := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(install.SeedYAML("applicationset.yaml"), &appSet.Object))
	require.Eventually(t, func() bool {
		return hub.Client.Create(ctx, appSet) == nil || exists(ctx, hub.Client, appSet, appSet.GetNamespace()+"/"+appSet.GetName())
	},
		time.Minute, time.Second, "creating the ApplicationSet")
	require.NoError(t, hub.Client.Get(ctx, client.ObjectKeyFromObject(appSet), appSet))
	app := generatedApplication(t, appSet, cluster)
	require.NoError(t, hub.Client.Create(ctx, app))
	require.Equal(t, cluster, app.GetAnnotations()[pullnames.AnnotationCluster])
	return app
}

func waitGitOpsCluster(t *testing.T, ctx context.Context, hub *harness.Cluster, done func(*appsv1beta1.GitOpsCluster) bool) *appsv1beta1.GitOpsCluster {
	t.Helper()
	gc := &appsv1beta1.GitOpsCluster{}
	if !assert.Eventually(t, func() bool {
		return hub.Client.Get(ctx, client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: "gitops-managed"}, gc) == nil && done(gc)
	}, 3*time.Minute, 500*time.Millisecond) {
		// The last status read, not the one when the wait began.
		t.Fatalf("GitOpsCluster gitops-managed never got there; its last status: %+v", gc.Status)
	}
	return gc
}
