package existingargocd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

var (
	verified = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	now      = verified.Add(time.Hour)

	// olmInstance is OpenShift GitOps' default instance, created by OLM's operator
	// before gitops-addon came; labelledOurs: an older gitops-addon's apply merged our label in.
	olmInstance = Instance{Namespace: contract.GitOpsNamespace, Name: contract.ArgoCDName, UID: "user-uid", Created: verified.Add(-24 * time.Hour)}
	mergedInto  = Instance{Namespace: contract.GitOpsNamespace, Name: contract.ArgoCDName, UID: "user-uid", Created: verified.Add(-24 * time.Hour), LabelledOurs: true}
	acmInstance = Instance{Namespace: contract.GitOpsNamespace, Name: "acm-openshift-gitops", UID: "acm-uid", Created: verified.Add(-time.Hour)}
	// workAgentsInstance is ours: created from the hub's render after the agent found the cluster empty.
	workAgentsInstance = Instance{Namespace: contract.GitOpsNamespace, Name: contract.ArgoCDName, UID: "our-uid", Created: verified.Add(time.Minute), LabelledOurs: true}

	subscription = OLMOperator{Kind: "Subscription", Namespace: "openshift-gitops-operator", Name: "openshift-gitops-operator", Package: "openshift-gitops-operator", Version: "v1.16.0"}
	ourOperator  = Operator{Namespace: contract.GitOpsNamespace, Name: contract.OperatorDeployment, Ours: true}
	userOperator = Operator{Namespace: "argocd-operator-system", Name: "argocd-operator-controller-manager"}
)

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name        string
		facts       Facts
		status      metav1.ConditionStatus
		reason      string
		mentions    []string
		wantRecord  Record
		writeRecord bool
	}{{
		name:   "an empty cluster is verified empty, once",
		facts:  Facts{},
		status: metav1.ConditionFalse, reason: contract.ExistingArgoCDNone,
		wantRecord:  Record{VerifiedAbsentAt: now},
		writeRecord: true,
	}, {
		name:   "still empty: the first verification stays",
		facts:  Facts{Record: Record{VerifiedAbsentAt: verified}},
		status: metav1.ConditionFalse, reason: contract.ExistingArgoCDNone,
		wantRecord: Record{VerifiedAbsentAt: verified},
	}, {
		name:   "situation B: OpenShift GitOps from OLM with its instance",
		facts:  Facts{Instances: []Instance{olmInstance}, OLM: []OLMOperator{subscription}, Operators: []Operator{{Namespace: "openshift-gitops-operator", Name: "openshift-gitops-operator-controller-manager"}}},
		status: metav1.ConditionTrue, reason: contract.ExistingArgoCDOLM,
		mentions: []string{"OpenShift GitOps v1.16.0 via OLM (Subscription openshift-gitops-operator/openshift-gitops-operator)",
			"ArgoCD openshift-gitops/openshift-gitops (not created by gitops-addon)", "operator Deployment openshift-gitops-operator/openshift-gitops-operator-controller-manager"},
	}, {
		name:   "our label merged into OLM's instance by an older apply proves nothing",
		facts:  Facts{Instances: []Instance{mergedInto}, OLM: []OLMOperator{subscription}, Operators: []Operator{ourOperator}},
		status: metav1.ConditionTrue, reason: contract.ExistingArgoCDOLM,
	}, {
		name:   "ACM's acm-openshift-gitops in openshift-gitops",
		facts:  Facts{Instances: []Instance{acmInstance}},
		status: metav1.ConditionTrue, reason: contract.ExistingArgoCDInstance, mentions: []string{"ArgoCD openshift-gitops/acm-openshift-gitops"},
	}, {
		name:   "another operator watching every namespace",
		facts:  Facts{Operators: []Operator{userOperator}},
		status: metav1.ConditionTrue, reason: contract.ExistingArgoCDOperator, mentions: []string{"argocd-operator-system/argocd-operator-controller-manager"},
	}, {
		name:   "the instance the work agent created after the verification is recorded as ours",
		facts:  Facts{Instances: []Instance{workAgentsInstance}, Operators: []Operator{ourOperator}, Record: Record{VerifiedAbsentAt: verified}},
		status: metav1.ConditionFalse, reason: contract.ExistingArgoCDNone,
		wantRecord:  Record{VerifiedAbsentAt: verified, ArgoCDUID: "our-uid", How: "created by gitops-addon after the cluster was found to run no other Argo CD"},
		writeRecord: true,
	}, {
		name:   "a labelled instance created before the verification is not ours",
		facts:  Facts{Instances: []Instance{mergedInto}, Record: Record{VerifiedAbsentAt: verified}},
		status: metav1.ConditionTrue, reason: contract.ExistingArgoCDInstance,
		wantRecord: Record{VerifiedAbsentAt: verified},
	}, {
		name:   "an earlier gitops-addon's instance, alone with our operator, is adopted",
		facts:  Facts{Instances: []Instance{mergedInto}, Operators: []Operator{ourOperator}},
		status: metav1.ConditionFalse, reason: contract.ExistingArgoCDNone,
		wantRecord:  Record{ArgoCDUID: "user-uid", How: "adopted from an earlier gitops-addon (labelled, run by gitops-addon's operator, nothing else on the cluster)"},
		writeRecord: true,
	}, {
		name:   "an unlabelled instance is never adopted",
		facts:  Facts{Instances: []Instance{olmInstance}, Operators: []Operator{ourOperator}},
		status: metav1.ConditionTrue, reason: contract.ExistingArgoCDInstance,
	}, {
		name: "ours recorded, OLM's operator installed later: ours stays, the conflict is named",
		facts: Facts{Instances: []Instance{workAgentsInstance}, OLM: []OLMOperator{subscription}, Operators: []Operator{ourOperator},
			Record: Record{VerifiedAbsentAt: verified, ArgoCDUID: "our-uid"}},
		status: metav1.ConditionFalse, reason: contract.ExistingArgoCDNone,
		mentions:   []string{"is gitops-addon's", "Also found: OpenShift GitOps v1.16.0 via OLM", "fight"},
		wantRecord: Record{VerifiedAbsentAt: verified, ArgoCDUID: "our-uid"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			v := Decide(tc.facts, now)
			assert.Equal(t, tc.status, v.Status)
			assert.Equal(t, tc.reason, v.Reason)
			for _, m := range tc.mentions {
				assert.Contains(t, v.Message, m)
			}
			assert.Equal(t, tc.writeRecord, v.RecordChanged)
			assert.Equal(t, tc.wantRecord, v.Record)
		})
	}
}
