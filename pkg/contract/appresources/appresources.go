// Package appresources is the spoke-to-hub contract for what a pulled Application
// deploys. The spoke agent summarises the spoke Application's resources (their sync
// status, health and the message of a failed one) into one annotation on that
// Application; OCM's work agent carries the annotation back to the hub as a string status
// feedback value of the Application's ManifestWork; the hub manager decodes it onto the
// hub Application and into the ApplicationSet's report.
//
// Why this path: OCM's raw-JSON feedback (a JSONPath on .status.resources) is behind the
// work agent's RawFeedbackJsonString feature gate and capped at 1,024 bytes (a handful of
// resources); a string value has no such cap and works on every work agent. The summary
// travels with the sync and health values on the one watch the work agent already keeps
// on the Application: no extra hub identity, RBAC, object or polling.
//
// The summary is bounded (see the Max constants): an Application with thousands of
// resources keeps every resource in its counts, lists the most relevant ones first (failed
// and degraded before healthy) and says how many it left out.
package appresources

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Annotation is the spoke Application's annotation that holds the encoded summary.
const Annotation = "gitops-addon.open-cluster-management.io/resources"

// FeedbackName and FeedbackPath name the ManifestWork status feedback value that carries
// the annotation back to the hub.
const (
	FeedbackName = "resources"
	FeedbackPath = `.metadata.annotations.gitops-addon\.open-cluster-management\.io/resources`
)

// Version is the summary format this binary writes and reads.
const Version = 1

// Bounds of one summary. MaxBytes keeps a ManifestWork and a hub Application far below
// etcd's request limit (1.5 MiB) whatever the Application deploys.
const (
	MaxResources = 100
	MaxMessage   = 256
	MaxBytes     = 16 << 10
	MaxImages    = 20
)

// HealthSourceAppTree is Argo CD's status.resourceHealthSource when the application
// controller does not persist each resource's health in the Application (Argo CD 3's own
// default; the GitOps operator persists it): the summary then has sync statuses only.
const HealthSourceAppTree = "appTree"

// Summary is what the hub learns about a spoke Application's resources.
type Summary struct {
	// Version is the format version (Version).
	Version int `json:"v"`
	// Total is how many resources the Application has on the spoke.
	Total int `json:"total"`
	// Kinds counts every resource by kind ("Deployment.apps", "ConfigMap").
	Kinds map[string]int `json:"kinds,omitempty"`
	// Resources lists at most MaxResources of them, the failed and unhealthy first.
	Resources []Resource `json:"resources,omitempty"`
	// HealthSource is Argo CD's status.resourceHealthSource ("appTree": no per-resource health).
	HealthSource string `json:"healthSource,omitempty"`
	// Images and ExternalURLs are Argo CD's status.summary, at most MaxImages each.
	Images       []string `json:"images,omitempty"`
	ExternalURLs []string `json:"urls,omitempty"`
}

// Resource is one resource of the Application.
type Resource struct {
	Group     string `json:"g,omitempty"`
	Version   string `json:"ver,omitempty"`
	Kind      string `json:"k"`
	Namespace string `json:"ns,omitempty"`
	Name      string `json:"n"`
	// Status is the sync status (Synced, OutOfSync, Unknown).
	Status string `json:"s,omitempty"`
	// Health is the health status (Healthy, Progressing, Degraded, Missing, ...).
	Health string `json:"h,omitempty"`
	// HealthMessage explains the health, when Argo CD gave a reason.
	HealthMessage string `json:"hm,omitempty"`
	// SyncResult is the resource's result in the last sync (Synced, SyncFailed, Pruned, ...).
	SyncResult string `json:"r,omitempty"`
	// SyncMessage is that result's message (the apiserver's error of a failed one).
	SyncMessage string `json:"rm,omitempty"`
}

// Failed says whether the resource failed to sync or is degraded.
func (r Resource) Failed() bool {
	return r.SyncResult == "SyncFailed" || r.Health == "Degraded"
}

