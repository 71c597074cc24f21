package pullmodel

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-addon/gitops-addon/pkg/hub/localcluster"
)

// fakeFacts answers validation's questions from maps.
type fakeFacts struct {
	clusters map[string]bool
	// placed holds "<namespace>/<cluster>".
	placed   map[string]bool
	projects map[string]*unstructured.Unstructured
	// hubs are the clusters that are the hub itself, with the evidence.
	hubs map[string]localcluster.Evidence
	err  error
}

func (f fakeFacts) ClusterExists(_ context.Context, c string) (bool, error) {
	return f.clusters[c], f.err
}
func (f fakeFacts) HubEvidence(_ context.Context, c string) (localcluster.Evidence, error) {
	return f.hubs[c], f.err
}
func (f fakeFacts) ClusterPlaced(_ context.Context, ns, c string) (bool, error) {
	return f.placed[ns+"/"+c], f.err
}
func (f fakeFacts) AppProject(_ context.Context, ns, name string) (*unstructured.Unstructured, error) {
	return f.projects[ns+"/"+name], f.err
}
