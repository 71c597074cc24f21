// Package apptree is the spoke-to-hub contract for a pulled Application's resource tree:
// what the spoke's Argo CD shows of it (its managed resources and their children, each
// with health, images and info), so that the hub's Argo CD UI can draw the same tree.
//
// The spoke agent reads the tree the spoke's application controller keeps in its redis
// (pkg/argocdcache), bounds it, and writes it in one annotation of the spoke Application;
// OCM's work agent carries the annotation back to the hub as a string status feedback
// value of the Application's ManifestWork, on the watch it already keeps; the hub manager
// decodes it and writes it where the hub's argocd-server reads a tree. See
// docs/concepts.md, "The resource tree on the hub".
//
// The tree is bounded: beyond MaxNodes nodes, or MaxBytes encoded, it degrades to the
// Application's managed resources (ManagedOnly), and beyond that it is cut (Omitted),
// so that the hub never holds more than MaxBytes per Application.
//
// With the tree goes Argo CD's diff of the managed resources (its managed-resources cache,
// Diff), which the UI's diff and its resource panel read, when it fits within MaxBytes
// beside the tree; the tree comes first, and a diff that does not fit is left out
// (DiffOmitted).
package apptree

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Annotation is the spoke Application's annotation that holds the encoded tree.
const Annotation = "gitops-addon.open-cluster-management.io/tree"

// FeedbackName and FeedbackPath name the ManifestWork status feedback value that carries
// the annotation back to the hub.
const (
	FeedbackName = "tree"
	FeedbackPath = `.metadata.annotations.gitops-addon\.open-cluster-management\.io/tree`
)

// Version is the format this binary writes and reads.
const Version = 1

// Bounds of one shipped tree.
const (
	// MaxNodes is the most nodes (managed resources, their children and orphans) shipped
	// in full; a larger tree ships its managed resources only.
	MaxNodes = 1000
	// MaxBytes bounds the annotation's value (base64 of gzipped JSON): about 500 nodes of
	// a typical workload fit.
	MaxBytes = 48 << 10
	// MaxInflated bounds the JSON a shipped tree inflates to.
	MaxInflated = 1 << 20
)

// Tree is Argo CD's ApplicationTree as it crosses: nodes and orphaned nodes. Hosts are
// left out: they carry the node's capacity used by every pod on it, so a tree with them
// changes whenever anything else on the node changes.
type Tree struct {
	Nodes         []Node `json:"nodes,omitempty"`
	OrphanedNodes []Node `json:"orphanedNodes,omitempty"`
	// ShardsCount is Argo CD's: how many shards the tree was split into in its cache.
	ShardsCount int64 `json:"shardsCount,omitempty"`
}

// Ref is Argo CD's ResourceRef.
type Ref struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	UID       string `json:"uid,omitempty"`
}

// Node is Argo CD's ResourceNode, without its resourceVersion (which changes on every
// status update of the resource and is not drawn).
type Node struct {
	Ref            `json:",inline"`
	ParentRefs     []Ref           `json:"parentRefs,omitempty"`
	Info           []Info          `json:"info,omitempty"`
	NetworkingInfo json.RawMessage `json:"networkingInfo,omitempty"`
	Images         []string        `json:"images,omitempty"`
	Health         *Health         `json:"health,omitempty"`
	CreatedAt      string          `json:"createdAt,omitempty"`
}

// Info is Argo CD's InfoItem.
type Info struct {
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
}

