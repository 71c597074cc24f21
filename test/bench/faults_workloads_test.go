package bench

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/hub/gitopscluster"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/feedback"
	"github.com/gitops-addon/gitops-addon/pkg/hub/pullmodel/pullnames"
	"github.com/gitops-addon/gitops-addon/test/install"
	"github.com/gitops-addon/gitops-addon/test/testenv"
	"github.com/gitops-addon/gitops-addon/test/workstandin"
)

// workload is what the manager does while a fault hits: started by create (whose returned
// function waits for the client side of it to finish), half done, done (targets), counted,
// removed, and what its removal left; report is every work agent reporting on its
// ManifestWorks at once (the feedback storm).
type workload struct {
	name      string
	create    func() (wait func())
	halfway   func() (bool, string)
	targets   func() []*target
	count     func() objectCount
	remove    func()
	leftovers func() objectCount
	report    func() storm
}

// storm is what a feedback storm reported: how many ManifestWorks; the hub writes those
// reports call for (two status writes per ManagedClusterAddOn, addon-framework's and the
// manager's; one per Application); and the target that holds once the hub shows every
// report.
type storm struct {
	reports, expectedWrites int
	shown                   *target
}

// stormWriters is how many work agents report at the same moment.
const stormWriters = 32

// reportWork writes a ManifestWork's status as the work agent would, retried on conflict.
func reportWork(fb *faultBench, namespace, name string, set func(*workv1.ManifestWork)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := &workv1.ManifestWork{}
		if err := fb.c.Get(fb.ctx, types.NamespacedName{Namespace: namespace, Name: name}, w); err != nil {
			return err
		}
		set(w)
		return fb.c.Status().Update(fb.ctx, w)
	})
}

// addonRollout is a GitOpsCluster with the addon enabled over every cluster of the fleet:
// each cluster gets its Argo CD cluster Secret, its ManagedClusterAddOn and the addon's
// ManifestWorks.
func (fb *faultBench) addonRollout() workload {
	b, ctx, c := fb.b, fb.ctx, fb.c
	return workload{
		name: fmt.Sprintf("GitOpsCluster rollout to %d clusters", fb.n),
		create: func() func() {
			require.NoError(b, c.Create(ctx, fleetGitOpsCluster()))
			return func() {}
		},
		halfway: func() (bool, string) {
			got := len(countByNamespace(b, ctx, c, workGVK, "", addonWorks()))
			return got >= fb.n/2, fmt.Sprintf("%d clusters with ManifestWorks", got)
		},
		targets: func() []*target {
			secrets, addons, works := fleetTargets(b, ctx, c, fb.n, fb.worksPerCluster)
			return []*target{secrets, addons, works}
		},
		count: func() objectCount {
			if fb.worksPerCluster == 0 {
				fb.worksPerCluster, _ = uniform(countByNamespace(b, ctx, c, workGVK, "", addonWorks()))
			}
			return fb.countAddonObjects()
		},
		remove: func() {
			gc := fleetGitOpsCluster()
			require.NoError(b, c.Delete(ctx, gc))
			gone := goneTarget(ctx, c, gc)
			secrets, addons, works := fleetTargets(b, ctx, c, 0, fb.worksPerCluster)
			converge(b, "the deletion", time.Now(), 20*time.Minute, fb.poll, fb.alive, gone, secrets, addons, works)
		},
		report: func() storm {
			// Every work agent reports every addon ManifestWork applied: on each reported
			// cluster's ManagedClusterAddOn, addon-framework writes ManifestApplied=True and
			// the manager StackApplied=True, one status write each.
			works := listMetadata(b, ctx, c, workGVK, addonWorks())
			clusters := map[string]bool{}
			for _, w := range works {
				clusters[w.Namespace] = true
			}
			parallel(len(works), stormWriters, func(i int) error {
				return reportWork(fb, works[i].Namespace, works[i].Name, workstandin.MarkApplied)
			})
			return storm{reports: len(works), expectedWrites: 2 * len(clusters), shown: &target{name: "StackApplied on the reported clusters", done: func() (bool, string) {
				got := fb.stackApplied()
				return got >= len(clusters), fmt.Sprintf("%d of %d", got, len(clusters))
			}}}
		},
		leftovers: func() objectCount {
			secrets := total(countByNamespace(b, ctx, c, secretGVK, "", client.InNamespace(argoNS), ownerLabels()))
			addons := total(countByNamespace(b, ctx, c, addonGVK, contract.AddonName))
			works := total(countByNamespace(b, ctx, c, workGVK, "", addonWorks()))
			return objectCount{orphaned: secrets + addons + works}
		},
	}
}

