package gitopscluster

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
)

// acmClusterSecretNames are the names Red Hat ACM 2.9 and later give a cluster's Argo CD
// Secret: <cluster>-application-manager-cluster-secret, and cluster-<cluster> in Argo CD
// Agent mode. (ACM up to 2.8 used ours, <cluster>-cluster-secret.)
func acmClusterSecretNames(cluster string) []string {
	return []string{cluster + "-application-manager-cluster-secret", "cluster-" + cluster}
}

// secretPlan says, per cluster, which Secret is its one Argo CD cluster Secret, which of
// ACM's Secrets for the same cluster go once that one is in place, and which clusters
// are not registered because ACM's Secret holds them: Argo CD refuses a destination name
// that two cluster Secrets carry, so there must never be two.
type secretPlan struct {
	keep       map[string]string
	duplicates map[string][]*corev1.Secret
	blocked    map[string]string
	// doubled are clusters registered by ours and by ACM's Secret, seen without adoption:
	// what the Warning Event says.
	doubled map[string]string
	// inCluster are the hub clusters whose in-cluster address another Secret registers.
	inCluster inClusterPlan
}

// name is the Secret to keep for cluster (ours unless planned otherwise).
func (p secretPlan) name(cluster string) string {
	if name, ok := p.keep[cluster]; ok {
		return name
	}
	return ClusterSecretName(cluster)
}

// planClusterSecrets keeps, for each cluster, the Secret this GitOpsCluster already keeps
// (ours, or one of ACM's adopted under its own name). Else, when ACM's own Secret for the
// cluster exists: a GitOpsCluster that adopts takes it over in place, so that Argo CD
// never sees the cluster twice nor loses it; one that does not leaves the cluster
// unregistered and says why. Else ours is created. ACM's other Secrets for a cluster are
// duplicates of the one kept. A hub cluster whose in-cluster address another Secret
// registers already gets none (planInClusterSecrets).
func (r *Reconciler) planClusterSecrets(ctx context.Context, gc *appsv1beta1.GitOpsCluster, clusters []string, hubs hubClusters) (secretPlan, error) {
	plan := secretPlan{keep: map[string]string{}, duplicates: map[string][]*corev1.Secret{}, blocked: map[string]string{}, doubled: map[string]string{}}
	owned, err := r.ownedSecretNames(ctx, gc)
	if err != nil {
		return plan, err
	}
	if plan.inCluster, err = r.planInClusterSecrets(ctx, gc, hubs, owned); err != nil {
		return plan, err
	}
	foreign := map[string]*corev1.Secret{}
	_, checked := r.acmSecretsChecked.Load(gc.UID)
	if !checked || gc.Adopts() || slices.ContainsFunc(clusters, func(c string) bool { return r.unregistered(gc, c, owned) }) {
		if foreign, err = r.acmSecrets(ctx, gc, owned); err != nil {
			return plan, err
		}
		r.acmSecretsChecked.Store(gc.UID, true)
	}
	for _, cluster := range clusters {
		keep := keptName(cluster, owned)
		for _, name := range acmClusterSecretNames(cluster) {
			s, found := foreign[name]
			switch {
			case !found || name == keep:
			case keep == "" && gc.Adopts():
				keep = name
			case keep == "":
				plan.blocked[cluster] = fmt.Sprintf("Red Hat ACM's cluster secret %s/%s registers cluster %q with Argo CD already; gitops-addon adds no second one "+
					"(Argo CD refuses a destination name two cluster secrets carry). Fix: annotate GitOpsCluster %s/%s with %s=true to take it over, or delete it.",
					s.Namespace, s.Name, cluster, gc.Namespace, gc.Name, appsv1beta1.AnnotationAdopt)
			case gc.Adopts():
				plan.duplicates[cluster] = append(plan.duplicates[cluster], s)
			default:
				plan.doubled[cluster] = fmt.Sprintf("Red Hat ACM's cluster secret %s/%s registers cluster %q too, beside %s/%s: Argo CD sees the cluster "+
					"twice and refuses it as a destination name. Fix: annotate GitOpsCluster %s/%s with %s=true (ACM's is then removed), or delete ACM's.",
					s.Namespace, s.Name, cluster, s.Namespace, keep, gc.Namespace, gc.Name, appsv1beta1.AnnotationAdopt)
			}
			if plan.blocked[cluster] != "" {
				break
			}
		}
		if keep != "" {
			plan.keep[cluster] = keep
		}
	}
	return plan, nil
}

