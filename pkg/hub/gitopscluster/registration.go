package gitopscluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
)

// registerClusters writes an Argo CD cluster secret for every decided cluster (for the
// hub itself, one for Argo CD's in-cluster address), removes the ones this GitOpsCluster
// wrote for clusters no longer decided, and reports what is wrong with the ApplicationSet
// placement ConfigMap and RBAC it needs (which pkg/hub/appsetaccess writes).
func (r *Reconciler) registerClusters(
	ctx context.Context, gc *appsv1beta1.GitOpsCluster, clusters []string, hubs hubClusters, trust argocdagent.Trust,
	live map[string]liveCredentials,
) (registrationResult, error) {
	var res registrationResult
	plan, err := r.planClusterSecrets(ctx, gc, clusters, hubs)
	if err != nil {
		return res, err
	}
	secrets, err := forEachCluster(ctx, clusters, func(ctx context.Context, cluster string) (secretState, error) {
		if problem, blocked := plan.blocked[cluster]; blocked {
			return secretState{problem: problem}, nil
		}
		if holder, held := plan.inCluster[cluster]; held {
			return secretState{inClusterBy: holder}, nil
		}
		state, err := r.ensureClusterSecret(ctx, gc, cluster, plan.name(cluster), hubs[cluster].IsHub(), trust, live[cluster])
		if err == nil && state.problem == "" && state.name != (types.NamespacedName{}) {
			err = r.removeDuplicates(ctx, gc, state.name.Name, plan.doubled[cluster], plan.duplicates[cluster])
		}
		return state, err
	})
	if err != nil {
		return res, err
	}
	wanted := map[types.NamespacedName]bool{}
	for i, secret := range secrets {
		if secret.name != (types.NamespacedName{}) {
			wanted[secret.name] = true
		}
		switch {
		case secret.problem != "":
			res.problems = append(res.problems, secret.problem)
			res.conflict = res.conflict || secret.conflict
		default:
			res.registered++
		}
		if secret.inClusterBy != "" {
			res.inClusterBy = setKey(res.inClusterBy, clusters[i], secret.inClusterBy)
		}
	}
	if err := r.removeStaleSecrets(ctx, gc, wanted); err != nil {
		return res, err
	}
	r.reportApplicationSetAccess(gc, &res)
	return res, nil
}

// setKey sets m[k] = v, making m when it is nil.
func setKey[V any](m map[string]V, k string, v V) map[string]V {
	if m == nil {
		m = map[string]V{}
	}
	m[k] = v
	return m
}

// secretState is what ensureClusterSecret found on one cluster: the Secret's name (empty
// when the cluster has no ManagedCluster) and a problem when it could not be registered.
// inClusterBy, for a hub cluster, names who registers Argo CD's in-cluster address
// instead of a Secret of ours.
type secretState struct {
	name        types.NamespacedName
	problem     string
	conflict    bool
	inClusterBy string
}

// ensureClusterSecret writes one decided cluster's Argo CD cluster secret, named name;
// for the hub itself (hub), the in-cluster destination's, never in Argo CD Agent's
// format: the hub's own Argo CD syncs its Applications, no argocd-agent. With live
// credentials (a server set), it reads the cluster's live resources through cluster-proxy.
func (r *Reconciler) ensureClusterSecret(
	ctx context.Context, gc *appsv1beta1.GitOpsCluster, cluster, name string, hub bool, trust argocdagent.Trust, live liveCredentials,
) (secretState, error) {
	mc := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: cluster}, mc); err != nil {
		if apierrors.IsNotFound(err) {
			return secretState{problem: fmt.Sprintf("Cluster %q is decided by the Placement but has no ManagedCluster; it is not registered.", cluster)}, nil
		}
		return secretState{}, fmt.Errorf("reading ManagedCluster %s: %w", cluster, err)
	}
	desired := desiredClusterSecret(gc, mc)
	desired.Name = name
	switch {
	case hub:
		asInClusterDestination(desired)
	case trust.Enabled && r.Trust != nil:
		if err := r.toArgoCDAgentFormat(ctx, desired, cluster, trust); err != nil {
			return secretState{}, err
		}
	case live.server != "":
		desired.Data["server"], desired.Data["config"] = []byte(live.server), live.config
	}
	outcome, err := r.owned().Ensure(ctx, gc, desired, &corev1.Secret{}, updateSecret)
	if err != nil {
		return secretState{}, err
	}
	return secretState{name: client.ObjectKeyFromObject(desired), problem: outcome.Problem, conflict: outcome.Conflict}, nil
}

