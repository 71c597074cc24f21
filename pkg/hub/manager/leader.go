package manager

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"

	"github.com/gitops-addon/gitops-addon/pkg/leaderfence"
	"github.com/gitops-addon/gitops-addon/pkg/version"
)

// The leader election's timing: client-go's and controller-runtime's defaults, named here
// because the fence holds for exactly the renew deadline.
var (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// serviceAccountNamespace is where a pod learns its namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// leader is this replica's part in the leader election: its identity, the Lease lock its
// elector writes through, and the fence that keeps its other clients from writing unless
// it certainly leads.
type leader struct {
	fence  *leaderfence.Fence
	lock   resourcelock.Interface
	events *leaderEvents
}

// newLeader builds the Lease lock of the replica on cfg (unguarded: the elector must
// renew) and its fence.
func newLeader(cfg *rest.Config, namespace, identity string) (*leader, error) {
	if namespace == "" {
		raw, err := os.ReadFile(serviceAccountNamespace)
		if err != nil {
			return nil, errors.New("leader election needs the namespace of its Lease: set --leader-election-namespace or $POD_NAMESPACE " +
				"(or run with --leader-elect=false, a single replica)")
		}
		namespace = strings.TrimSpace(string(raw))
	}
	lockCfg := rest.CopyConfig(cfg)
	lockCfg.UserAgent = userAgent(identity) + " leader-election"
	// One hung request must not cost the lease (controller-runtime's heuristic).
	lockCfg.Timeout = max(renewDeadline/2, time.Second)
	core, err := corev1client.NewForConfig(lockCfg)
	if err != nil {
		return nil, fmt.Errorf("creating the leader election client: %w", err)
	}
	coordination, err := coordinationv1client.NewForConfig(lockCfg)
	if err != nil {
		return nil, fmt.Errorf("creating the leader election client: %w", err)
	}
	events := &leaderEvents{}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, LeaderElectionID, core, coordination,
		resourcelock.ResourceLockConfig{Identity: identity, EventRecorder: events})
	if err != nil {
		return nil, fmt.Errorf("creating the leader election lock: %w", err)
	}
	fence := leaderfence.New(identity, renewDeadline)
	return &leader{fence: fence, lock: fence.Lock(lock), events: events}, nil
}

// replicaIdentity names this replica in the Lease and in the apiserver's audit log: its
// host name (a pod's name) and a UUID, as controller-runtime names it.
func replicaIdentity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("naming this replica for the leader election: %w", err)
	}
	return host + "_" + string(uuid.NewUUID()), nil
}

// userAgent is the User-Agent of the replica's requests: the audit log tells the replicas
// of the manager apart by it (they share a ServiceAccount).
func userAgent(identity string) string {
	return fmt.Sprintf("gitops-addon-manager/%s (%s)", version.Version, identity)
}

// leaderEvents records the Lease's Events ("... became leader") through the manager's
// recorder, which exists only after the lock is built.
type leaderEvents struct{ recorder record.EventRecorder }

func (e *leaderEvents) Eventf(obj runtime.Object, eventType, reason, message string, args ...any) {
	if e.recorder != nil {
		e.recorder.Eventf(obj, eventType, reason, message, args...)
	}
}

// lockOrNil is the lock, or nil without leader election.
func (l *leader) lockOrNil() resourcelock.Interface {
	if l == nil {
		return nil
	}
	return l.lock
}
