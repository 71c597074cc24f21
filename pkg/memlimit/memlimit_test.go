package memlimit

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFromEnvironment(t *testing.T) {
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })
	tests := []struct {
		name, gomemlimit, container string
		want                        int64
		wantErr                     bool
	}{
		{name: "no limit known", want: 0},
		{name: "follows the container limit", container: "536870912", want: 483183820},
		{name: "GOMEMLIMIT wins", gomemlimit: "100MiB", container: "536870912", want: 0},
		{name: "malformed", container: "512Mi", wantErr: true},
		{name: "zero", container: "0", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", tt.gomemlimit)
			t.Setenv(EnvContainerLimit, tt.container)
			debug.SetMemoryLimit(math.MaxInt64)
			got, err := FromEnvironment()
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			if tt.want > 0 {
				assert.Equal(t, tt.want, debug.SetMemoryLimit(-1), "the runtime's limit is set")
			}
		})
	}
}
