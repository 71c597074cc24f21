package integration

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// The hub scenarios share one kube-apiserver, etcd and manager: starting a hub takes
// seconds, and a scenario needs nothing of another's but the running hub. The first
// scenario that asks for it starts it; it is stopped after the package's tests
// (TestMain). Each scenario makes its own namespaces, ManagedClusters, Placements and
// GitOpsClusters, so that it runs alone with -run, and in any order. A scenario that
// restarts the apiserver, or that checks that the manager writes nothing at all, starts a
// hub of its own (startHub) instead.
var shared packageShared[*hub]

// sharedHub returns the package's shared hub, started on the first call, with its helpers
// failing t.
func sharedHub(t *testing.T) *hub {
	t.Helper()
	return shared.get(t, "shared hub", func(tb *packageTB) *hub { return newHub(tb, t) }).with(t)
}

// packageShared is something the package's tests share (a hub), started by the first
// test that asks for it, its cleanups run after the package's tests (packageTB).
type packageShared[T any] struct {
	once    sync.Once
	value   T
	started bool
}

// get starts the shared value on the first call and returns it; a test after a failed
// start fails at once instead of starting it again.
func (s *packageShared[T]) get(t *testing.T, what string, start func(tb *packageTB) T) T {
	t.Helper()
	s.once.Do(func() {
		tb := &packageTB{TB: t}
		s.value = start(tb)
		tb.started, s.started = true, true
	})
	if !s.started {
		t.Fatalf("the %s failed to start in the test that first asked for it", what)
	}
	return s.value
}

// with is h with its helpers failing t.
func (h *hub) with(t *testing.T) *hub {
	c := *h
	c.t = t
	return &c
}

var (
	packageMu       sync.Mutex
	packageCleanups []func()
	packageFailed   bool
)

// runPackageCleanups runs what packageTB was asked to clean up, last first, and tells
// whether any of it failed.
func runPackageCleanups() (failed bool) {
	packageMu.Lock()
	cleanups := packageCleanups
	packageCleanups = nil
	packageMu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	packageMu.Lock()
	defer packageMu.Unlock()
	return packageFailed
}

// packageTB is the testing.TB of what lives for the whole package run (the shared hub).
// While it starts, failures are those of the test that started it; its cleanups wait for
// the end of the package's tests, and a failure in them, reported on stderr, fails the run.
type packageTB struct {
	testing.TB
	started bool
}

func (p *packageTB) Cleanup(f func()) {
	packageMu.Lock()
	defer packageMu.Unlock()
	packageCleanups = append(packageCleanups, f)
}

func (p *packageTB) TempDir() string {
	dir, err := os.MkdirTemp("", "gitops-addon-shared-hub-")
	if err != nil {
		p.Fatalf("creating a temporary directory: %v", err)
	}
	p.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func (p *packageTB) Helper() {
	if !p.started {
		p.TB.Helper()
	}
}

func (p *packageTB) Logf(format string, args ...any) {
	if !p.started {
		p.TB.Logf(format, args...)
		return
	}
	fmt.Fprintf(os.Stderr, "shared hub: "+format+"\n", args...)
}

func (p *packageTB) Errorf(format string, args ...any) {
	if !p.started {
		p.TB.Errorf(format, args...)
		return
	}
	fmt.Fprintf(os.Stderr, "shared hub FAILED: "+format+"\n", args...)
	packageMu.Lock()
	packageFailed = true
	packageMu.Unlock()
}

func (p *packageTB) Error(args ...any) { p.Errorf("%s", fmt.Sprint(args...)) }

func (p *packageTB) Fatalf(format string, args ...any) {
	p.Errorf(format, args...)
	p.FailNow()
}

func (p *packageTB) Fatal(args ...any) { p.Fatalf("%s", fmt.Sprint(args...)) }

// FailNow stops the test that is starting the shared hub; after that, in a cleanup, the
// failure is recorded (Errorf) and the other cleanups still run.
func (p *packageTB) FailNow() {
	if !p.started {
		p.TB.FailNow()
	}
}
