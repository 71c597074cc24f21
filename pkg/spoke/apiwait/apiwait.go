// Package apiwait holds the GitOps operator back until the APIs it probes once, at start,
// are served. The operator (v0.18) decides at start whether Routes exist and registers
// them in its scheme only then; on a cluster without a Route API the spoke agent installs
// the Routes CRD moments after the addon lands, and an operator that started first later
// sees Routes appear and fails every reconcile with "no kind is registered for the type
// v1.Route" until it restarts. Run as the operator Pod's init container, this makes the
// order explicit.
package apiwait

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
)

// Options are the group/versions to wait for, how often to ask and for how long.
type Options struct {
	GroupVersions []string
	Interval      time.Duration
	Timeout       time.Duration
	Logf          func(format string, args ...any)
}

// Wait returns once discovery serves every group/version, or an error naming those still
// missing when the timeout passes. Discovery has no watch; asking every few seconds is
// what kubectl and controller-runtime's REST mapper do too.
func Wait(ctx context.Context, d discovery.DiscoveryInterface, o Options) error {
	var missing []string
	err := wait.PollUntilContextTimeout(ctx, o.Interval, o.Timeout, true, func(context.Context) (bool, error) {
		missing = missingGroupVersions(d, o.GroupVersions)
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("after %v the cluster still does not serve %s: the gitops-addon agent installs the Argo CD CRDs "+
			"and, where no Route API is served, the Routes CRD; check its conditions on the hub "+
			"(kubectl get managedclusteraddon gitops-addon -n <cluster> -o yaml) and its pod on this cluster",
			o.Timeout, strings.Join(missing, ", "))
	}
	o.Logf("served: %s", strings.Join(o.GroupVersions, ", "))
	return nil
}

// missingGroupVersions lists the group/versions discovery does not serve (all of them
// when discovery fails).
func missingGroupVersions(d discovery.DiscoveryInterface, want []string) []string {
	groups, err := d.ServerGroups()
	if err != nil {
		return want
	}
	var served []string
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			served = append(served, v.GroupVersion)
		}
	}
	var missing []string
	for _, gv := range want {
		if !slices.Contains(served, gv) {
			missing = append(missing, gv)
		}
	}
	return missing
}
