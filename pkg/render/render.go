// Package render prints, without any cluster, exactly the objects the hub would ship to a
// managed cluster, by running the addon's own rendering on a ManagedCluster and
// ManagedClusterAddOn built from flags.
package render

import (
	"context"
	"fmt"
	"io"

	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/addon"
)

// Options says what to render.
type Options struct {
	// Cluster is the managed cluster name.
	Cluster string
	// OpenShift renders for an OpenShift cluster; otherwise for a Kubernetes cluster
	// known to have no Route API (which receives the Routes CRD).
	OpenShift bool
	// KubeVersion is the Kubernetes version the cluster reports (ManagedCluster
	// status.version.kubernetes); empty: a current one.
	KubeVersion string
	// ValueFiles and Values (key=value) override chart values, as `helm --values/--set`.
	ValueFiles []string
	Values     []string
	// AgentImage and OperatorImage are the manager's --agent-image and --operator-image.
	AgentImage    string
	OperatorImage string
}

// Objects renders the objects for a cluster, in the order they are applied.
func Objects(ctx context.Context, o Options) ([]runtime.Object, error) {
	if errs := validation.IsDNS1123Label(o.Cluster); len(errs) > 0 {
		return nil, fmt.Errorf("--cluster %q is not a valid cluster name: %v", o.Cluster, errs)
	}
	extra, err := (&values.Options{ValueFiles: o.ValueFiles, Values: o.Values}).MergeValues(getter.Providers{})
	if err != nil {
		return nil, fmt.Errorf("reading values: %w", err)
	}
	agentAddon, err := addon.New(addon.Options{AgentImage: o.AgentImage, OperatorImage: o.OperatorImage, ExtraValues: extra})
	if err != nil {
		return nil, err
	}
	objects, err := agentAddon.Manifests(ctx, managedCluster(o), managedClusterAddOn(o.Cluster))
	if err != nil {
		return nil, fmt.Errorf("rendering for cluster %s: %w", o.Cluster, err)
	}
	return objects, nil
}

// Print writes the objects as a multi-document YAML stream.
func Print(w io.Writer, objects []runtime.Object) error {
	for _, obj := range objects {
		out, err := yaml.Marshal(obj)
		if err != nil {
			return fmt.Errorf("encoding %T: %w", obj, err)
		}
		if _, err := fmt.Fprintf(w, "---\n%s", out); err != nil {
			return err
		}
	}
	return nil
}

// managedCluster builds the ManagedCluster OCM would report for the cluster's flavour.
func managedCluster(o Options) *clusterv1.ManagedCluster {
	product := "Kubernetes"
	claims := []clusterv1.ManagedClusterClaim{}
	if o.OpenShift {
		product = "OpenShift"
		claims = append(claims, clusterv1.ManagedClusterClaim{Name: "version.openshift.io", Value: "4.20"})
	}
	claims = append(claims, clusterv1.ManagedClusterClaim{Name: "product.open-cluster-management.io", Value: product})
	return &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: o.Cluster, Labels: map[string]string{"name": o.Cluster}},
		Status:     clusterv1.ManagedClusterStatus{ClusterClaims: claims, Version: clusterv1.ManagedClusterVersion{Kubernetes: o.KubeVersion}},
	}
}

func managedClusterAddOn(cluster string) *addonv1beta1.ManagedClusterAddOn {
	return &addonv1beta1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: contract.AddonName, Namespace: cluster},
		// What its agent reports on a cluster that runs no Argo CD of someone else: render
		// shows the whole stack gitops-addon ships there.
		Status: addonv1beta1.ManagedClusterAddOnStatus{Namespace: addon.DefaultInstallNamespace, Conditions: []metav1.Condition{{
			Type: contract.ConditionExistingArgoCD, Status: metav1.ConditionFalse, Reason: contract.ExistingArgoCDNone,
		}}},
	}
}
