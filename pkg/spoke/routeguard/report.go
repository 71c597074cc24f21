package routeguard

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/addonstatus"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/openapicheck"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/routeapi"
)

func setRouteAPI(r *addonstatus.Report, c routeapi.Classification) {
	status := metav1.ConditionTrue // a Route API is served
	switch c.Reason {
	case contract.RouteAPIAbsent:
		status = metav1.ConditionFalse
	case contract.RouteAPIUnknown:
		status = metav1.ConditionUnknown
	}
	r.Set(metav1.Condition{Type: contract.ConditionRouteAPI, Status: status, Reason: c.Reason, Message: c.Message})
}

func setGuard(r *addonstatus.Report, status metav1.ConditionStatus, reason, message string) {
	r.Set(metav1.Condition{Type: contract.ConditionRoutesCRDGuard, Status: status, Reason: reason, Message: message})
}

func setDuplicates(r *addonstatus.Report, dups []routeapi.Duplicate) {
	if len(dups) == 0 {
		r.Set(metav1.Condition{Type: contract.ConditionDuplicateAPISurfaces, Status: metav1.ConditionFalse, Reason: contract.ReasonNoDuplicates,
			Message: "No CRD duplicates a group/version served by an aggregated APIService."})
		return
	}
	r.Set(metav1.Condition{Type: contract.ConditionDuplicateAPISurfaces, Status: metav1.ConditionTrue, Reason: contract.ReasonDuplicatesFound,
		Message: routeapi.DescribeDuplicates(dups) + ". Each breaks /openapi/v2. Fix: delete the duplicating CRD (kubectl delete crd NAME)."})
}

func setOpenAPI(r *addonstatus.Report, res openapicheck.Result, err error) {
	c := metav1.Condition{Type: contract.ConditionOpenAPIV2Available}
	switch {
	case err != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, contract.ReasonOpenAPIV2CheckFailed, fmt.Sprintf("Could not check /openapi/v2: %v", err)
	case res.StatusCode != 200:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, contract.ReasonOpenAPIV2ServiceUnavailable, res.Describe()
	case len(res.MissingFromV2) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, contract.ReasonOpenAPIV2Frozen, res.Describe()
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, contract.ReasonOpenAPIV2Served, res.Describe()
	}
	r.Set(c)
}
