package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
	"github.com/gitops-addon/gitops-addon/test/harness"
)

// The mechanism Red Hat ACM delivers its gitops-addon with, measured on the same hub in
// the same run as ours: an AddOnTemplate that OCM's own addon-manager (the hub's
// ocm-addon process, which runs addon-framework for every template addon) turns into
// ManifestWorks, enabled per cluster the way ACM's GitOpsCluster controller does it (the
// Argo CD cluster Secret, an AddOnDeploymentConfig and a ManagedClusterAddOn, in the
// shapes of ../shared/fixtures/acm). The template carries the very objects our addon
// rendered for a cluster of the run (the GitOps operator, its RBAC, the ArgoCD CR, our
// agent), with the cluster's name as the template's {{CLUSTER_NAME}}, and ACM's own
// registration (a CustomSigner, which needs no hub RBAC per cluster).
const (
	// templateAddon names the template addon, its ClusterManagementAddOn, AddOnTemplate and
	// ManagedClusterAddOns: ours is gitops-addon, on the same hub.
	templateAddon = "gitops-template"
	// templateConfig names each cluster's AddOnDeploymentConfig (ACM: gitops-addon-config).
	templateConfig = "gitops-template-config"
	// templateWriters is how many clusters the stand-in for ACM's GitOpsCluster controller
	// enables at once: as many as ours (ACM's controller loops over the clusters one by
	// one, so this flatters the mechanism, never ours).
	templateWriters = 16
)

// templateRun is what the template phase measured.
type templateRun struct {
	propagation            time.Duration
	secrets, addons, works *target
	worksPerCluster        int
	writes                 []harness.AuditEvent
	use                    hubUse
	sizes                  workSizes
	timeline               []string
}

// spokeManifests returns the objects of our addon's ManifestWorks on cluster, the
// cluster's name replaced by the template variable {{CLUSTER_NAME}}.
func spokeManifests(b *testing.B, ctx context.Context, c client.Client, cluster string) []workv1.Manifest {
	works := &workv1.ManifestWorkList{}
	require.NoError(b, c.List(ctx, works, client.InNamespace(cluster), addonWorks()))
	require.NotEmpty(b, works.Items, "no ManifestWork of the addon on %s", cluster)
	var manifests []workv1.Manifest
	for _, w := range works.Items {
		for _, m := range w.Spec.Workload.Manifests {
			raw := m.Raw
			if raw == nil {
				var err error
				raw, err = json.Marshal(m.Object)
				require.NoError(b, err)
			}
			// The template engine replaces every {{NAME}}: an object of ours that holds
			// one would not survive it, and the comparison would be unfair.
			require.False(b, bytes.Contains(raw, []byte("{{")), "a rendered object of %s holds {{: %s", w.Name, raw)
			raw = bytes.ReplaceAll(raw, []byte(cluster), []byte("{{CLUSTER_NAME}}"))
			manifests = append(manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
		}
	}
	return manifests
}

// acmFixture decodes the documents of one file of ../shared/fixtures/acm, as they are
// (unstructured: a typed object would send the zero values of the fields it left out).
func acmFixture(b *testing.B, path string) []*unstructured.Unstructured {
	raw, err := os.ReadFile(filepath.Join(fixtures.Dir(b, "acm"), path))
	require.NoError(b, err)
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var objects []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err == io.EOF {
			return objects
		} else {
			require.NoError(b, err, "decoding %s", path)
		}
		if len(obj.Object) > 0 {
			objects = append(objects, obj)
		}
	}
}

// templateAddonObjects are the AddOnTemplate (our spoke objects, ACM's registration) and
// ACM's ClusterManagementAddOn (supported configs: AddOnDeploymentConfig, and the
// AddOnTemplate by default), renamed to templateAddon.
func templateAddonObjects(b *testing.B, manifests []workv1.Manifest) (*addonv1alpha1.AddOnTemplate, *unstructured.Unstructured) {
	objects := acmFixture(b, "addon/clusterManagementAddon.yaml")
	require.Len(b, objects, 1)
	cma := objects[0]
	cma.SetName(templateAddon)
	configs, _, err := unstructured.NestedSlice(cma.Object, "spec", "supportedConfigs")
	require.NoError(b, err)
	for _, config := range configs {
		if def, ok := config.(map[string]any)["defaultConfig"].(map[string]any); ok {
			def["name"] = templateAddon
		}
	}
	require.NoError(b, unstructured.SetNestedSlice(cma.Object, configs, "spec", "supportedConfigs"))
	tpl := &addonv1alpha1.AddOnTemplate{}
	tpl.Name = templateAddon
	tpl.Spec.AddonName = templateAddon
	tpl.Spec.AgentSpec.Workload.Manifests = manifests
	tpl.Spec.Registration = []addonv1alpha1.RegistrationSpec{{
		Type: addonv1alpha1.RegistrationTypeCustomSigner,
		CustomSigner: &addonv1alpha1.CustomSignerRegistrationConfig{
			SignerName: "open-cluster-management.io/argocd-agent-addon",
			SigningCA:  addonv1alpha1.SigningCARef{Name: "argocd-agent-ca", Namespace: argoNS},
		},
	}}
	return tpl, cma
}

