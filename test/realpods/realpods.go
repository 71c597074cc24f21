// Package realpods installs gitops-addon on a fleet whose clusters run real pods, as users
// install it: the image built from our Dockerfile, the chart installed with the real helm
// CLI, the addon enabled with the seed Placement and GitOpsCluster; every spoke then runs
// what the addon's ManifestWork delivers (agent, GitOps operator, the Argo CD the operator
// makes) as pods, with the rendered manifests unchanged. The only settings that differ
// from a default installation are the ones a user with an image mirror sets too: which
// images (chart values for the manager, the agent and the operator, an
// AddOnDeploymentConfig for Argo CD's) and the manager's pull policy. The end-to-end test
// and `make demo REAL_PODS=1` use it.
package realpods

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-addon/gitops-addon/test/argocd"
	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/imagebuild"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// ProductImage is the image built from our Dockerfile, as the nodes know it; with no
// registry, the chart is installed with pullPolicy Never.
const (
	productRepository = "local.gitops-addon/gitops-addon"
	productTag        = "e2e"
	ProductImage      = productRepository + ":" + productTag
)

// ImagesConfig names the AddOnDeploymentConfig the chart makes every cluster's default:
// Argo CD's and redis's images for the ArgoCD CR.
const ImagesConfig = "real-pod-images"

// Fleet is a real-pod harness fleet with a node per cluster.
type Fleet struct {
	*harness.Fleet
	// Nodes are the clusters' nodes by cluster name (the hub's under its name, "hub").
	Nodes map[string]*harness.Node
	// Spokes are the spokes in the order given.
	Spokes []*harness.Spoke
	// Repo is the applications' repository (ApplySeedApplicationSet), served at RepoURL.
	Repo    *argocd.Repo
	RepoURL string
	// HubArgoCD is the hub's Argo CD (StartHubArgoCD), processes as in every fleet.
	HubArgoCD *argocd.Instance

	// gitopsArchives are the GitOps operator's and Argo CD's images, imported into the
	// spokes' nodes (and by ImportGitOpsImages into another's).
	gitopsArchives []string
}

