package gitopscluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/ownership"
)

// registerClusters writes an Argo CD cluster secret for every decided cluster, removes
// the ones this GitOpsCluster wrote for clusters no longer decided, and ensures the
// ApplicationSet placement ConfigMap and RBAC.
func (r *Reconciler) registerClusters(ctx context.Context, gc *appsv1beta1.GitOpsCluster, clusters []string, agent agentResult) (registrationResult, error) {
	var res registrationResult
	plan, err := r.planClusterSecrets(ctx, gc, clusters)
	if err != nil {
		return res, err
	}
	secrets, err := forEachCluster(ctx, clusters, func(ctx context.Context, cluster string) (secretState, error) {
		if problem, blocked := plan.blocked[cluster]; blocked {
			return secretState{problem: problem}, nil
		}
		state, err := r.ensureClusterSecret(ctx, gc, cluster, plan.name(cluster), agent)
		if err == nil && state.problem == "" && state.name != (types.NamespacedName{}) {
			err = r.removeDuplicates(ctx, gc, state.name.Name, plan.doubled[cluster], plan.duplicates[cluster])
		}
		return state, err
	})
	if err != nil {
		return res, err
	}
	wanted := map[types.NamespacedName]bool{}
	for _, secret := range secrets {
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
	}
	if err := r.removeStaleSecrets(ctx, gc, wanted); err != nil {
		return res, err
	}
	problems, err := r.ensureApplicationSetAccess(ctx, gc)
	res.problems = append(res.problems, problems...)
	if err != nil {
		return res, err
	}
	// After a change of argoNamespace, the old namespace's objects may be needed by nobody.
	return res, r.removeUnneededSharedObjects(ctx, gc)
}

// secretState is what ensureClusterSecret found on one cluster: the Secret's name (empty
// when the cluster has no ManagedCluster) and a problem when it could not be registered.
type secretState struct {
	name     types.NamespacedName
	problem  string
	conflict bool
}

// ensureClusterSecret writes one decided cluster's Argo CD cluster secret, named name.
func (r *Reconciler) ensureClusterSecret(ctx context.Context, gc *appsv1beta1.GitOpsCluster, cluster, name string, agent agentResult) (secretState, error) {
	mc := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: cluster}, mc); err != nil {
		if apierrors.IsNotFound(err) {
			return secretState{problem: fmt.Sprintf("Cluster %q is decided by the Placement but has no ManagedCluster; it is not registered.", cluster)}, nil
		}
		return secretState{}, fmt.Errorf("reading ManagedCluster %s: %w", cluster, err)
	}
	desired := desiredClusterSecret(gc, mc)
	desired.Name = name
	if agent.enabled && r.Trust != nil {
		if err := r.toAgentFormat(ctx, desired, cluster, agent); err != nil {
			return secretState{}, err
		}
	}
	outcome, err := r.ensureOwned(ctx, gc, desired, &corev1.Secret{}, updateSecret)
	if err != nil {
		return secretState{}, err
	}
	return secretState{name: client.ObjectKeyFromObject(desired), problem: outcome.problem, conflict: outcome.conflict}, nil
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
	if _, agent := want.Annotations[annotationSkipReconcile]; !agent && wasAgentFormat(cur) {
		// Agent mode turned off: the hub's Argo CD reconciles the cluster's Applications again.
		if _, has := cur.Annotations[annotationSkipReconcile]; has {
			delete(cur.Annotations, annotationSkipReconcile)
			changed = true
		}
	}
	cur.Labels, cur.Data = labels, want.Data
	return addAnnotations(cur, want.Annotations) || changed
}

// wasAgentFormat tells whether gitops-addon wrote a cluster Secret in Argo CD Agent's
// format (it wrote the agent-name label).
func wasAgentFormat(s *corev1.Secret) bool {
	return slices.Contains(strings.Split(s.Annotations[AnnotationWrittenLabels], ","), labelAgentName)
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
		if err := r.deleteExact(ctx, s); err != nil {
			return err
		}
		r.event(gc, corev1.EventTypeNormal, "ClusterUnregistered", "Removed Argo CD cluster secret %s/%s", s.Namespace, s.Name)
	}
	return nil
}

