package addon

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// Warner reports, per ManagedClusterAddOn, what its render ignored. It is called on
// every render, with an empty message when nothing was ignored.
type Warner func(addon *addonv1beta1.ManagedClusterAddOn, message string)

// EventWarner records a Warning Event on the ManagedClusterAddOn when its message
// changes, not on every render: addon-framework renders a cluster several times per
// change of its addon's status.
func EventWarner(recorder events.EventRecorder) Warner {
	var mu sync.Mutex
	last := map[string]string{}
	return func(addon *addonv1beta1.ManagedClusterAddOn, message string) {
		key := addon.Namespace + "/" + addon.Name
		mu.Lock()
		changed := last[key] != message
		if message == "" {
			delete(last, key)
		} else {
			last[key] = message
		}
		mu.Unlock()
		if changed && message != "" {
			recorder.Eventf(addon, nil, corev1.EventTypeWarning, contract.ReasonConfigIgnored, "Render", "%s", message)
		}
	}
}
