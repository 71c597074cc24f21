package addon

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gitops-addon/gitops-addon/pkg/constants"
)

func TestDecideRoutesCRD(t *testing.T) {
	known := flavour{knownNonOpenShift: true, evidence: "claim product=EKS"}
	ocp := flavour{openShift: true, evidence: "claim product=OpenShift"}
	cases := []struct {
		name  string
		facts routesFacts
		want  bool
	}{
		{"OpenShift never", routesFacts{flavour: ocp}, false},
		{"OpenShift never, even if shipped before", routesFacts{flavour: ocp, shipped: true}, false},
		{"OpenShift never, even if the agent says Absent", routesFacts{flavour: ocp, reported: constants.RouteAPIAbsent}, false},
		{"Native never", routesFacts{flavour: known, reported: constants.RouteAPINative}, false},
		{"Native never, even if shipped", routesFacts{flavour: known, reported: constants.RouteAPINative, shipped: true}, false},
		{"Absent ships", routesFacts{reported: constants.RouteAPIAbsent}, true},
		{"foreign CRD: do not ship", routesFacts{flavour: known, reported: constants.RouteAPICRD}, false},
		{"our own CRD reported as CRD: keep shipping", routesFacts{flavour: known, reported: constants.RouteAPICRD, shipped: true}, true},
		{"Unknown while shipped: keep shipping (never delete Routes)", routesFacts{reported: constants.RouteAPIUnknown, shipped: true}, true},
		{"Unknown: do not ship", routesFacts{flavour: known, reported: constants.RouteAPIUnknown}, false},
		{"no report, known vanilla: ship", routesFacts{flavour: known}, true},
		{"no report, unknown flavour: do not ship", routesFacts{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decideRoutesCRD(tc.facts)
			assert.Equal(t, tc.want, d.install, d.why)
			assert.NotEmpty(t, d.why)
		})
	}
}

func TestClusterFlavour(t *testing.T) {
	cases := []struct {
		name               string
		claims, labels     map[string]string
		openShift, vanilla bool
	}{
		{"OpenShift version claim", map[string]string{claimOpenShiftVer: "4.20"}, nil, true, false},
		{"OpenShift product claim", map[string]string{claimProduct: "OpenShift"}, nil, true, false},
		{"ROSA product claim", map[string]string{claimProduct: "ROSA"}, nil, true, false},
		{"MicroShift product claim", map[string]string{claimProduct: "MicroShift"}, nil, true, false},
		{"OpenShift vendor label", nil, map[string]string{labelVendor: "OpenShift"}, true, false},
		{"openshiftVersion label", nil, map[string]string{labelOpenShiftVer: "4.19"}, true, false},
		{"EKS product claim", map[string]string{claimProduct: "EKS"}, nil, false, true},
		{"kind vendor label", nil, map[string]string{labelVendor: "Kind"}, false, true},
		{"vendor Other is not knowledge", nil, map[string]string{labelVendor: "Other"}, false, false},
		{"vendor auto-detect is not knowledge", nil, map[string]string{labelVendor: "auto-detect"}, false, false},
		{"nothing", nil, nil, false, false},
		{"claim wins over label", map[string]string{claimProduct: "OpenShift"}, map[string]string{labelVendor: "EKS"}, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := clusterFlavour(cluster("c", tc.claims, tc.labels))
			assert.Equal(t, tc.openShift, f.openShift, f.evidence)
			assert.Equal(t, tc.vanilla, f.knownNonOpenShift, f.evidence)
		})
	}
}

func TestParseAPIGroups(t *testing.T) {
	groups, err := parseAPIGroups(" cert-manager.io,,external-secrets.io, cert-manager.io ")
	assert.NoError(t, err)
	assert.Equal(t, []string{"cert-manager.io", "external-secrets.io"}, groups)
	_, err = parseAPIGroups("UPPER.example.com")
	assert.ErrorContains(t, err, "not an API group name")
}
