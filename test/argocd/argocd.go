// Package argocd runs real Argo CD on a harness fleet, built from source by
// `make e2e-env` (hack/build-argocd.sh), with processes standing in for the pods no
// kubelet runs:
//
//   - on the hub, the user's own Argo CD in openshift-gitops (StartHub): Argo CD's CRDs,
//     its minimal configuration, redis, a repo-server, an application controller and the
//     ApplicationSet controller (with progressive syncs, for RollingSync), all as the hub's
//     administrator;
//   - on a spoke, the GitOps operator gitops-addon delivered (StartOperator), run with
//     its Deployment's ServiceAccount, arguments and environment, so that it reconciles
//     the delivered ArgoCD CR with exactly the RBAC the addon grants it; then the
//     application controller and repo-server the operator made (StartSpoke), run with
//     the commands the operator wrote into their StatefulSet and Deployment and with the
//     application controller ServiceAccount's token, so that the argocd-platform-extensions
//     allowlist is exactly what the controller can do;
//   - a Git repository served as file:// (Repo).
package argocd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// Namespace holds the Argo CD instance on the hub and on every spoke.
const Namespace = contract.GitOpsNamespace

// Names of what the operator makes from the ArgoCD CR openshift-gitops.
const (
	ControllerStatefulSet    = contract.ArgoCDName + "-application-controller"
	RepoServerDeployment     = contract.ArgoCDName + "-repo-server"
	ControllerServiceAccount = contract.ArgoCDName + "-argocd-application-controller"
)

// Binaries are what StartHub, StartOperator and StartSpoke run from the fleet's bin
// directory, beside redis-server and git from the system.
var Binaries = []string{"argocd", "argocd-operator"}

// MissingBinaries lists the programs absent from dir and from PATH.
func MissingBinaries(dir string) []string {
	var missing []string
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			missing = append(missing, b)
		}
	}
	for _, b := range []string{"redis-server", "git"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	return missing
}

// Instance is one Argo CD's processes on one cluster.
type Instance struct {
	Cluster *harness.Cluster
	// Redis, RepoServer, Controller and ApplicationSet (hub only, else nil) are its processes.
	Redis, RepoServer, Controller, ApplicationSet *harness.Process
	// ControllerKubeconfig is the application controller's identity.
	ControllerKubeconfig string
	// RedisAddress is where its redis listens, RepoServerAddress its repo-server.
	RedisAddress, RepoServerAddress string
	// RedisFleetAddress is where the pods of a RealPods fleet reach the hub's redis
	// (FleetIP); empty on another fleet and on a spoke.
	RedisFleetAddress string
}

// Stop ends the instance's processes.
func (i *Instance) Stop() error {
	var errs []error
	for _, p := range []*harness.Process{i.ApplicationSet, i.Controller, i.RepoServer, i.Redis} {
		if p != nil {
			errs = append(errs, p.Stop())
		}
	}
	return errors.Join(errs...)
}

// component starts one Argo CD component of the all-in-one binary (its role chosen by
// ARGOCD_BINARY_NAME) with its own temporary and socket directory.
func component(f *harness.Fleet, c *harness.Cluster, role string, args []string, env ...string) (*harness.Process, error) {
	return componentOf(filepath.Join(f.BinDir(), "argocd"), f, c, role, args, env...)
}

// componentOf is component, run from another Argo CD binary.
func componentOf(binary string, f *harness.Fleet, c *harness.Cluster, role string, args []string, env ...string) (*harness.Process, error) {
	return namedComponentOf(binary, f, c, role, role, args, env...)
}