// stackApplied counts the ManagedClusterAddOns of the addon whose StackApplied is True.
func (fb *faultBench) stackApplied() int {
	addons := &addonv1beta1.ManagedClusterAddOnList{}
	require.NoError(fb.b, fb.c.List(fb.ctx, addons))
	n := 0
	for _, a := range addons.Items {
		if a.Name == contract.AddonName && meta.IsStatusConditionTrue(a.Status.Conditions, contract.ConditionStackApplied) {
			n++
		}
	}
	return n
}

// countAddonObjects counts, for every cluster of the fleet, its Argo CD cluster Secrets of
// the GitOpsCluster (one), its ManagedClusterAddOn (one) and the addon's ManifestWorks
// (worksPerCluster): fewer is lost, more duplicated; objects of clusters outside the fleet
// are orphaned.
func (fb *faultBench) countAddonObjects() objectCount {
	secrets := &corev1.SecretList{}
	require.NoError(fb.b, fb.c.List(fb.ctx, secrets, client.InNamespace(argoNS), ownerLabels()))
	perCluster := map[string]int{}
	for _, s := range secrets.Items {
		perCluster[s.Labels[gitopscluster.LabelClusterName]]++
	}
	addons := countByNamespace(fb.b, fb.ctx, fb.c, addonGVK, contract.AddonName)
	works := countByNamespace(fb.b, fb.ctx, fb.c, workGVK, "", addonWorks())
	return fb.countPerCluster([]map[string]int{perCluster, addons, works}, []int{1, 1, fb.worksPerCluster})
}

// countPerCluster compares, kind by kind, how many objects each fleet cluster has with how
// many it should have.
func (fb *faultBench) countPerCluster(have []map[string]int, want []int) objectCount {
	var out objectCount
	fleet := map[string]bool{}
	for _, name := range fb.names {
		fleet[name] = true
		for i, m := range have {
			out.lost += max(0, want[i]-m[name])
			out.duplicated += max(0, m[name]-want[i])
		}
	}
	for _, m := range have {
		for cluster, k := range m {
			if !fleet[cluster] {
				out.orphaned += k
			}
		}
	}
	return out
}

// pullBurst is a burst of pull Applications over the fleet, as an ApplicationSet writes
// them (pullWorkers at a time, each retried until the apiserver takes it, faults or not):
// each gets one ManifestWork in its cluster's namespace.
func (fb *faultBench) pullBurst(apps int) workload {
	b, ctx, c := fb.b, fb.ctx, fb.c
	// pullWorks lists the pull ManifestWorks' metadata: where each is, and the hub
	// Application it carries (its annotation).
	pullWorks := func() []metav1.PartialObjectMetadata {
		return listMetadata(b, ctx, c, workGVK, client.MatchingLabels{pullnames.LabelPullWork: "true"})
	}
	return workload{
		name: fmt.Sprintf("pull burst of %d Applications over %d clusters", apps, fb.n),
		create: func() func() {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				parallel(apps, pullWorkers, func(i int) error { return createRetrying(fb, benchApp(i, fb.names)) })
			}()
			return wg.Wait
		},
		halfway: func() (bool, string) {
			got := len(pullWorks())
			return got >= apps/2, fmt.Sprintf("%d pull ManifestWorks", got)
		},
		targets: func() []*target {
			// Done once every Application has its ManifestWork; count says whether any has
			// more than one.
			return []*target{{name: "Applications with their ManifestWork", done: func() (bool, string) {
				carried := map[string]bool{}
				for _, w := range pullWorks() {
					carried[w.Annotations[pullnames.AnnotationHubAppName]] = true
				}
				return len(carried) >= apps, fmt.Sprintf("%d of %d", len(carried), apps)
			}}}
		},
		count: func() objectCount {
			// Each Application has one ManifestWork, in its cluster's namespace: none is lost,
			// more than one duplicated, one for no Application (or elsewhere) orphaned.
			perApp := map[string]int{}
			var out objectCount
			for _, w := range pullWorks() {
				app := w.Annotations[pullnames.AnnotationHubAppName]
				i, err := strconv.Atoi(strings.TrimPrefix(app, "app-"))
				if err != nil || i >= apps || w.Namespace != fb.names[i%len(fb.names)] {
					out.orphaned++
					continue
				}
				perApp[app]++
			}
			for i := range apps {
				n := perApp[benchApp(i, fb.names).GetName()]
				out.lost += max(0, 1-n)
				out.duplicated += max(0, n-1)
			}
			return out
		},
		remove: func() {
			// One by one, 16 at a time: a deletecollection is worked through by one worker of
			// the apiserver's (--delete-collection-workers), minutes for 5,000 Applications.
			parallel(apps, 16, func(i int) error { return client.IgnoreNotFound(c.Delete(ctx, benchApp(i, fb.names))) })
			converge(b, "the Applications' removal", time.Now(), 20*time.Minute, fb.poll, fb.alive, &target{name: "pull ManifestWorks", done: func() (bool, string) {
				got := len(pullWorks())
				return got == 0, fmt.Sprintf("%d left", got)
			}})
		},
		leftovers: func() objectCount { return objectCount{orphaned: len(pullWorks())} },
		report: func() storm {
			// Every work agent reports a new revision for every Application it carries,
			// with its health and resources as the gitops-addon agent summarises them,
			// while the burst goes on: the hub writes each Application's status once.
			works := pullWorks()
			values := feedbackValues(stormRevision, stringFeedback(feedback.KeyHealth, "Healthy"),
				stringFeedback(feedback.KeyResources, guestbookSummary(b)))
			parallel(len(works), stormWriters, func(i int) error {
				app := works[i].Annotations[pullnames.AnnotationHubAppName]
				return reportWork(fb, works[i].Namespace, works[i].Name, func(w *workv1.ManifestWork) {
					w.Status.ResourceStatus.Manifests = applicationReport(app, values)
				})
			})
			return storm{reports: len(works), expectedWrites: len(works), shown: &target{name: "the reported revision on the hub Applications", done: func() (bool, string) {
				got := fb.applicationsAt(stormRevision)
				return got >= len(works), fmt.Sprintf("%d of %d", got, len(works))
			}}}
		},
	}
}

