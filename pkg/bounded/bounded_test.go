package bounded

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/yaml"
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

// TestPrintable: what YAML refuses becomes U+FFFD, the rest is left as it is, and the
// result always marshals to YAML (kubectl get -o yaml).
func TestPrintable(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "plain", in: "Healthy", want: "Healthy"},
		{name: "tabs and newlines", in: "line 1\n\tline 2\r\n", want: "line 1\n\tline 2\r\n"},
		{name: "multi-byte", in: "déployé ✓ 🚀", want: "déployé ✓ 🚀"},
		{name: "DEL", in: "a\x7fb", want: "a\uFFFDb"},
		{name: "NUL and escape", in: "\x00\x1b[31m", want: "\uFFFD\uFFFD[31m"},
		{name: "C1 control", in: "a\u0090b\u0085c", want: "a\uFFFDb\u0085c"},
		{name: "not UTF-8", in: "a\xffb", want: "a\uFFFDb"},
		{name: "non-characters", in: "\uFFFE\uFFFF", want: "\uFFFD\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Printable(tt.in)
			assert.Equal(t, tt.want, got)
			_, err := yaml.Marshal(map[string]string{"v": got})
			assert.NoError(t, err)
		})
	}
}