// acmClusterObjects are what ACM's GitOpsCluster controller writes in a cluster's
// namespace besides the cluster Secret: the AddOnDeploymentConfig and the
// ManagedClusterAddOn that uses it (../shared/fixtures/acm/derived), renamed, for
// cluster.
func acmClusterObjects(b *testing.B, objects []*unstructured.Unstructured, cluster string) []client.Object {
	var out []client.Object
	for _, o := range objects {
		obj := o.DeepCopy()
		obj.SetNamespace(cluster)
		switch obj.GetKind() {
		case "AddOnDeploymentConfig":
			obj.SetName(templateConfig)
		case "ManagedClusterAddOn":
			obj.SetName(templateAddon)
			configs, _, err := unstructured.NestedSlice(obj.Object, "spec", "configs")
			require.NoError(b, err)
			for _, config := range configs {
				config.(map[string]any)["name"] = templateConfig
				config.(map[string]any)["namespace"] = cluster
			}
			require.NoError(b, unstructured.SetNestedSlice(obj.Object, configs, "spec", "configs"))
		default:
			b.Fatalf("derived/gitops-addon-config-adc-and-mca.yaml: unexpected %s", obj.GetKind())
		}
		out = append(out, obj)
	}
	return out
}

// runTemplatePhase installs the template addon (not timed: ACM installs it once), then
// times enabling it on every cluster until each has its Secret, its ManagedClusterAddOn
// and its ManifestWorks.
func runTemplatePhase(b *testing.B, ctx context.Context, f *harness.Fleet, c client.Client, clusters []string,
	secretFiles []string, manifests []workv1.Manifest, poll time.Duration, alive func()) templateRun {
	require.Len(b, secretFiles, len(clusters), "one cluster Secret of ours per cluster")
	tpl, cma := templateAddonObjects(b, manifests)
	require.NoError(b, c.Create(ctx, tpl))
	require.NoError(b, c.Create(ctx, cma))
	acmObjects := acmFixture(b, "derived/gitops-addon-config-adc-and-mca.yaml")
	require.Len(b, acmObjects, 2, "derived/gitops-addon-config-adc-and-mca.yaml: an AddOnDeploymentConfig and a ManagedClusterAddOn")
	acmClusterObjects(b, acmObjects, clusters[0]) // fails here, not in a writer, on a fixture it does not know
	// OCM's addon-manager starts the template's addon manager when it sees the
	// ClusterManagementAddOn; give it the moment a real hub had long before.
	time.Sleep(5 * time.Second)

	progress("template phase: enabling %s on %d clusters, %d at a time", templateAddon, len(clusters), templateWriters)
	var run templateRun
	before := sampleHubUse(b, f)
	start := time.Now()
	parallel(len(clusters), templateWriters, func(i int) error {
		secret := &corev1.Secret{}
		raw, err := os.ReadFile(secretFiles[i])
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, secret); err != nil {
			return err
		}
		secret.Name = strings.Replace(secret.Name, "floor-", "acm-", 1)
		if err := c.Create(ctx, secret); err != nil {
			return err
		}
		for _, obj := range acmClusterObjects(b, acmObjects, clusters[i]) {
			if err := c.Create(ctx, obj); err != nil {
				return err
			}
		}
		return nil
	})
	acmSecrets := client.MatchingLabels{contract.LabelManagedBy: floorManagedBy}
	run.secrets = &target{name: "secrets", done: func() (bool, string) {
		got := total(countByNamespace(b, ctx, c, secretGVK, "", client.InNamespace(argoNS), acmSecrets))
		return got == len(clusters), fmt.Sprintf("%d of %d", got, len(clusters))
	}}
	run.addons = &target{name: "addons", done: func() (bool, string) {
		got := total(countByNamespace(b, ctx, c, addonGVK, templateAddon))
		return got == len(clusters), fmt.Sprintf("%d of %d", got, len(clusters))
	}}
	run.works = &target{name: "works", done: func() (bool, string) {
		byNS := countByNamespace(b, ctx, c, workGVK, "", templateWorks())
		_, same := uniform(byNS)
		return len(byNS) == len(clusters) && same, fmt.Sprintf("%d works on %d clusters, want %d clusters", total(byNS), len(byNS), len(clusters))
	}}
	run.propagation = converge(b, "the template addon's propagation", start, 30*time.Minute, poll, alive, run.secrets, run.addons, run.works)
	end := time.Now()
	run.use = sampleHubUse(b, f).since(before)
	run.writes = writesBetween(b, f.Hub, "", start, end)
	run.timeline = timelineOf(b, f.Hub, start, end, []auditUser{{hubAdmin, "hub admin"}})
	run.worksPerCluster, _ = uniform(countByNamespace(b, ctx, c, workGVK, "", templateWorks()))
	run.sizes = measureWorks(b, ctx, c, templateWorks())
	return run
}

