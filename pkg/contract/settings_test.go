package contract

import (
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func everySetting() AddonSettings {
	return AddonSettings{
		Images: Images{Operator: "quay.io/o:1", ArgoCD: "quay.io/a:2", Redis: "redis:7", ArgoCDAgent: "quay.io/agent:3"},
		ArgoCDAgent: &ArgoCDAgentSettings{
			Mode: "managed", Principal: "principal.example.com:443", PrincipalCA: "-----BEGIN CERTIFICATE-----\n...",
		},
		ExistingArgoCD:      ExistingArgoCDUse,
		LiveResourcesReader: ServiceAccountRef{Namespace: "open-cluster-management-agent-addon", Name: "gitops-addon-live-resources"},
	}
}

func TestSettingsRoundTrip(t *testing.T) {
	for name, s := range map[string]AddonSettings{
		"the defaults":                    {},
		"images only":                     {Images: Images{Operator: "o", Redis: "r"}},
		"agent mode, principal unknown":   {ArgoCDAgent: &ArgoCDAgentSettings{Mode: "autonomous"}},
		"agent mode without the hub's CA": {ArgoCDAgent: &ArgoCDAgentSettings{Mode: "managed", Principal: "p:8443"}},
		"every setting":                   everySetting(),
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, s, SettingsOf(s.Annotations()))
		})
	}
}

// The annotation names are a wire format: a manager reads what its previous version
// wrote on ManagedClusterAddOns during an upgrade, so they may never change.
func TestSettingsAnnotationsAreStable(t *testing.T) {
	assert.Equal(t, map[string]string{
		"gitops-addon.open-cluster-management.io/gitops-operator-image":  "quay.io/o:1",
		"gitops-addon.open-cluster-management.io/argocd-image":           "quay.io/a:2",
		"gitops-addon.open-cluster-management.io/redis-image":            "redis:7",
		"gitops-addon.open-cluster-management.io/argocd-agent-image":     "quay.io/agent:3",
		"gitops-addon.open-cluster-management.io/argocd-agent-mode":      "managed",
		"gitops-addon.open-cluster-management.io/argocd-agent-principal": "principal.example.com:443",
		"gitops-addon.open-cluster-management.io/argocd-agent-ca":        "-----BEGIN CERTIFICATE-----\n...",
		"gitops-addon.open-cluster-management.io/existing-argocd":        "UseExisting",
		"gitops-addon.open-cluster-management.io/live-resources-reader":  "open-cluster-management-agent-addon/gitops-addon-live-resources",
	}, everySetting().Annotations())
}

// A reader that is not "namespace/name" names nothing: the chart binds no one.
func TestALiveResourcesReaderIsANamespaceAndAName(t *testing.T) {
	for value, want := range map[string]ServiceAccountRef{
		"ns/sa":  {Namespace: "ns", Name: "sa"},
		"":       {},
		"sa":     {},
		"/sa":    {},
		"ns/":    {},
		"ns/a/b": {},
	} {
		assert.Equal(t, want, SettingsOf(map[string]string{annotationLiveReader: value}).LiveResourcesReader, "%q", value)
	}
}

func TestSettingsAnnotationKeysCoverEveryEncodedKey(t *testing.T) {
	keys := settingsKeys
	for key := range everySetting().Annotations() {
		assert.Contains(t, keys, key)
	}
	assert.Len(t, keys, len(everySetting().Annotations()), "no key is listed that Annotations never writes")
}

func TestAgentModeIsOffWithoutAMode(t *testing.T) {
	s := SettingsOf(map[string]string{annotationPrincipal: "p:1", annotationPrincipalCA: "ca"})
	assert.Nil(t, s.ArgoCDAgent, "a principal without a mode is not agent mode")
	assert.Empty(t, AddonSettings{ArgoCDAgent: &ArgoCDAgentSettings{Principal: "p:1"}}.Annotations())
}

func TestWithSettingsReplacesOnlyItsOwnKeys(t *testing.T) {
	current := everySetting().Annotations()
	current["addon.open-cluster-management.io/values"] = "{}"
	current["example.com/user"] = "kept"

	got := WithSettings(current, AddonSettings{Images: Images{Redis: "redis:8"}})
	assert.Equal(t, map[string]string{
		"addon.open-cluster-management.io/values":             "{}",
		"example.com/user":                                    "kept",
		"gitops-addon.open-cluster-management.io/redis-image": "redis:8",
	}, got)
	assert.Equal(t, "quay.io/o:1", current[annotationOperatorImage], "the input is not changed")
	assert.Empty(t, WithSettings(nil, AddonSettings{}))
}

func TestPrincipalHostPort(t *testing.T) {
	for _, tc := range []struct {
		principal, host, port string
		ok                    bool
	}{
		{"principal.example.com:443", "principal.example.com", "443", true},
		{"[fd00::1]:8443", "fd00::1", "8443", true},
		{"no-port", "", "", false},
		{"", "", "", false},
	} {
		host, port, ok := ArgoCDAgentSettings{Principal: tc.principal}.PrincipalHostPort()
		require.Equal(t, tc.ok, ok, tc.principal)
		assert.Equal(t, tc.host, host)
		assert.Equal(t, tc.port, port)
	}
}

// FuzzSettings feeds a ManagedClusterAddOn's annotations (which the hub writes, and
// anyone with write access to the addon could) through the settings' decoder: no input
// may panic, and what is decoded is written back unchanged by WithSettings, leaving every
// other annotation alone.
func FuzzSettings(f *testing.F) {
	f.Add("quay.io/argoprojlabs/argocd-operator:v0.14.0", "managed", "argocd-agent-principal.example.com:443", "UseExisting", "team")
	f.Add("", "", "", "", "")
	f.Add("a\nb", "autonomous", ":", "Skip", "gitops-addon.open-cluster-management.io/operator-image")
	f.Fuzz(func(t *testing.T, image, mode, principal, existing, otherKey string) {
		in := map[string]string{
			annotationOperatorImage: image, ArgoCDAgentMode: mode, annotationPrincipal: principal, ExistingArgoCDPolicy: existing,
		}
		if !slices.Contains(settingsKeys, otherKey) {
			in[otherKey] = "kept"
		}
		s := SettingsOf(in)
		out := WithSettings(in, s)
		if !slices.Contains(settingsKeys, otherKey) && out[otherKey] != "kept" {
			t.Fatalf("annotation %q not kept", otherKey)
		}
		if again := SettingsOf(out); !reflect.DeepEqual(again, s) {
			t.Fatalf("settings changed on the way back: %+v, then %+v", s, again)
		}
	})
}