// Start gives the hub of a RealPods fleet a node, adds the spokes each with its node, and
// imports the images they run: ours (built from the Dockerfile) everywhere, the GitOps
// operator's and Argo CD's on the spokes. workDir holds the image build.
func Start(ctx context.Context, f *harness.Fleet, workDir string, spokes ...string) (*Fleet, error) {
	if err := checkFreeSpace(f.WorkDir, diskPerNode*uint64(1+len(spokes))+diskForImages); err != nil {
		return nil, err
	}
	r := &Fleet{Fleet: f, Nodes: map[string]*harness.Node{}}
	f.Bulk(workDir) // image builds and archives: gigabytes, rebuilt by a rerun
	var err error
	if r.Nodes[f.Hub.Name], err = f.AddNode(ctx, f.Hub); err != nil {
		return nil, err
	}
	for _, name := range spokes {
		s, err := f.AddSpoke(ctx, name)
		if err != nil {
			return nil, err
		}
		r.Spokes = append(r.Spokes, s)
		if r.Nodes[name], err = f.AddNode(ctx, s.Cluster); err != nil {
			return nil, err
		}
	}
	f.Logf("the gitops-addon image from the Dockerfile (buildah; reused from %s while its inputs are unchanged), imported into the nodes", imageCacheDir())
	product, err := ProductImageArchive(ctx, workDir)
	if err != nil {
		return nil, err
	}
	// Each image is written once (the Argo CD ones carry a root filesystem of hundreds of
	// megabytes) and imported into every node that runs it.
	spokeArchives, err := writeSpokeImages(f.BinDir(), filepath.Join(workDir, "images"))
	if err != nil {
		return nil, err
	}
	r.gitopsArchives = spokeArchives
	podcheck, err := harness.BuildPodcheckImage(ctx, workDir)
	if err != nil {
		return nil, err
	}
	podcheckArchive, err := podcheck.WriteDockerArchiveIn(filepath.Join(workDir, "images"))
	if err != nil {
		return nil, err
	}
	for cluster, node := range r.Nodes {
		archives := []string{product}
		if cluster != f.Hub.Name {
			archives = append(archives, podcheckArchive)
			archives = append(archives, spokeArchives...)
		}
		for _, archive := range archives {
			if err := node.Import(ctx, archive); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// ImportGitOpsImages imports the GitOps operator's and Argo CD's images into the node of
// a cluster that is not a spoke (the hub, when it runs an Argo CD of its own as pods).
func (r *Fleet) ImportGitOpsImages(ctx context.Context, cluster string) error {
	node := r.Nodes[cluster]
	if node == nil {
		return fmt.Errorf("cluster %s has no node", cluster)
	}
	for _, archive := range r.gitopsArchives {
		if err := node.Import(ctx, archive); err != nil {
			return err
		}
	}
	return nil
}

// writeSpokeImages writes the GitOps operator's image and Argo CD's into dir and returns
// their archives.
func writeSpokeImages(binDir, dir string) ([]string, error) {
	operator, err := argocd.OperatorImage(binDir)
	if err != nil {
		return nil, err
	}
	argoImages, err := argocd.ArgoCDImages(binDir)
	if err != nil {
		return nil, err
	}
	var archives []string
	for _, image := range append(argoImages, operator) {
		archive, err := image.WriteDockerArchiveIn(dir)
		if err != nil {
			return nil, err
		}
		archives = append(archives, archive)
	}
	return archives, nil
}

// BuildProductImage builds our Dockerfile as it is (imagebuild) and exports the image as
// ProductImage into an archive under dir, which it returns.
func BuildProductImage(ctx context.Context, dir string) (archive string, err error) {
	storage, standIns := filepath.Join(dir, "buildah"), filepath.Join(dir, "stand-ins")
	for _, d := range []string{storage, standIns} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", err
		}
	}
	b, err := imagebuild.New(storage)
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, b.Teardown()) }()
	if err := b.StandIns(standIns); err != nil {
		return "", err
	}
	const tag = "localhost/gitops-addon:e2e"
	if err := b.BuildDockerfile(testenv.RepoRoot(), tag, "v0.0.0-e2e", "e2e"); err != nil {
		return "", err
	}
	archive = filepath.Join(dir, "gitops-addon.tar")
	return archive, b.Export(tag, ProductImage, archive)
}

// StartHubArgoCD runs the hub's Argo CD, with its redis where the nodes' pods reach it:
// InstallChart then points the manager at it (pullModel.resourceTree), and the pulled
// Applications' trees are shown on the hub.
func (r *Fleet) StartHubArgoCD(ctx context.Context) error {
	crds, err := argocd.HubCRDFiles()
	if err != nil {
		return err
	}
	if r.HubArgoCD, err = argocd.StartHub(ctx, r.Fleet, crds); err != nil {
		return fmt.Errorf("starting the hub's Argo CD: %w", err)
	}
	return nil
}

// InstallChart installs the manager on the hub with the helm CLI from our chart, pointed
// at the nodes' images, with the AddOnDeploymentConfig ImagesConfig as every cluster's
// default; and, when the hub's Argo CD runs (StartHubArgoCD), at its redis for the trees.
func (r *Fleet) InstallChart(ctx context.Context) error {
	if err := install.ApplyYAML(ctx, r.Hub.Client, []byte(imagesConfig)); err != nil {
		return err
	}
	helm := filepath.Join(r.BinDir(), "helm")
	args := []string{"install", install.ReleaseName, filepath.Join(testenv.RepoRoot(), "charts", "gitops-addon"),
		"--kubeconfig", r.Hub.Kubeconfig, "--namespace", install.Namespace, "--create-namespace",
		"--set", "image.repository=" + productRepository, "--set", "image.tag=" + productTag, "--set", "image.pullPolicy=Never",
		"--set", "gitopsOperator.image=" + argocd.OperatorImageRef,
		"--set", "addonDeploymentConfig.name=" + ImagesConfig, "--set", "addonDeploymentConfig.namespace=" + install.Namespace}
	if r.HubArgoCD != nil {
		args = append(args, "--set", "pullModel.resourceTree.redisAddress="+r.HubArgoCD.RedisFleetAddress)
	}
	out, err := exec.CommandContext(ctx, helm, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("helm install: %w: %s", err, out)
	}
	return nil
}

