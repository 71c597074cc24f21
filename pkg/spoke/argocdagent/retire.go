package argocdagent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
)

// Retirement runs when the agent starts outside Argo CD Agent mode: it removes what the
// agent kept for argocd-agent while the cluster was in Argo CD Agent mode, the
// ClientTLSSecret it wrote (never a Secret of that name someone else made) and its
// Conditions on the ManagedClusterAddOn. The operator removes argocd-agent itself.
type Retirement struct {
	// Client reads and deletes uncached: the Secret is read once, by name.
	Client        client.Client
	ArgoNamespace string
	Report        *addonstatus.Report
	// RetryInterval is the pause after a failed attempt (the hub may still be rolling
	// out the RBAC); zero means 10 s.
	RetryInterval time.Duration
}

// Conditions are the conditions the agent reports only in Argo CD Agent mode.
var Conditions = []string{contract.ConditionArgoCDAgentCertificate, contract.ConditionArgoCDAgentConnected}

// Start withdraws the conditions and removes the Secret, retrying until it succeeds.
func (r *Retirement) Start(ctx context.Context) error {
	r.Report.Withdraw(Conditions...)
	interval := r.RetryInterval
	if interval == 0 {
		interval = 10 * time.Second
	}
	log := ctrl.Log.WithName("argocd-agent-retirement")
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		removed, err := RemoveClientTLS(ctx, r.Client, r.ArgoNamespace)
		if err != nil {
			log.Error(err, "removing argocd-agent's client certificate (retrying)")
			return false, nil
		}
		if removed {
			log.Info("out of Argo CD Agent mode: removed the client certificate kept for argocd-agent", "secret", r.ArgoNamespace+"/"+ClientTLSSecret)
		}
		return true, nil
	})
	if ctx.Err() != nil {
		return nil // the agent is stopping; the next start tries again
	}
	return err
}

// NeedLeaderElection: one replica cleans up.
func (r *Retirement) NeedLeaderElection() bool { return true }

// RemoveClientTLS deletes ClientTLSSecret in namespace when gitops-addon wrote it (a
// Secret of that name without gitops-addon's label is the user's and stays), and says
// whether it did.
func RemoveClientTLS(ctx context.Context, c client.Client, namespace string) (bool, error) {
	secret := &corev1.Secret{}
	err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ClientTLSSecret}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading Secret %s/%s: %w", namespace, ClientTLSSecret, err)
	case secret.Labels[contract.LabelManagedBy] != contract.ManagedByValue:
		return false, nil
	}
	// The UID precondition: a Secret someone recreated meanwhile is not ours to delete.
	err = c.Delete(ctx, secret, client.Preconditions{UID: &secret.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("deleting Secret %s/%s: %w", namespace, ClientTLSSecret, err)
	}
	return err == nil, nil
}
