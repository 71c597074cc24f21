package routeguard

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// GuardName names the ValidatingAdmissionPolicy and its binding.
const GuardName = "gitops-addon-deny-routes-crd"

// GuardMessage is what a user creating the duplicate CRD is told.
const GuardMessage = "routes.route.openshift.io must not be created as a CustomResourceDefinition on this cluster: " +
	"route.openshift.io/v1 is already served natively by openshift-apiserver through an aggregated APIService, and a " +
	"duplicate CRD breaks the kube-apiserver's /openapi/v2 (HTTP 503 or a frozen schema), which makes every Argo CD sync " +
	"and kubectl apply fail. Routes work without it. If a tool insists on installing this CRD, configure it not to " +
	"(guard installed by gitops-addon)."

func guardLabels() map[string]string {
	return map[string]string{contract.LabelManagedBy: contract.ManagedByValue}
}

func desiredPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: GuardName, Labels: guardLabels()},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					ResourceNames: []string{contract.RoutesCRDName},
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{"apiextensions.k8s.io"}, APIVersions: []string{"*"},
							Resources: []string{"customresourcedefinitions"}, Scope: ptr.To(admissionregistrationv1.ClusterScope),
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("object.metadata.name != '%s'", contract.RoutesCRDName),
				Message:    GuardMessage,
				Reason:     ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
}

func desiredBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: GuardName, Labels: guardLabels()},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        GuardName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}

// guardState is the outcome of ensuring or removing the guard.
type guardState int

const (
	guardInstalled guardState = iota
	guardAbsent
	guardUnavailable // the apiserver does not serve ValidatingAdmissionPolicy v1
)

// ensureGuard creates or repairs the policy and its binding; it writes nothing when both
// are as desired.
func ensureGuard(ctx context.Context, c client.Client) (guardState, error) {
	for _, pair := range []struct{ desired, current client.Object }{
		{desiredPolicy(), &admissionregistrationv1.ValidatingAdmissionPolicy{}},
		{desiredBinding(), &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}},
	} {
		if err := ensureObject(ctx, c, pair.desired, pair.current); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) && isMissingAPI(err) {
				return guardUnavailable, nil
			}
			return guardAbsent, err
		}
	}
	return guardInstalled, nil
}

func isMissingAPI(err error) bool {
	status, ok := err.(apierrors.APIStatus)
	return ok && status.Status().Details != nil && status.Status().Details.Name == ""
}

func ensureObject(ctx context.Context, c client.Client, desired, current client.Object) error {
	err := c.Get(ctx, client.ObjectKeyFromObject(desired), current)
	if apierrors.IsNotFound(err) {
		return c.Create(ctx, desired)
	}
	if err != nil {
		return err
	}
	if specEqual(current, desired) {
		return nil
	}
	copySpec(current, desired)
	return c.Update(ctx, current)
}

func specEqual(current, desired client.Object) bool {
	switch cur := current.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		want := desired.(*admissionregistrationv1.ValidatingAdmissionPolicy)
		return equality.Semantic.DeepDerivative(want.Spec, cur.Spec)
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		want := desired.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		return equality.Semantic.DeepDerivative(want.Spec, cur.Spec)
	}
	return false
}

func copySpec(current, desired client.Object) {
	switch cur := current.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		cur.Spec = desired.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		cur.Spec = desired.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Spec
	}
}

// removeGuard deletes our policy and binding when the cluster is not (or no longer)
// native: there the Routes CRD is legitimate. Objects without our label are never touched.
func removeGuard(ctx context.Context, c client.Client) error {
	for _, obj := range []client.Object{&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, &admissionregistrationv1.ValidatingAdmissionPolicy{}} {
		err := c.Get(ctx, client.ObjectKey{Name: GuardName}, obj)
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", GuardName, err)
		}
		if obj.GetLabels()[contract.LabelManagedBy] != contract.ManagedByValue {
			continue
		}
		uid := obj.GetUID()
		if err := c.Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s: %w", GuardName, err)
		}
	}
	return nil
}