// stormRevision is the revision every work agent reports in the feedback storm.
const stormRevision = "storm"

// applicationsAt counts the hub Applications whose status shows the revision.
func (fb *faultBench) applicationsAt(revision string) int {
	apps := &unstructured.UnstructuredList{}
	apps.SetGroupVersionKind(pullnames.ApplicationGVK.GroupVersion().WithKind("ApplicationList"))
	require.NoError(fb.b, fb.c.List(fb.ctx, apps, client.InNamespace(argoNS)))
	n := 0
	for _, a := range apps.Items {
		if got, _, _ := unstructured.NestedString(a.Object, "status", "sync", "revision"); got == revision {
			n++
		}
	}
	return n
}

// createRetrying creates obj, again and again while the apiserver is away or refuses
// (as a controller's workqueue would), until it exists.
func createRetrying(fb *faultBench, obj client.Object) error {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		err := fb.c.Create(fb.ctx, obj.DeepCopyObject().(client.Object))
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("creating %s: %w", obj.GetName(), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// installArgoCDCRDs gives the hub Argo CD's Application and AppProject CRDs (the pull model
// starts once they exist) and the default AppProject the bench Applications name.
func (fb *faultBench) installArgoCDCRDs() {
	for _, crd := range testenv.ArgoCDCRDs(fb.b) {
		require.NoError(fb.b, client.IgnoreAlreadyExists(fb.c.Create(fb.ctx, crd)))
	}
	converge(fb.b, "Argo CD's CRDs", time.Now(), 2*time.Minute, 250*time.Millisecond, fb.alive, &target{name: "Application CRD", done: func() (bool, string) {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(pullnames.ApplicationGVK.GroupVersion().WithKind("ApplicationList"))
		err := fb.c.List(fb.ctx, list, client.InNamespace(argoNS))
		return err == nil, fmt.Sprintf("%v", err)
	}})
	project := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": "default", "namespace": argoNS},
		"spec": map[string]any{"sourceRepos": []any{"*"}, "destinations": []any{map[string]any{"server": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}}},
	}}
	// Retried: the CRD may not be established yet, and the client's mapper learns it late.
	converge(fb.b, "the default AppProject", time.Now(), 2*time.Minute, 250*time.Millisecond, fb.alive, &target{name: "AppProject", done: func() (bool, string) {
		err := client.IgnoreAlreadyExists(fb.c.Create(fb.ctx, project.DeepCopy()))
		return err == nil, fmt.Sprintf("%v", err)
	}})
}

