package install

import (
	"context"

	"fmt"
	"path/filepath"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

const (
	// ReleaseName is the manager chart's Helm release in the tests.
	ReleaseName = "gitops-addon"
	// uninstallHookJob is the chart's pre-delete hook Job and its ServiceAccount.
	uninstallHookJob = "gitops-addon-uninstall"
)

// HelmConfig is a Helm action configuration for a kubeconfig file and a namespace, with
// releases stored as Secrets, as the helm CLI does.
func HelmConfig(kubeconfig, namespace string, logf func(string, ...any)) (*action.Configuration, error) {
	settings := cli.New()
	settings.KubeConfig = kubeconfig
	settings.SetNamespace(namespace)
	cfg := &action.Configuration{}
	if err := cfg.Init(settings.RESTClientGetter(), namespace, "secret", logf); err != nil {
		return nil, fmt.Errorf("configuring Helm for %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

// installRelease is `helm install gitops-addon charts/gitops-addon -n
// open-cluster-management-addon --create-namespace` on the hub: CRDs, RBAC, the
// ClusterManagementAddOn and the manager Deployment (whose pod never runs: StartManager
// runs the manager as a process).
func installRelease(ctx context.Context, hub *harness.Cluster) error {
	cfg, err := HelmConfig(hub.Kubeconfig, Namespace, func(string, ...any) {})
	if err != nil {
		return err
	}
	chart, err := loader.Load(filepath.Join(testenv.RepoRoot(), "charts", "gitops-addon"))
	if err != nil {
		return fmt.Errorf("loading the manager chart: %w", err)
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.CreateNamespace = ReleaseName, Namespace, true
	install.Timeout = 2 * time.Minute
	if _, err := install.RunWithContext(ctx, chart, map[string]any{}); err != nil {
		return fmt.Errorf("helm install %s: %w", ReleaseName, err)
	}
	return nil
}

// UninstallRelease is `helm uninstall gitops-addon -n open-cluster-management-addon` on
// the hub, with what a kubelet would do meanwhile: the chart's pre-delete hook Job runs
// as a process with its ServiceAccount's token (`gitops-addon uninstall --yes`), the
// manager process stops (SIGTERM, so it releases its leader Lease) once its Deployment
// is scaled to 0, and the Job is marked complete from the process's exit, which is what
// Helm waits for. It returns the hook's output.
func (p *Product) UninstallRelease(ctx context.Context, timeout time.Duration) (string, error) {
	cfg, err := HelmConfig(p.Fleet.Hub.Kubeconfig, Namespace, func(string, ...any) {})
	if err != nil {
		return "", err
	}
	uninstalled := make(chan error, 1)
	go func() {
		uninstall := action.NewUninstall(cfg)
		uninstall.Timeout = timeout
		_, err := uninstall.Run(ReleaseName)
		uninstalled <- err
	}()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stopped := p.stopManagerWhenScaledDown(ctx)
	hook, out, err := p.runUninstallHook(ctx)
	if err != nil {
		return out, err
	}
	if err := finishJob(ctx, p.Fleet.Hub.Client, hook, true, ""); err != nil {
		return out, err
	}
	if err := <-stopped; err != nil {
		return out, err
	}
	if err := <-uninstalled; err != nil {
		return out, fmt.Errorf("helm uninstall %s: %w", ReleaseName, err)
	}
	return out, nil
}

// stopManagerWhenScaledDown stops the manager process once its Deployment asks for no
// replica, as the kubelet would stop the pod.
func (p *Product) stopManagerWhenScaledDown(ctx context.Context) <-chan error {
	done := make(chan error, 1)
	go func() {
		err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			d := &appsv1.Deployment{}
			if err := p.Fleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: managerName}, d); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			return d.Spec.Replicas != nil && *d.Spec.Replicas == 0, nil
		})
		if err != nil {
			done <- fmt.Errorf("the uninstall never scaled the manager Deployment to 0: %w", err)
			return
		}
		if p.Manager != nil {
			err = p.Manager.Stop()
			p.Manager = nil
		}
		done <- err
	}()
	return done
}

// runUninstallHook waits for the hook Job, runs its container's arguments as a process
// with the Job's ServiceAccount and returns the Job and the process's output.
func (p *Product) runUninstallHook(ctx context.Context) (*batchv1.Job, string, error) {
	hub := p.Fleet.Hub
	job := &batchv1.Job{}
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		return hub.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: uninstallHookJob}, job) == nil, nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("helm uninstall created no pre-delete hook Job %s/%s: %w", Namespace, uninstallHookJob, err)
	}
	spec := job.Spec.Template.Spec
	kubeconfig, err := hub.ServiceAccountKubeconfig(ctx, Namespace, spec.ServiceAccountName)
	if err != nil {
		return nil, "", err
	}
	args := append([]string{p.Binary}, replaceFlags(spec.Containers[0].Args, map[string]string{"--kubeconfig": kubeconfig})...)
	proc, err := p.Fleet.StartProcess("hub-"+uninstallHookJob, args)
	if err != nil {
		return nil, "", fmt.Errorf("starting the uninstall hook: %w", err)
	}
	err = proc.Wait(ctx)
	out := proc.Tail(100)
	if err != nil {
		return nil, out, fmt.Errorf("the uninstall hook failed: %w", err)
	}
	return job, out, nil
}
