// Package argocdagent is the hub side of Argo CD Agent mode (argocd-agent, its principal
// on the hub): where the clusters' argocd-agents reach the principal (serverAddress,
// Route, LoadBalancer), the trust the principal and the argocd-agents share (the Keeper
// of the trust Secrets, and the one controller per Argo CD namespace that keeps them),
// what a GitOpsCluster reads and reports of it (Trust), and the Argo CD cluster Secrets in
// argocd-agent's format. Its subpackages are the PKI as pure functions (pki) and the
// signer of the argocd-agents' client certificates through OCM's registration (signer).
package argocdagent

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"strconv"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

// The GitOps operator's labels on the principal's Services (argocd-operator
// controllers/argocdagent: part-of argocd-agent, component principal, name
// "<ArgoCD>-agent-principal" on the one argocd-agents connect to).
const (
	labelPartOf    = "app.kubernetes.io/part-of"
	labelComponent = "app.kubernetes.io/component"
	labelName      = "app.kubernetes.io/name"
)

// PrincipalServiceSelector selects the principal's Services (and on OpenShift its
// Routes), the only Services and Routes the manager caches.
func PrincipalServiceSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{labelPartOf: "argocd-agent", labelComponent: "principal"})
}

// RouteCacheByObject caches the principal's Routes (OpenShift hubs: the operator's
// passthrough Route to the principal carries the Service's labels) in namespaces (all
// when nil), for a manager on a hub that serves route.openshift.io/v1.
func RouteCacheByObject(namespaces map[string]cache.Config) map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{&routev1.Route{}: {Label: PrincipalServiceSelector(), Namespaces: namespaces}}
}

// Principal is where the clusters' argocd-agents reach the principal, and the names its
// certificate must hold.
type Principal struct {
	// Address and Port argocd-agents connect to; Address empty when unknown (Problem says why).
	Address, Port string
	// Service is the principal's Service in the Argo CD namespace, when there is one.
	Service string
	// ResourceProxy is where the hub's argocd-server reaches the principal's resource proxy.
	ResourceProxy ResourceProxy
	Problem       string
}

// ResourceProxy is the principal's resource proxy Service, through which the hub's
// argocd-server reads the clusters' live resources.
type ResourceProxy struct{ Service, Port string }

// defaultResourceProxy is argocd-agent's own install's Service; the GitOps operator names
// its own "<ArgoCD>-agent-principal-resource-proxy" (found by its port's name).
var defaultResourceProxy = ResourceProxy{Service: "argocd-agent-resource-proxy", Port: "9090"}

// resourceProxyPort is the name of the resource proxy's port on the operator's Service.
const resourceProxyPort = "resource-proxy"

// Finder finds the principal of an Argo CD namespace in the manager's cache.
type Finder struct {
	// Reader reads the principal's Services and Routes (cached by their labels).
	Reader client.Reader
	// Routes: the hub serves route.openshift.io/v1, and the principal's Route is
	// discovered (its cache is RouteCacheByObject).
	Routes bool
}

// Find decides where argocd-agents connect: spec.gitopsAddon.argoCDAgent.serverAddress
// when set, else the host of the principal's admitted Route (on a hub that serves
// Routes), else the LoadBalancer of the principal's Service in argoNamespace.
func (f Finder) Find(ctx context.Context, gc *appsv1beta1.GitOpsCluster) (Principal, error) {
	spec := gc.Spec.GitOpsAddon.ArgoCDAgent
	ns := gc.ArgoNamespace()
	p := Principal{Address: spec.ServerAddress, Port: cmp.Or(spec.ServerPort, "443")}
	services, err := f.principalServices(ctx, ns)
	if err != nil {
		return p, err
	}
	svc := principalService(services)
	if svc != nil {
		p.Service = svc.Name
	}
	p.ResourceProxy = resourceProxyOf(services)
	if p.Address != "" {
		return p, nil
	}
	route, err := f.principalRouteHost(ctx, ns)
	if err != nil || route != "" {
		p.Address, p.Port = route, "443"
		return p, err
	}
	switch {
	case svc == nil:
		p.Problem = fmt.Sprintf("No Argo CD Agent principal runs in %s (no Service labelled %s=argocd-agent, %s=principal) and "+
			"spec.gitopsAddon.argoCDAgent.serverAddress is empty, so the clusters' argocd-agents have nowhere to connect. "+
			"Fix: enable the principal in the hub's ArgoCD CR (`gitops-addon render principal --namespace %s` prints the settings), "+
			"and set serverAddress or give its Service type LoadBalancer.", ns, labelPartOf, labelComponent, ns)
	case svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Status.LoadBalancer.Ingress) == 0:
		p.Problem = fmt.Sprintf("The principal's Service %s/%s is of type %s with no load balancer address, and "+
			"spec.gitopsAddon.argoCDAgent.serverAddress is empty, so the clusters' argocd-agents cannot reach it. "+
			"Fix: set serverAddress (and serverPort) to the address the clusters reach the principal at (an Ingress, a gateway), "+
			"set spec.argoCDAgent.principal.server.service.type: LoadBalancer in the hub's ArgoCD CR, "+
			"or, on OpenShift, enable its Route (spec.argoCDAgent.principal.server.route.enabled), which is discovered once admitted.", ns, svc.Name, svc.Spec.Type)
	default:
		ingress := svc.Status.LoadBalancer.Ingress[0]
		p.Address = cmp.Or(ingress.Hostname, ingress.IP)
		p.Port = servicePort(svc)
	}
	return p, nil
}

