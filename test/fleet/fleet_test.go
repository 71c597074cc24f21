package fleet

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestFleetJoinsSpokesAndDeliversWork: two spokes join through OCM's real flow, report
// and apply a ManifestWork; Stop leaves no process behind.
func TestFleetJoinsSpokesAndDeliversWork(t *testing.T) {
	ctx := context.Background()
	started := time.Now()
	f := StartForTest(t, Options{})
	for _, name := range []string{"spoke1", "spoke2"} {
		_, err := f.AddSpoke(ctx, name)
		require.NoError(t, err)
	}
	t.Logf("hub and 2 spokes joined in %v", time.Since(started).Round(time.Second))
	s := f.Spokes["spoke1"]

	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"}, Data: map[string]string{"a": "b"}}
	require.NoError(t, f.Hub.Client.Create(ctx, &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: "spoke1", Name: "hello"},
		Spec:       workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Object: cm}}}}},
	}))
	require.Eventually(t, func() bool {
		return s.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "hello"}, &corev1.ConfigMap{}) == nil
	}, time.Minute, 250*time.Millisecond, "the work agent applies the ConfigMap")
	require.Eventually(t, func() bool {
		w := &workv1.ManifestWork{}
		require.NoError(t, f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: "spoke1", Name: "hello"}, w))
		return meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied) && meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkAvailable)
	}, time.Minute, 250*time.Millisecond, "the work status reaches the hub")

	procs := f.Processes()
	require.NoError(t, f.Stop())
	for _, p := range procs {
		exited, _ := p.Exited()
		assert.True(t, exited, "%s has exited", p.Name)
		assert.ErrorIs(t, syscall.Kill(p.Pid(), 0), syscall.ESRCH, "%s (pid %d) is gone", p.Name, p.Pid())
	}
}
