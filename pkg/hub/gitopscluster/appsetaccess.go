package gitopscluster

import (
	"sigs.k8s.io/controller-runtime/pkg/event"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

// ApplicationSetAccess is what the GitOpsCluster controller reads of the owner of the
// shared ApplicationSet objects (pkg/hub/appsetaccess): the placement ConfigMap and RBAC
// several GitOpsClusters share, which that controller alone writes, per namespace.
type ApplicationSetAccess interface {
	// Problems says what is wrong with the shared objects gc needs: sentences with the
	// fix, and the reads or writes that failed (retried by their owner).
	Problems(gc *appsv1beta1.GitOpsCluster) (problems []string, failed error)
	// Changed delivers every GitOpsCluster whose Problems changed.
	Changed() <-chan event.GenericEvent
}

// reportApplicationSetAccess adds to a registration what is wrong with the shared
// ApplicationSet objects gc needs, so that ClustersRegistered says it with the fix.
func (r *Reconciler) reportApplicationSetAccess(gc *appsv1beta1.GitOpsCluster, res *registrationResult) {
	if r.ApplicationSetAccess == nil {
		return
	}
	problems, failed := r.ApplicationSetAccess.Problems(gc)
	res.problems = append(res.problems, problems...)
	if failed != nil {
		res.problems = append(res.problems, failureMessage(failed))
		res.accessFailed = true
	}
}
