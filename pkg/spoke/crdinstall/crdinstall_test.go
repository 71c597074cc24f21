package crdinstall

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/crdinstall/crds"
	"github.com/gitops-addon/gitops-addon/test/fixtures"
)

const (
	v18 = "github.com/argoproj-labs/argocd-operator@v0.18.0/config/crd/bases/argoproj.io_argocds.yaml"
	v19 = "github.com/argoproj-labs/argocd-operator@v0.19.1/config/crd/bases/argoproj.io_argocds.yaml"
	v17 = "github.com/argoproj-labs/argocd-operator@v0.17.2/config/crd/bases/argoproj.io_argocds.yaml"
)

func desiredCRD(name, source string) *CRD {
	return &CRD{name: name, Source: source}
}

func clusterCRD(name string, labels map[string]string, source string, generation int64) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{
		Name: name, UID: types.UID("uid-" + name), Generation: generation, Labels: labels,
	}}
	if source != "" {
		crd.Annotations = map[string]string{crds.AnnotationSource: source}
	}
	return crd
}

var ours = map[string]string{contract.LabelManagedBy: contract.ManagedByValue}

func TestDecide(t *testing.T) {
	desired := desiredCRD("argocds.argoproj.io", v18)
	deleting := clusterCRD("argocds.argoproj.io", ours, v18, 3)
	deleting.DeletionTimestamp = &metav1.Time{}
	tests := []struct {
		name    string
		current *apiextensionsv1.CustomResourceDefinition
		last    *applied
		want    action
		why     string
	}{
		{"missing: install", nil, nil, actionApply, "missing"},
		{"being deleted: wait, never fight the deletion", deleting, nil, actionWaitDeletion, "being deleted"},
		{"OLM's: left alone", clusterCRD("argocds.argoproj.io", map[string]string{"operators.coreos.com/openshift-gitops-operator.openshift-gitops-operator": ""}, "", 1), nil, actionLeaveForeign, "OLM"},
		{"a Helm chart's: left alone", clusterCRD("argocds.argoproj.io", map[string]string{contract.LabelManagedBy: "Helm"}, "", 1), nil, actionLeaveForeign, "Helm"},
		{"unlabelled: left alone", clusterCRD("argocds.argoproj.io", nil, "", 1), nil, actionLeaveForeign, "someone else"},
		{"ours from an older agent: upgrade", clusterCRD("argocds.argoproj.io", ours, v17, 1), &applied{uid: "uid-argocds.argoproj.io", generation: 1}, actionApply, "v0.17.2"},
		{"ours from a newer agent: kept", clusterCRD("argocds.argoproj.io", ours, v19, 1), nil, actionKeepNewer, "v0.19.1, newer than this agent's v0.18.0"},
		{"adopted from the old ManifestWork layout (our label, same source): apply once", clusterCRD("argocds.argoproj.io", ours, v18, 4), nil, actionApply, "not applied since the agent started"},
		{"ours, unchanged since our apply: nothing", clusterCRD("argocds.argoproj.io", ours, v18, 4), &applied{uid: "uid-argocds.argoproj.io", generation: 4}, actionNone, "current"},
		{"ours, edited by someone (generation moved): repair", clusterCRD("argocds.argoproj.io", ours, v18, 5), &applied{uid: "uid-argocds.argoproj.io", generation: 4}, actionApply, "changed by someone else"},
		{"ours, deleted and recreated by someone (new UID): repair", clusterCRD("argocds.argoproj.io", ours, v18, 4), &applied{uid: "old-uid", generation: 4}, actionApply, "changed by someone else"},
		{"ours without a source annotation: take back", clusterCRD("argocds.argoproj.io", ours, "", 1), nil, actionApply, "installed from"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decide(desired, tt.current, tt.last)
			assert.Equal(t, tt.want, got.action, got.why)
			assert.Contains(t, got.why, tt.why)
		})
	}
}

func TestIsNewerComparesVersionsOfTheSameModule(t *testing.T) {
	newer, _ := isNewer(v19, v18)
	assert.True(t, newer)
	newer, _ = isNewer(v17, v18)
	assert.False(t, newer)
	newer, _ = isNewer(v18, v18)
	assert.False(t, newer)
	newer, _ = isNewer("example.com/other@v9.0.0/x.yaml", v18)
	assert.False(t, newer, "another module's version says nothing")
	newer, _ = isNewer("github.com/openshift/api@v0.0.0-20251125174858-5cf710f68a92/route.yaml", "github.com/openshift/api@v0.0.0-20240906151052-5d963dce87aa/route.yaml")
	assert.True(t, newer, "pseudo-versions order by time")
}

