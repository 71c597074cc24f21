package gitopscluster

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

// servedSchema is a GitOpsCluster CRD as the apiserver serves it: the status fields its
// schema keeps (nil: all), the others pruned from every write.
type servedSchema struct {
	name string
	kept []string
}

// servedSchemas are the GitOpsCluster CRDs a hub may serve: ours, and Red Hat ACM's,
// which gitops-addon leaves alone (their status schemas: ../shared/fixtures/acm/crds and
// stolostron/multicloud-integrations' release branches).
var servedSchemas = []servedSchema{
	{name: "gitops-addon's CRD"},
	{name: "Red Hat ACM 2.15 and later: no observedGeneration, no cluster counts", kept: []string{"conditions", "lastUpdateTime", "message", "phase"}},
	{name: "Red Hat ACM 2.9 to 2.14: no conditions either", kept: []string{"lastUpdateTime", "message", "phase"}},
}

// pruned is obj as JSON, its status without the fields kept does not name.
func pruned(t *testing.T, obj any, kept []string) []byte {
	data, err := json.Marshal(obj)
	require.NoError(t, err)
	if kept == nil {
		return data
	}
	m := map[string]any{}
	require.NoError(t, json.Unmarshal(data, &m))
	if status, ok := m["status"].(map[string]any); ok {
		for field := range status {
			if !slices.Contains(kept, field) {
				delete(status, field)
			}
		}
	}
	data, err = json.Marshal(m)
	require.NoError(t, err)
	return data
}

// apiserverPruning makes a fake client's GitOpsCluster status writes what a kube-apiserver
// serving schema makes of them: the fields it lacks are pruned from what is stored and
// from the response, which a real client decodes into the object written, leaving those
// fields as they were sent. It counts the status writes.
func apiserverPruning(t *testing.T, schema servedSchema, writes *int) interceptor.Funcs {
	return interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		gc, ok := obj.(*appsv1beta1.GitOpsCluster)
		if !ok || sub != "status" {
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}
		*writes++
		stored := &appsv1beta1.GitOpsCluster{}
		require.NoError(t, json.Unmarshal(pruned(t, gc, schema.kept), stored))
		if err := c.SubResource(sub).Update(ctx, stored, opts...); err != nil {
			return err
		}
		return json.Unmarshal(pruned(t, stored, schema.kept), gc)
	}}
}

// TestSteadyStateWritesNoStatusWhateverTheSchemaKeeps reconciles a GitOpsCluster again and
// again on each schema: the first reconcile writes its status, the next ones, also after a
// change of its metadata, write nothing and record no Event again; a change of the status
// by someone else is set right by one write.
func TestSteadyStateWritesNoStatusWhateverTheSchemaKeeps(t *testing.T) {
	scenarios := []struct {
		name       string
		placement  bool
		wantPhase  string
		wantWords  string
		wantEvents int
	}{
		{name: "Ready", placement: true, wantPhase: "successful", wantWords: "All clusters are registered"},
		{name: "its Placement missing", wantPhase: "failed", wantWords: "PlacementResolved: ", wantEvents: 1},
	}
	for _, schema := range servedSchemas {
		for _, sc := range scenarios {
			t.Run(schema.name+"/"+sc.name, func(t *testing.T) {
				ctx := context.Background()
				gc := gitOpsCluster("gc", "p", false)
				objs := []client.Object{gc}
				if sc.placement {
					objs = append(objs, placementObjects("p", "c1")...)
				}
				stored := fixtures.FakeHub(t, objs...).Build()
				writes := 0
				c := interceptor.NewClient(stored, apiserverPruning(t, schema, &writes))
				recorder := events.NewFakeRecorder(100)
				r := &Reconciler{Client: c, APIReader: c, Recorder: recorder}

				got := reconcileOnce(t, r, gc)
				require.Equal(t, 1, writes, "the first reconcile writes the status")
				assert.Equal(t, sc.wantPhase, got.Status.Phase, "status.phase, which every schema keeps")
				assert.Contains(t, got.Status.Message, sc.wantWords, "status.message, which every schema keeps")
				if schema.kept != nil {
					assert.Zero(t, got.Status.ObservedGeneration, "pruned by the schema")
				}
				emitted := drain(recorder)
				if sc.wantEvents > 0 {
					assert.Contains(t, emitted, "Warning "+appsv1beta1.ReasonPlacementNotFound)
				}

				for range 3 {
					got = reconcileOnce(t, r, got)
				}
				metav1.SetMetaDataAnnotation(&got.ObjectMeta, "example.com/touched", "yes")
				require.NoError(t, stored.Update(ctx, got))
				got = reconcileOnce(t, r, got)
				assert.Equal(t, 1, writes, "a steady state writes no status, also after a change of the metadata")
				assert.Empty(t, drain(recorder), "no Event again")

				got.Status.Phase, got.Status.Message = "edited", "by someone else"
				require.NoError(t, stored.Status().Update(ctx, got))
				got = reconcileOnce(t, r, got)
				assert.Equal(t, 2, writes, "a status changed by someone else is set right")
				assert.Equal(t, sc.wantPhase, got.Status.Phase)
				assert.Contains(t, got.Status.Message, sc.wantWords)
				reconcileOnce(t, r, got)
				assert.Equal(t, 2, writes, "and then stays")
				assert.Empty(t, drain(recorder), "what the manager found did not change: no Event")
			})
		}
	}
}

