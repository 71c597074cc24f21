// Package localcluster tells whether a ManagedCluster is the hub itself. Red Hat ACM
// registers every hub as a ManagedCluster named local-cluster and labelled
// local-cluster=true; a hub registered under another name (imported by hand, or renamed)
// is still known by its cluster ID: the klusterlet reports the ClusterClaim id.k8s.io,
// which is the UID of the cluster's kube-system Namespace, and the hub reads its own.
//
// The hub already runs its own Argo CD (OpenShift GitOps): gitops-addon must never ship a
// second operator there, nor apply its ArgoCD over the hub's.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// Name is the name Red Hat ACM gives the hub's own ManagedCluster.
	Name = "local-cluster"
	// Label, set to LabelValue, marks the hub's own ManagedCluster (Red Hat ACM sets it).
	Label      = "local-cluster"
	LabelValue = "true"
	// ClaimClusterID is the ClusterClaim (KEP-2149's cluster ID) the klusterlet reports in
	// a ManagedCluster's status: the UID of that cluster's kube-system Namespace.
	ClaimClusterID = "id.k8s.io"
	// IDNamespace is the Namespace whose UID is a cluster's ID.
	IDNamespace = "kube-system"
	// InClusterServer is the address by which Argo CD reaches the cluster it runs in; with
	// no credentials in the cluster Secret's config it uses its own ServiceAccount.
	InClusterServer = "https://kubernetes.default.svc"
)

// Hub is what the manager knows of the hub it runs on.
type Hub struct {
	// ID is the hub's cluster ID, the UID of its kube-system Namespace; "" when it could
	// not be read, and then only the name and label rules apply.
	ID string
	// IDProblem says why ID is unknown, with the fix; "" when it is known.
	IDProblem string
}

// Evidence says why a ManagedCluster is the hub: one phrase per rule that matched, in the
// order name, label, cluster ID. It is empty when the cluster is not the hub.
type Evidence []string

// IsHub tells whether any rule matched.
func (e Evidence) IsHub() bool { return len(e) > 0 }

// String joins the phrases for a message, e.g. "its name is local-cluster".
func (e Evidence) String() string { return strings.Join(e, "; ") }

// Of tells whether mc is the hub, and by which rules.
func (h Hub) Of(mc *clusterv1.ManagedCluster) Evidence {
	evidence := h.OfName(mc.Name)
	if mc.Labels[Label] == LabelValue {
		evidence = append(evidence, fmt.Sprintf("it has the label %s=%s", Label, LabelValue))
	}
	if id := ClusterID(mc); h.ID != "" && id == h.ID {
		evidence = append(evidence, fmt.Sprintf("its ClusterClaim %s is %s, the hub's own cluster ID, the UID of its %s Namespace",
			ClaimClusterID, id, IDNamespace))
	}
	return evidence
}

// OfCluster tells whether the cluster named is the hub, reading its ManagedCluster from
// reader (a cache); the name rule alone when it has none.
func (h Hub) OfCluster(ctx context.Context, reader client.Reader, cluster string) (Evidence, error) {
	mc := &clusterv1.ManagedCluster{}
	err := reader.Get(ctx, client.ObjectKey{Name: cluster}, mc)
	switch {
	case apierrors.IsNotFound(err):
		return h.OfName(cluster), nil
	case err != nil:
		return nil, fmt.Errorf("reading ManagedCluster %s: %w", cluster, err)
	}
	return h.Of(mc), nil
}

// OfName applies the name rule alone, for a cluster whose ManagedCluster is not (yet)
// there to read.
func (h Hub) OfName(cluster string) Evidence {
	if cluster == Name {
		return Evidence{"its name is " + Name}
	}
	return nil
}

// ClusterID is a ManagedCluster's ClusterClaim id.k8s.io, "" when it reports none.
func ClusterID(mc *clusterv1.ManagedCluster) string {
	for _, claim := range mc.Status.ClusterClaims {
		if claim.Name == ClaimClusterID {
			return claim.Value
		}
	}
	return ""
}

// ReadBackoff is how long ReadHub keeps trying while the apiserver does not answer: the
// manager starts without the ID rather than not at all.
var ReadBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Steps: 4}

// ReadHub reads the hub's cluster ID once, retrying what may pass (an apiserver that is
// busy or restarting) with backoff. A failure is not fatal: the Hub says why in
// IDProblem, which the GitOpsClusters' status repeats, and the name and label rules
// still apply.
func ReadHub(ctx context.Context, reader client.Reader, backoff wait.Backoff) Hub {
	ns := &corev1.Namespace{}
	err := retry.OnError(backoff, mayPass, func() error {
		return reader.Get(ctx, client.ObjectKey{Name: IDNamespace}, ns)
	})
	if err != nil {
		return Hub{IDProblem: fmt.Sprintf("the hub's cluster ID could not be read (get Namespace %s: %v), so a ManagedCluster that is the hub "+
			"under another name than %s and without the label %s=%s is not recognised. Fix: allow the manager's ServiceAccount to get "+
			"namespaces (the chart's ClusterRole does) and restart the manager, or label the hub's ManagedCluster %s=%s",
			IDNamespace, err, Name, Label, LabelValue, Label, LabelValue)}
	}
	return Hub{ID: string(ns.UID)}
}

// mayPass tells whether an error reading the Namespace may go away by itself.
func mayPass(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) && !apierrors.IsNotFound(err)
}