// Message is what went wrong with a failed resource (the sync error first), or its health message.
func (r Resource) Message() string {
	if r.SyncResult == "SyncFailed" && r.SyncMessage != "" {
		return r.SyncMessage
	}
	return r.HealthMessage
}

// APIVersion is the resource's group/version as in a manifest.
func (r Resource) APIVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// String names the resource for a message: "Deployment.apps guestbook/guestbook-ui".
func (r Resource) String() string {
	name := r.Name
	if r.Namespace != "" {
		name = r.Namespace + "/" + r.Name
	}
	return KindKey(r.Group, r.Kind) + " " + name
}

// KindKey is the key of a kind in Summary.Kinds.
func KindKey(group, kind string) string {
	if group == "" {
		return kind
	}
	return kind + "." + group
}

// Omitted is how many resources the summary counts but does not list.
func (s Summary) Omitted() int { return max(0, s.Total-len(s.Resources)) }

// Failed are the listed resources that failed to sync or are degraded.
func (s Summary) Failed() []Resource {
	var out []Resource
	for _, r := range s.Resources {
		if r.Failed() {
			out = append(out, r)
		}
	}
	return out
}

// KindCounts is Kinds as "ConfigMap 2, Deployment.apps 1", by kind.
func (s Summary) KindCounts() string {
	keys := slices.Sorted(maps.Keys(s.Kinds))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, s.Kinds[k]))
	}
	return strings.Join(parts, ", ")
}

// Of is the summary of these resources: every one listed and counted by kind.
func Of(resources ...Resource) Summary {
	s := Summary{Version: Version, Total: len(resources), Kinds: map[string]int{}, Resources: resources}
	for _, r := range resources {
		s.Kinds[KindKey(r.Group, r.Kind)]++
	}
	return s
}

// FromApplication summarises an Argo CD Application (as unstructured content): its
// status.resources, the per-resource results of its last sync and its status.summary.
func FromApplication(app map[string]any) Summary {
	status, _ := app["status"].(map[string]any)
	s := Summary{Version: Version, Kinds: map[string]int{}}
	s.HealthSource, _ = status["resourceHealthSource"].(string)
	results := syncResults(status)
	for _, item := range slice(status["resources"]) {
		m, _ := item.(map[string]any)
		r := Resource{
			Group: str(m, "group"), Version: str(m, "version"), Kind: str(m, "kind"),
			Namespace: str(m, "namespace"), Name: str(m, "name"), Status: str(m, "status"),
		}
		if h, ok := m["health"].(map[string]any); ok {
			r.Health, r.HealthMessage = str(h, "status"), str(h, "message")
		}
		if res, ok := results[resultKey(r.Group, r.Kind, r.Namespace, r.Name)]; ok {
			r.SyncResult, r.SyncMessage = res.status, res.message
		}
		s.Kinds[KindKey(r.Group, r.Kind)]++
		s.Resources = append(s.Resources, r)
	}
	s.Total = len(s.Resources)
	if summary, ok := status["summary"].(map[string]any); ok {
		s.Images = stringList(summary["images"])
		s.ExternalURLs = stringList(summary["externalURLs"])
	}
	return s
}

type syncResult struct{ status, message string }

// syncResults are the last sync's per-resource results, by resultKey.
func syncResults(status map[string]any) map[string]syncResult {
	op, _ := status["operationState"].(map[string]any)
	sr, _ := op["syncResult"].(map[string]any)
	out := map[string]syncResult{}
	for _, item := range slice(sr["resources"]) {
		m, _ := item.(map[string]any)
		if str(m, "hookType") != "" {
			continue // a hook is not one of the Application's resources
		}
		out[resultKey(str(m, "group"), str(m, "kind"), str(m, "namespace"), str(m, "name"))] = syncResult{str(m, "status"), str(m, "message")}
	}
	return out
}

func resultKey(group, kind, namespace, name string) string {
	return strings.Join([]string{group, kind, namespace, name}, "/")
}

