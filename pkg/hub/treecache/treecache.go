// Package treecache writes each pulled Application's resource tree and diff, as its spoke
// reports them (pkg/contract/apptree), where the hub's argocd-server reads them: the
// hub Argo CD's redis cache, in Argo CD's own key and encoding (pkg/argocdcache), with
// Argo CD's announcement so that an open UI page redraws at once. The hub's application
// controller skips pulled Applications, so nothing else writes these keys.
//
// It writes only what changed: a tree is written when its value differs from the one this
// manager last wrote, or when redis lost it (redis restarted; argocd-server then asks for a
// refresh, which reconciles the Application). Nothing here can change a spoke: the only
// credential is the hub redis's password.
package treecache

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gitops-addon/gitops-addon/pkg/argocdcache"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
)

// Store is the part of the hub Argo CD's redis the writer uses.
type Store interface {
	Set(ctx context.Context, key string, value []byte) error
	Exists(ctx context.Context, key string) (bool, error)
	Delete(ctx context.Context, keys ...string) error
	Publish(ctx context.Context, channel string) error
}

// Writer writes trees into one hub Argo CD's cache.
type Writer struct {
	Store Store
	// ArgoNamespace is the hub Argo CD's own namespace: Applications elsewhere are cached
	// as "namespace_name" (argocdcache.InstanceName).
	ArgoNamespace string

	mu      sync.Mutex
	written map[types.NamespacedName]written
}

// written is what the writer last wrote of an Application: the feedback value's digest,
// and whether a diff went with it (which a tree without one must remove).
type written struct {
	sum  [sha256.Size]byte
	diff bool
}

// Write puts an Application's shipped tree (the feedback value) in the cache, if it changed
// or the cache lost it.
func (w *Writer) Write(ctx context.Context, app types.NamespacedName, shipped apptree.Shipped, value string) error {
	key := argocdcache.TreeKey(w.instance(app))
	sum := sha256.Sum256([]byte(value))
	last, known := w.last(app)
	if known && last.sum == sum {
		there, err := w.Store.Exists(ctx, key)
		if err != nil || there {
			return err
		}
	}
	// The diff first: argocd-server reads it when the announcement below redraws the page.
	if err := w.writeDiff(ctx, app, shipped, !known || last.diff); err != nil {
		return err
	}
	raw, err := argocdcache.Encode(shipped.Tree)
	if err != nil {
		return err
	}
	if err := w.Store.Set(ctx, key, raw); err != nil {
		return err
	}
	if err := w.Store.Publish(ctx, argocdcache.TreeChannel(w.instance(app))); err != nil {
		return err
	}
	w.remember(app, written{sum: sum, diff: shipped.HasDiff()})
	return nil
}

// Forget removes an Application's tree: the Application is gone or no longer pulled.
func (w *Writer) Forget(ctx context.Context, app types.NamespacedName) error {
	w.mu.Lock()
	_, known := w.written[app]
	delete(w.written, app)
	w.mu.Unlock()
	if !known {
		// Not written by this manager: another writer's (the hub's application controller
		// owns it once the Application is not pulled). After a restart the manager
		// writes each pulled Application's tree once, so it knows its own again.
		return nil
	}
	if err := w.Store.Delete(ctx, argocdcache.TreeKey(w.instance(app)), argocdcache.ManagedResourcesKey(w.instance(app))); err != nil {
		return fmt.Errorf("removing the resource tree of Application %s: %w", app, err)
	}
	return nil
}

// writeDiff puts the diff shipped with a tree where argocd-server's managed-resources call
// reads it, or removes the one written before (mayHaveOne: this writer wrote one, or does
// not know since its start) when none came with this tree (left out over the bound, or not
// kept on the spoke): a stale diff would be shown as the current one.
func (w *Writer) writeDiff(ctx context.Context, app types.NamespacedName, shipped apptree.Shipped, mayHaveOne bool) error {
	key := argocdcache.ManagedResourcesKey(w.instance(app))
	if !shipped.HasDiff() {
		if !mayHaveOne {
			return nil
		}
		if err := w.Store.Delete(ctx, key); err != nil {
			return fmt.Errorf("removing the diff of Application %s: %w", app, err)
		}
		return nil
	}
	raw, err := argocdcache.Encode(shipped.Diff)
	if err != nil {
		return err
	}
	return w.Store.Set(ctx, key, raw)
}

func (w *Writer) instance(app types.NamespacedName) string {
	return argocdcache.InstanceName(app.Namespace, app.Name, w.ArgoNamespace)
}

func (w *Writer) last(app types.NamespacedName) (written, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.written[app]
	return last, ok
}

func (w *Writer) remember(app types.NamespacedName, last written) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.written == nil {
		w.written = map[types.NamespacedName]written{}
	}
	w.written[app] = last
}
