package cmd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAgentIgnoresFlagsOfANewerManager: a manager one release newer renders arguments
// this agent may not know; the agent parses the rest and runs.
func TestAgentIgnoresFlagsOfANewerManager(t *testing.T) {
	c := newAgentCommand()
	require.NoError(t, c.ParseFlags([]string{"--openshift=true", "--a-flag-of-a-newer-manager=x", "--cluster-name=c1"}))
	openShift, err := c.Flags().GetBool("openshift")
	require.NoError(t, err)
	assert.True(t, openShift)
	name, err := c.Flags().GetString("cluster-name")
	require.NoError(t, err)
	assert.Equal(t, "c1", name, "flags after the unknown one are still read")
}

// TestManagerRejectsUnknownFlags: the manager's flags come from its own chart, of its own
// version: an unknown one is a mistake to report, not a skew to tolerate.
func TestManagerRejectsUnknownFlags(t *testing.T) {
	c := newManagerCommand()
	assert.Error(t, c.ParseFlags([]string{"--no-such-flag=1"}))
}

// TestManagerStillAcceptsTheDeprecatedAddonWorkers: an older chart's --addon-workers
// parses (and is ignored, with cobra's deprecation notice), so an upgrade of the binary
// alone does not stop the manager.
func TestManagerStillAcceptsTheDeprecatedAddonWorkers(t *testing.T) {
	c := newManagerCommand()
	require.NoError(t, c.ParseFlags([]string{"--addon-workers=8"}))
	assert.NotEmpty(t, c.Flags().Lookup("addon-workers").Deprecated, "marked deprecated: hidden from --help, a notice when used")
}
