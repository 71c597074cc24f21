package feedback

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/gitops-addon/gitops-addon/pkg/contract/appresources"
	"github.com/gitops-addon/gitops-addon/pkg/contract/apptree"
)

// The keys of the status feedback: what a pull ManifestWork asks the work agent for
// (PathsFor) is what Of decodes, so both are named here once.

// Names of the status feedback values the work agent reports for a pulled Application:
// strings only, so that they work on every OCM work agent without feature gates.
const (
	KeyHealth             = "healthStatus"
	KeySync               = "syncStatus"
	KeyRevision           = "syncRevision"
	KeyOperationPhase     = "operationStatePhase"
	KeyOperationStartedAt = "operationStateStartedAt"
	// KeyOperationRequest is the first info entry of the spoke's last operation: the
	// request gitops-addon shipped it as (pullnames.AnnotationOperationRequest), if it did.
	KeyOperationRequest = "operationStateRequest"
	KeyOperationMessage = "operationStateMessage"
	KeyReconciledAt     = "reconciledAt"
	// KeyResources is the spoke agent's summary of the Application's resources.
	KeyResources = appresources.FeedbackName
	// KeyTree is the spoke agent's resource tree of the Application (pkg/contract/apptree).
	KeyTree = apptree.FeedbackName
)

// spokeConditionsReported is how many of the spoke Application's conditions
// (ComparisonError, SyncError, InvalidSpecError, ...) come back to the hub: the JSONPath
// feedback of a work agent without feature gates yields one scalar per path.
const spokeConditionsReported = 2

// maxSourcesReported bounds the revisions of a multi-source Application fed back, one
// value per source.
const maxSourcesReported = 20

// KeyConditionType and KeyConditionMessage name the feedback values of the
// spoke Application's i-th condition.
func KeyConditionType(i int) string    { return fmt.Sprintf("condition%dType", i) }
func KeyConditionMessage(i int) string { return fmt.Sprintf("condition%dMessage", i) }

// KeySourceRevision names the feedback value of a multi-source Application's i-th
// revision (status.sync.revisions[i]).
func KeySourceRevision(i int) string { return fmt.Sprintf("syncRevisions%d", i) }

// feedbackPaths maps each feedback value to its JSONPath in the spoke Application.
var feedbackPaths = append([]workv1.JsonPath{
	{Name: KeyHealth, Path: ".status.health.status"},
	{Name: KeySync, Path: ".status.sync.status"},
	{Name: KeyRevision, Path: ".status.sync.revision"},
	{Name: KeyOperationPhase, Path: ".status.operationState.phase"},
	{Name: KeyOperationStartedAt, Path: ".status.operationState.startedAt"},
	{Name: KeyOperationRequest, Path: ".status.operationState.operation.info[0].value"},
	{Name: KeyOperationMessage, Path: ".status.operationState.message"},
	{Name: KeyReconciledAt, Path: ".status.reconciledAt"},
	{Name: KeyResources, Path: appresources.FeedbackPath},
	{Name: KeyTree, Path: apptree.FeedbackPath},
}, conditionPaths()...)

func conditionPaths() []workv1.JsonPath {
	var paths []workv1.JsonPath
	for i := range spokeConditionsReported {
		paths = append(paths,
			workv1.JsonPath{Name: KeyConditionType(i), Path: fmt.Sprintf(".status.conditions[%d].type", i)},
			workv1.JsonPath{Name: KeyConditionMessage(i), Path: fmt.Sprintf(".status.conditions[%d].message", i)})
	}
	return paths
}

// PathsFor are the feedback paths of one Application: the common ones, and one
// revision per source of a multi-source Application.
func PathsFor(app *unstructured.Unstructured) []workv1.JsonPath {
	n := sourceCount(app)
	if n == 0 {
		return feedbackPaths
	}
	paths := slices.Clone(feedbackPaths)
	for i := range n {
		paths = append(paths, workv1.JsonPath{Name: KeySourceRevision(i), Path: fmt.Sprintf(".status.sync.revisions[%d]", i)})
	}
	return paths
}

// sourceCount is how many sources a multi-source Application has (0 for a single source),
// at most maxSourcesReported.
func sourceCount(app *unstructured.Unstructured) int {
	sources, _, _ := unstructured.NestedSlice(app.Object, "spec", "sources")
	return min(len(sources), maxSourcesReported)
}
