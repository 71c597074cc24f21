package ownership

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestRecentCreatesExpire(t *testing.T) {
	now := time.Now()
	r := recentCreates{now: func() time.Time { return now }}
	key := client.ObjectKey{Namespace: "c1", Name: "gitops-addon"}
	assert.False(t, r.created("ManagedClusterAddOn", key))
	r.add("ManagedClusterAddOn", key)
	assert.True(t, r.created("ManagedClusterAddOn", key))
	assert.False(t, r.created("Secret", key), "per kind")
	now = now.Add(recentCreateTTL + time.Second)
	assert.False(t, r.created("ManagedClusterAddOn", key), "trusted only for a while: an object deleted meanwhile is created again")
	r.add("ManagedClusterAddOn", key)
	r.seen("ManagedClusterAddOn", key)
	assert.False(t, r.created("ManagedClusterAddOn", key), "dropped once the cache has it")
}
