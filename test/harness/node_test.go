package harness

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// TestNodeRunsPods gives the hub a node and runs real pods on it: a Deployment whose
// readiness probe passes, as a non-root user on a read-only root filesystem; a Job that
// reaches it by its Service's DNS name (CoreDNS, kube-proxy) and then the cluster's API
// through the kubernetes Service with its ServiceAccount token. After Stop, nothing of
// the node is left on the machine.
func TestNodeRunsPods(t *testing.T) {
	if err := checkRealPodsHost(); err != nil {
		t.Fatalf("this machine cannot run real pods: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	binDir := testenv.BinDir()
	requireBinaries(t, binDir)
	if missing := missingNodeBinaries(binDir); len(missing) > 0 {
		t.Fatalf("%v missing from %s: run `make pods-env` (make test does)", missing, binDir)
	}
	f, err := Start(ctx, Options{BinDir: binDir, Logf: t.Logf, RealPods: true})
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			if t.Failed() {
				f.DumpLogs(testWriter{t}, 40)
			}
			assert.NoError(t, f.Stop())
		}
	})
	node, err := f.AddNode(ctx, f.Hub)
	require.NoError(t, err)
	podcheck, err := BuildPodcheckImage(ctx, t.TempDir())
	require.NoError(t, err)
	require.NoError(t, node.ImportImage(ctx, podcheck))

	c := f.Hub.Client
	for _, obj := range podObjects() {
		require.NoError(t, c.Create(ctx, obj), "creating %T %s", obj, obj.GetName())
	}

	t.Run("a Deployment's pod runs as its non-root user and its readiness probe passes", func(t *testing.T) {
		require.NoError(t, waitFor(ctx, "Deployment web available", 2*time.Minute, func() (bool, error) {
			d := &appsv1.Deployment{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, d); err != nil {
				return false, err
			}
			return d.Status.AvailableReplicas == 1, nil
		}))
		pods := &corev1.PodList{}
		require.NoError(t, c.List(ctx, pods, client.InNamespace("default"), client.MatchingLabels{"app": "web"}))
		require.Len(t, pods.Items, 1)
		assert.Equal(t, node.Name, pods.Items[0].Spec.NodeName, "scheduled on the node")
		assert.Contains(t, pods.Items[0].Status.PodIP, "10.78.", "an address of the node's pod range")
	})

	t.Run("a Job reaches it by Service name, then the API with its token", func(t *testing.T) {
		require.NoError(t, waitFor(ctx, "Job client complete", 2*time.Minute, func() (bool, error) {
			j := &batchv1.Job{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "client"}, j); err != nil {
				return false, err
			}
			return j.Status.Succeeded == 1, nil
		}), "the client Job's pod logs are in %s", node.Dir)
	})

	stopped = true
	if t.Failed() {
		describeNode(t, ctx, c, node.Name)
		f.DumpLogs(testWriter{t}, 60)
		f.KeepForDiagnosis()
	}
	require.NoError(t, f.Stop())
	assert.Empty(t, f.Leftovers(), "what the node left on the machine after Stop")
}

// podObjects are the test's workload: a Deployment and its Service, a Job that calls both,
// and the Role that lets the Job's ServiceAccount list pods.
func podObjects() []client.Object {
	labels := map[string]string{"app": "web"}
	restricted := &corev1.SecurityContext{
		RunAsNonRoot: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	container := func(args ...string) corev1.Container {
		return corev1.Container{Name: "podcheck", Image: PodcheckImage, ImagePullPolicy: corev1.PullNever, Args: args, SecurityContext: restricted}
	}
	web := container("serve", ":8080")
	web.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1,
	}
	return []client.Object{
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{web}}},
			},
		},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
		},
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pod-reader"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pod-reader"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "default"}},
		},
		&batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "client"},
			Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{container("check", "http://web.default.svc.cluster.local/healthz")},
			}}},
		},
	}
}

// describeNode logs the Node's taints and conditions and every pod's status, for a failing test.
func describeNode(t *testing.T, ctx context.Context, c client.Client, name string) {
	n := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err == nil {
		t.Logf("node %s: taints %v, conditions %+v", name, n.Spec.Taints, n.Status.Conditions)
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods); err == nil {
		for _, p := range pods.Items {
			t.Logf("pod %s/%s on %q: %s %+v %+v", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
		}
	}
}

// TestKubeletRegistersTheNodeWithItsTaints: a node's taints reach kubelet's configuration
// (registerWithTaints), so the Node is tainted from its first registration, before any pod
// can be scheduled on it; a node without taints registers with none.
func TestKubeletRegistersTheNodeWithItsTaints(t *testing.T) {
	only := corev1.Taint{Key: "example.com/only-mine", Value: "yes", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name   string
		taints []corev1.Taint
	}{
		{"no taints", nil},
		{"one taint", []corev1.Taint{only}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &Node{cluster: &Cluster{clientCA: &authority{CertFile: "ca.crt"}}, addrs: addressesOf(1), taints: tc.taints}
			config, err := kubeletConfig(n, "resolv.conf")
			require.NoError(t, err)
			var parsed struct {
				RegisterWithTaints *[]corev1.Taint `json:"registerWithTaints"`
			}
			require.NoError(t, yaml.Unmarshal([]byte(config), &parsed))
			require.NotNil(t, parsed.RegisterWithTaints, "registerWithTaints is a list, never null:\n%s", config)
			assert.Equal(t, append([]corev1.Taint{}, tc.taints...), *parsed.RegisterWithTaints)
		})
	}
}

// TestPodcheckDeploymentIsADeployment: the YAML parses, strictly, as the Deployment it
// says, its taints tolerated; without keys, no tolerations.
func TestPodcheckDeploymentIsADeployment(t *testing.T) {
	for _, tolerate := range [][]string{nil, {"example.com/only-mine"}} {
		d := &appsv1.Deployment{}
		require.NoError(t, yaml.UnmarshalStrict([]byte(PodcheckDeployment("web", tolerate...)), d))
		spec := d.Spec.Template.Spec
		assert.Equal(t, "web", d.Name)
		assert.Equal(t, map[string]string{"app": "web"}, d.Spec.Selector.MatchLabels)
		require.Len(t, spec.Containers, 1)
		assert.Equal(t, PodcheckImage, spec.Containers[0].Image)
		assert.Equal(t, []string{"serve", ":8080"}, spec.Containers[0].Args)
		assert.Len(t, spec.Tolerations, len(tolerate))
		for i, key := range tolerate {
			assert.Equal(t, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}, spec.Tolerations[i])
		}
	}
}