// principalServices are the principal's Services in ns (it has several: the one argocd-agents
// connect to, metrics, health, redis proxy, resource proxy).
func (f Finder) principalServices(ctx context.Context, ns string) ([]corev1.Service, error) {
	services := &corev1.ServiceList{}
	if err := f.Reader.List(ctx, services, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: PrincipalServiceSelector()}); err != nil {
		return nil, fmt.Errorf("looking for the Argo CD Agent principal's Service in %s: %w", ns, err)
	}
	return services.Items, nil
}

// principalService is the Service argocd-agents connect to: the one named as its
// app.kubernetes.io/name label; nil when there is none.
func principalService(services []corev1.Service) *corev1.Service {
	for i := range services {
		if s := &services[i]; s.Labels[labelName] == s.Name {
			return s
		}
	}
	return nil
}

// resourceProxyOf is the Service with the resource proxy's port, else argocd-agent's own
// install's name.
func resourceProxyOf(services []corev1.Service) ResourceProxy {
	for _, s := range services {
		for _, port := range s.Spec.Ports {
			if port.Name == resourceProxyPort {
				return ResourceProxy{Service: s.Name, Port: fmt.Sprint(port.Port)}
			}
		}
	}
	return defaultResourceProxy
}

// principalRouteHost is the host of the principal's Route in ns once a router admitted
// it ("" when there is none, or the hub serves no Routes); argocd-agents reach it on 443, the
// Route passing TLS through to the principal.
func (f Finder) principalRouteHost(ctx context.Context, ns string) (string, error) {
	if !f.Routes {
		return "", nil
	}
	routes := &routev1.RouteList{}
	if err := f.Reader.List(ctx, routes, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: PrincipalServiceSelector()}); err != nil {
		return "", fmt.Errorf("looking for the Argo CD Agent principal's Route in %s: %w", ns, err)
	}
	for i := range routes.Items {
		route := &routes.Items[i]
		if route.Labels[labelName] != route.Name {
			continue
		}
		for _, ingress := range route.Status.Ingress {
			for _, c := range ingress.Conditions {
				if c.Type == routev1.RouteAdmitted && c.Status == corev1.ConditionTrue && ingress.Host != "" {
					return ingress.Host, nil
				}
			}
		}
	}
	return "", nil
}

// servicePort is the port of the principal's Service (the operator's has one, 443).
func servicePort(svc *corev1.Service) string {
	if len(svc.Spec.Ports) == 0 {
		return "443"
	}
	return strconv.Itoa(int(svc.Spec.Ports[0].Port))
}

// certificateNames are the names the principal's certificate holds for one GitOpsCluster
// whose Argo CD namespace is ns: the principal's Service there (the operator's, when
// found) and the address argocd-agents reach it at.
func (p Principal) certificateNames(ns string) []string {
	names := []string{"argocd-agent-principal", "argocd-agent-principal." + ns + ".svc"}
	if p.Service != "" && p.Service != names[0] {
		names = append(names, p.Service, p.Service+"."+ns+".svc")
	}
	if p.Address != "" {
		names = append(names, p.Address)
	}
	return names
}

// HostPort is "address:port" (IPv6 in brackets), "" when the address is unknown.
func (p Principal) HostPort() string {
	if p.Address == "" {
		return ""
	}
	return net.JoinHostPort(p.Address, p.Port)
}

// Sharing are the Argo CD Agent mode GitOpsClusters of an Argo CD namespace, which one principal
// serves; read-only, straight from the cache (not copied). Those being deleted are left
// out: their clusters' argocd-agents are going.
func Sharing(ctx context.Context, reader client.Reader, argoNamespace string) ([]*appsv1beta1.GitOpsCluster, error) {
	list := &appsv1beta1.GitOpsClusterList{}
	if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the GitOpsClusters sharing the principal of %s: %w", argoNamespace, err)
	}
	var out []*appsv1beta1.GitOpsCluster
	for i := range list.Items {
		if gc := &list.Items[i]; gc.ArgoCDAgentEnabled() && gc.ArgoNamespace() == argoNamespace && gc.DeletionTimestamp.IsZero() {
			out = append(out, gc)
		}
	}
	return out, nil
}