// namedComponentOf is componentOf for a second component of the same role on a cluster:
// name tells its process and its files apart.
func namedComponentOf(binary string, f *harness.Fleet, c *harness.Cluster, role, name string, args []string, env ...string) (*harness.Process, error) {
	dir := filepath.Join(c.Dir, "argocd", name)
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return nil, err
	}
	// Argo CD runs git with GIT_ASKPASS=argocd, found on PATH as in its image: that is
	// how the repo-server hands git a repository's username and password (over HTTP).
	// PATH gets a directory holding only that name, so nothing else of ./bin shadows a tool.
	askPass := filepath.Join(dir, "path")
	if err := os.MkdirAll(askPass, 0o700); err != nil {
		return nil, err
	}
	if err := os.Symlink(filepath.Join(f.BinDir(), "argocd"), filepath.Join(askPass, "argocd")); err != nil && !os.IsExist(err) {
		return nil, err
	}
	env = append([]string{
		"PATH=" + askPass + string(os.PathListSeparator) + os.Getenv("PATH"),
		"ARGOCD_BINARY_NAME=" + role,
		"ARGOCD_GPG_ENABLED=false",
		"ARGOCD_ASK_PASS_SOCK=" + filepath.Join(dir, "askpass.sock"),
		"TMPDIR=" + filepath.Join(dir, "tmp"),
		"HOME=" + dir,
	}, env...)
	return f.StartProcess(c.Name+"-"+name, append([]string{binary}, args...), env...)
}

// startRedis runs redis-server on a free loopback port, without persistence.
func startRedis(ctx context.Context, f *harness.Fleet, c *harness.Cluster, forPods bool) (*harness.Process, string, error) {
	redisServer, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "", fmt.Errorf("redis-server is not installed (`make fleet-env` installs it): %w", err)
	}
	addr := harness.FreeAddress()
	_, port, _ := net.SplitHostPort(addr)
	bind := []string{"--bind", "127.0.0.1"}
	if forPods {
		// Where the nodes' pods reach it (RedisFleetAddress). Without a password redis
		// refuses every address but loopback in its protected mode (connection reset).
		bind = append(bind, harness.FleetIP, "--protected-mode", "no")
	}
	args := append(append([]string{redisServer, "--port", port}, bind...), "--save", "", "--appendonly", "no", "--dir", c.Dir)
	p, err := f.StartProcess(c.Name+"-argocd-redis", args)
	if err != nil {
		return nil, "", err
	}
	return p, addr, waitListening(ctx, p, addr)
}

// startRepoServer runs a repo-server without TLS on a free loopback port; args are the
// operator's (spoke) or none (hub).
func startRepoServer(ctx context.Context, f *harness.Fleet, c *harness.Cluster, args []string, redis string) (*harness.Process, string, error) {
	addr := harness.FreeAddress()
	_, port, _ := net.SplitHostPort(addr)
	args = setFlags(args, map[string]string{
		"--redis": redis, "--address": "127.0.0.1", "--port": port,
		"--metrics-address": "127.0.0.1", "--metrics-port": freePort(),
		// HEAD is resolved again after 5 s instead of 3 min, so a new commit shows within a test.
		"--revision-cache-expiration": "5s",
	})
	p, err := component(f, c, "argocd-repo-server", append(args, "--disable-tls"))
	if err != nil {
		return nil, "", err
	}
	return p, addr, waitListening(ctx, p, addr)
}

// startController runs an application controller with a kubeconfig; the in-cluster
// destination https://kubernetes.default.svc is that kubeconfig's cluster.
func startController(f *harness.Fleet, c *harness.Cluster, args []string, kubeconfig, redis, repoServer string) (*harness.Process, error) {
	args = setFlags(args, map[string]string{
		"--kubeconfig": kubeconfig, "--namespace": Namespace, "--redis": redis, "--repo-server": repoServer,
		"--metrics-port": freePort(),
		// Git is polled every 15 s instead of 2 min, so a new commit shows within a test.
		"--app-resync": "15", "--app-resync-jitter": "1",
		// A failing comparison shows as a condition after 15 s instead of 3 min.
		"--repo-error-grace-period-seconds": "15",
	})
	return component(f, c, "argocd-application-controller", append(args, "--repo-server-plaintext"),
		"KUBECONFIG="+kubeconfig, "ARGOCD_FAKE_IN_CLUSTER=true")
}

