package contract

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWithoutArgoCDResourcesFinalizers(t *testing.T) {
	in := []string{"resources-finalizer.argocd.argoproj.io/foreground", "example.com/keep", "resources-finalizer.argocd.argoproj.io"}
	assert.Equal(t, []string{"example.com/keep"}, WithoutArgoCDResourcesFinalizers(in))
	assert.Len(t, in, 3, "the input is not changed")
	assert.Empty(t, WithoutArgoCDResourcesFinalizers(nil))
}