// Encode returns the summary as the annotation's value, within the bounds: the resources
// ordered most relevant first and cut to MaxResources, messages cut to MaxMessage, images
// and URLs to MaxImages, then resources dropped from the end until it fits MaxBytes.
func (s Summary) Encode() (string, error) {
	s.Version = Version
	s.Resources = slices.Clone(s.Resources)
	slices.SortStableFunc(s.Resources, byRelevance)
	s.Resources = s.Resources[:min(len(s.Resources), MaxResources)]
	for i := range s.Resources {
		s.Resources[i].HealthMessage = truncate(s.Resources[i].HealthMessage, MaxMessage)
		s.Resources[i].SyncMessage = truncate(s.Resources[i].SyncMessage, MaxMessage)
	}
	s.Images = s.Images[:min(len(s.Images), MaxImages)]
	s.ExternalURLs = s.ExternalURLs[:min(len(s.ExternalURLs), MaxImages)]
	for {
		raw, err := json.Marshal(s)
		if err != nil {
			return "", fmt.Errorf("encoding the resource summary: %w", err)
		}
		if len(raw) <= MaxBytes || len(s.Resources) == 0 {
			return string(raw), nil
		}
		// Drop in proportion to the excess, at least one, so that this ends quickly.
		drop := max(1, len(s.Resources)*(len(raw)-MaxBytes)/len(raw))
		s.Resources = s.Resources[:len(s.Resources)-drop]
	}
}

// Decode reads an annotation's value. The hub does not trust what a spoke reports: a
// summary beyond the bounds Encode writes by (which only another writer than the agent
// makes) is refused, naming what is out of bounds, so a spoke cannot make its hub
// Application larger than a summary may be.
func Decode(value string) (Summary, error) {
	if len(value) > MaxBytes {
		return Summary{}, fmt.Errorf("the resource summary has %d bytes, more than the %d a summary may have", len(value), MaxBytes)
	}
	var s Summary
	if err := json.Unmarshal([]byte(value), &s); err != nil {
		return Summary{}, fmt.Errorf("decoding the resource summary: %w", err)
	}
	if s.Version != Version {
		return Summary{}, fmt.Errorf("resource summary version %d, this manager reads version %d", s.Version, Version)
	}
	if err := s.withinBounds(); err != nil {
		return Summary{}, fmt.Errorf("the resource summary is out of bounds: %w", err)
	}
	return s, nil
}

// withinBounds says which field of a decoded summary is beyond what Encode writes.
func (s Summary) withinBounds() error {
	switch {
	case s.Total < 0:
		return fmt.Errorf("total is %d", s.Total)
	case len(s.Resources) > MaxResources:
		return fmt.Errorf("resources lists %d, at most %d", len(s.Resources), MaxResources)
	case len(s.Images) > MaxImages:
		return fmt.Errorf("images lists %d, at most %d", len(s.Images), MaxImages)
	case len(s.ExternalURLs) > MaxImages:
		return fmt.Errorf("urls lists %d, at most %d", len(s.ExternalURLs), MaxImages)
	}
	for _, count := range s.Kinds {
		if count < 0 {
			return fmt.Errorf("kinds counts %d", count)
		}
	}
	for i, r := range s.Resources {
		if len(r.HealthMessage) > MaxMessage || len(r.SyncMessage) > MaxMessage {
			return fmt.Errorf("resources[%d] has a message over %d bytes", i, MaxMessage)
		}
	}
	return nil
}

// byRelevance orders failed and degraded resources first, then the other unhealthy, out
// of sync, progressing, and healthy ones; by kind and name within each.
func byRelevance(a, b Resource) int {
	return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.Group, b.Group), cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

func rank(r Resource) int {
	switch {
	case r.Failed():
		return 0
	case r.Health == "Missing" || r.Health == "Unknown":
		return 1
	case r.Status == "OutOfSync":
		return 2
	case r.Health == "Progressing" || r.Health == "Suspended":
		return 3
	default:
		return 4
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func slice(v any) []any {
	s, _ := v.([]any)
	return s
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func stringList(v any) []string {
	var out []string
	for _, x := range slice(v) {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
