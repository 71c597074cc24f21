package liveresources

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// secretVerbs are what the manager's two Secret caches do, in every namespace, by name.
var secretVerbs = []string{"get", "list", "watch"}

// MissingGrants asks the apiserver's authorizer (a SelfSubjectAccessReview each) whether
// the manager may read the Secrets live resources are made of: each token (named as the
// ManagedServiceAccount) and cluster-proxy's CA. The chart grants them with
// liveResources.enabled; without them the caches would never sync and would hold up
// every GitOpsCluster, so the manager runs without live resources and says why. It
// returns one phrase per refusal, e.g. "list Secrets gitops-addon-live-resources".
func MissingGrants(ctx context.Context, c client.Client) ([]string, error) {
	var missing []string
	for _, name := range []string{ServiceAccountName, ProxyCASecretName} {
		for _, verb := range secretVerbs {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: "secrets", Name: name},
			}}
			if err := c.Create(ctx, review); err != nil {
				return nil, fmt.Errorf("asking whether the manager may %s Secrets %s: %w", verb, name, err)
			}
			if !review.Status.Allowed {
				missing = append(missing, verb+" Secrets "+name)
			}
		}
	}
	return missing, nil
}