// TestLastStatus: what a newly computed status is compared with.
func TestLastStatus(t *testing.T) {
	sent := appsv1beta1.GitOpsClusterStatus{ObservedGeneration: 1, SelectedClusters: 2, Phase: "successful", Message: "All clusters are registered.",
		Conditions: []metav1.Condition{{Type: appsv1beta1.ConditionReady, Status: metav1.ConditionTrue, Reason: appsv1beta1.ReasonReady}}}
	// keptByACM is what Red Hat ACM 2.9 to 2.14's schema keeps of sent.
	keptByACM := appsv1beta1.GitOpsClusterStatus{Phase: sent.Phase, Message: sent.Message}
	write := &lastWrite{uid: "uid-1", over: "10", sent: sent, stored: &keptByACM}
	tests := []struct {
		name   string
		write  *lastWrite
		uid    string
		rv     string
		status appsv1beta1.GitOpsClusterStatus
		want   appsv1beta1.GitOpsClusterStatus
	}{
		{name: "no write since the manager started: the stored status", uid: "uid-1", rv: "11", status: keptByACM, want: keptByACM},
		{name: "the stored status is what the last write left: what was sent", write: write, uid: "uid-1", rv: "11", status: keptByACM, want: sent},
		{name: "the metadata changed since, the status did not: what was sent", write: write, uid: "uid-1", rv: "12", status: keptByACM, want: sent},
		{name: "a cached read older than the write: what was sent", write: write, uid: "uid-1", rv: "10", want: sent},
		{name: "the status changed by someone else: the stored status", write: write, uid: "uid-1", rv: "12",
			status: appsv1beta1.GitOpsClusterStatus{Phase: "edited"}, want: appsv1beta1.GitOpsClusterStatus{Phase: "edited"}},
		{name: "another GitOpsCluster of the same name: the stored status", write: write, uid: "uid-2", rv: "11", status: keptByACM, want: keptByACM},
		{name: "the write not read back, the object moved on: the stored status", write: &lastWrite{uid: "uid-1", over: "10", sent: sent},
			uid: "uid-1", rv: "11", status: keptByACM, want: keptByACM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gc := gitOpsCluster("gc", "p", false)
			gc.UID, gc.ResourceVersion, gc.Status = types.UID(tt.uid), tt.rv, tt.status
			r := &Reconciler{}
			if tt.write != nil {
				r.lastWrites.Store(client.ObjectKeyFromObject(gc), tt.write)
			}
			assert.Equal(t, tt.want, r.lastStatus(gc))
		})
	}
}
