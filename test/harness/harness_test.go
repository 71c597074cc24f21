package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestFleetJoinsSpokesReportsClaimsAndAppliesWork starts a hub and two spokes through
// OCM's real join flow, checks that a spoke reports its ClusterClaims and applies a
// ManifestWork, and that Stop leaves no process behind.
func TestFleetJoinsSpokesReportsClaimsAndAppliesWork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	started := time.Now()
	f := StartForTest(t, Options{})
	hubReady := time.Since(started)
	for _, name := range []string{"spoke1", "spoke2"} {
		_, err := f.AddSpoke(ctx, name)
		require.NoError(t, err)
	}
	t.Logf("timing: hub ready in %v, hub + 2 spokes joined in %v", hubReady.Round(100*time.Millisecond), time.Since(started).Round(100*time.Millisecond))

	for _, name := range []string{"spoke1", "spoke2"} {
		mc := &clusterv1.ManagedCluster{}
		require.NoError(t, f.Hub.Client.Get(ctx, client.ObjectKey{Name: name}, mc))
		assert.True(t, meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined), "%s joined", name)
		assert.True(t, meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable), "%s available", name)
		assert.Equal(t, "default", mc.Labels[clusterv1beta2ClusterSetLabel], "%s is in the default ManagedClusterSet", name)
	}
	spoke := f.Spokes["spoke1"]
	t.Run("a ClusterClaim on a spoke reaches its ManagedCluster", func(t *testing.T) {
		claim := &clusterv1alpha1.ClusterClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "harness.example.com"},
			Spec:       clusterv1alpha1.ClusterClaimSpec{Value: "hello"},
		}
		require.NoError(t, spoke.Client.Create(ctx, claim))
		require.Eventually(t, func() bool {
			mc := &clusterv1.ManagedCluster{}
			require.NoError(t, f.Hub.Client.Get(ctx, client.ObjectKey{Name: spoke.Name}, mc))
			for _, c := range mc.Status.ClusterClaims {
				if c.Name == claim.Name && c.Value == claim.Spec.Value {
					return true
				}
			}
			return false
		}, 2*time.Minute, 250*time.Millisecond)
	})
	t.Run("a ManifestWork is applied on its spoke and reported on the hub", func(t *testing.T) {
		testManifestWork(ctx, t, f.Hub, spoke)
	})

	t.Run("an addon registers through the registration agent and gets a hub credential", func(t *testing.T) {
		testAddonRegistration(ctx, t, f.Hub, spoke)
	})

	procs := f.Processes()
	workDir, kept := f.WorkDir, f.opts.KeepWorkDir
	require.NoError(t, f.Stop())
	for _, p := range procs {
		exited, _ := p.Exited()
		assert.True(t, exited, "%s has exited", p.Name)
		assert.ErrorIs(t, syscall.Kill(p.Pid(), 0), syscall.ESRCH, "%s (pid %d) is gone", p.Name, p.Pid())
		assert.ErrorIs(t, syscall.Kill(-p.Pid(), 0), syscall.ESRCH, "nothing is left of %s's process group", p.Name)
	}
	if !kept {
		_, err := os.Stat(workDir)
		assert.True(t, errors.Is(err, os.ErrNotExist), "%s is removed", workDir)
	}
}

// clusterv1beta2ClusterSetLabel is the label OCM's mutating webhook puts on a new
// ManagedCluster for its ManagedClusterSet.
const clusterv1beta2ClusterSetLabel = "cluster.open-cluster-management.io/clusterset"

func testManifestWork(ctx context.Context, t *testing.T, hub *Cluster, spoke *Spoke) {
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "harness-hello"},
		Data:       map[string]string{"greeting": "hello"},
	}
	work := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: spoke.Name, Name: "harness-hello"},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{
			Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Object: cm}}},
		}},
	}
	require.NoError(t, hub.Client.Create(ctx, work))
	require.Eventually(t, func() bool {
		got := &corev1.ConfigMap{}
		return spoke.Client.Get(ctx, client.ObjectKeyFromObject(cm), got) == nil && got.Data["greeting"] == "hello"
	}, 2*time.Minute, 250*time.Millisecond, "the work agent applies the ConfigMap on %s", spoke.Name)
	require.Eventually(t, func() bool {
		got := &workv1.ManifestWork{}
		require.NoError(t, hub.Client.Get(ctx, client.ObjectKeyFromObject(work), got))
		return meta.IsStatusConditionTrue(got.Status.Conditions, workv1.WorkApplied) &&
			meta.IsStatusConditionTrue(got.Status.Conditions, workv1.WorkAvailable)
	}, 2*time.Minute, 250*time.Millisecond, "the ManifestWork is Applied and Available on the hub")
}