// Hub runs the hub's own Argo CD in openshift-gitops as the hub's administrator: Argo
// CD's CRDs and minimal configuration (what argocd-server and the install manifests would
// create), redis, repo-server, application controller and ApplicationSet controller.
func StartHub(ctx context.Context, f *harness.Fleet, crdFiles []string) (*Instance, error) {
	c := f.Hub
	for _, file := range crdFiles {
		doc, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		// Server-side: Argo CD's Application CRD is too large for a client-side apply.
		if err := install.ApplyYAML(ctx, c.Client, doc); err != nil {
			return nil, fmt.Errorf("applying %s: %w", file, err)
		}
	}
	if err := ensureConfig(ctx, c.Client); err != nil {
		return nil, err
	}
	if err := ensureDefaultProject(ctx, c.Client); err != nil {
		return nil, err
	}
	i := &Instance{Cluster: c, ControllerKubeconfig: c.Kubeconfig}
	var redis, repoServer string
	var err error
	// On a RealPods fleet the manager's pod writes the pulled Applications' trees there.
	forPods := f.RealPods()
	if i.Redis, redis, err = startRedis(ctx, f, c, forPods); err != nil {
		return i, err
	}
	i.RedisAddress = redis
	if forPods {
		_, port, _ := net.SplitHostPort(redis)
		i.RedisFleetAddress = net.JoinHostPort(harness.FleetIP, port)
	}
	if i.RepoServer, repoServer, err = startRepoServer(ctx, f, c, nil, redis); err != nil {
		return i, err
	}
	i.RepoServerAddress = repoServer
	if i.Controller, err = startController(f, c, nil, c.Kubeconfig, redis, repoServer); err != nil {
		return i, err
	}
	i.ApplicationSet, err = component(f, c, "argocd-applicationset-controller", []string{
		"--kubeconfig", c.Kubeconfig, "--namespace", Namespace, "--argocd-repo-server", repoServer, "--repo-server-plaintext",
		"--metrics-addr", harness.FreeAddress(), "--probe-addr", harness.FreeAddress(), "--webhook-addr", harness.FreeAddress(),
		// RollingSync (progressive syncs) is off unless asked for, as in a user's Argo CD:
		// the pull model's rollouts across clusters need it on the hub.
		"--enable-progressive-syncs",
	}, "KUBECONFIG="+c.Kubeconfig)
	return i, err
}

// ensureConfig creates what Argo CD's install manifests ship in its namespace: argocd-cm
// (the settings informer only sees it with its part-of label), argocd-secret and
// argocd-rbac-cm.
func ensureConfig(ctx context.Context, c client.Client) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	labels := map[string]string{"app.kubernetes.io/part-of": "argocd"}
	for _, obj := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "argocd-cm", Labels: labels}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "argocd-rbac-cm", Labels: labels}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "argocd-secret", Labels: labels},
			StringData: map[string]string{"server.secretkey": "e2e-only-not-a-secret", "admin.password": adminPasswordHash(),
				"admin.passwordMtime": "2026-01-01T00:00:00Z"}},
	} {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s/%s: %w", Namespace, obj.GetName(), err)
		}
	}
	return nil
}

// adminPasswordHash is AdminPassword as argocd-secret keeps it (bcrypt).
func adminPasswordHash() string {
	hash, err := bcrypt.GenerateFromPassword([]byte(AdminPassword), bcrypt.MinCost)
	if err != nil {
		panic(err) // only for a cost out of range
	}
	return string(hash)
}

// ensureDefaultProject creates the AppProject "default" as argocd-server does at start
// (no argocd-server runs here).
func ensureDefaultProject(ctx context.Context, c client.Client) error {
	p := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": "default", "namespace": Namespace},
		"spec": map[string]any{
			"sourceRepos":              []any{"*"},
			"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
		},
	}}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, p.DeepCopy())
		return err == nil || apierrors.IsAlreadyExists(err), nil
	})
	if err != nil {
		return fmt.Errorf("creating the default AppProject (is the AppProject CRD served?): %w", err)
	}
	return nil
}

