package realpods

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fleet that would not fit is refused before it starts, with the free and the needed space.
func TestCheckFreeSpaceRefusesAFleetThatWouldNotFit(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, checkFreeSpace(dir, 1))
	err := checkFreeSpace(dir, 1<<62)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "GiB free, a real-pod fleet of this size needs")
}
