package appresources

import (
	"strings"
	"testing"
)

// FuzzDecode feeds the resource summary the hub reads from a spoke (a ManifestWork status
// feedback value, written by whoever can annotate the spoke Application). No input may
// panic; whatever is accepted is within the bounds the agent writes by, so a spoke cannot
// make the hub Application larger than a summary may be.
func FuzzDecode(f *testing.F) {
	good, err := Of(Resource{Kind: "Deployment", Group: "apps", Version: "v1", Namespace: "guestbook", Name: "guestbook-ui",
		Status: "Synced", Health: "Healthy"}).Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(`{"v":1,"total":1,"resources":[{"k":"Pod","n":"p","hm":"` + strings.Repeat("x", 600) + `"}]}`)
	f.Add(`{"v":1,"total":-5,"images":["a","b"]}`)
	f.Add(`{"v":2}`)
	f.Add(`not json`)
	f.Fuzz(func(t *testing.T, value string) {
		s, err := Decode(value)
		if err != nil {
			return
		}
		if len(s.Resources) > MaxResources || len(s.Images) > MaxImages || len(s.ExternalURLs) > MaxImages {
			t.Fatalf("accepted beyond the bounds: %d resources, %d images, %d URLs", len(s.Resources), len(s.Images), len(s.ExternalURLs))
		}
		for _, r := range s.Resources {
			if len(r.HealthMessage) > MaxMessage || len(r.SyncMessage) > MaxMessage {
				t.Fatalf("a message beyond %d bytes accepted", MaxMessage)
			}
		}
		if s.Total < 0 || s.Omitted() < 0 {
			t.Fatalf("a negative count accepted: total %d", s.Total)
		}
		if _, err := s.Encode(); err != nil {
			t.Fatalf("an accepted summary does not encode again: %v", err)
		}
	})
}
