package pullmodel

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
)

// pullWork is a pull ManifestWork of a hub Application, at a resourceVersion.
func pullWork(cluster, app, resourceVersion string) *workv1.ManifestWork {
	return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{
		Namespace: cluster, Name: pullnames.WorkName("openshift-gitops", app), ResourceVersion: resourceVersion,
		Annotations: map[string]string{pullnames.AnnotationHubAppNamespace: "openshift-gitops", pullnames.AnnotationHubAppName: app},
	}}
}

// TestOwnCreates: only the watch's echo of the very version created is recognised, once;
// a later version, someone else's work, or a forgotten create is no echo.
func TestOwnCreates(t *testing.T) {
	tests := []struct {
		name    string
		created []*workv1.ManifestWork
		forget  bool
		watched []*workv1.ManifestWork
		want    []bool
	}{
		{
			name:    "the echo of a create, once",
			created: []*workv1.ManifestWork{pullWork("cluster1", "a", "10")},
			watched: []*workv1.ManifestWork{pullWork("cluster1", "a", "10"), pullWork("cluster1", "a", "10")},
			want:    []bool{true, false},
		},
		{
			name:    "changed since the create (a relist brings a newer version): no echo",
			created: []*workv1.ManifestWork{pullWork("cluster1", "a", "10")},
			watched: []*workv1.ManifestWork{pullWork("cluster1", "a", "11")},
			want:    []bool{false},
		},
		{
			name:    "another work, or the same name in another cluster: no echo",
			created: []*workv1.ManifestWork{pullWork("cluster1", "a", "10")},
			watched: []*workv1.ManifestWork{pullWork("cluster1", "b", "10"), pullWork("cluster2", "a", "10"), pullWork("cluster1", "a", "10")},
			want:    []bool{false, false, true},
		},
		{
			name:    "forgotten once a reconcile has read it: no echo",
			created: []*workv1.ManifestWork{pullWork("cluster1", "a", "10")},
			forget:  true,
			watched: []*workv1.ManifestWork{pullWork("cluster1", "a", "10")},
			want:    []bool{false},
		},
		{
			name:    "a create without a resourceVersion is not remembered",
			created: []*workv1.ManifestWork{pullWork("cluster1", "a", "")},
			watched: []*workv1.ManifestWork{pullWork("cluster1", "a", "")},
			want:    []bool{false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var own ownCreates
			for _, w := range tt.created {
				own.created(w)
			}
			if tt.forget {
				own.forget(types.NamespacedName{Namespace: "cluster1", Name: pullnames.WorkName("openshift-gitops", "a")})
			}
			var got []bool
			for _, w := range tt.watched {
				got = append(got, own.echo(w))
			}
			assert.Equal(t, tt.want, got)
			assert.Empty(t, own.versions, "nothing is left behind")
		})
	}
}

// TestForWorkChanges: a ManifestWork event wakes its hub Application (on a change of the
// annotations, the one named before too), except the echo of the controller's own create.
func TestForWorkChanges(t *testing.T) {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	type workHandler = handler.TypedEventHandler[*workv1.ManifestWork, reconcile.Request]
	app := func(name string) string { return "openshift-gitops/" + name }
	tests := []struct {
		name string
		own  *workv1.ManifestWork
		fire func(h workHandler, q queue)
		want []string
	}{
		{
			name: "the echo of our create: nothing",
			own:  pullWork("cluster1", "a", "10"),
			fire: func(h workHandler, q queue) {
				h.Create(context.Background(), event.TypedCreateEvent[*workv1.ManifestWork]{Object: pullWork("cluster1", "a", "10")}, q)
			},
		},
		{
			name: "a work someone else created: its Application",
			own:  pullWork("cluster1", "a", "10"),
			fire: func(h workHandler, q queue) {
				h.Create(context.Background(), event.TypedCreateEvent[*workv1.ManifestWork]{Object: pullWork("cluster1", "b", "12")}, q)
			},
			want: []string{app("b")},
		},
		{
			name: "at start-up (the initial list): its Application",
			fire: func(h workHandler, q queue) {
				h.Create(context.Background(), event.TypedCreateEvent[*workv1.ManifestWork]{Object: pullWork("cluster1", "a", "10"), IsInInitialList: true}, q)
			},
			want: []string{app("a")},
		},
		{
			name: "a status update of our work: its Application",
			own:  pullWork("cluster1", "a", "10"),
			fire: func(h workHandler, q queue) {
				h.Update(context.Background(), event.TypedUpdateEvent[*workv1.ManifestWork]{
					ObjectOld: pullWork("cluster1", "a", "10"), ObjectNew: pullWork("cluster1", "a", "11")}, q)
			},
			want: []string{app("a")},
		},
		{
			name: "annotations changed to another Application: both",
			fire: func(h workHandler, q queue) {
				h.Update(context.Background(), event.TypedUpdateEvent[*workv1.ManifestWork]{
					ObjectOld: pullWork("cluster1", "a", "10"), ObjectNew: pullWork("cluster1", "b", "11")}, q)
			},
			want: []string{app("a"), app("b")},
		},
		{
			name: "deleted: its Application",
			own:  pullWork("cluster1", "a", "10"),
			fire: func(h workHandler, q queue) {
				h.Delete(context.Background(), event.TypedDeleteEvent[*workv1.ManifestWork]{Object: pullWork("cluster1", "a", "10")}, q)
			},
			want: []string{app("a")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			own := &ownCreates{}
			if tt.own != nil {
				own.created(tt.own)
			}
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			tt.fire(forWorkChanges(own), q)
			var got []string
			for q.Len() > 0 {
				item, _ := q.Get()
				got = append(got, item.String())
				q.Done(item)
			}
			assert.ElementsMatch(t, tt.want, got)
		})
	}
}