func TestEmbeddedCRDs(t *testing.T) {
	embedded, err := Load()
	require.NoError(t, err)
	require.Len(t, embedded.ArgoCD, 8)
	assert.Equal(t, contract.RoutesCRDName, embedded.Routes.Name())
	for _, crd := range append(slices.Clone(embedded.ArgoCD), embedded.Routes) {
		object, err := crd.Decode()
		require.NoError(t, err)
		assert.Equal(t, crd.Name(), object.Name)
		assert.Equal(t, contract.ManagedByValue, object.Labels[contract.LabelManagedBy], crd.Name())
		assert.NotEmpty(t, sourceVersion(crd.Source), crd.Name())
		var asObject map[string]any
		require.NoError(t, yaml.Unmarshal(crd.ApplyJSON, &asObject), crd.Name())
		assert.Equal(t, "CustomResourceDefinition", asObject["kind"], "the apply body is a whole object")
		assert.Less(t, len(crd.ApplyJSON), 1280*1024, "%s fits in etcd's request limit", crd.Name())
	}
	var argocds *CRD
	for _, crd := range embedded.ArgoCD {
		if crd.Name() == "argocds.argoproj.io" {
			argocds = crd
		}
	}
	require.NotNil(t, argocds)
	object, err := argocds.Decode()
	require.NoError(t, err)
	spec := object.Spec.Versions
	require.NotEmpty(t, spec)
	var storage apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range spec {
		if v.Storage {
			storage = v
		}
	}
	assert.NotEmpty(t, storage.Schema.OpenAPIV3Schema.Properties["spec"].Description, "descriptions are kept: kubectl explain argocd.spec works")
}

// fixture is an installer over a fake client whose server-side applies are simulated:
// the fake client stores the embedded object (or fails when told to).
type fixture struct {
	installer *Installer
	client    client.Client
	applies   []string
	failing   map[string]error
}

func newFixture(t *testing.T, openShift bool, objects ...client.Object) *fixture {
	t.Helper()
	embedded, err := Load()
	require.NoError(t, err)
	f := &fixture{failing: map[string]error{}}
	base := fixtures.FakeSpoke(t, objects...).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			require.Equal(t, types.ApplyPatchType, patch.Type())
			name := obj.GetName()
			f.applies = append(f.applies, name)
			if err := f.failing[name]; err != nil {
				return err
			}
			return simulateApply(ctx, c, embedded, obj.(*apiextensionsv1.CustomResourceDefinition))
		},
	}).Build()
	f.client = base
	f.installer = &Installer{
		Client: base, Recorder: events.NewFakeRecorder(100), Report: addonstatus.NewReport(),
		CRDs: embedded, OpenShift: openShift, applied: map[string]applied{},
	}
	return f
}

// simulateApply stores the embedded CRD as the apiserver would (a new generation when
// the spec changes), established, and returns it in obj.
func simulateApply(ctx context.Context, c client.Client, embedded Embedded, obj *apiextensionsv1.CustomResourceDefinition) error {
	var desired *apiextensionsv1.CustomResourceDefinition
	for _, crd := range append(slices.Clone(embedded.ArgoCD), embedded.Routes) {
		if crd.Name() == obj.Name {
			decoded, err := crd.Decode()
			if err != nil {
				return err
			}
			desired = decoded
		}
	}
	if desired == nil {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "customresourcedefinitions"}, obj.Name, errors.New("not ours"))
	}
	desired.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	current := &apiextensionsv1.CustomResourceDefinition{}
	err := c.Get(ctx, client.ObjectKey{Name: obj.Name}, current)
	switch {
	case apierrors.IsNotFound(err):
		desired.Generation = 1
		if err := c.Create(ctx, desired); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		desired.ResourceVersion = current.ResourceVersion
		desired.UID = current.UID
		desired.Generation = current.Generation + 1
		if err := c.Update(ctx, desired); err != nil {
			return err
		}
	}
	return c.Get(ctx, client.ObjectKey{Name: obj.Name}, obj)
}

func (f *fixture) reconcile(t *testing.T) error {
	t.Helper()
	f.applies = nil
	_, err := f.installer.Reconcile(context.Background(), singleton)
	return err
}

func (f *fixture) condition(t *testing.T) metav1.Condition {
	t.Helper()
	c, ok := f.installer.Report.Condition(contract.ConditionArgoCDCRDsInstalled)
	require.True(t, ok, "the ArgoCDCRDsInstalled condition is reported")
	return c
}

func nativeRouteAPIService() *apiregistrationv1.APIService {
	return &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1.route.openshift.io"},
		Spec: apiregistrationv1.APIServiceSpec{Group: contract.RouteGroup, Version: "v1",
			Service: &apiregistrationv1.ServiceReference{Namespace: "openshift-apiserver", Name: "api"}},
	}
}

func TestInstallerInstallsThenStaysQuiet(t *testing.T) {
	f := newFixture(t, false)
	require.NoError(t, f.reconcile(t))
	assert.Len(t, f.applies, 9, "eight Argo CD CRDs and the Routes CRD on a cluster without a Route API")
	assert.Contains(t, f.applies, contract.RoutesCRDName)
	c := f.condition(t)
	assert.Equal(t, metav1.ConditionTrue, c.Status, c.Message)
	assert.Equal(t, contract.ReasonCRDsInstalled, c.Reason)

	require.NoError(t, f.reconcile(t))
	assert.Empty(t, f.applies, "nothing changed: no request at all")
}

