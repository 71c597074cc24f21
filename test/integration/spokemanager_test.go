package integration

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gitops-addon/gitops-addon/pkg/spoke/schemes"
)

// newSpokeManager is a controller manager as the spoke agent builds one (its scheme and
// the cache narrowed by byObject), with no metrics or probe listeners, which tests may
// build several times in one process.
func newSpokeManager(t *testing.T, cfg *rest.Config, byObject map[client.Object]cache.ByObject) manager.Manager {
	t.Helper()
	scheme, err := schemes.Spoke()
	require.NoError(t, err)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache:      cache.Options{ByObject: byObject},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	return mgr
}