// keptName is the Secret this GitOpsCluster keeps for cluster among its owned ones:
// ours first, then ACM's names it adopted; "" when it keeps none.
func keptName(cluster string, owned map[string]bool) string {
	for _, name := range append([]string{ClusterSecretName(cluster)}, acmClusterSecretNames(cluster)...) {
		if owned[name] {
			return name
		}
	}
	return ""
}

// unregistered tells whether a cluster has no Secret of this GitOpsCluster yet: none in
// the cache, and none created moments ago that the cache has not caught up with.
func (r *Reconciler) unregistered(gc *appsv1beta1.GitOpsCluster, cluster string, owned map[string]bool) bool {
	key := client.ObjectKey{Namespace: gc.ArgoNamespace(), Name: ClusterSecretName(cluster)}
	return keptName(cluster, owned) == "" && !r.owned().RecentlyCreated(ownership.KindOf(&corev1.Secret{}), key)
}

// ownedSecretNames are the names of the Secrets this GitOpsCluster keeps in its Argo CD
// namespace, from the cache.
func (r *Reconciler) ownedSecretNames(ctx context.Context, gc *appsv1beta1.GitOpsCluster) (map[string]bool, error) {
	owned := &corev1.SecretList{}
	if err := r.Client.List(ctx, owned, client.InNamespace(gc.ArgoNamespace()), ownership.Selector(gc)); err != nil {
		return nil, fmt.Errorf("listing the cluster secrets of %s/%s: %w", gc.Namespace, gc.Name, err)
	}
	names := map[string]bool{}
	for i := range owned.Items {
		names[owned.Items[i].Name] = true
	}
	return names, nil
}

// acmSecrets reads, uncached (our cache holds only our own Secrets), the cluster Secrets
// of ACM's names in the Argo CD namespace that no GitOpsCluster of ours owns, by name. It
// runs once per GitOpsCluster after the manager starts (an upgrade finds a double
// registration an earlier version left), then only while a cluster has no Secret of ours
// yet, or while the GitOpsCluster adopts: a steady state that adopts nothing reads nothing. The ones this GitOpsCluster adopted
// are added to owned: the cache may not show them yet, and taking them for absent would
// create a second Secret for their cluster.
func (r *Reconciler) acmSecrets(ctx context.Context, gc *appsv1beta1.GitOpsCluster, owned map[string]bool) (map[string]*corev1.Secret, error) {
	list := &corev1.SecretList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(gc.ArgoNamespace()), client.MatchingLabels{labelACMCluster: "true"}); err != nil {
		return nil, fmt.Errorf("listing Red Hat ACM's cluster secrets in %s: %w", gc.ArgoNamespace(), err)
	}
	out := map[string]*corev1.Secret{}
	for i := range list.Items {
		s := &list.Items[i]
		if !slices.Contains(acmClusterSecretNames(s.Labels[LabelClusterName]), s.Name) {
			continue
		}
		switch who, _ := ownership.Classify(s, gc); who {
		case ownership.OwnedByIt:
			owned[s.Name] = true
		case ownership.NotOwned:
			out[s.Name] = s
		}
	}
	return out, nil
}

// removeDuplicates deletes ACM's other Secrets for a cluster once the one kept is ours and
// current (the caller checks), each only if unchanged since it was read. Without adoption
// nothing is deleted: a double registration found is a Warning Event (once per manager
// start: the search runs once per GitOpsCluster then), not a condition that would come
// and go with the searches.
func (r *Reconciler) removeDuplicates(ctx context.Context, gc *appsv1beta1.GitOpsCluster, kept, doubled string, duplicates []*corev1.Secret) error {
	if doubled != "" {
		r.event(gc, corev1.EventTypeWarning, appsv1beta1.ReasonDoubleRegistration, "%s", doubled)
	}
	for _, s := range duplicates {
		if err := r.owned().DeleteExact(ctx, s); err != nil {
			return err
		}
		r.event(gc, corev1.EventTypeNormal, appsv1beta1.ReasonACMSecretRemoved,
			"Removed Red Hat ACM's cluster secret %s/%s: %s/%s, adopted, registers the same cluster (%s is \"true\")",
			s.Namespace, s.Name, s.Namespace, kept, appsv1beta1.AnnotationAdopt)
	}
	return nil
}