func TestInstallerRepairsDriftAndDeletion(t *testing.T) {
	f := newFixture(t, false)
	require.NoError(t, f.reconcile(t))

	edited := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, f.client.Get(context.Background(), client.ObjectKey{Name: "applications.argoproj.io"}, edited))
	edited.Spec.Versions[0].Schema = nil
	edited.Generation++
	require.NoError(t, f.client.Update(context.Background(), edited))
	require.NoError(t, f.client.Delete(context.Background(), &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "argocds.argoproj.io"}}))

	require.NoError(t, f.reconcile(t))
	assert.ElementsMatch(t, []string{"applications.argoproj.io", "argocds.argoproj.io"}, f.applies)
	repaired := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, f.client.Get(context.Background(), client.ObjectKey{Name: "applications.argoproj.io"}, repaired))
	assert.NotNil(t, repaired.Spec.Versions[0].Schema, "the schema is back")
}

func TestInstallerLeavesForeignAndNewerCRDsAlone(t *testing.T) {
	olm := clusterCRD("argocds.argoproj.io", map[string]string{"olm.managed": "true"}, "", 7)
	olm.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	newer := clusterCRD("applications.argoproj.io", ours, "github.com/argoproj-labs/argocd-operator@v0.99.0/config/crd/bases/argoproj.io_applications.yaml", 2)
	newer.Status.Conditions = olm.Status.Conditions
	f := newFixture(t, false, olm, newer)
	require.NoError(t, f.reconcile(t))
	assert.NotContains(t, f.applies, "argocds.argoproj.io", "never fight OLM over its CRD")
	assert.NotContains(t, f.applies, "applications.argoproj.io", "never downgrade a newer CRD")
	c := f.condition(t)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, contract.ReasonCRDsProvidedByOthers, c.Reason)
	assert.Contains(t, c.Message, "argocds.argoproj.io provided by OLM")
	assert.Contains(t, c.Message, "applications.argoproj.io installed from v0.99.0")

	kept := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, f.client.Get(context.Background(), client.ObjectKey{Name: "argocds.argoproj.io"}, kept))
	assert.Equal(t, int64(7), kept.Generation)
}

func TestInstallerReportsTheCRDThatFailed(t *testing.T) {
	f := newFixture(t, false)
	f.failing["applicationsets.argoproj.io"] = apierrors.NewForbidden(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, "applicationsets.argoproj.io", errors.New("denied by policy X"))
	err := f.reconcile(t)
	require.Error(t, err, "a failure is retried")
	c := f.condition(t)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, contract.ReasonCRDInstallFailed, c.Reason)
	assert.Contains(t, c.Message, "applicationsets.argoproj.io")
	assert.Contains(t, c.Message, "denied by policy X")
	assert.Len(t, f.applies, 9, "one failure does not stop the others")

	delete(f.failing, "applicationsets.argoproj.io")
	require.NoError(t, f.reconcile(t))
	assert.Equal(t, []string{"applicationsets.argoproj.io"}, f.applies, "only the failed one is retried")
	assert.Equal(t, contract.ReasonCRDsInstalled, f.condition(t).Reason)
}

func TestRoutesCRDOnlyWhereNoRouteAPIIsServed(t *testing.T) {
	foreignRoutes := clusterCRD(contract.RoutesCRDName, nil, "", 1)
	foreignRoutes.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	tests := []struct {
		name      string
		openShift bool
		objects   []client.Object
		want      bool
		note      string
	}{
		{name: "Absent and not OpenShift: installed", want: true, note: "no Route API"},
		{name: "the hub says OpenShift: never", openShift: true, note: "OpenShift or MicroShift"},
		{name: "Native: never", objects: []client.Object{nativeRouteAPIService()}, note: "served natively"},
		{name: "someone else's Routes CRD: left alone", objects: []client.Object{foreignRoutes}, note: "routes.route.openshift.io provided by someone else"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.openShift, tt.objects...)
			require.NoError(t, f.reconcile(t))
			assert.Equal(t, tt.want, slices.Contains(f.applies, contract.RoutesCRDName))
			assert.Contains(t, f.condition(t).Message, tt.note)
		})
	}
	t.Run("Unknown: no decision, the Argo CD CRDs still go in", func(t *testing.T) {
		f := newFixture(t, false)
		f.installer.Client = interceptor.NewClient(f.client.(client.WithWatch), interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if _, ok := list.(*apiregistrationv1.APIServiceList); ok {
					return errors.New("apiservices: connection refused")
				}
				return c.List(ctx, list, opts...)
			},
		})
		require.Error(t, f.reconcile(t))
		assert.NotContains(t, f.applies, contract.RoutesCRDName)
		assert.Len(t, f.applies, 8)
		assert.Contains(t, f.condition(t).Message, "cannot be classified")
	})
}
