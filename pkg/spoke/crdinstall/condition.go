package crdinstall

import (
	"fmt"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// condition summarises the results as the ArgoCDCRDsInstalled condition. The Routes CRD,
// when wanted, counts like an Argo CD CRD: the operator cannot start without Routes.
func condition(argo []result, routes *result, decision routesDecision) metav1.Condition {
	all := argo
	if routes != nil {
		all = append(append([]result(nil), argo...), *routes)
	}
	var failed, waiting, others []string
	for _, r := range all {
		switch {
		case r.err != nil:
			failed = append(failed, fmt.Sprintf("%s: %v", r.name, r.err))
		case r.verdict.action == actionWaitDeletion:
			waiting = append(waiting, r.name+" is "+r.verdict.why)
		case r.current == nil || !apihelpers.IsCRDConditionTrue(r.current, apiextensionsv1.Established):
			waiting = append(waiting, r.name+" is not established yet")
		case r.verdict.action == actionLeaveForeign || r.verdict.action == actionKeepNewer:
			others = append(others, r.name+" "+r.verdict.why)
		}
	}
	routesNote := "Routes CRD: not installed (" + decision.why + ")."
	if routes != nil {
		routesNote = "Routes CRD: wanted (" + decision.why + ")."
	}
	c := metav1.Condition{Type: contract.ConditionArgoCDCRDsInstalled}
	switch {
	case len(failed) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, contract.ReasonCRDInstallFailed
		c.Message = "Could not install " + strings.Join(failed, "; ") +
			". Fix what the apiserver refused (the agent may create CRDs and change only its own: check its ClusterRole gitops-addon:agent and admission policies), " +
			"or install the CRD yourself."
	case len(waiting) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, contract.ReasonCRDsWaiting
		c.Message = "Waiting: " + strings.Join(waiting, "; ") + "."
	case len(others) > 0:
		c.Status, c.Reason = metav1.ConditionTrue, contract.ReasonCRDsProvidedByOthers
		c.Message = fmt.Sprintf("%d CRDs established; left as they are: %s.", len(all), strings.Join(others, "; "))
	default:
		c.Status, c.Reason = metav1.ConditionTrue, contract.ReasonCRDsInstalled
		c.Message = fmt.Sprintf("%d CRDs installed by the agent and established.", len(all))
	}
	c.Message += " " + routesNote
	return c
}
