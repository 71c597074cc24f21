// Package reasons is the shape of gitops-addon's tables of conditions and reasons: each
// API package (pkg/api/v1beta1 for the GitOpsCluster and the hub's Events,
// pkg/api/v1alpha1 for the pull model and its report, pkg/contract for the agent's
// ManagedClusterAddOn) declares its condition types and every reason it sets, with what
// each means and what the user does, once, in a Table. hack/docgen renders the
// references (docs/reference/conditions.md and events.md) and the reason tables of
// docs/troubleshooting.md from the tables, and test/repo's reason tests fail when the code
// sets a reason no table holds, or a table holds one nothing sets.
//
// The texts (Meaning, Fix, ShownOn, EventsOn, EventOn) are Markdown, each on one line of
// a table: names, fields, values and commands in code spans, no raw HTML (a `<cluster>`
// belongs in a code span), and a link's target is its page's path from the repository
// root ("docs/concepts.md#when-a-cluster-leaves"), which hack/docgen makes relative to the
// page it renders into.
package reasons

// EventType is the type of an Event that carries a reason: Normal or Warning.
type EventType string

// The types of an Event (corev1.EventTypeNormal, corev1.EventTypeWarning).
const (
	Normal  EventType = "Normal"
	Warning EventType = "Warning"
)

// Condition is a condition type and what it says.
type Condition struct {
	Type    string
	Meaning string
}

// Reason is a reason and where it is used: on conditions, as an Event's reason, or both.
type Reason struct {
	Name string
	// Conditions are the condition types whose reason it can be; none for an Event's
	// reason only.
	Conditions []string
	// Event is the type of the Event that carries it, when one does; "" when none.
	Event EventType
	// EventOn is the object such an Event is recorded on, when it differs from the
	// table's (Table.EventsOn).
	EventOn string
	// Meaning says what happened, in the user's terms.
	Meaning string
	// Fix says what the user does; "" when nothing is to be done.
	Fix string
}

// Table is one object's conditions and the reasons set on it or on its Events.
type Table struct {
	// Name titles the table in the references ("GitOpsCluster").
	Name string
	// ShownOn says where a user sees the conditions (a kubectl command).
	ShownOn string
	// EventsOn says which object the Events are recorded on, unless a reason says.
	EventsOn   string
	Conditions []Condition
	Reasons    []Reason
}
