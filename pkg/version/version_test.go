package version

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestImageIsTaggedWithTheVersion(t *testing.T) {
	tests := []struct{ version, want string }{
		{"v0.1.0", ImageRepository + ":0.1.0"},
		{"v1.2.3-rc.1", ImageRepository + ":1.2.3-rc.1"},
		{"v0.0.0-dev", ImageRepository + ":0.0.0-dev"},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			saved := Version
			t.Cleanup(func() { Version = saved })
			Version = tt.version
			assert.Equal(t, tt.want, Image())
			assert.NotContains(t, Image(), ":latest")
		})
	}
}
