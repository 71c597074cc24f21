package install

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/util/retry"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/examples"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/test/fakeroute"
	"github.com/gitops-addon/gitops-addon/test/harness"
)

// SelectorLabel is the ManagedCluster label the seed Placement selects.
const SelectorLabel = "gitops"

// SeedYAML returns a file of the seed users apply (examples/seed): "placement.yaml",
// "gitopscluster.yaml" or "applicationset.yaml".
func SeedYAML(name string) []byte { return examples.Seed(name) }

// ApplyYAML creates or updates every object of a multi-document YAML, unchanged.
func ApplyYAML(ctx context.Context, c client.Client, doc []byte) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(doc)))
	for {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(raw, &u.Object); err != nil {
			return fmt.Errorf("decoding YAML: %w", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := apply(ctx, c, u); err != nil {
			return err
		}
	}
}

// ApplySeed creates the Argo CD namespace, the ManagedClusterSetBinding and Placement, and
// the seed GitOpsCluster.
func ApplySeed(ctx context.Context, hub *harness.Cluster) error {
	if err := apply(ctx, hub.Client, namespace(contract.GitOpsNamespace)); err != nil {
		return err
	}
	if err := ApplyYAML(ctx, hub.Client, SeedYAML("placement.yaml")); err != nil {
		return err
	}
	return ApplyYAML(ctx, hub.Client, SeedYAML("gitopscluster.yaml"))
}

// SelectCluster labels a ManagedCluster so that the seed Placement selects it (or not).
func SelectCluster(ctx context.Context, hub *harness.Cluster, name string, selected bool) error {
	value := ""
	if selected {
		value = "enabled"
	}
	return LabelCluster(ctx, hub, name, SelectorLabel, value)
}

// LabelCluster sets (or, with an empty value, removes) a ManagedCluster label.
func LabelCluster(ctx context.Context, hub *harness.Cluster, name, key, value string) error {
	mc := &clusterv1.ManagedCluster{}
	if err := hub.Client.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		return fmt.Errorf("reading ManagedCluster %s: %w", name, err)
	}
	patch := client.MergeFrom(mc.DeepCopy())
	if mc.Labels == nil {
		mc.Labels = map[string]string{}
	}
	if value != "" {
		mc.Labels[key] = value
	} else {
		delete(mc.Labels, key)
	}
	if err := hub.Client.Patch(ctx, mc, patch); err != nil {
		return fmt.Errorf("labelling ManagedCluster %s: %w", name, err)
	}
	return nil
}

// productClaim is the reserved ClusterClaim that names a cluster's Kubernetes product.
const productClaim = "product.open-cluster-management.io"

// MakeOpenShiftLike gives a spoke what OCM sees of an OpenShift cluster: the product
// ClusterClaim, which OCM's registration agent reports into the ManagedCluster's status
// (waited for, so that the hub's flavour detection works from what OCM derived and not
// from a label the test set), and a real aggregated route.openshift.io/v1 API server
// registered through a service-backed APIService. The caller stops the returned server.
func MakeOpenShiftLike(ctx context.Context, hub *harness.Cluster, spoke *harness.Spoke) (*fakeroute.Server, error) {
	claim := &clusterv1alpha1.ClusterClaim{
		ObjectMeta: metav1.ObjectMeta{Name: productClaim},
		Spec:       clusterv1alpha1.ClusterClaimSpec{Value: "OpenShift"},
	}
	if err := client.IgnoreAlreadyExists(spoke.Client.Create(ctx, claim)); err != nil {
		return nil, fmt.Errorf("creating the product ClusterClaim on %s: %w", spoke.Name, err)
	}
	if err := waitClaimOnHub(ctx, hub, spoke.Name, claim, 2*time.Minute); err != nil {
		return nil, err
	}
	server, err := fakeroute.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the aggregated Route API server for %s: %w", spoke.Name, err)
	}
	server.AddRoute("default", "console")
	if err := server.Register(ctx, spoke.Client); err != nil {
		server.Stop()
		return nil, fmt.Errorf("registering the Route API on %s: %w", spoke.Name, err)
	}
	return server, nil
}