// updateSecret brings an owned cluster Secret's data and our labels to the desired
// state: the labels it wrote before and no longer wants go, labels other tools added
// stay. A Secret written before the written-labels annotation existed keeps every label
// it has (which of them were ours is unknown; nothing is removed that may be another's).
func updateSecret(current, desired client.Object) bool {
	cur, want := current.(*corev1.Secret), desired.(*corev1.Secret)
	labels := maps.Clone(cur.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	if written, ok := cur.Annotations[AnnotationWrittenLabels]; ok {
		for _, k := range strings.Split(written, ",") {
			if _, wanted := want.Labels[k]; !wanted {
				delete(labels, k)
			}
		}
	}
	maps.Copy(labels, want.Labels)
	changed := !maps.Equal(labels, cur.Labels) || !equality.Semantic.DeepEqual(cur.Data, want.Data)
	if _, skipped := want.Annotations[argocdagent.AnnotationSkipReconcile]; !skipped && wasArgoCDAgentFormat(cur) {
		// Argo CD Agent mode turned off: the hub's Argo CD reconciles the cluster's Applications again.
		if _, has := cur.Annotations[argocdagent.AnnotationSkipReconcile]; has {
			delete(cur.Annotations, argocdagent.AnnotationSkipReconcile)
			changed = true
		}
	}
	cur.Labels, cur.Data = labels, want.Data
	return addAnnotations(cur, want.Annotations) || changed
}

// wasArgoCDAgentFormat tells whether gitops-addon wrote a cluster Secret in Argo CD
// Agent's format (it wrote argocd-agent's agent-name label).
func wasArgoCDAgentFormat(s *corev1.Secret) bool {
	return slices.Contains(strings.Split(s.Annotations[AnnotationWrittenLabels], ","), argocdagent.LabelAgentName)
}

// addAnnotations sets each of want on obj and tells whether anything changed; other
// annotations stay.
func addAnnotations(obj client.Object, want map[string]string) bool {
	if len(want) == 0 {
		return false
	}
	annotations := maps.Clone(obj.GetAnnotations())
	if annotations == nil {
		annotations = map[string]string{}
	}
	changed := false
	for k, v := range want {
		if annotations[k] != v {
			annotations[k], changed = v, true
		}
	}
	obj.SetAnnotations(annotations)
	return changed
}

// removeStaleSecrets deletes the cluster secrets this GitOpsCluster wrote that are no
// longer wanted, in any namespace (argoNamespace may have changed), or hands each over
// to another GitOpsCluster that registers the same cluster in the same namespace.
func (r *Reconciler) removeStaleSecrets(ctx context.Context, gc *appsv1beta1.GitOpsCluster, wanted map[types.NamespacedName]bool) error {
	secrets := &corev1.SecretList{}
	if err := r.Client.List(ctx, secrets, ownership.Selector(gc)); err != nil {
		return fmt.Errorf("listing cluster secrets of %s/%s: %w", gc.Namespace, gc.Name, err)
	}
	claimants := r.claimants(gc)
	for i := range secrets.Items {
		s := &secrets.Items[i]
		if wanted[client.ObjectKeyFromObject(s)] {
			continue
		}
		if cluster := s.Labels[LabelClusterName]; cluster != "" {
			handed, err := claimants.handOverIfClaimed(ctx, s, cluster, wantsSecretIn(s.Namespace))
			if err != nil {
				return err
			}
			if handed {
				continue
			}
		}
		if err := r.owned().DeleteExact(ctx, s); err != nil {
			return err
		}
		r.event(gc, corev1.EventTypeNormal, appsv1beta1.ReasonClusterUnregistered, "Removed Argo CD cluster secret %s/%s", s.Namespace, s.Name)
	}
	return nil
}
