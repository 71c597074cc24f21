package gitopscluster

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

// A GitOpsCluster's stored status is not always the status the manager wrote. On a hub
// whose GitOpsCluster CRD is another installer's (Red Hat ACM's, which gitops-addon leaves
// alone: pkg/crdowner), the apiserver prunes the fields that CRD's schema lacks: ACM
// 2.15 and later serve no status.observedGeneration and no cluster counts, 2.9 to 2.14 no
// status.conditions either. Compared with the stored status, the status the manager
// computes then always differs, so every reconcile would write it again (and, without
// stored conditions, record its Warning Events again). So the manager compares with the
// status it last wrote, for as long as the stored status is still what that write left.

// lastWrite is the last status write of one GitOpsCluster.
type lastWrite struct {
	uid types.UID
	// over is the resourceVersion the write was made over: a cached read still at it has
	// not seen the write yet.
	over string
	// sent is the status written; stored is what the apiserver kept of it, read back
	// after the write (nil when someone else wrote in between).
	sent   appsv1beta1.GitOpsClusterStatus
	stored *appsv1beta1.GitOpsClusterStatus
}

// lastStatus is the status to compare a newly computed one with (and to carry the
// conditions' lastTransitionTime and the Events' transitions from): the status the
// manager last wrote, while the stored status is what that write left (changes of the
// spec or metadata since do not matter) or the read is older than the write; otherwise
// the stored status, so that a change by someone else is seen and set right.
func (r *Reconciler) lastStatus(gc *appsv1beta1.GitOpsCluster) appsv1beta1.GitOpsClusterStatus {
	if w, ok := r.lastWriteOf(gc); ok {
		if gc.ResourceVersion == w.over || (w.stored != nil && equality.Semantic.DeepEqual(gc.Status, *w.stored)) {
			return *w.sent.DeepCopy()
		}
	}
	return *gc.Status.DeepCopy()
}

func (r *Reconciler) lastWriteOf(gc *appsv1beta1.GitOpsCluster) (*lastWrite, bool) {
	v, ok := r.lastWrites.Load(client.ObjectKeyFromObject(gc))
	if !ok {
		return nil, false
	}
	w := v.(*lastWrite)
	return w, w.uid == gc.UID
}

// forgetLastWrite drops what is remembered of a GitOpsCluster that is gone.
func (r *Reconciler) forgetLastWrite(key types.NamespacedName) { r.lastWrites.Delete(key) }

// updateStatus writes status as gc's status and remembers the write and what the
// apiserver kept of it: the write's response cannot say (decoded into gc, it leaves the
// fields the apiserver pruned as they were sent), so the object is read back, uncached.
// A failed read only costs one more write later.
func (r *Reconciler) updateStatus(ctx context.Context, gc *appsv1beta1.GitOpsCluster, status appsv1beta1.GitOpsClusterStatus) error {
	key := client.ObjectKeyFromObject(gc)
	w := &lastWrite{uid: gc.UID, over: gc.ResourceVersion, sent: *status.DeepCopy()}
	gc.Status = status
	if err := r.Client.Status().Update(ctx, gc); err != nil {
		if apierrors.IsConflict(err) {
			return err // requeued with backoff; the next read has the new version
		}
		return fmt.Errorf("updating status of %s/%s: %w", gc.Namespace, gc.Name, err)
	}
	if r.APIReader != nil {
		stored := &appsv1beta1.GitOpsCluster{}
		if err := r.APIReader.Get(ctx, key, stored); err == nil && stored.UID == gc.UID && stored.ResourceVersion == gc.ResourceVersion {
			w.stored = &stored.Status
		}
	}
	r.lastWrites.Store(key, w)
	return nil
}
