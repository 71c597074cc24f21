package existingargocd

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// The keys of the creation record ConfigMap (contract.CreationRecordConfigMap).
const (
	// recordArgoCDUID is the UID of the ArgoCD instance gitops-addon created.
	recordArgoCDUID = "argocd-uid"
	// recordArgoCD is that instance's namespace/name, for people reading the record.
	recordArgoCD = "argocd"
	// recordVerifiedAbsentAt is when the agent first found no Argo CD and no GitOps
	// operator but its own on the cluster (RFC 3339, seconds): an instance created before
	// it is not ours.
	recordVerifiedAbsentAt = "verified-absent-at"
	// recordHow says how the instance came to be recorded (created after the cluster was
	// found empty, or adopted from an earlier gitops-addon).
	recordHow = "how"
)

// Record is what gitops-addon knows it created on this cluster.
type Record struct {
	// ArgoCDUID is the UID of the ArgoCD instance gitops-addon created; empty: none.
	ArgoCDUID types.UID
	// VerifiedAbsentAt is when the agent first found no other Argo CD; zero: never.
	VerifiedAbsentAt time.Time
	// How the instance was recorded.
	How string
}

// Ours tells whether the record holds uid.
func (r Record) Ours(uid types.UID) bool { return r.ArgoCDUID != "" && r.ArgoCDUID == uid }

// ReadRecord reads the creation record from the agent's namespace; a missing record is
// the zero Record.
func ReadRecord(ctx context.Context, c client.Reader, namespace string) (Record, error) {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: contract.CreationRecordConfigMap}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return Record{}, nil
	case err != nil:
		return Record{}, fmt.Errorf("reading the creation record %s/%s: %w", namespace, contract.CreationRecordConfigMap, err)
	}
	return recordOf(cm), nil
}

func recordOf(cm *corev1.ConfigMap) Record {
	r := Record{ArgoCDUID: types.UID(cm.Data[recordArgoCDUID]), How: cm.Data[recordHow]}
	if t, err := time.Parse(time.RFC3339, cm.Data[recordVerifiedAbsentAt]); err == nil {
		r.VerifiedAbsentAt = t
	}
	return r
}

// data lays a record out as the ConfigMap's data.
func (r Record) data(instance string) map[string]string {
	d := map[string]string{}
	if !r.VerifiedAbsentAt.IsZero() {
		d[recordVerifiedAbsentAt] = r.VerifiedAbsentAt.UTC().Format(time.RFC3339)
	}
	if r.ArgoCDUID != "" {
		d[recordArgoCDUID] = string(r.ArgoCDUID)
		d[recordArgoCD] = instance
		d[recordHow] = r.How
	}
	return d
}

// writeRecord creates or updates the record; an update carries the resourceVersion read,
// so two agents (a rollout) never overwrite each other's record unseen.
func writeRecord(ctx context.Context, c client.Client, namespace string, r Record, instance string) error {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: contract.CreationRecordConfigMap}, cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name: contract.CreationRecordConfigMap, Namespace: namespace,
				Labels: map[string]string{contract.LabelManagedBy: contract.ManagedByValue},
			},
			Data: r.data(instance),
		}
		if err := c.Create(ctx, cm); err != nil {
			return fmt.Errorf("creating the creation record %s/%s: %w", namespace, contract.CreationRecordConfigMap, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading the creation record %s/%s: %w", namespace, contract.CreationRecordConfigMap, err)
	}
	cm.Data = r.data(instance)
	if err := c.Update(ctx, cm); err != nil {
		return fmt.Errorf("updating the creation record %s/%s: %w", namespace, contract.CreationRecordConfigMap, err)
	}
	return nil
}
