package appsetaccess

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/event"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

// holder says whose object holds a shared object's name.
type holder int

const (
	// ours: created (or adopted) by gitops-addon, or not there yet.
	ours holder = iota
	// foreignAsNeeded: someone else's, and it says what ApplicationSets need.
	foreignAsNeeded
	// foreignDiffers: someone else's, and different: left unchanged and reported.
	foreignDiffers
)

// objectState is what the last reconcile of its namespace found about one shared object.
type objectState struct {
	// users are the GitOpsClusters that needed it then (namespace, name and UID only):
	// those a later Event about it (its removal) is about.
	users   []*appsv1beta1.GitOpsCluster
	holder  holder
	failure error // the last read or write of it that failed, conflicts aside
}

// problem identifies what is reported about the object, "" when nothing is: a change
// of it wakes the GitOpsClusters that need the object.
func (s objectState) problem() string {
	switch {
	case s.failure != nil:
		return s.failure.Error()
	case s.holder == foreignDiffers:
		return "differs"
	}
	return ""
}

// changedBuffer holds the wake-ups the GitOpsCluster controller has not taken yet; a
// reconcile waits when it is full, which only happens while that controller starts.
const changedBuffer = 64

// Problems says what is wrong with the shared objects gc needs, as the last reconcile of
// their namespaces found: problems are sentences with the fix (an object someone else
// created that differs from what ApplicationSets need), failed the reads and writes that
// failed (retried with backoff). It reads memory only, so the GitOpsCluster controller
// may call it on every reconcile; Changed tells it when the answer changes.
func (r *Reconciler) Problems(gc *appsv1beta1.GitOpsCluster) (problems []string, failed error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var failures []error
	for _, o := range needs(gc) {
		s := r.states[o.key.namespace][o.key]
		if s.holder == foreignDiffers {
			problems = append(problems, fmt.Sprintf("%s exists, was not created by gitops-addon and differs from what ApplicationSets need; it is "+
				"left unchanged. Fix: annotate GitOpsCluster %s/%s with %s=true to adopt it, or delete it and gitops-addon recreates it.",
				o.key, gc.Namespace, gc.Name, appsv1beta1.AnnotationAdopt))
		}
		if s.failure != nil {
			failures = append(failures, s.failure)
		}
	}
	return problems, errors.Join(failures...)
}

// Changed delivers every GitOpsCluster whose Problems changed. The GitOpsCluster
// controller watches it (a channel source), so its status follows this controller's
// findings without polling. Nothing is sent before Changed is first called.
func (r *Reconciler) Changed() <-chan event.GenericEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		r.changed = make(chan event.GenericEvent, changedBuffer)
	}
	return r.changed
}

// previousStates is what the last reconcile of namespace ns found.
func (r *Reconciler) previousStates(ns string) map[objectKey]objectState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.states[ns]
}

// record keeps what this reconcile of namespace ns found, in place of what the last one
// found, and wakes the GitOpsClusters whose problems changed: those that need, or needed,
// an object whose problem appeared, changed or went.
func (r *Reconciler) record(ctx context.Context, ns string, previous, current map[objectKey]objectState) {
	r.mu.Lock()
	if r.states == nil {
		r.states = map[string]map[objectKey]objectState{}
	}
	if len(current) == 0 {
		delete(r.states, ns)
	} else {
		r.states[ns] = current
	}
	changed := r.changed
	r.mu.Unlock()
	if changed == nil {
		return
	}
	for _, gc := range wakeUps(previous, current) {
		select {
		case changed <- event.GenericEvent{Object: gc}:
		case <-ctx.Done():
			return
		}
	}
}

// wakeUps are the GitOpsClusters, each once, that needed or need an object whose problem
// differs between previous and current.
func wakeUps(previous, current map[objectKey]objectState) []*appsv1beta1.GitOpsCluster {
	seen := map[string]bool{}
	var out []*appsv1beta1.GitOpsCluster
	add := func(users []*appsv1beta1.GitOpsCluster) {
		for _, gc := range users {
			if key := gc.Namespace + "/" + gc.Name; !seen[key] {
				seen[key] = true
				out = append(out, gc)
			}
		}
	}
	for _, states := range []map[objectKey]objectState{previous, current} {
		for _, key := range sortedKeys(states) {
			if previous[key].problem() != current[key].problem() {
				add(previous[key].users)
				add(current[key].users)
			}
		}
	}
	return out
}

// stub is what an Event about a GitOpsCluster, or a wake-up of it, needs of it: it may
// be gone by the time either is sent.
func stub(gc *appsv1beta1.GitOpsCluster) *appsv1beta1.GitOpsCluster {
	out := &appsv1beta1.GitOpsCluster{}
	out.Namespace, out.Name, out.UID = gc.Namespace, gc.Name, gc.UID
	return out
}
