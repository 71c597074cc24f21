// Package addonstatus carries what the spoke agent's features find out to the hub: each
// feature sets conditions on a shared Report, and the Publisher writes them onto the
// agent's own ManagedClusterAddOn whenever they change.
package addonstatus

import (
	"cmp"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Report is the agent's current view, as conditions. It is safe for concurrent use;
// Changed is signalled when a condition changes.
type Report struct {
	mu         sync.Mutex
	conditions []metav1.Condition
	// withdrawn are condition types this agent reported before and no longer does (a
	// feature turned off): the Publisher removes them from the ManagedClusterAddOn.
	withdrawn []string
	changed   chan struct{}
}

// NewReport returns an empty report.
func NewReport() *Report {
	return &Report{changed: make(chan struct{}, 1)}
}

// Changed is signalled (coalesced) whenever a condition changes.
func (r *Report) Changed() <-chan struct{} { return r.changed }

// Conditions returns the current conditions ordered by type.
func (r *Report) Conditions() []metav1.Condition {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.conditions)
	slices.SortFunc(out, func(a, b metav1.Condition) int { return cmp.Compare(a.Type, b.Type) })
	return out
}

// Condition returns one condition.
func (r *Report) Condition(conditionType string) (metav1.Condition, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := meta.FindStatusCondition(r.conditions, conditionType); c != nil {
		return *c, true
	}
	return metav1.Condition{}, false
}

// Set records c, keeping its last transition time while the status stays the same, and
// signals Changed only when something in it changed.
func (r *Report) Set(c metav1.Condition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.withdrawn = slices.DeleteFunc(r.withdrawn, func(t string) bool { return t == c.Type })
	if !meta.SetStatusCondition(&r.conditions, c) {
		return
	}
	r.signal()
}

// Withdraw says the agent no longer reports these condition types (a feature that is off
// now), so that a condition from when it was on does not stay behind on the hub.
func (r *Report) Withdraw(conditionTypes ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range conditionTypes {
		meta.RemoveStatusCondition(&r.conditions, t)
		if !slices.Contains(r.withdrawn, t) {
			r.withdrawn = append(r.withdrawn, t)
		}
	}
	r.signal()
}

// Withdrawn returns the condition types the agent no longer reports.
func (r *Report) Withdrawn() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.withdrawn)
}

// signal says something changed, coalesced; r.mu is held.
func (r *Report) signal() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}
