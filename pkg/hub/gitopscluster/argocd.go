package gitopscluster

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
)

const (
	// labelSecretType makes Argo CD read a Secret as a cluster definition.
	labelSecretType = "argocd.argoproj.io/secret-type" //nolint:gosec // G101: a label key, not a credential
	// labelACMCluster is set by Red Hat Advanced Cluster Management on its cluster
	// secrets; ApplicationSets written for it select on it, so we set it too.
	labelACMCluster = "apps.open-cluster-management.io/acm-cluster"

	// LabelClusterName names, as Red Hat ACM's label does, the managed cluster an Argo CD
	// cluster Secret stands for.
	LabelClusterName = "apps.open-cluster-management.io/cluster-name"
	// AnnotationWrittenLabels lists, comma-separated, the label keys gitops-addon wrote on
	// an Argo CD cluster Secret; the others are another tool's and stay.
	AnnotationWrittenLabels = "gitops-addon.open-cluster-management.io/written-labels"
)

// ClusterSecretName is the name of the Argo CD cluster secret of a managed cluster.
func ClusterSecretName(cluster string) string { return cluster + "-cluster-secret" }

// clusterServer is the server URL written into an Argo CD cluster secret: the cluster's
// API URL when OCM knows it, else the placeholder the Argo CD pull model uses, so that
// ApplicationSet templates always get a stable, unique {{server}}.
func clusterServer(mc *clusterv1.ManagedCluster) string {
	for _, cfg := range mc.Spec.ManagedClusterClientConfigs {
		if cfg.URL != "" {
			return cfg.URL
		}
	}
	return "https://" + mc.Name + "-control-plane"
}

// desiredClusterSecret is the Argo CD cluster secret of one managed cluster. It holds no
// credentials: Argo CD on the hub only generates Applications for the cluster, and the
// GitOps stack delivered by the addon syncs them on the spoke. The ManagedCluster's labels
// are copied so that ApplicationSet cluster generators can select on them.
func desiredClusterSecret(gc *appsv1beta1.GitOpsCluster, mc *clusterv1.ManagedCluster) *corev1.Secret {
	labels := clusterLabels(mc)
	maps.Copy(labels, ownership.Labels(gc))
	labels[labelSecretType] = "cluster"
	labels[labelACMCluster] = "true"
	labels[LabelClusterName] = mc.Name
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:        ClusterSecretName(mc.Name),
			Namespace:   gc.ArgoNamespace(),
			Labels:      labels,
			Annotations: secretAnnotations(gc, labels),
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			"name":   []byte(mc.Name),
			"server": []byte(clusterServer(mc)),
			"config": []byte(`{"tlsClientConfig":{"insecure":false}}`),
		},
	}
}

// secretAnnotations record which labels of a cluster Secret are ours (so that labels
// other tools put on it stay, and a label removed from the ManagedCluster is removed
// from the Secret), and the owner in full when its name is hashed in the labels.
func secretAnnotations(gc *appsv1beta1.GitOpsCluster, labels map[string]string) map[string]string {
	annotations := map[string]string{AnnotationWrittenLabels: writtenLabels(labels)}
	maps.Copy(annotations, ownership.Annotations(gc))
	return annotations
}

// writtenLabels is the AnnotationWrittenLabels value for the labels we write.
func writtenLabels(labels map[string]string) string {
	return strings.Join(slices.Sorted(maps.Keys(labels)), ",")
}

// volatileLabelPrefix marks the labels OCM itself flips as addons' health changes
// (feature.open-cluster-management.io/addon-<name>: available, unhealthy, unreachable).
// They say nothing a generator selects on, and copying them would rewrite every cluster
// Secret of the fleet whenever an addon's health flickers.
const volatileLabelPrefix = "feature.open-cluster-management.io/"

// clusterLabels are the ManagedCluster's labels an Argo CD cluster Secret carries: all of
// them but OCM's volatile addon-health labels.
func clusterLabels(mc *clusterv1.ManagedCluster) map[string]string {
	labels := make(map[string]string, len(mc.Labels)+5)
	for k, v := range mc.Labels {
		if !strings.HasPrefix(k, volatileLabelPrefix) {
			labels[k] = v
		}
	}
	return labels
}
