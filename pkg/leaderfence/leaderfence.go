// Package leaderfence keeps a replica that can no longer be sure it leads from writing.
//
// Leader election alone does not: a leader frozen past its lease (SIGSTOP, a stalled node,
// a long pause) wakes up with reconciles in flight, and they write before its elector
// notices that another replica took over; two writers then fight over the same objects.
// The fence records when this replica last renewed its Lease (when the renewal was sent:
// the other replicas count the lease from no earlier than that) and refuses every write of
// the clients it guards once that is older than the renew deadline, the point at which the
// elector itself gives up. Reads are never refused. The clock is Go's monotonic one, which
// keeps running while the process is stopped.
//
// What remains is a write that passed the check in the instant before the process froze:
// the apiserver has no fencing token to refuse it with.
package leaderfence

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Fence tells whether this replica still certainly leads.
type Fence struct {
	identity string
	validFor time.Duration
	now      func() time.Time

	mu sync.Mutex
	// renewedAt is when the last successful renewal by this replica was sent; zero when it
	// does not lead (never acquired, or released).
	renewedAt time.Time
}

// New is the fence of the replica named identity (its Lease holder identity); a renewal
// holds for validFor, the elector's renew deadline.
func New(identity string, validFor time.Duration) *Fence {
	return &Fence{identity: identity, validFor: validFor, now: time.Now}
}

// Lock wraps the elector's Lease lock: each successful acquisition or renewal by this
// replica extends the fence, a release closes it.
func (f *Fence) Lock(l resourcelock.Interface) resourcelock.Interface {
	return &fencedLock{Interface: l, fence: f}
}

// Guard returns a copy of cfg whose clients may write only while the fence holds.
func (f *Fence) Guard(cfg *rest.Config) *rest.Config {
	guarded := rest.CopyConfig(cfg)
	guarded.Wrap(func(next http.RoundTripper) http.RoundTripper { return &guard{next: next, fence: f} })
	return guarded
}

// Holds says whether this replica renewed its Lease within validFor, and how long ago it
// last did (zero when it never did).
func (f *Fence) Holds() (bool, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.renewedAt.IsZero() {
		return false, 0
	}
	age := f.now().Sub(f.renewedAt)
	return age < f.validFor, age
}

// record runs a write of the Lease record r and learns from its outcome.
func (f *Fence) record(r resourcelock.LeaderElectionRecord, write func() error) error {
	sent := f.now()
	err := write()
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err != nil:
		// Nothing learned: the fence runs out on its own.
	case r.HolderIdentity == f.identity:
		f.renewedAt = sent
	default:
		f.renewedAt = time.Time{} // released
	}
	return err
}

type fencedLock struct {
	resourcelock.Interface
	fence *Fence
}

func (l *fencedLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.fence.record(r, func() error { return l.Interface.Create(ctx, r) })
}

func (l *fencedLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.fence.record(r, func() error { return l.Interface.Update(ctx, r) })
}

// NotLeadingError is the error of a write refused by the fence.
type NotLeadingError struct {
	Method, Path string
	// Since is how long ago this replica last renewed its Lease; zero: it never led.
	Since time.Duration
}

func (e *NotLeadingError) Error() string {
	if e.Since == 0 {
		return fmt.Sprintf("not sent: %s %s: this replica does not lead (it holds no leader Lease)", e.Method, e.Path)
	}
	return fmt.Sprintf("not sent: %s %s: this replica last renewed its leader Lease %v ago and may no longer lead",
		e.Method, e.Path, e.Since.Round(time.Millisecond))
}

type guard struct {
	next  http.RoundTripper
	fence *Fence
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if writes(req.Method) && !review(req.URL.Path) {
		if ok, since := g.fence.Holds(); !ok {
			return nil, &NotLeadingError{Method: req.Method, Path: req.URL.Path, Since: since}
		}
	}
	return g.next.RoundTrip(req)
}

// review says whether the request asks the apiserver a question by creating a review
// (TokenReview, SubjectAccessReview and the like), which stores nothing: a replica that
// does not lead may still authenticate and authorize its own callers.
func review(path string) bool {
	return strings.HasPrefix(path, "/apis/authentication.k8s.io/") || strings.HasPrefix(path, "/apis/authorization.k8s.io/")
}

// writes says whether a request of this method changes something on the apiserver.
func writes(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}