// StartOperator runs the GitOps operator gitops-addon delivered to a spoke, once its
// Deployment is there: first its init containers (gitops-addon commands, run with
// agentBinary) to completion, then the operator, each as the Deployment's
// ServiceAccount, with its arguments and environment, health and metrics on loopback,
// without leader election (which needs the pod's namespace).
func StartOperator(ctx context.Context, f *harness.Fleet, s *harness.Spoke, agentBinary string) (*harness.Process, error) {
	d := &appsv1.Deployment{}
	if err := waitGet(ctx, s.Client, client.ObjectKey{Namespace: Namespace, Name: contract.OperatorDeployment}, d, 5*time.Minute); err != nil {
		return nil, fmt.Errorf("waiting for the GitOps operator Deployment on %s: %w", s.Name, err)
	}
	kubeconfig, err := s.ServiceAccountKubeconfig(ctx, Namespace, d.Spec.Template.Spec.ServiceAccountName)
	if err != nil {
		return nil, err
	}
	for _, init := range d.Spec.Template.Spec.InitContainers {
		if err := runToCompletion(ctx, f, s.Name+"-gitops-operator-"+init.Name,
			append([]string{agentBinary}, setFlags(init.Args, map[string]string{"--kubeconfig": kubeconfig})...)); err != nil {
			return nil, err
		}
	}
	container := d.Spec.Template.Spec.Containers[0]
	args := setFlags(withoutFlag(container.Args, "--leader-elect"), map[string]string{
		"--health-probe-bind-address": harness.FreeAddress(), "--metrics-bind-address": harness.FreeAddress(), "--kubeconfig": kubeconfig,
	})
	redisConfig, err := operatorRedisConfig(f.BinDir())
	if err != nil {
		return nil, err
	}
	env := append([]string{"REDIS_CONFIG_PATH=" + redisConfig}, literalEnv(container)...)
	return f.StartProcess(s.Name+"-gitops-operator", append([]string{filepath.Join(f.BinDir(), "argocd-operator")}, args...), env...)
}

// StartSpoke runs the Argo CD the operator made on a spoke, once it has made it: redis,
// the repo-server with its Deployment's arguments, and the application controller with
// its StatefulSet's arguments and ServiceAccount, addresses pointing at these processes
// (the operator's Services have no endpoints without a kubelet). It creates the "default"
// AppProject where argocd-server, which does not run here, would.
func StartSpoke(ctx context.Context, f *harness.Fleet, s *harness.Spoke) (*Instance, error) {
	sts := &appsv1.StatefulSet{}
	if err := waitGet(ctx, s.Client, client.ObjectKey{Namespace: Namespace, Name: ControllerStatefulSet}, sts, 5*time.Minute); err != nil {
		return nil, fmt.Errorf("waiting for the operator to make the application controller on %s: %w", s.Name, err)
	}
	repo := &appsv1.Deployment{}
	if err := waitGet(ctx, s.Client, client.ObjectKey{Namespace: Namespace, Name: RepoServerDeployment}, repo, 2*time.Minute); err != nil {
		return nil, fmt.Errorf("waiting for the operator to make the repo-server on %s: %w", s.Name, err)
	}
	if err := ensureDefaultProject(ctx, s.Client); err != nil {
		return nil, err
	}
	kubeconfig, err := s.ServiceAccountKubeconfig(ctx, Namespace, sts.Spec.Template.Spec.ServiceAccountName)
	if err != nil {
		return nil, err
	}
	i := &Instance{Cluster: s.Cluster, ControllerKubeconfig: kubeconfig}
	var redis, repoServer string
	if i.Redis, redis, err = startRedis(ctx, f, s.Cluster, false); err != nil {
		return i, err
	}
	i.RedisAddress = redis
	if i.RepoServer, repoServer, err = startRepoServer(ctx, f, s.Cluster, componentArgs(repo.Spec.Template.Spec.Containers[0]), redis); err != nil {
		return i, err
	}
	i.Controller, err = startController(f, s.Cluster, componentArgs(sts.Spec.Template.Spec.Containers[0]), kubeconfig, redis, repoServer)
	return i, err
}

// literalEnv is a container's environment as NAME=value, without the variables taken
// from Secrets or fields (none of which the processes here need).
func literalEnv(c corev1.Container) []string {
	var env []string
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	return env
}

