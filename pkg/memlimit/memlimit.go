// Package memlimit gives the Go runtime a soft memory limit that follows the container's:
// with GOMEMLIMIT near the cgroup limit the garbage collector works harder before the
// kernel would kill the process, instead of letting the heap double past it.
package memlimit

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// EnvContainerLimit is set by the charts from the container's limits.memory (in bytes,
// through a resourceFieldRef).
const EnvContainerLimit = "CONTAINER_MEMORY_LIMIT"

// Fraction of the container limit given to the Go runtime: the rest is for memory the
// runtime does not count (stacks of cgo, the binary's mapped pages) and for headroom.
const Fraction = 0.9

// FromEnvironment sets the runtime's soft memory limit to Fraction of the container
// limit, unless GOMEMLIMIT is set (the user's choice wins) or no limit is known. It
// returns the limit it set, 0 when it set none, and an error for a malformed value.
func FromEnvironment() (int64, error) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	raw := strings.TrimSpace(os.Getenv(EnvContainerLimit))
	if raw == "" {
		return 0, nil
	}
	limit, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || limit <= 0 {
		return 0, fmt.Errorf("%s=%q: want the container's memory limit in bytes", EnvContainerLimit, raw)
	}
	soft := int64(float64(limit) * Fraction)
	debug.SetMemoryLimit(soft)
	return soft, nil
}

// GCPercent is the garbage collector's target the manager and the agent run with unless
// GOGC is set: the heap may grow by 30 % of what is live before a collection, not by all
// of it (Go's default of 100). The manager's live heap is mostly its caches (at 1,000
// clusters about 55 MB, 40 % of it the ManifestWorks' manifests in addon-framework's
// cache): with Go's default its peak RSS at 1,000 clusters was 195 MiB, with 50 it was
// 160 MiB, with 30 (and 8 remembered renders) 136 MiB (`make bench-fleet`, docs/benchmarks.md). The manager spends about a sixth of
// one core while a fleet propagates, so the extra collections cost no propagation time.
const GCPercent = 30

// GCFromEnvironment sets the garbage collector's target to GCPercent unless GOGC is set
// (the user's choice wins), and returns the target in effect.
func GCFromEnvironment() int {
	if os.Getenv("GOGC") != "" {
		current := debug.SetGCPercent(-1)
		debug.SetGCPercent(current)
		return current
	}
	debug.SetGCPercent(GCPercent)
	return GCPercent
}
