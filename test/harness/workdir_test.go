package harness

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStopKeepsWhatAFailureNeeds: a failed run keeps the logs and certificates it is
// diagnosed with, not the gigabytes of images and container roots a rerun rebuilds; a run
// asked to keep everything keeps everything; a passing run leaves nothing.
func TestStopKeepsWhatAFailureNeeds(t *testing.T) {
	for _, tc := range []struct {
		name              string
		keepWorkDir       bool
		keepForDiagnosis  bool
		wantLog, wantBulk bool
	}{
		{name: "a passing run leaves nothing"},
		{name: "a failure keeps its logs, not its bulk", keepForDiagnosis: true, wantLog: true},
		{name: "KeepWorkDir keeps everything", keepWorkDir: true, keepForDiagnosis: true, wantLog: true, wantBulk: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "logs", "kubelet.log")
			image := filepath.Join(dir, "spoke", "node", "containerd", "layer")
			for _, file := range []string{log, image} {
				require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o700))
				require.NoError(t, os.WriteFile(file, []byte("x"), 0o600))
			}
			f := &Fleet{WorkDir: dir, opts: Options{KeepWorkDir: tc.keepWorkDir, Logf: t.Logf}}
			f.Bulk(filepath.Join(dir, "spoke", "node", "containerd"))
			if tc.keepForDiagnosis {
				f.KeepForDiagnosis()
			}
			require.NoError(t, f.Stop())
			assert.Equal(t, tc.wantLog, exists(log), "the log is kept")
			assert.Equal(t, tc.wantBulk, exists(image), "the node's image is kept")
		})
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// What a fleet's nodes leave outside its directory is reported only by a fleet with nodes,
// which recorded what was there at its start: a process fleet (make demo) on a machine
// where containerd or an earlier real-pod fleet made /run/containerd or /run/netns reported
// them as its own leftovers and the demo ended with an error.
func TestLeftoversOutsideTheWorkDirAreAFleetWithNodesOnly(t *testing.T) {
	root := t.TempDir()
	saved := outsideRoots
	outsideRoots = []string{root}
	t.Cleanup(func() { outsideRoots = saved })
	require.NoError(t, os.WriteFile(filepath.Join(root, "machine's"), nil, 0o600))

	processFleet := &Fleet{WorkDir: t.TempDir(), id: "gatest"}
	assert.Empty(t, processFleet.Leftovers(), "a process fleet leaves nothing it did not make")

	podFleet := &Fleet{WorkDir: t.TempDir(), id: "gatest", outsideBefore: outsideEntries()}
	assert.Empty(t, podFleet.Leftovers(), "what was there before is not the fleet's")
	require.NoError(t, os.WriteFile(filepath.Join(root, "fleet's"), nil, 0o600))
	assert.Equal(t, []string{"file " + filepath.Join(root, "fleet's")}, podFleet.Leftovers())
}
