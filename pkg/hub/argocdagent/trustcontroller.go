package argocdagent

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/hub/argocdagent/pki"
)

// TrustControllerName names the trust controller in logs, metrics and events.
const TrustControllerName = "argocdagent-trust"

// TrustReconciler keeps the Argo CD Agent trust of every Argo CD namespace that has
// GitOpsClusters in Argo CD Agent mode: the principal's CA, serving certificates and JWT key. It
// reconciles a namespace, not a GitOpsCluster, so that one writer issues them for the
// names every GitOpsCluster sharing the principal needs; the GitOpsClusters only read them
// (TrustReader).
type TrustReconciler struct {
	// Client reads GitOpsClusters and the principal's Services and Routes from the cache.
	Client client.Client
	// Keeper issues and renews the trust Secrets.
	Keeper *Keeper
	// Routes: the hub serves route.openshift.io/v1 (the principal's Route is discovered).
	Routes bool
	// Recorder emits Events on the GitOpsClusters of the namespace.
	Recorder events.EventRecorder
	// ArgoNamespaces are the only namespaces the manager may write Secrets in; empty allows
	// any. A GitOpsCluster pointing elsewhere is refused by its own controller.
	ArgoNamespaces []string
}

// Reconcile keeps the trust of one Argo CD namespace (req.Name).
func (r *TrustReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := req.Name
	if len(r.ArgoNamespaces) > 0 && !slices.Contains(r.ArgoNamespaces, ns) {
		return ctrl.Result{}, nil
	}
	sharing, err := Sharing(ctx, r.Client, ns)
	if err != nil || len(sharing) == 0 {
		// Without Argo CD Agent mode GitOpsClusters the Secrets stay: the CA the argocd-agents trust must
		// outlive a GitOpsCluster deleted and created again.
		return ctrl.Result{}, err
	}
	names, service, proxy, err := r.principalNames(ctx, sharing)
	if err == nil {
		var t Trust
		if t, err = r.Keeper.Ensure(ctx, Request{Namespace: ns, PrincipalNames: names, ResourceProxyService: proxy}); err == nil {
			r.announceIssued(sharing, ns, service, t.Issued)
			return ctrl.Result{RequeueAfter: t.untilDue(time.Now())}, nil
		}
	}
	for _, gc := range sharing {
		r.event(gc, corev1.EventTypeWarning, appsv1beta1.ReasonTrustFailed, "Keeping the Argo CD Agent certificates of %s: %v", ns, err)
	}
	return ctrl.Result{}, fmt.Errorf("keeping the Argo CD Agent certificates of %s: %w", ns, err)
}

// principalNames are the names the principal's certificate must hold for every
// GitOpsCluster sharing it (a certificate naming only one GitOpsCluster's serverAddress
// would be issued again for each in turn), and the principal's Service, when found.
func (r *TrustReconciler) principalNames(ctx context.Context, sharing []*appsv1beta1.GitOpsCluster) (names []string, service, proxy string, err error) {
	finder := Finder{Reader: r.Client, Routes: r.Routes}
	for _, gc := range sharing {
		p, err := finder.Find(ctx, gc)
		if err != nil {
			return nil, "", "", err
		}
		service = cmp.Or(service, p.Service)
		proxy = cmp.Or(proxy, p.ResourceProxy.Service)
		names = append(names, p.certificateNames(gc.ArgoNamespace())...)
	}
	slices.Sort(names)
	return slices.Compact(names), service, proxy, nil
}

// announceIssued records, on each GitOpsCluster sharing the principal, an Event for each
// trust Secret written in this pass and why.
func (r *TrustReconciler) announceIssued(sharing []*appsv1beta1.GitOpsCluster, ns, service string, issued map[string]string) {
	names := make([]string, 0, len(issued))
	for name := range issued {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		why := issued[name]
		if why != "missing" && name != pki.JWTSecret {
			// argocd-agent's principal reads its certificates only when it starts.
			why += "; restart the principal to use it (kubectl -n " + ns + " rollout restart deployment " +
				cmp.Or(service, "<the principal's Deployment>") + ")"
		}
		for _, gc := range sharing {
			r.event(gc, corev1.EventTypeNormal, appsv1beta1.ReasonCertificateIssued, "Issued Secret %s/%s (%s)", ns, name, why)
		}
	}
}

func (r *TrustReconciler) event(gc *appsv1beta1.GitOpsCluster, eventType, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(gc, nil, eventType, reason, "KeepTrust", format, args...)
	}
}

// SetupWithManager registers the controller: a namespace is reconciled when a GitOpsCluster
// in Argo CD Agent mode points at it (or stops pointing at it), when the principal's Service or
// Route there changes (its address is in the certificate), and when one of its trust
// Secrets changes or goes (issued again at once).
func (r *TrustReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(TrustControllerName).
		Watches(&appsv1beta1.GitOpsCluster{}, argoNamespacesOf()).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(namespaceOf)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(trustSecretNamespace))
	if r.Routes {
		b = b.Watches(&routev1.Route{}, handler.EnqueueRequestsFromMapFunc(namespaceOf))
	}
	return b.Complete(r)
}

// argoNamespacesOf maps a GitOpsCluster event to its Argo CD namespace, and on an update to
// the one it had before too (Argo CD Agent mode or argoNamespace changed: the names there change).
func argoNamespacesOf() handler.EventHandler {
	add := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], obj client.Object) {
		if gc, ok := obj.(*appsv1beta1.GitOpsCluster); ok && gc.ArgoCDAgentEnabled() {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: gc.ArgoNamespace()}})
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.ObjectOld.GetGeneration() == e.ObjectNew.GetGeneration() && e.ObjectNew.GetDeletionTimestamp().IsZero() {
				return // a status or metadata write: the names come from the spec
			}
			add(q, e.ObjectOld)
			add(q, e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object)
		},
	}
}

func namespaceOf(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: obj.GetNamespace()}}}
}

// IsTrustSecret tells the trust Secrets of a namespace by name.
func IsTrustSecret(name string) bool {
	return slices.Contains([]string{pki.CASecret, pki.PrincipalSecret, pki.ResourceProxySecret, pki.JWTSecret}, name)
}

func trustSecretNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	if !IsTrustSecret(obj.GetName()) {
		return nil
	}
	return namespaceOf(ctx, obj)
}
