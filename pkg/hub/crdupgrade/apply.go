package crdupgrade

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

// establishTimeout bounds the wait for a CRD the manager created to be served.
const establishTimeout = time.Minute

// Outcome is what Ensure did with one CRD.
type Outcome struct {
	Name string
	// Applied is true when the embedded schema was applied (created or upgraded).
	Applied bool
	// Problem explains a CRD that was refused or left alone; empty when applied.
	Problem string
}

// Ensure applies the embedded CRDs, under the package's rules, and waits until the ones it
// created are established. Refusals and foreign CRDs are logged and reported by a Warning
// Event on the CRD (recorder may be nil); they are not errors: the manager runs on the CRD
// that is there. An error means a CRD could not be read or applied (RBAC, apiserver).
func Ensure(ctx context.Context, c client.Client, recorder events.EventRecorder) ([]Outcome, error) {
	crds, err := Load()
	if err != nil {
		return nil, err
	}
	log := ctrl.LoggerFrom(ctx).WithName("crdupgrade")
	var outcomes []Outcome
	var created []string
	for _, desired := range crds {
		current, err := get(ctx, c, desired.Name)
		if err != nil {
			return outcomes, err
		}
		v := decide(desired, current)
		switch v.action {
		case apply:
			if err := c.Patch(ctx, applyObject(desired), client.RawPatch(types.ApplyPatchType, desired.Apply),
				client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
				return outcomes, fmt.Errorf("applying CRD %s (schema revision %d): %w; check that the manager's ClusterRole allows create, and update/patch on "+
					"it", desired.Name, SchemaRevision, err)
			}
			log.Info("CRD applied", "crd", desired.Name, "schemaRevision", SchemaRevision, "was", v.why)
			if current == nil {
				created = append(created, desired.Name)
			}
			outcomes = append(outcomes, Outcome{Name: desired.Name, Applied: true})
		default:
			log.Error(errors.New(v.why), "CRD not applied", "crd", desired.Name)
			if recorder != nil {
				recorder.Eventf(current, nil, corev1.EventTypeWarning, reason(v.action), "ApplyCRD", "%s", v.why)
			}
			outcomes = append(outcomes, Outcome{Name: desired.Name, Problem: v.why})
		}
	}
	for _, name := range created {
		if err := waitEstablished(ctx, c, name); err != nil {
			return outcomes, err
		}
	}
	return outcomes, nil
}

func reason(a action) string {
	if a == refuse {
		return appsv1beta1.ReasonCRDUpgradeRefused
	}
	return appsv1beta1.ReasonCRDOwnedByOthers
}

func get(ctx context.Context, c client.Client, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := c.Get(ctx, types.NamespacedName{Name: name}, crd)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading CRD %s: %w", name, err)
	}
	return crd, nil
}

// applyObject is the object a RawPatch of desired.Apply is sent for (its name only).
func applyObject(desired CRD) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = desired.Name
	return crd
}

func waitEstablished(ctx context.Context, c client.Client, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, establishTimeout, true, func(ctx context.Context) (bool, error) {
		crd, err := get(ctx, c, name)
		if err != nil || crd == nil {
			return false, err
		}
		return apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be established: %w", name, err)
	}
	return nil
}