// testAddonRegistration plays an addon manager on the hub (addon-framework's part: the
// registration in the ManagedClusterAddOn status, approval of the addon's CSR) and checks
// OCM's part: the registration agent's CSR, the hub kube-controller-manager's signature,
// the <addon>-hub-kubeconfig Secret on the spoke, and that the credential works.
func testAddonRegistration(ctx context.Context, t *testing.T, hub *Cluster, spoke *Spoke) {
	const addon = "harness-addon"
	user := "system:open-cluster-management:cluster:" + spoke.Name + ":addon:" + addon + ":agent:harness"
	mca := &addonv1alpha1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Namespace: spoke.Name, Name: addon},
		// No addon-manager runs in this test to place the agent through an AddOnDeploymentConfig:
		// the deprecated field is the one OCM's registration agent still reads directly.
		Spec: addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: AddonNamespace}, //nolint:staticcheck // SA1019, see above
	}
	require.NoError(t, hub.Client.Create(ctx, mca))
	mca.Status.Registrations = []addonv1alpha1.RegistrationConfig{{
		SignerName: certificatesv1.KubeAPIServerClientSignerName,
		Subject:    addonv1alpha1.Subject{User: user, Groups: []string{"system:open-cluster-management:addon:" + addon}},
	}}
	require.NoError(t, hub.Client.Status().Update(ctx, mca))

	kube, err := kubernetes.NewForConfig(hub.Config)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		csrs, err := kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
			LabelSelector: clusterNameLabel + "=" + spoke.Name + "," + addonNameLabel + "=" + addon,
		})
		require.NoError(t, err)
		for i := range csrs.Items {
			csr := &csrs.Items[i]
			if hasCondition(csr, certificatesv1.CertificateApproved) {
				return true
			}
			csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test",
			})
			_, err := kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
			require.NoError(t, err)
		}
		return false
	}, 2*time.Minute, 250*time.Millisecond, "the registration agent asks for the addon's certificate")

	secret := &corev1.Secret{}
	require.Eventually(t, func() bool {
		err := spoke.Client.Get(ctx, client.ObjectKey{Namespace: AddonNamespace, Name: addon + "-hub-kubeconfig"}, secret)
		return err == nil && len(secret.Data["kubeconfig"]) > 0 && len(secret.Data["tls.crt"]) > 0
	}, 2*time.Minute, 250*time.Millisecond, "the registration agent writes the addon's hub kubeconfig")

	// The kubeconfig names tls.crt and tls.key beside it, as in a mounted Secret.
	dir := t.TempDir()
	for name, data := range secret.Data {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	require.NoError(t, err)
	addonKube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	review, err := addonKube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err, "the addon's certificate authenticates on the hub")
	assert.Equal(t, user, review.Status.UserInfo.Username)
}

// TestProcessRestarts: a process can be killed, started again with its log appended,
// and stopped; Stop and Kill of a stopped process do nothing.
func TestProcessRestarts(t *testing.T) {
	log := filepath.Join(t.TempDir(), "sleep.log")
	p := newProcess("sleep", log, []string{"sleep", "600"}, nil, tierClient)
	require.NoError(t, p.Start())
	first := p.Pid()
	require.Error(t, p.Start(), "a running process cannot be started twice")
	require.NoError(t, p.Kill())
	exited, err := p.Exited()
	assert.True(t, exited)
	assert.Error(t, err, "killed by a signal")
	require.NoError(t, p.Start())
	assert.NotEqual(t, first, p.Pid())
	assert.True(t, p.Running())
	require.NoError(t, p.Restart())
	require.NoError(t, p.Stop())
	require.NoError(t, p.Stop())
	require.NoError(t, p.Kill())
	assert.False(t, p.Running())
	assert.ErrorIs(t, syscall.Kill(p.Pid(), 0), syscall.ESRCH)
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, 3, strings.Count(string(b), "=== harness:"), "one header per start:\n%s", b)
}

// fatalRecorder is a testing.TB whose Fatalf records instead of stopping the test.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...) }

// TestMissingBinariesFailTheTest: a fleet test without its binaries fails, naming the
// make target; a skip would let make test pass without the fleet having run.
func TestMissingBinariesFailTheTest(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	requireBinaries(rec, t.TempDir())
	assert.Contains(t, rec.fatal, "missing from")
	assert.Contains(t, rec.fatal, "make e2e-env")
}

// TestRemoveAllAsTheOwner: a directory a fleet process made without read permission for
// its owner (Argo CD's repo-server makes its temporary directories 0300) is opened up
// before the work directory is removed, so a non-root user's demo leaves nothing behind.
func TestRemoveAllAsTheOwner(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "work")
	locked := filepath.Join(dir, "argocd-repo-server", "tmp", "_argocd-repo")
	require.NoError(t, os.MkdirAll(filepath.Join(locked, "repo"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(locked, "repo", "file"), []byte("x"), 0o644))
	require.NoError(t, os.Chmod(locked, 0o300))

	grantOwner(dir)
	info, err := os.Stat(locked)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "the owner may list it again")

	require.NoError(t, os.Chmod(locked, 0o300))
	require.NoError(t, removeAll(dir))
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "removed")
}