// componentArgs are the arguments after the argocd-* program in a container's command
// and args (the operator runs some through an entrypoint script).
func componentArgs(c corev1.Container) []string {
	all := append(append([]string(nil), c.Command...), c.Args...)
	for i, a := range all {
		if strings.HasPrefix(filepath.Base(a), "argocd-") {
			return all[i+1:]
		}
	}
	return nil
}

// operatorRedisConfig is the redis configuration templates folder of the module of the
// operator hack/build-argocd.sh built (its version in argocd-operator.version).
func operatorRedisConfig(binDir string) (string, error) {
	version, err := os.ReadFile(filepath.Join(binDir, "argocd-operator.version"))
	if err != nil {
		return "", fmt.Errorf("reading the version of the built operator (run `make fleet-env`): %w", err)
	}
	dir, err := testenv.ModuleDir("github.com/argoproj-labs/argocd-operator@" + strings.Fields(string(version))[0])
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "build", "redis"), nil
}

// setFlags sets each flag to its value in args, replacing --flag=value and --flag value
// forms, adding it when absent.
func setFlags(args []string, set map[string]string) []string {
	out := args
	for name, value := range set {
		out = append(withoutFlag(out, name), name+"="+value)
	}
	return out
}

// withoutFlag removes --flag, --flag=value and --flag value from args.
func withoutFlag(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == name {
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
			continue
		}
		if strings.HasPrefix(a, name+"=") {
			continue
		}
		out = append(out, a)
	}
	return out
}

func waitGet(ctx context.Context, c client.Client, key client.ObjectKey, obj client.Object, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		return c.Get(ctx, key, obj) == nil, nil
	})
}

// waitListening waits until addr accepts connections, failing early if p exits.
func waitListening(ctx context.Context, p *harness.Process, addr string) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if exited, err := p.Exited(); exited {
			return false, fmt.Errorf("%s exited: %v\n%s", p.Name, err, p.Tail(20))
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, nil
		}
		_ = conn.Close()
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s on %s: %w", p.Name, addr, err)
	}
	return nil
}

// freePort is a free 127.0.0.1 port, alone.
func freePort() string {
	_, port, _ := net.SplitHostPort(harness.FreeAddress())
	return port
}

// StopWithWorkload stops a process standing in for a pod once its workload (Deployment
// or StatefulSet) is deleted or being deleted, as the kubelet stops a pod whose owner
// goes: a test of teardown then sees what the cluster would.
func StopWithWorkload(ctx context.Context, c *harness.Cluster, workload client.Object, p *harness.Process) {
	key := client.ObjectKeyFromObject(workload)
	go func() {
		_ = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, false, func(ctx context.Context) (bool, error) {
			obj := workload.DeepCopyObject().(client.Object)
			err := c.Client.Get(ctx, key, obj)
			if apierrors.IsNotFound(err) || (err == nil && obj.GetDeletionTimestamp() != nil) {
				_ = p.Stop()
				return true, nil
			}
			return false, nil
		})
	}()
}

// StopWithWorkloads ties the operator and the spoke instance's processes to the
// workloads they stand in for (see StopWithWorkload).
func StopWithWorkloads(ctx context.Context, s *harness.Spoke, operator *harness.Process, i *Instance) {
	StopWithWorkload(ctx, s.Cluster, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: contract.OperatorDeployment}}, operator)
	StopWithWorkload(ctx, s.Cluster, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: ControllerStatefulSet}}, i.Controller)
	StopWithWorkload(ctx, s.Cluster, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: RepoServerDeployment}}, i.RepoServer)
	StopWithWorkload(ctx, s.Cluster, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: contract.ArgoCDName + "-redis"}}, i.Redis)
}

// runToCompletion runs a program as an init container runs: to its end, successfully.
func runToCompletion(ctx context.Context, f *harness.Fleet, name string, args []string) error {
	p, err := f.StartProcess(name, args)
	if err != nil {
		return err
	}
	if err := p.Wait(ctx); err != nil {
		return fmt.Errorf("%s failed: %w\n%s", name, err, p.Tail(20))
	}
	return nil
}
