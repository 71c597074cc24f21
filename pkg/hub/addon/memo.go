package addon

import (
	"crypto/sha256"
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/lru"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// maxRememberedRenders bounds the render memo to the most recently used renders, about
// 100 KB of decoded objects each. addon-framework renders a cluster twice in each sync
// of its ManagedClusterAddOn (its deploy and hook syncers) and syncs it again as OCM and
// the framework update the addon's status in quick succession; a few recent renders per
// deploy worker catch those repeats, and the framework runs one deploy worker. Remembering
// every cluster would cost about 100 MB at 1,000 clusters for renders that are rarely
// repeated once a cluster has settled (measured: 256 remembered renders raised the
// manager's peak RSS from 151 to 180 MiB; 64 were kept while the framework ran 8 workers).
const maxRememberedRenders = 8

// renderInputs is everything a cluster's rendering depends on: the values functions read
// the cluster's labels, annotations (image registries) and claims (flavour), the
// ManagedClusterAddOn's annotations (images), spec and status (install namespace, the
// AddOnDeploymentConfig through its reference and spec hash, registrations, the agent's
// ExistingArgoCD report). Anything
// else a render uses is fixed for the life of the process.
type renderInputs struct {
	Cluster           string
	Labels            map[string]string
	Annotations       map[string]string
	Claims            []clusterv1.ManagedClusterClaim
	AddonNamespace    string
	AddonName         string
	AddonAnnotations  map[string]string
	AddonSpec         addonv1beta1.ManagedClusterAddOnSpec
	ConfigReferences  []addonv1beta1.ConfigReference
	InstallNamespace  string
	Registrations     []addonv1beta1.RegistrationConfig
	DeletionRequested bool
	// Stack is what the agent's ExistingArgoCD report makes of the cluster (StackOf).
	Stack string
}

func inputsKey(cluster *clusterv1.ManagedCluster, addon *addonv1beta1.ManagedClusterAddOn) (string, [32]byte, bool) {
	if cluster == nil || addon == nil {
		return "", [32]byte{}, false
	}
	raw, err := json.Marshal(renderInputs{
		Cluster: cluster.Name, Labels: cluster.Labels, Annotations: cluster.Annotations, Claims: cluster.Status.ClusterClaims,
		AddonNamespace: addon.Namespace, AddonName: addon.Name, AddonAnnotations: addon.Annotations, AddonSpec: addon.Spec,
		ConfigReferences: addon.Status.ConfigReferences, InstallNamespace: addon.Status.Namespace,
		Registrations: addon.Status.Registrations, DeletionRequested: !addon.DeletionTimestamp.IsZero(),
		Stack: StackOf(addon),
	})
	if err != nil {
		return "", [32]byte{}, false
	}
	return addon.Namespace + "/" + addon.Name, sha256.Sum256(raw), true
}

// renderMemo remembers recent renders by their inputs, least recently used first out.
// At 1,000 clusters rendering (Helm's templates, then YAML decoded into objects) was a
// third of the manager's CPU while clusters were being added, mostly for renders whose
// inputs had not changed since the previous one.
type renderMemo struct {
	entries *lru.Cache // "namespace/name" of the ManagedClusterAddOn -> memoEntry
}

type memoEntry struct {
	key     [32]byte
	objects []runtime.Object
}

func newRenderMemo() *renderMemo { return &renderMemo{entries: lru.New(maxRememberedRenders)} }

// render returns copies of the remembered objects when the inputs are unchanged, else
// renders, remembers and returns copies.
func (m *renderMemo) render(
	cluster *clusterv1.ManagedCluster,
	addon *addonv1beta1.ManagedClusterAddOn,
	render func() ([]runtime.Object, error),
) ([]runtime.Object, error) {
	id, key, ok := inputsKey(cluster, addon)
	if !ok {
		return render()
	}
	if cached, hit := m.entries.Get(id); hit && cached.(memoEntry).key == key {
		return deepCopies(cached.(memoEntry).objects), nil
	}
	objects, err := render()
	if err != nil {
		return nil, err
	}
	m.entries.Add(id, memoEntry{key: key, objects: deepCopies(objects)})
	return objects, nil
}

func deepCopies(objects []runtime.Object) []runtime.Object {
	out := make([]runtime.Object, len(objects))
	for i, o := range objects {
		out[i] = o.DeepCopyObject()
	}
	return out
}
