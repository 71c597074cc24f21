package appresources

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"
)

// guestbook is a spoke Application as Argo CD writes it, with one resource failed to sync
// (forbidden) and one degraded.
const guestbook = `
metadata: {name: guestbook, namespace: openshift-gitops}
status:
  resourceHealthSource: inline
  resources:
  - {version: v1, kind: ConfigMap, namespace: guestbook, name: guestbook-ui, status: Synced, health: {status: Healthy}}
  - {version: v1, kind: Service, namespace: guestbook, name: guestbook-ui, status: Synced, health: {status: Healthy}}
  - {group: apps, version: v1, kind: Deployment, namespace: guestbook, name: web, status: Synced,
     health: {status: Degraded, message: 'Deployment "web" exceeded its progress deadline'}}
  - {group: scheduling.k8s.io, version: v1, kind: PriorityClass, name: high, status: OutOfSync}
  operationState:
    phase: Failed
    syncResult:
      revision: abc
      resources:
      - {group: scheduling.k8s.io, version: v1, kind: PriorityClass, namespace: "", name: high, status: SyncFailed,
         message: 'priorityclasses.scheduling.k8s.io is forbidden: User cannot create'}
      - {group: "", version: v1, kind: Pod, namespace: guestbook, name: pre-sync, status: Synced, hookType: PreSync}
  summary: {images: [quay.io/guestbook:v1], externalURLs: [https://guestbook.example.com]}
`

func decodeYAML(t *testing.T, doc string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(doc), &m))
	return m
}

func TestFromApplication(t *testing.T) {
	s := FromApplication(decodeYAML(t, guestbook))
	assert.Equal(t, 4, s.Total)
	assert.Equal(t, map[string]int{"ConfigMap": 1, "Service": 1, "Deployment.apps": 1, "PriorityClass.scheduling.k8s.io": 1}, s.Kinds)
	assert.Equal(t, "inline", s.HealthSource)
	assert.Equal(t, []string{"quay.io/guestbook:v1"}, s.Images)
	assert.Equal(t, []string{"https://guestbook.example.com"}, s.ExternalURLs)
	failed := s.Failed()
	require.Len(t, failed, 2)
	names := []string{failed[0].String(), failed[1].String()}
	assert.ElementsMatch(t, []string{"Deployment.apps guestbook/web", "PriorityClass.scheduling.k8s.io high"}, names)
	for _, r := range failed {
		switch r.Kind {
		case "PriorityClass":
			assert.Equal(t, "SyncFailed", r.SyncResult)
			assert.Contains(t, r.Message(), "forbidden")
			assert.Equal(t, "scheduling.k8s.io/v1", r.APIVersion())
		case "Deployment":
			assert.Contains(t, r.Message(), "progress deadline")
		}
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	s := FromApplication(decodeYAML(t, guestbook))
	value, err := s.Encode()
	require.NoError(t, err)
	got, err := Decode(value)
	require.NoError(t, err)
	assert.Equal(t, s.Total, got.Total)
	assert.Equal(t, s.Kinds, got.Kinds)
	assert.ElementsMatch(t, s.Resources, got.Resources)
	assert.Equal(t, "Deployment", got.Resources[0].Kind, "failed and degraded first, by group and kind")
	assert.Equal(t, "PriorityClass", got.Resources[1].Kind)
	assert.Equal(t, 0, got.Omitted())

	again, err := got.Encode()
	require.NoError(t, err)
	assert.Equal(t, value, again, "encoding is deterministic: an unchanged Application gives an unchanged annotation")
}

func TestEncodeBounds(t *testing.T) {
	tests := []struct {
		name      string
		resources int
		message   int
		wantMax   int
	}{
		{"a few resources are all listed", 3, 10, 3},
		{"thousands are cut to MaxResources", 5000, 10, MaxResources},
		{"long messages are cut so that the bytes fit", 5000, 4000, MaxResources},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summary{Kinds: map[string]int{}}
			for i := range tt.resources {
				r := Resource{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprintf("cm-%05d", i), Status: "Synced", Health: "Healthy",
					HealthMessage: strings.Repeat("x", tt.message)}
				if i%1000 == 999 {
					r.Health = "Degraded"
				}
				s.Resources = append(s.Resources, r)
				s.Kinds["ConfigMap"]++
			}
			s.Total = tt.resources
			value, err := s.Encode()
			require.NoError(t, err)
			assert.LessOrEqual(t, len(value), MaxBytes)
			got, err := Decode(value)
			require.NoError(t, err)
			assert.LessOrEqual(t, len(got.Resources), tt.wantMax)
			assert.Equal(t, tt.resources, got.Total, "the total counts every resource")
			assert.Equal(t, tt.resources, got.Kinds["ConfigMap"])
			assert.Equal(t, tt.resources-len(got.Resources), got.Omitted())
			if tt.resources >= 1000 {
				assert.Equal(t, "Degraded", got.Resources[0].Health, "the unhealthy are listed first")
			}
			for _, r := range got.Resources {
				assert.LessOrEqual(t, len(r.HealthMessage), MaxMessage)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	for name, value := range map[string]string{
		"not JSON":       "resources: 3",
		"a newer format": `{"v":2,"total":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode(value)
			assert.Error(t, err)
		})
	}
}

// TestFeedbackPathReadsTheAnnotation evaluates FeedbackPath as OCM's work agent does
// (client-go's JSONPath, wrapped in braces, missing keys allowed).
func TestFeedbackPathReadsTheAnnotation(t *testing.T) {
	app := decodeYAML(t, guestbook)
	value, err := FromApplication(app).Encode()
	require.NoError(t, err)
	app["metadata"].(map[string]any)["annotations"] = map[string]any{Annotation: value, "other": "x"}

	j := jsonpath.New(FeedbackName).AllowMissingKeys(true)
	require.NoError(t, j.Parse("{"+FeedbackPath+"}"))
	results, err := j.FindResults(app)
	require.NoError(t, err)
	require.Len(t, results, 1)
	require.Len(t, results[0], 1)
	assert.Equal(t, value, results[0][0].Interface())
}
