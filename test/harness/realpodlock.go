package harness

import (
	"fmt"
	"os"
	"syscall"
)

// realPodLockPath is the lock a real-pod fleet holds while it runs: such a fleet owns
// machine-wide names (FleetIP, its bridge, containerd's namespaces), so there is one at a
// time. Test packages run side by side (make test's -p 2), and a second real-pod fleet
// waits for the first to stop instead of failing. The kernel releases the lock when its
// process ends, a killed test run included.
const realPodLockPath = "/run/gitops-addon-real-pod-fleet.lock"

// lockRealPods waits until no other real-pod fleet runs on this machine and returns the
// held lock; closing it lets the next one start.
func lockRealPods(logf func(string, ...any)) (*os.File, error) {
	lock, err := os.OpenFile(realPodLockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the real-pod fleet lock: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		return lock, nil
	}
	logf("another real-pod fleet runs on this machine: waiting for it to stop (%s)", realPodLockPath)
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("waiting for the real-pod fleet lock: %w", err)
	}
	return lock, nil
}

// closeLock releases a lock lockRealPods returned; nil is none.
func closeLock(lock *os.File) {
	if lock != nil {
		_ = lock.Close()
	}
}
