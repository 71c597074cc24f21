package apiwait

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"
)

func discoveryServing(groupVersions ...string) *fakediscovery.FakeDiscovery {
	d := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	for _, gv := range groupVersions {
		d.Resources = append(d.Resources, &metav1.APIResourceList{GroupVersion: gv})
	}
	return d
}

func TestWait(t *testing.T) {
	tests := []struct {
		name    string
		served  []string
		want    []string
		wantErr string
	}{
		{name: "everything served", served: []string{"argoproj.io/v1beta1", "route.openshift.io/v1"}, want: []string{"argoproj.io/v1beta1", "route.openshift.io/v1"}},
		{name: "the Routes CRD not installed yet", served: []string{"argoproj.io/v1beta1"}, want: []string{"argoproj.io/v1beta1", "route.openshift.io/v1"},
			wantErr: "still does not serve route.openshift.io/v1"},
		{name: "nothing served", want: []string{"argoproj.io/v1beta1", "route.openshift.io/v1"},
			wantErr: "still does not serve argoproj.io/v1beta1, route.openshift.io/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Wait(context.Background(), discoveryServing(tt.served...), Options{
				GroupVersions: tt.want, Interval: 10 * time.Millisecond, Timeout: 50 * time.Millisecond, Logf: t.Logf,
			})
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}
