package bounded

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// TestEventNote: a note over 1,024 bytes is refused by the apiserver and lost, so a long one is
// cut (never inside a character) and says where the rest is.
func TestEventNote(t *testing.T) {
	tests := []struct {
		name string
		note string
		cut  bool
	}{
		{name: "short", note: "Cluster local-cluster is the hub itself."},
		{name: "exactly the limit", note: strings.Repeat("a", MaxEventNote)},
		{name: "three hub clusters' sentences", note: strings.Repeat("Cluster local-cluster is the hub itself (its name is local-cluster). ", 20), cut: true},
		{name: "multi-byte characters at the cut", note: strings.Repeat("é", MaxEventNote), cut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EventNote(tt.note, "kubectl describe gitopscluster")
			assert.LessOrEqual(t, len(got), MaxEventNote)
			assert.True(t, utf8.ValidString(got))
			if !tt.cut {
				assert.Equal(t, tt.note, got)
				return
			}
			assert.True(t, strings.HasSuffix(got, "(the whole message: kubectl describe gitopscluster)"))
		})
	}
}