// imagesConfig is the AddOnDeploymentConfig ImagesConfig, with its namespace.
var imagesConfig = `
apiVersion: v1
kind: Namespace
metadata: {name: ` + install.Namespace + `}
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata: {name: ` + ImagesConfig + `, namespace: ` + install.Namespace + `}
spec:
  customizedVariables:
  - {name: argoCDImage, value: "` + argocd.ArgoCDImageRef + `"}
  - {name: redisImage, value: "` + argocd.RedisImageRef + `"}
`

// EnableAddon enables the addon on every spoke as users do: the seed Placement and
// GitOpsCluster, each cluster labelled to be selected.
func (r *Fleet) EnableAddon(ctx context.Context) error {
	if err := install.ApplySeed(ctx, r.Hub); err != nil {
		return err
	}
	for _, s := range r.Spokes {
		if err := install.SelectCluster(ctx, r.Hub, s.Name, true); err != nil {
			return err
		}
	}
	return nil
}

// ApplySeedApplicationSet, once the hub's own Argo CD runs (StartHubArgoCD: the user's,
// which gitops-addon does not deliver), commits the applications to a repository served
// over the Git protocol at the fleet's address, where the spokes' repo-server pods reach
// it, and creates the seed ApplicationSet over its guestbook.
func (r *Fleet) ApplySeedApplicationSet(ctx context.Context) (*unstructured.Unstructured, error) {
	if r.HubArgoCD == nil {
		return nil, errors.New("the hub's Argo CD is not running: StartHubArgoCD first")
	}
	var err error
	if r.Repo, err = argocd.NewRepo(filepath.Join(r.WorkDir, "git")); err != nil {
		return nil, err
	}
	apps := maps.Clone(argocd.Apps)
	apps[GuestbookDeploymentFile] = guestbookDeployment
	if _, err := r.Repo.Commit("applications", apps); err != nil {
		return nil, err
	}
	if r.RepoURL, err = r.Repo.Serve(ctx, r.Fleet, harness.FleetIP); err != nil {
		return nil, err
	}
	appSet, err := argocd.ApplicationSetFrom(install.SeedYAML("applicationset.yaml"), r.RepoURL, "guestbook")
	if err != nil {
		return nil, err
	}
	return appSet, r.Hub.Client.Create(ctx, appSet)
}

// GuestbookDeploymentFile is the guestbook's Deployment on a real-pod fleet, beside
// argocd.Apps' guestbook: its Pod runs on each spoke's node (podcheck, the image Start
// imports), so the guestbook's tree, on the spoke and on the hub, goes down to a running
// Pod.
const GuestbookDeploymentFile = "guestbook/deployment.yaml"

// GuestbookDeploymentName names that Deployment; its Pods are named after it.
const GuestbookDeploymentName = "guestbook-web"

var guestbookDeployment = harness.PodcheckDeployment(GuestbookDeploymentName)

// What a real-pod fleet writes, measured on TestRealPods' fleet (hub and two spokes:
// 1.1 GiB in each node's containerd, 0.9 GiB of image builds and archives) with headroom.
const (
	diskPerNode   = 3 << 29 // 1.5 GiB
	diskForImages = 3 << 29
)

// checkFreeSpace refuses to start a fleet that would fill the disk half-way, where the
// error would be a containerd import's "no space left on device" several minutes in.
func checkFreeSpace(dir string, need uint64) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("reading the free space of %s: %w", dir, err)
	}
	if free := st.Bavail * uint64(st.Bsize); free < need { //nolint:gosec // Bsize is positive
		return fmt.Errorf("%s has %.1f GiB free, a real-pod fleet of this size needs %.1f GiB: free some (old fleets' files are in $TMPDIR/gitops-addon-harness-*)",
			dir, float64(free)/(1<<30), float64(need)/(1<<30))
	}
	return nil
}