// Health is Argo CD's HealthStatus.
type Health struct {
	Status             string `json:"status,omitempty"`
	Message            string `json:"message,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
}

// Diff is Argo CD's ResourceDiff as it crosses: the desired manifest, the normalized live
// and predicted states the UI's diff draws, and whether they differ. Left out: the live
// state (the UI reads the live manifest from the cluster itself), the deprecated diff, and
// the resourceVersion, which changes on every status update of the resource.
type Diff struct {
	Group               string `json:"group,omitempty"`
	Kind                string `json:"kind,omitempty"`
	Namespace           string `json:"namespace,omitempty"`
	Name                string `json:"name,omitempty"`
	TargetState         string `json:"targetState,omitempty"`
	Hook                bool   `json:"hook,omitempty"`
	NormalizedLiveState string `json:"normalizedLiveState,omitempty"`
	PredictedLiveState  string `json:"predictedLiveState,omitempty"`
	Modified            bool   `json:"modified,omitempty"`
}

func (d Diff) fullName() string { return d.Group + "/" + d.Kind + "/" + d.Namespace + "/" + d.Name }

// Managed says whether the node is one of the Application's own resources (no parent).
func (n Node) Managed() bool { return len(n.ParentRefs) == 0 }

// fullName orders nodes as Argo CD's Normalize does.
func (n Node) fullName() string {
	return n.Group + "/" + n.Kind + "/" + n.Namespace + "/" + n.Name
}

// Merge adds another shard's nodes, as Argo CD merges the shards of a tree.
func (t *Tree) Merge(other Tree) {
	t.Nodes = append(t.Nodes, other.Nodes...)
	t.OrphanedNodes = append(t.OrphanedNodes, other.OrphanedNodes...)
}

// normalize sorts the nodes as Argo CD does, so that equal trees encode equally.
func (t *Tree) normalize() {
	byName := func(a, b Node) int { return cmp.Compare(a.fullName(), b.fullName()) }
	slices.SortStableFunc(t.Nodes, byName)
	slices.SortStableFunc(t.OrphanedNodes, byName)
	t.ShardsCount = 0
}

// Shipped is what crosses from spoke to hub.
type Shipped struct {
	// Version is the format version (Version).
	Version int `json:"v"`
	// Total is how many nodes the spoke's tree has, orphans included.
	Total int `json:"total"`
	// ManagedOnly: the tree was over the bounds; only the managed resources are shipped.
	ManagedOnly bool `json:"managedOnly,omitempty"`
	// Omitted is how many managed resources are left out even so.
	Omitted int  `json:"omitted,omitempty"`
	Tree    Tree `json:"tree"`
	// Diff is Argo CD's diff of the managed resources, sorted as Argo CD sorts it; none
	// when the spoke's Argo CD keeps none (yet; or the Application manages nothing) or it
	// did not fit (DiffOmitted).
	Diff []Diff `json:"diff,omitempty"`
	// DiffOmitted: the diff was over the bound beside the tree and is not shipped.
	DiffOmitted bool `json:"diffOmitted,omitempty"`
}

// HasDiff says whether a diff was shipped.
func (s Shipped) HasDiff() bool { return len(s.Diff) > 0 }

// Bound is the tree and the diff as they may be shipped: the tree whole if within the
// bounds, else its managed resources, else as many of those as fit; the diff (nil: none
// kept) beside it if both fit within MaxBytes, else left out.
func Bound(t Tree, diff []Diff) (Shipped, string, error) {
	s, value, err := boundTree(t)
	if err != nil || diff == nil {
		return s, value, err
	}
	withDiff := s
	withDiff.Diff = slices.SortedStableFunc(slices.Values(diff), func(a, b Diff) int { return cmp.Compare(a.fullName(), b.fullName()) })
	if len(withDiff.Diff) <= MaxNodes {
		if v, err := encode(withDiff); err != nil || len(v) <= MaxBytes {
			return withDiff, v, err
		}
	}
	s.DiffOmitted = true
	value, err = encode(s)
	return s, value, err
}

// boundTree is the tree as it may be shipped (Bound).
func boundTree(t Tree) (Shipped, string, error) {
	t.normalize()
	s := Shipped{Version: Version, Total: len(t.Nodes) + len(t.OrphanedNodes), Tree: t}
	if s.Total <= MaxNodes {
		if value, err := encode(s); err != nil || len(value) <= MaxBytes {
			return s, value, err
		}
	}
	s.ManagedOnly = true
	s.Tree = Tree{Nodes: managed(t.Nodes)}
	if n := len(s.Tree.Nodes); n > MaxNodes {
		s.Tree.Nodes, s.Omitted = s.Tree.Nodes[:MaxNodes], n-MaxNodes
	}
	for {
		value, err := encode(s)
		if err != nil || len(value) <= MaxBytes || len(s.Tree.Nodes) == 0 {
			return s, value, err
		}
		// Drop in proportion to the excess, at least one, so that this ends quickly.
		drop := max(1, len(s.Tree.Nodes)*(len(value)-MaxBytes)/len(value))
		s.Tree.Nodes = s.Tree.Nodes[:len(s.Tree.Nodes)-drop]
		s.Omitted += drop
	}
}

func managed(nodes []Node) []Node {
	var out []Node
	for _, n := range nodes {
		if n.Managed() {
			out = append(out, n)
		}
	}
	return out
}

// encode is the annotation's value: base64 of the gzipped JSON. gzip without a name or
// time, so that equal trees have equal values.
func encode(s Shipped) (string, error) {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if err := json.NewEncoder(w).Encode(s); err != nil {
		return "", fmt.Errorf("encoding the resource tree: %w", err)
	}
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("compressing the resource tree: %w", err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// Decode reads an annotation's value. The hub does not trust what a spoke reports: a
// value beyond the bounds the agent writes by is refused, naming what is out of bounds.
func Decode(value string) (Shipped, error) {
	if len(value) > MaxBytes {
		return Shipped{}, fmt.Errorf("the resource tree is %d bytes encoded, over the bound of %d", len(value), MaxBytes)
	}
	raw, err := base64.StdEncoding.DecodeString(value)
	if err != nil {
		return Shipped{}, fmt.Errorf("the resource tree is not base64: %w", err)
	}
	r, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return Shipped{}, fmt.Errorf("the resource tree is not gzip: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxInflated+1))
	if err != nil {
		return Shipped{}, fmt.Errorf("the resource tree does not inflate: %w", err)
	}
	if len(data) > MaxInflated {
		return Shipped{}, fmt.Errorf("the resource tree inflates beyond %d bytes", MaxInflated)
	}
	var s Shipped
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&s); err != nil {
		return Shipped{}, fmt.Errorf("the resource tree is not its JSON: %w", err)
	}
	return s, s.check()
}

// ErrNewerVersion: the tree was written in a format this binary does not know.
var ErrNewerVersion = errors.New("the resource tree is in a newer format")

func (s Shipped) check() error {
	switch {
	case s.Version != Version:
		return fmt.Errorf("%w (version %d; this reads %d)", ErrNewerVersion, s.Version, Version)
	case len(s.Tree.Nodes)+len(s.Tree.OrphanedNodes) > MaxNodes:
		return fmt.Errorf("the resource tree has %d nodes, over the bound of %d", len(s.Tree.Nodes)+len(s.Tree.OrphanedNodes), MaxNodes)
	case len(s.Diff) > MaxNodes:
		return fmt.Errorf("the diff has %d resources, over the bound of %d", len(s.Diff), MaxNodes)
	case s.Total < 0 || s.Omitted < 0:
		return fmt.Errorf("the resource tree has negative counts (total %d, omitted %d)", s.Total, s.Omitted)
	}
	return nil
}

// Summary says, for a condition, how much of the tree the hub shows.
func (s Shipped) Summary() string {
	shown := len(s.Tree.Nodes) + len(s.Tree.OrphanedNodes)
	var b strings.Builder
	fmt.Fprintf(&b, "the resource tree has %d nodes", s.Total)
	if s.ManagedOnly {
		fmt.Fprintf(&b, ", over the bound of %d nodes or %d KiB: the hub shows its %d managed resources without their children", MaxNodes, MaxBytes>>10, shown)
	}
	if s.Omitted > 0 {
		fmt.Fprintf(&b, " (%d more managed resources left out)", s.Omitted)
	}
	if s.DiffOmitted {
		fmt.Fprintf(&b, "; its diff does not fit in %d KiB beside the tree: the hub's Argo CD shows no diff and no resource panel for it", MaxBytes>>10)
	}
	return b.String()
}