// waitClaimOnHub waits until the registration agent has reported a spoke's ClusterClaim
// in its ManagedCluster's status.
func waitClaimOnHub(ctx context.Context, hub *harness.Cluster, cluster string, claim *clusterv1alpha1.ClusterClaim, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		mc := &clusterv1.ManagedCluster{}
		if err := hub.Client.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
			return false, nil //nolint:nilerr // the next poll retries
		}
		return claimValue(mc, claim.Name) == claim.Spec.Value, nil
	})
	if err != nil {
		return fmt.Errorf("ClusterClaim %s=%s of %s did not reach its ManagedCluster's status within %s: %w",
			claim.Name, claim.Spec.Value, cluster, timeout, err)
	}
	return nil
}

// claimValue is the value of a ClusterClaim reported in a ManagedCluster's status, or "".
func claimValue(mc *clusterv1.ManagedCluster, name string) string {
	for _, c := range mc.Status.ClusterClaims {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// ClusterState is one row of the demo's table and the e2e test's view of a cluster.
type ClusterState struct {
	Cluster   string
	Flavour   string
	Addon     string // Available, Progressing, Degraded, ... or "-"
	RouteAPI  string // the agent's RouteAPI condition reason, or "-"
	Landed    []string
	RoutesCRD bool
}

// State reads a cluster's addon state from the hub and what landed on the spoke.
func State(ctx context.Context, hub *harness.Cluster, spoke *harness.Spoke) ClusterState {
	s := ClusterState{Cluster: spoke.Name, Flavour: "vanilla", Addon: "-", RouteAPI: "-"}
	mc := &clusterv1.ManagedCluster{}
	if hub.Client.Get(ctx, client.ObjectKey{Name: spoke.Name}, mc) == nil {
		if product := claimValue(mc, productClaim); product != "" {
			s.Flavour = product
		}
	}
	mca := &addonv1beta1.ManagedClusterAddOn{}
	if hub.Client.Get(ctx, client.ObjectKey{Namespace: spoke.Name, Name: contract.AddonName}, mca) == nil {
		s.Addon = addonState(mca)
		if c := meta.FindStatusCondition(mca.Status.Conditions, contract.ConditionRouteAPI); c != nil {
			s.RouteAPI = c.Reason
		}
	}
	s.Landed = Landed(ctx, spoke.Cluster)
	s.RoutesCRD = exists(ctx, spoke.Client, "apiextensions.k8s.io/v1", "CustomResourceDefinition", client.ObjectKey{Name: contract.RoutesCRDName})
	return s
}

func addonState(mca *addonv1beta1.ManagedClusterAddOn) string {
	for _, t := range []string{"Available", "Degraded", "Progressing"} {
		c := meta.FindStatusCondition(mca.Status.Conditions, t)
		if c == nil {
			continue
		}
		if t == "Available" && c.Status == metav1.ConditionTrue {
			return "Available"
		}
		if t != "Available" && c.Status == metav1.ConditionTrue {
			return t
		}
	}
	if c := meta.FindStatusCondition(mca.Status.Conditions, "Available"); c != nil {
		return "Available=" + string(c.Status)
	}
	return "Pending"
}

// SpokeObject is one object the addon delivers to a spoke.
type SpokeObject struct {
	Short      string
	APIVersion string
	Kind       string
	Key        client.ObjectKey
}

// DeliveredObjects are what every spoke receives, as the e2e test and the demo check them.
var DeliveredObjects = []SpokeObject{
	{"namespace", "v1", "Namespace", client.ObjectKey{Name: contract.GitOpsNamespace}},
	{"operator", "apps/v1", "Deployment", client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: contract.OperatorDeployment}},
	{"platform-extensions", "rbac.authorization.k8s.io/v1", "ClusterRole", client.ObjectKey{Name: contract.PlatformExtensionsClusterRole}},
	{"argocd-crds", "apiextensions.k8s.io/v1", "CustomResourceDefinition", client.ObjectKey{Name: "applications.argoproj.io"}},
	{"ArgoCD", "argoproj.io/v1beta1", "ArgoCD", client.ObjectKey{Namespace: contract.GitOpsNamespace, Name: contract.ArgoCDName}},
}

// Landed lists the short names of the delivered objects present on a spoke.
func Landed(ctx context.Context, c *harness.Cluster) []string {
	var out []string
	for _, o := range DeliveredObjects {
		if exists(ctx, c.Client, o.APIVersion, o.Kind, o.Key) {
			out = append(out, o.Short)
		}
	}
	sort.Strings(out)
	return out
}

func exists(ctx context.Context, c client.Client, apiVersion, kind string, key client.ObjectKey) bool {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return c.Get(ctx, key, u) == nil
}

// WaitAddonAvailable waits until a cluster's ManagedClusterAddOn is Available; its error
// says what it saw last.
func WaitAddonAvailable(ctx context.Context, hub *harness.Cluster, cluster string, timeout time.Duration) error {
	last := "no ManagedClusterAddOn"
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		mca := &addonv1beta1.ManagedClusterAddOn{}
		if hub.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: contract.AddonName}, mca) != nil {
			return false, nil
		}
		c := meta.FindStatusCondition(mca.Status.Conditions, "Available")
		if c == nil {
			last = "no Available condition"
			return false, nil
		}
		last = fmt.Sprintf("Available=%s %s: %s", c.Status, c.Reason, c.Message)
		return c.Status == metav1.ConditionTrue, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for ManagedClusterAddOn %s/%s Available (last seen: %s): %w", cluster, contract.AddonName, last, err)
	}
	return nil
}