// ensureApplicationSetAccess ensures the ConfigMap and RBAC the ApplicationSet
// clusterDecisionResource generator needs. They are shared by every GitOpsCluster of the
// same namespaces, so they carry no owner labels.
func (r *Reconciler) ensureApplicationSetAccess(ctx context.Context, gc *appsv1beta1.GitOpsCluster) ([]string, error) {
	argoNS := gc.ArgoNamespace()
	shared := []struct {
		desired, current client.Object
		update           func(current, desired client.Object) bool
	}{
		{desiredPlacementConfigMap(argoNS), &corev1.ConfigMap{}, updateConfigMap},
		{desiredPlacementReaderRole(gc.Namespace), &rbacv1.Role{}, updateRole},
		{desiredPlacementReaderBinding(gc.Namespace, argoNS), &rbacv1.RoleBinding{}, updateRoleBinding},
	}
	var problems []string
	for _, s := range shared {
		problem, err := r.ensureShared(ctx, gc, s.desired, s.current, s.update)
		if err != nil {
			return problems, err
		}
		if problem != "" {
			problems = append(problems, problem)
		}
	}
	return problems, nil
}

// ensureShared creates or updates a shared object. One created by someone else is never
// changed, unless the GitOpsCluster adopts (AnnotationAdopt): it is fine when it already
// says what we need, a problem otherwise.
func (r *Reconciler) ensureShared(
	ctx context.Context,
	gc *appsv1beta1.GitOpsCluster,
	desired, current client.Object,
	update func(current, desired client.Object) bool,
) (string, error) {
	key := client.ObjectKeyFromObject(desired)
	kind := kindOf(desired)
	err := r.Client.Get(ctx, key, current)
	switch {
	case apierrors.IsNotFound(err):
		return r.ensureSharedNotInCache(ctx, gc, desired, current, update)
	case err != nil:
		return "", fmt.Errorf("reading %s %s: %w", kind, key, err)
	}
	return "", r.updateIfChanged(ctx, current, desired, update)
}

// ensureSharedNotInCache creates a shared object, or finds the foreign one that holds its
// name (remembered, so that later reconciles read it instead of failing a create).
func (r *Reconciler) ensureSharedNotInCache(
	ctx context.Context,
	gc *appsv1beta1.GitOpsCluster,
	desired, current client.Object,
	update func(current, desired client.Object) bool,
) (string, error) {
	key := client.ObjectKeyFromObject(desired)
	kind := kindOf(desired)
	if !r.foreign.known(kind, key) {
		createErr := r.Client.Create(ctx, desired.DeepCopyObject().(client.Object))
		switch {
		case createErr == nil:
			return "", nil
		case !apierrors.IsAlreadyExists(createErr):
			return "", fmt.Errorf("creating %s %s: %w", kind, key, createErr)
		}
	}
	if err := r.APIReader.Get(ctx, key, current); err != nil {
		if apierrors.IsNotFound(err) && r.foreign.known(kind, key) {
			r.foreign.forget(kind, key) // gone: ours now
			return r.ensureSharedNotInCache(ctx, gc, desired, current, update)
		}
		return "", fmt.Errorf("reading existing %s %s: %w", kind, key, err)
	}
	if gc.Adopts() {
		_, err := r.adopt(ctx, gc, desired, current, update)
		return "", err
	}
	r.foreign.add(kind, key)
	if update(current, desired) {
		return fmt.Sprintf("%s %s exists, was not created by gitops-addon and differs from what ApplicationSets need; it is left unchanged. Fix: annotate "+
			"GitOpsCluster %s/%s with %s=true to adopt it, or delete it and gitops-addon recreates it.",
			kind, key, gc.Namespace, gc.Name, appsv1beta1.AnnotationAdopt), nil
	}
	return "", nil
}

func updateConfigMap(current, desired client.Object) bool {
	cur, want := current.(*corev1.ConfigMap), desired.(*corev1.ConfigMap)
	if maps.Equal(cur.Data, want.Data) {
		return false
	}
	cur.Data = want.Data
	return true
}

func updateRole(current, desired client.Object) bool {
	cur, want := current.(*rbacv1.Role), desired.(*rbacv1.Role)
	if equality.Semantic.DeepEqual(cur.Rules, want.Rules) {
		return false
	}
	cur.Rules = want.Rules
	return true
}

func updateRoleBinding(current, desired client.Object) bool {
	cur, want := current.(*rbacv1.RoleBinding), desired.(*rbacv1.RoleBinding)
	if equality.Semantic.DeepEqual(cur.Subjects, want.Subjects) && cur.RoleRef == want.RoleRef {
		return false
	}
	// roleRef is immutable: a foreign binding with another roleRef is reported, not changed,
	// and ours always has the same one.
	cur.Subjects = want.Subjects
	return true
}

// deleteExact deletes an object only if it is still the one we read (UID precondition),
// so that a same-named object created meanwhile by someone else survives.
func (r *Reconciler) deleteExact(ctx context.Context, obj client.Object) error {
	uid := obj.GetUID()
	err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s: %w", kindOf(obj), client.ObjectKeyFromObject(obj), err)
	}
	return nil
}