// ran: the phase ran (FLEET_BENCH_TEMPLATE=off leaves it out).
func (r templateRun) ran() bool { return r.works != nil }

func templateWorks() client.MatchingLabels {
	return client.MatchingLabels{addonv1beta1.AddonLabelKey: templateAddon}
}

// measureWorks sums the bytes of the ManifestWorks with those labels (whole objects
// without managedFields, and spec).
func measureWorks(b *testing.B, ctx context.Context, c client.Client, labels client.MatchingLabels) workSizes {
	var sizes workSizes
	eachPage(b, ctx, c, &workv1.ManifestWorkList{}, 20, []client.ListOption{labels}, func(l client.ObjectList) {
		for _, w := range l.(*workv1.ManifestWorkList).Items {
			sizes.add(b, w)
		}
	})
	return sizes
}

// add counts one ManifestWork: the whole object without managedFields, and its spec.
func (sizes *workSizes) add(b *testing.B, w workv1.ManifestWork) {
	w.ManagedFields = nil
	raw, err := json.Marshal(&w)
	require.NoError(b, err)
	spec, err := json.Marshal(&w.Spec)
	require.NoError(b, err)
	sizes.object += int64(len(raw))
	sizes.spec += int64(len(spec))
}

// hubUse is the CPU time of the hub's apiserver, etcd and OCM's addon-manager (which
// runs the template addon), and their peak resident sets.
type hubUse struct {
	apiserverCPU, etcdCPU, addonManagerCPU time.Duration
	apiserverRSS, etcdRSS, addonManagerRSS int64
}

// hubProcesses are the processes hubUse reads, by the harness's names.
var hubProcesses = []string{"hub-kube-apiserver", "etcd", "hub-addon-manager"}

func sampleHubUse(b *testing.B, f *harness.Fleet) hubUse {
	var u hubUse
	cpus := []*time.Duration{&u.apiserverCPU, &u.etcdCPU, &u.addonManagerCPU}
	rss := []*int64{&u.apiserverRSS, &u.etcdRSS, &u.addonManagerRSS}
	for i, name := range hubProcesses {
		peak, cpu, err := procStats(f.Process(name).Pid())
		require.NoError(b, err, "reading /proc of %s", name)
		*cpus[i], *rss[i] = cpu, peak
	}
	return u
}

// since is the CPU spent from before to u, with u's peaks.
func (u hubUse) since(before hubUse) hubUse {
	u.apiserverCPU -= before.apiserverCPU
	u.etcdCPU -= before.etcdCPU
	u.addonManagerCPU -= before.addonManagerCPU
	return u
}

// etcdDBSize reads etcd's database size (etcd_mvcc_db_total_size_in_bytes) and the part
// in use from its /metrics.
func etcdDBSize(b *testing.B, ctx context.Context, f *harness.Fleet) (total, inUse int64) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.EtcdURL()+"/metrics", nil)
	require.NoError(b, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(b, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b, err)
	scanner := bufio.NewScanner(bytes.NewReader(body))
	for scanner.Scan() {
		name, value, ok := strings.Cut(scanner.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch name {
		case "etcd_mvcc_db_total_size_in_bytes":
			total = int64(v)
		case "etcd_mvcc_db_total_size_in_use_in_bytes":
			inUse = int64(v)
		}
	}
	return total, inUse
}

// writesByUser counts writes by the user who made them, shortened: "manager 4012,
// hub admin 5120".
func writesByUser(events []harness.AuditEvent) string {
	counts := map[string]int{}
	var order []string
	for _, e := range events {
		user := shortUser(e.User.Username)
		if counts[user] == 0 {
			order = append(order, user)
		}
		counts[user]++
	}
	parts := make([]string, len(order))
	for i, u := range order {
		parts[i] = fmt.Sprintf("%s %d", u, counts[u])
	}
	return strings.Join(parts, ", ")
}

func shortUser(user string) string {
	switch user {
	case managerUser:
		return "manager"
	case hubAdmin:
		return "hub admin"
	}
	return user
}

// perCluster formats a count divided by the number of clusters.
func perCluster(count, clusters int) string {
	return fmt.Sprintf("%.1f", float64(count)/float64(clusters))
}
