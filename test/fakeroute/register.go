package fakeroute

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// APIServiceName is the APIService OpenShift registers for Routes.
const APIServiceName = "v1.route.openshift.io"

// Register makes the server the cluster's native Route API, the way OpenShift registers
// openshift-apiserver: a service-backed APIService, reached through an ExternalName
// Service to localhost (kube-apiserver needs --enable-aggregator-routing=false and
// front-proxy flags). It must come before any Routes CRD: otherwise the apiserver's
// autoregister controller turns the APIService back into a local one. The client's
// scheme needs core v1 and apiregistration v1. It returns once the APIService is Available.
func (s *Server) Register(ctx context.Context, c client.Client) error {
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-apiserver"}},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-apiserver", Name: "api"},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
		},
	} {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, obj)); err != nil {
			return fmt.Errorf("registering the Route API: %w", err)
		}
	}
	port := int32(s.Port)
	err := c.Create(ctx, &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: APIServiceName},
		Spec: apiregistrationv1.APIServiceSpec{
			Group: "route.openshift.io", Version: "v1", GroupPriorityMinimum: 9900, VersionPriority: 15,
			Service:  &apiregistrationv1.ServiceReference{Namespace: "openshift-apiserver", Name: "api", Port: &port},
			CABundle: s.CA.CertPEM,
		},
	})
	if err != nil {
		return fmt.Errorf("creating APIService %s: %w", APIServiceName, err)
	}
	return WaitAvailable(ctx, c, true, 60*time.Second)
}

// WaitAvailable waits until the Route APIService's Available condition is want.
func WaitAvailable(ctx context.Context, c client.Client, want bool, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		a := &apiregistrationv1.APIService{}
		if err := c.Get(ctx, client.ObjectKey{Name: APIServiceName}, a); err != nil {
			return false, nil
		}
		for _, cond := range a.Status.Conditions {
			if cond.Type == apiregistrationv1.Available {
				return (cond.Status == apiregistrationv1.ConditionTrue) == want, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for APIService %s Available=%v: %w", APIServiceName, want, err)
	}
	return nil
}