// starveManager is API Priority and Fairness set so that the manager's requests (all but
// its leader election's) get one seat and are rejected (429) beyond it; the returned
// function removes it. A level's seats are the server's (600 by default) times its share
// of all levels' nominal shares, rounded up: among the built-in levels' 245 shares one
// share is 3 seats, which a rollout's manager rarely fills (no 429 at 1,000 clusters).
// A ballast level holding nearly every share, lending them all to the other levels,
// brings the manager's level to 1 seat.
func starveManager(fb *faultBench) func() {
	subject := flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount,
		ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: install.Namespace, Name: "gitops-addon-manager"}}
	all := flowcontrolv1.ResourcePolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true,
		Namespaces: []string{"*"}}
	leases := flowcontrolv1.ResourcePolicyRule{Verbs: []string{"*"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
		Namespaces: []string{"*"}}
	objects := []client.Object{
		&flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "bench-faults-ballast"},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
				Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr(int32(100000)), LendablePercent: ptr(int32(100)),
					LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}}},
		&flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "bench-faults-starved"},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
				// No borrowing: unset, a level borrows the idle seats of the others.
				Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr(int32(1)), LendablePercent: ptr(int32(0)),
					BorrowingLimitPercent: ptr(int32(0)),
					LimitResponse:         flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}}},
		// The leader election keeps its own level: starving it would be another fault.
		&flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "bench-faults-manager-leases"},
			Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "leader-election"},
				MatchingPrecedence: 150, Rules: []flowcontrolv1.PolicyRulesWithSubjects{{Subjects: []flowcontrolv1.Subject{subject},
					ResourceRules: []flowcontrolv1.ResourcePolicyRule{leases}}}}},
		&flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "bench-faults-starve-manager"},
			Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "bench-faults-starved"},
				MatchingPrecedence: 160, DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
				Rules: []flowcontrolv1.PolicyRulesWithSubjects{{Subjects: []flowcontrolv1.Subject{subject}, ResourceRules: []flowcontrolv1.ResourcePolicyRule{all},
					NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}}}}},
	}
	for _, o := range objects {
		require.NoError(fb.b, fb.c.Create(fb.ctx, o))
	}
	return func() {
		for _, o := range objects {
			require.NoError(fb.b, client.IgnoreNotFound(fb.c.Delete(fb.ctx, o)))
		}
	}
}

// flapClusters turns every tenth cluster's availability Unknown and takes it out of the
// Placement (its fleet label gone), as a network partition and a relabelling would, until
// the Placement has dropped them; the returned function brings them back.
func flapClusters(fb *faultBench) (flapped int, restore func()) {
	var names []string
	for i := 0; i < len(fb.names); i += 10 {
		names = append(names, fb.names[i])
	}
	setCluster := func(name string, available metav1.ConditionStatus, inFleet bool) error {
		// OCM's registration controller writes the same objects.
		return retry.RetryOnConflict(retry.DefaultBackoff, func() error { return setClusterOnce(fb, name, available, inFleet) })
	}
	parallel(len(names), 8, func(i int) error { return setCluster(names[i], metav1.ConditionUnknown, false) })
	converge(fb.b, "the Placement dropping the flapped clusters", time.Now(), 10*time.Minute, fb.poll, func() {}, &target{name: "decisions",
		done: func() (bool, string) {
			got := placementDecided(fb.b, fb.ctx, fb.c, argoNS, placementName)
			return got == fb.n-len(names), fmt.Sprintf("%d decided", got)
		}})
	return len(names), func() {
		parallel(len(names), 8, func(i int) error { return setCluster(names[i], metav1.ConditionTrue, true) })
	}
}

func setClusterOnce(fb *faultBench, name string, available metav1.ConditionStatus, inFleet bool) error {
	mc := &clusterv1.ManagedCluster{}
	if err := fb.c.Get(fb.ctx, types.NamespacedName{Name: name}, mc); err != nil {
		return err
	}
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: available,
		Reason: "BenchFaults", Message: "set by the faults benchmark"})
	if err := fb.c.Status().Update(fb.ctx, mc); err != nil {
		return err
	}
	patch := client.MergeFrom(mc.DeepCopy())
	if inFleet {
		mc.Labels[fleetLabel] = fleetValue
	} else {
		delete(mc.Labels, fleetLabel)
	}
	return fb.c.Patch(fb.ctx, mc, patch)
}

// workSnapshot is the addon's ManifestWorks as they are, by namespace and name.
func (fb *faultBench) workSnapshot() map[types.NamespacedName]workv1.ManifestWork {
	list := &workv1.ManifestWorkList{}
	require.NoError(fb.b, fb.c.List(fb.ctx, list, addonWorks()))
	out := make(map[types.NamespacedName]workv1.ManifestWork, len(list.Items))
	for _, w := range list.Items {
		out[types.NamespacedName{Namespace: w.Namespace, Name: w.Name}] = w
	}
	return out
}

// rewritten counts the ManifestWorks of before whose spec changed since (their generation),
// and describes the first change: what a new leader wrote again.
func (fb *faultBench) rewritten(before map[types.NamespacedName]workv1.ManifestWork) (int, string) {
	n, first := 0, ""
	for key, now := range fb.workSnapshot() {
		was, ok := before[key]
		if !ok || was.Generation == now.Generation {
			continue
		}
		n++
		if first != "" {
			continue
		}
		first = fmt.Sprintf("%s generation %d to %d", key, was.Generation, now.Generation)
		for i := range min(len(was.Spec.Workload.Manifests), len(now.Spec.Workload.Manifests)) {
			a, b := string(was.Spec.Workload.Manifests[i].Raw), string(now.Spec.Workload.Manifests[i].Raw)
			if a != b {
				first += fmt.Sprintf("; manifest %d was %s, is %s", i, clip(a), clip(b))
				break
			}
		}
	}
	return n, first
}

func clip(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}