// ConfigName is the AddOnDeploymentConfig SetCustomizedVariable attaches to a cluster's
// gitops-addon.
const ConfigName = "gitops-addon-config"

// SetCustomizedVariable sets one customizedVariable of the AddOnDeploymentConfig
// ConfigName in the cluster's namespace, creating it and attaching it to the cluster's
// ManagedClusterAddOn (spec.configs) as a user would.
func SetCustomizedVariable(ctx context.Context, hub *harness.Cluster, cluster, name, value string) error {
	adc := &addonv1beta1.AddOnDeploymentConfig{}
	key := client.ObjectKey{Namespace: cluster, Name: ConfigName}
	err := hub.Client.Get(ctx, key, adc)
	switch {
	case apierrors.IsNotFound(err):
		adc = &addonv1beta1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: ConfigName}}
		adc.Spec.CustomizedVariables = []addonv1beta1.CustomizedVariable{{Name: name, Value: value}}
		if err := hub.Client.Create(ctx, adc); err != nil {
			return fmt.Errorf("creating AddOnDeploymentConfig %s: %w", key, err)
		}
	case err != nil:
		return err
	default:
		vars := slices.DeleteFunc(adc.Spec.CustomizedVariables, func(v addonv1beta1.CustomizedVariable) bool { return v.Name == name })
		adc.Spec.CustomizedVariables = slices.Concat(vars, []addonv1beta1.CustomizedVariable{{Name: name, Value: value}})
		if err := hub.Client.Update(ctx, adc); err != nil {
			return fmt.Errorf("updating AddOnDeploymentConfig %s: %w", key, err)
		}
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mca := &addonv1beta1.ManagedClusterAddOn{}
		if err := hub.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: contract.AddonName}, mca); err != nil {
			return err
		}
		for _, c := range mca.Spec.Configs {
			if c.Resource == "addondeploymentconfigs" && c.Name == ConfigName && c.Namespace == cluster {
				return nil
			}
		}
		mca.Spec.Configs = append(mca.Spec.Configs, addonv1beta1.AddOnConfig{
			ConfigGroupResource: addonv1beta1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
			ConfigReferent:      addonv1beta1.ConfigReferent{Namespace: cluster, Name: ConfigName},
		})
		return hub.Client.Update(ctx, mca)
	})
}
