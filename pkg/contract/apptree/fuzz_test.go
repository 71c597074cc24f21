package apptree

import (
	"testing"
)

// FuzzDecodeTree feeds the resource tree the hub reads from a spoke (a ManifestWork status
// feedback value, written by whoever can annotate the spoke Application). No input may
// panic; whatever is accepted is within the bounds the agent writes by and encodes again
// within MaxBytes, so a spoke cannot make the hub hold more than a tree may be.
func FuzzDecodeTree(f *testing.F) {
	_, good, err := Bound(guestbook(), guestbookDiff())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(deflate(f, `{"v":1,"total":3,"tree":{"nodes":[{"kind":"Pod","name":"p","parentRefs":[{"kind":"ReplicaSet"}]}]}}`))
	f.Add(deflate(f, `{"v":1,"total":-5}`))
	f.Add("not base64")
	f.Fuzz(func(t *testing.T, value string) {
		s, err := Decode(value)
		if err != nil {
			return
		}
		if n := len(s.Tree.Nodes) + len(s.Tree.OrphanedNodes); n > MaxNodes || len(s.Diff) > MaxNodes || s.Total < 0 || s.Omitted < 0 {
			t.Fatalf("accepted beyond the bounds: %d nodes, %d diffs, total %d, omitted %d", n, len(s.Diff), s.Total, s.Omitted)
		}
	})
}
