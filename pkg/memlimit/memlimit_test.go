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

func TestGCFromEnvironment(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tests := []struct {
		name, gogc string
		// runtime is the target the runtime started with (from GOGC, read at start).
		runtime, want int
	}{
		{name: "GOGC unset: half the live heap", runtime: 100, want: GCPercent},
		{name: "GOGC wins", gogc: "200", runtime: 200, want: 200},
		{name: "GOGC=off wins", gogc: "off", runtime: -1, want: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOGC", tt.gogc)
			debug.SetGCPercent(tt.runtime)
			assert.Equal(t, tt.want, GCFromEnvironment())
			assert.Equal(t, tt.want, debug.SetGCPercent(tt.want), "the runtime's target")
		})
	}
}
