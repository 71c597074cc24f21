package agent

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/schemes"
)

// countingManager counts what features add to the manager.
type countingManager struct {
	manager.Manager
	added int
}

func (m *countingManager) Add(r manager.Runnable) error {
	m.added++
	return m.Manager.Add(r)
}

// Before Kubernetes 1.30 the chart gives the agent no Role to patch Applications or watch
// AppProjects (no admission policy keeps it narrow): the pulled Applications' controllers,
// whose forbidden watches would stop the agent, are not added there; from 1.30 on they are.
func TestPulledApplicationsRunOnlyWhereTheClusterServesValidatingAdmissionPolicyV1(t *testing.T) {
	vap := schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"}
	for _, tc := range []struct {
		name    string
		served  bool
		wantAdd bool
	}{
		{name: "Kubernetes 1.29: nothing added", served: false},
		{name: "Kubernetes 1.30 and later: the controllers' starter added", served: true, wantAdd: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme, err := schemes.Spoke()
			require.NoError(t, err)
			mapper := meta.NewDefaultRESTMapper(nil)
			if tc.served {
				mapper.Add(vap, meta.RESTScopeRoot)
			}
			mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
				Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
				MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil },
				Controller:     config.Controller{SkipNameValidation: ptr.To(true)}, // one name in several managers
			})
			require.NoError(t, err)
			counting := &countingManager{Manager: mgr}
			require.NoError(t, PulledApplications(Setup{Manager: counting, Options: Options{Stack: StackFull}, Report: addonstatus.NewReport()}))
			assert.Equal(t, tc.wantAdd, counting.added > 0, "controllers added")
		})
	}
}
