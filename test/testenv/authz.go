package testenv

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Access is what a SubjectAccessReview asks: a resource request, or (Path set) a
// non-resource GET.
type Access struct {
	Resource authorizationv1.ResourceAttributes
	Path     string
}

// Allowed asks the real apiserver's authorizer (SubjectAccessReview) whether user, in
// groups, may do what access describes, and why.
func Allowed(t *testing.T, ctx context.Context, c client.Client, user string, groups []string, access Access) (bool, string) {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups}}
	if access.Path != "" {
		review.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: access.Path, Verb: "get"}
	} else {
		attrs := access.Resource
		review.Spec.ResourceAttributes = &attrs
	}
	require.NoError(t, c.Create(ctx, review))
	return review.Status.Allowed, review.Status.Reason
}

// Impersonating is a client that acts as user in groups (the config's user must be
// allowed to impersonate).
func Impersonating(t *testing.T, config *rest.Config, user string, groups []string) client.Client {
	t.Helper()
	impersonated := rest.CopyConfig(config)
	impersonated.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	c, err := client.New(impersonated, client.Options{})
	require.NoError(t, err)
	return c
}
