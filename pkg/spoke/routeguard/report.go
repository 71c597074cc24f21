package routeguard

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-addon/gitops-addon/pkg/constants"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/openapicheck"
)

// Reasons of the RoutesCRDGuard, OpenAPIV2Available and DuplicateAPISurfaces conditions.
const (
	ReasonGuardInstalled    = "GuardInstalled"
	ReasonDuplicateRemoved  = "DuplicateRemoved"
	ReasonGuardUnavailable  = "GuardUnavailable"
	ReasonGuardDisabled     = "GuardDisabled"
	ReasonNotNative         = "NotNative"
	ReasonGuardUnknown      = "RouteAPIUnknown"
	ReasonGuardFailed       = "GuardFailed"
	ReasonOpenAPIV2OK       = "Served"
	ReasonOpenAPIV2Error    = "ServiceUnavailable"
	ReasonOpenAPIV2Frozen   = "Frozen"
	ReasonOpenAPIV2NotKnown = "CheckFailed"
	ReasonDuplicatesFound   = "DuplicatesFound"
	ReasonNoDuplicates      = "NoDuplicates"
)

// Report is the agent's current view, published as conditions on its ManagedClusterAddOn.
// It is safe for concurrent use; Changed is signalled when its conditions change.
type Report struct {
	mu         sync.Mutex
	conditions map[string]metav1.Condition
	changed    chan struct{}
}

// NewReport returns an empty report.
func NewReport() *Report {
	return &Report{conditions: map[string]metav1.Condition{}, changed: make(chan struct{}, 1)}
}

// Changed is signalled (coalesced) whenever a condition changes.
func (r *Report) Changed() <-chan struct{} { return r.changed }

// Conditions returns the current conditions in a stable order.
func (r *Report) Conditions() []metav1.Condition {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []metav1.Condition
	for _, t := range []string{constants.ConditionRouteAPI, constants.ConditionRoutesCRDGuard, constants.ConditionOpenAPIV2Available, constants.ConditionDuplicateAPISurfaces} {
		if c, ok := r.conditions[t]; ok {
			out = append(out, c)
		}
	}
	return out
}

// Condition returns one condition.
func (r *Report) Condition(t string) (metav1.Condition, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.conditions[t]
	return c, ok
}

func (r *Report) set(c metav1.Condition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok := r.conditions[c.Type]
	c.LastTransitionTime = metav1.Now()
	if ok && old.Status == c.Status {
		c.LastTransitionTime = old.LastTransitionTime
	}
	if ok && equality.Semantic.DeepEqual(old, c) {
		return
	}
	r.conditions[c.Type] = c
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *Report) setRouteAPI(c Classification) {
	status := metav1.ConditionTrue // a Route API is served
	switch c.Reason {
	case constants.RouteAPIAbsent:
		status = metav1.ConditionFalse
	case constants.RouteAPIUnknown:
		status = metav1.ConditionUnknown
	}
	r.set(metav1.Condition{Type: constants.ConditionRouteAPI, Status: status, Reason: c.Reason, Message: c.Message})
}

func (r *Report) setGuard(status metav1.ConditionStatus, reason, message string) {
	r.set(metav1.Condition{Type: constants.ConditionRoutesCRDGuard, Status: status, Reason: reason, Message: message})
}

func (r *Report) setDuplicates(dups []Duplicate) {
	if len(dups) == 0 {
		r.set(metav1.Condition{Type: constants.ConditionDuplicateAPISurfaces, Status: metav1.ConditionFalse, Reason: ReasonNoDuplicates,
			Message: "No CRD duplicates a group/version served by an aggregated APIService."})
		return
	}
	r.set(metav1.Condition{Type: constants.ConditionDuplicateAPISurfaces, Status: metav1.ConditionTrue, Reason: ReasonDuplicatesFound,
		Message: describeDuplicates(dups) + ". Each breaks /openapi/v2. Fix: delete the duplicating CRD (kubectl delete crd NAME)."})
}

func (r *Report) setOpenAPI(res openapicheck.Result, err error) {
	c := metav1.Condition{Type: constants.ConditionOpenAPIV2Available}
	switch {
	case err != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, ReasonOpenAPIV2NotKnown, fmt.Sprintf("Could not check /openapi/v2: %v", err)
	case res.StatusCode != 200:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonOpenAPIV2Error, res.Describe()
	case len(res.MissingFromV2) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonOpenAPIV2Frozen, res.Describe()
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonOpenAPIV2OK, res.Describe()
	}
	r.set(c)
}
