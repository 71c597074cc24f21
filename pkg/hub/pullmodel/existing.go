package pullmodel

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// argoCDThere is what a cluster's addon says of the Argo CD that would run a pulled
// Application: reported (whether the agent said anything yet), foreign (an Argo CD
// gitops-addon did not create runs there, with the agent's words) and use (the choice for
// it is UseExisting).
type argoCDThere struct {
	contract.ExistingArgoCDReport
	use bool
}

// argoCDOn reads the cluster's gitops-addon ManagedClusterAddOn; ok is false when it has
// none (hub-only installations, or the addon not enabled: the work agent's failure
// says so then).
func (r *Reconciler) argoCDOn(ctx context.Context, cluster string) (argoCDThere, bool, error) {
	addon := &addonv1beta1.ManagedClusterAddOn{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: contract.AddonName}, addon)
	switch {
	case apierrors.IsNotFound(err):
		return argoCDThere{}, false, nil
	case err != nil:
		return argoCDThere{}, false, fmt.Errorf("reading the gitops-addon ManagedClusterAddOn of %s: %w", cluster, err)
	}
	return argoCDReport(addon), true, nil
}

func argoCDReport(addon *addonv1beta1.ManagedClusterAddOn) argoCDThere {
	return argoCDThere{
		ExistingArgoCDReport: contract.ExistingArgoCDOf(addon.Status.Conditions),
		use:                  contract.SettingsOf(addon.Annotations).ExistingArgoCD == contract.ExistingArgoCDUse,
	}
}

// existingArgoCDProblem says why an Application may not be delivered to cluster because
// of the Argo CD there, nil when it may: a cluster that runs an Argo CD gitops-addon did
// not create gets pulled Applications only with the choice UseExisting; and a first
// delivery (firstDelivery: no ManifestWork on that cluster yet) waits until the agent has
// said which it is, so that an Application never lands in someone else's Argo CD
// unasked. Hub-only installations deliver as before: another installation's agent
// reports nothing of this.
func (r *Reconciler) existingArgoCDProblem(ctx context.Context, cluster string, firstDelivery bool) (*pullnames.Problem, error) {
	if r.HubOnly {
		return nil, nil
	}
	there, ok, err := r.argoCDOn(ctx, cluster)
	switch {
	case err != nil || !ok:
		return nil, err
	case there.Found && !there.use:
		return &pullnames.Problem{Reason: v1alpha1.ReasonExistingArgoCDSkipped, Message: fmt.Sprintf(
			"cluster %s already runs an Argo CD gitops-addon did not create (%s), and the choice for it is %s: nothing is delivered to that "+
				"Argo CD unasked. To run pulled Applications there, set the GitOpsCluster's spec.gitopsAddon.existingArgoCD to %s, or label the "+
				"ManagedCluster %s=%s", cluster, there.Message, contract.ExistingArgoCDSkip, contract.ExistingArgoCDUse,
			contract.ExistingArgoCDPolicy, contract.ExistingArgoCDUse)}, nil
	case !there.Reported && firstDelivery:
		return &pullnames.Problem{Reason: v1alpha1.ReasonWaitingForAgentReport, Message: fmt.Sprintf(
			"waiting for the gitops addon's agent on cluster %s to report whether an Argo CD it did not create runs there (condition %s on "+
				"`kubectl get managedclusteraddon %s -n %s`); the Application is delivered as soon as it has", cluster,
			contract.ConditionExistingArgoCD, contract.AddonName, cluster)}, nil
	}
	return nil, nil
}
