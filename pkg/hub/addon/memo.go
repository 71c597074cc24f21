package addon

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// maxRememberedRenders bounds the render memo: about 50 KB of decoded objects a cluster.
const maxRememberedRenders = 256

// renderInputs is everything a cluster's rendering depends on: the values functions read
// the cluster's labels, annotations (image registries) and claims (flavour), the
// ManagedClusterAddOn's annotations (images), spec and status (install namespace, the
// AddOnDeploymentConfig through its reference and spec hash, registrations). Anything
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
	})
	if err != nil {
		return "", [32]byte{}, false
	}
	return addon.Namespace + "/" + addon.Name, sha256.Sum256(raw), true
}

// renderMemo remembers recent renders by their inputs. addon-framework renders a cluster
// twice on every sync of its ManagedClusterAddOn, and syncs it several times while OCM
// and the framework update its status: at 1,000 clusters that was most of the manager's
// CPU and allocations, for renders whose inputs had not changed.
type renderMemo struct {
	mu      sync.Mutex
	entries map[string]memoEntry
}

type memoEntry struct {
	key     [32]byte
	objects []runtime.Object
}

func newRenderMemo() *renderMemo { return &renderMemo{entries: map[string]memoEntry{}} }

// render returns copies of the remembered objects when the inputs are unchanged, else
// renders, remembers and returns copies.
func (m *renderMemo) render(cluster *clusterv1.ManagedCluster, addon *addonv1beta1.ManagedClusterAddOn, render func() ([]runtime.Object, error)) ([]runtime.Object, error) {
	id, key, ok := inputsKey(cluster, addon)
	if !ok {
		return render()
	}
	m.mu.Lock()
	entry, hit := m.entries[id]
	m.mu.Unlock()
	if hit && entry.key == key {
		return deepCopies(entry.objects), nil
	}
	objects, err := render()
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if _, known := m.entries[id]; !known && len(m.entries) >= maxRememberedRenders {
		for evicted := range m.entries { // any one: a miss costs only a render
			delete(m.entries, evicted)
			break
		}
	}
	m.entries[id] = memoEntry{key: key, objects: deepCopies(objects)}
	m.mu.Unlock()
	return objects, nil
}

func deepCopies(objects []runtime.Object) []runtime.Object {
	out := make([]runtime.Object, len(objects))
	for i, o := range objects {
		out[i] = o.DeepCopyObject()
	}
	return out
}
