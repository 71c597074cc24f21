package ownership

import (
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// recentCreateTTL is how long a create is trusted while the cache has not shown it yet.
// The cache normally catches up within milliseconds; under load (1,000 clusters joining
// on 2 cores) it lagged by seconds, and every reconcile meanwhile sent a create that the
// apiserver refused as AlreadyExists: 2,623 creates for 1,000 ManagedClusterAddOns.
const recentCreateTTL = 30 * time.Second

// recentCreates remembers the objects this controller created that its cache may not
// have seen yet, so that a reconcile running before the cache catches up does not create
// them again. An entry is dropped once the cache has the object, or after
// recentCreateTTL, so an object deleted meanwhile is created again on a later reconcile.
type recentCreates struct {
	mu sync.Mutex
	at map[string]time.Time
	// now is time.Now; tests replace it.
	now func() time.Time
}

func recentKey(kind string, key client.ObjectKey) string { return kind + "/" + key.String() }

func (r *recentCreates) add(kind string, key client.ObjectKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at = map[string]time.Time{}
	}
	r.at[recentKey(kind, key)] = r.clock()
}

// created says whether the object was created within recentCreateTTL.
func (r *recentCreates) created(kind string, key client.ObjectKey) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.at[recentKey(kind, key)]
	if ok && r.clock().Sub(at) > recentCreateTTL {
		delete(r.at, recentKey(kind, key))
		return false
	}
	return ok
}

// seen drops an object the cache now has.
func (r *recentCreates) seen(kind string, key client.ObjectKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.at, recentKey(kind, key))
}

func (r *recentCreates) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// foreignObjects remembers the names we want that someone else's object holds. Our cache
// is filtered on our label and cannot see them; without this every reconcile would send
// a create the apiserver refuses and then read the object uncached.
type foreignObjects struct {
	mu  sync.Mutex
	set map[string]bool
}

func (f *foreignObjects) add(kind string, key client.ObjectKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.set == nil {
		f.set = map[string]bool{}
	}
	f.set[recentKey(kind, key)] = true
}

func (f *foreignObjects) known(kind string, key client.ObjectKey) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.set[recentKey(kind, key)]
}

func (f *foreignObjects) forget(kind string, key client.ObjectKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.set, recentKey(kind, key))
}
