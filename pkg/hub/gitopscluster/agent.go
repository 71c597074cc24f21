package gitopscluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent"
)

// readArgoCDAgentTrust reads, in Argo CD Agent mode, the trust of gc's Argo CD namespace
// (kept by argocdagent's trust controller) and where its argocd-agents reach the principal. A pending
// trust (its CA not issued yet) stops the reconcile before anything is signed; the trust
// Secrets' watch wakes it once they are there.
func (r *Reconciler) readArgoCDAgentTrust(ctx context.Context, gc *appsv1beta1.GitOpsCluster) (argocdagent.Trust, *stepFailure, error) {
	reader := argocdagent.TrustReader{Finder: argocdagent.Finder{Reader: r.Client, Routes: r.Routes}, Keeper: r.Trust}
	trust, err := reader.Read(ctx, gc)
	if err != nil {
		return trust, &stepFailure{condition: appsv1beta1.ConditionArgoCDAgentTrust, err: err}, err
	}
	if pending := trust.Pending(gc.ArgoNamespace()); trust.Enabled && r.Trust != nil && pending != "" {
		return trust, &stepFailure{condition: appsv1beta1.ConditionArgoCDAgentTrust, pending: true, err: errors.New(pending)}, nil
	}
	return trust, nil, nil
}

// toArgoCDAgentFormat turns a cluster Secret into Argo CD Agent's format, keeping the
// client certificate of the Secret as it stands until it is due.
func (r *Reconciler) toArgoCDAgentFormat(ctx context.Context, desired *corev1.Secret, cluster string, trust argocdagent.Trust) error {
	current := &corev1.Secret{}
	var currentConfig []byte
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), current); err == nil {
		currentConfig = current.Data["config"]
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading Secret %s: %w", client.ObjectKeyFromObject(desired), err)
	}
	if err := argocdagent.FormatClusterSecret(desired, cluster, currentConfig, trust, time.Now()); err != nil {
		return err
	}
	desired.Annotations[AnnotationWrittenLabels] = writtenLabels(desired.Labels)
	return nil
}

// addonSettings are what a cluster's ManagedClusterAddOn carries for the addon's
// rendering: the GitOpsCluster's images and, in Argo CD Agent mode, the mode, the principal's
// address and the CA to trust it by (unless propagation is off).
func addonSettings(gc *appsv1beta1.GitOpsCluster, mode string, trust argocdagent.Trust) contract.AddonSettings {
	settings := contract.AddonSettings{Images: imageSettings(gc)}
	if mode == "" {
		return settings
	}
	settings.ArgoCDAgent = &contract.ArgoCDAgentSettings{Mode: mode, Principal: trust.Principal.HostPort()}
	if ca := trust.CACertificatePEM(); len(ca) > 0 && propagatesHubCA(gc) {
		settings.ArgoCDAgent.PrincipalCA = string(ca)
	}
	return settings
}

// propagatesHubCA tells whether the principal's CA goes to the clusters: propagateHubCA
// (true unless set false), and not ACM's skip annotation.
func propagatesHubCA(gc *appsv1beta1.GitOpsCluster) bool {
	if gc.Annotations[appsv1beta1.AnnotationSkipHubCAPropagation] == "true" {
		return false
	}
	p := gc.Spec.GitOpsAddon.ArgoCDAgent.PropagateHubCA
	return p == nil || *p
}

// forPrincipalService wakes the Argo CD Agent mode GitOpsClusters of the namespace of the
// principal's Service or Route.
func (r *Reconciler) forPrincipalService(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.sharingPrincipal(ctx, obj.GetNamespace())
}

// sharingPrincipal are the requests of the Argo CD Agent mode GitOpsClusters of an Argo CD namespace.
func (r *Reconciler) sharingPrincipal(ctx context.Context, argoNamespace string) []reconcile.Request {
	sharing, err := argocdagent.Sharing(ctx, r.Client, argoNamespace)
	if err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(sharing))
	for _, gc := range sharing {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(gc)})
	}
	return out
}

// forSecret maps a Secret to the GitOpsCluster that created it, and a trust Secret of an
// Argo CD namespace to the GitOpsClusters in Argo CD Agent mode there, which sign with its CA.
func (r *Reconciler) forSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	if argocdagent.IsTrustSecret(obj.GetName()) {
		return r.sharingPrincipal(ctx, obj.GetNamespace())
	}
	return r.forOwner(ctx, obj)
}
