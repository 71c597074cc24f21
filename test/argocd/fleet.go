package argocd

import (
	"context"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// Fleet is real Argo CD on a harness fleet with gitops-addon: the hub's own, and on each
// spoke the GitOps operator and the instance it made.
type Fleet struct {
	Hub       *Instance
	Spokes    map[string]*Instance
	Operators map[string]*harness.Process
	// Repo holds Apps, served as file://.
	Repo *Repo
}

// Start runs the hub's Argo CD, creates the Git repository (in the fleet's directory)
// with Apps, and, as soon as gitops-addon has delivered them, each spoke's GitOps
// operator (its init containers with agentBinary, gitops-addon) and the Argo CD it
// makes; each spoke process stops with its workload.
func Start(ctx context.Context, f *harness.Fleet, agentBinary string, spokes ...*harness.Spoke) (*Fleet, error) {
	crds, err := HubCRDFiles()
	if err != nil {
		return nil, err
	}
	a := &Fleet{Spokes: map[string]*Instance{}, Operators: map[string]*harness.Process{}}
	if a.Hub, err = StartHub(ctx, f, crds); err != nil {
		return nil, fmt.Errorf("starting the hub's Argo CD: %w", err)
	}
	if a.Repo, err = NewRepo(filepath.Join(f.WorkDir, "git")); err != nil {
		return nil, err
	}
	if _, err := a.Repo.Commit("applications", Apps); err != nil {
		return nil, err
	}
	for _, s := range spokes {
		if a.Operators[s.Name], err = StartOperator(ctx, f, s, agentBinary); err != nil {
			return nil, fmt.Errorf("starting the GitOps operator on %s: %w", s.Name, err)
		}
	}
	for _, s := range spokes {
		if a.Spokes[s.Name], err = StartSpoke(ctx, f, s); err != nil {
			return nil, fmt.Errorf("starting the Argo CD the operator made on %s: %w", s.Name, err)
		}
		StopWithWorkloads(ctx, s, a.Operators[s.Name], a.Spokes[s.Name])
	}
	return a, nil
}

// HubCRDFiles are the files of the Argo CD CRDs a hub's Argo CD serves: Application,
// ApplicationSet, AppProject.
func HubCRDFiles() ([]string, error) {
	crdDir, err := testenv.ArgoCDCRDDir()
	if err != nil {
		return nil, err
	}
	var crds []string
	for _, name := range []string{"application-crd.yaml", "applicationset-crd.yaml", "appproject-crd.yaml"} {
		crds = append(crds, filepath.Join(crdDir, name))
	}
	return crds, nil
}

// ApplicationSet is an ApplicationSet document (the seed's) with its template's source
// pointed at path in the fleet's repository.
func (a *Fleet) ApplicationSet(doc []byte, path string) (*unstructured.Unstructured, error) {
	return ApplicationSetFrom(doc, a.Repo.URL(), path)
}

// ApplicationSetFrom is an ApplicationSet document with its template's source pointed at
// path in the repository at repoURL.
func ApplicationSetFrom(doc []byte, repoURL, path string) (*unstructured.Unstructured, error) {
	appSet := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(doc, &appSet.Object); err != nil {
		return nil, err
	}
	if err := unstructured.SetNestedField(appSet.Object, repoURL, "spec", "template", "spec", "source", "repoURL"); err != nil {
		return nil, err
	}
	if err := unstructured.SetNestedField(appSet.Object, path, "spec", "template", "spec", "source", "path"); err != nil {
		return nil, err
	}
	return appSet, nil
}
